import { request as httpRequest, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { listenJobsApp, says } from './background-fixtures.ts';

const slowEngine = { script: { tokens: says('x'.repeat(400)) }, tokenDelayMs: 5 };

async function until(check: () => boolean | Promise<boolean>, rounds = 2000): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

function sdk(origin: string, apiKey = 'unused'): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${origin}/v1`, maxRetries: 0 });
}

async function drain<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

/** A raw SSE reader on a socket we can drop; resolves once the first bytes arrived. */
function openRawStream(origin: string, path: string): Promise<{ res: IncomingMessage; drop(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${origin}${path}`, { method: 'GET' }, (res) => {
      res.once('data', () => resolve({ res, drop: () => req.destroy() }));
    });
    req.on('error', () => {});
    req.once('error', reject);
    req.end();
  });
}

describe('client.responses.retrieve(id, {stream:true, starting_after}) (openai SDK)', () => {
  it('replays the whole stream equal to the live one, and strictly after starting_after', async () => {
    const app = await listenJobsApp();
    try {
      const client = sdk(app.origin);
      const live = await drain(
        await client.responses.create({ model: 'maya-test', input: 'Hi', background: true, store: true, stream: true }),
      );
      const id = (live[0] as { response: { id: string } }).response.id;
      expect(live.at(-1)!.type).toBe('response.completed');
      const replay = await drain(await client.responses.retrieve(id, { stream: true }));
      expect(replay).toEqual(live);
      const tail = await drain(await client.responses.retrieve(id, { stream: true, starting_after: 5 }));
      expect(tail.map((event) => event.sequence_number)).toEqual(live.slice(6).map((event) => event.sequence_number));
      expect(tail[0]!.sequence_number).toBe(6);
    } finally {
      await app.close();
    }
  });

  it('works with the SDK stream helper resuming by response_id (one response.created first)', async () => {
    const app = await listenJobsApp();
    try {
      const client = sdk(app.origin);
      const queued = await client.responses.create({ model: 'maya-test', input: 'Hi', background: true, store: true });
      expect(queued.status).toBe('queued');
      const final = await client.responses.stream({ response_id: queued.id, starting_after: 3 }).finalResponse();
      expect(final.status).toBe('completed');
      expect(final.output_text).toBe('hello');
    } finally {
      await app.close();
    }
  });

  it('answers a future cursor with 400 and a cursor behind the retained window with 410', async () => {
    const app = await listenJobsApp({ jobSettings: { EVENT_COUNT: 4 } });
    try {
      const client = sdk(app.origin);
      const queued = await client.responses.create({ model: 'maya-test', input: 'Hi', background: true, store: true });
      await until(() => app.jobs.snapshot('anonymous', queued.id)?.status === 'completed');
      const future = await client.responses.retrieve(queued.id, { stream: true, starting_after: 500 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(future).toBeInstanceOf(OpenAI.BadRequestError);
      const behind = await client.responses.retrieve(queued.id, { stream: true, starting_after: 1 }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(behind).toBeInstanceOf(OpenAI.APIError);
      expect((behind as InstanceType<typeof OpenAI.APIError>).status).toBe(410);
    } finally {
      await app.close();
    }
  });
});

describe('stream readers', () => {
  it('a reader that disconnects frees its slot and never stops the task', async () => {
    const app = await listenJobsApp({ engine: slowEngine });
    try {
      const queued = await sdk(app.origin).responses.create({
        model: 'maya-test',
        input: 'Hi',
        background: true,
        store: true,
      });
      const reader = await openRawStream(app.origin, `/v1/responses/${queued.id}?stream=true`);
      expect(app.jobs.stats()).toMatchObject({ readers: 1 });
      reader.drop();
      await until(() => app.jobs.stats().readers === 0);
      expect(app.jobs.snapshot('anonymous', queued.id)!.status).toBe('in_progress');
      await until(() => app.jobs.snapshot('anonymous', queued.id)!.status === 'completed');
      expect(app.engine.cancelledCount).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('admits STREAM_OWNER_READERS per key and STREAM_READERS in all, 429 past them, creation included', async () => {
    const app = await listenJobsApp({
      engine: slowEngine,
      server: { apiKeys: ['key-a', 'key-b', 'key-c'] },
      jobSettings: { STREAM_OWNER_READERS: 1, STREAM_READERS: 2 },
    });
    try {
      const a = sdk(app.origin, 'key-a');
      const b = sdk(app.origin, 'key-b');
      const jobA = await a.responses.create({ model: 'maya-test', input: 'Hi', background: true, store: true });
      const first = await a.responses.retrieve(jobA.id, { stream: true });
      const iterator = first[Symbol.asyncIterator]();
      await iterator.next();
      const ownerLimit = await a.responses.retrieve(jobA.id, { stream: true }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(ownerLimit).toBeInstanceOf(OpenAI.RateLimitError);
      expect((ownerLimit as InstanceType<typeof OpenAI.APIError>).code).toBe('too_many_readers');
      const creation = await a.responses
        .create({ model: 'maya-test', input: 'Hi', background: true, store: true, stream: true })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(creation).toBeInstanceOf(OpenAI.RateLimitError);
      expect(app.jobs.stats()).toMatchObject({ admissions: 1 });
      const second = await b.responses.create({
        model: 'maya-test',
        input: 'Hi',
        background: true,
        store: true,
        stream: true,
      });
      const secondIterator = second[Symbol.asyncIterator]();
      await secondIterator.next();
      const global = await b.responses.retrieve(jobA.id, { stream: true }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(global).toBeInstanceOf(OpenAI.NotFoundError);
      const c = sdk(app.origin, 'key-c');
      const jobC = await c.responses.create({ model: 'maya-test', input: 'Hi', background: true, store: true });
      const globalLimit = await c.responses.retrieve(jobC.id, { stream: true }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(globalLimit).toBeInstanceOf(OpenAI.RateLimitError);
      first.controller.abort();
      second.controller.abort();
      await until(() => app.jobs.stats().readers === 0);
      await app.jobs.shutdown(10_000);
    } finally {
      await app.close();
    }
  });

  it('drops a reader whose socket writes stall past STREAM_TIMEOUT_S, freeing its slot; the task completes', async () => {
    const app = await listenJobsApp({
      engine: { script: { tokens: says('x'.repeat(100)) }, tokenDelayMs: 5, info: { contextLength: 4_000_000 } },
      jobSettings: { STREAM_TIMEOUT_S: 1, JOB_INPUT_BYTES: 8 << 20, EVENT_BYTES: 32 << 20 },
    });
    try {
      // Each lifecycle event echoes 1.5 MB of instructions: more than the socket buffers hold.
      const queued = await sdk(app.origin).responses.create({
        model: 'maya-test',
        input: 'Hi',
        instructions: 'i'.repeat(1_500_000),
        background: true,
        store: true,
      });
      let response: IncomingMessage | undefined;
      const req = httpRequest(`${app.origin}/v1/responses/${queued.id}?stream=true`, (res) => {
        response = res;
        res.pause();
      });
      req.on('error', () => {});
      req.end();
      await until(() => app.jobs.stats().readers === 1);
      await until(() => app.jobs.stats().readers === 0);
      expect(response?.statusCode).toBe(200);
      const received = await new Promise<string>((resolve) => {
        let text = '';
        response!.setEncoding('utf8');
        response!.on('data', (chunk: string) => void (text += chunk));
        response!.once('close', () => resolve(text));
        response!.resume();
      });
      expect(received).not.toContain('data: [DONE]');
      await until(() => app.jobs.snapshot('anonymous', queued.id)!.status === 'completed');
      expect(app.engine.cancelledCount).toBe(0);
      req.destroy();
    } finally {
      await app.close();
    }
  });

  it('ends a connected reader the event window slid past with a terminal error event (410 events_expired)', async () => {
    const app = await listenJobsApp({
      engine: { script: { tokens: says('x'.repeat(60)) }, tokenDelayMs: 1, info: { contextLength: 4_000_000 } },
      jobSettings: { STREAM_TIMEOUT_S: 120, JOB_INPUT_BYTES: 8 << 20, EVENT_BYTES: 32 << 20, EVENT_COUNT: 8 },
    });
    try {
      // The creating request is the reader: its first write (1.5 MB) blocks while it is paused.
      const payload = JSON.stringify({
        model: 'maya-test',
        input: 'Hi',
        instructions: 'i'.repeat(1_500_000),
        background: true,
        store: true,
        stream: true,
      });
      let response: IncomingMessage | undefined;
      const req = httpRequest(
        `${app.origin}/v1/responses`,
        { method: 'POST', headers: { 'Content-Type': 'application/json' } },
        (res) => {
          response = res;
          res.pause();
        },
      );
      req.on('error', () => {});
      req.end(payload);
      await until(() => response !== undefined && app.jobs.stats().readers === 1);
      await until(() => app.jobs.stats().admissions === 1 && app.jobs.stats().running === 0);
      const received = await new Promise<string>((resolve) => {
        let text = '';
        response!.setEncoding('utf8');
        response!.on('data', (chunk: string) => void (text += chunk));
        response!.once('end', () => resolve(text));
        response!.resume();
      });
      const frames = received.split('\n\n').filter((frame) => frame.startsWith('event: '));
      const last = JSON.parse(frames.at(-1)!.split('\n')[1]!.slice(6)) as { type: string; code: string; param: string };
      expect(last).toMatchObject({ type: 'error', code: 'events_expired', param: 'starting_after' });
      expect(frames.some((frame) => frame.startsWith('event: response.completed'))).toBe(false);
      const first = JSON.parse(frames[0]!.split('\n')[1]!.slice(6)) as { type: string; response: { id: string } };
      expect(first.type).toBe('response.created');
      expect(app.jobs.snapshot('anonymous', first.response.id)!.status).toBe('completed');
      expect(received.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(app.jobs.stats()).toMatchObject({ readers: 0 });
    } finally {
      await app.close();
    }
  });
});
