/**
 * The spec's previous_response_id example end to end through the openai SDK (loopback app,
 * FakeEngine with a plain dialect, real createResponse and the store handlers), plus the store
 * rules that only show through POST /v1/responses: opt-in storage, 404 for unusable
 * previous_response_id values, and 503 under assembly pressure.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createJobsApp, listenJobsApp } from './background-fixtures.ts';
import { storeHandlers } from '../store/store-app.ts';

const MODEL = 'maya-test';
const messageTexts = (items: Array<Record<string, unknown>>) =>
  items.map((item) => `${item.role as string}:${(item.content as Array<{ text: string }>)[0]!.text}`);

describe('previous_response_id conversation through the SDK', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('runs the spec example: continue, retrieve, list the whole history, delete the first', async () => {
    const app = await listenJobsApp({ server: { apiKeys: ['key-a', 'key-b'] }, handlers: storeHandlers });
    closers.push(app.close);
    const client = new OpenAI({ baseURL: `${app.origin}/v1`, apiKey: 'key-a', maxRetries: 0 });
    const first = await client.responses.create({ model: MODEL, input: 'Remember the value 73', store: true });
    const second = await client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: 'What value did I give you?',
      store: true,
    });
    const saved = await client.responses.retrieve(second.id);
    expect(JSON.stringify(saved)).toBe(JSON.stringify(second));
    const items = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: 'asc', limit: 20 })) items.push(item);
    expect(messageTexts(items as never)).toEqual([
      'user:Remember the value 73',
      'assistant:hello',
      'user:What value did I give you?',
    ]);
    expect(items[1]!.id).toBe(first.output[0]!.id);
    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const after = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: 'asc' })) after.push(item.id);
    expect(after).toEqual(items.map((item) => item.id));
    const other = new OpenAI({ baseURL: `${app.origin}/v1`, apiKey: 'key-b', maxRetries: 0 });
    await expect(
      other.responses.create({ model: MODEL, previous_response_id: second.id, input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.responses.create({ model: MODEL, previous_response_id: first.id, input: 'x' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('POST /v1/responses and the store', () => {
  it('stores only with store:true; store:false may continue a stored response without being saved', async () => {
    const { request } = createJobsApp({ handlers: storeHandlers });
    const omitted = await request.post('/v1/responses').send({ model: MODEL, input: 'a' });
    const unsaved = await request.post('/v1/responses').send({ model: MODEL, input: 'b', store: false });
    for (const res of [omitted, unsaved]) expect((await request.get(`/v1/responses/${res.body.id}`)).status).toBe(404);
    const saved = await request.post('/v1/responses').send({ model: MODEL, input: 'c', store: true });
    const next = await request
      .post('/v1/responses')
      .send({ model: MODEL, input: 'd', store: false, previous_response_id: saved.body.id });
    expect(next.status).toBe(200);
    expect((await request.get(`/v1/responses/${next.body.id}`)).status).toBe(404);
    expect((await request.get(`/v1/responses/${saved.body.id}`)).status).toBe(200);
  });

  it('answers 404 with param previous_response_id for unknown, deleted and expired ids', async () => {
    let clock = 0;
    const { request } = createJobsApp({ handlers: storeHandlers, jobSettings: { CACHE_TTL_S: 10 }, now: () => clock });
    const ids = [];
    for (const input of ['one', 'two'])
      ids.push((await request.post('/v1/responses').send({ model: MODEL, input, store: true })).body.id as string);
    await request.delete(`/v1/responses/${ids[0]}`);
    clock = 10_000;
    for (const id of ['resp_unknown', ...ids]) {
      const res = await request.post('/v1/responses').send({ model: MODEL, input: 'x', previous_response_id: id });
      expect([res.status, res.body.error.param, res.body.error.type]).toEqual([
        404,
        'previous_response_id',
        'invalid_request_error',
      ]);
    }
  });

  it('answers 503 when concurrent history assembly is over ASSEMBLY_BYTES, and serves once it is released', async () => {
    const { request, store } = createJobsApp({ handlers: storeHandlers, jobSettings: { ASSEMBLY_BYTES: 1000 } });
    const first = await request.post('/v1/responses').send({ model: MODEL, input: 'remember this', store: true });
    const held = store.reserveAssembly(900);
    const busy = await request
      .post('/v1/responses')
      .send({ model: MODEL, input: 'next', previous_response_id: first.body.id, store: true });
    expect(busy.status).toBe(503);
    expect(busy.body.error).toMatchObject({ type: 'server_error', code: 'assembly_busy' });
    held.release();
    const ok = await request
      .post('/v1/responses')
      .send({ model: MODEL, input: 'next', previous_response_id: first.body.id, store: true });
    expect(ok.status).toBe(200);
    expect((await store.stats()).assembly_bytes).toBe(0);
    const items = await request.get(`/v1/responses/${ok.body.id}/input_items?order=asc`);
    expect(messageTexts(items.body.data)).toEqual(['user:remember this', 'assistant:hello', 'user:next']);
  });
});
