/**
 * Test helper: openapi/openapi.yaml compiled with ajv's JSON Schema 2020-12 validator in strict
 * mode, with the discriminator keyword on (so ajv also checks that every discriminated union
 * has an exclusive, required tag). ajv rejects `discriminator.mapping`, which only serves type
 * generators; it is dropped from this copy.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import YAML from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SPEC_PATH = path.join(ROOT, 'openapi/openapi.yaml');

type Json = Record<string, unknown>;
export interface Document {
  openapi: string;
  info: Json;
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json>; parameters: Record<string, Json>; [key: string]: unknown };
}

export function loadDocument(): Document {
  return YAML.parse(readFileSync(SPEC_PATH, 'utf8')) as Document;
}

function withoutMappings(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutMappings);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'mapping')
      .map(([key, inner]) => [key, withoutMappings(inner)]),
  );
}

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

/**
 * Strict mode uses ajv's discriminator keyword; lenient mode (`strict:false`, discriminator
 * ignored, as handlers/validation.ts configures ajv) must reach the same verdicts because every
 * discriminated union's branches are exclusive by their tag enums.
 */
export function createContractAjv(doc: Document = loadDocument(), mode: 'strict' | 'lenient' = 'strict'): Ajv2020 {
  const ajv = mode === 'strict' ? new Ajv2020({ strict: true, discriminator: true, allErrors: true }) : new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  if (mode === 'strict') ajv.addKeyword('components');
  ajv.addSchema({ components: mode === 'strict' ? withoutMappings(doc.components) : doc.components }, 'contract');
  return ajv;
}

let shared: Ajv2020 | undefined;
let lenient: Ajv2020 | undefined;

/** The validator of components.schemas[name]. */
export function schemaValidator(name: string, mode: 'strict' | 'lenient' = 'strict'): ValidateFunction {
  const ajv = mode === 'strict' ? (shared ??= createContractAjv()) : (lenient ??= createContractAjv(loadDocument(), 'lenient'));
  const validate = ajv.getSchema(`contract#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name}`);
  return validate;
}

/** The validator of one query/path parameter of an operation. */
export function parameterValidator(doc: Document, operationId: string, name: string): ValidateFunction {
  shared ??= createContractAjv();
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) {
      if (op?.operationId !== operationId) continue;
      const params = [...((item.parameters as unknown as Json[] | undefined) ?? []), ...((op.parameters as Json[] | undefined) ?? [])].map((p) =>
        typeof p.$ref === 'string' ? doc.components.parameters[p.$ref.split('/').pop()!]! : p,
      );
      const param = params.find((p) => p.name === name);
      if (!param) throw new Error(`${operationId} has no parameter ${name}`);
      const schema = JSON.parse(JSON.stringify(param.schema).replaceAll('"#/components/', '"contract#/components/')) as Json;
      return shared.compile(schema);
    }
  }
  throw new Error(`no operation ${operationId}`);
}

/** Errors as "instancePath message" lines, for assertion messages. */
export function errorsOf(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}
