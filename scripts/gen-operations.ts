/**
 * Writes two files from openapi/openapi.yaml:
 * - generated/operations.ts: the operationId → route table the router binds (method, OpenAPI
 *   path, Koa path, request body schema, how the operation streams, whether it needs a key,
 *   its query and path parameters, its declared statuses, its error envelope);
 * - generated/openapi-document.ts: the document itself as a JSON object, which the server
 *   serves at GET /openapi.json and compiles its validators from (no YAML parsing at run time).
 *
 * Usage: tsx scripts/gen-operations.ts [--root DIR]   (DIR defaults to the repository root)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import YAML from 'yaml';
import { banner, readSpec, rootFromArgs, specSha256 } from './gen-types.ts';

export const OPERATIONS_FILE = 'generated/operations.ts';
export const DOCUMENT_FILE = 'generated/openapi-document.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

interface Ref {
  $ref: string;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
}
interface OperationObject {
  operationId?: string;
  parameters?: (Parameter | Ref)[];
  requestBody?: { content?: Record<string, { schema?: Ref }> };
  responses?: Record<string, { content?: Record<string, unknown> } | Ref>;
  security?: unknown[];
  'x-error-format'?: string;
}
interface Document {
  paths: Record<string, Record<string, unknown>>;
  components?: {
    parameters?: Record<string, Parameter>;
    schemas?: Record<string, { properties?: Record<string, unknown> }>;
  };
}

export interface OperationRow {
  operationId: string;
  method: string;
  path: string;
  koaPath: string;
  requestBody: string | null;
  stream: 'body' | 'query' | null;
  security: boolean;
  query: string[];
  pathParams: string[];
  statuses: number[];
  errorFormat: 'openai' | 'anthropic';
}

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

function resolveParameter(doc: Document, p: Parameter | Ref): Parameter {
  if (!('$ref' in p)) return p;
  const found = doc.components?.parameters?.[refName(p.$ref)];
  if (!found) throw new Error(`unresolved parameter ${p.$ref}`);
  return found;
}

/** '/v1/responses/{response_id}' → '/v1/responses/:response_id' */
export function toKoaPath(openapiPath: string): string {
  return openapiPath.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ':$1');
}

function streamMode(
  doc: Document,
  op: OperationObject,
  requestBody: string | null,
  query: string[],
): OperationRow['stream'] {
  const ok = op.responses?.['200'];
  const sse = !!ok && !('$ref' in ok) && !!ok.content?.['text/event-stream'];
  if (!sse) return null;
  if (requestBody && doc.components?.schemas?.[requestBody]?.properties?.['stream']) return 'body';
  if (query.includes('stream')) return 'query';
  throw new Error(`${op.operationId}: text/event-stream without a stream flag`);
}

/** The error envelope of an operation: `x-error-format: anthropic`, else OpenAI's. */
function errorFormat(op: OperationObject): OperationRow['errorFormat'] {
  const format = op['x-error-format'] ?? 'openai';
  if (format !== 'openai' && format !== 'anthropic')
    throw new Error(`${op.operationId}: x-error-format must be openai or anthropic, not ${format}`);
  return format;
}

/** The table rows, in document order. */
export function operationRows(doc: Document): OperationRow[] {
  const rows: OperationRow[] = [];
  for (const [openapiPath, item] of Object.entries(doc.paths)) {
    const shared = (item['parameters'] as (Parameter | Ref)[] | undefined) ?? [];
    for (const method of METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${openapiPath} has no operationId`);
      const params = [...shared, ...(op.parameters ?? [])].map((p) => resolveParameter(doc, p));
      const bodyRef = op.requestBody?.content?.['application/json']?.schema?.$ref;
      const requestBody = bodyRef ? refName(bodyRef) : null;
      const query = params.filter((p) => p.in === 'query').map((p) => p.name);
      rows.push({
        operationId: op.operationId,
        method,
        path: openapiPath,
        koaPath: toKoaPath(openapiPath),
        requestBody,
        stream: streamMode(doc, op, requestBody, query),
        security: !(Array.isArray(op.security) && op.security.length === 0),
        query,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        statuses: Object.keys(op.responses ?? {})
          .map(Number)
          .sort((a, b) => a - b),
        errorFormat: errorFormat(op),
      });
    }
  }
  const ids = rows.map((r) => r.operationId);
  const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
  if (duplicate) throw new Error(`duplicate operationId ${duplicate}`);
  return rows;
}

function literal(value: unknown): string {
  return JSON.stringify(value).replace(/"/g, "'");
}

function renderRow(row: OperationRow): string {
  const fields = Object.entries(row)
    .filter(([key]) => key !== 'operationId')
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? `[${value.map(literal).join(', ')}]` : literal(value)}`);
  return `  ${row.operationId}: { ${fields.join(', ')} },`;
}

/** Renders generated/operations.ts from the yaml text. */
export function renderOperations(specText: string): string {
  const rows = operationRows(YAML.parse(specText) as Document);
  return [
    banner('scripts/gen-operations.ts', specSha256(specText)).trimEnd(),
    '',
    '/**',
    ' * Every operation of the contract. `path` is the OpenAPI path, `koaPath` the same for',
    ' * @koa/router. `requestBody` names the JSON body schema (components.schemas), `stream` says',
    " * which flag turns the 200 into text/event-stream ('body' → `stream: true` in the body,",
    " * 'query' → `?stream=true`), `security` is false for the public endpoints, `statuses` lists",
    " * the declared response codes, `errorFormat` the error envelope ('anthropic' for the",
    " * operations marked `x-error-format: anthropic`, else OpenAI's).",
    ' */',
    'export const operations = {',
    ...rows.map(renderRow),
    '} as const;',
    '',
    'export type OperationId = keyof typeof operations;',
    'export type Operation = (typeof operations)[OperationId];',
    '',
    'export const operationIds = Object.keys(operations) as OperationId[];',
    '',
  ].join('\n');
}

/** Renders generated/openapi-document.ts (the document as a JSON value) from the yaml text. */
export function renderDocument(specText: string): string {
  const json = JSON.stringify(YAML.parse(specText), null, 2);
  return [
    banner('scripts/gen-operations.ts', specSha256(specText)).trimEnd(),
    '',
    '/** openapi/openapi.yaml as JSON: served at GET /openapi.json and compiled into validators. */',
    `export const openapiDocument: Readonly<Record<string, unknown>> = ${json};`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const root = rootFromArgs(process.argv.slice(2));
  const specText = await readSpec(root);
  await mkdir(path.join(root, 'generated'), { recursive: true });
  await writeFile(path.join(root, OPERATIONS_FILE), renderOperations(specText));
  await writeFile(path.join(root, DOCUMENT_FILE), renderDocument(specText));
  console.log(`wrote ${OPERATIONS_FILE}, ${DOCUMENT_FILE}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
