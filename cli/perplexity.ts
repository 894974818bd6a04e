/**
 * `maya perplexity`: the perplexity of a text under a model, scored in windows as llama.cpp's
 * llama-perplexity scores it (cli/perplexity-score.ts), from the engine's logits of every window
 * position (ENG_SEQ_PROMPT_LOGITS, CPU backend). `--save-logits FILE` keeps the scored positions'
 * log-probabilities; `--kl-base FILE` compares against such a file (another model or dtype on the
 * same text): mean KL divergence, the share of positions whose top-1 token agrees, and the 99th
 * percentile of KL. `--json` prints one object with, per scored position, the next token's logprob
 * and the top-1 id. Load time and prompt tokens/s are measured in this process. The engine runs on
 * this thread (NativeContext, synchronous): a CLI has nothing else to serve meanwhile.
 * Exit codes: 0 ok, 1 the model or the engine failed, 2 bad usage or a bad setting.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { configEnv } from '../config/config-file.ts';
import { engineOptions, loadEngineSettings } from '../config/engine-settings.ts';
import { loadWeightDtype, type Env } from '../config/settings.ts';
import { readModelDir } from '../checkpoint/model-dir.ts';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import { ENG, NativeLib, type NativeContext } from '../engine-cuda/ffi.ts';
import { engineInfoFromFields, type NativeEngineOptions } from '../engine-cuda/native-engine.ts';
import {
  argmax,
  BaseLogitsWriter,
  firstScored,
  klDivergence,
  logSoftmax,
  percentile,
  readBaseLogits,
  scoringWindows,
  type BaseLogits,
  type Window,
} from './perplexity-score.ts';
import { defaultIo, runCommand, UsageError, type CliIo } from './cli-io.ts';

const USAGE = `Usage: maya perplexity --model DIR|FILE.gguf (--text FILE | --ids FILE) [options]
  --text FILE         the text to score (tokenised with the model's tokenizer)
  --ids FILE          token ids to score instead (comma- or space-separated; models without a tokenizer)
  --ctx N             window size in tokens (default 512, at most the model's context); the text needs 2N
  --save-logits FILE  write the scored positions' log-probabilities (a base for --kl-base)
  --kl-base FILE      compare with a saved base: mean KL, top-1 agreement, 99th percentile KL
  --threads N         CPU threads of the engine (default: all cores)
  --config FILE       JSON file {"env": {...}}: engine settings (MAYA_WEIGHT_DTYPE, MAYA_KV_DTYPE,
                      MAYA_ENGINE_*); the environment wins over it
  --json              print one JSON object (with every scored position)
`;

export type PerplexityIo = CliIo;

interface Options {
  model: string;
  text?: string;
  ids?: string;
  ctx?: number;
  saveLogits?: string;
  klBase?: string;
  threads?: number;
  config?: string;
  json: boolean;
}

function positiveInt(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`bad value for ${flag}: '${text}'`);
  return n;
}

function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      text: { type: 'string' },
      ids: { type: 'string' },
      ctx: { type: 'string' },
      'save-logits': { type: 'string' },
      'kl-base': { type: 'string' },
      threads: { type: 'string' },
      config: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return 'help';
  if (!values.model) throw new UsageError('--model DIR|FILE.gguf is required');
  if ((values.text === undefined) === (values.ids === undefined)) {
    throw new UsageError('give exactly one of --text FILE and --ids FILE');
  }
  return {
    model: values.model,
    text: values.text,
    ids: values.ids,
    ctx: positiveInt(values.ctx, '--ctx'),
    saveLogits: values['save-logits'],
    klBase: values['kl-base'],
    threads: positiveInt(values.threads, '--threads'),
    config: values.config,
    json: values.json ?? false,
  };
}

/** One scored position: the token at pos + 1 scored by the logits at pos. */
export interface ScoredPosition {
  pos: number;
  token: number;
  logprob: number;
  top1: number;
}

export interface PerplexityResult {
  engine: { backend: string; simd: string; weightDtype: string; kvDtype: string };
  ctx: number;
  windows: number;
  tokens: number;
  scored: number;
  perplexity: number;
  meanNll: number;
  kl?: { mean: number; p99: number; sameTop1: number; positions: number };
  timings: { loadMs: number; promptTokens: number; promptMs: number; promptTokensPerS: number };
  positions?: ScoredPosition[];
}

/** The text's token ids and the BOS id each window starts with (when the tokenizer adds one). */
async function textIds(o: Options, dir: string, hasTokenizer: boolean): Promise<{ ids: number[]; bos?: number }> {
  if (o.ids !== undefined) {
    const ids = readFileSync(o.ids, 'utf8')
      .split(/[\s,]+/)
      .filter((s) => s !== '')
      .map(Number);
    if (ids.some((id) => !Number.isInteger(id) || id < 0)) throw new UsageError(`${o.ids}: not a list of token ids`);
    return { ids };
  }
  if (!hasTokenizer) throw new UsageError(`${dir} has no tokenizer.json: use --ids`);
  const tokenizer = await Tokenizer.fromDir(dir);
  const text = readFileSync(o.text ?? '', 'utf8');
  // The tokens the tokenizer's post-processor puts before any text (llama-perplexity's add_bos).
  const plain = tokenizer.encode('a');
  const special = tokenizer.encode('a', { addSpecialTokens: true });
  const bos = special.length > plain.length && special[1] === plain[0] ? special[0] : undefined;
  return { ids: bos === undefined ? tokenizer.encode(text) : [bos, ...tokenizer.encode(text)], bos };
}

/** Runs one window; returns its logits (ctx rows) and the wall time of its steps in ms. */
function runWindow(ctx: NativeContext, w: Window, rows: Float32Array): number {
  const t0 = performance.now();
  const id = ctx.seqAdd({ tokens: w.tokens, maxTokens: 1, flags: ENG.SEQ_PROMPT_LOGITS });
  const events = new Int32Array(16 * ENG.EVENT_INTS);
  let got = false;
  for (let done = false; !done;) {
    const n = ctx.step(events);
    for (let i = 0; i < n; i++) {
      if (events[i * ENG.EVENT_INTS] !== id) continue;
      const kind = events[i * ENG.EVENT_INTS + 1];
      if (kind === ENG.EVENT_PREFILLED) got = ctx.seqPromptLogits(id, rows) === w.tokens.length;
      if (kind === ENG.EVENT_FINISH) done = true;
    }
  }
  if (!got) throw new Error(`window at token ${w.start}: the engine returned no prompt logits`);
  return performance.now() - t0;
}

function engineParams(o: Options, processEnv: Env, ctx: number): NativeEngineOptions {
  const env = configEnv(o.config, processEnv);
  const settings = engineOptions(loadEngineSettings(env), loadWeightDtype(env.MAYA_WEIGHT_DTYPE));
  // Prompt logits are the CPU backend's: auto means cpu here. One window at a time.
  const backend = settings.backend === undefined || settings.backend === 'auto' ? 'cpu' : settings.backend;
  const rows = Math.min(ctx, 256);
  return {
    ...settings,
    backend,
    maxBatch: 1,
    contextLength: ctx + 1,
    prefillChunk: rows,
    maxLogits: rows,
    ...(o.threads !== undefined ? { numThreads: o.threads } : {}),
  };
}

async function perplexity(o: Options, processEnv: Env): Promise<PerplexityResult> {
  const model = await readModelDir(o.model);
  const ctx = o.ctx ?? Math.min(512, model.contextLength - 1);
  if (ctx < 2 || ctx + 1 > model.contextLength) {
    throw new UsageError(`--ctx must be in [2, ${model.contextLength - 1}] for this model (got ${ctx})`);
  }
  const { ids, bos } = await textIds(o, model.dir, model.hasTokenizer);
  let windows: Window[];
  try {
    windows = scoringWindows(ids, ctx, bos);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const base: BaseLogits | undefined = o.klBase === undefined ? undefined : readBaseLogits(o.klBase);
  const { libPath, cudaLibPath, ...params } = engineParams(o, processEnv, ctx);
  const lib = await NativeLib.open(libPath);
  if (cudaLibPath !== undefined) lib.setCudaLibrary(cudaLibPath);
  const t0 = performance.now();
  const engine = lib.createContext(model.dir, params);
  const loadMs = performance.now() - t0;
  try {
    const info = engineInfoFromFields(engine.info());
    const V = info.numVocab;
    if (base) checkBase(base, V, ctx, ids);
    const first = firstScored(ctx);
    const rows = new Float32Array(ctx * V);
    const writer = o.saveLogits === undefined ? undefined : new BaseLogitsWriter(V, ctx, ids);
    const positions: ScoredPosition[] = [];
    const kls: number[] = [];
    let nll = 0;
    let sameTop = 0;
    let promptMs = 0;
    for (const w of windows) {
      promptMs += runWindow(engine, w, rows);
      for (let p = first; p < ctx - 1; p++) {
        const logp = logSoftmax(rows.subarray(p * V, (p + 1) * V));
        const token = ids[w.start + p + 1] ?? 0;
        const top1 = argmax(logp);
        const lp = logp[token] ?? -Infinity;
        nll -= lp;
        if (o.json) positions.push({ pos: w.start + p, token, logprob: lp, top1 });
        writer?.add(logp);
        if (base) {
          // both sides at the base file's float32 precision (a model against itself: exactly 0)
          const b = base.logp.subarray(kls.length * V, (kls.length + 1) * V);
          const logp32 = Float32Array.from(logp);
          kls.push(klDivergence(b, logp32));
          sameTop += argmax(b) === argmax(logp32) ? 1 : 0;
        }
      }
    }
    if (writer && o.saveLogits !== undefined) writeFileSync(o.saveLogits, writer.bytes());
    const scored = windows.length * (ctx - 1 - first);
    const promptTokens = windows.length * ctx;
    const sorted = [...kls].sort((a, b) => a - b);
    return {
      engine: { backend: info.backend, simd: info.simd, weightDtype: info.weightDtype, kvDtype: info.kvDtype },
      ctx,
      windows: windows.length,
      tokens: ids.length,
      scored,
      perplexity: Math.exp(nll / scored),
      meanNll: nll / scored,
      ...(base
        ? {
            kl: {
              mean: kls.reduce((a, b) => a + b, 0) / kls.length,
              p99: percentile(sorted, 0.99),
              sameTop1: sameTop / kls.length,
              positions: kls.length,
            },
          }
        : {}),
      timings: { loadMs, promptTokens, promptMs, promptTokensPerS: (promptTokens * 1000) / promptMs },
      ...(o.json ? { positions } : {}),
    };
  } finally {
    engine.free();
  }
}

/** A base must come from the same text, window size and vocabulary. */
function checkBase(base: BaseLogits, numVocab: number, ctx: number, ids: readonly number[]): void {
  if (base.numVocab !== numVocab)
    throw new UsageError(`--kl-base has ${base.numVocab} vocabulary entries, the model ${numVocab}`);
  if (base.ctx !== ctx) throw new UsageError(`--kl-base was scored with --ctx ${base.ctx}, this run uses ${ctx}`);
  if (base.ids.length !== ids.length || base.ids.some((id, i) => id !== ids[i])) {
    throw new UsageError('--kl-base was scored on other tokens (another text or tokenizer)');
  }
}

function printText(r: PerplexityResult, io: PerplexityIo): void {
  const e = r.engine;
  io.out(`engine: ${e.backend}, ${e.simd} kernels, weights ${e.weightDtype}, KV ${e.kvDtype}\n`);
  io.out(`tokens: ${r.tokens}, ${r.windows} windows of ${r.ctx}, ${r.scored} scored\n`);
  io.out(`perplexity: ${r.perplexity.toFixed(4)} (mean NLL ${r.meanNll.toFixed(6)})\n`);
  if (r.kl) {
    const k = r.kl;
    io.out(`KL divergence: mean ${k.mean.toExponential(4)}, 99th percentile ${k.p99.toExponential(4)}\n`);
    io.out(`same top-1: ${(100 * k.sameTop1).toFixed(2)}% of ${k.positions} positions\n`);
  }
  const t = r.timings;
  io.out(
    `load: ${t.loadMs.toFixed(0)} ms; prompt: ${t.promptTokens} tokens, ${t.promptTokensPerS.toFixed(1)} tokens/s\n`,
  );
}

export async function runPerplexity(
  argv: string[],
  io: PerplexityIo = defaultIo,
  processEnv: Env = process.env,
): Promise<number> {
  return runCommand('perplexity', USAGE, io, async () => {
    const options = parseOptions(argv);
    if (options === 'help') {
      io.out(USAGE);
      return 0;
    }
    const result = await perplexity(options, processEnv);
    if (options.json) io.out(`${JSON.stringify(result)}\n`);
    else printText(result, io);
    return 0;
  });
}
