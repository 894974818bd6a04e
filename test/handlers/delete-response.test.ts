import { describe, expect, it } from 'vitest';
import { bearer, createStoreApp, KEY_A, KEY_B, SCOPE_A } from '../store/store-app.ts';
import { storeChain } from '../store/responses/store-fixtures.ts';

describe('DELETE /v1/responses/{id}', () => {
  it('deletes the snapshot and answers {id, object, deleted}; later calls are 404', async () => {
    const { request, store } = createStoreApp();
    const [turn] = await storeChain(store, SCOPE_A, 'd', 1);
    const res = await request.delete(`/v1/responses/${turn!.id}`).set(bearer(KEY_A));
    expect([res.status, res.body]).toEqual([200, { id: turn!.id, object: 'response', deleted: true }]);
    expect((await request.get(`/v1/responses/${turn!.id}`).set(bearer(KEY_A))).status).toBe(404);
    const again = await request.delete(`/v1/responses/${turn!.id}`).set(bearer(KEY_A));
    expect(again.status).toBe(404);
    expect(again.body.error).toEqual({
      message: `No response found with id '${turn!.id}'.`,
      type: 'invalid_request_error',
      param: null,
      code: 'not_found',
    });
  });

  it("answers 404 for another key and leaves the owner's response alone", async () => {
    const { request, store } = createStoreApp();
    const [turn] = await storeChain(store, SCOPE_A, 'd', 1);
    expect((await request.delete(`/v1/responses/${turn!.id}`).set(bearer(KEY_B))).status).toBe(404);
    expect((await request.get(`/v1/responses/${turn!.id}`).set('x-api-key', KEY_A)).status).toBe(200);
  });

  it('rejects query options with 400 and deletes nothing', async () => {
    const { request, store } = createStoreApp();
    const [turn] = await storeChain(store, SCOPE_A, 'd', 1);
    for (const [query, param] of [
      ['include[]=reasoning.encrypted_content', 'include'],
      ['force=true', 'force'],
    ]) {
      const res = await request.delete(`/v1/responses/${turn!.id}?${query}`).set(bearer(KEY_A));
      expect([res.status, res.body.error.type, res.body.error.param]).toEqual([400, 'invalid_request_error', param]);
    }
    expect((await request.get(`/v1/responses/${turn!.id}`).set(bearer(KEY_A))).status).toBe(200);
  });

  it("keeps a descendant's whole history after its ancestors are deleted", async () => {
    const { request, store } = createStoreApp();
    const turns = await storeChain(store, SCOPE_A, 'd', 3);
    for (const turn of turns.slice(0, 2)) {
      expect((await request.delete(`/v1/responses/${turn.id}`).set(bearer(KEY_A))).status).toBe(200);
    }
    const res = await request.get(`/v1/responses/${turns[2]!.id}/input_items?order=asc`).set(bearer(KEY_A));
    expect(res.body.data).toEqual(
      [turns[0]!.input, turns[0]!.output, turns[1]!.input, turns[1]!.output, turns[2]!.input].flat(),
    );
    expect((await request.get(`/v1/responses/${turns[2]!.id}`).set(bearer(KEY_A))).body).toEqual(turns[2]!.response);
  });
});
