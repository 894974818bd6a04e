import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { FIXTURES, drain, fixtureDir } from './engine-helpers.ts';

interface Fixture {
  architecture: string;
  greedy_tokens: number;
  tolerance: { max_abs_logit_diff: number };
  prompts: { ids: number[]; greedy: number[]; last_logits: number[] }[];
}

const ARCH = { Glm4ForCausalLM: 'glm4', LlamaForCausalLM: 'llama', Qwen3ForCausalLM: 'qwen3' } as const;

function maxAbsDiff(a: Float32Array, b: number[]): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs((a[i] ?? Number.NaN) - (b[i] ?? 0)));
  return Number.isNaN(m) ? Infinity : m;
}

describe.each(FIXTURES)('oracle fixture %s through NativeEngine', (name) => {
  const fx = JSON.parse(readFileSync(`${fixtureDir(name)}/fixtures.json`, 'utf8')) as Fixture;
  let engine: NativeEngine;
  beforeAll(async () => {
    engine = await NativeEngine.load(fixtureDir(name));
  });
  afterAll(() => engine.close());

  it('reports the architecture and vocabulary', () => {
    expect(engine.info.arch).toBe(ARCH[fx.architecture as keyof typeof ARCH]);
    expect(engine.info.numVocab).toBe(fx.prompts[0]!.last_logits.length);
  });

  it('matches the golden last-position logits and greedy continuations', async () => {
    for (const p of fx.prompts) {
      const r = await drain(engine.generate({ promptIds: p.ids, maxTokens: fx.greedy_tokens, keepLogits: true }));
      expect(r.logits).toHaveLength(fx.greedy_tokens);
      expect(maxAbsDiff(r.logits[0]!, p.last_logits)).toBeLessThanOrEqual(fx.tolerance.max_abs_logit_diff);
      expect(r.ids).toEqual(p.greedy);
      expect(r.finish).toEqual({
        reason: 'length',
        usage: { inputTokens: p.ids.length, cachedTokens: r.cachedTokens, outputTokens: fx.greedy_tokens },
      });
    }
  });

  it('gives the same greedy continuations when all prompts run concurrently', async () => {
    const runs = await Promise.all(
      fx.prompts.map((p) => drain(engine.generate({ promptIds: p.ids, maxTokens: fx.greedy_tokens }))),
    );
    expect(runs.map((r) => r.ids)).toEqual(fx.prompts.map((p) => p.greedy));
  });
});
