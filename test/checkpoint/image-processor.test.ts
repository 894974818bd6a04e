/**
 * checkpoint/image-processor.ts against the GLM-4.1V fixture: the committed PNGs' pixel_values
 * equal the PyTorch reference's (scripts/oracle/make_glm4v_fixtures.py) within 1e-6; the bicubic
 * resize equals Pillow's byte for byte (goldens from fixtures/make-pil-resize.py); the
 * smart_resize rule gives the sizes worked out by hand from image_processing_glm4v.py's rule.
 */
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  GLM4V_PROCESSOR_DEFAULTS,
  ImageProcessorError,
  imageGrid,
  processImage,
  readImageProcessorConfig,
  resizeBicubic,
  smartResize,
  type ImageProcessorConfig,
  type RgbImage,
} from '../../checkpoint/image-processor.ts';

const FIXTURES = new URL('../fixtures/engine/', import.meta.url);
const DIR = new URL('glm4v-tiny/', FIXTURES);

interface FixtureImage {
  png: string;
  height: number;
  width: number;
  pixel_values: string;
  grid_thw: [number, number, number];
  n_tokens: number;
}
const fixtures = JSON.parse(readFileSync(new URL('fixtures.json', DIR), 'utf8')) as { images: FixtureImage[] };

async function rgb(path: URL): Promise<RgbImage> {
  const { data, info } = await sharp(readFileSync(path)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height };
}

function golden(name: string): Float32Array {
  const bytes = readFileSync(new URL(name, DIR));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

describe('Glm4vImageProcessor in TypeScript', () => {
  it("reads the fixture's preprocessor_config.json", async () => {
    const config = await readImageProcessorConfig(DIR.pathname);
    expect(config).toMatchObject({
      patchSize: 14,
      temporalPatchSize: 2,
      mergeSize: 2,
      minPixels: 12544,
      maxPixels: 2146592,
      imageMean: [0.48145466, 0.4578275, 0.40821073],
    });
  });

  for (const image of fixtures.images) {
    it(`${image.png}: pixel_values and grid_thw equal the reference's (within 1e-6)`, async () => {
      const config = (await readImageProcessorConfig(DIR.pathname))!;
      const decoded = await rgb(new URL(image.png, FIXTURES));
      expect([decoded.height, decoded.width]).toEqual([image.height, image.width]);
      const out = await processImage(config, decoded);
      expect(out.grid).toEqual(image.grid_thw);
      expect(out.tokens).toBe(image.n_tokens);
      const expected = golden(image.pixel_values);
      expect(out.pixels.length).toBe(expected.length);
      expect(out.pixels.length).toBe(image.grid_thw[1] * image.grid_thw[2] * 3 * 2 * 14 * 14);
      let worst = 0;
      for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(out.pixels[i]! - expected[i]!));
      expect(worst).toBeLessThanOrEqual(1e-6);
    });
  }

  it('a transposed patch order would not pass: the golden rows are not symmetric under it', async () => {
    // Guard for the test above: the same values in plain raster patch order differ from the golden.
    const config = (await readImageProcessorConfig(DIR.pathname))!;
    const image = fixtures.images[0]!;
    const out = await processImage(config, await rgb(new URL(image.png, FIXTURES)));
    const expected = golden(image.pixel_values);
    const row = 1176;
    // Row 1 is the second patch of the first 2x2 merge window (grid row 0, column 1); row 2 is
    // grid row 1, column 0, which raster order would place at index grid_w.
    const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
    const merged = expected.subarray(2 * row, 3 * row);
    const raster = expected.subarray(image.grid_thw[2] * row, (image.grid_thw[2] + 1) * row);
    expect(maxDiff(out.pixels.subarray(2 * row, 3 * row), merged)).toBeLessThanOrEqual(1e-6);
    expect(maxDiff(merged, raster)).toBeGreaterThan(0.01);
  });
});

describe('smart_resize (worked by hand from image_processing_glm4v.py)', () => {
  const glm41v = { factor: 28, temporalFactor: 2, minPixels: 112 * 112, maxPixels: 28 * 28 * 15000 };
  const tiny = { factor: 28, temporalFactor: 2, minPixels: 12544, maxPixels: 2146592 };

  it('rounds each side to a multiple of 28 inside the budget: 1000 wide x 500 high → 1008 x 504', () => {
    // round(500/28) = 18 → 504, round(1000/28) = 36 → 1008; 2·504·1008 within [12544, 11760000].
    expect(smartResize(2, 500, 1000, glm41v)).toEqual([504, 1008]);
  });

  it("rounds halves to even as Python's round does: 140 x 70 → 140 x 56", () => {
    // 70/28 = 2.5 → 2 (not 3) → 56; 140/28 = 5 → 140; 2·56·140 = 15680 ≥ 12544.
    expect(smartResize(2, 70, 140, tiny)).toEqual([56, 140]);
  });

  it('scales up a side shorter than 28, then up to the minimum: 20 x 10 → 112 x 56', () => {
    // scale = max(28/10, 28/20) = 2.8 → 28 x 56; 2·28·56 = 3136 < 12544: beta = sqrt(12544/3136) = 2
    // → ceil(28·2/28)·28 = 56 and ceil(56·2/28)·28 = 112.
    expect(smartResize(2, 10, 20, glm41v)).toEqual([56, 112]);
  });

  it('scales down past the maximum: 2000 x 1000 → 1456 x 728 on the fixture budget', () => {
    // 2·1008·1988 > 2146592: beta = sqrt(2·1000·2000 / 2146592) = 1.36507;
    // floor(1000/beta/28)·28 = 26·28 = 728, floor(2000/beta/28)·28 = 52·28 = 1456.
    expect(smartResize(2, 1000, 2000, tiny)).toEqual([728, 1456]);
  });

  it('a 1024 x 1024 image becomes 1036 x 1036 on the fixture budget (exactly its maximum)', () => {
    expect(smartResize(2, 1024, 1024, tiny)).toEqual([1036, 1036]);
  });

  it('refuses an aspect ratio above 200', () => {
    expect(() => smartResize(2, 40, 10000, glm41v)).toThrow(ImageProcessorError);
  });

  it('a resized image: grid (1, H/14, W/14), t·h·w/4 tokens, one 1176-value row per patch', async () => {
    const config: ImageProcessorConfig = { ...GLM4V_PROCESSOR_DEFAULTS };
    const width = 1000;
    const height = 500;
    const data = new Uint8Array(width * height * 3).map((_, i) => (i * 7) % 256);
    const out = await processImage(config, { data, width, height });
    expect(out.grid).toEqual([1, 36, 72]);
    expect(out.tokens).toBe(648);
    expect(out.pixels.length).toBe(36 * 72 * 1176);
    expect(imageGrid(config, height, width)).toEqual({ grid: [1, 36, 72], tokens: 648 });
    // Both temporal frames of a still image hold the same values (first row: 3 channels x 2 frames x 196).
    expect(out.pixels.subarray(0, 196)).toEqual(out.pixels.subarray(196, 392));
  });
});

describe("bicubic resize: Pillow's bytes (Image.resize BICUBIC, as transformers' PIL processor)", () => {
  for (const [width, height] of [
    [168, 140],
    [84, 56],
  ] as const) {
    it(`140x112 → ${width}x${height} equals Pillow's output exactly`, async () => {
      const source = await rgb(new URL('glm4v-tiny-image.png', FIXTURES));
      const pil = await rgb(new URL(`fixtures/pil-bicubic-${width}x${height}.png`, import.meta.url));
      const out = resizeBicubic(source, width, height);
      expect([out.width, out.height]).toEqual([width, height]);
      let differing = 0;
      for (let i = 0; i < out.data.length; i++) if (out.data[i] !== pil.data[i]) differing++;
      expect(differing).toBe(0);
    });
  }

  it('leaves an image at its size untouched, and resizes one axis alone', async () => {
    const source = await rgb(new URL('glm4v-tiny-image.png', FIXTURES));
    expect(resizeBicubic(source, 140, 112)).toBe(source);
    const wider = resizeBicubic(source, 168, 112);
    expect([wider.width, wider.height]).toEqual([168, 112]);
  });
});
