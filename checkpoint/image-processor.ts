/**
 * The GLM-4.1V / GLM-4.5V image processor in TypeScript: what Hugging Face transformers'
 * `Glm4vImageProcessor` (models/glm4v/image_processing_glm4v.py) does to one still image, read
 * from the checkpoint's `preprocessor_config.json`, so the engine receives the same
 * `pixel_values` rows and `image_grid_thw` the reference model was given:
 *
 * 1. smart_resize: the size becomes a multiple of factor = patch_size * merge_size on both sides
 *    (rounded), then scaled down to fit `longest_edge` (max pixels, counted over the
 *    temporal_patch_size frames) or up to reach `shortest_edge` (min pixels); sides shorter than
 *    the factor are first scaled up to it; an aspect ratio above 200 is refused.
 * 2. resize with Pillow's bicubic resampling (resizeBicubic below: what the PIL processor does,
 *    byte for byte; torchvision's bicubic in the default fast processor differs slightly). An image
 *    already at its target size is not resampled.
 * 3. rescale by `rescale_factor` (1/255) and normalise with `image_mean` / `image_std` per channel.
 * 4. a still image is repeated over `temporal_patch_size` frames, and the patches are flattened in
 *    the processor's order: rows are patches grouped by merge window (grid row block, grid column
 *    block, row within the window, column within the window); each row holds
 *    channel × frame × patch row × patch column values.
 *
 * grid_thw is (1, H / patch_size, W / patch_size); the language model sees
 * t·h·w / merge_size² image tokens for it.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ImageProcessorConfig {
  patchSize: number;
  temporalPatchSize: number;
  mergeSize: number;
  /** `size.shortest_edge` (a pixel count, as Glm4vImageProcessor reads it). */
  minPixels: number;
  /** `size.longest_edge` (a pixel count). */
  maxPixels: number;
  imageMean: [number, number, number];
  imageStd: [number, number, number];
  rescaleFactor: number;
  doResize: boolean;
  doRescale: boolean;
  doNormalize: boolean;
}

/** Glm4vImageProcessor's class defaults (used for fields a preprocessor_config.json omits). */
export const GLM4V_PROCESSOR_DEFAULTS: ImageProcessorConfig = {
  patchSize: 14,
  temporalPatchSize: 2,
  mergeSize: 2,
  minPixels: 112 * 112,
  maxPixels: 28 * 28 * 15000,
  // OPENAI_CLIP_MEAN / OPENAI_CLIP_STD (transformers image_utils.py).
  imageMean: [0.48145466, 0.4578275, 0.40821073],
  imageStd: [0.26862954, 0.26130258, 0.27577711],
  rescaleFactor: 1 / 255,
  doResize: true,
  doRescale: true,
  doNormalize: true,
};

export class ImageProcessorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageProcessorError';
  }
}

const positiveInt = (value: unknown, fallback: number, field: string): number => {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new ImageProcessorError(`preprocessor_config.json: ${field} must be a positive integer`);
  return value;
};

const triple = (value: unknown, fallback: [number, number, number], field: string): [number, number, number] => {
  if (value === undefined || value === null) return fallback;
  if (!Array.isArray(value) || value.length !== 3 || !value.every((v) => typeof v === 'number' && Number.isFinite(v)))
    throw new ImageProcessorError(`preprocessor_config.json: ${field} must be three numbers`);
  return value as [number, number, number];
};

/** The processor settings of a parsed preprocessor_config.json (defaults for omitted fields). */
export function imageProcessorConfig(json: Record<string, unknown>): ImageProcessorConfig {
  const d = GLM4V_PROCESSOR_DEFAULTS;
  const size = (json.size ?? {}) as Record<string, unknown>;
  // Older configs spell the limits min_pixels / max_pixels at the top level.
  const minPixels = positiveInt(size.shortest_edge ?? json.min_pixels, d.minPixels, 'size.shortest_edge');
  const maxPixels = positiveInt(size.longest_edge ?? json.max_pixels, d.maxPixels, 'size.longest_edge');
  if (minPixels > maxPixels)
    throw new ImageProcessorError('preprocessor_config.json: size.shortest_edge exceeds size.longest_edge');
  const std = triple(json.image_std, d.imageStd, 'image_std');
  if (std.some((v) => v === 0)) throw new ImageProcessorError('preprocessor_config.json: image_std has a zero');
  const flag = (value: unknown, fallback: boolean) => (typeof value === 'boolean' ? value : fallback);
  return {
    patchSize: positiveInt(json.patch_size, d.patchSize, 'patch_size'),
    temporalPatchSize: positiveInt(json.temporal_patch_size, d.temporalPatchSize, 'temporal_patch_size'),
    mergeSize: positiveInt(json.merge_size, d.mergeSize, 'merge_size'),
    minPixels,
    maxPixels,
    imageMean: triple(json.image_mean, d.imageMean, 'image_mean'),
    imageStd: std,
    rescaleFactor:
      typeof json.rescale_factor === 'number' && json.rescale_factor > 0 ? json.rescale_factor : d.rescaleFactor,
    doResize: flag(json.do_resize, d.doResize),
    doRescale: flag(json.do_rescale, d.doRescale),
    doNormalize: flag(json.do_normalize, d.doNormalize),
  };
}

/** The checkpoint's image processor settings, or undefined when it has no preprocessor_config.json. */
export async function readImageProcessorConfig(dir: string): Promise<ImageProcessorConfig | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, 'preprocessor_config.json'), 'utf8');
  } catch {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ImageProcessorError(`preprocessor_config.json is not valid JSON: ${(error as Error).message}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new ImageProcessorError('preprocessor_config.json must hold an object');
  return imageProcessorConfig(json as Record<string, unknown>);
}

/** Python's round(): halves to even (smart_resize rounds with it). */
function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/**
 * The target [height, width] of Glm4vImageProcessor's smart_resize for `frames` frames (a still
 * image counts temporal_patch_size frames). Throws ImageProcessorError for an aspect ratio above 200.
 */
export function smartResize(
  frames: number,
  height: number,
  width: number,
  rule: { factor: number; temporalFactor: number; minPixels: number; maxPixels: number },
): [number, number] {
  const { factor, temporalFactor, minPixels, maxPixels } = rule;
  if (frames < temporalFactor) throw new ImageProcessorError(`${frames} frames is fewer than ${temporalFactor}`);
  let h = height;
  let w = width;
  if (h < factor || w < factor) {
    const scale = Math.max(factor / h, factor / w);
    h = Math.trunc(h * scale);
    w = Math.trunc(w * scale);
  }
  if (Math.max(h, w) / Math.min(h, w) > 200)
    throw new ImageProcessorError(
      `the image's aspect ratio ${(Math.max(h, w) / Math.min(h, w)).toFixed(1)} exceeds 200`,
    );
  let hBar = roundHalfEven(h / factor) * factor;
  let wBar = roundHalfEven(w / factor) * factor;
  const tBar = roundHalfEven(frames / temporalFactor) * temporalFactor;
  if (tBar * hBar * wBar > maxPixels) {
    const beta = Math.sqrt((frames * h * w) / maxPixels);
    hBar = Math.max(factor, Math.floor(h / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(w / beta / factor) * factor);
  } else if (tBar * hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (frames * h * w));
    hBar = Math.ceil((h * beta) / factor) * factor;
    wBar = Math.ceil((w * beta) / factor) * factor;
  }
  return [hBar, wBar];
}

/** Decoded pixels: 8-bit RGB, row-major, interleaved (3 bytes per pixel). */
export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}

export interface ProcessedImage {
  /** grid_t·grid_h·grid_w rows of 3·temporal_patch_size·patch_size² values (HF `pixel_values`). */
  pixels: Float32Array;
  /** HF `image_grid_thw`: frames / temporal_patch_size, rows and columns of patches. */
  grid: [t: number, h: number, w: number];
  /** Tokens the language model sees for the image: t·h·w / merge_size². */
  tokens: number;
}

/** Size of the processed image: [height, width] after smart_resize (or as is without do_resize). */
export function targetSize(config: ImageProcessorConfig, height: number, width: number): [number, number] {
  if (!config.doResize) return [height, width];
  return smartResize(config.temporalPatchSize, height, width, {
    factor: config.patchSize * config.mergeSize,
    temporalFactor: config.temporalPatchSize,
    minPixels: config.minPixels,
    maxPixels: config.maxPixels,
  });
}

/** The grid and token count an image of this size gets, without touching pixels. */
export function imageGrid(
  config: ImageProcessorConfig,
  height: number,
  width: number,
): { grid: [number, number, number]; tokens: number } {
  const [h, w] = targetSize(config, height, width);
  const grid: [number, number, number] = [1, h / config.patchSize, w / config.patchSize];
  return { grid, tokens: (grid[0] * grid[1] * grid[2]) / (config.mergeSize * config.mergeSize) };
}

/** Pillow's bicubic kernel (a = -0.5), support 2 (libImaging/Resample.c `bicubic_filter`). */
function bicubic(x: number): number {
  const a = -0.5;
  const t = Math.abs(x);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
  return 0;
}

/** Pillow's fixed-point precision for 8-bit resampling (PRECISION_BITS = 32 - 8 - 2). */
const PRECISION_BITS = 22;
const ONE = 2 ** PRECISION_BITS;

/**
 * Per output pixel: the first input pixel, how many it reads, and their fixed-point weights, as
 * Pillow computes them: centre (i + 0.5)·scale, a kernel widened by the scale when shrinking
 * (antialiasing), weights normalised to sum 1, then rounded to PRECISION_BITS fixed point.
 */
function resampleWeights(inSize: number, outSize: number) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = 2 * filterScale;
  const taps = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Float64Array(outSize * taps);
  for (let i = 0; i < outSize; i++) {
    const centre = (i + 0.5) * scale;
    const lo = Math.max(0, Math.trunc(centre - support + 0.5));
    const hi = Math.min(inSize, Math.trunc(centre + support + 0.5));
    let sum = 0;
    const raw: number[] = [];
    for (let x = lo; x < hi; x++) {
      const w = bicubic((x - centre + 0.5) / filterScale);
      raw.push(w);
      sum += w;
    }
    raw.forEach((w, k) => {
      const normal = sum !== 0 ? w / sum : w;
      weights[i * taps + k] = Math.trunc(normal * ONE + (normal < 0 ? -0.5 : 0.5));
    });
    first[i] = lo;
    count[i] = hi - lo;
  }
  return { first, count, weights, taps };
}

/** Pillow's clip8: a fixed-point sum (with its rounding half already added) → 0..255. */
function clip8(sum: number): number {
  if (sum >= ONE * 256) return 255;
  if (sum <= 0) return 0;
  return Math.floor(sum / ONE);
}

/** One separable pass over 8-bit RGB: along rows (horizontal) or columns (vertical). */
function resamplePass(src: RgbImage, width: number, height: number, horizontal: boolean): RgbImage {
  const out = new Uint8Array(width * height * 3);
  const { first, count, weights, taps } = horizontal
    ? resampleWeights(src.width, width)
    : resampleWeights(src.height, height);
  const data = src.data;
  // Step between the input pixels one output pixel reads: the next column, or the next row.
  const step = horizontal ? 3 : src.width * 3;
  let o = 0;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = horizontal ? x : y;
      let at = horizontal ? (y * src.width + first[i]!) * 3 : (first[i]! * src.width + x) * 3;
      let r = ONE / 2;
      let g = ONE / 2;
      let b = ONE / 2;
      for (let k = i * taps, end = k + count[i]!; k < end; k++, at += step) {
        const w = weights[k]!;
        r += data[at]! * w;
        g += data[at + 1]! * w;
        b += data[at + 2]! * w;
      }
      out[o++] = clip8(r);
      out[o++] = clip8(g);
      out[o++] = clip8(b);
    }
  return { data: out, width, height };
}

/**
 * Bicubic resize as Pillow's `Image.resize(size, Image.BICUBIC)` does it for an RGB image (the
 * resize of transformers' PIL image processor, Glm4vImageProcessorPil): a horizontal pass, then a
 * vertical one, each rounding to 8 bits, with Pillow's kernel, antialiasing and fixed-point
 * weights, so the bytes equal Pillow's (test/checkpoint/image-processor.test.ts). sharp's
 * (libvips) resize was measured against Pillow on the fixture image: within 4/255 when shrinking,
 * but up to 115/255 apart when enlarging (1000x800 → 1008x812), so it is not used here.
 * transformers' torchvision processor resizes with torch's bicubic (a = -0.75, float), which
 * differs slightly from Pillow's.
 */
export function resizeBicubic(image: RgbImage, width: number, height: number): RgbImage {
  let out = image;
  if (width !== image.width) out = resamplePass(out, width, out.height, true);
  if (height !== image.height) out = resamplePass(out, width, height, false);
  return out;
}

/** Glm4vImageProcessor on one RGB image: pixel_values rows, grid_thw and the image's token count. */
export async function processImage(config: ImageProcessorConfig, image: RgbImage): Promise<ProcessedImage> {
  const [height, width] = targetSize(config, image.height, image.width);
  const { patchSize: p, mergeSize: m, temporalPatchSize: tp } = config;
  if (height % (p * m) !== 0 || width % (p * m) !== 0)
    throw new ImageProcessorError(
      `a ${width}x${height} image is not a multiple of ${p * m} pixels (the processor's do_resize is off)`,
    );
  const resized = resizeBicubic(image, width, height);
  // Per channel: value = (byte * rescale - mean) / std, computed in f64 and stored as f32.
  const scale = config.doRescale ? config.rescaleFactor : 1;
  const mean = config.doNormalize ? config.imageMean : [0, 0, 0];
  const std = config.doNormalize ? config.imageStd : [1, 1, 1];
  const lut = Array.from({ length: 3 }, (_, c) => {
    const table = new Float32Array(256);
    for (let v = 0; v < 256; v++) table[v] = (v * scale - mean[c]!) / std[c]!;
    return table;
  });
  const gridH = height / p;
  const gridW = width / p;
  const rowLength = 3 * tp * p * p;
  const pixels = new Float32Array(gridH * gridW * rowLength);
  const src = resized.data;
  let out = 0;
  for (let bh = 0; bh < gridH / m; bh++)
    for (let bw = 0; bw < gridW / m; bw++)
      for (let mh = 0; mh < m; mh++)
        for (let mw = 0; mw < m; mw++) {
          const top = (bh * m + mh) * p;
          const left = (bw * m + mw) * p;
          for (let c = 0; c < 3; c++) {
            const table = lut[c]!;
            // The still image repeated over the temporal patch: every frame holds the same values.
            for (let t = 0; t < tp; t++)
              for (let y = 0; y < p; y++) {
                let at = ((top + y) * width + left) * 3 + c;
                for (let x = 0; x < p; x++, at += 3) pixels[out++] = table[src[at]!]!;
              }
          }
        }
  const grid: [number, number, number] = [1, gridH, gridW];
  return { pixels, grid, tokens: (gridH * gridW) / (m * m) };
}
