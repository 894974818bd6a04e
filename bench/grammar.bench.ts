/**
 * npm run bench:grammar: the cost of constrained decoding.
 *
 * 1. Mask time per step for a 150k-token random byte-level BPE-like vocabulary (all 256 bytes,
 *    words with and without a leading space, digits, JSON punctuation runs such as `",` `"}` `{"`,
 *    UTF-8 pieces including split characters, the GLM special tokens) on a nested schema: the GLM
 *    JSON-answer grammar is compiled, valid documents are tokenised greedily (longest match) and
 *    decoded step by step through the worker's matcher; each step's mask() is timed. Reported
 *    cold (a new constraint: first request with that schema) and warm (the same schema again:
 *    ConstraintCache keeps compiled grammars and their masks), median and p99, plus compile time.
 * 2. End-to-end decode on the demo model: the same json_schema prompts generated with and without
 *    the constraint through NativeEngine (worker thread, FFI), tokens/s, median of runs.
 * Options: --vocab N (default 150000), --docs N (default 20), --runs N (default 5), --max-string N
 * and --max-items N (the soft limits, default 128 / 16 as MAYA_GRAMMAR_*; 0 = unbounded).
 * Dated results, each with its commit and machine load: bench/results/grammar-log.md.
 */
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { glmOutputGrammar, GLM_STOP_TOKENS } from '../dialects/glm-grammar.ts';
import { ConstraintCache } from '../grammar/constraint.ts';
import type { VocabularyData } from '../grammar/token-mask.ts';
import { normaliseInput } from '../responses/input-history.ts';
import { planResponse, type PlanRequest } from '../responses/response-plan.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};

let seed = 12345;
/** xorshift32 (exact in 32-bit integer arithmetic). */
const rand = () => {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 4294967296;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

const SPECIALS = [
  '<|endoftext|>',
  '<|user|>',
  '<|assistant|>',
  '<|observation|>',
  '<think>',
  '</think>',
  '<tool_call>',
  '</tool_call>',
  '<arg_key>',
  '</arg_key>',
  '<arg_value>',
  '</arg_value>',
];

/** A random byte-level vocabulary shaped like a 150k BPE one. */
function makeVocabulary(size: number): VocabularyData {
  const enc = new TextEncoder();
  const seen = new Set<string>();
  const tokens: Uint8Array[] = [];
  const add = (bytes: Uint8Array) => {
    const key = Buffer.from(bytes).toString('latin1');
    if (bytes.length === 0 || seen.has(key)) return;
    seen.add(key);
    tokens.push(bytes);
  };
  for (let b = 0; b < 256; b++) add(Uint8Array.of(b));
  const letters = 'etaoinshrdlcumwfgypbvkjxqz';
  const punct = [
    '"',
    '",',
    '":',
    '": ',
    '", "',
    '"}',
    '"}]',
    '{"',
    '["',
    '"]',
    '},',
    '}]',
    '},{"',
    ', ',
    ',',
    '.',
    ':',
    ' {',
    '\n',
    '\n\n',
    '  ',
    '0.',
    '-',
  ];
  const cjk =
    '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现';
  while (tokens.length < size - SPECIALS.length) {
    const r = rand();
    if (r < 0.62) {
      const n = 1 + Math.floor(rand() * rand() * 12);
      let w = '';
      for (let i = 0; i < n; i++) w += letters[Math.floor(rand() * rand() * letters.length)]!;
      if (rand() < 0.3) w = w[0]!.toUpperCase() + w.slice(1);
      add(enc.encode(rand() < 0.55 ? ` ${w}` : w));
    } else if (r < 0.7) {
      add(enc.encode(String(Math.floor(rand() * 1000))));
    } else if (r < 0.8) {
      add(
        enc.encode(
          pick(punct) + (rand() < 0.5 ? pick(punct) : '') + (rand() < 0.3 ? letters[Math.floor(rand() * 26)]! : ''),
        ),
      );
    } else if (r < 0.93) {
      const n = 1 + Math.floor(rand() * 3);
      let w = '';
      for (let i = 0; i < n; i++) w += cjk[Math.floor(rand() * cjk.length)]!;
      const bytes = enc.encode(w);
      add(rand() < 0.2 ? bytes.subarray(0, bytes.length - 1 - Math.floor(rand() * 2)) : bytes); // some split characters
    } else {
      add(
        enc.encode(
          `"${pick(['name', 'id', 'type', 'value', 'items', 'count', 'tags', 'owner', 'title', 'data'])}${pick(['"', '":', '": ', '":"', '": "'])}`,
        ),
      );
    }
  }
  const specials = Object.fromEntries(SPECIALS.map((s, i) => [s, tokens.length + i]));
  return { tokens, specials, size: tokens.length + SPECIALS.length };
}

const SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['order_id', 'customer', 'items', 'status', 'notes'],
  properties: {
    order_id: { type: 'string' },
    customer: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'email', 'address'],
      properties: {
        name: { type: 'string' },
        email: { type: 'string' },
        address: {
          type: 'object',
          additionalProperties: false,
          required: ['city', 'zip'],
          properties: { city: { type: 'string' }, zip: { type: 'string' }, country: { type: ['string', 'null'] } },
        },
      },
    },
    items: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['sku', 'qty', 'price'],
        properties: {
          sku: { type: 'string' },
          qty: { type: 'integer', minimum: 1 },
          price: { type: 'number' },
          tags: { type: 'array', items: { type: 'string', enum: ['gift', 'fragile', 'bulk'] } },
        },
      },
    },
    status: { type: 'string', enum: ['pending', 'shipped', 'delivered'] },
    notes: { type: ['string', 'null'] },
  },
};

function document(i: number): string {
  const word = () => pick(['blue', 'river', '北京', 'Zoë', 'alpha', 'delta', 'north', 'quick', 'stone', 'maple']);
  const items = Array.from({ length: 1 + (i % 4) }, (_, k) => ({
    sku: `SKU-${i}${k}`,
    qty: 1 + k,
    price: 3.5 * (k + 1),
    tags: k % 2 ? ['gift', 'bulk'] : [],
  }));
  const doc = {
    order_id: `A-${1000 + i}`,
    customer: {
      name: `${word()} ${word()}`,
      email: `${word()}@example.com`,
      address: { city: word(), zip: String(10000 + i), country: i % 3 ? 'FR' : null },
    },
    items,
    status: pick(['pending', 'shipped', 'delivered']),
    notes: i % 2 ? `Leave at the ${word()} door, "${word()}" side.` : null,
  };
  return JSON.stringify(doc, null, 1)
    .replace(/\n\s*/g, ' ')
    .replace(/\{ /g, '{')
    .replace(/ \}/g, '}')
    .replace(/\[ /g, '[')
    .replace(/ \]/g, ']');
}

/** Greedy longest-match tokenisation over the vocabulary (a stand-in for BPE). */
function tokenize(text: string, byBytes: Map<string, number>, maxLen: number): number[] {
  const bytes = new TextEncoder().encode(text);
  const out: number[] = [];
  for (let i = 0; i < bytes.length;) {
    for (let n = Math.min(maxLen, bytes.length - i); n >= 1; n--) {
      const id = byBytes.get(Buffer.from(bytes.subarray(i, i + n)).toString('latin1'));
      if (id !== undefined) {
        out.push(id);
        i += n;
        break;
      }
    }
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;

function maskBench(): void {
  const size = arg('vocab', 150_000);
  const t0 = performance.now();
  const vocab = makeVocabulary(size);
  const t1 = performance.now();
  const byBytes = new Map(vocab.tokens.map((t, id) => [Buffer.from(t!).toString('latin1'), id]));
  const grammar = glmOutputGrammar({
    parser: { tools: [], startInReasoning: false },
    json: { schema: SCHEMA },
    limits: { maxStringLength: arg('max-string', 128), maxItems: arg('max-items', 16) },
  });
  const stopIds = GLM_STOP_TOKENS.map((s) => vocab.specials[s]!);
  const cache = new ConstraintCache(vocab);
  const t2 = performance.now();
  console.log(
    `vocabulary: ${vocab.size} tokens, trie of ${cache.trie.numNodes} nodes, longest ${cache.trie.maxTokenBytes} bytes (built in ${(t2 - t1).toFixed(0)} ms; vocabulary made in ${(t1 - t0).toFixed(0)} ms)`,
  );
  const docs = arg('docs', 20);
  for (const phase of ['cold', 'warm'] as const) {
    const times: number[] = [];
    const compile: number[] = [];
    let steps = 0;
    for (let d = 0; d < docs; d++) {
      // cold: every document is a new constraint (a new request schema); warm: the same one again.
      const key =
        phase === 'cold'
          ? { grammar: { ...grammar, rules: { ...grammar.rules, [`bench#${d}`]: { k: 'text', v: '' } } }, stopIds }
          : { grammar, stopIds };
      const c0 = performance.now();
      const matcher = cache.matcher(key as never);
      compile.push(performance.now() - c0);
      const ids = tokenize(`${document(d)}`, byBytes, cache.trie.maxTokenBytes);
      for (const id of ids) {
        const m0 = performance.now();
        const mask = matcher.mask();
        times.push(performance.now() - m0);
        if (!mask || !matcher.advance(id)) throw new Error(`document ${d} rejected at step ${steps}`);
        steps++;
      }
      const m0 = performance.now();
      const end = matcher.mask();
      times.push(performance.now() - m0);
      if (!end || !matcher.isAccepting) throw new Error(`document ${d} not complete`);
    }
    console.log(
      `mask per step, ${phase} (${phase === 'cold' ? 'new constraint per document' : 'schema seen before'}): median ${us(median(times))}, p90 ${us(pct(times, 0.9))}, p99 ${us(pct(times, 0.99))}, mean ${us(times.reduce((a, b) => a + b, 0) / times.length)} over ${times.length} steps; compile+matcher ${median(compile).toFixed(2)} ms median`,
    );
  }
}

async function decodeBench(): Promise<void> {
  const runtime = await loadModelRuntime(join(ROOT, 'models/maya-demo'), { constrainedDecoding: true });
  const prompts = [
    'Describe the order.',
    'Fill in the record for the blibber expedition.',
    'Give me the details of order 7.',
  ];
  const request = (): PlanRequest => ({
    temperature: 0,
    max_output_tokens: 160,
    text: { format: { type: 'json_schema', name: 'order', schema: SCHEMA } },
  });
  const plans = prompts.map((p) => planResponse(runtime, request(), normaliseInput(p), 0));
  const rate: Record<'on' | 'off', number[]> = { on: [], off: [] };
  for (let r = 0; r < arg('runs', 5); r++) {
    for (const mode of ['off', 'on'] as const) {
      let tokens = 0;
      const t0 = performance.now();
      for (const plan of plans) {
        // No stops, and free text after the JSON: both modes decode exactly maxTokens tokens, the
        // constrained one with a mask at every step, so only the per-token cost differs.
        const { grammar } = plan.constraint!;
        const constraint = {
          grammar: {
            rules: grammar.rules,
            root: { k: 'seq' as const, items: [grammar.root, { k: 'avoid' as const, markers: [] }] },
          },
          stopIds: [],
        };
        const gen = runtime.engine.generate({
          promptIds: plan.promptIds,
          maxTokens: plan.maxTokens,
          temperature: 0,
          stopIds: [],
          ...(mode === 'on' ? { constraint } : {}),
        });
        for await (const event of gen) if (event.type === 'token') tokens++;
      }
      rate[mode].push(tokens / ((performance.now() - t0) / 1000));
    }
  }
  await runtime.close();
  const on = median(rate.on);
  const off = median(rate.off);
  console.log(
    `demo model decode (json_schema prompts, ${plans.length} x 160 tokens, median of ${rate.on.length}): unconstrained ${off.toFixed(0)} tok/s, constrained ${on.toFixed(0)} tok/s (${(((off - on) / off) * 100).toFixed(1)}% overhead)`,
  );
}

maskBench();
await decodeBench();
