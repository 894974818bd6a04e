/**
 * The ResponseStore contract suite: every backend runs `runStoreContract(makeStore)` with a
 * factory that honours the given settings and millisecond clock.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings } from '../../../config/settings.ts';
import { type ResponseStore, StoreError, type StoredItem } from '../../../store/responses/response-store.ts';
import {
  assistantMessage,
  jsonBytes,
  makeTurn,
  responseObject,
  storeChain,
  storeTurn,
  userMessage,
} from './store-fixtures.ts';

export interface StoreFactoryOptions {
  settings: ResponsesSettings;
  now: () => number;
}

export type StoreFactory = (options: StoreFactoryOptions) => ResponseStore;

const A = 'scope-a';
const B = 'scope-b';

async function storeError(promise: Promise<unknown> | (() => unknown)): Promise<StoreError> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    if (error instanceof StoreError) return error;
    throw error;
  }
  throw new Error('expected a StoreError');
}

async function allInputIds(
  store: ResponseStore,
  scope: string,
  id: string,
  order: 'asc' | 'desc',
  limit: number,
): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.listInputItems(scope, id, { order, limit, after });
    if (!page) throw new Error(`no listing for ${id}`);
    ids.push(...page.data.map((item) => item.id));
    if (!page.has_more) return ids;
    after = page.last_id ?? undefined;
  }
}

export function runStoreContract(makeStore: StoreFactory): void {
  let clock = 0;
  const now = () => clock;
  const make = (overrides: Partial<ResponsesSettings> = {}) =>
    makeStore({ settings: { ...DEFAULT_RESPONSES_SETTINGS, ...overrides }, now });

  beforeEach(() => {
    clock = 1_000_000;
  });

  describe('put / get / delete', () => {
    it('returns the saved response exactly, output included', async () => {
      const store = make();
      const turn = makeTurn('a', 0);
      await storeTurn(store, A, turn);
      const saved = await store.get(A, turn.id);
      expect(JSON.stringify(saved)).toBe(JSON.stringify(turn.response));
    });

    it('answers undefined for unknown ids and after deletion', async () => {
      const store = make();
      const turn = makeTurn('a', 0);
      await storeTurn(store, A, turn);
      expect(await store.get(A, 'resp_unknown')).toBeUndefined();
      expect(await store.delete(A, turn.id)).toBe(true);
      expect(await store.get(A, turn.id)).toBeUndefined();
      expect(await store.listInputItems(A, turn.id)).toBeUndefined();
      expect(await store.history(A, turn.id)).toBeUndefined();
      expect(await store.delete(A, turn.id)).toBe(false);
    });

    it('replaces a response stored again under the same id', async () => {
      const store = make();
      const first = makeTurn('a', 0, 'first');
      await storeTurn(store, A, first);
      const second = { ...makeTurn('a', 0, 'second'), id: first.id };
      await storeTurn(store, A, second);
      expect((await store.get(A, first.id))?.output).toEqual(second.output);
      expect((await store.stats()).entries).toBe(1);
    });

    it('returns copies that callers cannot use to change the store', async () => {
      const store = make();
      const turn = makeTurn('a', 0);
      await storeTurn(store, A, turn);
      const saved = (await store.get(A, turn.id)) as unknown as { output: unknown[]; model: string };
      saved.output.length = 0;
      saved.model = 'changed';
      expect(await store.get(A, turn.id)).toEqual(turn.response);
    });

    it('rejects items without ids and duplicate ids', async () => {
      const store = make();
      const turn = makeTurn('a', 0);
      const noId = await storeError(
        store.put(A, { response: turn.response, inputItems: [{ type: 'message' } as unknown as StoredItem] }),
      );
      expect(noId.code).toBe('invalid_item');
      const duplicate = await storeError(
        store.put(A, { response: turn.response, inputItems: [userMessage('x', '1'), userMessage('x', '2')] }),
      );
      expect([duplicate.code, duplicate.status, duplicate.param]).toEqual(['duplicate_item', 400, 'input']);
      await storeTurn(store, A, turn);
      const next = makeTurn('a', 1);
      const clash = { ...next, input: [userMessage(turn.input[0]!.id, 'again')] };
      expect((await storeError(storeTurn(store, A, clash, turn.id))).code).toBe('duplicate_item');
      expect(await store.get(A, next.id)).toBeUndefined();
    });
  });

  describe('isolation across credential scopes', () => {
    it("hides another scope's responses on every operation", async () => {
      const store = make();
      const turn = makeTurn('a', 0);
      await storeTurn(store, A, turn);
      expect(await store.get(B, turn.id)).toBeUndefined();
      expect(await store.listInputItems(B, turn.id)).toBeUndefined();
      expect(await store.history(B, turn.id)).toBeUndefined();
      expect(await store.delete(B, turn.id)).toBe(false);
      expect(await store.get(A, turn.id)).toEqual(turn.response);
    });

    it('keeps identical content stored by two scopes apart', async () => {
      const store = make();
      const turn = makeTurn('same', 0);
      await storeTurn(store, A, turn);
      await storeTurn(store, B, turn);
      expect(await store.delete(A, turn.id)).toBe(true);
      expect(await store.get(B, turn.id)).toEqual(turn.response);
      expect((await store.listInputItems(B, turn.id))?.data).toEqual(turn.input);
    });
  });

  describe('conversation history', () => {
    it('continues a response with only the new input and lists the whole history', async () => {
      const store = make();
      const turns = await storeChain(store, A, 'c', 3);
      const expected = [turns[0]!.input, turns[0]!.output, turns[1]!.input, turns[1]!.output, turns[2]!.input].flat();
      const page = await store.listInputItems(A, turns[2]!.id, { order: 'asc', limit: 100 });
      expect(page?.data).toEqual(expected);
      const history = await store.history(A, turns[2]!.id);
      expect(history?.items).toEqual([...expected, ...turns[2]!.output]);
      expect(history?.responseId).toBe(turns[2]!.id);
      history?.release();
      expect((await store.get(A, turns[2]!.id))?.output).toEqual(turns[2]!.output);
    });

    it('keeps descendants whole after their ancestors are deleted', async () => {
      const store = make();
      const turns = await storeChain(store, A, 'c', 4);
      const before = await store.history(A, turns[3]!.id);
      before?.release();
      expect(await store.delete(A, turns[0]!.id)).toBe(true);
      expect(await store.delete(A, turns[2]!.id)).toBe(true);
      const after = await store.history(A, turns[3]!.id);
      after?.release();
      expect(after?.items).toEqual(before?.items);
      expect((await store.listInputItems(A, turns[1]!.id, { order: 'asc' }))?.data).toEqual(
        [turns[0]!.input, turns[0]!.output, turns[1]!.input].flat(),
      );
    });

    it('keeps branches from one parent independent', async () => {
      const store = make();
      const [root] = await storeChain(store, A, 'r', 1);
      const left = makeTurn('left', 1);
      const right = makeTurn('right', 1);
      await storeTurn(store, A, left, root!.id);
      await storeTurn(store, A, right, root!.id);
      const grandchild = makeTurn('left', 2);
      await storeTurn(store, A, grandchild, left.id);
      await store.delete(A, root!.id);
      await store.delete(A, left.id);
      const rootItems = [...root!.input, ...root!.output];
      expect((await store.listInputItems(A, right.id, { order: 'asc' }))?.data).toEqual([...rootItems, ...right.input]);
      expect((await store.listInputItems(A, grandchild.id, { order: 'asc' }))?.data).toEqual(
        [rootItems, left.input, left.output, grandchild.input].flat(),
      );
    });

    it('stores the full history when the continued response vanished during generation', async () => {
      const store = make();
      const [first] = await storeChain(store, A, 'v', 1);
      const previous = await store.history(A, first!.id);
      expect(previous).toBeDefined();
      await store.delete(A, first!.id);
      const next = makeTurn('v', 1);
      await store.put(A, { response: next.response, inputItems: next.input, previous });
      previous?.release();
      expect((await store.listInputItems(A, next.id, { order: 'asc' }))?.data).toEqual(
        [first!.input, first!.output, next.input].flat(),
      );
    });
  });

  describe('input item pagination', () => {
    const ids = Array.from({ length: 25 }, (_, n) => `msg_${String(n).padStart(2, '0')}`);
    let store: ResponseStore;
    beforeEach(async () => {
      store = make();
      const output = [assistantMessage('msg_out', 'done')];
      await store.put(A, {
        response: responseObject('resp_p', output),
        inputItems: ids.map((id) => userMessage(id, id)),
      });
    });

    it('defaults to newest first, 20 per page', async () => {
      const page = await store.listInputItems(A, 'resp_p');
      expect(page?.object).toBe('list');
      expect(page?.data.map((item) => item.id)).toEqual([...ids].reverse().slice(0, 20));
      expect([page?.has_more, page?.first_id, page?.last_id]).toEqual([true, 'msg_24', 'msg_05']);
    });

    it('pages strictly after the cursor in either order, every item once', async () => {
      expect(await allInputIds(store, A, 'resp_p', 'asc', 7)).toEqual(ids);
      expect(await allInputIds(store, A, 'resp_p', 'desc', 7)).toEqual([...ids].reverse());
      const tail = await store.listInputItems(A, 'resp_p', { order: 'asc', after: 'msg_22', limit: 2 });
      expect([tail?.data.map((item) => item.id), tail?.has_more]).toEqual([['msg_23', 'msg_24'], false]);
      const end = await store.listInputItems(A, 'resp_p', { order: 'desc', after: 'msg_00' });
      expect([end?.data, end?.has_more, end?.first_id, end?.last_id]).toEqual([[], false, null, null]);
    });

    it('rejects cursors outside the listing and limits outside 1..100', async () => {
      const unknown = await storeError(store.listInputItems(A, 'resp_p', { after: 'msg_nope' }));
      expect([unknown.code, unknown.status, unknown.param]).toEqual(['unknown_cursor', 400, 'after']);
      expect((await storeError(store.listInputItems(A, 'resp_p', { after: 'msg_out' }))).code).toBe('unknown_cursor');
      for (const limit of [0, 101, 2.5]) {
        expect((await storeError(store.listInputItems(A, 'resp_p', { limit }))).code).toBe('invalid_page');
      }
    });
  });

  describe('LRU eviction', () => {
    it('evicts the least recently used response; reads refresh the order', async () => {
      const store = make({ CACHE_ENTRIES: 3 });
      for (const n of [0, 1, 2]) await storeTurn(store, A, makeTurn('l', n));
      await store.get(A, 'resp_l_0');
      await storeTurn(store, A, makeTurn('l', 3));
      expect(await store.get(A, 'resp_l_1')).toBeUndefined();
      await storeTurn(store, A, makeTurn('l', 4));
      expect(await store.get(A, 'resp_l_2')).toBeUndefined();
      for (const id of ['resp_l_0', 'resp_l_3', 'resp_l_4']) expect(await store.get(A, id)).toBeDefined();
      expect((await store.stats()).evictions).toBe(2);
    });

    it("evicts across scopes under the global bound, keeping a descendant's history", async () => {
      const store = make({ CACHE_ENTRIES: 2 });
      await storeTurn(store, B, makeTurn('b', 0));
      const turns = await storeChain(store, A, 'e', 2);
      expect(await store.get(B, 'resp_b_0')).toBeUndefined();
      await storeTurn(store, A, makeTurn('e', 2), turns[1]!.id);
      expect(await store.get(A, turns[0]!.id)).toBeUndefined();
      expect(await allInputIds(store, A, 'resp_e_2', 'asc', 2)).toEqual([
        'msg_e_in_0',
        'msg_e_out_0',
        'msg_e_in_1',
        'msg_e_out_1',
        'msg_e_in_2',
      ]);
    });

    it('evicts by bytes under CACHE_BYTES', async () => {
      const big = (n: number) => makeTurn('big', n, 'x'.repeat(4000));
      const store = make({ CACHE_BYTES: 20_000 });
      for (const n of [0, 1, 2, 3, 4]) await storeTurn(store, A, big(n));
      const stats = await store.stats();
      expect(stats.bytes).toBeLessThanOrEqual(20_000);
      expect(stats.evictions).toBeGreaterThan(0);
      expect(await store.get(A, 'resp_big_4')).toBeDefined();
      expect(await store.get(A, 'resp_big_0')).toBeUndefined();
    });
  });

  describe('TTL expiry', () => {
    it('expires a fixed time after completion; reads do not refresh it', async () => {
      const store = make({ CACHE_TTL_S: 10 });
      await storeTurn(store, A, makeTurn('t', 0));
      clock += 6_000;
      expect(await store.get(A, 'resp_t_0')).toBeDefined();
      await storeTurn(store, A, makeTurn('t', 1));
      clock += 3_999;
      expect(await store.get(A, 'resp_t_0')).toBeDefined();
      clock += 1;
      expect(await store.get(A, 'resp_t_0')).toBeUndefined();
      expect(await store.listInputItems(A, 'resp_t_1')).toBeDefined();
      clock += 6_000;
      expect(await store.history(A, 'resp_t_1')).toBeUndefined();
      expect((await store.stats()).expirations).toBe(2);
    });

    it('discards expired entries on insertion, without a read', async () => {
      const store = make({ CACHE_TTL_S: 10 });
      await storeTurn(store, A, makeTurn('t', 0));
      await storeTurn(store, B, makeTurn('u', 0));
      clock += 10_000;
      await storeTurn(store, A, makeTurn('t', 1));
      const stats = await store.stats();
      expect([stats.entries, stats.expirations, stats.evictions]).toEqual([1, 2, 0]);
    });

    it('refuses to continue an expired response', async () => {
      const store = make({ CACHE_TTL_S: 1 });
      await storeTurn(store, A, makeTurn('t', 0));
      clock += 1_000;
      expect(await store.history(A, 'resp_t_0')).toBeUndefined();
    });
  });

  describe('owner quotas', () => {
    it("OWNER_ENTRIES evicts only the owner's own least recently used responses", async () => {
      const store = make({ OWNER_ENTRIES: 2 });
      await storeTurn(store, B, makeTurn('b', 0));
      for (const n of [0, 1, 2]) await storeTurn(store, A, makeTurn('o', n));
      expect(await store.get(A, 'resp_o_0')).toBeUndefined();
      expect(await store.get(A, 'resp_o_2')).toBeDefined();
      expect(await store.get(B, 'resp_b_0')).toBeDefined();
      expect((await store.stats()).entries).toBe(3);
    });

    it("OWNER_BYTES bounds one owner's bytes without touching others", async () => {
      const big = (n: number) => makeTurn('ob', n, 'y'.repeat(3000));
      const store = make({ OWNER_BYTES: 14_000 });
      await storeTurn(store, B, makeTurn('b', 0, 'z'.repeat(3000)));
      for (const n of [0, 1, 2, 3]) await storeTurn(store, A, big(n));
      expect(await store.get(A, 'resp_ob_0')).toBeUndefined();
      expect(await store.get(A, 'resp_ob_3')).toBeDefined();
      expect(await store.get(B, 'resp_b_0')).toBeDefined();
    });
  });

  describe('oversized snapshots', () => {
    it('fails a snapshot over ENTRY_BYTES with a storage-capacity error and keeps the rest', async () => {
      const store = make({ ENTRY_BYTES: 5_000 });
      const turns = await storeChain(store, A, 's', 2);
      const huge = makeTurn('s', 2, 'w'.repeat(5_000));
      const error = await storeError(storeTurn(store, A, huge, turns[1]!.id));
      expect([error.code, error.status]).toEqual(['snapshot_too_large', 413]);
      expect(await store.get(A, huge.id)).toBeUndefined();
      expect(await store.get(A, turns[1]!.id)).toEqual(turns[1]!.response);
      const stats = await store.stats();
      expect([stats.entries, stats.rejections]).toEqual([2, 1]);
    });

    it('counts the expanded history towards ENTRY_BYTES', async () => {
      const turnBytes = jsonBytes(makeTurn('g', 10).input) + jsonBytes(makeTurn('g', 10).output);
      const store = make({ ENTRY_BYTES: turnBytes * 6 });
      const error = await storeError(storeChain(store, A, 'g', 20));
      expect(error.code).toBe('snapshot_too_large');
      expect((await store.stats()).entries).toBeGreaterThan(2);
    });

    it('fails a snapshot that could not fit in CACHE_BYTES even alone, evicting nothing', async () => {
      const store = make({ CACHE_BYTES: 4_000 });
      await storeTurn(store, A, makeTurn('c', 0));
      expect((await storeError(storeTurn(store, A, makeTurn('c', 1, 'v'.repeat(4_000))))).code).toBe(
        'snapshot_too_large',
      );
      expect(await store.get(A, 'resp_c_0')).toBeDefined();
    });
  });

  describe('assembly budget', () => {
    it('refuses concurrent assembly over ASSEMBLY_BYTES with 503 until histories are released', async () => {
      const turns = await (async () => {
        const probe = make();
        const chain = await storeChain(probe, A, 'h', 3);
        const held = await probe.history(A, chain[2]!.id);
        held?.release();
        return { chain, bytes: held!.bytes };
      })();
      const store = make({ ASSEMBLY_BYTES: turns.bytes * 2 - 1 });
      await storeChain(store, A, 'h', 3);
      const first = await store.history(A, 'resp_h_2');
      expect(first?.bytes).toBe(turns.bytes);
      expect((await store.stats()).assembly_bytes).toBe(turns.bytes);
      const busy = await storeError(store.history(A, 'resp_h_2'));
      expect([busy.code, busy.status]).toEqual(['assembly_busy', 503]);
      expect((await storeError(() => store.reserveAssembly(turns.bytes))).code).toBe('assembly_busy');
      first?.release();
      first?.release();
      expect((await store.stats()).assembly_bytes).toBe(0);
      const second = await store.history(A, 'resp_h_2');
      expect(second?.items).toHaveLength(6);
      second?.release();
      expect(await store.get(A, 'resp_h_2')).toBeDefined();
    });

    it('charges history() the serialised bytes of the expanded items', async () => {
      const store = make();
      const turns = await storeChain(store, A, 'q', 2);
      const history = await store.history(A, turns[1]!.id);
      const expected = history!.items.reduce((sum, item) => sum + jsonBytes(item), 0);
      expect(history?.bytes).toBe(expected);
      history?.release();
    });
  });

  describe('byte accounting and statistics', () => {
    it('counts unique content once across a chain', async () => {
      const store = make();
      const turns = await storeChain(store, A, 'u', 50);
      let unique = 0;
      for (const turn of turns)
        unique += jsonBytes(turn.input[0]) + jsonBytes(turn.output[0]) + jsonBytes({ ...turn.response, output: [] });
      const { bytes } = await store.stats();
      expect(bytes).toBeGreaterThanOrEqual(unique);
      expect(bytes / unique).toBeLessThanOrEqual(1.2);
    });

    it('returns to zero bytes once every response is gone', async () => {
      const store = make();
      const turns = await storeChain(store, A, 'z', 5);
      await storeTurn(store, A, makeTurn('zb', 3), turns[2]!.id);
      for (const id of [...turns.map((turn) => turn.id), 'resp_zb_3']) expect(await store.delete(A, id)).toBe(true);
      const stats = await store.stats();
      expect([stats.entries, stats.bytes]).toEqual([0, 0]);
    });

    it('counts hits, misses and writes', async () => {
      const store = make();
      await storeTurn(store, A, makeTurn('k', 0));
      await store.get(A, 'resp_k_0');
      await store.get(B, 'resp_k_0');
      await store.listInputItems(A, 'resp_missing');
      const stats = await store.stats();
      expect([stats.writes, stats.hits, stats.misses]).toEqual([1, 1, 2]);
    });
  });
}
