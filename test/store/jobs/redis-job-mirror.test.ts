/**
 * RedisJobMirror with two job managers ("replicas") on one real redis-server and scripted runs:
 * the shared event window and its cursor refusals match the owner's own, other scopes see
 * nothing, a cancel from the other replica stops a held run, a replica whose lease lapses
 * has its active tasks failed by the other, and writes Redis lost (as a failover loses the
 * writes its new primary never received) are written again by the owner's heartbeat: events, a
 * whole record, a task's end.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ApiError } from '../../../contract/errors.ts';
import { createRedisClient, openRedis } from '../../../store/redis/redis-connection.ts';
import { RedisJobMirror } from '../../../store/jobs/redis-job-mirror.ts';
import { StoreError } from '../../../store/responses/response-store.ts';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { sharedRedisUrl, uniquePrefix } from '../../helpers/redis-server.ts';
import { collect, createManager, Gate, scriptedTask, type ManagerFixture } from './job-fixtures.ts';

let redis: { url: string; stop: () => Promise<void> };
const clients: Redis[] = [];
let mirrors: RedisJobMirror[] = [];

beforeAll(async () => {
  redis = await sharedRedisUrl();
});

afterEach(async () => {
  for (const mirror of mirrors) await mirror.close();
  mirrors = [];
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await redis?.stop();
});

async function replica(
  prefix: string,
  settings: Partial<ResponsesSettings> = {},
  lease?: { leaseMs: number; heartbeatMs: number },
): Promise<ManagerFixture & { mirror: RedisJobMirror }> {
  const client = createRedisClient(redis.url);
  clients.push(client);
  await openRedis(client, redis.url);
  const fixture = createManager(settings);
  const mirror = new RedisJobMirror({
    client,
    prefix,
    jobs: fixture.jobs,
    settings: { ...DEFAULT_RESPONSES_SETTINGS, ...settings },
    store: fixture.store,
    ...lease,
  });
  await mirror.start();
  mirrors.push(mirror);
  return { ...fixture, mirror };
}

async function until(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: ApiError) => error,
  );
}

describe('RedisJobMirror', () => {
  it('shares the bounded event window: same events, 410 behind it, 400 past it', async () => {
    const prefix = uniquePrefix('jobs');
    const settings = { EVENT_COUNT: 6 };
    const [a, b] = [await replica(prefix, settings), await replica(prefix, settings)];
    const task = scriptedTask({ deltas: 20 });
    const { id } = a.jobs.submit('scope', task.spec);
    await a.mirror.confirmAdmission(id);
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'completed');
    const local = await collect(a.jobs.openStream('scope', id, 17)!);
    const shared = await collect((await b.mirror.openStream('scope', id, 17))!);
    expect(shared).toEqual(local);
    expect(shared.map((event) => event.sequence_number)).toEqual([18, 19, 20, 21, 22, 23]);
    const behind = await refusal(b.mirror.openStream('scope', id, 0));
    expect([behind.status, behind.code, behind.param]).toEqual([410, 'events_expired', 'starting_after']);
    const future = await refusal(b.mirror.openStream('scope', id, 24));
    expect([future.status, future.code]).toEqual([400, 'invalid_cursor']);
    expect(await b.mirror.snapshot('scope', id)).toEqual(a.jobs.snapshot('scope', id));
    expect((await b.mirror.listInputItems('scope', id))?.data).toEqual(task.spec.historyItems);
  });

  it('shows nothing to another scope', async () => {
    const prefix = uniquePrefix('jobs');
    const [a, b] = [await replica(prefix), await replica(prefix)];
    const { id } = a.jobs.submit('scope', scriptedTask().spec);
    await a.mirror.confirmAdmission(id);
    expect(await b.mirror.snapshot('other', id)).toBeUndefined();
    expect(await b.mirror.openStream('other', id, undefined)).toBeUndefined();
    expect(await b.mirror.cancel('other', id)).toBeUndefined();
    expect(await b.mirror.remove('other', id)).toBe(false);
    expect(await b.mirror.listInputItems('other', id)).toBeUndefined();
    expect(await b.mirror.continuationHistory('other', id)).toBeUndefined();
  });

  it("a cancel from the other replica stops the owner's held run", async () => {
    const prefix = uniquePrefix('jobs');
    const [a, b] = [await replica(prefix), await replica(prefix)];
    const gate = new Gate();
    const task = scriptedTask({ deltas: 5, gate });
    const { id } = a.jobs.submit('scope', task.spec);
    await a.mirror.confirmAdmission(id);
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'in_progress');
    const conflict = await refusal(b.mirror.remove('scope', id));
    expect([conflict.status, conflict.code]).toEqual([409, 'response_in_progress']);
    const cancelled = await b.mirror.cancel('scope', id);
    expect(cancelled?.status).toBe('cancelled');
    expect(a.jobs.snapshot('scope', id)?.status).toBe('cancelled');
    expect([task.runs, task.isHolding, task.saved.length]).toEqual([1, false, 0]);
    const events = await collect((await b.mirror.openStream('scope', id, undefined))!);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'response_cancelled' });
    expect(await b.mirror.remove('scope', id)).toBe(true);
    expect(await a.mirror.snapshot('scope', id)).toBeUndefined();
  });

  it('counts stream readers across replicas (STREAM_READERS, STREAM_OWNER_READERS) and frees slots on release', async () => {
    const prefix = uniquePrefix('jobs');
    const settings = { STREAM_READERS: 3, STREAM_OWNER_READERS: 2 };
    const [a, b] = [await replica(prefix, settings), await replica(prefix, settings)];
    const gate = new Gate();
    const mine = a.jobs.submit('scope', scriptedTask({ deltas: 3, gate }).spec).id;
    const theirs = a.jobs.submit('other', scriptedTask({ deltas: 3, gate }).spec).id;
    await a.mirror.confirmAdmission(mine);
    await a.mirror.confirmAdmission(theirs);
    const controller = new AbortController();
    const open = (on: typeof a, scope: string, id: string) =>
      on.mirror.openStream(scope, id, undefined, { signal: controller.signal });
    const held = [await open(a, 'scope', mine), await open(b, 'scope', mine)];
    const owner = await refusal(open(b, 'scope', mine));
    expect([owner.status, owner.code]).toEqual([429, 'too_many_readers']);
    held.push(await open(b, 'other', theirs));
    const global = await refusal(open(a, 'other', theirs));
    expect([global.status, global.message]).toEqual([
      429,
      'Too many background stream readers (3, all replicas); retry later.',
    ]);
    // Reading to the end releases the slot: open the first reader and let its task finish.
    gate.open();
    await collect(held[0]!);
    await until(
      async () =>
        await open(a, 'other', theirs).then(
          (events) => (held.push(events), true),
          () => false,
        ),
    );
    expect(b.jobs.stats()).toMatchObject({ rejections_by_reason: { owner_readers: 1 } });
    expect(a.jobs.stats()).toMatchObject({ rejections_by_reason: { readers: 1 } });
    controller.abort();
  });

  it('fails the active tasks of a replica whose lease lapsed, with a readable error and event', async () => {
    const prefix = uniquePrefix('jobs');
    const lease = { leaseMs: 300, heartbeatMs: 100 };
    const [a, b] = [await replica(prefix, {}, lease), await replica(prefix, {}, lease)];
    const gate = new Gate();
    const { id } = a.jobs.submit('scope', scriptedTask({ deltas: 5, gate }).spec);
    await a.mirror.confirmAdmission(id);
    await a.mirror.close();
    mirrors = mirrors.filter((mirror) => mirror !== a.mirror);
    const started = Date.now();
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'failed', 2_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    const failed = await b.mirror.snapshot('scope', id);
    expect(failed?.error?.message).toContain('lease expired');
    const events = await collect((await b.mirror.openStream('scope', id, undefined))!);
    expect(events.at(-1)).toMatchObject({ type: 'response.failed', response: { status: 'failed' } });
    const continued = await refusal(b.mirror.continuationHistory('scope', id));
    expect([continued.status, continued.param]).toEqual([400, 'previous_response_id']);
    gate.open();
  });
});

/** Rolls the shared record of `id` back to its first `keep` events, as a failover that lost the later writes would. */
async function loseEvents(prefix: string, id: string, keep: number, isEndLost = false): Promise<void> {
  const client = clients[0]!;
  const key = `${prefix}job:${id}`;
  await client.ltrim(`${key}:ev`, 0, keep - 1);
  await client.ltrim(`${key}:eb`, 0, keep - 1);
  const bytes = (await client.lrange(`${key}:eb`, 0, -1)).reduce((sum, n) => sum + Number(n), 0);
  await client.hset(key, 'last', keep - 1, 'bytes', bytes);
  if (isEndLost) {
    await client.hset(key, 'done', 0, 'status', 'in_progress');
    await client.persist(key);
    await client.sadd(`${prefix}jobs:active`, id);
  }
}

describe('writes Redis lost are written again by the owner', () => {
  const lease = { leaseMs: 1_000, heartbeatMs: 50 };

  it('events lost while the task runs: the log is filled from the owner, with no hole', async () => {
    const prefix = uniquePrefix('jobs');
    const [a, b] = [await replica(prefix, {}, lease), await replica(prefix, {}, lease)];
    const gate = new Gate();
    const { id } = a.jobs.submit('scope', scriptedTask({ deltas: 4, gate }).spec);
    await a.mirror.confirmAdmission(id);
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'in_progress');
    await until(async () => Number(await clients[0]!.hget(`${prefix}job:${id}`, 'last')) === 2);
    await loseEvents(prefix, id, 1);
    await until(async () => Number(await clients[0]!.hget(`${prefix}job:${id}`, 'last')) === 2);
    gate.open();
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'completed');
    const shared = await collect((await b.mirror.openStream('scope', id, undefined))!);
    expect(shared).toEqual(await collect(a.jobs.openStream('scope', id, undefined)!));
    expect(shared.map((event) => event.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('a running task whose whole record was lost is admitted again, then ends normally', async () => {
    const prefix = uniquePrefix('jobs');
    const [a, b] = [await replica(prefix, {}, lease), await replica(prefix, {}, lease)];
    const gate = new Gate();
    const { id } = a.jobs.submit('scope', scriptedTask({ deltas: 2, gate }).spec);
    await a.mirror.confirmAdmission(id);
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'in_progress');
    await clients[0]!.del(`${prefix}job:${id}`, `${prefix}job:${id}:ev`, `${prefix}job:${id}:eb`);
    await clients[0]!.srem(`${prefix}jobs:active`, id);
    expect(await b.mirror.snapshot('scope', id)).toBeUndefined();
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'in_progress');
    gate.open();
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'completed');
    const shared = await collect((await b.mirror.openStream('scope', id, undefined))!);
    expect(shared).toEqual(await collect(a.jobs.openStream('scope', id, undefined)!));
  });

  it('a finished task whose end was lost is ended again (never left in_progress), its events whole', async () => {
    const prefix = uniquePrefix('jobs');
    const [a, b] = [await replica(prefix, {}, lease), await replica(prefix, {}, lease)];
    const { id } = a.jobs.submit('scope', scriptedTask({ deltas: 3 }).spec);
    await a.mirror.confirmAdmission(id);
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'completed');
    await loseEvents(prefix, id, 4, true);
    expect((await b.mirror.snapshot('scope', id))?.status).toBe('in_progress');
    await until(async () => (await b.mirror.snapshot('scope', id))?.status === 'completed', 2_000);
    const shared = await collect((await b.mirror.openStream('scope', id, undefined))!);
    expect(shared).toEqual(await collect(a.jobs.openStream('scope', id, undefined)!));
    expect(shared.at(-1)).toMatchObject({ type: 'response.completed' });
    expect(await clients[0]!.sismember(`${prefix}jobs:active`, id)).toBe(0);
  });
});

describe('a background task whose save finds the store unavailable', () => {
  it('fails with a readable server_error, never a silent success', async () => {
    const { jobs } = createManager();
    const task = scriptedTask();
    task.spec.save = async () => {
      throw new StoreError('store_unavailable', 'The response store is unavailable; retry shortly.');
    };
    const { id } = jobs.submit('scope', task.spec);
    const events = await collect(jobs.openStream('scope', id, undefined)!);
    expect(jobs.snapshot('scope', id)).toMatchObject({
      status: 'failed',
      error: { code: 'server_error', message: 'The response store is unavailable; retry shortly.' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'response.failed' });
  });
});
