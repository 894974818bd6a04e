/**
 * The arithmetic of `maya perplexity` (cli/perplexity.ts): the scoring windows, log-softmax and
 * KL divergence over a window's logits, and the file `--save-logits` writes and `--kl-base` reads.
 *
 * Windows follow llama.cpp's llama-perplexity (tools/perplexity/perplexity.cpp, perplexity() at
 * commit 34af94cd): the text's tokens are cut into floor(n / ctx) windows of ctx tokens (it needs at
 * least 2 * ctx tokens), each evaluated from an empty cache, with its first token replaced by BOS
 * when the tokenizer adds one; only the second half is scored: the logits at positions
 * first = floor(ctx / 2) .. ctx - 2 each score the next token, ctx - 1 - first per window, so every
 * scored token has at least ctx / 2 tokens of context. Perplexity = exp(mean negative logprob).
 * KL divergence (llama-perplexity --kl-divergence) is KL(base || model) per scored position,
 * sum_i p_base(i) (log p_base(i) - log p(i)), computed here over the whole vocabulary in float64.
 */
import { readFileSync } from 'node:fs';

export interface Window {
  /** Index of the window's first token in the text's tokens. */
  start: number;
  /** The window's tokens as evaluated (the first one BOS when the tokenizer adds it). */
  tokens: number[];
}

/** First scored position of a window of ctx tokens. */
export function firstScored(ctx: number): number {
  return Math.floor(ctx / 2);
}

/** The windows llama-perplexity evaluates; throws when the text has fewer than 2 * ctx tokens. */
export function scoringWindows(ids: readonly number[], ctx: number, bos: number | undefined): Window[] {
  if (ids.length < 2 * ctx) {
    throw new RangeError(`the text has ${ids.length} tokens; a context of ${ctx} needs at least ${2 * ctx}`);
  }
  const windows: Window[] = [];
  for (let start = 0; start + ctx <= ids.length; start += ctx) {
    const tokens = ids.slice(start, start + ctx);
    if (bos !== undefined) tokens[0] = bos;
    windows.push({ start, tokens });
  }
  return windows;
}

/** log-softmax of one row of logits, in float64. */
export function logSoftmax(row: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of row) max = v > max ? v : max;
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = (row[i] ?? 0) - lse;
  return out;
}

/** The largest entry's index (the lowest on ties, as the engine's greedy sampler). */
export function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if ((row[i] ?? -Infinity) > (row[best] ?? -Infinity)) best = i;
  return best;
}

/** KL(base || model) of two log-probability rows. */
export function klDivergence(baseLogp: ArrayLike<number>, logp: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < baseLogp.length; i++) {
    const b = baseLogp[i] ?? -Infinity;
    if (b === -Infinity) continue;
    sum += Math.exp(b) * (b - (logp[i] ?? -Infinity));
  }
  return sum;
}

/** llama-perplexity's percentile: linear between the two nearest of the sorted values. */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return NaN;
  const p = fraction * (sorted.length - 1);
  const i = Math.floor(p);
  const j = Math.min(i + 1, sorted.length - 1);
  return (1 - (p - i)) * (sorted[i] ?? 0) + (p - i) * (sorted[j] ?? 0);
}

/**
 * The --save-logits file: the 8-byte magic `MAYAKLB1`, then uint32 little-endian n_vocab, ctx,
 * number of tokens and number of scored positions, the text's tokens (int32 each), then for each
 * scored position in order its log-probabilities over the vocabulary (float32 each).
 */
const MAGIC = 'MAYAKLB1';

export interface BaseLogits {
  numVocab: number;
  ctx: number;
  ids: Int32Array;
  /** (positions, numVocab) log-probabilities. */
  logp: Float32Array;
  positions: number;
}

export class BaseLogitsWriter {
  private readonly chunks: Buffer[] = [];
  private positions = 0;

  constructor(
    private readonly numVocab: number,
    private readonly ctx: number,
    private readonly ids: readonly number[],
  ) {}

  add(logp: Float64Array): void {
    this.chunks.push(Buffer.from(Float32Array.from(logp).buffer));
    this.positions++;
  }

  bytes(): Buffer {
    const head = Buffer.alloc(8 + 16);
    head.write(MAGIC, 0, 'latin1');
    head.writeUInt32LE(this.numVocab, 8);
    head.writeUInt32LE(this.ctx, 12);
    head.writeUInt32LE(this.ids.length, 16);
    head.writeUInt32LE(this.positions, 20);
    return Buffer.concat([head, Buffer.from(Int32Array.from(this.ids).buffer), ...this.chunks]);
  }
}

/** Reads a --save-logits file; throws Error naming what is wrong. */
export function readBaseLogits(path: string): BaseLogits {
  const buf = readFileSync(path);
  if (buf.length < 24 || buf.toString('latin1', 0, 8) !== MAGIC) {
    throw new Error(`${path} is not a file maya perplexity --save-logits wrote`);
  }
  const numVocab = buf.readUInt32LE(8);
  const ctx = buf.readUInt32LE(12);
  const n = buf.readUInt32LE(16);
  const positions = buf.readUInt32LE(20);
  const want = 24 + 4 * n + 4 * positions * numVocab;
  if (buf.length !== want) throw new Error(`${path} holds ${buf.length} bytes; its header says ${want}`);
  const copy = new Uint8Array(buf.length - 24);
  copy.set(buf.subarray(24));
  return {
    numVocab,
    ctx,
    ids: new Int32Array(copy.buffer, 0, n),
    logp: new Float32Array(copy.buffer, 4 * n, positions * numVocab),
    positions,
  };
}
