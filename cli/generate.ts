/**
 * `maya generate`: the engine's debug CLI. Runs one generation on a model directory with raw
 * text (tokenised with the model's tokenizer, no chat template) or raw token ids, and prints the
 * engine it ran (backend, kernel path, weight dtype), the generated ids and text; `--top-logits K`
 * adds each step's K largest logits; `--json` prints one JSON object instead. Both report the load
 * time, prompt tokens/s (from the request to its first token: prefill and the first sample) and
 * decode tokens/s (the later tokens), measured in this process as llama.cpp's tools do; `--warmup` first
 * runs one untimed generation of the same length, as llama-bench does before it measures (the timed
 * run then finds the activation buffers, whose pages the kernel zero-fills on first touch, already
 * touched). The engine's
 * settings (MAYA_WEIGHT_DTYPE, MAYA_ENGINE_*, MAYA_CUDA_*) are read as `maya serve` reads them:
 * the real environment, else the --config file's env block, else the default. Exit codes: 0 ok,
 * 1 the model or the engine failed, 2 bad usage or a bad setting.
 */
import { parseArgs } from 'node:util';
import { configEnv } from '../config/config-file.ts';
import { engineOptions, loadEngineSettings } from '../config/engine-settings.ts';
import { loadWeightDtype, type Env } from '../config/settings.ts';
import { EngineError, type EngineInfo, type FinishInfo } from '../engine-cuda/engine.ts';
import { NativeEngine, type NativeEngineOptions } from '../engine-cuda/native-engine.ts';
import { readModelDir } from '../checkpoint/model-dir.ts';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import { defaultIo, runCommand, UsageError, type CliIo } from './cli-io.ts';

const USAGE = `Usage: maya generate --model DIR|FILE.gguf (--prompt TEXT | --prompt-ids 1,2,3) [options]
  --max-tokens N     tokens to generate (default 32)
  --temperature T    0 = greedy (default 0)
  --top-p P          nucleus sampling, (0, 1] (default 1)
  --top-k K          sample among the K most likely tokens only; 0 = off (default 0)
  --seed S           sampler seed (default 0)
  --stop-ids 1,2     stop token ids (default: the model's eos ids; --stop-ids none for none)
  --top-logits K     print each step's K largest logits (id, logit, piece)
  --threads N        CPU threads of the engine (default: all cores)
  --config FILE      JSON file {"env": {...}}: engine settings (MAYA_WEIGHT_DTYPE, MAYA_ENGINE_*,
                     MAYA_CUDA_*); the environment wins over it
  --warmup           first run one untimed generation of the same length (the prompt rotated by one
                     token, so the prefix cache cannot serve the timed run), as llama-bench does
  --json             print one JSON object
`;

export type GenerateIo = CliIo;

interface Options {
  model: string;
  prompt?: string;
  promptIds?: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: number;
  stopIds?: number[];
  topLogits: number;
  threads?: number;
  config?: string;
  warmup: boolean;
  json: boolean;
}

function idList(text: string, flag: string): number[] {
  const ids = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (ids.length === 0 || ids.some((id) => !Number.isInteger(id) || id < 0)) {
    throw new UsageError(`${flag} must be comma-separated token ids, got '${text}'`);
  }
  return ids;
}

function number(text: string | undefined, flag: string, fallback: number, check: (n: number) => boolean): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || !check(n)) throw new UsageError(`bad value for ${flag}: '${text}'`);
  return n;
}

function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      prompt: { type: 'string' },
      'prompt-ids': { type: 'string' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      'top-p': { type: 'string' },
      'top-k': { type: 'string' },
      seed: { type: 'string' },
      'stop-ids': { type: 'string' },
      'top-logits': { type: 'string' },
      threads: { type: 'string' },
      config: { type: 'string' },
      warmup: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return 'help';
  if (!values.model) throw new UsageError('--model DIR|FILE.gguf is required');
  if ((values.prompt === undefined) === (values['prompt-ids'] === undefined)) {
    throw new UsageError('give exactly one of --prompt TEXT and --prompt-ids 1,2,3');
  }
  const isInt = (min: number) => (n: number) => Number.isInteger(n) && n >= min;
  const stop = values['stop-ids'];
  return {
    model: values.model,
    prompt: values.prompt,
    promptIds: values['prompt-ids'] === undefined ? undefined : idList(values['prompt-ids'], '--prompt-ids'),
    maxTokens: number(values['max-tokens'], '--max-tokens', 32, isInt(1)),
    temperature: number(values.temperature, '--temperature', 0, (n) => n >= 0),
    topP: number(values['top-p'], '--top-p', 1, (n) => n > 0 && n <= 1),
    topK: number(values['top-k'], '--top-k', 0, isInt(0)),
    seed: number(values.seed, '--seed', 0, isInt(0)),
    stopIds: stop === undefined ? undefined : stop === 'none' ? [] : idList(stop, '--stop-ids'),
    topLogits: number(values['top-logits'], '--top-logits', 0, isInt(0)),
    threads: values.threads === undefined ? undefined : number(values.threads, '--threads', 0, isInt(1)),
    ...(values.config !== undefined ? { config: values.config } : {}),
    warmup: values.warmup ?? false,
    json: values.json ?? false,
  };
}

/** The k largest logits, largest first (ties to the lower id). */
export function topK(logits: Float32Array, k: number): { id: number; logit: number }[] {
  const top: { id: number; logit: number }[] = [];
  for (let id = 0; id < logits.length; id++) {
    const logit = logits[id] ?? -Infinity;
    if (top.length === k && logit <= (top[k - 1]?.logit ?? -Infinity)) continue;
    let at = top.length;
    while (at > 0 && (top[at - 1]?.logit ?? Infinity) < logit) at--;
    top.splice(at, 0, { id, logit });
    if (top.length > k) top.pop();
  }
  return top;
}

/** In-process times: the model load, the prompt (request to first token) and the later tokens. */
export interface GenerateTimings {
  loadMs: number;
  promptTokens: number;
  promptMs: number;
  promptTokensPerS: number;
  decodeTokens: number;
  decodeMs: number;
  /** null when only one token was generated. */
  decodeTokensPerS: number | null;
  /** An untimed generation of the same length ran first (--warmup). */
  warmup: boolean;
}

interface Result {
  /** The engine that ran: backend, CPU kernel path, the weights' dtype as run (as stored, or q8), KV rows. */
  engine: Pick<EngineInfo, 'backend' | 'simd' | 'weightDtype' | 'kvDtype'>;
  promptIds: number[];
  ids: number[];
  text: string | null;
  finish: FinishInfo;
  steps?: { id: number; top: { id: number; logit: number; piece: string | null }[] }[];
  timings: GenerateTimings;
}

function timings(
  loadMs: number,
  promptTokens: number,
  t0: number,
  tFirst: number,
  tEnd: number,
  n: number,
  warmup: boolean,
): GenerateTimings {
  const promptMs = tFirst - t0;
  const decodeMs = n > 1 ? tEnd - tFirst : 0;
  return {
    loadMs,
    promptTokens,
    promptMs,
    promptTokensPerS: (promptTokens * 1000) / promptMs,
    decodeTokens: Math.max(0, n - 1),
    decodeMs,
    decodeTokensPerS: n > 1 ? ((n - 1) * 1000) / decodeMs : null,
    warmup,
  };
}

/** The engine's creation options: its settings from the environment and --config, and --threads. */
function engineSettings(o: Options, processEnv: Env): NativeEngineOptions {
  const env = configEnv(o.config, processEnv);
  const options = engineOptions(loadEngineSettings(env), loadWeightDtype(env.MAYA_WEIGHT_DTYPE));
  return { ...options, ...(o.threads !== undefined ? { numThreads: o.threads } : {}) };
}

async function generate(o: Options, processEnv: Env): Promise<Result> {
  const settings = engineSettings(o, processEnv);
  const model = await readModelDir(o.model);
  const tokenizer = model.hasTokenizer ? await Tokenizer.fromDir(model.dir) : null;
  if (o.prompt !== undefined && !tokenizer)
    throw new UsageError(`${model.dir} has no tokenizer.json: use --prompt-ids`);
  const promptIds = o.promptIds ?? tokenizer?.encode(o.prompt ?? '') ?? [];
  if (promptIds.length === 0) throw new UsageError('the prompt encodes to no tokens');
  const tLoad = performance.now();
  const engine = await NativeEngine.load(model.dir, settings);
  const loadMs = performance.now() - tLoad;
  const { backend, simd, weightDtype, kvDtype } = engine.info;
  const piece = (id: number) => (tokenizer ? tokenizer.decode([id]) : null);
  const ids: number[] = [];
  const steps: NonNullable<Result['steps']> = [];
  const request = (ids: number[], stopIds: number[]) =>
    engine.generate({
      promptIds: ids,
      maxTokens: o.maxTokens,
      temperature: o.temperature,
      topP: o.topP,
      topK: o.topK,
      seed: o.seed,
      stopIds,
      keepLogits: o.topLogits > 0,
    });
  try {
    if (o.warmup) for await (const _ of request([...promptIds.slice(1), promptIds[0]!], [])) void _;
    const t0 = performance.now();
    let tFirst = t0;
    const gen = request(promptIds, o.stopIds ?? model.eosIds);
    for (;;) {
      const r = await gen.next();
      if (r.done) {
        const t = timings(loadMs, promptIds.length, t0, tFirst, performance.now(), ids.length, o.warmup);
        const text = tokenizer ? tokenizer.decode(ids) : null;
        const ran = { backend, simd, weightDtype, kvDtype };
        return {
          engine: ran,
          promptIds,
          ids,
          text,
          finish: r.value,
          ...(o.topLogits > 0 ? { steps } : {}),
          timings: t,
        };
      }
      if (r.value.type !== 'token') continue;
      if (ids.length === 0) tFirst = performance.now();
      ids.push(r.value.id);
      if (r.value.logits)
        steps.push({
          id: r.value.id,
          top: topK(r.value.logits, o.topLogits).map((t) => ({ ...t, piece: piece(t.id) })),
        });
    }
  } finally {
    await engine.close();
  }
}

function printText(r: Result, io: GenerateIo): void {
  io.out(
    `engine: ${r.engine.backend}, ${r.engine.simd} kernels, weights ${r.engine.weightDtype}, KV ${r.engine.kvDtype}\n`,
  );
  r.steps?.forEach((s, i) => {
    const tops = s.top.map(
      (t) => `${t.id}:${t.logit.toFixed(4)}${t.piece === null ? '' : ` ${JSON.stringify(t.piece)}`}`,
    );
    io.out(`step ${i}: ${s.id}  [${tops.join(', ')}]\n`);
  });
  io.out(`prompt ids (${r.promptIds.length}): ${r.promptIds.join(',')}\n`);
  io.out(`ids (${r.ids.length}): ${r.ids.join(',')}\n`);
  if (r.text !== null) io.out(`text: ${JSON.stringify(r.text)}\n`);
  const u = r.finish.usage;
  io.out(`finish: ${r.finish.reason} (input ${u.inputTokens}, cached ${u.cachedTokens}, output ${u.outputTokens})\n`);
  const t = r.timings;
  const decode = t.decodeTokensPerS === null ? 'n/a' : `${t.decodeTokensPerS.toFixed(1)} tokens/s`;
  io.out(
    `timings${t.warmup ? ' (warm)' : ''}: load ${t.loadMs.toFixed(0)} ms; prompt ${t.promptTokens} tokens,` +
      ` ${t.promptTokensPerS.toFixed(1)} tokens/s; decode ${t.decodeTokens} tokens, ${decode}\n`,
  );
}

export async function runGenerate(
  argv: string[],
  io: GenerateIo = defaultIo,
  processEnv: Env = process.env,
): Promise<number> {
  return runCommand(
    'generate',
    USAGE,
    io,
    async () => {
      const options = parseOptions(argv);
      if (options === 'help') {
        io.out(USAGE);
        return 0;
      }
      const result = await generate(options, processEnv);
      if (options.json) io.out(`${JSON.stringify(result)}\n`);
      else printText(result, io);
      return result.finish.reason === 'error' ? 1 : 0;
    },
    (err) => err instanceof EngineError && err.code === 'context_overflow',
  );
}
