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
import { MAX_BODY_DEPTH, parseBody, type ParsedBody } from './json-body.ts';

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
  const parsed = raw.length >= OFF_THREAD_BODY_BYTES ? await parseOffThread(raw) : parseBody(raw);
  switch (parsed.kind) {
    case 'empty':
      return undefined;
    case 'invalid':
      // A fixed message: parser messages differ between Node and Bun and may quote the body.
      throw badRequest(
        null,
        'We could not parse the JSON body of your request. It must be valid JSON.',
        'invalid_json',
      );
    case 'too_deep':
      throw badRequest(
        parsed.path || null,
        `The request body nests deeper than ${MAX_BODY_DEPTH} levels.`,
        'nested_too_deep',
      );
    case 'value': {
      const value = parsed.value;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw badRequest(null, 'The request body must be a JSON object.', 'invalid_type');
      }
      return value as Record<string, unknown>;
    }
  }
}

interface JsonWorker {
  worker: Worker;
  jobs: Map<number, { resolve: (parsed: ParsedBody) => void; reject: (error: Error) => void }>;
}
let current: JsonWorker | undefined;
let nextJob = 1;

/** parseBody on the JSON worker (started on first use, shared, never blocking exit; replaced if it dies). */
function parseOffThread(raw: Buffer): Promise<ParsedBody> {
  if (!current) {
    const started: JsonWorker = {
      worker: startModuleWorker(new URL('./json-worker.ts', import.meta.url), null),
      jobs: new Map(),
    };
    started.worker.unref();
    started.worker.on('message', (msg: { id: number; parsed: ParsedBody }) => {
      started.jobs.get(msg.id)?.resolve(msg.parsed);
      started.jobs.delete(msg.id);
    });
    // A worker that fails or dies fails its own jobs (a server error, not the client's) and only
    // its own: a worker started after it keeps its jobs.
    const fail = () => {
      for (const job of started.jobs.values()) job.reject(new Error('the JSON body worker failed'));
      started.jobs.clear();
      if (current === started) current = undefined;
    };
    started.worker.on('error', fail);
    started.worker.on('messageerror', fail);
    started.worker.on('exit', fail);
    current = started;
  }
  const target = current;
  const id = nextJob++;
  // Transfer the body's own memory when it has it whole (large Buffer.concat results do); else copy.
  const owned = raw.byteOffset === 0 && raw.buffer.byteLength === raw.length && raw.buffer instanceof ArrayBuffer;
  const bytes = owned ? new Uint8Array(raw.buffer as ArrayBuffer) : new Uint8Array(raw);
  return new Promise((resolve, reject) => {
    target.jobs.set(id, { resolve, reject });
    target.worker.postMessage({ id, bytes }, [bytes.buffer]);
  });
}
