/**
 * `maya perplexity` on the committed models: its perplexity and each position's top-1 id equal those
 * computed from the engine's logits of each scored position taken one sequence per prefix
 * (KEEP_LOGITS, the decode path), KL of a model against itself is 0 and against its q8 weights small
 * and positive, GGUF files score (BOS where the file asks for it; the demo model's Q4_K_M file and
 * its load-time q4_k_m mixture against its bf16 weights), and Bun prints what Node prints.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runPerplexity, type PerplexityResult } from '../../cli/perplexity.ts';
import {
  argmax,
  firstScored,
  logSoftmax,
  percentile,
  readBaseLogits,
  scoringWindows,
} from '../../cli/perplexity-score.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { fixtureDir } from '../engine/engine-helpers.ts';

const ROOT = join(import.meta.dirname, '../..');
const DEMO = join(ROOT, 'models/maya-demo');
const GGUF = join(ROOT, 'test/fixtures/gguf');
const tmp = mkdtempSync(join(tmpdir(), 'maya-ppl-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const TEXT =
  'The river runs past the old mill, and the miller counts the sacks of grain each evening. ' +
  'When the rain comes, the wheel turns faster and the village hears it all night long. ' +
  'Children bring bread to the bridge and feed the ducks before school.';
const textFile = join(tmp, 'text.txt');
writeFileSync(textFile, TEXT);

async function cli(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runPerplexity(argv, { out: (t) => (out += t), err: (t) => (err += t) }, env);
  return { code, out, err };
}

async function score(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<PerplexityResult> {
  const r = await cli([...argv, '--json', '--threads', '2'], env);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out) as PerplexityResult;
}

describe('maya perplexity', () => {
  it('equals the perplexity of the logits of one sequence per scored prefix', async () => {
    const ctx = 16;
    const r = await score(['--model', DEMO, '--text', textFile, '--ctx', String(ctx)]);
    const ids = (await Tokenizer.fromDir(DEMO)).encode(TEXT); // the demo tokenizer adds no BOS
    const windows = scoringWindows(ids, ctx, undefined);
    expect(r).toMatchObject({ ctx, windows: Math.floor(ids.length / ctx), tokens: ids.length });
    expect(r.scored).toBe(windows.length * (ctx - 1 - firstScored(ctx)));
    const engine = await NativeEngine.load(DEMO, { numThreads: 2, backend: 'cpu' });
    try {
      const want: { pos: number; token: number; logprob: number; top1: number }[] = [];
      for (const w of windows)
        for (let p = firstScored(ctx); p < ctx - 1; p++) {
          const gen = engine.generate({ promptIds: w.tokens.slice(0, p + 1), maxTokens: 1, keepLogits: true });
          let logits: Float32Array | undefined;
          for await (const ev of gen) if (ev.type === 'token') logits = ev.logits;
          const token = ids[w.start + p + 1]!;
          want.push({ pos: w.start + p, token, logprob: logSoftmax(logits!)[token]!, top1: argmax(logits!) });
        }
      // top1 is the argmax of the logits at that position (here from the decode path)
      expect(r.positions).toEqual(want);
      const nll = -want.reduce((a, b) => a + b.logprob, 0) / want.length;
      expect(r.perplexity).toBeCloseTo(Math.exp(nll), 9);
      expect(r.perplexity).toBeGreaterThan(1);
    } finally {
      await engine.close();
    }
    expect(r.timings.loadMs).toBeGreaterThan(0);
    expect(r.timings.promptTokens).toBe(r.windows * ctx);
    expect(r.timings.promptTokensPerS).toBeGreaterThan(0);
  });

  it('KL against itself is 0; against its q8 weights and a q8_0 KV cache small and positive', async () => {
    const base = join(tmp, 'base.bin');
    const args = ['--model', DEMO, '--text', textFile, '--ctx', '16'];
    const ref = await score([...args, '--save-logits', base]);
    const self = await score([...args, '--kl-base', base]);
    expect(self.kl).toEqual({ mean: 0, p99: 0, sameTop1: 1, positions: ref.scored });
    expect(self.perplexity).toBe(ref.perplexity);
    for (const env of [{ MAYA_WEIGHT_DTYPE: 'q8' }, { MAYA_KV_DTYPE: 'q8_0' }]) {
      const q = await score([...args, '--kl-base', base], env);
      expect(q.kl!.mean).toBeGreaterThan(0);
      expect(q.kl!.mean).toBeLessThan(0.05);
      expect(q.kl!.p99).toBeGreaterThan(q.kl!.mean);
      expect(q.kl!.sameTop1).toBeGreaterThan(0.8);
      expect(Math.abs(Math.log(q.perplexity / ref.perplexity))).toBeLessThan(0.05);
    }
  });

  it('scores a Llama or DeepSeek GGUF with BOS at the start of each window, as llama-perplexity does', async () => {
    const ctx = 32;
    for (const file of ['llama-F32.gguf', 'deepseek2-F16.gguf']) {
      const model = join(GGUF, file);
      const r = await score(['--model', model, '--text', textFile, '--ctx', String(ctx)]);
      const ids = (await Tokenizer.fromDir(model)).encode(TEXT);
      const bos = 304; // tokenizer.ggml.bos_token_id; tokenizer.ggml.add_bos_token is true
      const windows = scoringWindows([bos, ...ids], ctx, bos);
      expect(r, file).toMatchObject({ ctx, tokens: ids.length + 1, windows: windows.length });
      const want = windows.flatMap((w) =>
        Array.from({ length: ctx - 1 - firstScored(ctx) }, (_, k) => [bos, ...ids][w.start + firstScored(ctx) + k + 1]),
      );
      expect(
        r.positions!.map((p) => p.token),
        file,
      ).toEqual(want);
      expect(Number.isFinite(r.perplexity) && r.perplexity > 1, file).toBe(true);
    }
  });

  it('scores the demo GGUF (Q4_K_M) and the demo at MAYA_WEIGHT_DTYPE=q4_k_m against its bf16 weights', async () => {
    const args = ['--text', textFile, '--ctx', '16'];
    const base = join(tmp, 'demo-bf16.bin');
    const ref = await score(['--model', DEMO, ...args, '--save-logits', base]);
    const saved = join(tmp, 'demo-gguf.bin');
    const gguf = await score([
      '--model',
      join(GGUF, 'maya-demo-Q4_K_M.gguf'),
      ...args,
      '--kl-base',
      base,
      '--save-logits',
      saved,
    ]);
    const q4 = await score(['--model', DEMO, ...args, '--kl-base', base], { MAYA_WEIGHT_DTYPE: 'q4_k_m' });
    for (const [name, r] of [
      ['gguf', gguf],
      ['q4_k_m', q4],
    ] as const) {
      expect(r.engine.weightDtype, name).toBe('q4_k');
      expect(r.tokens, name).toBe(ref.tokens); // the GGUF tokenizer gives the directory's ids
      expect(Number.isFinite(r.perplexity) && r.perplexity > 1, name).toBe(true);
      expect(Math.abs(Math.log(r.perplexity / ref.perplexity)), name).toBeLessThan(0.3);
      expect(r.kl!.positions, name).toBe(ref.scored);
      expect(r.kl!.mean, name).toBeGreaterThan(0);
      expect(r.kl!.mean, name).toBeLessThan(0.2);
      expect(r.kl!.p99, name).toBeGreaterThan(r.kl!.mean);
      expect(r.kl!.sameTop1, name).toBeGreaterThan(0.8);
      expect(r.kl!.sameTop1, name).toBeLessThanOrEqual(1);
    }
    // llama.cpp's Q4_K_M file and the load-time q4_k_m mixture of the same weights agree
    expect(q4.kl!.mean).toBeCloseTo(gguf.kl!.mean, 3);
    // top1 is the argmax of the position's log-probabilities as --save-logits wrote them
    const rows = readBaseLogits(saved);
    expect(rows.positions).toBe(gguf.positions!.length);
    const V = rows.numVocab;
    expect(gguf.positions!.map((_, i) => argmax(rows.logp.subarray(i * V, (i + 1) * V)))).toEqual(
      gguf.positions!.map((p) => p.top1),
    );
  });

  it('scores token ids on the MoE and MLA fixtures (no tokenizer) with --ids', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % 200);
    const idsFile = join(tmp, 'ids.txt');
    writeFileSync(idsFile, ids.join(' '));
    for (const name of ['glm45-moe-bf16', 'deepseek3-bf16']) {
      const r = await score(['--model', fixtureDir(name), '--ids', idsFile, '--ctx', '20']);
      expect(r).toMatchObject({ windows: 2, tokens: 40, scored: 18 });
      expect(r.positions!.map((p) => p.token)).toEqual([...ids.slice(11, 20), ...ids.slice(31, 40)]);
      expect(Number.isFinite(r.perplexity) && r.perplexity > 1).toBe(true);
    }
  });

  it('refuses a short text, a base from another window size and bad usage with exit 2', async () => {
    const short = await cli(['--model', DEMO, '--text', textFile, '--ctx', '100']);
    expect(short.code).toBe(2);
    expect(short.err).toMatch(/needs at least 200/);
    const base = join(tmp, 'base12.bin');
    expect((await cli(['--model', DEMO, '--text', textFile, '--ctx', '12', '--save-logits', base])).code).toBe(0);
    const other = await cli(['--model', DEMO, '--text', textFile, '--ctx', '16', '--kl-base', base]);
    expect(other.code).toBe(2);
    expect(other.err).toMatch(/--ctx 12/);
    expect((await cli(['--model', DEMO])).code).toBe(2);
    const bad = await cli(['--model', DEMO, '--text', textFile, '--ctx', '0']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/bad value for --ctx/);
  });

  it('percentile interpolates as llama-perplexity does', () => {
    expect(percentile([0, 1, 2, 3, 4], 0.99)).toBeCloseTo(3.96, 12);
    expect(percentile([5], 0.99)).toBe(5);
  });

  it('prints the same result under Bun', () => {
    const args = ['perplexity', '--model', DEMO, '--text', textFile, '--ctx', '16', '--threads', '2', '--json'];
    const run = (cmd: string, pre: string[]) =>
      JSON.parse(execFileSync(cmd, [...pre, ...args], { cwd: ROOT, encoding: 'utf8' })) as PerplexityResult;
    const node = run(process.execPath, ['bin/maya.js']);
    const bun = run(join(ROOT, 'node_modules/.bin/bun'), ['cli/maya.ts']);
    expect(bun.perplexity).toBe(node.perplexity);
    // The same tokens and top-1 choices; a logprob may differ in its last bit (Math.log and Math.exp
    // are not correctly rounded, and V8's and JavaScriptCore's differ: -4.369030611095216 / ...215).
    const strip = (r: PerplexityResult) => (r.positions ?? []).map(({ logprob: _, ...rest }) => rest);
    expect(strip(bun)).toEqual(strip(node));
    expect(strip(node).length).toBeGreaterThan(0);
    node.positions!.forEach((p, i) => expect(bun.positions![i]!.logprob).toBeCloseTo(p.logprob, 12));
  });
});
