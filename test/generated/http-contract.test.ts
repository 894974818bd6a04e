/**
 * The running app against its own contract: each request goes through the Koa app in-process,
 * and each answer must use a status the operation declares and a body (JSON, or every SSE
 * frame) that validates against the schema the document gives for that status and media type.
 */
import { describe, expect, it } from 'vitest';
import type { ValidateFunction } from 'ajv';
import { operations, type OperationId } from '../../generated/operations.ts';
import { createChatCompletion } from '../../handlers/create-chat-completion.ts';
import { createResponse } from '../../handlers/create-response.ts';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
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
    expect(frames.at(-1)?.data).toBe('[DONE]');
    const events = frames.slice(0, -1).map((frame) => ({ frame, value: JSON.parse(frame.data) as Json }));
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

function appWithModel(pieces = ['<think>', 'Greeting', '</think>', '\n', 'Hello', ' there!', '<|user|>']) {
  const scripted = scriptedRuntime([{ pieces }]);
  const runtime = stubRuntime({ engine: scripted.engine, tokenizer: scripted.tokenizer, dialect: scripted.dialect, contextLength: scripted.contextLength });
  // Bound here explicitly: handlers/index.ts may still map these operations to 501.
  return createTestApp({ runtime, handlers: { createResponse, createChatCompletion } });
}

describe('service endpoints conform', () => {
  it('health (loaded and loading), models, status, metrics and the document', async () => {
    const { request, setRuntime } = appWithModel();
    expect(conforms('getHealth', await request.get('/health'))).toEqual({ status: 'ok' });
    conforms('listModels', await request.get('/v1/models'));
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
    const res = await request.post('/v1/responses').send({ input: 'Hello', stream: true }).buffer(true).parse((r, done) => {
      let text = '';
      r.on('data', (chunk: Buffer) => (text += chunk.toString()));
      r.on('end', () => done(null, text));
    });
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

describe('chat completions conform', () => {
  it('JSON and SSE chunks (with a usage chunk)', async () => {
    const { request } = appWithModel();
    const body = { messages: [{ role: 'user', content: 'Hello' }] };
    const completion = conforms('createChatCompletion', await request.post('/v1/chat/completions').send(body)) as Json;
    expect(completion.object).toBe('chat.completion');
    const res = await request.post('/v1/chat/completions').send({ ...body, stream: true, stream_options: { include_usage: true } }).buffer(true).parse((r, done) => {
      let text = '';
      r.on('data', (chunk: Buffer) => (text += chunk.toString()));
      r.on('end', () => done(null, text));
    });
    const chunks = conforms('createChatCompletion', { ...res, text: res.body as string }) as Json[];
    expect(chunks.at(-1)!.usage).toBeDefined();
  });
});
