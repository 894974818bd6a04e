/**
 * Speculative decoding rows of `npm run bench:engine` (issue 35): the demo model (models/maya-demo,
 * greedy, thinking off) on the workloads a user runs, with speculation off and on, each way of
 * drafting (prompt lookup, MAYA_SPECULATIVE=ngram; the demo model's trained MTP layer, =mtp), at
 * batch 1 and batch 8:
 * - edit: "return this text with X changed to Y" over a text of about 1.5K tokens;
 * - tool: a tool call whose arguments quote the prompt (send_email with the body given in the request);
 * - json: a JSON extraction of fields stated in a paragraph;
 * - chat: free chat (short questions about the model's made-up world);
 * - heldout: the held-out chat cases of the demo model's evaluation (scripts/demo-model/eval-cases.json,
 *   kind chat: phrasings and names never trained on), the set the MTP acceptance target is read on.
 * Decode tokens/s counts the tokens after each sequence's first (prefill excluded), from the moment
 * all of a batch's sequences have their first token; acceptance and tokens per pass come from the
 * engine's counters (ENG_STAT_DRAFT_*, _DECODE_PASSES) over the same runs. Off and on alternate,
 * round by round; each figure is the median of the rounds. Both engines' outputs are compared
 * token for token (they must match: greedy).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import type { EngineStats } from '../engine-cuda/engine.ts';
import type { NativeEngine } from '../engine-cuda/native-engine.ts';

type Load = (dir: string, options: Parameters<typeof NativeEngine.load>[1]) => Promise<NativeEngine>;

const CITIES = ['Avalon', 'Brightwater', 'Cedarholm', 'Duskmoor', 'Elmstead', 'Fernvale', 'Glenhaven', 'Highmere'];

/** A text of about `sentences` sentences about the made-up cities (deterministic). */
function story(sentences: number, salt: number): string {
  const verbs = ['trades wool with', 'sends grain to', 'holds a fair with', 'builds a bridge to', 'writes letters to'];
  const out: string[] = [];
  for (let i = 0; i < sentences; i++) {
    const a = CITIES[(i + salt) % CITIES.length] ?? 'Avalon';
    const b = CITIES[(i * 3 + salt + 1) % CITIES.length] ?? 'Duskmoor';
    out.push(`${a} ${verbs[(i + salt) % verbs.length]} ${b} every ${2 + ((i * 7 + salt) % 9)} days.`);
  }
  return out.join(' ');
}

/** The GLM-4.5 chat prompt (thinking off) the demo model was trained on, optionally with tools. */
function chat(user: string, tools?: object[]): string {
  const system = tools
    ? '<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
      'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
      tools.map((t) => JSON.stringify(t)).join('\n') +
      '\n</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n' +
      '<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n' +
      '<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>'
    : '';
  return `[gMASK]<sop>${system}<|user|>\n${user}/nothink<|assistant|>\n<think></think>\n`;
}

const EMAIL_TOOL = {
  type: 'function',
  function: {
    name: 'send_email',
    description: 'Send an email',
    parameters: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
    },
  },
};

interface Workload {
  name: string;
  maxTokens: number;
  /** The prompt of sequence b of a batch (b differs: no two share all of their blocks). */
  prompt(b: number): string;
}

const WORKLOADS: Workload[] = [
  {
    name: 'edit',
    maxTokens: 384,
    prompt: (b) => {
      const text = story(45, b);
      return chat(`Return this text with ${CITIES[b % 8]} changed to Westport:\n\n${text}`);
    },
  },
  {
    name: 'tool',
    maxTokens: 192,
    prompt: (b) =>
      chat(
        `Send an email to ana${b}@example.com with the subject "Fair dates" and this body: ` + `"${story(8, b + 3)}"`,
        [EMAIL_TOOL],
      ),
  },
  {
    name: 'json',
    maxTokens: 128,
    prompt: (b) =>
      chat(
        `Extract the sender, the city and the date as a JSON object with keys sender, city, date from this note: ` +
          `"Mira Holt wrote from ${CITIES[b % 8]} on 2026-0${1 + (b % 9)}-1${b % 10} that ${story(3, b)}"`,
      ),
  },
  {
    name: 'chat',
    maxTokens: 128,
    prompt: (b) => chat(`Tell me about ${CITIES[b % 8]} and what it is known for.`),
  },
  {
    name: 'heldout',
    maxTokens: 128,
    prompt: (b) => chat(heldOutChat()[b % heldOutChat().length] ?? 'Hello'),
  },
];

let heldOut: string[] | undefined;
/** The held-out chat requests (their input text) of the demo model's evaluation set. */
function heldOutChat(): string[] {
  heldOut ??= (
    JSON.parse(readFileSync(join(import.meta.dirname, '../scripts/demo-model/eval-cases.json'), 'utf8')) as {
      cases: { kind: string; request: { input: string } }[];
    }
  ).cases
    .filter((c) => c.kind === 'chat')
    .map((c) => c.request.input);
  return heldOut;
}

interface Measure {
  rate: number;
  tokens: number[][];
}

/** Decode tokens/s of `prompts` run together (counted after every sequence has its first token). */
async function run(engine: NativeEngine, prompts: number[][], maxTokens: number, stopIds: number[]): Promise<Measure> {
  const firsts: number[] = [];
  let allStarted = Infinity;
  const stamps: number[][] = prompts.map(() => []);
  const tokens: number[][] = prompts.map(() => []);
  await Promise.all(
    prompts.map(async (promptIds, b) => {
      const gen = engine.generate({ promptIds, maxTokens, stopIds });
      for await (const event of gen) {
        if (event.type !== 'token') continue;
        const now = performance.now();
        stamps[b]?.push(now);
        tokens[b]?.push(event.id);
        if (stamps[b]?.length === 1) firsts.push(now);
        if (firsts.length === prompts.length && allStarted === Infinity) allStarted = Math.max(...firsts);
      }
    }),
  );
  const end = Math.max(...stamps.map((t) => t[t.length - 1] ?? 0));
  let counted = 0;
  for (const times of stamps) counted += times.filter((t) => t > allStarted).length;
  return { rate: end > allStarted ? counted / ((end - allStarted) / 1000) : 0, tokens };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

export type SpecMode = 'ngram' | 'mtp';

export interface SpecRow {
  mode: SpecMode;
  workload: string;
  batch: number;
  promptTokens: number;
  outTokens: number;
  off: number;
  on: number;
  acceptance: number;
  tokensPerPass: number;
  identical: boolean;
}

const delta = (a: EngineStats, b: EngineStats) => ({
  drafted: b.draftTokens - a.draftTokens,
  accepted: b.draftAccepted - a.draftAccepted,
  tokens: b.decodeTokens - a.decodeTokens,
  passes: b.decodePasses - a.decodePasses,
});

/** The speculative rows: every mode, workload and batch (1, 8), `runs` alternating rounds of off and on. */
export async function benchSpeculative(
  root: string,
  load: Load,
  runs: number,
  maxDraft?: number,
  modes: SpecMode[] = ['ngram', 'mtp'],
): Promise<SpecRow[]> {
  const rows: SpecRow[] = [];
  for (const mode of modes) rows.push(...(await benchMode(root, load, runs, mode, maxDraft)));
  return rows;
}

async function benchMode(
  root: string,
  load: Load,
  runs: number,
  mode: SpecMode,
  maxDraft?: number,
): Promise<SpecRow[]> {
  const dir = join(root, 'models/maya-demo');
  const tokenizer = await Tokenizer.fromDir(dir);
  const stopIds = ['<|endoftext|>', '<|user|>', '<|observation|>'].map((t) => tokenizer.tokenId(t) ?? -1);
  const off = await load(dir, { speculative: 'off' });
  const on = await load(dir, { speculative: mode, ...(maxDraft ? { specMaxDraft: maxDraft } : {}) });
  const rows: SpecRow[] = [];
  try {
    for (const w of WORKLOADS)
      for (const batch of [1, 8]) {
        const prompts = Array.from({ length: batch }, (_, b) => tokenizer.encode(w.prompt(b)));
        const rOff: number[] = [];
        const rOn: number[] = [];
        let identical = true;
        let drafted = 0;
        let accepted = 0;
        let tokens = 0;
        let passes = 0;
        let outTokens = 0;
        for (let r = 0; r < runs; r++) {
          const a = await run(off, prompts, w.maxTokens, stopIds);
          const before = await on.stats();
          const b = await run(on, prompts, w.maxTokens, stopIds);
          const d = delta(before, await on.stats());
          rOff.push(a.rate);
          rOn.push(b.rate);
          identical &&= JSON.stringify(a.tokens) === JSON.stringify(b.tokens);
          drafted += d.drafted;
          accepted += d.accepted;
          tokens += d.tokens;
          passes += d.passes;
          outTokens = a.tokens.reduce((s, t) => s + t.length, 0) / batch;
        }
        rows.push({
          mode,
          workload: w.name,
          batch,
          promptTokens: Math.round(prompts.reduce((s, p) => s + p.length, 0) / batch),
          outTokens: Math.round(outTokens),
          off: median(rOff),
          on: median(rOn),
          acceptance: drafted > 0 ? accepted / drafted : 0,
          tokensPerPass: passes > 0 ? tokens / passes : 1,
          identical,
        });
        process.stderr.write(`bench: speculative ${mode} ${w.name} batch ${batch} done\n`);
      }
  } finally {
    await off.close();
    await on.close();
  }
  return rows;
}

export function speculativeTable(rows: SpecRow[]): string {
  const head = [
    'drafts',
    'workload',
    'batch',
    'prompt tok',
    'out tok',
    'off tok/s',
    'on tok/s',
    'on/off',
    'accept',
    'tok/pass',
    'same',
  ];
  const lines = rows.map((r) => [
    r.mode,
    r.workload,
    String(r.batch),
    String(r.promptTokens),
    String(r.outTokens),
    r.off.toFixed(0),
    r.on.toFixed(0),
    `${(r.on / r.off).toFixed(2)}x`,
    `${(100 * r.acceptance).toFixed(0)}%`,
    r.tokensPerPass.toFixed(2),
    r.identical ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (l: string[]) => `| ${l.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}
