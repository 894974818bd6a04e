/**
 * Background tasks across two replicas on one real redis-server (demo model, real engine). A runs
 * in this process with its engine's tokens paced (30 ms each, the real engine's own tokens, and in
 * the cancel test the finish held until the cancel) so a task is still generating while the other
 * replica acts, however short the model's answer; B and C are separate `maya serve`
 * processes. Shows: a task started on A is retrieved, streamed with starting_after and cancelled
 * from B (A stops it); a finished task streams whole from B and is continued and deleted there;
 * killing C with tasks in flight gets them marked failed on B within the lease time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LoadModelRuntime, RunningService } from '../../cli/serve.ts';
import type { FinishInfo, GenerateOptions, GenerateRequest, TokenEvent } from '../../engine-cuda/engine.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';
import { startLoopbackService } from '../helpers/loopback-service.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import { HEARTBEAT_MS, LEASE_MS } from '../../store/jobs/redis-job-mirror.ts';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.ts';
import { DEMO_MODEL_DIR, waitForReady } from './start-demo-service.ts';
import { freePort } from '../helpers/loopback.ts';

const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));
const KEY = 'key-tasks';
const LONG_INPUT = 'Tell me everything you know about the history of Rome.';
const TOKEN_DELAY_MS = 30;

interface Replica {
  readonly origin: string;
  readonly child?: ChildProcess;
}

type Event = {
  type: string;
  sequence_number: number;
  code?: string;
  response?: { status: string; error?: { message: string } };
};

let redis: RedisServer;
let inProcess: RunningService | undefined;
const children: ChildProcess[] = [];
let a: Replica;
let b: Replica;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * While set, A's generations hold their finish until the task is cancelled (HOLD_MAX_MS at most), so
 * the cancel test's task is still running when B cancels it, however short the model's answer.
 */
let holdFinish = false;
const HOLD_MAX_MS = 20_000;

function aborted(signal: AbortSignal | undefined, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (!signal || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/** The real runtime; its engine's tokens arrive TOKEN_DELAY_MS apart (and, with holdFinish, its finish late). */
const pacedRuntime: LoadModelRuntime = async (dir, options) => {
  const runtime = await loadModelRuntime(dir, options);
  const generate = runtime.engine.generate.bind(runtime.engine);
  runtime.engine.generate = async function* (
    request: GenerateRequest,
    opts?: GenerateOptions,
  ): AsyncGenerator<TokenEvent, FinishInfo, void> {
    const inner = generate(request, opts);
    try {
      for (;;) {
        const step = await inner.next();
        if (step.done) {
          if (holdFinish) await aborted(opts?.signal, HOLD_MAX_MS);
          return step.value;
        }
        await sleep(TOKEN_DELAY_MS);
        yield step.value;
      }
    } finally {
      await inner.return(undefined as never);
    }
  };
  return runtime;
};

async function replicaProcess(env: Record<string, string> = {}): Promise<Replica> {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port)], {
    env: { ...process.env, MAYA_API_KEYS: KEY, MAYA_STORE_URL: redis.url, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitForReady(child.stderr!, exited);
  return { origin: `http://127.0.0.1:${port}`, child };
}

function call(replica: Replica, method: string, path: string, body?: object): Promise<Response> {
  return fetch(`${replica.origin}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

async function startTask(replica: Replica, input = LONG_INPUT): Promise<string> {
  const created = await call(replica, 'POST', '/responses', {
    model: 'maya-demo',
    input,
    background: true,
    store: true,
    temperature: 0,
    max_output_tokens: 256,
  });
  expect(created.status).toBe(200);
  const body = (await created.json()) as { id: string; status: string };
  expect(body.status).toBe('queued');
  return body.id;
}

/** SSE events of a response, as they arrive. */
async function* events(response: Response): AsyncGenerator<Event> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      const data = frame
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice(6);
      if (data && data !== '[DONE]') yield JSON.parse(data) as Event;
    }
  }
}

async function statusOf(replica: Replica, id: string): Promise<{ status: string; error?: { message: string } | null }> {
  return (await call(replica, 'GET', `/responses/${id}`)).json();
}

beforeAll(async () => {
  redis = await startRedisServer();
  const [service, other] = await Promise.all([
    startLoopbackService({
      server: { apiKeys: [KEY], storeUrl: redis.url, engine: TEST_ENGINE_SETTINGS },
      modelDir: DEMO_MODEL_DIR,
      loadRuntime: pacedRuntime,
    }),
    replicaProcess(),
  ]);
  inProcess = service;
  await service.loaded;
  a = { origin: service.origin };
  b = other;
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await inProcess?.stop().catch(() => {});
  await redis?.stop();
});

describe('background tasks across replicas', () => {
  afterEach(() => {
    holdFinish = false;
  });

  it('a task running on A is retrieved, streamed with starting_after and cancelled from B; A stops it', async () => {
    holdFinish = true;
    const id = await startTask(a);
    expect(['queued', 'in_progress']).toContain((await statusOf(b, id)).status);
    const stream = await call(b, 'GET', `/responses/${id}?stream=true&starting_after=1`);
    expect(stream.status).toBe(200);
    const seen: Event[] = [];
    const reader = events(stream);
    for await (const event of reader) {
      seen.push(event);
      if (seen.some((e) => e.type === 'response.output_text.delta')) break;
    }
    expect(seen[0]!.sequence_number).toBe(2);
    seen.forEach((event, n) => expect(event.sequence_number).toBe(2 + n));

    const resumed = await call(b, 'GET', `/responses/${id}?stream=true&starting_after=${seen.at(-1)!.sequence_number}`);
    const cancelled = await call(b, 'POST', `/responses/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled');
    const rest: Event[] = [];
    for await (const event of events(resumed)) rest.push(event);
    expect(rest[0]!.sequence_number).toBe(seen.at(-1)!.sequence_number + 1);
    expect(rest.at(-1)).toMatchObject({ type: 'error', code: 'response_cancelled' });
    expect(rest.some((event) => event.type === 'response.completed')).toBe(false);
    // A's own worker ended the run: no task is running there, and A reports cancelled too.
    expect((await statusOf(a, id)).status).toBe('cancelled');
    expect(inProcess!.deps.jobs!.stats()).toMatchObject({ running: 0, queued: 0 });
    expect((await call(b, 'DELETE', `/responses/${id}`)).status).toBe(200);
    expect((await call(a, 'GET', `/responses/${id}`)).status).toBe(404);
  });

  it('a finished task streams whole from B, is continued there and deleted; active tasks cannot be deleted', async () => {
    const id = await startTask(a, 'Hello');
    expect((await call(b, 'DELETE', `/responses/${id}`)).status).toBe(409);
    const all: Event[] = [];
    for await (const event of events(await call(b, 'GET', `/responses/${id}?stream=true`))) all.push(event);
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, n) => n));
    expect(all[0]!.type).toBe('response.created');
    expect(all.at(-1)!.type).toMatch(/response\.(completed|incomplete)/);
    const next = await call(b, 'POST', '/responses', {
      model: 'maya-demo',
      input: 'And then?',
      previous_response_id: id,
      store: true,
      max_output_tokens: 16,
    });
    expect(next.status).toBe(200);
    const items = (await (
      await call(a, 'GET', `/responses/${((await next.json()) as { id: string }).id}/input_items?order=asc`)
    ).json()) as { data: { type: string }[] };
    expect(items.data[0]).toMatchObject({ type: 'message' });
    expect(JSON.stringify(items.data)).toContain('Hello');
    expect((await call(b, 'DELETE', `/responses/${id}`)).status).toBe(200);
    expect((await call(a, 'GET', `/responses/${id}`)).status).toBe(404);
  });

  it('killing the replica that runs tasks gets them marked failed on another within the lease time', async () => {
    const c = await replicaProcess({ MAYA_GLM_RESPONSES_JOB_WORKERS: '1' });
    const ids = [];
    for (let n = 0; n < 4; n++) ids.push(await startTask(c));
    c.child!.kill('SIGKILL');
    const killedAt = Date.now();
    const before = await Promise.all(ids.map((id) => statusOf(b, id)));
    const active = ids.filter((_, n) => ['queued', 'in_progress'].includes(before[n]!.status));
    expect(active.length).toBeGreaterThan(0);
    for (const id of active) {
      let state = await statusOf(b, id);
      while (state.status !== 'failed' && Date.now() - killedAt < LEASE_MS + HEARTBEAT_MS + 3_000) {
        await sleep(100);
        state = await statusOf(b, id);
      }
      expect(state.status).toBe('failed');
      expect(state.error?.message).toContain('lease expired');
    }
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + HEARTBEAT_MS + 3_000);
    const tail: Event[] = [];
    for await (const event of events(await call(b, 'GET', `/responses/${active[0]}?stream=true`))) tail.push(event);
    expect(tail.at(-1)).toMatchObject({ type: 'response.failed', response: { status: 'failed' } });
  });
});
