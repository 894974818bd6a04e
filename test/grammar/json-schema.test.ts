/**
 * JSON Schema → grammar (grammar/json-schema.ts), checked against the validator that stays the
 * final word (responses/structured-output.ts): fast-check builds schemas from the supported
 * subset (in the forms the grammar expresses exactly), and every sentence a seeded walk draws from
 * the grammar must parse and validate. Golden instances in the demo model's spacing are accepted,
 * and typical violations are not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RuleSet } from '../../grammar/grammar.ts';
import { jsonSchemaValue, anyObject } from '../../grammar/json-schema.ts';
import { CompiledGrammar, type GrammarRun } from '../../grammar/matcher.ts';
import { compileTextFormat } from '../../responses/structured-output.ts';
import { randomSentence } from '../helpers/grammar-walk.ts';

type Schema = Record<string, unknown>;

function runFor(schema: Schema | undefined): GrammarRun {
  const rules = new RuleSet();
  const root = schema ? jsonSchemaValue(rules, schema) : anyObject(rules);
  return new CompiledGrammar(rules.grammar(root), new Map()).createRun();
}

const name = fc.stringMatching(/^[a-z_]{1,8}$/);
const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record({ type: fc.constant('string') }),
  fc.tuple(fc.nat(4), fc.nat(6)).map(([min, extra]) => ({ type: 'string', minLength: min, maxLength: min + extra })),
  fc
    .uniqueArray(fc.string({ minLength: 0, maxLength: 6 }), { minLength: 1, maxLength: 4 })
    .map((values) => ({ type: 'string', enum: values })),
  fc.record({ type: fc.constant('integer') }),
  fc
    .tuple(fc.integer({ min: -50, max: 50 }), fc.nat(100))
    .map(([lo, span]) => ({ type: 'integer', minimum: lo, maximum: lo + span })),
  fc.constant({ type: 'integer', minimum: 0 }),
  fc.constant({ type: 'number' }),
  fc.constant({ type: 'number', minimum: 0 }),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc.constantFrom<Schema>({ type: ['string', 'null'] }, { type: ['integer', 'null'] }, { type: ['boolean', 'string'] }),
  fc.jsonValue({ maxDepth: 2 }).map((value) => ({ const: value })),
  fc.constant({ anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 3 }] }),
);
const schemaArb: fc.Arbitrary<Schema> = fc.letrec<{ node: Schema; object: Schema; array: Schema }>((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object'), tie('array')),
  array: fc
    .tuple(tie('node'), fc.nat(3), fc.nat(3), fc.boolean())
    .map(([items, min, extra, bounded]) =>
      bounded ? { type: 'array', items, minItems: min, maxItems: min + extra } : { type: 'array', items },
    ),
  object: fc
    .tuple(
      fc.uniqueArray(fc.tuple(name, tie('node')), { minLength: 0, maxLength: 4, selector: ([n]) => n }),
      fc.func(fc.boolean()),
      fc.boolean(),
    )
    .map(([props, isRequired, closed]) => ({
      type: 'object',
      properties: Object.fromEntries(props),
      required: props.map(([n]) => n).filter((n) => isRequired(n)),
      ...(closed ? { additionalProperties: false } : {}),
    })),
})).object;

describe('JSON Schema grammars', () => {
  it('every sentence the grammar admits validates (fast-check: schemas from the subset, seeded walks)', () => {
    let sentences = 0;
    fc.assert(
      fc.property(
        schemaArb,
        fc.array(fc.integer({ min: 1, max: 2 ** 31 - 1 }), { minLength: 8, maxLength: 8 }),
        (schema, seeds) => {
          const { validator } = compileTextFormat({ type: 'json_schema', name: 's', schema });
          const run = runFor(schema);
          for (const seed of seeds) {
            const sentence = randomSentence(run, seed);
            expect(sentence).not.toBe('dead_end');
            if (typeof sentence === 'string') continue;
            const text = new TextDecoder('utf-8', { fatal: true }).decode(sentence);
            const result = validator!(text);
            if (!result.ok)
              throw new Error(`${JSON.stringify(schema)} admitted ${JSON.stringify(text)}: ${result.message}`);
            sentences++;
          }
        },
      ),
      { numRuns: 150, seed: 19 },
    );
    expect(sentences).toBeGreaterThan(900);
  });

  it('json_object: sentences are JSON objects', () => {
    const { validator } = compileTextFormat({ type: 'json_object' });
    const run = runFor(undefined);
    for (let seed = 1; seed <= 200; seed++) {
      const sentence = randomSentence(run, seed);
      if (typeof sentence === 'string') continue;
      expect(validator!(new TextDecoder().decode(sentence)).ok).toBe(true);
    }
  });

  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'tags', 'size', 'owner'],
    properties: {
      name: { type: 'string', maxLength: 10 },
      tags: { type: 'array', items: { type: 'string', enum: ['red', 'blue'] }, maxItems: 2 },
      size: { type: ['integer', 'null'], minimum: 0 },
      owner: {
        type: 'object',
        properties: { id: { type: 'integer', minimum: 1, maximum: 9 }, note: { type: 'string' } },
        required: ['id'],
      },
      ratio: { type: 'number' },
    },
  };
  const run = runFor(schema);

  it('accepts valid instances in compact and json.dumps spacing', () => {
    for (const ok of [
      '{"name": "Zoë \\"Q\\"", "tags": ["red", "blue"], "size": null, "owner": {"id": 3}}',
      '{"name":"","tags":[],"size":12,"owner":{"id":9,"note":"x\\u00e9"},"ratio":-0.25}',
    ])
      expect(run.matches(ok)).toBe(true);
  });

  it('rejects missing required keys, extra keys, wrong types, bounds, enum misses and bad JSON', () => {
    for (const bad of [
      '{"name": "a", "tags": [], "size": 1}',
      '{"name": "a", "tags": [], "size": 1, "owner": {"id": 3}, "extra": 1}',
      '{"name": 5, "tags": [], "size": 1, "owner": {"id": 3}}',
      '{"name": "a", "tags": ["green"], "size": 1, "owner": {"id": 3}}',
      '{"name": "a", "tags": ["red", "red", "red"], "size": 1, "owner": {"id": 3}}',
      '{"name": "abcdefghijk", "tags": [], "size": 1, "owner": {"id": 3}}',
      '{"name": "a", "tags": [], "size": -1, "owner": {"id": 3}}',
      '{"name": "a", "tags": [], "size": 1, "owner": {"id": 10}}',
      '{"tags": [], "name": "a", "size": 1, "owner": {"id": 3}}',
      '{"name": "a",  "tags": [], "size": 1, "owner": {"id": 3}}',
      '{"name": "a\u0001", "tags": [], "size": 1, "owner": {"id": 3}}',
    ])
      expect(run.matches(bad)).toBe(false);
  });
});
