/**
 * Two real Maya replicas (demo model, real engine) on one real redis-server, A in this process and
 * B a separate `maya serve` process (its own scope secret unless the store shares one): stored responses
 * are one service across them, per-key isolation holds across them, and a lost Redis gives 503
 * with Retry-After to requests that need the store while generation without `store` goes on,
 * until Redis returns.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../cli/serve.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';
import { startLoopbackService } from '../helpers/loopback-service.ts';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.ts';
import { DEMO_MODEL_DIR, waitForReady } from './start-demo-service.ts';
import { freePort } from '../helpers/loopback.ts';

const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));

interface Replica {
  readonly origin: string;
}

const KEYS = ['key-alpha', 'key-beta'];
let redis: RedisServer;
let replicas: RunningService[] = [];
let child: ChildProcess | undefined;

async function replica(): Promise<RunningService> {
  const service = await startLoopbackService({
    server: { apiKeys: KEYS, storeUrl: redis.url, engine: TEST_ENGINE_SETTINGS },
    modelDir: DEMO_MODEL_DIR,
  });
  replicas.push(service);
  await service.loaded;
  return service;
}

/** `maya serve` as its own process on the same Redis. */
async function replicaProcess(): Promise<Replica> {
  const port = await freePort();
  child = spawn(process.execPath, [BIN, 'serve', '--port', String(port)], {
    env: { ...process.env, MAYA_API_KEYS: KEYS.join(','), MAYA_STORE_URL: redis.url },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise((resolve) => child!.once('exit', resolve));
  await waitForReady(child.stderr!, exited);
  return { origin: `http://127.0.0.1:${port}` };
}

function client(service: Replica, key = KEYS[0]!): OpenAI {
  return new OpenAI({ baseURL: `${service.origin}/v1`, apiKey: key, maxRetries: 0 });
}

function post(service: Replica, body: object, key = KEYS[0]!): Promise<Response> {
  return fetch(`${service.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'maya-demo', max_output_tokens: 16, temperature: 0, ...body }),
  });
}

async function status(service: Replica): Promise<{ responses_store: Record<string, unknown> }> {
  return (await fetch(`${service.origin}/v1/status`, { headers: { authorization: `Bearer ${KEYS[0]}` } })).json();
}

let a: RunningService;
let b: Replica;

beforeAll(async () => {
  redis = await startRedisServer();
  [a, b] = await Promise.all([replica(), replicaProcess()]);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  for (const service of replicas) await service.stop().catch(() => {});
  replicas = [];
  await redis?.stop();
});

describe('two replicas on one Redis', () => {
  it('a response created on A is continued, listed, retrieved and deleted on B', async () => {
    const first = await client(a).responses.create({
      model: 'maya-demo',
      input: 'Remember the value 73',
      store: true,
      max_output_tokens: 16,
      temperature: 0,
    });
    const second = await client(b).responses.create({
      model: 'maya-demo',
      previous_response_id: first.id,
      input: 'What value did I give you?',
      store: true,
      max_output_tokens: 16,
      temperature: 0,
    });
    expect(second.status).toMatch(/completed|incomplete/);
    const items = await client(a).responses.inputItems.list(second.id, { order: 'asc' });
    expect(items.data.map((item) => item.type)).toEqual([
      'message',
      ...first.output.map((item) => item.type),
      'message',
    ]);
    expect(JSON.stringify(items.data)).toContain('Remember the value 73');
    expect((await client(b).responses.retrieve(first.id)).output).toEqual(first.output);
    await client(b).responses.delete(first.id);
    await expect(client(a).responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    // The descendant keeps its whole history after its ancestor's deletion, on either replica.
    expect((await client(a).responses.inputItems.list(second.id, { order: 'asc' })).data).toEqual(items.data);
  });

  it('isolates keys across replicas: another key gets 404 on every operation', async () => {
    const mine = await client(a).responses.create({
      model: 'maya-demo',
      input: 'private',
      store: true,
      max_output_tokens: 16,
      temperature: 0,
    });
    const theirs = client(b, KEYS[1]);
    await expect(theirs.responses.retrieve(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.inputItems.list(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.delete(mine.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      theirs.responses.create({
        model: 'maya-demo',
        input: 'x',
        previous_response_id: mine.id,
        store: true,
        max_output_tokens: 16,
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect((await client(b).responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('/v1/status and metrics name the backend and its health', async () => {
    expect((await status(a)).responses_store).toMatchObject({ backend: 'redis', healthy: true });
    const metrics = await (await fetch(`${b.origin}/metrics/prometheus`)).text();
    expect(metrics).toContain('maya:responses_store_info{backend="redis"} 1');
    expect(metrics).toContain('maya:responses_store_up 1');
    expect(metrics).not.toContain(String(redis.port));
  });
});

describe('Redis lost during operation', () => {
  it('503 with Retry-After for store-needing requests, generation without store goes on, recovery after Redis returns', async () => {
    const kept = await (await post(a, { input: 'before the outage', store: true })).json();
    expect(kept.status).toMatch(/completed|incomplete/);
    await redis.stop();

    const stored = await post(a, { input: 'store me', store: true });
    expect(stored.status).toBe(503);
    expect(stored.headers.get('retry-after')).toBe('1');
    expect((await stored.json()).error).toEqual({
      message: 'The response store is unavailable; retry shortly.',
      type: 'server_error',
      param: null,
      code: 'store_unavailable',
    });
    const retrieve = await fetch(`${b.origin}/v1/responses/${kept.id}`, {
      headers: { authorization: `Bearer ${KEYS[0]}` },
    });
    expect([retrieve.status, retrieve.headers.get('retry-after')]).toEqual([503, '1']);
    const continued = await post(b, { input: 'more', previous_response_id: kept.id, store: false });
    expect(continued.status).toBe(503);

    const background = await post(a, { input: 'later', store: true, background: true });
    expect([background.status, background.headers.get('retry-after')]).toEqual([503, '1']);
    const attached = await post(a, { input: 'later', store: true, background: true, stream: true });
    expect([attached.status, attached.headers.get('retry-after')]).toEqual([503, '1']);
    expect(a.deps.jobs!.readers.count).toBe(0);
    expect(a.deps.jobs!.stats()).toMatchObject({ queued: 0, running: 0 });

    const plain = await post(a, { input: 'no store needed', store: false });
    expect(plain.status).toBe(200);
    expect((await plain.json()).status).toMatch(/completed|incomplete/);
    const health = await status(a);
    expect(health.responses_store).toMatchObject({ backend: 'redis', healthy: false });
    expect(await (await fetch(`${a.origin}/metrics/prometheus`)).text()).toContain('maya:responses_store_up 0');

    await redis.restart();
    let recovered: Response | undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      recovered = await post(a, { input: 'after the outage', store: true });
      if (recovered.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(recovered?.status).toBe(200);
    const body = await recovered!.json();
    const again = await fetch(`${b.origin}/v1/responses/${body.id}`, {
      headers: { authorization: `Bearer ${KEYS[0]}` },
    });
    expect(again.status).toBe(200);
    expect((await status(b)).responses_store).toMatchObject({ healthy: true });
  });
});
