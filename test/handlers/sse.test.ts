/**
 * handlers/sse.ts streamSse, driven through createApp with a handler that streams a scripted
 * event source: whole `event:`/`data:` frames, `: keep-alive` comments during a silence, an error
 * raised after the headers becomes a contract `error` event, `data: [DONE]` last, and a client
 * that goes away aborts `onDisconnect` and ends the producer.
 */
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { badRequest } from '../../contract/errors.ts';
import { sseFrame, streamSse, type SseEvent, type SseOptions } from '../../handlers/sse.ts';
import { createTestApp, listenTestApp } from '../helpers/test-app.ts';
import { rawText } from '../helpers/sse.ts';
import { schemaProblems } from '../e2e/stream-contract.ts';

type Source = (signal: AbortSignal) => AsyncIterable<SseEvent>;

function appStreaming(source: Source, options: Omit<SseOptions, 'onDisconnect'> = {}) {
  const state = { disconnect: new AbortController(), finished: false };
  const handlers = {
    createResponse: async (ctx: Parameters<typeof streamSse>[0]) => {
      await streamSse(ctx, source(state.disconnect.signal), { ...options, onDisconnect: state.disconnect });
      state.finished = true;
    },
  };
  return { state, handlers };
}

const post = (request: ReturnType<typeof createTestApp>['request']) =>
  request.post('/v1/responses').send({ model: 'maya-test', input: 'x', stream: true }).buffer(true).parse(rawText);

describe('sseFrame', () => {
  it('writes one event as `event: T\\ndata: <one-line JSON>\\n\\n`', () => {
    const event = { type: 'response.output_text.delta', sequence_number: 4, delta: 'a\nb' };
    expect(sseFrame(event)).toBe(`event: response.output_text.delta\ndata: ${JSON.stringify(event)}\n\n`);
    expect(sseFrame(event).split('\n')).toHaveLength(4);
  });
});

describe('streamSse', () => {
  it('frames every event, then data: [DONE]; headers are those of an event stream', async () => {
    const { handlers } = appStreaming(async function* () {
      yield { type: 'response.created', sequence_number: 0 };
      yield { type: 'response.completed', sequence_number: 1 };
    });
    const res = await post(createTestApp({ handlers }).request);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body).toBe(
      'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n' +
        'event: response.completed\ndata: {"type":"response.completed","sequence_number":1}\n\n' +
        'data: [DONE]\n\n',
    );
  });

  it('writes each frame whole in one write (and nothing else in that write)', async () => {
    const writes: string[] = [];
    const source: Source = async function* () {
      yield { type: 'response.created', sequence_number: 0 };
      for (let i = 1; i < 50; i++)
        yield { type: 'response.output_text.delta', sequence_number: i, delta: `piece ${i} `.repeat(i) };
      yield { type: 'response.completed', sequence_number: 50 };
    };
    const handlers = {
      createResponse: async (ctx: Parameters<typeof streamSse>[0]) => {
        const original = ctx.res.write.bind(ctx.res) as (chunk: string) => boolean;
        ctx.res.write = ((chunk: string) => {
          writes.push(String(chunk));
          return original(chunk);
        }) as typeof ctx.res.write;
        await streamSse(ctx, source(new AbortController().signal));
      },
    };
    const res = await post(createTestApp({ handlers }).request);
    const frames = writes.filter((w) => w.startsWith('event: '));
    expect(frames).toHaveLength(51);
    for (const frame of frames) expect(frame).toMatch(/^event: [a-z_.]+\ndata: \{[^\n]*\}\n\n$/);
    expect(writes.join('')).toBe(res.body);
    expect(frames.map((frame) => JSON.parse(frame.split('\ndata: ')[1]!).sequence_number)).toEqual(
      Array.from({ length: 51 }, (_, i) => i),
    );
  });

  it('writes `: keep-alive` comments during a silence longer than keepAliveMs, between whole frames', async () => {
    const { handlers } = appStreaming(
      async function* () {
        yield { type: 'response.created', sequence_number: 0 };
        await sleep(300);
        yield { type: 'response.completed', sequence_number: 1 };
      },
      { keepAliveMs: 40 },
    );
    const res = await post(createTestApp({ handlers }).request);
    const blocks = (res.body as string).split('\n\n').slice(0, -1);
    expect(blocks[0]).toMatch(/^event: response.created\n/);
    expect(blocks.at(-2)).toMatch(/^event: response.completed\n/);
    expect(blocks.at(-1)).toBe('data: [DONE]');
    const middle = blocks.slice(1, -2);
    expect(middle.length).toBeGreaterThanOrEqual(1);
    expect(new Set(middle)).toEqual(new Set([': keep-alive']));
  });

  it('writes no keep-alive while events flow faster than keepAliveMs', async () => {
    const { handlers } = appStreaming(
      async function* () {
        for (let i = 0; i < 20; i++) yield { type: 'response.output_text.delta', sequence_number: i };
      },
      { keepAliveMs: 10_000 },
    );
    const res = await post(createTestApp({ handlers }).request);
    expect(res.body).not.toContain('keep-alive');
  });

  it('an error after the headers becomes an `error` event (contract ResponseErrorEvent) with the next sequence number, then [DONE]', async () => {
    const { handlers } = appStreaming(async function* () {
      yield { type: 'response.created', sequence_number: 0 };
      yield { type: 'response.in_progress', sequence_number: 1 };
      throw badRequest('input', 'Nope.', 'bad_thing');
    });
    const res = await post(createTestApp({ handlers }).request);
    expect(res.status).toBe(200);
    const blocks = (res.body as string).split('\n\n').slice(0, -1);
    expect(blocks).toHaveLength(4);
    expect(blocks[2]).toMatch(/^event: error\ndata: /);
    const error = JSON.parse(blocks[2]!.split('\ndata: ')[1]!) as Record<string, unknown>;
    expect(error).toEqual({
      type: 'error',
      sequence_number: 2,
      code: 'bad_thing',
      message: 'Nope.',
      param: 'input',
      error: { type: 'invalid_request_error', code: 'bad_thing', message: 'Nope.', param: 'input' },
    });
    expect(schemaProblems('ResponseErrorEvent', error)).toBe('');
    expect(blocks[3]).toBe('data: [DONE]');
  });

  it('an unexpected error is reported as a generic server_error (no internal message leaks)', async () => {
    const { handlers } = appStreaming(async function* () {
      yield { type: 'response.created', sequence_number: 0 };
      throw new Error('secret internal detail');
    });
    const res = await post(createTestApp({ handlers }).request);
    expect(res.body).not.toContain('secret internal detail');
    expect(res.body).toContain('"code":"server_error"');
  });

  it('a client that disconnects aborts onDisconnect and the producer is returned (its finally runs)', async () => {
    let finalised = false;
    let produced = 0;
    const { state, handlers } = appStreaming(async function* (signal) {
      try {
        for (let i = 0; i < 10_000 && !signal.aborted; i++) {
          produced++;
          yield { type: 'response.output_text.delta', sequence_number: i };
          await sleep(5);
        }
      } finally {
        finalised = true;
      }
    });
    const served = await listenTestApp({ handlers });
    try {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(
          `${served.origin}/v1/responses`,
          { method: 'POST', headers: { 'content-type': 'application/json' } },
          (res) => {
            let count = 0;
            res.on('data', (chunk: Buffer) => {
              count += chunk.toString().split('\n\n').length - 1;
              if (count >= 3) {
                req.destroy();
                resolve();
              }
            });
            res.on('error', () => {});
          },
        );
        req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
        req.end(JSON.stringify({ model: 'maya-test', input: 'x', stream: true }));
      });
      await vi.waitFor(
        () => {
          expect(state.disconnect.signal.aborted).toBe(true);
          expect(finalised).toBe(true);
          expect(state.finished).toBe(true);
        },
        { timeout: 10_000, interval: 10 },
      );
      expect(produced).toBeLessThan(10_000);
    } finally {
      await served.close();
    }
  });

  it('a normal end does not abort onDisconnect', async () => {
    const { state, handlers } = appStreaming(async function* () {
      yield { type: 'response.completed', sequence_number: 0 };
    });
    await post(createTestApp({ handlers }).request);
    await sleep(20);
    expect(state.finished).toBe(true);
    expect(state.disconnect.signal.aborted).toBe(false);
  });
});
