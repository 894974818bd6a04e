/**
 * The RedisResponseStore against a real redis-server (test/helpers/redis-server.ts): the same
 * contract suite as the in-memory store, then what only a shared store has to show: two
 * replicas' stores on one Redis agree, limits hold under concurrent writers, every key is freed
 * when the last response goes, and key names carry no scope secret or prompt text; with
 * replicas to wait for, a write none confirmed is refused.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { createRedisClient, openRedis, STORE_WAIT_MS } from '../../../store/redis/redis-connection.ts';
import { RedisResponseStore } from '../../../store/responses/redis-response-store.ts';
import type { StoreError } from '../../../store/responses/response-store.ts';
import { sharedRedisUrl, startRedisServer, uniquePrefix } from '../../helpers/redis-server.ts';
import { jsonBytes, makeTurn, storeChain, storeTurn } from './store-fixtures.ts';
import { runStoreContract } from './store.contract.ts';

let redis: { url: string; stop: () => Promise<void> };
let client: Redis;
let other: Redis;

beforeAll(async () => {
  redis = await sharedRedisUrl();
  client = createRedisClient(redis.url);
  other = createRedisClient(redis.url);
  await openRedis(client, redis.url);
  await openRedis(other, redis.url);
});

afterAll(async () => {
  client?.disconnect();
  other?.disconnect();
  await redis?.stop();
});

function makeStore(settings: Partial<ResponsesSettings> = {}, prefix = uniquePrefix('store'), on: Redis = client) {
  return new RedisResponseStore({ client: on, settings: { ...DEFAULT_RESPONSES_SETTINGS, ...settings }, prefix });
}

async function keysUnder(prefix: string): Promise<string[]> {
  return (await client.keys(`${prefix}*`)).map((key) => key.slice(prefix.length)).sort();
}

describe('RedisResponseStore', () => {
  runStoreContract((options) => new RedisResponseStore({ client, ...options, prefix: uniquePrefix('contract') }));
});

describe('RedisResponseStore across replicas', () => {
  it("serves one replica's responses to another, continuation and deletion included", async () => {
    const prefix = uniquePrefix('replicas');
    const a = makeStore({}, prefix, client);
    const b = makeStore({}, prefix, other);
    const turns = await storeChain(a, 'scope', 'r', 2);
    const next = makeTurn('r', 2);
    await storeTurn(b, 'scope', next, turns[1]!.id);
    expect(await a.get('scope', next.id)).toEqual(next.response);
    expect((await a.listInputItems('scope', next.id, { order: 'asc' }))?.data.map((item) => item.id)).toEqual([
      'msg_r_in_0',
      'msg_r_out_0',
      'msg_r_in_1',
      'msg_r_out_1',
      'msg_r_in_2',
    ]);
    expect(await b.delete('scope', turns[0]!.id)).toBe(true);
    expect(await a.get('scope', turns[0]!.id)).toBeUndefined();
    expect(await a.get('other-scope', next.id)).toBeUndefined();
  });

  it('keeps CACHE_ENTRIES and OWNER_ENTRIES under concurrent writers on two connections', async () => {
    const prefix = uniquePrefix('race');
    const a = makeStore({ CACHE_ENTRIES: 10, OWNER_ENTRIES: 4 }, prefix, client);
    const b = makeStore({ CACHE_ENTRIES: 10, OWNER_ENTRIES: 4 }, prefix, other);
    const writes = [];
    for (let n = 0; n < 60; n++) writes.push(storeTurn(n % 2 === 0 ? a : b, `scope-${n % 4}`, makeTurn(`w${n}`, 0)));
    await Promise.all(writes);
    const stats = await a.stats();
    expect(stats.entries).toBe(10);
    for (const scope of [0, 1, 2, 3]) {
      const owned = await client.hget(`${prefix}s:scope-${scope}`, 'entries');
      expect(Number(owned)).toBeLessThanOrEqual(4);
    }
    // The shared byte figure equals a recount of what is stored.
    let expected = 0;
    for (let n = 0; n < 60; n++) {
      const turn = makeTurn(`w${n}`, 0);
      if (!(await a.get(`scope-${n % 4}`, turn.id))) continue;
      expected +=
        jsonBytes(turn.input[0]) + jsonBytes(turn.output[0]) + jsonBytes({ ...turn.response, output: [] }) + 2 * 8 + 16;
    }
    expect((await a.stats()).bytes).toBe(expected);
  });

  it('frees every key of a response once the last one is gone, and names no content or secret', async () => {
    const prefix = uniquePrefix('keys');
    const store = makeStore({}, prefix);
    const turns = await storeChain(store, 'key_0123abcd', 'secretprompt', 4);
    await storeTurn(store, 'key_0123abcd', makeTurn('branch', 9), turns[1]!.id);
    const names = await keysUnder(prefix);
    expect(names.join(' ')).not.toMatch(/secretprompt|turn|answer/);
    for (const id of [...turns.map((turn) => turn.id), 'resp_branch_9'])
      expect(await store.delete('key_0123abcd', id)).toBe(true);
    expect(await keysUnder(prefix)).toEqual(['g', 'seq', 'tick']);
    const counters = await client.hgetall(`${prefix}g`);
    expect(Object.values(counters).every((value) => value === '0')).toBe(true);
  });

  it("expires by Redis's own clock when no clock is injected", async () => {
    const store = makeStore({ CACHE_TTL_S: 1 });
    await storeTurn(store, 'scope', makeTurn('clock', 0));
    expect(await store.get('scope', 'resp_clock_0')).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await store.get('scope', 'resp_clock_0')).toBeUndefined();
    expect((await store.stats()).expirations).toBe(1);
  });
});

describe('RedisResponseStore waiting for Redis replicas (MAYA_STORE_WAIT_REPLICAS)', () => {
  it('a write no replica confirmed within STORE_WAIT_MS is 503 store_unavailable', async () => {
    const server = await startRedisServer();
    const [reader, writer] = [createRedisClient(server.url), createRedisClient(server.url)];
    try {
      await openRedis(reader, server.url);
      await openRedis(writer, server.url);
      const store = new RedisResponseStore({
        client: reader,
        settings: DEFAULT_RESPONSES_SETTINGS,
        prefix: uniquePrefix('wait'),
        durable: { client: writer, replicas: 1 },
      });
      const turn = makeTurn('wait', 0);
      const started = Date.now();
      const refused = await storeTurn(store, 'scope', turn).then(
        () => undefined,
        (error: StoreError) => error,
      );
      expect([refused?.status, refused?.code]).toEqual([503, 'store_unavailable']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(STORE_WAIT_MS - 50);
      // The write itself reached this lone primary; it is just never reported stored.
      expect(await store.get('scope', turn.id)).toEqual(turn.response);
    } finally {
      reader.disconnect();
      writer.disconnect();
      await server.stop();
    }
  });
});
