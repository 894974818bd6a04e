/**
 * Spec-driven request generators for fuzzing: every operation of generated/operations.ts with
 * bodies, query strings and path ids drawn from the contract (openapi/openapi.yaml as JSON), then
 * broken on purpose: a field of the wrong type, a boundary value, an unknown or prototype key,
 * deep nesting, odd Unicode. Used by the in-process fuzz test (npm test) and `npm run fuzz`.
 */
import fc from 'fast-check';
import { openapiDocument } from '../../generated/openapi-document.ts';
import { operations, type OperationId } from '../../generated/operations.ts';

type Schema = Record<string, unknown>;
const SCHEMAS = (openapiDocument.components as { schemas: Record<string, Schema> }).schemas;

export interface FuzzRequest {
  operation: OperationId;
  method: string;
  path: string;
  /** JSON text (may be malformed on purpose), or undefined for no body. */
  body?: string;
}

function deref(node: unknown): Schema {
  let schema = node as Schema;
  for (let hops = 0; hops < 8 && typeof schema?.$ref === 'string'; hops++) {
    schema = SCHEMAS[(schema.$ref as string).split('/').pop()!] ?? {};
  }
  return schema ?? {};
}

const odd = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  '\uFEFF',
  '\uD800',
  '💥'.repeat(50),
  'a'.repeat(70_000),
  '<|user|>',
  '</tool_call>',
  '${x}',
  '../../etc/passwd',
  '__proto__',
  'constructor',
  'resp_' + 'f'.repeat(48),
  'null',
  '-1',
  '1e400',
);
const oddNumber = fc.constantFrom(0, -1, 1e400, -1e400, 2 ** 53, 2 ** 64, 0.5, -0, 1e-300, Number.MAX_SAFE_INTEGER + 2);
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  odd,
  oddNumber,
  fc.constant(null),
  fc.constant({ __proto__: { polluted: true }, constructor: { prototype: 1 } }),
  fc.integer({ min: 5, max: 120 }).map((depth) => nest(depth)),
);

function nest(depth: number): unknown {
  let node: unknown = 'x';
  for (let i = 0; i < depth; i++) node = i % 2 ? [node] : { a: node };
  return node;
}

/** A value shaped by `schema` most of the time, anything at all otherwise. */
function valueOf(node: unknown, depth: number): fc.Arbitrary<unknown> {
  const schema = deref(node);
  if (depth > 4) return anyJson;
  const branches = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(branches) && branches.length > 0)
    return fc.oneof(...branches.map((b) => valueOf(b, depth + 1)), anyJson);
  if (Array.isArray(schema.enum)) return fc.oneof(fc.constantFrom(...(schema.enum as unknown[])), anyJson);
  if (schema.const !== undefined) return fc.oneof(fc.constant(schema.const), anyJson);
  const type = Array.isArray(schema.type)
    ? (schema.type as string[]).find((t) => t !== 'null')
    : (schema.type as string | undefined);
  switch (type) {
    case 'object':
      return objectOf(schema, depth);
    case 'array':
      return fc.oneof(fc.array(valueOf(schema.items, depth + 1), { maxLength: 4 }), anyJson);
    case 'string':
      return fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), odd);
    case 'integer':
      return fc.oneof(fc.integer(), oddNumber);
    case 'number':
      return fc.oneof(fc.double(), oddNumber);
    case 'boolean':
      return fc.oneof(fc.boolean(), anyJson);
    default:
      return anyJson;
  }
}

function objectOf(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  const properties = (schema.properties as Record<string, unknown> | undefined) ?? {};
  const names = Object.keys(properties);
  if (names.length === 0) return fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }), anyJson);
  const record = fc.record(Object.fromEntries(names.map((name) => [name, valueOf(properties[name], depth + 1)])), {
    requiredKeys: [],
  });
  const extra = fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), odd), anyJson, { maxKeys: 2 });
  return fc.oneof(
    { weight: 4, arbitrary: record },
    { weight: 1, arbitrary: fc.tuple(record, extra).map(([a, b]) => ({ ...b, ...a })) },
  );
}

/** A body for `schemaName`: mostly schema-shaped objects with broken fields; sometimes not JSON. */
function bodyOf(schemaName: string): fc.Arbitrary<string> {
  const shaped = objectOf(deref(SCHEMAS[schemaName]), 0).map((value) => JSON.stringify(value) ?? 'null');
  const broken = fc.oneof(
    fc.constantFrom(
      '',
      '{',
      '[]',
      'null',
      '"x"',
      '{"input":',
      '{"a":1}}',
      '\uFEFF{}',
      '{"input": NaN}',
      '{"seed": 1e400}',
    ),
    fc.string({ maxLength: 30 }),
  );
  return fc.oneof({ weight: 6, arbitrary: shaped }, { weight: 1, arbitrary: broken });
}

// Lone surrogates cannot be percent-encoded into a URL at all, so ids are well-formed strings.
const pathId = fc
  .oneof(
    fc.constant('resp_' + '0'.repeat(48)),
    fc.string({ maxLength: 30 }),
    odd.filter((s) => s.length < 200),
  )
  .filter((s) => !/[\uD800-\uDFFF]/.test(s));
const queryValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('true', 'false', '-1', '0', '101', '1e400', 'asc', 'desc', ''),
);

export function requestOf(id: OperationId): fc.Arbitrary<FuzzRequest> {
  const op = operations[id];
  const params = fc.tuple(...op.pathParams.map(() => pathId));
  const query = fc.dictionary(
    fc.oneof(fc.constantFrom(...(op.query.length > 0 ? op.query : ['x'])), fc.string({ maxLength: 6 })),
    queryValue,
    { maxKeys: 3 },
  );
  const body = op.requestBody ? bodyOf(op.requestBody).map((b): string | undefined => b) : fc.constant(undefined);
  return fc.tuple(params, query, body).map(([ids, q, b]) => {
    let path: string = op.path;
    op.pathParams.forEach((name, i) => (path = path.replace(`{${name}}`, encodeURIComponent(ids[i] ?? ''))));
    const search = new URLSearchParams(q as Record<string, string>).toString();
    return { operation: id, method: op.method.toUpperCase(), path: search ? `${path}?${search}` : path, body: b };
  });
}

/** Requests over every operation of the contract. */
export const anyRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  ...(Object.keys(operations) as OperationId[]).map(requestOf),
);

/**
 * Problems with one answer of `operation`: a 5xx, or an error body that is not the operation's
 * envelope (OpenAI's; Anthropic's for the `x-error-format: anthropic` operations).
 */
export function answerProblems(status: number, body: unknown, operation?: OperationId): string[] {
  const problems: string[] = [];
  if (status >= 500) problems.push(`status ${status}`);
  if (status >= 400 && operation !== undefined && operations[operation].errorFormat === 'anthropic') {
    const envelope = body as { type?: unknown; error?: Record<string, unknown> } | undefined;
    const error = envelope?.error;
    if (envelope?.type !== 'error' || !error || typeof error.type !== 'string' || typeof error.message !== 'string')
      problems.push(`not the Anthropic error envelope: ${JSON.stringify(body)?.slice(0, 200)}`);
  } else if (status >= 400) {
    const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
    if (
      !error ||
      typeof error.message !== 'string' ||
      typeof error.type !== 'string' ||
      !('param' in error) ||
      !('code' in error)
    ) {
      problems.push(`not the error envelope: ${JSON.stringify(body)?.slice(0, 200)}`);
    }
  }
  return problems;
}
