/**
 * Request body reading: at most `limit` bytes (413 beyond, checked against Content-Length first
 * and again while reading), then JSON (a leading UTF-8 byte-order mark is allowed). Malformed
 * JSON → 400 `invalid_json`; a JSON value that is not an object → 400 `invalid_type`; nesting
 * deeper than MAX_BODY_DEPTH → 400 `nested_too_deep`, checked iteratively before anything else
 * walks the body (schemas, templates and validators recurse). The Content-Type is not checked:
 * `curl -d` sends x-www-form-urlencoded by default and every body Maya accepts is JSON.
 */
import type { Worker } from 'node:worker_threads';
import type { IncomingMessage } from 'node:http';
import { badRequest, tooLarge } from '../contract/errors.ts';
import { startModuleWorker } from '../engine-cuda/module-worker.ts';

/** Bodies at least this large are decoded and parsed on a worker thread (json-worker.ts). */
export const OFF_THREAD_BODY_BYTES = 1024 * 1024;

function limitError(limit: number): Error {
  return tooLarge(`Request body is larger than the server's limit of ${limit} bytes (MAYA_MAX_BODY_BYTES).`);
}

export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw limitError(limit);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limit) {
      req.resume();
      throw limitError(limit);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/** The parsed JSON object, or undefined for an empty body. */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown> | undefined> {
  const raw = await readRawBody(req, limit);
  const parsed = raw.length >= OFF_THREAD_BODY_BYTES ? await parseOffThread(raw) : parseHere(raw);
  // A fixed message: parser messages differ between Node and Bun and may quote the body.
  if (parsed === INVALID)
    throw badRequest(null, 'We could not parse the JSON body of your request. It must be valid JSON.', 'invalid_json');
  if (parsed === EMPTY) return undefined;
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest(null, 'The request body must be a JSON object.', 'invalid_type');
  }
  checkDepth(value);
  return value as Record<string, unknown>;
}

const INVALID = Symbol('invalid');
const EMPTY = Symbol('empty');
type Parsed = typeof INVALID | typeof EMPTY | { value: unknown };

function parseHere(raw: Buffer): Parsed {
  const text = raw.toString('utf8').replace(/^\uFEFF/, '');
  if (text.trim() === '') return EMPTY;
  try {
    return { value: JSON.parse(text) };
  } catch {
    return INVALID;
  }
}

let jsonWorker: Worker | undefined;
let nextJob = 1;
const jobs = new Map<number, (parsed: Parsed) => void>();

/** The same as parseHere on the JSON worker (started on first use, shared, never blocking exit). */
function parseOffThread(raw: Buffer): Promise<Parsed> {
  if (!jsonWorker) {
    const worker = startModuleWorker(new URL('./json-worker.ts', import.meta.url), null);
    worker.unref();
    worker.on('message', (msg: { id: number; error?: true; empty?: boolean; value?: unknown }) => {
      jobs.get(msg.id)?.(msg.error ? INVALID : msg.empty ? EMPTY : { value: msg.value });
      jobs.delete(msg.id);
    });
    const fail = () => {
      for (const done of jobs.values()) done(INVALID);
      jobs.clear();
      jsonWorker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    jsonWorker = worker;
  }
  const id = nextJob++;
  // Transfer the body's own memory when it has it whole (large Buffer.concat results do); else copy.
  const owned = raw.byteOffset === 0 && raw.buffer.byteLength === raw.length && raw.buffer instanceof ArrayBuffer;
  const bytes = owned ? new Uint8Array(raw.buffer as ArrayBuffer) : new Uint8Array(raw);
  return new Promise((resolve) => {
    jobs.set(id, resolve);
    jsonWorker!.postMessage({ id, bytes }, [bytes.buffer]);
  });
}

/**
 * Deepest nesting of objects/arrays a body may have. The deepest legitimate bodies are schemas
 * (the spec allows 24 schema levels, each a `properties.<name>` pair) inside `text.format` or
 * `tools[i].parameters`: well under 64.
 */
export const MAX_BODY_DEPTH = 64;

/** Throws 400 `nested_too_deep` naming the path where the body passes MAX_BODY_DEPTH. */
function checkDepth(body: object): void {
  const stack: Array<[unknown, number, string]> = [[body, 0, '']];
  while (stack.length > 0) {
    const [node, depth, path] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_BODY_DEPTH) {
      throw badRequest(path || null, `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`, 'nested_too_deep');
    }
    if (Array.isArray(node)) node.forEach((child, i) => stack.push([child, depth + 1, `${path}[${i}]`]));
    else for (const [key, child] of Object.entries(node)) stack.push([child, depth + 1, path ? `${path}.${key}` : key]);
  }
}
