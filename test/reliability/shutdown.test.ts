/**
 * How a response ends when the server, not the client, stops it (issue: SIGTERM once reported
 * truncated foreground responses as completed). The engine ending a sequence as 'cancelled'
 * without a client abort fails the response with `server_shutdown`; stop() lets foreground
 * requests run on for MAYA_SHUTDOWN_GRACE_S and then closes the model, so a generation still
 * running ends `failed` (Responses: response.failed; Chat: an error, never finish_reason "stop");
 * background tasks are cancelled by shutdown, as the spec says, and say so.
 * The model here is FakeEngine (shutdown is handler/service logic); CI sends SIGTERM to the real one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../cli/serve.ts';
import { DEFAULT_RESPONSES_SETTINGS, loadServerSettings } from '../../config/settings.ts';
import { silentLogger } from '../../handlers/app-deps.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { newResponseObject } from '../../responses/response-object.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { runResponse } from '../../responses/run-response.ts';
import { drainEvents } from '../../contract/stream-events.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';

let service: RunningService | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

/** A model that writes `tokens` tokens, one every `delayMs`, then ends its turn. */
async function serve(tokens: number, delayMs: number, graceS: number): Promise<RunningService> {
  const engine = new FakeEngine({ script: { tokens: Array.from({ length: tokens }, () => 7) }, tokenDelayMs: delayMs });
  const tokenizer = {
    encode: (text: string) => Array.from({ length: Math.max(1, Math.ceil(text.length / 4)) }, () => 1),
    tokenToId: () => undefined,
    createDecoder: () => ({ push: () => 'x', flush: () => '' }),
  };
  const base = stubRuntime({ engine });
  const { dialect } = scriptedRuntime([]);
  service = await startService({
    settings: DEFAULT_RESPONSES_SETTINGS,
    server: loadServerSettings({ MAYA_PORT: '0', MAYA_SHUTDOWN_GRACE_S: String(graceS) }),
    modelDir: '/models/x',
    loadRuntime: async () => ({ ...base, tokenizer, dialect }),
    logger: silentLogger,
  });
  await service.loaded;
  return service;
}

function sseEvents(text: string): Array<{ type: string; [key: string]: unknown }> {
  return text
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)) as { type: string });
}

async function firstChunk(
  response: Response,
): Promise<{ reader: ReadableStreamDefaultReader<Uint8Array>; text: string }> {
  const reader = response.body!.getReader();
  const { value } = await reader.read();
  return { reader, text: new TextDecoder().decode(value) };
}

async function rest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
  return text;
}

describe('run-response: an engine-side cancel is not a completion', () => {
  it("finish reason 'cancelled' without a client abort → failed, server_shutdown, partial usage", async () => {
    const runtime = scriptedRuntime([{ pieces: ['\n', 'One', ' two'], finishReason: 'cancelled' }]);
    const request = { input: 'Count', reasoning: { effort: 'none' as const } };
    const plan = planResponse(runtime, request, normaliseInput(request.input), 0);
    const events: string[] = [];
    const response = await drainEvents(
      runResponse(runtime, plan, newResponseObject(request, 'resp_x', runtime.id, 'in_progress')),
      (e) => events.push(e.type),
    );
    expect(response.status).toBe('failed');
    expect(response.error).toMatchObject({ code: 'server_shutdown' });
    expect(events.at(-1)).toBe('response.failed');
    expect(events).not.toContain('response.completed');
    expect(response.usage!.output_tokens).toBe(3);
  });
});

describe('stop() with generations in flight', () => {
  it('grace 0: a streaming response and a JSON response both end failed (server_shutdown), none completed', async () => {
    const running = await serve(2000, 5, 0);
    const body = JSON.stringify({ input: 'Write a lot', max_output_tokens: 3000, reasoning: { effort: 'none' } });
    const headers = { 'content-type': 'application/json' };
    const streaming = await fetch(`${running.origin}/v1/responses`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ ...JSON.parse(body), stream: true }),
    });
    const { reader, text: head } = await firstChunk(streaming);
    const json = fetch(`${running.origin}/v1/responses`, { method: 'POST', headers, body });
    const chat = fetch(`${running.origin}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Write a lot' }], max_tokens: 3000 }),
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const stopped = running.stop();
    const events = sseEvents(head + (await rest(reader)));
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe('response.failed');
    expect((terminal.response as { error: { code: string } }).error.code).toBe('server_shutdown');
    expect(events.map((e) => e.type)).not.toContain('response.completed');
    const final = (await (await json).json()) as { status: string; error: { code: string } };
    expect(final.status).toBe('failed');
    expect(final.error.code).toBe('server_shutdown');
    const chatAnswer = await chat;
    expect(chatAnswer.status).toBe(503);
    expect(((await chatAnswer.json()) as { error: { code: string } }).error.code).toBe('server_shutdown');
    await stopped;
  });

  it("a background task in flight is cancelled by shutdown (the spec's rule): its stream ends with response_cancelled", async () => {
    const running = await serve(2000, 5, 30);
    const headers = { 'content-type': 'application/json' };
    const created = await fetch(`${running.origin}/v1/responses`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        input: 'Write a lot',
        background: true,
        store: true,
        stream: true,
        reasoning: { effort: 'none' },
      }),
    });
    const { reader, text: head } = await firstChunk(created);
    const stopped = running.stop();
    const events = sseEvents(head + (await rest(reader)));
    const last = events.at(-1)!;
    expect(last.type).toBe('error');
    expect((last as { code?: string }).code).toBe('response_cancelled');
    expect(events.map((e) => e.type)).not.toContain('response.completed');
    await stopped;
  });

  it('within the grace period a foreground generation runs to its natural end (completed)', async () => {
    const running = await serve(40, 5, 30);
    const response = fetch(`${running.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Short', max_output_tokens: 100, reasoning: { effort: 'none' } }),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const stopped = running.stop();
    const final = (await (await response).json()) as { status: string; usage: { output_tokens: number } };
    expect(final.status).toBe('completed');
    expect(final.usage.output_tokens).toBe(40);
    await stopped;
  });
});

describe('requests that arrive once shutdown began', () => {
  it('are refused with 503 shutting_down (Retry-After), not started and not a 500', async () => {
    const { createTestApp } = await import('../helpers/test-app.ts');
    const base = scriptedRuntime([{ pieces: ['\n', 'Hi', '<|user|>'] }]);
    let stopping = false;
    const { request } = createTestApp({
      runtime: stubRuntime({ ...base, id: 'maya-test' }),
      deps: { isStopping: () => stopping },
    });
    expect((await request.post('/v1/responses').send({ input: 'Hi', reasoning: { effort: 'none' } })).status).toBe(200);
    stopping = true;
    for (const [path, body] of [
      ['/v1/responses', { input: 'Hi' }],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }] }],
    ] as const) {
      const res = await request.post(path).send(body);
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('shutting_down');
      expect(res.headers['retry-after']).toBe('1');
    }
    expect(base.engine.calls).toHaveLength(1);
  });
});
