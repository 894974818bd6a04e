/**
 * `input_image` parts → RGB pixels, and every way an image can be refused, as a 400 in the OpenAI
 * error shape naming the part's `image_url` before any generation:
 *
 * | code                      | when |
 * | ---                       | --- |
 * | `invalid_image_url`       | not a data: or http(s): URL; a data: URL that is not base64; a remote URL while MAYA_IMAGE_URL_ALLOW is empty, or whose host (or a redirect's) is not on it; too many redirects |
 * | `invalid_base64_image`    | a data: URL whose payload is not valid base64 |
 * | `empty_image_file`        | no bytes |
 * | `image_too_large`         | more than MAYA_IMAGE_MAX_BYTES encoded bytes, or more than MAYA_IMAGE_MAX_PIXELS pixels |
 * | `invalid_image_format`    | a data: URL media type, or decoded bytes, other than PNG, JPEG, WebP or GIF |
 * | `invalid_image`           | bytes that do not decode as the image they claim to be; an aspect ratio above 200 |
 * | `failed_to_download_image`| a remote URL that answers a non-2xx status, fails or times out |
 *
 * The codes are OpenAI's (its ResponseErrorCode enum); OpenAI has no separate code for a host
 * that is not allowed, so that is `invalid_image_url` with a message that says so.
 * Decoding uses sharp (libvips): the first frame of a GIF or animated WebP, EXIF orientation
 * applied, alpha dropped (as PIL's convert("RGB") in transformers' loader), sRGB.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { badRequest, type ApiError } from '../contract/errors.ts';
import type { ImageSettings } from '../config/settings.ts';
import {
  ImageProcessorError,
  processImage,
  targetSize,
  type ImageProcessorConfig,
  type ProcessedImage,
  type RgbImage,
} from '../checkpoint/image-processor.ts';
import type { EngineImage } from '../engine-cuda/engine.ts';

/** One image of a request: its URL and the `param` path of that URL. */
export interface ImageSource {
  url: string;
  /** e.g. `input[0].content[1].image_url`. */
  param: string;
}

export type ImageErrorCode =
  | 'invalid_image_url'
  | 'invalid_base64_image'
  | 'empty_image_file'
  | 'image_too_large'
  | 'invalid_image_format'
  | 'invalid_image'
  | 'failed_to_download_image';

export function imageError(source: Pick<ImageSource, 'param'>, code: ImageErrorCode, message: string): ApiError {
  return badRequest(source.param, message, code);
}

const MEDIA_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif']);
const FORMATS = new Set(['png', 'jpeg', 'webp', 'gif']);
const SUPPORTED = 'PNG, JPEG, WebP or GIF';

/** The decoded bytes of a `data:` URL (base64 only). */
function dataUrlBytes(source: ImageSource, settings: ImageSettings): Buffer {
  const comma = source.url.indexOf(',');
  if (comma < 0) throw imageError(source, 'invalid_image_url', 'The image data: URL has no "," before its data.');
  const header = source.url
    .slice(5, comma)
    .split(';')
    .map((part) => part.trim().toLowerCase());
  const mediaType = header[0] ?? '';
  if (!header.slice(1).includes('base64'))
    throw imageError(source, 'invalid_image_url', 'Image data: URLs must be base64 (`data:image/png;base64,...`).');
  if (mediaType !== '' && !MEDIA_TYPES.has(mediaType))
    throw imageError(
      source,
      'invalid_image_format',
      `Image media type '${mediaType}' is not supported; send ${SUPPORTED}.`,
    );
  const payload = source.url.slice(comma + 1).replace(/\s+/g, '');
  if (payload === '') throw imageError(source, 'empty_image_file', 'The image data: URL holds no data.');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(payload) || payload.length % 4 === 1)
    throw imageError(source, 'invalid_base64_image', 'The image data: URL is not valid base64.');
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const bytes = Math.floor((payload.length * 3) / 4) - padding;
  if (bytes > settings.maxBytes) throw tooManyBytes(source, bytes, settings);
  return Buffer.from(payload, 'base64');
}

function tooManyBytes(source: ImageSource, bytes: number | undefined, settings: ImageSettings): ApiError {
  const size = bytes === undefined ? 'The image' : `The image (${bytes} bytes)`;
  return imageError(
    source,
    'image_too_large',
    `${size} is larger than this server's limit of ${settings.maxBytes} bytes (MAYA_IMAGE_MAX_BYTES).`,
  );
}

/** Whether `url`'s host is on the allow-list (a bare host name matches any port). */
function isAllowed(url: URL, settings: ImageSettings): boolean {
  const host = url.hostname.toLowerCase();
  const withPort = url.host.toLowerCase();
  return settings.urlAllow.some((entry) => entry === host || entry === withPort);
}

function checkRemote(source: ImageSource, url: URL, settings: ImageSettings): void {
  if (settings.urlAllow.length === 0)
    throw imageError(
      source,
      'invalid_image_url',
      'Remote image URLs are not enabled on this server (MAYA_IMAGE_URL_ALLOW); send the image as a data: URL.',
    );
  if (!isAllowed(url, settings))
    throw imageError(
      source,
      'invalid_image_url',
      `Image URL host '${url.host}' is not on this server's allow-list (MAYA_IMAGE_URL_ALLOW).`,
    );
}

function parseUrl(source: ImageSource, text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw imageError(source, 'invalid_image_url', 'The image URL is not a valid URL; send a data: or https: URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw imageError(
      source,
      'invalid_image_url',
      `Image URLs must be data: or http(s): URLs, not '${url.protocol.replace(/:$/, '')}'.`,
    );
  return url;
}

const downloadFailed = (source: ImageSource, why: string) =>
  imageError(source, 'failed_to_download_image', `The image could not be downloaded: ${why}.`);

/** Downloads an allowed http(s) image: allow-list re-checked on every redirect, bytes and time bounded. */
async function download(source: ImageSource, settings: ImageSettings, signal?: AbortSignal): Promise<Buffer> {
  let url = parseUrl(source, source.url);
  checkRemote(source, url, settings);
  const timeout = AbortSignal.timeout(settings.fetchTimeoutMs);
  const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    for (let redirects = 0; ; redirects++) {
      const response = await fetch(url, { redirect: 'manual', signal: abort, headers: { accept: 'image/*' } });
      if (response.status >= 300 && response.status < 400 && response.headers.has('location')) {
        await response.body?.cancel();
        if (redirects >= settings.maxRedirects)
          throw imageError(
            source,
            'invalid_image_url',
            `The image URL redirected more than ${settings.maxRedirects} times (MAYA_IMAGE_MAX_REDIRECTS).`,
          );
        url = parseUrl(source, new URL(response.headers.get('location')!, url).href);
        checkRemote(source, url, settings);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw downloadFailed(source, `HTTP ${response.status}`);
      }
      const declared = Number(response.headers.get('content-length') ?? NaN);
      if (Number.isFinite(declared) && declared > settings.maxBytes) {
        await response.body?.cancel();
        throw tooManyBytes(source, declared, settings);
      }
      return await readLimited(source, response, settings);
    }
  } catch (error) {
    if ((error as { status?: unknown }).status === 400) throw error;
    if (timeout.aborted) throw downloadFailed(source, `no answer within ${settings.fetchTimeoutMs} ms`);
    if (signal?.aborted) throw error;
    throw downloadFailed(source, 'the connection failed');
  }
}

async function readLimited(source: ImageSource, response: Response, settings: ImageSettings): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > settings.maxBytes) {
      await reader.cancel();
      throw tooManyBytes(source, undefined, settings);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** The encoded bytes of an image URL (data: or an allowed http(s) URL). */
export async function imageBytes(source: ImageSource, settings: ImageSettings, signal?: AbortSignal): Promise<Buffer> {
  const bytes =
    source.url.slice(0, 5).toLowerCase() === 'data:'
      ? dataUrlBytes(source, settings)
      : await download(source, settings, signal);
  if (bytes.byteLength === 0) throw imageError(source, 'empty_image_file', 'The image has no bytes.');
  if (bytes.byteLength > settings.maxBytes) throw tooManyBytes(source, bytes.byteLength, settings);
  return bytes;
}

/** Decodes PNG, JPEG, WebP or GIF (first frame) bytes to 8-bit RGB, within the pixel limit. */
export async function decodeImage(source: ImageSource, bytes: Buffer, settings: ImageSettings): Promise<RgbImage> {
  // ignoreIcc: Pillow (transformers' image loader) does not colour-manage, so neither does this.
  const options = { limitInputPixels: settings.maxPixels, pages: 1, failOn: 'error' as const, ignoreIcc: true };
  let format: string | undefined;
  let width = 0;
  let height = 0;
  try {
    // Headers only: the pixel limit is checked below, with its own code.
    const meta = await sharp(bytes, { ...options, limitInputPixels: false }).metadata();
    format = meta.format;
    width = meta.width ?? 0;
    height = meta.height ?? 0;
  } catch {
    throw imageError(source, 'invalid_image', `The image could not be read; send ${SUPPORTED}.`);
  }
  if (format === undefined || !FORMATS.has(format))
    throw imageError(
      source,
      'invalid_image_format',
      `Image format '${format ?? 'unknown'}' is not supported; send ${SUPPORTED}.`,
    );
  if (width * height > settings.maxPixels)
    throw imageError(
      source,
      'image_too_large',
      `The image (${width}x${height}) has more than this server's limit of ${settings.maxPixels} pixels (MAYA_IMAGE_MAX_PIXELS).`,
    );
  try {
    const { data, info } = await sharp(bytes, options)
      .autoOrient()
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`${info.channels} channels`);
    return {
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      width: info.width,
      height: info.height,
    };
  } catch {
    throw imageError(source, 'invalid_image', `The ${format.toUpperCase()} image could not be decoded.`);
  }
}

/** An image URL → its RGB pixels, or the 400 that says why not. */
export async function loadImage(source: ImageSource, settings: ImageSettings, signal?: AbortSignal): Promise<RgbImage> {
  return decodeImage(source, await imageBytes(source, settings, signal), settings);
}

/**
 * The prefix-cache key of an image: the first 8 bytes (big-endian) of the SHA-256 of its
 * normalised pixel values and its grid. Equal pixels give equal keys in every request and turn.
 */
export function imageHash(pixels: Float32Array, grid: readonly [number, number, number]): bigint {
  const hash = createHash('sha256');
  hash.update(new Uint8Array(pixels.buffer, pixels.byteOffset, pixels.byteLength));
  hash.update(new Uint8Array(new Int32Array(grid).buffer));
  return hash.digest().readBigUInt64BE(0);
}

/** A request's image, ready for the engine, with the prompt tokens it takes. */
export interface PreparedImage extends EngineImage {
  tokens: number;
}

/** Images at least this large (pixels after the resize) are processed on a prompt worker. */
export const OFF_THREAD_IMAGE_PIXELS = 256 * 1024;

/** Runs the image processor: on the calling thread, or on a worker (PromptRenderer.processImage). */
export type ProcessImage = (config: ImageProcessorConfig, image: RgbImage) => Promise<ProcessedImage>;

/** An image URL → the engine's pixel rows, grid, hash and token count (or the 400). */
export async function prepareImage(
  source: ImageSource,
  processor: ImageProcessorConfig,
  settings: ImageSettings,
  signal?: AbortSignal,
  offThread?: ProcessImage,
): Promise<PreparedImage> {
  const image = await loadImage(source, settings, signal);
  let target: [number, number];
  try {
    target = targetSize(processor, image.height, image.width);
  } catch (error) {
    if (error instanceof ImageProcessorError)
      throw imageError(source, 'invalid_image', `The image cannot be used: ${error.message}.`);
    throw error;
  }
  const run = offThread && target[0] * target[1] >= OFF_THREAD_IMAGE_PIXELS ? offThread : processImage;
  let processed: ProcessedImage;
  try {
    processed = await run(processor, image);
  } catch (error) {
    if (error instanceof ImageProcessorError)
      throw imageError(source, 'invalid_image', `The image cannot be used: ${error.message}.`);
    throw error;
  }
  return { ...processed, hash: imageHash(processed.pixels, processed.grid) };
}
