/**
 * Request validation from the contract: each operation's JSON body, query and path parameters
 * are checked against the schemas of openapi/openapi.yaml with ajv (JSON Schema 2020-12, as
 * OpenAPI 3.1 uses). Query values are coerced per schema (`limit=5` → 5, `stream=true` → true,
 * `include[]=a` → ["a"]), defaults are applied, and any query parameter the operation does not
 * declare is a 400 `unknown_parameter`. Failures become one 400 ApiError whose `param` is the
 * offending field's path (`input[0].content`, `tools[1].type`) or the query parameter's name;
 * union errors are narrowed to the branch the value's `type` tag selects (explain-errors.ts).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { badRequest, type ApiError } from '../contract/errors.ts';
import { explainErrors, type SchemaResolver } from './explain-errors.ts';
import { openapiDocument } from '../contract/operations.ts';

export const DOCUMENT_ID = 'openapi.json';

type Json = Record<string, unknown>;
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Json>>;
  components?: Json;
  [key: string]: unknown;
}

/** The contract (openapi/openapi.yaml, generated into generated/openapi-document.ts, reached through contract/operations.ts). */
export const defaultDocument = contractDocument(openapiDocument);

/** The generated document, checked to have the shape the validators read. */
function contractDocument(document: Readonly<Record<string, unknown>>): OpenApiDocument {
  if (typeof document.openapi !== 'string' || typeof document.paths !== 'object' || document.paths === null) {
    throw new Error('generated/openapi-document.ts is not an OpenAPI document (run npm run gen)');
  }
  return document as OpenApiDocument;
}

export interface OperationValidator {
  /** The operation declares a JSON request body. */
  readonly hasBody: boolean;
  readonly isBodyRequired: boolean;
  /** The contract marks the operation `security: []` (no API key needed). */
  readonly isOpen: boolean;
  /** Throws a 400 ApiError unless `body` matches the request body schema. */
  body(body: unknown): void;
  /** The coerced query (defaults applied) or a 400 ApiError. */
  query(raw: Record<string, string | string[] | undefined>): Record<string, unknown>;
  params(raw: Record<string, string>): Record<string, string>;
}

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module.
const formatsModule: unknown = addFormatsModule;
const addFormats = (
  typeof formatsModule === 'function' ? formatsModule : (formatsModule as { default: unknown }).default
) as (ajv: Ajv2020) => Ajv2020;

function createAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false,
    logger: false,
    allErrors: false,
    verbose: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: coerce,
  });
  addFormats(ajv);
  return ajv;
}

/** Deep copy with local refs (`#/components/...`) pointed into the added document. */
export function rebaseRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rebaseRefs);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] =
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#') ? DOCUMENT_ID + inner : rebaseRefs(inner);
  }
  return out;
}

function pointerGet(doc: unknown, ref: string): unknown {
  const hash = ref.indexOf('#');
  const pointer = hash === -1 ? '' : ref.slice(hash + 1);
  let node: unknown = doc;
  for (const raw of pointer.split('/').slice(1)) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = node !== null && typeof node === 'object' ? (node as Json)[part] : undefined;
  }
  return node;
}

/** Follows $ref chains inside the document. */
function deref(doc: OpenApiDocument, node: unknown): unknown {
  let current = node;
  for (let hops = 0; hops < 32; hops++) {
    const ref = current !== null && typeof current === 'object' ? (current as Json).$ref : undefined;
    if (typeof ref !== 'string') return current;
    current = pointerGet(doc, ref);
  }
  return current;
}

function findOperation(doc: OpenApiDocument, operationId: string): { op: Json; pathItem: Json } | undefined {
  for (const pathItem of Object.values(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(pathItem)) {
      if (['get', 'post', 'put', 'delete', 'patch'].includes(method) && op?.operationId === operationId)
        return { op, pathItem };
    }
  }
  return undefined;
}

interface ParameterObject {
  name: string;
  in: string;
  required?: boolean;
  schema?: unknown;
}

function parametersOf(doc: OpenApiDocument, op: Json, pathItem: Json, where: string): ParameterObject[] {
  const all = [...((pathItem.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])];
  return all.map((p) => deref(doc, p) as ParameterObject).filter((p) => p?.in === where);
}

function objectSchema(params: ParameterObject[], isClosed: boolean): Json {
  return {
    type: 'object',
    properties: Object.fromEntries(params.map((p) => [p.name, rebaseRefs(p.schema ?? {})])),
    required: params.filter((p) => p.required === true).map((p) => p.name),
    additionalProperties: !isClosed,
  };
}

/** `include[]=a&include[]=b` (the SDK's bracket style) and repeated names → one array. */
export function normaliseQuery(raw: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [rawName, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const isBracket = rawName.endsWith('[]');
    const name = isBracket ? rawName.slice(0, -2) : rawName;
    const values = Array.isArray(value) ? value : [value];
    const previous = out[name];
    if (previous === undefined) out[name] = isBracket || values.length > 1 ? [...values] : values[0]!;
    else out[name] = [...(Array.isArray(previous) ? previous : [previous]), ...values];
  }
  return out;
}

class Compiled {
  readonly bodyAjv = createAjv(false);
  readonly paramAjv = createAjv(true);
  /** By $ref, or by JSON text for inline branches: bounded by the document's own schemas. */
  private readonly branches = new Map<string, ValidateFunction>();

  constructor(readonly doc: OpenApiDocument) {
    this.bodyAjv.addSchema(doc, DOCUMENT_ID);
    this.paramAjv.addSchema(doc, DOCUMENT_ID);
  }

  /** A validator for one schema node of the document (a union branch while explaining). */
  readonly resolver: SchemaResolver = {
    deref: (node) => deref(this.doc, node),
    compile: (node) => {
      const ref = node !== null && typeof node === 'object' ? (node as Json).$ref : undefined;
      const isRef = typeof ref === 'string' && Object.keys(node as Json).length === 1;
      const key = isRef ? (ref.startsWith('#') ? DOCUMENT_ID + ref : ref) : JSON.stringify(node);
      let fn = this.branches.get(key);
      if (fn === undefined)
        this.branches.set(key, (fn = this.bodyAjv.compile(isRef ? { $ref: key } : (rebaseRefs(node) as Json))));
      return fn;
    },
  };
}

const compiledByDocument = new WeakMap<OpenApiDocument, Map<string, OperationValidator>>();

function failure(fn: ValidateFunction, data: unknown, compiled: Compiled, prefix: string): ApiError {
  return explainErrors(fn, data, compiled.resolver, prefix);
}

function compileOperation(compiled: Compiled, operationId: string): OperationValidator {
  const found = findOperation(compiled.doc, operationId);
  if (found === undefined) throw new Error(`operationId ${operationId} is not in the OpenAPI document`);
  const { op, pathItem } = found;
  const requestBody = deref(compiled.doc, op.requestBody) as Json | undefined;
  const content = requestBody?.content as Record<string, { schema?: unknown }> | undefined;
  const bodySchema = content?.['application/json']?.schema;
  const bodyFn = bodySchema === undefined ? undefined : compiled.resolver.compile(bodySchema);
  const queryFn = compiled.paramAjv.compile(objectSchema(parametersOf(compiled.doc, op, pathItem, 'query'), true));
  const paramsFn = compiled.paramAjv.compile(objectSchema(parametersOf(compiled.doc, op, pathItem, 'path'), false));
  return {
    hasBody: bodyFn !== undefined,
    isBodyRequired: requestBody?.required === true,
    isOpen: Array.isArray(op.security) && op.security.length === 0,
    body(body) {
      if (bodyFn !== undefined && !bodyFn(body)) throw failure(bodyFn, body, compiled, '');
    },
    query(raw) {
      const query: Record<string, unknown> = normaliseQuery(raw);
      if (!queryFn(query)) throw queryFailure(queryFn);
      return query;
    },
    params(raw) {
      const params = { ...raw };
      if (!paramsFn(params)) throw queryFailure(paramsFn);
      return params;
    },
  };
}

/** Query and path errors name the parameter itself (`limit`, `include`), not a JSON path. */
function queryFailure(fn: ValidateFunction): ApiError {
  const error = fn.errors?.[0];
  if (error === undefined) return badRequest(null, 'Invalid query parameters.');
  const params = error.params as { additionalProperty?: string; missingProperty?: string };
  if (error.keyword === 'additionalProperties' && params.additionalProperty !== undefined) {
    return badRequest(
      params.additionalProperty,
      `Unknown parameter: '${params.additionalProperty}'.`,
      'unknown_parameter',
    );
  }
  if (error.keyword === 'required' && params.missingProperty !== undefined) {
    return badRequest(
      params.missingProperty,
      `Missing required parameter: '${params.missingProperty}'.`,
      'missing_required_parameter',
    );
  }
  const name = error.instancePath.split('/')[1] ?? null;
  return badRequest(
    name,
    `Invalid value for '${name}': ${error.message ?? 'invalid'}.`,
    error.keyword === 'type' ? 'invalid_type' : 'invalid_value',
  );
}

/** Validators for every operationId in `ids`, compiled once per document. */
export function compileValidators(doc: OpenApiDocument, ids: readonly string[]): Map<string, OperationValidator> {
  let cache = compiledByDocument.get(doc);
  if (cache === undefined) compiledByDocument.set(doc, (cache = new Map()));
  let compiled: Compiled | undefined;
  for (const id of ids) {
    if (cache.has(id)) continue;
    compiled ??= new Compiled(doc);
    cache.set(id, compileOperation(compiled, id));
  }
  return cache;
}
