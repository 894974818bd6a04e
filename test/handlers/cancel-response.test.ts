import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createJobsApp, listenJobsApp, says, sseEvents } from './background-fixtures.ts';

const KEYS = ['key-a', 'key-b'];
const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const body = (extra: Record<string, unknown> = {}) => ({
  model: 'maya-test',
  input: 'Hi',
  background: true,
  store: true,
  ...extra,
});
const slowEngine = { script: { tokens: says('x'.repeat(400)) }, tokenDelayMs: 5 };

async function until(check: () => boolean | Promise<boolean>, rounds = 2000): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

describe('POST /v1/responses/{id}/cancel', () => {
  it('removes a queued task without starting generation', async () => {
    const { request, engine, jobs } = createJobsApp({ engine: slowEngine, jobSettings: { JOB_WORKERS: 1 } });
    const running = (await request.post('/v1/responses').send(body())).body.id as string;
    const queued = (await request.post('/v1/responses').send(body())).body.id as string;
    const res = await request.post(`/v1/responses/${queued}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: queued, object: 'response', status: 'cancelled' });
    await until(() => jobs.snapshot('anonymous', running)?.status === 'in_progress');
    expect(engine.calls).toHaveLength(1);
    const replay = sseEvents((await request.get(`/v1/responses/${queued}?stream=true`)).text);
    expect(replay.map((event) => event.type)).toEqual(['response.created', 'response.queued', 'error']);
    await jobs.shutdown(10_000);
  });

  it('signals a running task, frees its engine sequence, and ends its stream with the response_cancelled error event', async () => {
    const { request, engine, jobs } = createJobsApp({ engine: slowEngine });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => engine.activeCount === 1);
    const res = await request.post(`/v1/responses/${id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    expect(engine.activeCount).toBe(0);
    expect(engine.cancelledCount).toBe(1);
    const events = sseEvents((await request.get(`/v1/responses/${id}?stream=true`)).text);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'response_cancelled',
      error: { code: 'response_cancelled' },
    });
    expect(events.map((event) => event.type)).not.toContain('response.cancelled');
    expect(jobs.stats()).toMatchObject({ cancellations: 1, running: 0 });
  });

  it('is idempotent', async () => {
    const { request } = createJobsApp({ engine: slowEngine });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    expect((await request.post(`/v1/responses/${id}/cancel`)).body.status).toBe('cancelled');
    const again = await request.post(`/v1/responses/${id}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('cancelled');
  });

  it('answers a finished task with its final state', async () => {
    const { request, jobs } = createJobsApp();
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'completed');
    const res = await request.post(`/v1/responses/${id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
  });

  it('is a 400 for a response created without background, 404 for unknown and other-key ids', async () => {
    const { request } = createJobsApp({ server: { apiKeys: KEYS }, engine: slowEngine });
    const plain = await request
      .post('/v1/responses')
      .set(auth('key-a'))
      .send({ model: 'maya-test', input: 'Hi', store: true, max_output_tokens: 16 });
    expect(plain.status).toBe(200);
    const notBackground = await request.post(`/v1/responses/${plain.body.id}/cancel`).set(auth('key-a'));
    expect(notBackground.status).toBe(400);
    expect(notBackground.body.error).toMatchObject({ code: 'not_background', type: 'invalid_request_error' });
    expect((await request.post('/v1/responses/resp_nope/cancel').set(auth('key-a'))).status).toBe(404);
    const job = (await request.post('/v1/responses').set(auth('key-a')).send(body())).body.id as string;
    const other = await request.post(`/v1/responses/${job}/cancel`).set(auth('key-b'));
    expect(other.status).toBe(404);
    expect((await request.get(`/v1/responses/${job}`).set(auth('key-a'))).body.status).not.toBe('cancelled');
    expect((await request.post(`/v1/responses/${job}/cancel`).set(auth('key-a'))).body.status).toBe('cancelled');
  });
});

describe('client.responses.cancel (openai SDK)', () => {
  it('cancels a running task; a reader attached to its stream gets the response_cancelled APIError', async () => {
    const app = await listenJobsApp({ engine: slowEngine });
    try {
      const client = new OpenAI({ apiKey: 'unused', baseURL: `${app.origin}/v1`, maxRetries: 0 });
      const stream = await client.responses.create({
        model: 'maya-test',
        input: 'Hi',
        background: true,
        store: true,
        stream: true,
      });
      const seen: string[] = [];
      let id = '';
      const reading = (async () => {
        for await (const event of stream) {
          if (event.type === 'response.created') id = event.response.id;
          seen.push(event.type);
        }
      })().then(
        () => undefined,
        (err: unknown) => err,
      );
      await until(() => seen.includes('response.output_text.delta'));
      const cancelled = await client.responses.cancel(id);
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.id).toBe(id);
      const error = await reading;
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('response_cancelled');
      expect(seen[0]).toBe('response.created');
      expect(seen).not.toContain('response.cancelled');
      expect((await client.responses.retrieve(id)).status).toBe('cancelled');
    } finally {
      await app.close();
    }
  });
});
