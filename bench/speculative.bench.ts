/**
 * Speculative decoding rows of `npm run bench:engine` (issue 35): the demo model (models/maya-demo,
 * greedy, thinking off) on the workloads a user runs, with speculation off and on, each way of
 * drafting (prompt lookup, MAYA_SPECULATIVE=ngram; the demo model's trained MTP layer with prompt
 * lookup where it is the better bet, =mtp; auto, which runs the same on this model), at batch 1 and 8:
 * - edit: "return this text with X changed to Y" over a text of about 1.5K tokens;
 * - tool: a tool call whose arguments quote the prompt (send_email with the body given in the request);
 * - json: a JSON extraction of fields stated in a paragraph;
 * - chat: free chat (short questions about the model's made-up world);
 * - heldout: the held-out chat cases of the demo model's evaluation (scripts/demo-model/eval-cases.json,
 *   kind chat: phrasings and names never trained on), the set the MTP acceptance target is read on;
 * - tool (constrained), json_schema (constrained): the tool and json prompts under the server's default
 *   constrained decoding (the GLM output grammar with the tool, or with a json_schema of the three
 *   fields), through the engine worker's matcher and its drafts (constrained-drafts.ts: forced tokens,
 *   remembered choices at narrow grammar states, prompt lookup). Its memory of choices is per grammar
 *   and lasts across rounds, as it does across a server's requests with one schema or tool set.
 * Decode tokens/s counts the tokens after each sequence's first (prefill excluded), from the moment
 * all of a batch's sequences have their first token, in wall time and in the process's CPU time over
 * the same span (steadier on a shared machine); acceptance and tokens per pass come from the engine's
 * counters (ENG_STAT_DRAFT_*, _DECODE_PASSES) over the same runs. Each round runs off, then every mode
 * in turn; tok/s figures are medians of the rounds, on/off the median of each round's ratio, best on/off
 * the fastest on round over the fastest off round. Every mode's outputs are compared token for token
 * with off's (they must match: greedy). Options (bench/engine.bench.ts): --speculative-mode ngram,mtp,auto,
 * --speculative-workloads tool,json_schema,... (a workload's first word), --threads N, --max-draft K.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '../checkpoint/tokenizer.ts';
import type { EngineStats } from '../engine-cuda/engine.ts';
import type { NativeEngine } from '../engine-cuda/native-engine.ts';
import { glmOutputGrammar } from '../dialects/glm-grammar.ts';
import type { Constraint } from '../grammar/constraint.ts';
import type { Grammar } from '../grammar/grammar.ts';

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
  /** Constrained decoding (the server's default for tools and structured output): the output grammar. */
  grammar?: (b: number) => Grammar;
}

const EXTRACT_SCHEMA = {
  type: 'object',
  properties: { sender: { type: 'string' }, city: { type: 'string' }, date: { type: 'string' } },
  required: ['sender', 'city', 'date'],
  additionalProperties: false,
};

const toolPrompt = (b: number) =>
  chat(`Send an email to ana${b}@example.com with the subject "Fair dates" and this body: ` + `"${story(8, b + 3)}"`, [
    EMAIL_TOOL,
  ]);

const jsonPrompt = (b: number) =>
  chat(
    `Extract the sender, the city and the date as a JSON object with keys sender, city, date from this note: ` +
      `"Mira Holt wrote from ${CITIES[b % 8]} on 2026-0${1 + (b % 9)}-1${b % 10} that ${story(3, b)}"`,
  );

const WORKLOADS: Workload[] = [
  {
    name: 'edit',
    maxTokens: 384,
    prompt: (b) => {
      const text = story(45, b);
      return chat(`Return this text with ${CITIES[b % 8]} changed to Westport:\n\n${text}`);
    },
  },
  { name: 'tool', maxTokens: 192, prompt: toolPrompt },
  { name: 'json', maxTokens: 128, prompt: jsonPrompt },
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
  {
    name: 'tool (constrained)',
    maxTokens: 192,
    prompt: toolPrompt,
    grammar: () =>
      glmOutputGrammar({
        parser: {
          tools: [{ name: 'send_email', parameters: EMAIL_TOOL.function.parameters }],
          startInReasoning: false,
        },
      }),
  },
  {
    name: 'json_schema (constrained)',
    maxTokens: 128,
    prompt: jsonPrompt,
    grammar: () =>
      glmOutputGrammar({ parser: { tools: [], startInReasoning: false }, json: { schema: EXTRACT_SCHEMA } }),
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
  /** The same tokens per second of the process's CPU time (all threads) over the same span. */
  cpuRate: number;
  tokens: number[][];
}

/** Decode tokens/s of `prompts` run together (counted after every sequence has its first token). */
async function run(
  engine: NativeEngine,
  prompts: number[][],
  maxTokens: number,
  stopIds: number[],
  constraints: (Constraint | undefined)[],
): Promise<Measure> {
  const firsts: number[] = [];
  let allStarted = Infinity;
  let cpu0 = process.cpuUsage();
  const stamps: number[][] = prompts.map(() => []);
  const tokens: number[][] = prompts.map(() => []);
  await Promise.all(
    prompts.map(async (promptIds, b) => {
      const constraint = constraints[b];
      const gen = engine.generate({ promptIds, maxTokens, stopIds, ...(constraint ? { constraint } : {}) });
      for await (const event of gen) {
        if (event.type !== 'token') continue;
        const now = performance.now();
        stamps[b]?.push(now);
        tokens[b]?.push(event.id);
        if (stamps[b]?.length === 1) firsts.push(now);
        if (firsts.length === prompts.length && allStarted === Infinity) {
          allStarted = Math.max(...firsts);
          cpu0 = process.cpuUsage();
        }
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const end = Math.max(...stamps.map((t) => t[t.length - 1] ?? 0));
  let counted = 0;
  for (const times of stamps) counted += times.filter((t) => t > allStarted).length;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    rate: end > allStarted ? counted / ((end - allStarted) / 1000) : 0,
    cpuRate: cpuSeconds > 0 ? counted / cpuSeconds : 0,
    tokens,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

export type SpecMode = 'ngram' | 'mtp' | 'auto';

export interface SpecRow {
  mode: SpecMode;
  workload: string;
  batch: number;
  promptTokens: number;
  outTokens: number;
  off: number;
  on: number;
  /** The median over rounds of on / off of the same round (slow drifts of the machine's load cancel). */
  ratio: number;
  /** The same for tokens per second of CPU time: steadier than wall time on a shared machine. */
  cpuRatio: number;
  /** The fastest round's on over the fastest round's off (wall time): a busy machine only slows a run down. */
  bestRatio: number;
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

/**
 * The speculative rows: every workload, batch (1, 8) and mode, in `runs` rounds; a round runs off,
 * then each mode in turn, so that every mode's ratio is to the off runs of the same rounds.
 */
export async function benchSpeculative(
  root: string,
  load: Load,
  runs: number,
  options: { maxDraft?: number; modes?: SpecMode[]; workloads?: string[]; threads?: number } = {},
): Promise<SpecRow[]> {
  const { maxDraft, modes = ['ngram', 'mtp', 'auto'], workloads, threads } = options;
  const common = threads ? { numThreads: threads } : {};
  const dir = join(root, 'models/maya-demo');
  const tokenizer = await Tokenizer.fromDir(dir);
  const stopIds = ['<|endoftext|>', '<|user|>', '<|observation|>'].map((t) => tokenizer.tokenId(t) ?? -1);
  const vocabulary = tokenizer.vocabularyBytes();
  const engines: NativeEngine[] = [];
  const rows: SpecRow[] = [];
  try {
    const off = await load(dir, { ...common, speculative: 'off' });
    engines.push(off);
    const on: NativeEngine[] = [];
    for (const mode of modes) {
      on.push(await load(dir, { ...common, speculative: mode, ...(maxDraft ? { specMaxDraft: maxDraft } : {}) }));
      engines.push(on[on.length - 1]!);
    }
    for (const e of engines) e.setVocabulary(vocabulary);
    for (const w of WORKLOADS.filter((x) => !workloads || workloads.includes(x.name.split(' ')[0]!)))
      for (const batch of [1, 8]) {
        const prompts = Array.from({ length: batch }, (_, b) => tokenizer.encode(w.prompt(b)));
        const constraints = prompts.map((_, b) => (w.grammar ? { grammar: w.grammar(b), stopIds } : undefined));
        const rOff: number[] = [];
        const rOn: number[][] = modes.map(() => []);
        const cOff: number[] = [];
        const cOn: number[][] = modes.map(() => []);
        const identical = modes.map(() => true);
        const sums = modes.map(() => ({ drafted: 0, accepted: 0, tokens: 0, passes: 0 }));
        let outTokens = 0;
        for (let r = 0; r < runs; r++) {
          const a = await run(off, prompts, w.maxTokens, stopIds, constraints);
          rOff.push(a.rate);
          cOff.push(a.cpuRate);
          outTokens = a.tokens.reduce((s, t) => s + t.length, 0) / batch;
          for (let m = 0; m < modes.length; m++) {
            const engine = on[m]!;
            const before = await engine.stats();
            const b = await run(engine, prompts, w.maxTokens, stopIds, constraints);
            const d = delta(before, await engine.stats());
            rOn[m]!.push(b.rate);
            cOn[m]!.push(b.cpuRate);
            identical[m] = identical[m]! && JSON.stringify(a.tokens) === JSON.stringify(b.tokens);
            const sum = sums[m]!;
            sum.drafted += d.drafted;
            sum.accepted += d.accepted;
            sum.tokens += d.tokens;
            sum.passes += d.passes;
          }
        }
        modes.forEach((mode, m) => {
          const sum = sums[m]!;
          rows.push({
            mode,
            workload: w.name,
            batch,
            promptTokens: Math.round(prompts.reduce((s, p) => s + p.length, 0) / batch),
            outTokens: Math.round(outTokens),
            off: median(rOff),
            on: median(rOn[m]!),
            ratio: median(rOn[m]!.map((x, r) => x / rOff[r]!)),
            cpuRatio: median(cOn[m]!.map((x, r) => x / cOff[r]!)),
            bestRatio: Math.max(...rOn[m]!) / Math.max(...rOff),
            acceptance: sum.drafted > 0 ? sum.accepted / sum.drafted : 0,
            tokensPerPass: sum.passes > 0 ? sum.tokens / sum.passes : 1,
            identical: identical[m]!,
          });
        });
        const costs = await Promise.all(on.map(async (e) => (await e.stats()).tokenCost.toFixed(2)));
        process.stderr.write(
          `bench: speculative ${w.name} batch ${batch} done (turn-down token cost ${costs.join(', ')})\n`,
        );
      }
  } finally {
    for (const e of engines) await e.close();
  }
  rows.sort((a, b) => modes.indexOf(a.mode) - modes.indexOf(b.mode));
  return rows;
}

/** The MTP layer's acceptance over a set of requests (engine counters summed over them). */
export interface MtpAcceptance {
  cases: number;
  outTokens: number;
  /** Passes that verified an MTP draft, and those whose first drafted token was accepted. */
  drafts: number;
  firstAccepted: number;
  /** Tokens the MTP layer drafted (chained ones included) and those accepted. */
  draftTokens: number;
  draftAccepted: number;
  /** Every draft's tokens (prompt lookup's included) and those accepted. */
  allDrafted: number;
  allAccepted: number;
  tokensPerPass: number;
}

/**
 * The MTP layer's acceptance on every held-out chat case of the demo model's evaluation, each run
 * alone (batch 1, greedy, up to 128 tokens) with MAYA_SPECULATIVE=mtp: the set the issue's
 * acceptance target is read on. (The heldout rows above run case 0 alone and cases 0-7 together.)
 */
export async function mtpHeldOutAcceptance(
  root: string,
  load: Load,
  options: { maxDraft?: number; threads?: number } = {},
): Promise<MtpAcceptance> {
  const dir = join(root, 'models/maya-demo');
  const tokenizer = await Tokenizer.fromDir(dir);
  const stopIds = ['<|endoftext|>', '<|user|>', '<|observation|>'].map((t) => tokenizer.tokenId(t) ?? -1);
  const engine = await load(dir, {
    ...(options.threads ? { numThreads: options.threads } : {}),
    speculative: 'mtp',
    ...(options.maxDraft ? { specMaxDraft: options.maxDraft } : {}),
  });
  try {
    const before = await engine.stats();
    let outTokens = 0;
    const cases = heldOutChat();
    for (const input of cases) {
      const m = await run(engine, [tokenizer.encode(chat(input))], 128, stopIds, [undefined]);
      outTokens += m.tokens[0]?.length ?? 0;
    }
    const after = await engine.stats();
    const d = delta(before, after);
    return {
      cases: cases.length,
      outTokens,
      drafts: after.mtpDrafts - before.mtpDrafts,
      firstAccepted: after.mtpFirstAccepted - before.mtpFirstAccepted,
      draftTokens: after.mtpDraftTokens - before.mtpDraftTokens,
      draftAccepted: after.mtpDraftAccepted - before.mtpDraftAccepted,
      allDrafted: d.drafted,
      allAccepted: d.accepted,
      tokensPerPass: d.passes > 0 ? d.tokens / d.passes : 1,
    };
  } finally {
    await engine.close();
  }
}

/** One line on an MtpAcceptance. */
export function mtpAcceptanceLine(a: MtpAcceptance): string {
  const pct = (x: number, n: number) => `${n > 0 ? ((100 * x) / n).toFixed(1) : '-'}% (${x} / ${n})`;
  return (
    `MTP acceptance on the ${a.cases} held-out chat cases (each alone, batch 1, MAYA_SPECULATIVE=mtp, ${a.outTokens} ` +
    `tokens): first drafted tokens accepted ${pct(a.firstAccepted, a.drafts)}; the MTP layer's drafted tokens ` +
    `(chained included) ${pct(a.draftAccepted, a.draftTokens)}; every draft (prompt lookup's included) ` +
    `${pct(a.allAccepted, a.allDrafted)}; ${a.tokensPerPass.toFixed(2)} tokens per pass.`
  );
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
    'cpu on/off',
    'best on/off',
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
    `${r.ratio.toFixed(2)}x`,
    `${r.cpuRatio.toFixed(2)}x`,
    `${r.bestRatio.toFixed(2)}x`,
    `${(100 * r.acceptance).toFixed(0)}%`,
    r.tokensPerPass.toFixed(2),
    r.identical ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (l: string[]) => `| ${l.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}
