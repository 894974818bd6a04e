/**
 * Structured output: `text.format` (text | json_object | json_schema) and strict tool schemas.
 * Schemas are checked against the spec's supported subset of Draft 2020-12 before generation
 * (400 on anything else), then compiled with ajv; generated JSON is validated before anything is
 * published (validate-before-publish). ajv is loaded on first use, so plain-text requests never
 * load the validator.
 */
import { createRequire } from 'node:module';
import { badRequest } from '../contract/errors.ts';

/** The instruction joined to the prompt; the demo model is trained on exactly this wording. */
export const JSON_SCHEMA_INSTRUCTION = 'Respond with a JSON object that matches this JSON schema: ';
export const JSON_OBJECT_INSTRUCTION = 'Respond with a JSON object.';

const SCHEMA_MAX_BYTES = 64 * 1024;
const SCHEMA_MAX_NODES = 512;
const SCHEMA_MAX_DEPTH = 24;
const INSTANCE_MAX_NODES = 65_536;
const INSTANCE_MAX_DEPTH = 32;
const VALIDATION_BUDGET_MS = 1000;

const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$comment']);
const KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
]);
const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
/** Keywords named in the spec's rejection list get their own message. */
const REJECTED: Record<string, string> = {
  $ref: 'references',
  $defs: 'definitions',
  definitions: 'definitions',
  pattern: 'patterns',
  patternProperties: 'patterns',
  format: 'formats',
  if: 'conditionals',
  then: 'conditionals',
  else: 'conditionals',
  dependentSchemas: 'conditionals',
  dependentRequired: 'conditionals',
};

export type ValidationResult =
  | { ok: true; value: unknown }
  | { ok: false; code: 'invalid_json' | 'schema_violation' | 'validation_budget'; message: string };
export type OutputValidator = (text: string, signal?: AbortSignal) => ValidationResult;

export interface CompiledFormat {
  instruction?: string;
  validator?: OutputValidator;
}

type Schema = Record<string, unknown>;

/** Walks a schema node, enforcing the subset; counts nodes and depth. */
function checkNode(node: unknown, path: string, depth: number, strict: boolean, counter: { nodes: number }): void {
  if (typeof node !== 'object' || node === null || Array.isArray(node))
    throw badRequest(path, 'A JSON schema node must be an object.', 'invalid_schema');
  if (++counter.nodes > SCHEMA_MAX_NODES)
    throw badRequest(path, `The schema has more than ${SCHEMA_MAX_NODES} nodes.`, 'schema_too_large');
  if (depth > SCHEMA_MAX_DEPTH)
    throw badRequest(path, `The schema nests deeper than ${SCHEMA_MAX_DEPTH} levels.`, 'schema_too_deep');
  const schema = node as Schema;
  for (const key of Object.keys(schema)) {
    if (REJECTED[key])
      throw badRequest(
        `${path}.${key}`,
        `JSON schema ${REJECTED[key]} ('${key}') are not supported.`,
        'unsupported_schema_keyword',
      );
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key))
      throw badRequest(
        `${path}.${key}`,
        `JSON schema keyword '${key}' is not supported.`,
        'unsupported_schema_keyword',
      );
  }
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  for (const type of types)
    if (!TYPES.has(type as string))
      throw badRequest(`${path}.type`, `Unknown JSON schema type '${String(type)}'.`, 'invalid_schema');
  if (schema.properties !== undefined) {
    if (typeof schema.properties !== 'object' || schema.properties === null)
      throw badRequest(`${path}.properties`, "'properties' must be an object.", 'invalid_schema');
    for (const [name, child] of Object.entries(schema.properties))
      checkNode(child, `${path}.properties.${name}`, depth + 1, strict, counter);
  }
  if (typeof schema.additionalProperties === 'object')
    checkNode(schema.additionalProperties, `${path}.additionalProperties`, depth + 1, strict, counter);
  if (schema.items !== undefined) checkNode(schema.items, `${path}.items`, depth + 1, strict, counter);
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf) || schema.anyOf.length === 0)
      throw badRequest(`${path}.anyOf`, "'anyOf' must be a non-empty array.", 'invalid_schema');
    schema.anyOf.forEach((child, i) => checkNode(child, `${path}.anyOf[${i}]`, depth + 1, strict, counter));
  }
  if (strict && (types.includes('object') || schema.properties !== undefined)) checkStrictObject(schema, path);
}

function checkStrictObject(schema: Schema, path: string): void {
  if (schema.additionalProperties !== false)
    throw badRequest(
      `${path}.additionalProperties`,
      "Strict object schemas must set 'additionalProperties': false.",
      'invalid_schema',
    );
  const properties = Object.keys((schema.properties as Schema | undefined) ?? {});
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const missing = properties.filter((name) => !required.has(name));
  if (missing.length > 0)
    throw badRequest(
      `${path}.required`,
      `Strict object schemas must require every property; missing: ${missing.join(', ')}. Use a nullable type for optional values.`,
      'invalid_schema',
    );
}

/** Counts instance nodes and depth within the limits, checking time and cancellation. */
function checkInstance(value: unknown, signal: AbortSignal | undefined): ValidationResult | undefined {
  const started = Date.now();
  let nodes = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (++nodes > INSTANCE_MAX_NODES)
      return {
        ok: false,
        code: 'schema_violation',
        message: `The output has more than ${INSTANCE_MAX_NODES} JSON nodes.`,
      };
    if (depth > INSTANCE_MAX_DEPTH)
      return {
        ok: false,
        code: 'schema_violation',
        message: `The output nests deeper than ${INSTANCE_MAX_DEPTH} levels.`,
      };
    if ((nodes & 1023) === 0 && (Date.now() - started > VALIDATION_BUDGET_MS || signal?.aborted)) {
      return { ok: false, code: 'validation_budget', message: 'Validation exceeded its time budget or was cancelled.' };
    }
    if (typeof node === 'object' && node !== null)
      for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return undefined;
}

function parseObject(text: string): ValidationResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'The model output is not valid JSON.' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, code: 'invalid_json', message: 'The model output is not a JSON object.' };
  return { ok: true, value };
}

type AjvValidate = ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null };
let ajv: { compile(schema: Schema): AjvValidate } | undefined;
function loadAjv() {
  if (!ajv) {
    const require = createRequire(import.meta.url);
    const Ajv2020 = require('ajv/dist/2020').default as new (options: object) => {
      compile(schema: Schema): AjvValidate;
    };
    ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  }
  return ajv;
}

export function isValidatorLoaded(): boolean {
  return ajv !== undefined;
}

export function compileTextFormat(
  format: Record<string, unknown> | undefined,
  param = 'text.format.schema',
): CompiledFormat {
  const type = format?.type ?? 'text';
  if (type === 'text') return {};
  if (type === 'json_object')
    return {
      instruction: JSON_OBJECT_INSTRUCTION,
      validator: (text, signal) => {
        const r = parseObject(text);
        return r.ok ? (checkInstance(r.value, signal) ?? r) : r;
      },
    };
  const schema = format!.schema as Schema;
  if (JSON.stringify(schema).length > SCHEMA_MAX_BYTES)
    throw badRequest(param, 'The JSON schema is larger than 64 KiB.', 'schema_too_large');
  const rootTypes = Array.isArray(schema?.type) ? schema.type : [schema?.type];
  if (!rootTypes.includes('object') || rootTypes.length !== 1)
    throw badRequest(`${param}.type`, "The root of a JSON schema must be of type 'object'.", 'invalid_schema');
  checkNode(schema, param, 1, format!.strict === true, { nodes: 0 });
  // `$schema` is an annotation here (zodTextFormat sends draft-07's URI); ajv 2020 would try to resolve it.
  const { $schema: _dialect, ...compilable } = schema;
  const validate = loadAjv().compile(compilable);
  return {
    instruction: JSON_SCHEMA_INSTRUCTION + JSON.stringify(schema),
    validator: (text, signal) => {
      const parsed = parseObject(text);
      if (!parsed.ok) return parsed;
      const limits = checkInstance(parsed.value, signal);
      if (limits) return limits;
      if (validate(parsed.value)) return parsed;
      const first = validate.errors?.[0];
      return {
        ok: false,
        code: 'schema_violation',
        message:
          `The model output does not match the schema: ${first?.instancePath || '/'} ${first?.message ?? ''}`.trim(),
      };
    },
  };
}
