import { describe, expect, it } from 'vitest';
import { bearer, createStoreApp, KEY_A, KEY_B, SCOPE_A } from '../store/store-app.ts';
import { makeTurn, storeTurn } from '../store/responses/store-fixtures.ts';

const notFound = (id: string) => ({
  error: {
    message: `No response found with id '${id}'.`,
    type: 'invalid_request_error',
    param: null,
    code: 'not_found',
  },
});

describe('GET /v1/responses/{id}', () => {
  it('returns the saved response exactly, for both forms of the key', async () => {
    const { request, store } = createStoreApp();
    const turn = makeTurn('g', 0);
    await storeTurn(store, SCOPE_A, turn);
    const viaBearer = await request.get(`/v1/responses/${turn.id}`).set(bearer(KEY_A));
    expect(viaBearer.status).toBe(200);
    expect(viaBearer.headers['content-type']).toMatch(/^application\/json/);
    expect(viaBearer.text).toBe(JSON.stringify(turn.response));
    const viaHeader = await request.get(`/v1/responses/${turn.id}`).set('x-api-key', KEY_A);
    expect(viaHeader.body).toEqual(turn.response);
  });

  it('answers 404 in the error shape for unknown and other-key ids', async () => {
    const { request, store } = createStoreApp();
    const turn = makeTurn('g', 0);
    await storeTurn(store, SCOPE_A, turn);
    for (const [id, key] of [
      ['resp_nope', KEY_A],
      [turn.id, KEY_B],
    ] as const) {
      const res = await request.get(`/v1/responses/${id}`).set(bearer(key));
      expect([res.status, res.body]).toEqual([404, notFound(id)]);
    }
  });

  it('answers 404 once the response expired, even after reads', async () => {
    let clock = 0;
    const { request, store } = createStoreApp({ settings: { CACHE_TTL_S: 60 }, now: () => clock });
    const turn = makeTurn('g', 0);
    await storeTurn(store, SCOPE_A, turn);
    clock = 59_999;
    expect((await request.get(`/v1/responses/${turn.id}`).set(bearer(KEY_A))).status).toBe(200);
    clock = 60_000;
    const res = await request.get(`/v1/responses/${turn.id}`).set(bearer(KEY_A));
    expect([res.status, res.body]).toEqual([404, notFound(turn.id)]);
  });

  it('answers 409 for stream=true on a response without a retained event stream', async () => {
    const { request, store } = createStoreApp();
    const turn = makeTurn('g', 0);
    await storeTurn(store, SCOPE_A, turn);
    const res = await request.get(`/v1/responses/${turn.id}?stream=true`).set(bearer(KEY_A));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: {
        message: `Response '${turn.id}' has no retained event stream; retrieve it without stream=true.`,
        type: 'invalid_request_error',
        param: 'stream',
        code: 'stream_not_available',
      },
    });
    expect((await request.get(`/v1/responses/resp_x?stream=true`).set(bearer(KEY_A))).status).toBe(404);
  });

  it('requires a key when keys are configured', async () => {
    const { request } = createStoreApp();
    expect((await request.get('/v1/responses/resp_x')).status).toBe(401);
  });
});
