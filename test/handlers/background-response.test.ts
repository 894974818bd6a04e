import { describe, expect, it } from 'vitest';
import { createJobsApp, says, sseEvents } from './background-fixtures.ts';

const KEYS = ['key-a', 'key-b'];
const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const body = (extra: Record<string, unknown> = {}) => ({
  model: 'maya-test',
  input: 'Hi',
  background: true,
  store: true,
  ...extra,
});

async function until(check: () => boolean | Promise<boolean>, rounds = 2000): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

/** A long script so a task stays running until cancelled. */
const slowEngine = { script: { tokens: says('x'.repeat(400)) }, tokenDelayMs: 5 };

describe('POST /v1/responses background:true', () => {
  it('returns the queued response at once; the task completes, is stored, and GET serves it', async () => {
    const { request, store, jobs } = createJobsApp();
    const res = await request.post('/v1/responses').send(body());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'response', status: 'queued', background: true, store: true, output: [] });
    const id = res.body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'completed');
    const got = await request.get(`/v1/responses/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.status).toBe('completed');
    expect(got.body.output[0].content[0].text).toBe('hello');
    expect((await store.get('anonymous', id))?.status).toBe('completed');
  });

  it('requires explicit store:true (400)', async () => {
    const { request, jobs } = createJobsApp();
    const res = await request.post('/v1/responses').send(body({ store: undefined }));
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('background');
    expect(jobs.stats()).toMatchObject({ admissions: 0 });
  });

  it('with stream:true attaches to the live stream: created (queued), queued, in_progress … completed', async () => {
    const { request } = createJobsApp();
    const res = await request.post('/v1/responses').send(body({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    const events = sseEvents(res.text);
    expect(events.slice(0, 3).map((event) => event.type)).toEqual([
      'response.created',
      'response.queued',
      'response.in_progress',
    ]);
    expect(events.filter((event) => event.type === 'response.created')).toHaveLength(1);
    expect((events[0]!.response as { status: string }).status).toBe('queued');
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('rejects an input snapshot over JOB_INPUT_BYTES with 413 and queues nothing', async () => {
    const { request, engine, jobs } = createJobsApp({ jobSettings: { JOB_INPUT_BYTES: 2048 } });
    const res = await request.post('/v1/responses').send(body({ input: 'y'.repeat(3000) }));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'input_too_large', type: 'invalid_request_error' });
    expect(engine.calls).toHaveLength(0);
    expect(jobs.stats()).toMatchObject({ records: 0 });
  });

  it('answers 429 past JOB_OWNER_ENTRIES active tasks for one key, not for another key', async () => {
    const { request, jobs } = createJobsApp({
      server: { apiKeys: KEYS },
      engine: slowEngine,
      jobSettings: { JOB_OWNER_ENTRIES: 1 },
    });
    expect((await request.post('/v1/responses').set(auth('key-a')).send(body())).status).toBe(200);
    const second = await request.post('/v1/responses').set(auth('key-a')).send(body());
    expect(second.status).toBe(429);
    expect(second.body.error).toMatchObject({ code: 'too_many_tasks', type: 'requests' });
    expect(second.headers['retry-after']).toBeDefined();
    expect((await request.post('/v1/responses').set(auth('key-b')).send(body())).status).toBe(200);
    await jobs.shutdown(10_000);
  });

  it('answers 429 when JOB_ENTRIES records are all active', async () => {
    const { request, jobs } = createJobsApp({ engine: slowEngine, jobSettings: { JOB_ENTRIES: 2 } });
    expect((await request.post('/v1/responses').send(body())).status).toBe(200);
    expect((await request.post('/v1/responses').send(body())).status).toBe(200);
    expect((await request.post('/v1/responses').send(body())).status).toBe(429);
    await jobs.shutdown(10_000);
  });
});

describe('GET /v1/responses/{id} for a background task', () => {
  it('shows queued/in_progress while active and its one terminal state afterwards', async () => {
    const { request, jobs } = createJobsApp({ engine: slowEngine, jobSettings: { JOB_WORKERS: 1 } });
    const first = (await request.post('/v1/responses').send(body())).body.id as string;
    const second = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(async () => (await request.get(`/v1/responses/${first}`)).body.status === 'in_progress');
    expect((await request.get(`/v1/responses/${second}`)).body.status).toBe('queued');
    await jobs.shutdown(10_000);
    expect((await request.get(`/v1/responses/${first}`)).body.status).toBe('cancelled');
  });

  it('replays events strictly after starting_after; 400 for a future cursor; 410 behind the window', async () => {
    const { request, jobs } = createJobsApp({ jobSettings: { EVENT_COUNT: 6 } });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'completed');
    const tail = await request.get(`/v1/responses/${id}?stream=true&starting_after=9`);
    expect(tail.status).toBe(200);
    const events = sseEvents(tail.text);
    expect(events[0]!.sequence_number).toBe(10);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => 10 + index));
    expect(events.at(-1)!.type).toBe('response.completed');
    const future = await request.get(`/v1/responses/${id}?stream=true&starting_after=9999`);
    expect(future.status).toBe(400);
    expect(future.body.error.param).toBe('starting_after');
    const behind = await request.get(`/v1/responses/${id}?stream=true&starting_after=0`);
    expect(behind.status).toBe(410);
    expect(behind.body.error).toMatchObject({ code: 'events_expired', type: 'invalid_request_error' });
    const full = await request.get(`/v1/responses/${id}?stream=true`);
    expect(full.status).toBe(410);
  });

  it('answers 409 for stream=true on a stored non-background response, 404 for unknown and other-key ids', async () => {
    const { request } = createJobsApp({ server: { apiKeys: KEYS } });
    const plain = await request
      .post('/v1/responses')
      .set(auth('key-a'))
      .send({ model: 'maya-test', input: 'Hi', store: true });
    expect(plain.status).toBe(200);
    const streamed = await request.get(`/v1/responses/${plain.body.id}?stream=true`).set(auth('key-a'));
    expect(streamed.status).toBe(409);
    const job = (await request.post('/v1/responses').set(auth('key-a')).send(body())).body.id as string;
    expect((await request.get(`/v1/responses/${job}`).set(auth('key-b'))).status).toBe(404);
    expect((await request.get(`/v1/responses/${job}?stream=true`).set(auth('key-b'))).status).toBe(404);
    expect((await request.get('/v1/responses/resp_unknown?stream=true').set(auth('key-a'))).status).toBe(404);
  });

  it('keeps a finished record retrievable and continuable after the cache evicted its copy', async () => {
    const { request, jobs, store } = createJobsApp({ jobSettings: { CACHE_ENTRIES: 1 } });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'completed');
    await request.post('/v1/responses').send({ model: 'maya-test', input: 'evict it', store: true });
    expect(await store.get('anonymous', id)).toBeUndefined();
    expect((await request.get(`/v1/responses/${id}`)).body.status).toBe('completed');
    const next = await request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'more', previous_response_id: id, store: true });
    expect(next.status).toBe(200);
    const items = await request.get(`/v1/responses/${next.body.id}/input_items?order=asc`);
    expect(items.body.data.map((item: { role: string }) => item.role)).toEqual(['user', 'assistant', 'user']);
  });
});

describe('GET /v1/responses/{id}/input_items for a background task', () => {
  it('lists the inputs of a running task page by page; unknown cursors are 400, other keys 404', async () => {
    const { request, jobs } = createJobsApp({ server: { apiKeys: KEYS }, engine: slowEngine });
    const input = Array.from({ length: 45 }, (_, index) => ({ type: 'message', role: 'user', content: `m${index}` }));
    const id = (await request.post('/v1/responses').set(auth('key-a')).send(body({ input }))).body.id as string;
    const texts: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await request
        .get(`/v1/responses/${id}/input_items?order=asc&limit=20${after ? `&after=${after}` : ''}`)
        .set(auth('key-a'));
      expect(res.status).toBe(200);
      texts.push(...res.body.data.map((item: { content: Array<{ text: string }> }) => item.content[0]!.text));
      after = res.body.last_id;
      if (!res.body.has_more) break;
    }
    expect(texts).toEqual(input.map((item) => item.content));
    expect((await request.get(`/v1/responses/${id}`).set(auth('key-a'))).body.status).not.toBe('completed');
    const bad = await request.get(`/v1/responses/${id}/input_items?after=msg_nope`).set(auth('key-a'));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ param: 'after', code: 'unknown_cursor' });
    expect((await request.get(`/v1/responses/${id}/input_items`).set(auth('key-b'))).status).toBe(404);
    await jobs.shutdown(10_000);
  });
});

describe('rules', () => {
  it('DELETE of an active task is 409; after it finished, DELETE removes it', async () => {
    const { request, jobs } = createJobsApp({ engine: slowEngine });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    const active = await request.delete(`/v1/responses/${id}`);
    expect(active.status).toBe(409);
    expect(active.body.error.code).toBe('response_in_progress');
    await request.post(`/v1/responses/${id}/cancel`);
    await until(() => jobs.snapshot('anonymous', id)?.status === 'cancelled');
    expect((await request.delete(`/v1/responses/${id}`)).body).toEqual({ id, object: 'response', deleted: true });
    expect((await request.get(`/v1/responses/${id}`)).status).toBe(404);
  });

  it('continuing a running task is 409; continuing a cancelled one is 400', async () => {
    const { request, jobs } = createJobsApp({ engine: slowEngine });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'in_progress');
    const running = await request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'next', previous_response_id: id });
    expect(running.status).toBe(409);
    expect(running.body.error.param).toBe('previous_response_id');
    await request.post(`/v1/responses/${id}/cancel`);
    const cancelled = await request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'next', previous_response_id: id });
    expect(cancelled.status).toBe(400);
    expect(cancelled.body.error).toMatchObject({ param: 'previous_response_id', code: 'invalid_previous_response' });
  });

  it('a failed task cannot be continued (400)', async () => {
    const { request, jobs } = createJobsApp({
      engine: { script: { tokens: [104], finishReason: 'error', error: 'boom' } },
    });
    const id = (await request.post('/v1/responses').send(body())).body.id as string;
    await until(() => jobs.snapshot('anonymous', id)?.status === 'failed');
    const res = await request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'next', previous_response_id: id });
    expect(res.status).toBe(400);
  });
});

describe('deadline', () => {
  it('fails a task still running JOB_TIMEOUT_S after admission, once its engine sequence is freed', async () => {
    const { request, engine, jobs } = createJobsApp({
      engine: { script: { tokens: says('x'.repeat(4000)) }, tokenDelayMs: 5 },
      jobSettings: { JOB_TIMEOUT_S: 1 },
    });
    const res = await request.post('/v1/responses').send(body({ stream: true, max_output_tokens: 3000 }));
    const events = sseEvents(res.text);
    const terminal = events.at(-1)!;
    expect(terminal).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'job_timeout' } },
    });
    expect(engine.activeCount).toBe(0);
    expect(engine.cancelledCount).toBe(1);
    expect((await request.get(`/v1/responses/${(terminal.response as { id: string }).id}`)).body.status).toBe('failed');
    expect(jobs.stats()).toMatchObject({ deadline_failures: 1 });
  });
});

describe('shutdown', () => {
  it('cancels running and queued tasks (their readers get response_cancelled) and refuses new ones with 503', async () => {
    const { request, engine, jobs } = createJobsApp({ engine: slowEngine, jobSettings: { JOB_WORKERS: 1 } });
    const live = request
      .post('/v1/responses')
      .send(body({ stream: true }))
      .then((res) => res);
    await until(() => engine.activeCount === 1);
    const queued = (await request.post('/v1/responses').send(body())).body.id as string;
    await jobs.shutdown(10_000);
    expect(engine.activeCount).toBe(0);
    const events = sseEvents((await live).text);
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'response_cancelled' });
    expect((await request.get(`/v1/responses/${queued}`)).body.status).toBe('cancelled');
    expect(engine.calls).toHaveLength(1);
    const refused = await request.post('/v1/responses').send(body());
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('shutting_down');
  });
});

describe('/v1/status responses_jobs', () => {
  it('reports admissions, rejections and cancellations without credential identifiers', async () => {
    const { request } = createJobsApp({
      server: { apiKeys: KEYS },
      engine: slowEngine,
      jobSettings: { JOB_OWNER_ENTRIES: 1 },
    });
    const id = (await request.post('/v1/responses').set(auth('key-a')).send(body())).body.id as string;
    await request.post('/v1/responses').set(auth('key-a')).send(body());
    await request.post(`/v1/responses/${id}/cancel`).set(auth('key-a'));
    const status = await request.get('/v1/status').set(auth('key-a'));
    expect(status.status).toBe(200);
    expect(status.body.responses_jobs).toMatchObject({
      admissions: 1,
      rejections: 1,
      cancellations: 1,
      records: 1,
      queued: 0,
      running: 0,
    });
    const metrics = await request.get('/metrics/prometheus').set(auth('key-a'));
    expect(metrics.text).toContain('maya:responses_jobs_cancellations_total 1');
    expect(metrics.text).not.toContain('key-a');
  });
});
