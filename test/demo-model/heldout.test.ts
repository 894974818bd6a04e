/**
 * The demo model's evaluation is held out by name and by phrasing (scripts/demo-model/pools.py):
 * every tool, parameter and field name in scripts/demo-model/eval-cases.json is on the HELD side of
 * the name split (crc32 of the name's lower-case words, mod 5 = 0, except the first edition's names,
 * always TRAIN), every name that training conversations declare or use (fixtures/split.json: tools,
 * parameters, schema fields, tool-result fields and memory labels of 500 conversations of data.py's
 * mixture, written by make_eval_cases.py) is on the TRAIN side, no name occurs in both, the TRAIN
 * and HELD template lists share no template, and training used no HELD template. The fresh phrasing
 * sets (make_fresh_phrasing_cases.py) are neither TRAIN nor HELD phrasings. The held-out value
 * families (pools.HELD_FAMILIES: version numbers, dotted identifiers) fill a share of the
 * evaluation's values, and no dotted piece of 3,000 training conversations' text matches them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Split {
  reserved_train: string[];
  templates: Record<string, { train: string[]; held: string[] }>;
  fresh: Record<string, string[]>;
  held_family_patterns: Record<string, string>;
  training: { samples: number; dotted_samples: number; names: string[]; templates: string[]; dotted: string[] };
}
interface Case {
  id: string;
  kind: string;
  names: string[];
  request: { input?: unknown };
  turns?: string[];
  expect: { calls?: { arguments: Record<string, unknown> }[]; value?: unknown; values?: string[]; answer?: string };
}

const split = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/split.json'), 'utf8')) as Split;
const cases = (
  JSON.parse(readFileSync(path.join(ROOT, 'scripts/demo-model/eval-cases.json'), 'utf8')) as { cases: Case[] }
).cases;

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(text: string): number {
  let c = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** pools.split_words: snake_case, camelCase and PascalCase back to lower-case words. */
function words(name: string): string[] {
  return name
    .split('_')
    .flatMap((part) => part.split(/(?=[A-Z])/))
    .filter((w) => w !== '')
    .map((w) => w.toLowerCase());
}

const reserved = new Set(split.reserved_train);

/** pools.split_of. */
function side(name: string): 'held' | 'train' {
  const key = words(name).join('_');
  if (reserved.has(key)) return 'train';
  return crc32(key) % 5 === 0 ? 'held' : 'train';
}

describe('the held-out split of the demo model evaluation', () => {
  it('the split function agrees with pools.py on known names', () => {
    // zlib.crc32(b'get_weather') etc., from Python.
    expect(crc32('get_weather')).toBe(0xd55382c0);
    expect(words('bookHotelRoom')).toEqual(['book', 'hotel', 'room']);
    expect(words('Book_hotelRoom')).toEqual(['book', 'hotel', 'room']);
    expect(crc32('city') % 5).toBe(0); // a first-edition name whose hash says held…
    expect(side('city')).toBe('train'); // …kept on the training side (pools.RESERVED_TRAIN)
  });

  it('has at least 100 cases per behaviour, each naming its tools, parameters and fields', () => {
    for (const kind of ['tool', 'json', 'memory', 'tool_result', 'chat']) {
      const of = cases.filter((c) => c.kind === kind);
      expect(of.length, kind).toBeGreaterThanOrEqual(100);
    }
    const named = cases.filter((c) => c.kind !== 'chat' && c.kind !== 'edit');
    expect(named.every((c) => c.names.length > 0)).toBe(true);
  });

  it('every name in the evaluation is on the held-out side; every training name on the training side', () => {
    const evalNames = new Set(cases.flatMap((c) => c.names));
    expect(evalNames.size).toBeGreaterThan(500);
    for (const name of evalNames) expect(side(name), name).toBe('held');
    const trainNames = new Set(split.training.names);
    expect(trainNames.size).toBeGreaterThan(500);
    for (const name of trainNames) expect(side(name), name).toBe('train');
    expect([...evalNames].filter((n) => trainNames.has(n))).toEqual([]);
  });

  it('the declared tool and schema names in the requests are the cases’ held-out names', () => {
    for (const c of cases.filter((x) => x.kind === 'tool' || x.kind === 'tool_result')) {
      const tools = (c.request as { tools: { name: string; parameters: { properties: object } }[] }).tools;
      for (const t of tools) {
        expect(side(t.name), `${c.id} ${t.name}`).toBe('held');
        for (const p of Object.keys(t.parameters.properties)) expect(side(p), `${c.id} ${p}`).toBe('held');
      }
    }
    for (const c of cases.filter((x) => x.kind === 'json')) {
      const format = (c.request as { text: { format: { schema: { properties: object } } } }).text.format;
      for (const f of Object.keys(format.schema.properties)) expect(side(f), `${c.id} ${f}`).toBe('held');
    }
  });

  it('the TRAIN and HELD phrasings share no template, and training used only TRAIN ones', () => {
    const train = new Set(Object.values(split.templates).flatMap((t) => t.train));
    const held = Object.values(split.templates).flatMap((t) => t.held);
    expect(held.length).toBeGreaterThan(30);
    expect(held.filter((t) => train.has(t))).toEqual([]);
    expect(split.training.templates.length).toBeGreaterThan(30);
    for (const t of split.training.templates) expect(train.has(t), t).toBe(true);
  });

  it('the fresh phrasing sets are neither training nor held-out phrasings', () => {
    const train = new Set(Object.values(split.templates).flatMap((t) => t.train));
    const held = new Set(Object.values(split.templates).flatMap((t) => t.held));
    const fresh = Object.values(split.fresh).flat();
    expect(fresh.length).toBeGreaterThanOrEqual(30);
    expect(fresh.filter((t) => train.has(t) || held.has(t))).toEqual([]);
    for (const t of split.training.templates) expect(fresh.includes(t), t).toBe(false);
  });

  it('held-out value families fill part of the evaluation and never occur in training text', () => {
    const patterns = Object.entries(split.held_family_patterns).map(([name, p]) => [name, new RegExp(p)] as const);
    expect(patterns.map(([name]) => name).sort()).toEqual(['dotted', 'version']);
    const strings = (v: unknown): string[] =>
      typeof v === 'string'
        ? [v]
        : Array.isArray(v)
          ? v.flatMap(strings)
          : v && typeof v === 'object'
            ? Object.values(v).flatMap(strings)
            : [];
    const values = cases.flatMap((c) =>
      strings([c.expect.calls?.map((call) => call.arguments), c.expect.value, c.expect.values]),
    );
    for (const [name, re] of patterns) {
      const held = values.filter((v) => new RegExp(`^${re.source}$`).test(v));
      expect(held.length, name).toBeGreaterThanOrEqual(15);
    }
    expect(split.training.dotted_samples).toBeGreaterThanOrEqual(3000);
    // The pieces are what training writes with a dot in them: paths, e-mail addresses, decimals, URLs.
    expect(split.training.dotted.length).toBeGreaterThan(500);
    expect(split.training.dotted.some((d) => d.includes('@'))).toBe(true);
    for (const piece of split.training.dotted)
      for (const [name, re] of patterns) expect(re.test(piece), `${name}: ${piece}`).toBe(false);
  });
});
