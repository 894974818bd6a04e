/**
 * JSON Schema (the subset responses/structured-output.ts accepts) → grammar of the JSON texts
 * that satisfy it, in the spacing the demo model writes (Python json.dumps: `": "` and `", "`;
 * one optional space there, none elsewhere, so a model cannot loop on whitespace).
 *
 * Exact: types (incl. nullable lists), objects with required/optional properties in schema order
 * (what OpenAI strict mode does), additionalProperties false, enum/const/anyOf, arrays with
 * items and min/maxItems, string min/maxLength, integer/number signs and small integer ranges.
 * Approximate (left to validation, which stays the final check): general numeric bounds,
 * multipleOf, lengths above LENGTH_CAP, and objects without declared properties (any members).
 * Integers have at most 16 digits, numbers at most 16 fraction digits and no exponent.
 */
import { alt, bytes, opt, ref, rep, seq, text, type Expr, type RuleSet } from './grammar.ts';

type Schema = Record<string, unknown>;

/** Explicit bounds above this are treated as unbounded (the grammar grows linearly with them). */
const LENGTH_CAP = 4096;

/**
 * Soft limits for strings and arrays whose schema sets no maximum (0 = none). A model that cannot
 * close a string or list where it wants to (the schema requires more) otherwise loops until
 * max_output_tokens; a limit turns that loop into a shorter valid value.
 */
export interface JsonLimits {
  maxStringLength: number;
  maxItems: number;
}
export const NO_LIMITS: JsonLimits = { maxStringLength: 0, maxItems: 0 };
const INT_RANGE_CAP = 128;

const SPACE = opt(text(' '));
const COMMA = seq(text(','), SPACE);
const COLON = seq(text(':'), SPACE);

/**
 * One character of a JSON string = one code point (so min/maxLength count as the validator does):
 * printable ASCII but `"` and backslash, well-formed UTF-8 (no overlongs, no surrogates), or an
 * escape (`\\u` outside the surrogate range).
 */
function stringChar(rules: RuleSet): Expr {
  return rules.shared('json.char', () => {
    const c = bytes([0x80, 0xbf]);
    const hex = bytes([0x30, 0x39], [0x61, 0x66], [0x41, 0x46]);
    return alt(
      bytes([0x20, 0x21], [0x23, 0x5b], [0x5d, 0x7f]),
      seq(bytes([0xc2, 0xdf]), c),
      seq(bytes([0xe0, 0xe0]), bytes([0xa0, 0xbf]), c),
      seq(bytes([0xe1, 0xec], [0xee, 0xef]), c, c),
      seq(bytes([0xed, 0xed]), bytes([0x80, 0x9f]), c),
      seq(bytes([0xf0, 0xf0]), bytes([0x90, 0xbf]), c, c),
      seq(bytes([0xf1, 0xf3]), c, c, c),
      seq(bytes([0xf4, 0xf4]), bytes([0x80, 0x8f]), c, c),
      seq(
        text('\\'),
        alt(
          bytes(
            [0x22, 0x22],
            [0x5c, 0x5c],
            [0x2f, 0x2f],
            [0x62, 0x62],
            [0x66, 0x66],
            [0x6e, 0x6e],
            [0x72, 0x72],
            [0x74, 0x74],
          ),
          seq(
            text('u'),
            alt(
              seq(bytes([0x30, 0x39], [0x61, 0x63], [0x41, 0x43], [0x65, 0x66], [0x45, 0x46]), hex, hex, hex),
              seq(bytes([0x64, 0x64], [0x44, 0x44]), bytes([0x30, 0x37]), hex, hex),
            ),
          ),
        ),
      ),
    );
  });
}

const DIGIT = bytes([0x30, 0x39]);
const NONZERO = bytes([0x31, 0x39]);

export function jsonString(rules: RuleSet, minLength = 0, maxLength = -1, limits = NO_LIMITS): Expr {
  const min = Math.min(minLength, LENGTH_CAP);
  const given = maxLength < 0 && limits.maxStringLength > 0 ? limits.maxStringLength : maxLength;
  const max = given < 0 || given > LENGTH_CAP ? -1 : Math.max(given, min);
  if (min === 0 && max < 0)
    return rules.shared('json.string', () => seq(text('"'), rep(stringChar(rules), 0, -1), text('"')));
  return seq(text('"'), rep(stringChar(rules), min, max), text('"'));
}

function jsonInteger(schema: Schema): Expr {
  const lo = bound(schema.minimum, schema.exclusiveMinimum, 1);
  const hi = bound(schema.maximum, schema.exclusiveMaximum, -1);
  if (lo !== undefined && hi !== undefined && hi - lo <= INT_RANGE_CAP && hi >= lo) {
    const values: Expr[] = [];
    for (let v = lo; v <= hi; v++) values.push(text(String(v)));
    return alt(...values);
  }
  const magnitude = alt(text('0'), seq(NONZERO, rep(DIGIT, 0, 15)));
  if (lo !== undefined && lo >= 0) return magnitude;
  if (hi !== undefined && hi < 0) return seq(text('-'), seq(NONZERO, rep(DIGIT, 0, 15)));
  return seq(opt(text('-')), magnitude);
}

/** The smallest (dir 1) / largest (dir -1) integer allowed by a bound pair, when one is given. */
function bound(inclusive: unknown, exclusive: unknown, dir: 1 | -1): number | undefined {
  const candidates: number[] = [];
  if (typeof inclusive === 'number') candidates.push(dir > 0 ? Math.ceil(inclusive) : Math.floor(inclusive));
  if (typeof exclusive === 'number') candidates.push(dir > 0 ? Math.floor(exclusive) + 1 : Math.ceil(exclusive) - 1);
  if (candidates.length === 0) return undefined;
  return dir > 0 ? Math.max(...candidates) : Math.min(...candidates);
}

function jsonNumber(schema: Schema): Expr {
  const lo =
    typeof schema.minimum === 'number'
      ? schema.minimum
      : typeof schema.exclusiveMinimum === 'number'
        ? schema.exclusiveMinimum
        : undefined;
  const hi =
    typeof schema.maximum === 'number'
      ? schema.maximum
      : typeof schema.exclusiveMaximum === 'number'
        ? schema.exclusiveMaximum
        : undefined;
  const magnitude = seq(alt(text('0'), seq(NONZERO, rep(DIGIT, 0, 15))), opt(seq(text('.'), rep(DIGIT, 1, 16))));
  if (lo !== undefined && lo >= 0) return magnitude;
  if (hi !== undefined && hi <= 0 && !(hi === 0 && typeof schema.maximum === 'number'))
    return seq(text('-'), magnitude);
  return seq(opt(text('-')), magnitude);
}

/** Any JSON value (recursive). */
export function anyJson(rules: RuleSet): Expr {
  return rules.shared('json.any', () =>
    alt(
      anyObject(rules),
      anyArray(rules),
      jsonString(rules),
      jsonNumber({}),
      text('true'),
      text('false'),
      text('null'),
    ),
  );
}

export function anyObject(rules: RuleSet): Expr {
  return rules.shared('json.anyObject', () => {
    const member = seq(jsonString(rules), COLON, ref('json.any'));
    anyJson(rules);
    return seq(text('{'), opt(seq(member, rep(seq(COMMA, member), 0, -1))), text('}'));
  });
}

function anyArray(rules: RuleSet): Expr {
  return rules.shared('json.anyArray', () =>
    seq(text('['), opt(seq(ref('json.any'), rep(seq(COMMA, ref('json.any')), 0, -1))), text(']')),
  );
}

function typesOf(schema: Schema): string[] | undefined {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return undefined;
}

/** The grammar of JSON texts valid for `schema`; unknown or unsupported parts admit any value. */
export function jsonSchemaValue(rules: RuleSet, schema: unknown, limits: JsonLimits = NO_LIMITS): Expr {
  if (schema === true || schema === undefined) return anyJson(rules);
  if (typeof schema !== 'object' || schema === null) return anyJson(rules);
  const s = schema as Schema;
  if ('const' in s) return text(JSON.stringify(s.const));
  if (Array.isArray(s.enum)) return alt(...s.enum.map((v) => text(JSON.stringify(v))));
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) {
    const { anyOf: _branches, ...shared } = s;
    const branches = s.anyOf.map((branch) => jsonSchemaValue(rules, { ...shared, ...(branch as Schema) }, limits));
    return alt(...branches);
  }
  const types = typesOf(s) ?? (s.properties ? ['object'] : s.items ? ['array'] : undefined);
  if (!types) return anyJson(rules);
  return alt(...types.map((t) => typed(rules, s, t, limits)));
}

function typed(rules: RuleSet, s: Schema, type: string, limits: JsonLimits): Expr {
  switch (type) {
    case 'string':
      return jsonString(rules, num(s.minLength, 0), num(s.maxLength, -1), limits);
    case 'integer':
      return jsonInteger(s);
    case 'number':
      return jsonNumber(s);
    case 'boolean':
      return alt(text('true'), text('false'));
    case 'null':
      return text('null');
    case 'array':
      return jsonArray(rules, s, limits);
    case 'object':
      return jsonObject(rules, s, limits);
    default:
      return anyJson(rules);
  }
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : fallback;
}

function jsonArray(rules: RuleSet, s: Schema, limits: JsonLimits): Expr {
  const item = rules.define('item', jsonSchemaValue(rules, s.items, limits));
  const min = Math.min(num(s.minItems, 0), LENGTH_CAP);
  const maxRaw = num(s.maxItems, -1) < 0 && limits.maxItems > 0 ? limits.maxItems : num(s.maxItems, -1);
  const max = maxRaw < 0 || maxRaw > LENGTH_CAP ? -1 : Math.max(maxRaw, min);
  if (max === 0) return text('[]');
  const rest = rep(seq(COMMA, item), Math.max(min - 1, 0), max < 0 ? -1 : max - 1);
  const body = seq(item, rest);
  return seq(text('['), min > 0 ? body : opt(body), text(']'));
}

/**
 * Properties in schema order, each required one present, optional ones skippable; commas only
 * between written members. F(i): members i.. with none written yet; N(i): after one was written.
 */
function jsonObject(rules: RuleSet, s: Schema, limits: JsonLimits): Expr {
  const props = s.properties && typeof s.properties === 'object' ? Object.entries(s.properties as Schema) : [];
  if (props.length === 0) return s.additionalProperties === false ? text('{}') : anyObject(rules);
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  let first: Expr = text('');
  let next: Expr = text('');
  for (let i = props.length - 1; i >= 0; i--) {
    const [name, child] = props[i]!;
    const member = seq(text(JSON.stringify(name)), COLON, rules.define('value', jsonSchemaValue(rules, child, limits)));
    const isRequired = required.has(name);
    const n: Expr = rules.define('more', isRequired ? seq(COMMA, member, next) : alt(seq(COMMA, member, next), next));
    const f: Expr = rules.define('members', isRequired ? seq(member, next) : alt(seq(member, next), first));
    next = n;
    first = f;
  }
  return seq(text('{'), first, text('}'));
}
