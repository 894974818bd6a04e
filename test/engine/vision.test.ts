/**
 * GLM-4.1V through NativeEngine (the real engine on test/fixtures/engine/glm4v-tiny): images given
 * as pixel_values + grid + hash reach eng_seq_add_mm; last logits and greedy tokens match the
 * PyTorch golden; the prefix cache keys on the image hash; a text-only model refuses images.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type EngineImage, type GenerateRequest } from '../../engine-cuda/engine.ts';
import { NativeEngine, pixelTransfers } from '../../engine-cuda/native-engine.ts';
import { drain, fixtureDir } from './engine-helpers.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

interface VisionFixture {
  greedy_tokens: number;
  tolerance: { max_abs_logit_diff: number };
  images: { pixel_values: string; grid_thw: [number, number, number]; n_tokens: number }[];
  prompts: { ids: number[]; images: number[]; greedy: number[]; last_logits: number[] }[];
}

const dir = fixtureDir('glm4v-tiny');
const fx = JSON.parse(readFileSync(`${dir}/fixtures.json`, 'utf8')) as VisionFixture;

/** A fresh copy of image i's golden pixel_values (the engine takes ownership of the buffer). */
function image(i: number, hash: bigint, transform?: (x: number) => number, from = fx, at = dir): EngineImage {
  const spec = from.images[i]!;
  const raw = readFileSync(`${at}/${spec.pixel_values}`);
  const pixels = new Float32Array(raw.byteLength / 4);
  new Uint8Array(pixels.buffer).set(raw);
  if (transform) for (let j = 0; j < pixels.length; j++) pixels[j] = transform(pixels[j]!);
  return { pixels, grid: [...spec.grid_thw], hash };
}

function request(p: number, hashes: bigint[], extra: Partial<GenerateRequest> = {}): GenerateRequest {
  const prompt = fx.prompts[p]!;
  return {
    promptIds: prompt.ids,
    maxTokens: fx.greedy_tokens,
    images: prompt.images.map((i, k) => image(i, hashes[k]!)),
    ...extra,
  };
}

function maxAbsDiff(a: Float32Array, b: number[]): number {
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs((a[i] ?? Number.NaN) - (b[i] ?? 0)));
  return Number.isNaN(m) ? Infinity : m;
}

describe('GLM-4.1V vision through NativeEngine', () => {
  let engine: NativeEngine;
  beforeAll(async () => {
    // Chunks of 7 tokens: every image's placeholders span several prefill steps.
    engine = await NativeEngine.load(dir, { ...TEST_ENGINE, prefillChunk: 7, numThreads: 2 });
  });
  afterAll(() => engine.close());

  it('reports a vision model', () => {
    expect(engine.info.arch).toBe('glm4v');
    expect(engine.info.vision).toBe(true);
    expect(engine.info.numVocab).toBe(fx.prompts[0]!.last_logits.length);
  });

  it('matches the golden logits and greedy tokens of prompts with one and two images', async () => {
    for (const [p, prompt] of fx.prompts.entries()) {
      const hashes = prompt.images.map((i) => BigInt(100 + i));
      const r = await drain(engine.generate(request(p, hashes, { keepLogits: true })));
      expect(maxAbsDiff(r.logits[0]!, prompt.last_logits)).toBeLessThanOrEqual(fx.tolerance.max_abs_logit_diff);
      expect(r.ids).toEqual(prompt.greedy);
      expect(r.finish.usage.inputTokens).toBe(prompt.ids.length);
    }
  });

  it('runs both prompts concurrently with the same results', async () => {
    const runs = await Promise.all(
      fx.prompts.map((prompt, p) =>
        drain(
          engine.generate(
            request(
              p,
              prompt.images.map((i) => BigInt(200 + i)),
            ),
          ),
        ),
      ),
    );
    expect(runs.map((r) => r.ids)).toEqual(fx.prompts.map((p) => p.greedy));
  });

  it('reuses the cache for the same image hash and never for another', async () => {
    const p0 = fx.prompts[0]!;
    const before = await engine.stats();
    const first = await drain(engine.generate(request(0, [0xfeedn])));
    expect(first.ids).toEqual(p0.greedy);
    const afterFirst = await engine.stats();
    expect(afterFirst.imagesEncoded).toBe(before.imagesEncoded + 1);
    expect(afterFirst.encodeMicros).toBeGreaterThan(before.encodeMicros);
    const again = await drain(engine.generate(request(0, [0xfeedn])));
    expect(again.cachedTokens).toBe(Math.floor((p0.ids.length - 1) / 16) * 16);
    expect(again.finish.usage.cachedTokens).toBe(again.cachedTokens);
    expect(again.ids).toEqual(p0.greedy);
    // The cached blocks cover the whole image (positions 5..24 < 32): it is not encoded again.
    expect((await engine.stats()).imagesEncoded).toBe(afterFirst.imagesEncoded);
    // Other pixels, other hash: the image starts in block 0, so no block is shared.
    const other = await drain(
      engine.generate({ promptIds: p0.ids, maxTokens: fx.greedy_tokens, images: [image(0, 0xbeefn, (x) => -x)] }),
    );
    expect(other.cachedTokens).toBe(0);
    expect(other.ids).not.toEqual(p0.greedy);
    expect((await engine.stats()).imagesEncoded).toBe(afterFirst.imagesEncoded + 1);
  });

  it('moves whole pixel buffers to the worker instead of copying them', async () => {
    const img = image(0, 1n);
    expect(pixelTransfers([img, img])).toEqual([img.pixels.buffer]);
    const view = new Float32Array(new ArrayBuffer(img.pixels.byteLength + 4), 4, img.pixels.length);
    expect(pixelTransfers([{ ...img, pixels: view }])).toEqual([]);
    const r = await drain(engine.generate({ promptIds: fx.prompts[0]!.ids, maxTokens: 2, images: [img] }));
    expect(r.ids).toEqual(fx.prompts[0]!.greedy.slice(0, 2));
    expect(img.pixels.byteLength).toBe(0); // detached: transferred, not cloned
  });

  it('refuses a placeholder count that does not match the image', async () => {
    const ids = fx.prompts[0]!.ids.filter((_, i) => i !== 6); // one <|image|> fewer
    const gen = engine.generate({ promptIds: ids, maxTokens: 2, images: [image(0, 1n)] });
    await expect(gen.next()).rejects.toMatchObject({ code: 'invalid_arg' });
  });
});

describe('GLM-4.5V (MoE language model, half-split M-RoPE) through NativeEngine', () => {
  const moeDir = fixtureDir('glm45v-tiny');
  const moeFx = JSON.parse(readFileSync(`${moeDir}/fixtures.json`, 'utf8')) as VisionFixture;
  let engine: NativeEngine;
  beforeAll(async () => {
    engine = await NativeEngine.load(moeDir, { ...TEST_ENGINE, prefillChunk: 7, numThreads: 2 });
  });
  afterAll(() => engine.close());

  it('matches the golden logits and greedy tokens', async () => {
    expect(engine.info.arch).toBe('glm4v_moe');
    expect(engine.info.vision).toBe(true);
    expect(engine.info.numActiveParams).toBeLessThan(engine.info.numParams);
    for (const prompt of moeFx.prompts) {
      const images = prompt.images.map((i) => image(i, BigInt(300 + i), undefined, moeFx, moeDir));
      const r = await drain(
        engine.generate({ promptIds: prompt.ids, maxTokens: moeFx.greedy_tokens, images, keepLogits: true }),
      );
      expect(maxAbsDiff(r.logits[0]!, prompt.last_logits)).toBeLessThanOrEqual(moeFx.tolerance.max_abs_logit_diff);
      expect(r.ids).toEqual(prompt.greedy);
    }
  });
});

describe('a text-only model and images', () => {
  it('refuses images before queuing anything', async () => {
    const engine = await NativeEngine.load(fixtureDir('glm4-bf16'), { ...TEST_ENGINE, numThreads: 1 });
    try {
      expect(engine.info.vision).toBe(false);
      const gen = engine.generate({ promptIds: [5, 6, 7], maxTokens: 2, images: [image(0, 1n)] });
      const err = await gen.next().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: 'unsupported' });
    } finally {
      await engine.close();
    }
  });
});
