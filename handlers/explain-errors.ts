/**
 * Turns ajv's errors into one 400 ApiError with an OpenAI-style message, code and `param` path.
 * ajv reports a failed anyOf/oneOf as the errors of every branch, which rarely names the real
 * problem; here a union failure is narrowed to the branch(es) that the value's `type` tag selects
 * (an unknown tag → `param: "<path>.type"`), or for untagged unions to the branch whose error
 * lies deepest, and that branch is re-validated and explained recursively.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { badRequest, type ApiError } from '../contract/errors.ts';

export interface SchemaResolver {
  /** Follows $ref to the schema node. */
  deref(node: unknown): unknown;
  /** A compiled validator for a schema node of the document. */
  compile(node: unknown): ValidateFunction;
}

type Json = Record<string, unknown>;
const MAX_UNION_DEPTH = 12;

/** JSON pointer → `input[0].content`; '' → null (the whole body). */
export function paramPath(pointer: string): string | null {
  if (pointer === '') return null;
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  return out;
}

function childParam(pointer: string, name: string): string {
  const base = paramPath(pointer);
  return base === null ? name : `${base}.${name}`;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (Number.isInteger(value)) return 'integer';
  return typeof value;
}

function quote(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return `'${text.length > 64 ? `${text.slice(0, 61)}...` : text}'`;
}

const LIMIT_CODES: Record<string, string> = {
  maxLength: 'string_above_max_length',
  minLength: 'string_below_min_length',
  maxItems: 'array_above_max_length',
  minItems: 'array_below_min_length',
  maximum: 'above_max_value',
  exclusiveMaximum: 'above_max_value',
  minimum: 'below_min_value',
  exclusiveMinimum: 'below_min_value',
};

function describeLeaf(error: ErrorObject, pointer: string): ApiError {
  const param = paramPath(pointer);
  const shown = param ?? 'body';
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': {
      const name = childParam(pointer, String(params.missingProperty));
      return badRequest(name, `Missing required parameter: '${name}'.`, 'missing_required_parameter');
    }
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const name = childParam(pointer, String(params.additionalProperty ?? params.unevaluatedProperty));
      return badRequest(name, `Unknown parameter: '${name}'.`, 'unknown_parameter');
    }
    case 'type':
      return badRequest(
        param,
        `Invalid type for '${shown}': expected ${String(params.type).replace(/,/g, ' or ')}, but got ${jsonType(error.data)} instead.`,
        'invalid_type',
      );
    case 'enum':
      return badRequest(
        param,
        `Invalid value for '${shown}': ${quote(error.data)}. Supported values are: ${(params.allowedValues as unknown[]).map(quote).join(', ')}.`,
        'invalid_value',
      );
    case 'const':
      return badRequest(
        param,
        `Invalid value for '${shown}': ${quote(error.data)}. Supported value is: ${quote(params.allowedValue)}.`,
        'invalid_value',
      );
    default: {
      const limitCode = LIMIT_CODES[error.keyword];
      const code =
        limitCode === undefined
          ? 'invalid_value'
          : limitCode.includes('value')
            ? `${Number.isInteger(error.data) ? 'integer' : 'decimal'}_${limitCode}`
            : limitCode;
      return badRequest(param, `Invalid '${shown}': ${error.message ?? 'invalid value'}.`, code);
    }
  }
}

/** The `type` tags a (possibly nested) union branch accepts; null when it has no tag. */
function tagsOf(node: unknown, resolver: SchemaResolver, depth = 0): string[] | null {
  const schema = resolver.deref(node) as Json | undefined;
  if (schema === undefined || schema === null || typeof schema !== 'object' || depth > MAX_UNION_DEPTH) return null;
  const typeSchema = resolver.deref((schema.properties as Json | undefined)?.type) as Json | undefined;
  if (typeSchema !== undefined && typeSchema !== null) {
    if (typeof typeSchema.const === 'string') return [typeSchema.const];
    if (Array.isArray(typeSchema.enum)) return typeSchema.enum.filter((v): v is string => typeof v === 'string');
  }
  const union = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(union)) {
    const tags: string[] = [];
    for (const branch of union) {
      const inner = tagsOf(branch, resolver, depth + 1);
      if (inner === null) return null;
      tags.push(...inner);
    }
    return tags;
  }
  for (const part of (schema.allOf as unknown[] | undefined) ?? []) {
    const inner = tagsOf(part, resolver, depth + 1);
    if (inner !== null) return inner;
  }
  return null;
}

function maxDepth(errors: readonly ErrorObject[]): number {
  return Math.max(-1, ...errors.map((e) => (e.instancePath === '' ? 0 : e.instancePath.split('/').length - 1)));
}

function explainUnion(error: ErrorObject, pointer: string, resolver: SchemaResolver, depth: number): ApiError {
  const branches = Array.isArray(error.schema) ? (error.schema as unknown[]) : [];
  const data: unknown = error.data;
  let candidates = branches;
  const tag = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Json).type : undefined;
  if (typeof tag === 'string') {
    const tagged = branches.map((b) => ({ b, tags: tagsOf(b, resolver) }));
    const matching = tagged.filter((t) => t.tags?.includes(tag)).map((t) => t.b);
    const untagged = tagged.filter((t) => t.tags === null).map((t) => t.b);
    if (matching.length > 0) candidates = matching;
    else if (untagged.length > 0) candidates = untagged;
    else {
      const allowed = [...new Set(tagged.flatMap((t) => t.tags ?? []))];
      const param = childParam(pointer, 'type');
      return badRequest(
        param,
        `Invalid value for '${param}': ${quote(tag)}. Supported values are: ${allowed.map(quote).join(', ')}.`,
        'invalid_value',
      );
    }
  }
  const results = candidates.map((branch) => {
    const fn = resolver.compile(branch);
    const ok = fn(data);
    return { fn, ok, errors: [...(fn.errors ?? [])] };
  });
  if (results.length === 0 || results.some((r) => r.ok)) return describeLeaf(error, pointer);
  const rootTypeErrors = results
    .map((r) => r.errors.at(-1))
    .filter((e) => e?.keyword === 'type' && e.instancePath === '');
  if (rootTypeErrors.length === results.length) {
    const expected = [
      ...new Set(rootTypeErrors.flatMap((e) => String((e!.params as { type: string }).type).split(','))),
    ];
    const shown = paramPath(pointer) ?? 'body';
    return badRequest(
      paramPath(pointer),
      `Invalid type for '${shown}': expected one of ${expected.join(', ')}, but got ${jsonType(data)} instead.`,
      'invalid_type',
    );
  }
  const best = results.reduce((a, b) => (maxDepth(b.errors) > maxDepth(a.errors) ? b : a));
  return explainList(best.errors, pointer, resolver, depth + 1);
}

function explainList(errors: readonly ErrorObject[], base: string, resolver: SchemaResolver, depth: number): ApiError {
  const last = errors.at(-1);
  if (last === undefined) return badRequest(paramPath(base), 'Invalid request body.');
  const pointer = base + last.instancePath;
  if ((last.keyword === 'anyOf' || last.keyword === 'oneOf') && depth < MAX_UNION_DEPTH)
    return explainUnion(last, pointer, resolver, depth);
  return describeLeaf(last, pointer);
}

/** The 400 for a failed `fn(data)`; `base` is the JSON pointer of `data` inside the body. */
export function explainErrors(fn: ValidateFunction, _data: unknown, resolver: SchemaResolver, base: string): ApiError {
  return explainList([...(fn.errors ?? [])], base, resolver, 0);
}
