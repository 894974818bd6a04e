/** Shared helpers of the engine tests: draining a generation, a small random checkpoint on disk. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FinishInfo, TokenEvent } from '../../engine-cuda/engine.ts';
import { makeRandomCheckpoint, type RandomCheckpointOptions } from '../../scripts/make-random-checkpoint.ts';

export interface Drained {
  ids: number[];
  logits: Float32Array[];
  cachedTokens: number | undefined;
  finish: FinishInfo;
}

export async function drain(gen: AsyncGenerator<TokenEvent, FinishInfo, void>): Promise<Drained> {
  const out: Omit<Drained, 'finish'> = { ids: [], logits: [], cachedTokens: undefined };
  for (;;) {
    const r = await gen.next();
    if (r.done) return { ...out, finish: r.value };
    if (r.value.type === 'prefilled') out.cachedTokens = r.value.cachedTokens;
    else if (r.value.type === 'token') {
      out.ids.push(r.value.id);
      if (r.value.logits) out.logits.push(r.value.logits);
    }
  }
}

/** ~5M parameters, 20 MiB f32: big enough that a step costs real work, small enough for CI. */
export const SMALL_LLAMA: RandomCheckpointOptions = {
  dim: 256,
  layers: 4,
  heads: 4,
  kvHeads: 2,
  hidden: 768,
  vocab: 4096,
  ctx: 1024,
  dtype: 'f32',
  seed: 7,
};

export async function makeSmallModel(options: RandomCheckpointOptions = SMALL_LLAMA): Promise<string> {
  const dir = join(mkdtempSync(join(tmpdir(), 'maya-model-')), 'small-llama');
  await makeRandomCheckpoint(dir, options);
  return dir;
}

export const FIXTURES = [
  'glm4-bf16',
  'llama-f32',
  'qwen3-f16',
  'glm45-moe-bf16',
  'glm45-moe-fp8',
  'deepseek3-bf16',
  'deepseek3-fp8',
  'glm45-moe-mtp-bf16', // with a whole MTP layer (its own logits: engine-cuda/test/test_mtp.cpp)
  'deepseek3-mtp-bf16',
] as const;
export function fixtureDir(name: string): string {
  return new URL(`../fixtures/engine/${name}`, import.meta.url).pathname;
}
