/**
 * Writes test/demo-model/fixtures/constrained-schemas.json: 100 seeded JSON schemas of the
 * supported subset with invented field names and values the demo model never saw (nested objects,
 * arrays with bounds, enums, nullable and optional fields, integer ranges), each with a request
 * text. The constrained-decoding test (test/demo-model/constrained.test.ts) runs them all.
 * Usage: npx tsx scripts/gen-constrained-schemas.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

let seed = 20261201;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const SYLLABLES = [
  'zor',
  'blat',
  'quux',
  'fnord',
  'wib',
  'ble',
  'snar',
  'gle',
  'plim',
  'tok',
  'vex',
  'dra',
  'mu',
  'kel',
  'oss',
  'pry',
];
const word = () => Array.from({ length: 2 + Math.floor(rand() * 2) }, () => pick(SYLLABLES)).join('');
const fieldName = () => (rand() < 0.5 ? word() : `${word()}_${word()}`);

type Schema = Record<string, unknown>;

function leaf(depth: number): Schema {
  const r = rand();
  if (r < 0.22) return { type: 'string' };
  if (r < 0.34) return { type: 'integer' };
  if (r < 0.42) return { type: 'integer', minimum: 0, maximum: Math.floor(rand() * 50) + 1 };
  if (r < 0.5) return { type: 'number' };
  if (r < 0.58) return { type: 'boolean' };
  if (r < 0.68) return { type: 'string', enum: Array.from({ length: 2 + Math.floor(rand() * 3) }, word) };
  if (r < 0.76) return { type: [pick(['string', 'integer', 'boolean']), 'null'] };
  if (r < 0.82) return { type: 'string', maxLength: 8 + Math.floor(rand() * 20) };
  if (depth < 2 && r < 0.92) {
    const items = rand() < 0.5 ? leaf(depth + 1) : object(depth + 1, 1 + Math.floor(rand() * 2));
    return { type: 'array', items, ...(rand() < 0.5 ? { minItems: 1, maxItems: 2 + Math.floor(rand() * 3) } : {}) };
  }
  if (depth < 2) return object(depth + 1, 1 + Math.floor(rand() * 3));
  return { type: 'string' };
}

function object(depth: number, n: number): Schema {
  const names = new Set<string>();
  while (names.size < n) names.add(fieldName());
  const properties = Object.fromEntries([...names].map((name) => [name, leaf(depth)]));
  const required = [...names].filter(() => rand() < 0.75);
  return { type: 'object', properties, required, additionalProperties: false };
}

const TOPICS = [
  'a flurbish teapot',
  'the quizzle festival',
  'my snorkwhistle order',
  'a zantrop report',
  'the blibber expedition',
  'order 77-X of plimtok',
  'the vexdra census',
];
const cases = Array.from({ length: 100 }, (_, i) => {
  const schema = object(0, 1 + Math.floor(rand() * 5));
  const input =
    pick(['Describe', 'Summarise', 'Fill in the record for', 'Give me the details of', 'Make up data for']) +
    ' ' +
    pick(TOPICS) +
    '.';
  return { name: `schema_${String(i).padStart(3, '0')}`, input, schema };
});
const out = join(import.meta.dirname, '../test/demo-model/fixtures/constrained-schemas.json');
writeFileSync(out, `${JSON.stringify({ generator: 'scripts/gen-constrained-schemas.ts', cases }, null, 1)}\n`);
console.log(`wrote ${cases.length} schemas to ${out}`);
