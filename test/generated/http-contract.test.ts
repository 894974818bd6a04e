/**
 * The running app against its own contract: each request goes through the Koa app in-process,
 * and each answer must use a status the operation declares and a body (JSON, or every SSE
 * frame) that validates against the schema the document gives for that status and media type.
 */
import { describe, expect, it } from 'vitest';
import type { ValidateFunction } from 'ajv';
import { operations, type OperationId } from '../../generated/operations.ts';
import { createChatCompletion } from '../../handlers/create-chat-completion.ts';
import { countMessageTokens } from '../../handlers/count-message-tokens.ts';
import { createMessage } from '../../handlers/create-message.ts';
import { createResponse } from '../../handlers/create-response.ts';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
import { createJobsApp, says } from '../handlers/background-fixtures.ts';
import { createContractAjv, errorsOf, loadDocument } from './contract-schemas.ts';

const doc = loadDocument();
const ajv = createContractAjv(doc);
type Json = Record<string, unknown>;

function responseSchema(operationId: OperationId, status: number, mediaType: string): ValidateFunction {
  const { path, method } = operations[operationId];
  const declared = (doc.paths[path]![method] as { responses: Record<string, Json> }).responses[String(status)];
  if (!declared) throw new Error(`${operationId} does not declare status ${status}`);
  const resolved = typeof declared.$ref === 'string' ? (doc.components.responses as Record<string, Json>)[declared.$ref.split('/').pop()!]! : declared;
  const schema = (resolved.content as Record<string, { schema: Json }> | undefined)?.[mediaType]?.schema;
  if (!schema) throw new Error(`${operationId} ${status} has no ${mediaType} body`);
  return ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"contract#/components/')) as Json);
}

/** One `event:`/`data:` frame per blank-line-separated block; `[DONE]` ends the stream. */
function sseFrames(text: string): { event?: string; data: string }[] {
  return text.split('\n\n').filter((block) => block.trim() !== '' && !block.startsWith(':')).map((block) => {
    const lines = block.split('\n');
    return {
      event: lines.find((l) => l.startsWith('event: '))?.slice(7),
      data: lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'),
    };
  });
}

interface Answer { status: number; headers: Record<string, string>; text: string; body: unknown }

/** Asserts the answer matches the contract of `operationId`; returns the parsed JSON body or events. */
function conforms(operationId: OperationId, res: Answer): unknown {
  expect(operations[operationId].statuses as readonly number[], `${operationId} answered an undeclared ${res.status}`).toContain(res.status);
  const mediaType = String(res.headers['content-type']).split(';')[0]!;
  const validate = responseSchema(operationId, res.status, mediaType);
  if (mediaType === 'text/event-stream') {
    const frames = sseFrames(res.text);
    // Anthropic's streams end with their last event; the OpenAI ones with `data: [DONE]`.
    const isAnthropic = operations[operationId].errorFormat === 'anthropic';
    if (!isAnthropic) expect(frames.at(-1)?.data).toBe('[DONE]');
    const events = (isAnthropic ? frames : frames.slice(0, -1)).map((frame) => ({ frame, value: JSON.parse(frame.data) as Json }));
    for (const { frame, value } of events) {
      expect(validate(value), `${String(value.type ?? value.object)}: ${errorsOf(validate)}`).toBe(true);
      if (frame.event !== undefined) expect(frame.event).toBe(value.type);
    }
    return events.map((e) => e.value);
  }
  const body = mediaType === 'application/json' ? JSON.parse(res.text) : res.text;
  expect(validate(body), errorsOf(validate)).toBe(true);
  return body;
}

/** The raw text of a streamed body (supertest would otherwise try to parse it). */
function rawText(res: unknown, done: (error: Error | null, body: string) => void): void {
  const stream = res as NodeJS.ReadableStream;
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  stream.on('end', () => done(null, text));
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

function appWithModel(pieces = ['<think>', 'Greeting', '</think>', '\n', 'Hello', ' there!', '<|user|>']) {
  const scripted = scriptedRuntime([{ pieces }]);
  const runtime = stubRuntime({ engine: scripted.engine, tokenizer: scripted.tokenizer, dialect: scripted.dialect, contextLength: scripted.contextLength });
  // Bound here explicitly: handlers/index.ts may still map these operations to 501.
  return createTestApp({ runtime, handlers: { createResponse, createChatCompletion, createMessage, countMessageTokens } });
}

describe('service endpoints conform', () => {
  it('health (loaded and loading), models, status, metrics and the document', async () => {
    const { request, setRuntime } = appWithModel();
    expect(conforms('getHealth', await request.get('/health'))).toEqual({ status: 'ok' });
    conforms('listModels', await request.get('/v1/models'));
    conforms('retrieveModel', await request.get('/v1/models/maya-test'));
    expect(conforms('retrieveModel', await request.get('/v1/models/unknown-model'))).toMatchObject({ error: { code: 'model_not_found' } });
    conforms('getStatus', await request.get('/v1/status'));
    expect(conforms('getMetrics', await request.get('/metrics/prometheus'))).toEqual(expect.stringContaining('# HELP'));
    expect(conforms('getOpenApi', await request.get('/openapi.json'))).toEqual(JSON.parse(JSON.stringify(doc)));
    setRuntime(undefined);
    expect(conforms('getHealth', await request.get('/health'))).toEqual({ status: 'loading' });
    conforms('listModels', await request.get('/v1/models'));
  });

  it('401 without a key when keys are configured', async () => {
    const { request } = createTestApp({ server: { apiKeys: ['k1'] } });
    const res = await request.get('/v1/models');
    expect(res.status).toBe(401);
    conforms('listModels', res);
  });
});

describe('Responses endpoints conform', () => {
  it('create (JSON), retrieve, list input items, delete, then 404', async () => {
    const { request } = appWithModel();
    const created = conforms('createResponse', await request.post('/v1/responses').send({ input: 'Hello', store: true })) as Json;
    const id = String(created.id);
    conforms('getResponse', await request.get(`/v1/responses/${id}`));
    const items = conforms('listInputItems', await request.get(`/v1/responses/${id}/input_items?order=asc&limit=5`)) as Json;
    expect((items.data as unknown[]).length).toBe(1);
    expect(conforms('deleteResponse', await request.delete(`/v1/responses/${id}`))).toEqual({ id, object: 'response', deleted: true });
    const gone = await request.get(`/v1/responses/${id}`);
    expect(gone.status).toBe(404);
    conforms('getResponse', gone);
  });

  it('create (SSE): every frame is a contract event named by its type', async () => {
    const { request } = appWithModel();
    const res = await request.post('/v1/responses').send({ input: 'Hello', stream: true }).buffer(true).parse(rawText);
    const events = conforms('createResponse', { ...res, text: res.body as string }) as Json[];
    expect(events[0]!.type).toBe('response.created');
    expect(events.at(-1)!.type).toBe('response.completed');
  });

  it('400s for an unknown parameter, a bad query value and an unsupported feature', async () => {
    const { request } = appWithModel();
    conforms('createResponse', await request.post('/v1/responses').send({ input: 'x', frobnicate: 1 }));
    conforms('createResponse', await request.post('/v1/responses').send({ input: 'x', conversation: 'conv_1' }));
    conforms('listInputItems', await request.get('/v1/responses/resp_x/input_items?limit=101'));
  });
});

describe('background responses conform', () => {
  it('queued create, stream replay (full and after a cursor), future cursor 400, cancel, delete', async () => {
    const { request } = createJobsApp({ engine: { script: { tokens: says('hello') } } });
    const queued = conforms('createResponse', await request.post('/v1/responses').send({ input: 'Hi', background: true, store: true })) as Json;
    expect(queued.status).toBe('queued');
    const id = String(queued.id);
    await until(async () => (await request.get(`/v1/responses/${id}`)).body.status === 'completed');
    const replay = async (query: string) => {
      const res = await request.get(`/v1/responses/${id}?stream=true${query}`).buffer(true).parse(rawText);
      return conforms('getResponse', { ...res, text: res.body as string }) as Json[];
    };
    const events = await replay('');
    expect(events[0]!.type).toBe('response.created');
    expect(events.at(-1)!.type).toBe('response.completed');
    expect((await replay('&starting_after=2')).map((e) => e.sequence_number)).toEqual(events.slice(3).map((e) => e.sequence_number));
    const future = await request.get(`/v1/responses/${id}?stream=true&starting_after=100000`);
    expect(future.status).toBe(400);
    conforms('getResponse', future);
    conforms('cancelResponse', await request.post(`/v1/responses/${id}/cancel`));
    conforms('deleteResponse', await request.delete(`/v1/responses/${id}`));
  });

  it('a cancelled running task: its live stream ends with the standard error event', async () => {
    const { request } = createJobsApp({ engine: { script: { tokens: says('x'.repeat(400)) }, tokenDelayMs: 5 } });
    const queued = conforms('createResponse', await request.post('/v1/responses').send({ input: 'Hi', background: true, store: true })) as Json;
    const id = String(queued.id);
    await until(async () => (await request.get(`/v1/responses/${id}`)).body.status === 'in_progress');
    const cancelled = conforms('cancelResponse', await request.post(`/v1/responses/${id}/cancel`)) as Json;
    expect(['cancelled', 'in_progress']).toContain(cancelled.status);
    await until(async () => (await request.get(`/v1/responses/${id}`)).body.status === 'cancelled');
    const res = await request.get(`/v1/responses/${id}?stream=true`).buffer(true).parse(rawText);
    const events = conforms('getResponse', { ...res, text: res.body as string }) as Json[];
    expect(events.at(-1)).toMatchObject({ type: 'error', code: 'response_cancelled' });
  });
});

describe('chat completions conform', () => {
  it('JSON and SSE chunks (with a usage chunk)', async () => {
    const { request } = appWithModel();
    const body = { messages: [{ role: 'user', content: 'Hello' }] };
    const completion = conforms('createChatCompletion', await request.post('/v1/chat/completions').send(body)) as Json;
    expect(completion.object).toBe('chat.completion');
    const res = await request.post('/v1/chat/completions').send({ ...body, stream: true, stream_options: { include_usage: true } }).buffer(true).parse(rawText);
    const chunks = conforms('createChatCompletion', { ...res, text: res.body as string }) as Json[];
    expect(chunks.at(-1)!.usage).toBeDefined();
  });
});

describe('Anthropic Messages endpoints conform', () => {
  const body = { model: 'claude-x', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };

  it('JSON (thinking and text), SSE (every event, ping included) and count_tokens', async () => {
    const { request } = appWithModel();
    const message = conforms('createMessage', await request.post('/v1/messages').send({ ...body, thinking: { type: 'adaptive' } })) as Json;
    expect((message.content as Json[]).map((block) => block.type)).toEqual(['thinking', 'text']);
    const res = await request.post('/v1/messages').send({ ...body, stream: true, thinking: { type: 'adaptive' } }).buffer(true).parse(rawText);
    const events = conforms('createMessage', { ...res, text: res.body as string }) as Json[];
    expect(events.map((e) => e.type)).toContain('ping');
    expect(events.at(-1)!.type).toBe('message_stop');
    const { model, messages } = body;
    expect(conforms('countMessageTokens', await request.post('/v1/messages/count_tokens').send({ model, messages }))).toEqual({ input_tokens: expect.any(Number) });
  });

  it("errors: 400, 401, 413 and 529 in Anthropic's envelope", async () => {
    const { request, setRuntime } = appWithModel();
    conforms('createMessage', await request.post('/v1/messages').send({ ...body, max_tokens: 0 }));
    conforms('countMessageTokens', await request.post('/v1/messages/count_tokens').send({ messages: [] }));
    setRuntime(undefined);
    const loading = await request.post('/v1/messages').send(body);
    expect(loading.status).toBe(529);
    conforms('createMessage', loading);
    const keyed = createTestApp({ server: { apiKeys: ['k1'], maxBodyBytes: 1024 } });
    conforms('createMessage', await keyed.request.post('/v1/messages').send(body));
    const large = await keyed.request.post('/v1/messages').set('x-api-key', 'k1').send({ ...body, system: 'x'.repeat(2048) });
    expect(large.status).toBe(413);
    conforms('createMessage', large);
  });
});
