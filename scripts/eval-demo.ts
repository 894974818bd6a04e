/**
 * `npm run eval:demo`: scores the embedded demo model (models/maya-demo) through Maya itself: the
 * service is started in-process on a loopback port (cli/serve.ts startService, the native engine,
 * the GLM dialect) and every held-out case (scripts/demo-model/eval-cases.json, made by
 * make_eval_cases.py from the held-out side of scripts/demo-model/pools.py: tool, parameter and
 * field names and request phrasings that training never saw) goes through POST /v1/responses with
 * the official openai SDK, greedy (temperature 0). Prints a markdown table of rates and writes the
 * per-case results as JSON.
 *
 * Constrained decoding follows the server's own setting: MAYA_CONSTRAINED_DECODING=0 or 1 (default
 * 1, as for `npm start`), so `MAYA_CONSTRAINED_DECODING=0 npm run eval:demo` scores the model alone.
 *
 * Usage: npm run eval:demo -- [--model DIR] [--cases FILE] [--limit N] [--kinds tool,json] [--out FILE]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { startService } from '../cli/serve.ts';
import { ENGINE_SETTING_NAMES } from '../config/engine-settings.ts';
import { loadResponsesSettings, loadServerSettings } from '../config/settings.ts';
import { silentLogger } from '../handlers/app-deps.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const LOADER = 'runtime/load-model-runtime.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface EvalCase {
  id: string;
  kind: 'tool' | 'json' | 'memory' | 'tool_result' | 'chat' | 'reasoning' | 'edit';
  thinking: boolean;
  request: Record<string, unknown>;
  turns?: string[];
  expect: {
    calls?: { name: string; arguments: Record<string, Json> }[];
    value?: Json;
    values?: string[];
    answer?: string;
    /** edit: the value the text had, and the one the request puts in its place. */
    old?: string;
    new?: string;
  };
}

interface CaseResult {
  id: string;
  kind: EvalCase['kind'];
  thinking: boolean;
  /** The behaviour's target metric passed. */
  pass: boolean;
  /** Output well-formed (parseable call / JSON, completed response). */
  wellFormed: boolean;
  /** Thinking on: a reasoning item with text came first and no think markup leaked. */
  reasoningOk?: boolean;
  /** json: every value equals the one the prompt gave; tool: the right tool with the right argument values. */
  exact?: boolean;
  /** edit: the new value is in the answer and the old one is not (the text itself may still differ). */
  changed?: boolean;
  status: string;
  output: unknown;
  error?: string;
}

type ResponseOutput = OpenAI.Responses.Response['output'];

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

function outputText(output: ResponseOutput): string {
  return output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
}

/** Thinking on: reasoning text first, then an answer; no `<think>` markup in any text. */
function reasoningWellFormed(output: ResponseOutput): boolean {
  const first = output[0];
  if (!first || first.type !== 'reasoning') return false;
  const text = (first.content ?? []).map((c) => c.text).join('');
  if (text.trim() === '' || /<\/?think>/.test(text)) return false;
  const rest = output.slice(1);
  if (rest.length === 0) return false;
  return (
    !/<\/?think>/.test(outputText(rest)) &&
    rest.every((item) => item.type === 'message' || item.type === 'function_call')
  );
}

type CreateParams = OpenAI.Responses.ResponseCreateParamsNonStreaming;
type Create = (params: CreateParams) => Promise<OpenAI.Responses.Response>;

async function runCase(create: Create, model: string, c: EvalCase, ajv: Ajv2020): Promise<CaseResult> {
  const base = { model, temperature: 0, max_output_tokens: 300, store: false } as const;
  const result: CaseResult = {
    id: c.id,
    kind: c.kind,
    thinking: c.thinking,
    pass: false,
    wellFormed: false,
    status: '',
    output: null,
  };
  try {
    let response: OpenAI.Responses.Response;
    if (c.kind === 'memory') {
      const history: OpenAI.Responses.ResponseInputItem[] = [];
      let last: OpenAI.Responses.Response | undefined;
      for (const turn of c.turns ?? []) {
        history.push({ role: 'user', content: turn });
        last = await create({ ...base, ...c.request, input: history } as CreateParams);
        history.push(...(last.output as OpenAI.Responses.ResponseInputItem[]));
      }
      response = last!;
    } else {
      response = await create({ ...base, ...c.request } as CreateParams);
    }
    result.status = response.status ?? '';
    result.output = response.output;
    if (response.error) result.error = `${response.error.code}: ${response.error.message}`;
    else if (response.incomplete_details) result.error = `incomplete: ${response.incomplete_details.reason}`;
    const completed = response.status === 'completed';
    if (c.thinking) result.reasoningOk = completed && reasoningWellFormed(response.output);
    const text = outputText(response.output);
    if (c.kind === 'tool') {
      const calls = response.output.filter((item) => item.type === 'function_call');
      const parsed = calls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) as unknown }));
      result.wellFormed =
        completed && calls.length > 0 && parsed.every((p) => p.arguments !== null && typeof p.arguments === 'object');
      const match = (same: (w: { name: string; arguments: Record<string, Json> }, p: Parsed) => boolean) => {
        const want = [...(c.expect.calls ?? [])];
        return (
          result.wellFormed &&
          parsed.length === want.length &&
          parsed.every((p) => {
            const i = want.findIndex((w) => w.name === p.name && same(w, p));
            return i >= 0 && want.splice(i, 1).length === 1;
          })
        );
      };
      // pass: the right tool with exactly the argument names the request gives (all declared ones);
      // exact: and every value right.
      result.pass = match((w, p) => sameKeys(w.arguments, p.arguments));
      result.exact = result.pass && match((w, p) => deepEqual(w.arguments, p.arguments));
    } else if (c.kind === 'json') {
      const format = (c.request.text as { format: { schema: object } }).format;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = undefined;
      }
      result.wellFormed = completed && value !== undefined;
      result.pass = result.wellFormed && ajv.validate(format.schema, value) === true;
      result.exact = result.pass && deepEqual(value, c.expect.value);
    } else if (c.kind === 'memory') {
      result.wellFormed = completed;
      result.pass = completed && containsValue(text, String(c.expect.value));
    } else if (c.kind === 'tool_result') {
      const calls = response.output.filter((item) => item.type === 'function_call');
      result.wellFormed = completed && calls.length === 0 && text.trim() !== '';
      result.pass = result.wellFormed && (c.expect.values ?? []).every((v) => containsValue(text, v));
    } else if (c.kind === 'edit') {
      // The text given back with exactly the one change asked for (whitespace at the ends aside).
      result.wellFormed = completed && text.trim() !== '';
      result.pass = result.wellFormed && text.trim() === (c.expect.answer ?? '').trim();
      result.changed = result.wellFormed && text.includes(c.expect.new ?? '') && !text.includes(c.expect.old ?? '');
    } else if (c.kind === 'chat') {
      // No tools declared: a completed text answer, never a call (nor an undeclared_tool failure).
      const calls = response.output.filter((item) => item.type === 'function_call');
      result.wellFormed = completed && text.trim() !== '';
      result.pass = result.wellFormed && calls.length === 0;
    } else {
      result.wellFormed = completed && text.trim() !== '';
      result.pass = result.reasoningOk === true;
    }
  } catch (err) {
    result.error = (err as Error).message;
  }
  return result;
}

type Parsed = { name: string; arguments: unknown };

function sameKeys(want: Record<string, Json>, got: unknown): boolean {
  if (!got || typeof got !== 'object' || Array.isArray(got)) return false;
  const a = Object.keys(want).sort();
  const b = Object.keys(got).sort();
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

/** The value as a whole word or number in the text (not inside a longer one). */
function containsValue(text: string, want: string): boolean {
  return new RegExp(`(^|[^\\w.])${want.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\w.]|\\.(?!\\d))`).test(text);
}

function rate(rows: CaseResult[], pick: (r: CaseResult) => boolean | undefined): string {
  const considered = rows.filter((r) => pick(r) !== undefined);
  if (considered.length === 0) return 'n/a';
  const ok = considered.filter((r) => pick(r) === true).length;
  return `${((100 * ok) / considered.length).toFixed(1)}% (${ok}/${considered.length})`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      model: { type: 'string', default: `${ROOT}models/maya-demo` },
      cases: { type: 'string', default: `${ROOT}scripts/demo-model/eval-cases.json` },
      limit: { type: 'string' },
      kinds: { type: 'string' },
      out: { type: 'string', default: `${ROOT}scripts/demo-model/eval-results.json` },
    },
  });
  const all = (JSON.parse(readFileSync(values.cases, 'utf8')) as { cases: EvalCase[] }).cases;
  const kinds = values.kinds?.split(',');
  const limit = values.limit ? Number(values.limit) : Infinity;
  const counts = new Map<string, number>();
  const cases = all.filter((c) => {
    if (kinds && !kinds.includes(c.kind)) return false;
    const n = counts.get(c.kind) ?? 0;
    counts.set(c.kind, n + 1);
    return n < limit;
  });

  const settings = loadResponsesSettings({});
  // The decoding and engine settings of this process's environment reach the server as `maya serve`'s would.
  const decodingEnv = Object.fromEntries(
    [
      'MAYA_CONSTRAINED_DECODING',
      'MAYA_GRAMMAR_MAX_STRING',
      'MAYA_GRAMMAR_MAX_ITEMS',
      'MAYA_WEIGHT_DTYPE',
      ...ENGINE_SETTING_NAMES,
    ]
      .filter((k) => process.env[k] !== undefined)
      .map((k) => [k, process.env[k]]),
  );
  const server = loadServerSettings({
    ...decodingEnv,
    MAYA_HOST: '127.0.0.1',
    MAYA_PORT: '0',
    MAYA_LOG_LEVEL: 'silent',
  });
  const constrained = server.decoding?.constrained === true;
  const service = await startService({
    settings,
    server,
    modelDir: values.model,
    loadRuntime: loadModelRuntime,
    logger: silentLogger,
  });
  const started = Date.now();
  let runtime: ModelRuntime;
  try {
    runtime = await service.loaded;
  } catch (err) {
    process.stderr.write(`eval:demo: cannot load ${values.model}: ${(err as Error).message}\n`);
    await service.stop();
    return 1;
  }
  const client = new OpenAI({ baseURL: `${service.origin}/v1`, apiKey: 'eval-demo', maxRetries: 0, timeout: 600_000 });
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const create: Create = (params) => client.responses.create(params);
  const results: CaseResult[] = [];
  const t0 = Date.now();
  try {
    for (const c of cases) {
      const r = await runCase(create, runtime.id, c, ajv);
      results.push(r);
      process.stderr.write(`${r.pass ? '.' : 'x'}`);
    }
  } finally {
    await service.stop();
  }
  process.stderr.write('\n');

  const of = (kind: string) => results.filter((r) => r.kind === kind);
  const thinkingRows = results.filter((r) => r.thinking);
  const table = [
    `| behaviour (held-out, greedy${constrained ? ', constrained decoding' : ''}) | metric | rate | target |`,
    '| --- | --- | --- | --- |',
    `| tool calls (1-4 tools, tool_choice auto) | right tool, exactly the request's argument names | ${rate(of('tool'), (r) => r.pass)} | ≥ 85% |`,
    `| tool calls | argument values right too | ${rate(of('tool'), (r) => r.exact === true)} | ≥ 80% |`,
    `| tool calls | well-formed call | ${rate(of('tool'), (r) => r.wellFormed)} | |`,
    `| JSON (json_schema, strict) | valid against the schema | ${rate(of('json'), (r) => r.pass)} | ≥ 95% (≥ 99% constrained) |`,
    `| JSON | values equal to the prompt's | ${rate(of('json'), (r) => r.exact === true)} | ≥ 80% |`,
    `| memory (2-4 turns, full history) | answer contains the value | ${rate(of('memory'), (r) => r.pass)} | ≥ 90% |`,
    `| answer after a tool result | answer contains the result's values | ${rate(of('tool_result'), (r) => r.pass)} | ≥ 95% |`,
    `| plain chat, no tools declared | text answer, no call, no undeclared_tool | ${rate(of('chat'), (r) => r.pass)} | 100% |`,
    `| edit (return a text of ~150-1400 tokens with one value changed) | exactly the changed text | ${rate(of('edit'), (r) => r.pass)} | |`,
    `| edit | the new value in, the old one out | ${rate(of('edit'), (r) => r.changed)} | |`,
    `| reasoning (plain prompts) | reasoning item, then answer | ${rate(of('reasoning'), (r) => r.pass)} | ≥ 95% |`,
    `| reasoning (every thinking-on case) | reasoning item, then answer | ${rate(thinkingRows, (r) => r.reasoningOk)} | ≥ 95% |`,
  ]
    .filter((row) => !row.includes('| n/a |'))
    .join('\n');
  const path = `POST /v1/responses over loopback (openai SDK); constrained decoding ${constrained ? 'on' : 'off'}`;
  const summary =
    `model ${values.model}\nrequests: ${path}\nloader ${LOADER}; loaded in ${((t0 - started) / 1000).toFixed(1)} s; ` +
    `${results.length} cases in ${((Date.now() - t0) / 1000).toFixed(0)} s\n\n${table}\n`;
  process.stdout.write(summary);
  const failures = results.filter((r) => !r.pass).slice(0, 12);
  for (const f of failures)
    process.stdout.write(
      `\nFAIL ${f.id} (${f.status}${f.error ? `: ${f.error}` : ''}): ${JSON.stringify(f.output).slice(0, 400)}`,
    );
  process.stdout.write('\n');
  writeFileSync(
    values.out,
    `${JSON.stringify({ summary: table, loader: LOADER, requests: path, results }, null, 1)}\n`,
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`eval:demo: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
