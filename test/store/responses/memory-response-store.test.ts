import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_RESPONSES_SETTINGS } from '../../../config/settings.ts';
import { REF_BYTES } from '../../../store/responses/item-blocks.ts';
import { MemoryResponseStore, SNAPSHOT_REF_BYTES } from '../../../store/responses/memory-response-store.ts';
import { jsonBytes, makeTurn, storeChain, storeTurn } from './store-fixtures.ts';
import { runStoreContract } from './store.contract.ts';

describe('MemoryResponseStore', () => {
  runStoreContract((options) => new MemoryResponseStore(options));
});

describe('MemoryResponseStore byte accounting', () => {
  it('equals unique block bytes + metadata + reference bytes, exactly', async () => {
    const store = new MemoryResponseStore({ settings: DEFAULT_RESPONSES_SETTINGS });
    const turns = await storeChain(store, 'a', 'x', 10);
    // A branch from turn 4 copies 10 references (turns 0..4, input + output) onto a new spine.
    const branch = makeTurn('y', 5);
    await storeTurn(store, 'a', branch, turns[4]!.id);
    const items = [...turns.flatMap((turn) => [...turn.input, ...turn.output]), ...branch.input, ...branch.output];
    const unique = items.reduce((sum, item) => sum + jsonBytes(item), 0);
    const metadata = [...turns, branch].reduce((sum, turn) => sum + jsonBytes({ ...turn.response, output: [] }), 0);
    const slots = 20 + (10 + 2);
    const stats = await store.stats();
    expect(stats.blocks).toBe(items.length);
    expect(stats.bytes).toBe(unique + metadata + slots * REF_BYTES + 11 * SNAPSHOT_REF_BYTES);
  });

  it('frees the tail of a shared spine when its last response goes', async () => {
    const store = new MemoryResponseStore({ settings: DEFAULT_RESPONSES_SETTINGS });
    const turns = await storeChain(store, 'a', 'x', 3);
    const before = (await store.stats()).bytes;
    await store.delete('a', turns[2]!.id);
    const tail = jsonBytes(turns[2]!.input[0]) + jsonBytes(turns[2]!.output[0]);
    const meta = jsonBytes({ ...turns[2]!.response, output: [] });
    const after = await store.stats();
    expect(before - after.bytes).toBe(tail + meta + 2 * REF_BYTES + SNAPSHOT_REF_BYTES);
    expect(after.blocks).toBe(4);
  });

  it('keeps a 200-turn chain within 1.2 times its unique content', async () => {
    const store = new MemoryResponseStore({ settings: { ...DEFAULT_RESPONSES_SETTINGS, CACHE_ENTRIES: 1000 } });
    const turns = await storeChain(store, 'a', 'long', 200);
    const unique = turns.reduce(
      (sum, turn) =>
        sum + jsonBytes(turn.input[0]) + jsonBytes(turn.output[0]) + jsonBytes({ ...turn.response, output: [] }),
      0,
    );
    const { bytes, entries } = await store.stats();
    expect(entries).toBe(200);
    expect(bytes / unique).toBeLessThanOrEqual(1.2);
  });
});

describe('MemoryResponseStore page cost', () => {
  it('decodes only the page, however long the history (O(page), not O(history))', async () => {
    const store = new MemoryResponseStore({ settings: { ...DEFAULT_RESPONSES_SETTINGS, CACHE_ENTRIES: 1000 } });
    const turns = await storeChain(store, 'a', 'p', 200);
    const last = turns[199]!.id;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const page = await store.listInputItems('a', last, { order: 'asc', after: 'msg_p_in_100', limit: 10 });
      expect(page?.data).toHaveLength(10);
      expect(parse).toHaveBeenCalledTimes(10);
      parse.mockClear();
      await store.get('a', last);
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
  });
});

describe('MemoryResponseStore metrics', () => {
  it('exports maya:responses_cache_* without scopes, ids or content', async () => {
    const registry = new Registry();
    let clock = 0;
    const settings = { ...DEFAULT_RESPONSES_SETTINGS, CACHE_ENTRIES: 2, CACHE_TTL_S: 5, ENTRY_BYTES: 2000 };
    const store = new MemoryResponseStore({ settings, registry, now: () => clock });
    await storeChain(store, 'secret-scope', 'secret', 3);
    await store.get('secret-scope', 'resp_secret_2');
    await store.get('secret-scope', 'resp_secret_0');
    await expect(storeTurn(store, 'secret-scope', makeTurn('secret', 9, 'p'.repeat(3000)))).rejects.toThrow();
    const held = await store.history('secret-scope', 'resp_secret_2');
    const during = await registry.getSingleMetricAsString('maya:responses_cache_assembly_bytes');
    held?.release();
    clock += 5_000;
    await store.get('secret-scope', 'resp_secret_2');
    const text = await registry.metrics();
    const value = (line: string) =>
      Number(
        text
          .split('\n')
          .find((row) => row.startsWith(`${line} `))
          ?.split(' ')[1],
      );
    expect(during).toContain(`maya:responses_cache_assembly_bytes ${held!.bytes}`);
    expect(value('maya:responses_cache_writes_total')).toBe(3);
    expect(value('maya:responses_cache_hits_total')).toBe(4);
    expect(value('maya:responses_cache_misses_total')).toBe(2);
    expect(value('maya:responses_cache_evictions_total')).toBe(1);
    expect(value('maya:responses_cache_expirations_total')).toBe(2);
    expect(value('maya:responses_cache_entries')).toBe(0);
    expect(value('maya:responses_cache_bytes')).toBe(0);
    expect(value('maya:responses_cache_assembly_bytes')).toBe(0);
    expect(value('maya:responses_cache_rejections_total{reason="snapshot_too_large"}')).toBe(1);
    expect(value('maya:responses_cache_rejections_total{reason="assembly_busy"}')).toBe(0);
    expect(text).toContain('maya:responses_cache_operation_duration_seconds_count{op="put"} 4');
    expect(text).not.toMatch(/secret|resp_|msg_/);
  });
});
