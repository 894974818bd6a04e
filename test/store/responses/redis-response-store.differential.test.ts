/**
 * Differential check: the same seeded random operations (chains, branches, deletions, lookups of
 * other scopes' ids, expiry, entry/byte eviction, owner quotas, oversized snapshots) on the
 * in-memory store and the Redis store. Every answer and every counter must be equal, bytes
 * included: the Redis scripts make exactly the memory store's decisions, atomically.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { createRedisClient, openRedis } from '../../../store/redis/redis-connection.ts';
import { MemoryResponseStore } from '../../../store/responses/memory-response-store.ts';
import { RedisResponseStore } from '../../../store/responses/redis-response-store.ts';
import type { ResponseStore } from '../../../store/responses/response-store.ts';
import { sharedRedisUrl, uniquePrefix } from '../../helpers/redis-server.ts';
import { assistantMessage, responseObject, userMessage } from './store-fixtures.ts';

let redis: { url: string; stop: () => Promise<void> };
let client: Redis;

beforeAll(async () => {
  redis = await sharedRedisUrl();
  client = createRedisClient(redis.url);
  await openRedis(client, redis.url);
});

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** What an operation answered, errors included, as comparable JSON. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    return JSON.stringify({ value: (await run()) ?? null });
  } catch (error) {
    const { code, status, param } = error as { code?: string; status?: number; param?: string };
    return JSON.stringify({ error: [code, status, param] });
  }
}

async function compare(
  seed: number,
  overrides: Partial<ResponsesSettings>,
  steps: number,
): Promise<{ evictions: number; expirations: number; rejections: number }> {
  const random = prng(seed);
  let clock = 1_000_000;
  const settings = { ...DEFAULT_RESPONSES_SETTINGS, ...overrides };
  const memory = new MemoryResponseStore({ settings, now: () => clock });
  const shared = new RedisResponseStore({ client, settings, now: () => clock, prefix: uniquePrefix('diff') });
  const ids: string[] = [];
  const scopes = ['s0', 's1', 's2'];
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
  const both = async (label: string, op: (store: ResponseStore) => Promise<unknown>) => {
    const [want, got] = [await outcome(() => op(memory)), await outcome(() => op(shared))];
    expect(got, label).toBe(want);
  };
  for (let step = 0; step < steps; step++) {
    clock += Math.floor(random() * 400);
    const roll = random();
    const scope = pick(scopes);
    const id = `resp_${step}`;
    if (roll < 0.55) {
      const parentId = ids.length > 0 && random() < 0.8 ? pick(ids) : undefined;
      const size = random() < 0.15 ? 9_000 : 20;
      const input = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, n) =>
        userMessage(`msg_${step}_${n}`, `text ${n % 2} ${'x'.repeat(size)}`),
      );
      const output = [assistantMessage(`out_${step}`, random() < 0.5 ? 'same answer' : `answer ${step}`)];
      const vanish = random() < 0.1;
      await both(`put ${id}`, async (store) => {
        const previous = parentId === undefined ? undefined : await store.history(scope, parentId);
        try {
          if (vanish && parentId !== undefined) await store.delete(scope, parentId);
          await store.put(scope, { response: responseObject(id, output), inputItems: input, previous });
          return previous?.items.length ?? -1;
        } finally {
          previous?.release();
        }
      });
      ids.push(id);
    } else if (roll < 0.7) {
      const victim = ids.length > 0 ? pick(ids) : 'resp_none';
      await both(`delete ${victim}`, (store) => store.delete(scope, victim));
    } else if (roll < 0.85) {
      const probe = ids.length > 0 ? pick(ids) : 'resp_none';
      const order = random() < 0.5 ? 'asc' : 'desc';
      const limit = 1 + Math.floor(random() * 4);
      await both(`list ${probe}`, async (store) => {
        const first = await store.listInputItems(scope, probe, { order, limit });
        const after = first?.data.at(-1)?.id;
        return [first, after === undefined ? null : await store.listInputItems(scope, probe, { order, limit, after })];
      });
    } else {
      const probe = ids.length > 0 ? pick(ids) : 'resp_none';
      await both(`get ${probe}`, async (store) => {
        const history = await store.history(scope, probe);
        history?.release();
        return [await store.get(scope, probe), history?.items ?? null, history?.bytes ?? null];
      });
    }
    if (step % 25 === 0) await both(`stats at ${step}`, (store) => store.stats());
  }
  let stats!: Awaited<ReturnType<ResponseStore['stats']>>;
  await both('final stats', async (store) => (stats = await store.stats()));
  return stats;
}

describe('RedisResponseStore against MemoryResponseStore', () => {
  it('agrees without pressure', async () => {
    const stats = await compare(11, { CACHE_ENTRIES: 10_000 }, 300);
    expect(stats.evictions + stats.expirations).toBe(0);
  });

  it('agrees under expiry, entry and byte eviction, owner quotas and oversized snapshots', async () => {
    for (const seed of [12, 13]) {
      const stats = await compare(
        seed,
        {
          CACHE_TTL_S: 3,
          CACHE_ENTRIES: 12,
          CACHE_BYTES: 60_000,
          OWNER_ENTRIES: 6,
          OWNER_BYTES: 30_000,
          ENTRY_BYTES: 25_000,
        },
        300,
      );
      expect(stats.evictions).toBeGreaterThan(0);
      expect(stats.expirations).toBeGreaterThan(0);
      expect(stats.rejections).toBeGreaterThan(0);
    }
  });
});
