/**
 * Randomised check of the shared-spine store against a reference that copies every history:
 * chains, branches, deletions, expiry and evictions over three scopes. Seeded, so a failure
 * replays exactly.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { MemoryResponseStore } from '../../../store/responses/memory-response-store.ts';
import { StoreError, type StoredItem } from '../../../store/responses/response-store.ts';
import { assistantMessage, jsonBytes, responseObject, userMessage } from './store-fixtures.ts';

interface Expected {
  scope: string;
  input: StoredItem[];
  output: StoredItem[];
}

function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Runs `steps` random operations; returns the counters of the store. */
async function run(seed: number, overrides: Partial<ResponsesSettings>, steps: number) {
  const random = prng(seed);
  const pick = <T>(values: readonly T[]): T | undefined => values[Math.floor(random() * values.length)];
  let clock = 0;
  const settings = { ...DEFAULT_RESPONSES_SETTINGS, ...overrides };
  const store = new MemoryResponseStore({ settings, now: () => clock });
  const expected = new Map<string, Expected>();
  const scopes = ['s0', 's1', 's2'];
  let rejections = 0;
  for (let step = 0; step < steps; step++) {
    clock += Math.floor(random() * 400);
    await forgetRemoved();
    const roll = random();
    const id = `resp_${step}`;
    if (roll < 0.6) {
      const scope = pick(scopes)!;
      const parentId =
        random() < 0.8 ? pick([...expected.keys()].filter((key) => expected.get(key)!.scope === scope)) : undefined;
      const previous = parentId === undefined ? undefined : await store.history(scope, parentId);
      const base = previous ? [...previous.items] : [];
      // Repeated text on purpose: equal content under different ids must stay distinct items.
      const input = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, n) =>
        userMessage(`msg_${step}_${n}`, `text ${n % 2}`),
      );
      const output = [assistantMessage(`out_${step}`, random() < 0.5 ? 'same answer' : `answer ${step}`)];
      try {
        await store.put(scope, { response: responseObject(id, output), inputItems: input, previous });
        expected.set(id, { scope, input: [...base, ...input], output });
      } catch (error) {
        if (!(error instanceof StoreError) || error.code !== 'snapshot_too_large') throw error;
        rejections++;
      } finally {
        previous?.release();
      }
    } else if (roll < 0.8) {
      const victim = pick([...expected.keys()]);
      if (victim !== undefined) {
        const owner = expected.get(victim)!.scope;
        const target = random() < 0.8 ? owner : pick(scopes.filter((name) => name !== owner))!;
        expect(await store.delete(target, victim)).toBe(target === owner);
      }
    } else {
      const probe = pick([...expected.keys()]);
      if (probe !== undefined) await check(probe);
    }
  }
  await forgetRemoved();

  /** Drops what expiry or eviction removed; reading in random order keeps LRU order random. */
  async function forgetRemoved(): Promise<void> {
    const keys = [...expected.keys()].sort(() => random() - 0.5);
    for (const key of keys) if (!(await store.get(expected.get(key)!.scope, key))) expected.delete(key);
  }

  async function check(id: string): Promise<void> {
    const want = expected.get(id)!;
    const page = await store.listInputItems(want.scope, id, { order: 'asc', limit: 100 });
    if (!page) return;
    expect(page.data).toEqual(want.input.slice(0, 100));
    const history = await store.history(want.scope, id);
    history?.release();
    expect(history?.items).toEqual([...want.input, ...want.output]);
    for (const other of scopes.filter((name) => name !== want.scope))
      expect(await store.get(other, id)).toBeUndefined();
  }

  const stats = await store.stats();
  expect(stats.entries).toBeLessThanOrEqual(settings.CACHE_ENTRIES);
  expect(stats.bytes).toBeLessThanOrEqual(settings.CACHE_BYTES);
  for (const id of expected.keys()) await check(id);
  let lowerBound = 0;
  for (const name of scopes) {
    const unique = new Map<string, number>();
    for (const [key, value] of expected) {
      if (value.scope !== name) continue;
      for (const item of [...value.input, ...value.output]) unique.set(JSON.stringify(item), jsonBytes(item));
      lowerBound += jsonBytes({ ...responseObject(key, value.output), output: [] });
    }
    for (const bytes of unique.values()) lowerBound += bytes;
  }
  expect(stats.bytes).toBeGreaterThanOrEqual(lowerBound);
  for (const [key, value] of expected) expect(await store.delete(value.scope, key)).toBe(true);
  const empty = await store.stats();
  expect([empty.entries, empty.bytes, empty.blocks]).toEqual([0, 0, 0]);
  expect(empty.rejections).toBe(rejections);
  return empty;
}

describe('MemoryResponseStore against a copy-history reference', () => {
  it('agrees without pressure (chains, branches, deletions)', async () => {
    for (const seed of [1, 2, 3]) {
      const stats = await run(seed, { CACHE_TTL_S: 3600, CACHE_ENTRIES: 10_000 }, 400);
      expect([stats.evictions, stats.expirations, stats.rejections]).toEqual([0, 0, 0]);
    }
  });

  it('agrees under expiry, entry and byte eviction, and owner quotas', async () => {
    for (const seed of [4, 5, 6]) {
      const stats = await run(
        seed,
        { CACHE_TTL_S: 3, CACHE_ENTRIES: 12, CACHE_BYTES: 40_000, OWNER_ENTRIES: 6, ENTRY_BYTES: 30_000 },
        400,
      );
      expect(stats.evictions).toBeGreaterThan(0);
      expect(stats.expirations).toBeGreaterThan(0);
    }
  });
});
