/**
 * Speculative decoding through NativeEngine (worker thread, FFI, event routing): the same greedy
 * tokens with prompt lookup on (MAYA_SPECULATIVE=ngram) as off, on the demo model (dense GLM-4) and
 * the MoE, MLA and FP8 golden fixtures, alone and eight at a time, with and without a constraint in
 * the batch; prompt lookup drafts and has drafts accepted on a prompt that asks for a quote; the
 * counters add up (tokens = passes + accepted drafts); the same on f16 and q8_0 KV caches
 * (MAYA_KV_DTYPE: drafts' rows written, then kept or dropped, in those formats); a constrained
 * sequence drafts through the worker (constrained-drafts.ts: its matcher advances over the draft, each
 * position goes with its mask), and a constrained tool call drafts the tokens its grammar forces with
 * the quoted arguments (fewer passes than prompt lookup alone would take for the same tokens); MTP drafts (mtp, and auto on a checkpoint with an MTP layer) keep the
 * tokens too, and mtp is refused where there is no layer. The C tests (engine-cuda/test/test_speculative.cpp,
 * test_mtp.cpp, test_drafter.cpp) force drafts that are partly wrong at every position and check the MTP layer against the
 * PyTorch reference.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import type { EngineStats } from '../../engine-cuda/engine.ts';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { lookupDraft } from '../../engine-cuda/constrained-drafts.ts';
import type { Constraint } from '../../grammar/constraint.ts';
import { glmOutputGrammar } from '../../dialects/glm-grammar.ts';
import { alt, text } from '../../grammar/grammar.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

const ROOT = join(import.meta.dirname, '../..');
const DEMO = join(ROOT, 'models/maya-demo');
const FIXTURES = ['glm45-moe-bf16', 'deepseek3-bf16', 'deepseek3-fp8'];

let tokenizer: Tokenizer;
let off: NativeEngine;
let on: NativeEngine;

beforeAll(async () => {
  tokenizer = await Tokenizer.fromDir(DEMO);
  off = await NativeEngine.load(DEMO, { ...TEST_ENGINE, speculative: 'off' });
  on = await NativeEngine.load(DEMO, { ...TEST_ENGINE, speculative: 'ngram', specMaxDraft: 6 });
  for (const e of [off, on]) e.setVocabulary(tokenizer.vocabularyBytes());
}, 60_000);
afterAll(async () => {
  await off?.close();
  await on?.close();
});

function chat(user: string): number[] {
  return tokenizer.encode(`[gMASK]<sop><|user|>\n${user}/nothink<|assistant|>\n<think></think>\n`);
}

async function generate(
  engine: NativeEngine,
  promptIds: number[],
  maxTokens: number,
  constraint?: Constraint,
): Promise<number[]> {
  // The constraint's stop tokens too, as the server passes them (a tool call ends at <|observation|>).
  const stopIds = [
    ...new Set([
      ...['<|user|>', '<|endoftext|>'].map((t) => tokenizer.tokenId(t) ?? -1).filter((id) => id >= 0),
      ...(constraint?.stopIds ?? []),
    ]),
  ];
  const out: number[] = [];
  const gen = engine.generate({ promptIds, maxTokens, stopIds, ...(constraint ? { constraint } : {}) });
  for await (const event of gen) if (event.type === 'token') out.push(event.id);
  return out;
}

/**
 * The decode passes prompt lookup alone (lookupDraft, max tokens a draft, every draft kept as far as it
 * matches `out`, no turn-down) would take to produce `out` after the prefill's first token.
 */
function lookupOnlyPasses(prompt: readonly number[], out: readonly number[], max: number): number {
  let passes = 0;
  for (let i = 1; i < out.length; passes++) {
    const draft = lookupDraft([...prompt, ...out.slice(0, i)], max);
    let k = 0;
    while (k < draft.length && i + k < out.length && draft[k] === out[i + k]) k++;
    i += k + 1;
  }
  return passes;
}

const diff = (a: EngineStats, b: EngineStats) => ({
  drafted: b.draftTokens - a.draftTokens,
  accepted: b.draftAccepted - a.draftAccepted,
  tokens: b.decodeTokens - a.decodeTokens,
  passes: b.decodePasses - a.decodePasses,
});

const QUOTE =
  'Repeat this sentence exactly: "Avalon trades wool with Brightwater every 4 days, and Brightwater sends grain to ' +
  'Avalon every 6 days." Then repeat it once more.';
const PROMPTS = [
  QUOTE,
  'Hello',
  'What is the weather in Duskmoor?',
  'Write a JSON object with a name and a city.',
  'Tell me about Fernvale.',
  'Remember the value 73',
  'Return this text with Avalon changed to Westport: Avalon is a city by the sea. Avalon trades wool.',
  'List three cities.',
];

describe('speculative decoding through NativeEngine', () => {
  it('reports its mode and draft length', () => {
    expect(on.info.speculative).toBe('ngram');
    expect(on.info.specMaxDraft).toBe(6);
    expect(off.info.speculative).toBe('off');
    expect(off.info.specMaxDraft).toBe(0);
  });

  it('gives the demo model the same greedy tokens alone, with drafts accepted on a quote', async () => {
    const before = await on.stats();
    for (const p of PROMPTS) expect(await generate(on, chat(p), 96)).toEqual(await generate(off, chat(p), 96));
    const d = diff(before, await on.stats());
    expect(d.drafted).toBeGreaterThan(0);
    expect(d.accepted).toBeGreaterThan(0);
    expect(d.tokens).toBe(d.passes + d.accepted); // each pass: its accepted drafts + one token of its own
  }, 120_000);

  it('gives the same tokens eight at a time, a constrained sequence among them', async () => {
    const constraint: Constraint = {
      grammar: { rules: {}, root: alt(text('Avalon is a city.'), text('Duskmoor is a town.')) },
      stopIds: [tokenizer.tokenId('<|user|>') ?? -1],
    };
    const run = (e: NativeEngine) =>
      Promise.all(PROMPTS.map((p, i) => generate(e, chat(p), 96, i === 2 ? constraint : undefined)));
    const [a, b] = [await run(off), await run(on)];
    expect(b).toEqual(a);
    const constrained = tokenizer.decode(a[2] ?? []);
    expect(['Avalon is a city.', 'Duskmoor is a town.'].some((t) => constrained.startsWith(t))).toBe(true);
  }, 120_000);

  it('drafts for a constrained sequence through its matcher: the same text, inside the grammar', async () => {
    const sentence =
      'Avalon trades wool with Brightwater every 4 days, and Brightwater sends grain to Avalon every 6 days.';
    const constraint: Constraint = {
      grammar: { rules: {}, root: text(sentence) },
      stopIds: [tokenizer.tokenId('<|user|>') ?? -1],
    };
    const before = await on.stats();
    const ids = await generate(on, chat(QUOTE), 64, constraint);
    const d = diff(before, await on.stats());
    expect(ids).toEqual(await generate(off, chat(QUOTE), 64, constraint));
    expect(tokenizer.decode(ids).startsWith(sentence)).toBe(true);
    expect(d.drafted).toBeGreaterThan(0); // the worker's drafts, with the mask after each token
    expect(d.accepted).toBeGreaterThan(0);
  }, 60_000);

  it('drafts a tool call through the output grammar: forced markers, the arguments quoted, the same tokens', async () => {
    // The server's constrained tool call (glm-grammar.ts): markers the grammar forces (</arg_key>,
    // <arg_value>...) are drafted whatever the turn-down says, the body by prompt lookup.
    const tool = {
      name: 'send_email',
      parameters: {
        type: 'object',
        properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
        required: ['to', 'subject', 'body'],
      },
    };
    const system =
      '<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
      `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${JSON.stringify({ type: 'function', function: tool })}\n</tools>\n\n` +
      'For each function call, output the function name and arguments within the following XML format:\n' +
      '<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n...\n</tool_call>';
    const user =
      'Send an email to ana@example.com with the subject "Fair dates" and this body: "Avalon trades wool with ' +
      'Brightwater every 4 days. Cedarholm sends grain to Elmstead every 9 days."';
    const ids = tokenizer.encode(`[gMASK]<sop>${system}<|user|>\n${user}/nothink<|assistant|>\n<think></think>\n`);
    const stopIds = ['<|user|>', '<|endoftext|>', '<|observation|>'].map((t) => tokenizer.tokenId(t) ?? -1);
    const constraint: Constraint = {
      grammar: glmOutputGrammar({ parser: { tools: [tool], startInReasoning: false } }),
      stopIds,
    };
    const before = await on.stats();
    const drafted = await generate(on, ids, 96, constraint);
    const d = diff(before, await on.stats());
    expect(drafted).toEqual(await generate(off, ids, 96, constraint));
    expect(tokenizer.decode(drafted)).toContain('<arg_key>body</arg_key>');
    expect(d.accepted).toBeGreaterThan(20);
    // Fewer passes than prompt lookup alone would take for the same tokens (the forced markers and
    // remembered choices are drafted too), whatever the model answers.
    const alone = lookupOnlyPasses(ids, drafted, 6);
    expect(d.passes).toBeLessThan(alone);
  }, 60_000);

  it.each(FIXTURES)(
    'gives %s (MoE / MLA / FP8) the same greedy tokens, alone and batched',
    async (name) => {
      const dir = join(ROOT, 'test/fixtures/engine', name);
      const a = await NativeEngine.load(dir, { ...TEST_ENGINE, speculative: 'off' });
      const b = await NativeEngine.load(dir, { ...TEST_ENGINE, speculative: 'ngram' });
      try {
        const v = a.info.numVocab;
        // Prompts that repeat themselves, so prompt lookup finds something to draft.
        const prompts = [0, 1, 2, 3].map((s) =>
          Array.from({ length: 48 }, (_, i) => ((i % (5 + s)) * 13 + s * 7 + 1) % v),
        );
        const gen = (e: NativeEngine, p: number[]) => collect(e, p);
        for (const p of prompts) expect(await gen(b, p)).toEqual(await gen(a, p));
        const before = await b.stats();
        expect(await Promise.all(prompts.map((p) => gen(b, p)))).toEqual(
          await Promise.all(prompts.map((p) => gen(a, p))),
        );
        expect(diff(before, await b.stats()).drafted).toBeGreaterThan(0);
      } finally {
        await a.close();
        await b.close();
      }
    },
    120_000,
  );

  it.each(['f16', 'q8_0'] as const)(
    'gives the demo model the same greedy tokens on a %s KV cache, drafts accepted, alone and batched',
    async (kvDtype) => {
      const a = await NativeEngine.load(DEMO, { ...TEST_ENGINE, speculative: 'off', kvDtype });
      const b = await NativeEngine.load(DEMO, { ...TEST_ENGINE, speculative: 'ngram', specMaxDraft: 6, kvDtype });
      try {
        expect([a.info.kvDtype, b.info.kvDtype]).toEqual([kvDtype, kvDtype]);
        const prompts = [QUOTE, PROMPTS[1]!, PROMPTS[6]!].map(chat);
        const before = await b.stats();
        for (const p of prompts) expect(await generate(b, p, 64)).toEqual(await generate(a, p, 64));
        expect(await Promise.all(prompts.map((p) => generate(b, p, 64)))).toEqual(
          await Promise.all(prompts.map((p) => generate(a, p, 64))),
        );
        const d = diff(before, await b.stats());
        expect(d.drafted).toBeGreaterThan(0);
        expect(d.accepted).toBeGreaterThan(0);
        expect(d.tokens).toBe(d.passes + d.accepted);
      } finally {
        await a.close();
        await b.close();
      }
    },
    120_000,
  );

  it.each(['glm45-moe-mtp-bf16', 'deepseek3-mtp-bf16'])(
    'drafts with the MTP layer of %s (auto and mtp): the same greedy tokens, alone and batched',
    async (name) => {
      const dir = join(ROOT, 'test/fixtures/engine', name);
      const a = await NativeEngine.load(dir, { ...TEST_ENGINE, speculative: 'off' });
      const b = await NativeEngine.load(dir, { ...TEST_ENGINE, speculative: 'mtp', specMaxDraft: 4 });
      const c = await NativeEngine.load(dir, { ...TEST_ENGINE });
      try {
        expect(b.info.speculative).toBe('mtp');
        expect(c.info.speculative).toBe('mtp'); // auto: the checkpoint has an MTP layer
        const v = a.info.numVocab;
        const prompts = [0, 1, 2].map((s) => Array.from({ length: 20 + 9 * s }, (_, i) => (i * 37 + s * 11 + 3) % v));
        for (const p of prompts) expect(await collect(b, p)).toEqual(await collect(a, p));
        const before = await b.stats();
        expect(await Promise.all(prompts.map((p) => collect(b, p)))).toEqual(
          await Promise.all(prompts.map((p) => collect(a, p))),
        );
        const d = diff(before, await b.stats());
        expect(d.drafted).toBeGreaterThan(0);
        expect(d.tokens).toBe(d.passes + d.accepted);
      } finally {
        await a.close();
        await b.close();
        await c.close();
      }
    },
    120_000,
  );

  it("runs the demo model's own MTP layer (auto picks it): the same greedy tokens, alone and eight at a time, ended by stop ids and by max_tokens", async () => {
    const auto = await NativeEngine.load(DEMO, { ...TEST_ENGINE });
    try {
      expect(auto.info.speculative).toBe('mtp');
      const heldOut = (
        JSON.parse(readFileSync(join(ROOT, 'scripts/demo-model/eval-cases.json'), 'utf8')) as {
          cases: { kind: string; request: { input: string } }[];
        }
      ).cases
        .filter((c) => c.kind === 'chat')
        .slice(0, 8)
        .map((c) => chat(c.request.input));
      const prompts = [...PROMPTS.map(chat), ...heldOut];
      const before = await auto.stats();
      for (const p of prompts.slice(0, 4)) expect(await generate(auto, p, 96)).toEqual(await generate(off, p, 96));
      // Batched, some sequences cut by max_tokens in the middle of an answer, the others by their stop ids:
      // a sequence that ends in a pass has no token after its last position for the MTP layer's entry.
      for (const maxTokens of [5, 17, 96])
        expect(await Promise.all(prompts.map((p) => generate(auto, p, maxTokens)))).toEqual(
          await Promise.all(prompts.map((p) => generate(off, p, maxTokens))),
        );
      const d = diff(before, await auto.stats());
      expect(d.drafted).toBeGreaterThan(0);
      expect(d.accepted).toBeGreaterThan(0);
      // Each pass: its accepted drafts + one token of its own, except a pass whose accepted draft is a
      // stop id (the sequence ends there, with no token after it): at most one such pass a sequence.
      expect(d.tokens).toBeLessThanOrEqual(d.passes + d.accepted);
      expect(d.tokens).toBeGreaterThanOrEqual(d.passes + d.accepted - 4 * prompts.length);
    } finally {
      await auto.close();
    }
  }, 180_000);

  it("drafts one token at a time with the demo model's MTP layer, most accepted on the held-out chat cases", async () => {
    const mtp = await NativeEngine.load(DEMO, { ...TEST_ENGINE, speculative: 'mtp', specMaxDraft: 1 });
    try {
      const cases = (
        JSON.parse(readFileSync(join(ROOT, 'scripts/demo-model/eval-cases.json'), 'utf8')) as {
          cases: { kind: string; request: { input: string } }[];
        }
      ).cases.filter((c) => c.kind === 'chat');
      const before = await mtp.stats();
      for (const c of cases.slice(0, 24)) await generate(mtp, chat(c.request.input), 64);
      const d = diff(before, await mtp.stats());
      expect(d.drafted).toBeGreaterThan(100);
      // Issue 35's target for a trained MTP layer: at least half of its drafts accepted on held-out chat
      // (scripts/demo-model/mtp.py measured 90% of first drafts on the 100 cases).
      expect(d.accepted / d.drafted).toBeGreaterThanOrEqual(0.5);
    } finally {
      await mtp.close();
    }
  }, 180_000);

  it('refuses mtp by name on a checkpoint without an MTP layer', async () => {
    await expect(
      NativeEngine.load(join(ROOT, 'test/fixtures/engine/glm45-moe-bf16'), { ...TEST_ENGINE, speculative: 'mtp' }),
    ).rejects.toThrow(/MTP layer/);
  });
});

async function collect(engine: NativeEngine, promptIds: number[]): Promise<number[]> {
  const out: number[] = [];
  for await (const event of engine.generate({ promptIds, maxTokens: 32 }))
    if (event.type === 'token') out.push(event.id);
  return out;
}
