import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, createStoreApp, KEY_A, KEY_B, listenStoreApp, SCOPE_A } from '../store/store-app.ts';
import {
  assistantMessage,
  makeTurn,
  responseObject,
  storeChain,
  storeTurn,
  userMessage,
} from '../store/responses/store-fixtures.ts';
import type { ResponseStore, StoredItem } from '../../store/responses/response-store.ts';

/** A 250-item input history: 124 stored turns (input + output) and a last response with 2 new inputs. */
async function seedLongHistory(store: ResponseStore): Promise<{ id: string; items: StoredItem[] }> {
  const turns = await storeChain(store, SCOPE_A, 'h', 124);
  const last = makeTurn('h', 124);
  const input = [userMessage('msg_h_in_124a', 'first part'), userMessage('msg_h_in_124b', 'second part')];
  await storeTurn(store, SCOPE_A, { ...last, input }, turns[123]!.id);
  return { id: last.id, items: [...turns.flatMap((turn) => [...turn.input, ...turn.output]), ...input] };
}

describe('GET /v1/responses/{id}/input_items', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it("lists the full input history without the response's own output, newest first by default", async () => {
    const { request, store } = createStoreApp();
    const turns = await storeChain(store, SCOPE_A, 'l', 2);
    const res = await request.get(`/v1/responses/${turns[1]!.id}/input_items`).set(bearer(KEY_A));
    expect(res.status).toBe(200);
    const expected = [turns[1]!.input, turns[0]!.output, turns[0]!.input].flat();
    expect(res.body).toEqual({
      object: 'list',
      data: expected,
      has_more: false,
      first_id: expected[0]!.id,
      last_id: expected[2]!.id,
    });
  });

  it('pages with limit, order and after', async () => {
    const { request, store } = createStoreApp();
    const ids = Array.from({ length: 30 }, (_, n) => `msg_${n}`);
    await store.put(SCOPE_A, {
      response: responseObject('resp_p', [assistantMessage('msg_out', 'ok')]),
      inputItems: ids.map((id) => userMessage(id, id)),
    });
    const page = await request.get('/v1/responses/resp_p/input_items?order=asc&limit=5&after=msg_9').set(bearer(KEY_A));
    expect(page.body.data.map((item: StoredItem) => item.id)).toEqual([
      'msg_10',
      'msg_11',
      'msg_12',
      'msg_13',
      'msg_14',
    ]);
    expect([page.body.has_more, page.body.first_id, page.body.last_id]).toEqual([true, 'msg_10', 'msg_14']);
    const first = await request.get('/v1/responses/resp_p/input_items').set(bearer(KEY_A));
    expect([first.body.data.length, first.body.first_id, first.body.last_id, first.body.has_more]).toEqual([
      20,
      'msg_29',
      'msg_10',
      true,
    ]);
  });

  it('answers 400 for a cursor outside the listing and for limits outside 1..100', async () => {
    const { request, store } = createStoreApp();
    const [turn] = await storeChain(store, SCOPE_A, 'c', 1);
    const unknown = await request.get(`/v1/responses/${turn!.id}/input_items?after=msg_missing`).set(bearer(KEY_A));
    expect([unknown.status, unknown.body]).toEqual([
      400,
      {
        error: {
          message: "No input item with id 'msg_missing' in this response.",
          type: 'invalid_request_error',
          param: 'after',
          code: 'unknown_cursor',
        },
      },
    ]);
    for (const limit of ['0', '101', 'abc']) {
      const res = await request.get(`/v1/responses/${turn!.id}/input_items?limit=${limit}`).set(bearer(KEY_A));
      expect([res.status, res.body.error.param]).toEqual([400, 'limit']);
    }
    const order = await request.get(`/v1/responses/${turn!.id}/input_items?order=sideways`).set(bearer(KEY_A));
    expect([order.status, order.body.error.param]).toEqual([400, 'order']);
  });

  it('answers 404 for unknown, deleted and other-key ids', async () => {
    const { request, store } = createStoreApp();
    const [turn] = await storeChain(store, SCOPE_A, 'o', 1);
    const other = await request.get(`/v1/responses/${turn!.id}/input_items`).set(bearer(KEY_B));
    expect([other.status, other.body]).toEqual([
      404,
      {
        error: {
          message: `No response found with id '${turn!.id}'.`,
          type: 'invalid_request_error',
          param: null,
          code: 'not_found',
        },
      },
    ]);
    await store.delete(SCOPE_A, turn!.id);
    expect((await request.get(`/v1/responses/${turn!.id}/input_items`).set(bearer(KEY_A))).status).toBe(404);
  });

  it("serves the openai SDK's auto-pagination over a 250-item history, every item once, in order", async () => {
    const app = await listenStoreApp();
    closers.push(app.close);
    const { id, items } = await seedLongHistory(app.store);
    expect(new Set(items.map((item) => item.id)).size).toBe(250);
    const expected = items;
    const client = new OpenAI({ baseURL: `${app.origin}/v1`, apiKey: KEY_A, maxRetries: 0 });
    const ascending: string[] = [];
    for await (const item of client.responses.inputItems.list(id, { order: 'asc', limit: 7 }))
      ascending.push(item.id as string);
    expect(ascending).toEqual(expected.map((item) => item.id));
    const descending: string[] = [];
    for await (const item of client.responses.inputItems.list(id)) descending.push(item.id as string);
    expect(descending).toEqual(expected.map((item) => item.id).reverse());
    await expect(client.responses.inputItems.list(id, { after: 'msg_nope' })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    const other = new OpenAI({ baseURL: `${app.origin}/v1`, apiKey: KEY_B, maxRetries: 0 });
    await expect(other.responses.inputItems.list(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.retrieve(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.delete(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await client.responses.retrieve(id)).id).toBe(id);
  });

  it('lists a continuation stored after its parent was evicted mid-generation', async () => {
    const { request, store } = createStoreApp({ settings: { CACHE_ENTRIES: 1 } });
    const [first] = await storeChain(store, SCOPE_A, 'e', 1);
    const previous = await store.history(SCOPE_A, first!.id);
    await storeTurn(store, SCOPE_A, makeTurn('other', 0));
    const next = makeTurn('e', 1);
    await store.put(SCOPE_A, { response: next.response, inputItems: next.input, previous });
    previous?.release();
    const res = await request.get(`/v1/responses/${next.id}/input_items?order=asc`).set(bearer(KEY_A));
    expect(res.body.data).toEqual([first!.input, first!.output, next.input].flat());
  });
});
