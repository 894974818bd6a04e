import { describe, expect, it } from 'vitest';
import { ApiError } from '../../contract/errors.ts';
import { DEFAULT_RESPONSES_SETTINGS } from '../../config/settings.ts';
import { ItemIndex, isItemReference, resolveItemReferences } from '../../responses/item-references.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import type { StoredItem, StoredResponse } from '../../store/responses/response-store.ts';

const userItem: StoredItem = {
  type: 'message',
  id: 'msg_in',
  role: 'user',
  status: 'completed',
  content: [{ type: 'input_text', text: 'weather?' }],
};
const reasoning: StoredItem = {
  type: 'reasoning',
  id: 'rs_1',
  status: 'completed',
  summary: [],
  content: [{ type: 'reasoning_text', text: 'call the tool' }],
};
const call: StoredItem = {
  type: 'function_call',
  id: 'fc_1',
  call_id: 'call_1',
  name: 'get_weather',
  arguments: '{}',
  status: 'completed',
};
const response = (id: string, output: StoredItem[]): StoredResponse => ({ id, object: 'response', output });

/** A store holding resp_1 (input msg_in, output rs_1 and fc_1) for scope-a, indexed as the service does. */
async function setup() {
  const store = new MemoryResponseStore({ settings: DEFAULT_RESPONSES_SETTINGS });
  const index = new ItemIndex();
  await store.put('scope-a', { response: response('resp_1', [reasoning, call]), inputItems: [userItem] });
  index.add('scope-a', 'resp_1', [userItem, reasoning, call]);
  return { store, index };
}

async function errorOf(promise: Promise<unknown>): Promise<ApiError> {
  return promise.then(
    () => {
      throw new Error('resolved');
    },
    (error: unknown) => error as ApiError,
  );
}

describe('isItemReference', () => {
  it("is the typed form and OpenAI's id-only short form, nothing else", () => {
    expect(isItemReference({ type: 'item_reference', id: 'fc_1' })).toBe(true);
    expect(isItemReference({ id: 'fc_1' })).toBe(true);
    expect(isItemReference({ id: 'fc_1', type: null })).toBe(true);
    expect(isItemReference({ id: 'msg_1', role: 'assistant', content: [] })).toBe(false);
    expect(isItemReference({ type: 'function_call', id: 'fc_1' })).toBe(false);
  });
});

describe('resolveItemReferences', () => {
  it('replaces references to output and input items with the stored items, in place; other items pass through', async () => {
    const { store, index } = await setup();
    const output = { type: 'function_call_output', call_id: 'call_1', output: '{"t":21}' };
    const resolved = await resolveItemReferences(store, index, 'scope-a', [
      { type: 'item_reference', id: 'msg_in' },
      { id: 'rs_1' },
      { type: 'item_reference', id: 'fc_1' },
      output,
    ]);
    expect(resolved).toEqual([userItem, reasoning, call, output]);
  });

  it('without references the input is returned as it is (no store reads)', async () => {
    const { store, index } = await setup();
    const input = [{ role: 'user', content: 'hi' }];
    expect(await resolveItemReferences(store, index, 'scope-a', input)).toBe(input);
    expect((await store.stats()).hits).toBe(0);
  });

  it('an unknown id → 404 not_found naming the id and its input position', async () => {
    const { store, index } = await setup();
    const error = await errorOf(
      resolveItemReferences(store, index, 'scope-a', [
        { role: 'user', content: 'hi' },
        { type: 'item_reference', id: 'fc_nope' },
      ]),
    );
    expect(error.status).toBe(404);
    expect(error.toJSON().error).toMatchObject({
      code: 'not_found',
      param: 'input[1].id',
      type: 'invalid_request_error',
    });
    expect(error.message).toContain("'fc_nope'");
    expect(error.message).toContain('store: true');
  });

  it("another key's item is unknown (same 404), even when the index is asked for it", async () => {
    const { store, index } = await setup();
    index.add('scope-b', 'resp_1', [call]); // even a wrong hint cannot cross scopes: the store is asked per scope
    const error = await errorOf(
      resolveItemReferences(store, index, 'scope-b', [{ type: 'item_reference', id: 'fc_1' }]),
    );
    expect(error.status).toBe(404);
  });

  it('an item of a deleted response is unknown; one also held by a continuation still resolves', async () => {
    const { store, index } = await setup();
    await store.put('scope-a', {
      response: response('resp_2', []),
      inputItems: [],
      previous: { responseId: 'resp_1', items: [userItem, reasoning, call] },
    });
    index.add('scope-a', 'resp_2', [userItem, reasoning, call]);
    await store.delete('scope-a', 'resp_2');
    expect(await resolveItemReferences(store, index, 'scope-a', [{ id: 'fc_1' }])).toEqual([call]);
    await store.put('scope-a', {
      response: response('resp_3', []),
      inputItems: [],
      previous: { responseId: 'resp_1', items: [userItem, reasoning, call] },
    });
    index.add('scope-a', 'resp_3', [userItem, reasoning, call]);
    await store.delete('scope-a', 'resp_1');
    expect(await resolveItemReferences(store, index, 'scope-a', [{ id: 'fc_1' }])).toEqual([call]);
    await store.delete('scope-a', 'resp_3');
    expect((await errorOf(resolveItemReferences(store, index, 'scope-a', [{ id: 'fc_1' }]))).status).toBe(404);
  });

  it('resolved items are copies: changing one does not change the store', async () => {
    const { store, index } = await setup();
    const [item] = await resolveItemReferences(store, index, 'scope-a', [{ id: 'fc_1' }]);
    item!.arguments = 'changed';
    expect(await resolveItemReferences(store, index, 'scope-a', [{ id: 'fc_1' }])).toEqual([call]);
  });
});

describe('ItemIndex', () => {
  it('is bounded: the oldest written ids go first', () => {
    const index = new ItemIndex(3);
    index.add('s', 'resp_1', [{ id: 'a' }, { id: 'b' }]);
    index.add('s', 'resp_2', [{ id: 'c' }, { id: 'd' }]);
    expect(index.responsesOf('s', 'a')).toEqual([]);
    expect(index.responsesOf('s', 'b')).toEqual(['resp_1']);
    expect(index.responsesOf('s', 'd')).toEqual(['resp_2']);
  });

  it('keeps the newest few responses per id, newest first, per scope', () => {
    const index = new ItemIndex();
    for (const id of ['r1', 'r2', 'r3', 'r4', 'r5']) index.add('s', id, [{ id: 'x' }]);
    expect(index.responsesOf('s', 'x')).toEqual(['r5', 'r4', 'r3', 'r2']);
    expect(index.responsesOf('other', 'x')).toEqual([]);
  });
});
