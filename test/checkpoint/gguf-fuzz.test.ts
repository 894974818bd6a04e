/**
 * checkpoint/gguf.ts against damaged headers (issue 34: "a fuzz test over mutated headers is part of
 * `npm test`"; engine-cuda/test/test_gguf.cpp fuzzes the engine's reader the same way). A seeded run
 * of mutations of a committed fixture's header (random bytes, lengths, counts and value types set to
 * edge values, truncation): each one parses or is refused with GgufError (the tokenizer it gives
 * builds or is refused with TokenizerError), never another exception, never a buffer larger than the
 * file, and each case finishes in bounded time.
 */
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { GgufError, readGgufMetadata, readGgufModel, type GgufScalar, type GgufValue } from '../../checkpoint/gguf.ts';
import { Tokenizer, TokenizerError } from '../../checkpoint/tokenizer.ts';
import { mulberry32 } from '../helpers/mulberry32.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/gguf/llama-F32.gguf');
const CASES = 1000;

/** The fixture's first bytes: the whole key-value section (what the TypeScript reader reads) and more. */
async function headerBytes(): Promise<Buffer> {
  const fh = await open(FIXTURE, 'r');
  try {
    const buf = Buffer.alloc(16384);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

const U64_EDGES = [0n, 1n, 2n, 3n, 255n, 0x7fffffffn, 0xffffffffn, 0x100000000n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];
const U32_EDGES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0x7fffffff, 0xffffffff];

/** One seeded mutation of the header: 1 to 4 edits, sometimes a truncation. */
function mutate(base: Buffer, rand: () => number): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let bytes = Buffer.from(base);
  const edits = 1 + Math.floor(rand() * 4);
  for (let e = 0; e < edits; e++) {
    // bias towards the fixed fields and the first key-values, where lengths and types sit
    const at = rand() < 0.5 ? Math.floor(rand() * 256) : Math.floor(rand() * bytes.length);
    const kind = rand();
    if (kind < 0.35) {
      if (at < bytes.length) bytes[at] = Math.floor(rand() * 256);
    } else if (kind < 0.65) {
      if (at + 8 <= bytes.length) {
        // an edge value, or a length that ends just before or just past the file's end
        const near = Math.max(0, bytes.length - at - 8 + Math.floor(rand() * 17) - 8);
        bytes.writeBigUInt64LE(rand() < 0.7 ? pick(U64_EDGES) : BigInt(near), at);
      }
    } else if (kind < 0.9) {
      if (at + 4 <= bytes.length) bytes.writeUInt32LE(pick(U32_EDGES), at);
    } else {
      bytes = bytes.subarray(0, Math.floor(rand() * bytes.length));
    }
  }
  // the fixed fields: version at 4, tensor count at 8, key-value count at 16
  if (rand() < 0.15 && bytes.length >= 24) bytes.writeBigUInt64LE(pick(U64_EDGES), 16);
  if (rand() < 0.05 && bytes.length >= 8) bytes.writeUInt32LE(pick(U32_EDGES), 4);
  return bytes;
}

/** A refusal names the file, in one printable line of bounded length (keys from the file are quoted). */
function expectClear(error: Error, label: string): void {
  expect(error.message, label).toMatch(/mutated\.gguf/);
  expect(error.message.length, `${label}: ${error.message}`).toBeLessThan(400);
  expect(error.message, label).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/);
}

/** GGUF bytes of a header: the fixed fields and each key-value (no tensors), as gguf-py lays them out. */
function serialise(kv: Map<string, GgufValue>, types: Map<string, number>): Buffer {
  const parts: Buffer[] = [];
  const u32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    parts.push(b);
  };
  const u64 = (v: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    parts.push(b);
  };
  const str = (s: string) => {
    const b = Buffer.from(s, 'utf8');
    u64(BigInt(b.length));
    parts.push(b);
  };
  const typeOf = (v: GgufScalar): number =>
    typeof v === 'string' ? 8 : typeof v === 'boolean' ? 7 : typeof v === 'bigint' ? 11 : Number.isInteger(v) ? 5 : 12;
  const scalar = (type: number, v: GgufScalar) => {
    const b = Buffer.alloc(8);
    if (type === 8) return str(String(v));
    if (type === 7) return parts.push(Buffer.from([v ? 1 : 0]));
    if (type === 11) b.writeBigInt64LE(BigInt(v));
    else if (type === 5) b.writeInt32LE(Number(v));
    else b.writeDoubleLE(Number(v));
    parts.push(b.subarray(0, type === 5 ? 4 : 8));
  };
  parts.push(Buffer.from('GGUF', 'latin1'));
  u32(3);
  u64(0n);
  u64(BigInt(kv.size));
  for (const [key, value] of kv) {
    str(key);
    if (Array.isArray(value)) {
      u32(9);
      const elem = types.get(key) ?? (value.length > 0 ? typeOf(value[0]!) : 5);
      u32(elem);
      u64(BigInt(value.length));
      for (const v of value) scalar(elem, v);
    } else {
      const type = typeOf(value);
      u32(type);
      scalar(type, value);
    }
  }
  return Buffer.concat(parts);
}

/** Values a damaged or hostile file could hold where the reader expects something else. */
const ODD_VALUES: GgufValue[] = [
  'constructor',
  'toString',
  '__proto__',
  'hasOwnProperty',
  '',
  ' ',
  'llama',
  'gpt2',
  'glm4',
  'llama-bpe',
  -1,
  0,
  1,
  2 ** 31 - 1,
  1.5,
  Number.NaN,
  -(2n ** 62n),
  true,
  false,
  [],
  ['constructor', '__proto__'],
  ['a b', 'ab', 'noSpace', ' '],
  [1, 2, 3],
  [-1, 2 ** 31 - 1],
  [true],
];

describe('GGUF header reader under mutated headers', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => vi.restoreAllMocks());

  it(`parses or refuses with GgufError each of ${CASES} seeded mutations`, async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'maya-gguf-fuzz-'));
    const base = await headerBytes();
    const file = path.join(dir, 'mutated.gguf');
    await writeFile(file, base);
    // the unmutated prefix parses: every mutation starts from a good header
    expect((await readGgufModel(file)).vocabSize).toBe(320);

    let largest = 0;
    let allocations = 0;
    const alloc = Buffer.alloc.bind(Buffer);
    vi.spyOn(Buffer, 'alloc').mockImplementation((size, fill, encoding) => {
      largest = Math.max(largest, size);
      allocations++;
      return alloc(size, fill, encoding) as ReturnType<typeof Buffer.alloc>;
    });
    const rand = mulberry32(0x6767);
    const outcomes = { parsed: 0, refused: 0, tokenizerRefused: 0 };
    const refusals = new Set<string>();
    let slowest = 0;
    for (let i = 0; i < CASES; i++) {
      const bytes = mutate(base, rand);
      await writeFile(file, bytes);
      largest = 0;
      const t0 = performance.now();
      let error: unknown;
      let tokenizerJson: object | undefined;
      try {
        tokenizerJson = (await readGgufModel(file)).tokenizerJson;
      } catch (err) {
        error = err;
      }
      slowest = Math.max(slowest, performance.now() - t0);
      if (error !== undefined) {
        expect(error, `case ${i}: ${String(error)}`).toBeInstanceOf(GgufError);
        expectClear(error as Error, `case ${i}`);
        refusals.add((error as Error).message.replace(/.*mutated\.gguf:? /, '').replace(/\d+/g, 'N'));
        outcomes.refused++;
      } else {
        outcomes.parsed++;
        try {
          new Tokenizer(tokenizerJson!);
        } catch (err) {
          expect(err, `case ${i}: ${String(err)}`).toBeInstanceOf(TokenizerError);
          outcomes.tokenizerRefused++;
        }
      }
      // no buffer beyond the file's own size (a claimed length is checked before it is allocated)
      expect(largest, `case ${i}`).toBeLessThanOrEqual(Math.max(bytes.length, 4));
    }
    // the mutations reach both outcomes and many distinct refusals
    expect(outcomes.parsed).toBeGreaterThan(CASES / 20);
    expect(outcomes.refused).toBeGreaterThan(CASES / 4);
    expect(refusals.size).toBeGreaterThan(8);
    expect(allocations).toBeGreaterThan(CASES); // the reader's buffers went through the spy
    expect(slowest).toBeLessThan(2000);
  }, 120_000);

  it(`gives a model or GgufError for ${CASES} seeded swaps of key-values, and a tokenizer or TokenizerError`, async () => {
    dir ??= await mkdtemp(path.join(tmpdir(), 'maya-gguf-fuzz-'));
    const meta = await readGgufMetadata(FIXTURE);
    const keys = [...meta.kv.keys()];
    const extra = ['general.architecture', 'tokenizer.ggml.pre', 'tokenizer.ggml.model', 'split.no', 'split.count'];
    const rand = mulberry32(0x4747);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const file = path.join(dir, 'mutated.gguf');
    let refused = 0;
    for (let i = 0; i < CASES; i++) {
      const kv = new Map(meta.kv);
      const types = new Map<string, number>();
      for (let e = 1 + Math.floor(rand() * 3); e > 0; e--) {
        const key = rand() < 0.5 ? pick(extra) : pick(keys);
        if (rand() < 0.1) kv.delete(key);
        else kv.set(key, pick(ODD_VALUES));
      }
      // the token types and the BOS id sometimes point past the vocabulary or at odd entries
      if (rand() < 0.2) types.set('tokenizer.ggml.token_type', 5);
      await writeFile(file, serialise(kv, types));
      let json: object | undefined;
      try {
        json = (await readGgufModel(file)).tokenizerJson;
      } catch (err) {
        expect(err, `case ${i}: ${String(err)}`).toBeInstanceOf(GgufError);
        expectClear(err as Error, `case ${i}`);
        refused++;
        continue;
      }
      try {
        const tokenizer = new Tokenizer(json);
        tokenizer.encode('hello world', { addSpecialTokens: true });
      } catch (err) {
        expect(err, `case ${i}: ${String(err)}`).toBeInstanceOf(TokenizerError);
      }
    }
    expect(refused).toBeGreaterThan(CASES / 10);
    expect(refused).toBeLessThan(CASES);
  }, 120_000);

  it("refuses architectures and pre-tokenizers named like Object.prototype's members by name", async () => {
    dir ??= await mkdtemp(path.join(tmpdir(), 'maya-gguf-fuzz-'));
    const meta = await readGgufMetadata(FIXTURE);
    const file = path.join(dir, 'mutated.gguf');
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      for (const [key, message] of [
        ['general.architecture', `GGUF architecture "${name}" is not supported`],
        ['tokenizer.ggml.pre', `tokenizer.ggml.pre "${name}" is not supported`],
      ] as const) {
        await writeFile(file, serialise(new Map([...meta.kv, [key, name]]), new Map()));
        await expect(readGgufModel(file), `${key} ${name}`).rejects.toThrow(GgufError);
        await expect(readGgufModel(file), `${key} ${name}`).rejects.toThrow(message);
      }
    }
  });
});
