import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { FIXTURES, drain, fixtureDir } from './engine-helpers.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

interface Fixture {
  architecture: string;
  greedy_tokens: number;
  tolerance: { max_abs_logit_diff: number };
  prompts: { ids: number[]; greedy: number[]; last_logits: number[] }[];
}

const ARCH = {
  Glm4ForCausalLM: 'glm4',
  LlamaForCausalLM: 'llama',
  Qwen3ForCausalLM: 'qwen3',
  Glm4MoeForCausalLM: 'glm4_moe',
  DeepseekV3ForCausalLM: 'deepseek_v3',
} as const;

function maxAbsDiff(a: Float32Array, b: number[]): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs((a[i] ?? Number.NaN) - (b[i] ?? 0)));
  return Number.isNaN(m) ? Infinity : m;
}

describe.each(FIXTURES)('oracle fixture %s through NativeEngine', (name) => {
  const fx = JSON.parse(readFileSync(`${fixtureDir(name)}/fixtures.json`, 'utf8')) as Fixture;
  let engine: NativeEngine;
  beforeAll(async () => {
    // An f32 KV cache: the reference's exactness (8-bit FP8 weights would take an f16 cache by default).
    engine = await NativeEngine.load(fixtureDir(name), { ...TEST_ENGINE, kvDtype: 'f32' });
  });
  afterAll(() => engine.close());

  it('reports the architecture and vocabulary', () => {
    expect(engine.info.arch).toBe(ARCH[fx.architecture as keyof typeof ARCH]);
    expect(engine.info.numVocab).toBe(fx.prompts[0]!.last_logits.length);
    // A MoE token uses K of the E routed experts; a dense model uses every parameter.
    const isMoe = fx.architecture === 'Glm4MoeForCausalLM' || fx.architecture === 'DeepseekV3ForCausalLM';
    if (isMoe) expect(engine.info.numActiveParams).toBeLessThan(engine.info.numParams);
    else expect(engine.info.numActiveParams).toBe(engine.info.numParams);
    expect(engine.info.numActiveParams).toBeGreaterThan(0);
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

describe('kernel paths and 8-bit weights through NativeEngine', () => {
  const name = 'llama-f32';
  const fx = JSON.parse(readFileSync(`${fixtureDir(name)}/fixtures.json`, 'utf8')) as Fixture;

  it('simd scalar (MAYA_ENGINE_SIMD=scalar) forces the portable kernels, which match the golden fixture', async () => {
    const engine = await NativeEngine.load(fixtureDir(name), { ...TEST_ENGINE, simd: 'scalar' });
    try {
      expect(engine.info.simd).toBe('scalar');
      for (const p of fx.prompts) {
        const r = await drain(engine.generate({ promptIds: p.ids, maxTokens: fx.greedy_tokens, keepLogits: true }));
        expect(maxAbsDiff(r.logits[0]!, p.last_logits)).toBeLessThanOrEqual(fx.tolerance.max_abs_logit_diff);
        expect(r.ids).toEqual(p.greedy);
      }
    } finally {
      await engine.close();
    }
  });

  it('weightDtype q8 quantizes the weights: logits move, within the bound measured in engine-cuda/README.md', async () => {
    const engine = await NativeEngine.load(fixtureDir(name), { ...TEST_ENGINE, weightDtype: 'q8' });
    try {
      let worst = 0;
      for (const p of fx.prompts) {
        const r = await drain(engine.generate({ promptIds: p.ids, maxTokens: 1, keepLogits: true }));
        worst = Math.max(worst, maxAbsDiff(r.logits[0]!, p.last_logits));
      }
      expect(worst).toBeGreaterThan(1e-3); // not the f32 weights
      expect(worst).toBeLessThanOrEqual(0.3);
    } finally {
      await engine.close();
    }
  });
});
