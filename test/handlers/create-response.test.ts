/**
 * POST /v1/responses through createApp over FakeEngine + the real GLM-4.5 dialect: the JSON body
 * against the contract's Response schema; every SSE event of several streams (text,
 * reasoning+text, tool call, incomplete, failed, json_schema buffered) against its event schema,
 * the framing rules and the lifecycle pairing/ordering rules; a client that disconnects stops
 * generation; the 400s answer before any engine work.
 */
import { request as httpRequest } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { createTestApp, listenTestApp, stubRuntime } from '../helpers/test-app.ts';
import { rawText } from '../helpers/sse.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
import { checkResponseStream, schemaProblems, type WireEvent } from '../e2e/stream-contract.ts';
import { CALL, expectCancelled, leaveMidStream, LONG, scriptedApp, THINK_TEXT } from './scripted-app.ts';
import type { Script, ScriptedApp } from './scripted-app.ts';

/** 20 words: longer than the smallest max_output_tokens the contract allows (16). */
const LONG_WORDS: Script = { pieces: ['\n', ...Array.from({ length: 20 }, (_, i) => ` w${i}`)] };
const TEXT: Script = { pieces: ['\n', 'Hello', ' there', '!', '<|user|>'] };
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};
const COUNT_FORMAT = {
  type: 'json_schema',
  name: 'count',
  strict: true,
  schema: {
    type: 'object',
    properties: { count: { type: 'integer' } },
    required: ['count'],
    additionalProperties: false,
  },
};
const NO_THINKING = { reasoning: { effort: 'none' } };

async function stream(app: ScriptedApp, body: Record<string, unknown>) {
  const res = await app.request
    .post('/v1/responses')
    .send({ model: 'maya-test', stream: true, ...body })
    .buffer(true)
    .parse(rawText);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  const checked = checkResponseStream(res.body as string);
  expect(checked.problems).toEqual([]);
  return checked.events;
}

const types = (events: WireEvent[]) => events.map((event) => event.type);
const terminal = (events: WireEvent[]) =>
  events.at(-1)!.response as Record<string, unknown> & { output: Array<Record<string, unknown>> };

describe('createResponse JSON', () => {
  it('answers a Response that validates against the contract, with reasoning and message items and usage', async () => {
    const app = scriptedApp([THINK_TEXT]);
    const res = await app.request.post('/v1/responses').send({
      model: 'maya-test',
      input: 'Hello',
      metadata: { run: '7' },
      prompt_cache_key: 'k1',
      client_metadata: { trace: 'abc' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(schemaProblems('Response', res.body)).toBe('');
    expect(res.body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'maya-test',
      metadata: { run: '7' },
      prompt_cache_key: 'k1',
      store: false,
    });
    expect(res.body).not.toHaveProperty('client_metadata');
    expect(res.body.id).toMatch(/^resp_/);
    const [reasoning, message] = res.body.output;
    expect(reasoning).toMatchObject({
      type: 'reasoning',
      content: [{ type: 'reasoning_text', text: 'The user greets.' }],
    });
    expect(reasoning.id).toMatch(/^rs_/);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello there!', annotations: [], logprobs: [] }],
    });
    expect(message.id).toMatch(/^msg_/);
    expect(res.body.usage).toEqual({
      input_tokens: app.engine.calls[0]!.promptIds.length,
      input_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
      output_tokens: 8,
      output_tokens_details: { reasoning_tokens: 3 },
      total_tokens: app.engine.calls[0]!.promptIds.length + 8,
    });
  });

  it('passes temperature, top_p and max_output_tokens to the engine', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Hi', temperature: 0, top_p: 0.5, max_output_tokens: 20, ...NO_THINKING });
    expect(res.status).toBe(200);
    expect(app.engine.calls[0]).toMatchObject({ temperature: 0, topP: 0.5, maxTokens: 20 });
    expect(res.body).toMatchObject({ temperature: 0, top_p: 0.5, max_output_tokens: 20 });
  });

  it('the output limit answers status incomplete with incomplete_details', async () => {
    const app = scriptedApp([LONG_WORDS]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Count', max_output_tokens: 16, ...NO_THINKING });
    expect(schemaProblems('Response', res.body)).toBe('');
    expect(res.body).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { output_tokens: 16 },
    });
  });

  it('an engine failure answers status failed with an error (HTTP 200: the response object exists)', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Hi'], finishReason: 'error' }]);
    const res = await app.request.post('/v1/responses').send({ model: 'maya-test', input: 'Hi', ...NO_THINKING });
    expect(res.status).toBe(200);
    expect(schemaProblems('Response', res.body)).toBe('');
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
  });
});

describe('createResponse SSE: every event validates, frames and lifecycle rules hold', () => {
  it('text', async () => {
    const events = await stream(scriptedApp([TEXT]), { input: 'Hello', ...NO_THINKING });
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(terminal(events)).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', content: [{ text: 'Hello there!' }] }],
    });
  });

  it('reasoning + text', async () => {
    const events = await stream(scriptedApp([THINK_TEXT]), { input: 'Hello' });
    expect(types(events).filter((t) => t.startsWith('response.reasoning_text'))).toEqual([
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
    ]);
    expect(terminal(events).output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(terminal(events).usage).toMatchObject({ output_tokens_details: { reasoning_tokens: 3 } });
  });

  it('tool call (strict tool: buffered, published whole once the arguments validate)', async () => {
    const events = await stream(scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]), {
      input: 'Weather in Paris?',
      tools: [WEATHER],
      ...NO_THINKING,
    });
    const done = events.find((e) => e.type === 'response.function_call_arguments.done')!;
    expect(done).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const deltas = events
      .filter((e) => e.type === 'response.function_call_arguments.delta')
      .map((e) => e.delta)
      .join('');
    expect(deltas).toBe('{"city":"Paris"}');
    expect(terminal(events)).toMatchObject({
      status: 'completed',
      output: [{ type: 'function_call', name: 'get_weather', status: 'completed' }],
    });
    const call = terminal(events).output[0]!;
    expect(call.call_id).toMatch(/^call_/);
  });

  it('tool call, not strict (streamed as generated)', async () => {
    const events = await stream(scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]), {
      input: 'Weather?',
      tools: [{ ...WEATHER, strict: false }],
      ...NO_THINKING,
    });
    expect(types(events)).toContain('response.function_call_arguments.delta');
    expect(terminal(events).output).toMatchObject([{ type: 'function_call', arguments: '{"city":"Paris"}' }]);
  });

  it('incomplete (output limit mid-message)', async () => {
    const events = await stream(scriptedApp([LONG_WORDS]), { input: 'Count', max_output_tokens: 16, ...NO_THINKING });
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(terminal(events)).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ status: 'incomplete' }],
    });
  });

  it('failed (engine error after some text)', async () => {
    const events = await stream(scriptedApp([{ pieces: ['\n', 'Hi', ' there'], finishReason: 'error' }]), {
      input: 'Hello',
      ...NO_THINKING,
    });
    expect(events.at(-1)!.type).toBe('response.failed');
    expect(terminal(events)).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
    expect(types(events).filter((t) => t === 'response.completed')).toEqual([]);
  });

  it('json_schema buffered: deltas only after validation; a violation publishes nothing', async () => {
    const ok = await stream(scriptedApp([{ pieces: ['\n', '{"count"', ': 3}', '<|user|>'] }]), {
      input: 'Count',
      text: { format: COUNT_FORMAT },
      ...NO_THINKING,
    });
    expect(
      ok
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('{"count": 3}');
    expect(terminal(ok)).toMatchObject({
      status: 'completed',
      text: { format: { type: 'json_schema', name: 'count' } },
    });

    const bad = await stream(scriptedApp([{ pieces: ['\n', '{"count"', ': "three"}', '<|user|>'] }]), {
      input: 'Count',
      text: { format: COUNT_FORMAT },
      ...NO_THINKING,
    });
    expect(types(bad)).toEqual(['response.created', 'response.in_progress', 'response.failed']);
    expect(terminal(bad)).toMatchObject({
      status: 'failed',
      error: { code: 'schema_violation' },
      output: [],
      usage: { output_tokens: 4 },
    });
  });

  it('a schema carrying $schema (draft-07, as openai/helpers/zod zodTextFormat sends) is accepted and enforced', async () => {
    const format = {
      ...COUNT_FORMAT,
      schema: { $schema: 'http://json-schema.org/draft-07/schema#', ...COUNT_FORMAT.schema },
    };
    const ok = await stream(scriptedApp([{ pieces: ['\n', '{"count"', ': 3}', '<|user|>'] }]), {
      input: 'Count',
      text: { format },
      ...NO_THINKING,
    });
    expect(terminal(ok)).toMatchObject({ status: 'completed' });
    const bad = await stream(scriptedApp([{ pieces: ['\n', '{"count"', ': 3.5}', '<|user|>'] }]), {
      input: 'Count',
      text: { format },
      ...NO_THINKING,
    });
    expect(terminal(bad)).toMatchObject({ status: 'failed', error: { code: 'schema_violation' } });
  });

  it('the spec example body (no model, store:false, max_output_tokens:256) streams a valid sequence', async () => {
    const events = await stream(scriptedApp([THINK_TEXT]), {
      model: undefined,
      input: 'Hello',
      store: false,
      max_output_tokens: 256,
    });
    expect(events.at(-1)!.type).toBe('response.completed');
  });
});

describe('createResponse: a client that disconnects mid-stream stops generation', () => {
  it('SSE: the sequence is cancelled after the socket closes, well before the script ends', async () => {
    const base = scriptedApp([LONG], { tokenDelayMs: 5 });
    const served = await listenTestApp({ runtime: base.runtime });
    try {
      await leaveMidStream(
        `${served.origin}/v1/responses`,
        { model: 'maya-test', input: 'Talk', stream: true, ...NO_THINKING },
        'response.output_text.delta',
      );
      await expectCancelled(base.engine, LONG);
    } finally {
      await served.close();
    }
  });

  it('JSON: a client that goes away before the body is sent cancels the sequence', async () => {
    const base = scriptedApp([LONG], { tokenDelayMs: 5 });
    const served = await listenTestApp({ runtime: base.runtime });
    try {
      const req = httpRequest(`${served.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', () => {});
      req.end(JSON.stringify({ model: 'maya-test', input: 'Talk', ...NO_THINKING }));
      await vi.waitFor(async () => expect((await base.engine.stats()).decodeTokens).toBeGreaterThan(2), {
        timeout: 10_000,
        interval: 10,
      });
      req.destroy();
      await expectCancelled(base.engine, LONG);
    } finally {
      await served.close();
    }
  });
});

describe('createResponse: 400s answer before any engine work', () => {
  async function rejected(app: ScriptedApp, body: Record<string, unknown>, param: string, code: string) {
    for (const streamed of [false, true]) {
      const res = await app.request.post('/v1/responses').send({ model: 'maya-test', ...body, stream: streamed });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', param, code } });
    }
    expect(app.engine.calls).toEqual([]);
    expect(app.engine.activeCount).toBe(0);
  }

  it('prompt + max_output_tokens over the context', () =>
    rejected(
      scriptedApp([TEXT], { contextLength: 128 }),
      { input: 'x'.repeat(400), max_output_tokens: 100 },
      'max_output_tokens',
      'context_length_exceeded',
    ));
  it('a prompt alone over the context', () =>
    rejected(
      scriptedApp([TEXT], { contextLength: 128 }),
      { input: 'x'.repeat(1000) },
      'input',
      'context_length_exceeded',
    ));
  it('a function_call_output whose call_id matches no call', () =>
    rejected(
      scriptedApp([TEXT]),
      { input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] },
      'input[0].call_id',
      'unknown_call_id',
    ));
  it('a function_call without its output', () =>
    rejected(
      scriptedApp([TEXT]),
      {
        input: [
          { role: 'user', content: 'x' },
          { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{}' },
        ],
        tools: [WEATHER],
      },
      'input[1]',
      'missing_function_call_output',
    ));
  it('a schema with $ref', () =>
    rejected(
      scriptedApp([TEXT]),
      {
        input: 'x',
        text: {
          format: { type: 'json_schema', name: 'x', schema: { type: 'object', properties: { a: { $ref: '#/x' } } } },
        },
      },
      'text.format.schema.properties.a.$ref',
      'unsupported_schema_keyword',
    ));
  it('a strict schema without additionalProperties:false', () =>
    rejected(
      scriptedApp([TEXT]),
      {
        input: 'x',
        text: {
          format: {
            ...COUNT_FORMAT,
            schema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
          },
        },
      },
      'text.format.schema.additionalProperties',
      'invalid_schema',
    ));
  it('tool_choice naming an undeclared function', () =>
    rejected(
      scriptedApp([TEXT]),
      { input: 'x', tools: [WEATHER], tool_choice: { type: 'function', name: 'other' } },
      'tool_choice.name',
      'invalid_value',
    ));
  it('an unknown previous_response_id is a 404 before engine work', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', previous_response_id: 'resp_nope' });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param: 'previous_response_id' });
    expect(app.engine.calls).toEqual([]);
  });
});

describe('createResponse: store:true and previous_response_id', () => {
  it('the second turn renders the first turn history; input_items lists this turn', async () => {
    const app = scriptedApp([TEXT, { pieces: ['\n', 'Again', '<|user|>'] }]);
    const first = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Remember 73', store: true, ...NO_THINKING });
    expect(first.body.status).toBe('completed');
    const second = await app.request.post('/v1/responses').send({
      model: 'maya-test',
      input: 'What value?',
      previous_response_id: first.body.id,
      store: true,
      ...NO_THINKING,
    });
    expect(second.body).toMatchObject({ status: 'completed', previous_response_id: first.body.id });
    expect(app.engine.calls[1]!.promptIds.length).toBeGreaterThan(app.engine.calls[0]!.promptIds.length);
    const items = await app.request.get(`/v1/responses/${second.body.id}/input_items?order=asc`);
    expect(items.status).toBe(200);
    expect(schemaProblems('ResponseItemList', items.body)).toBe('');
    const texts = items.body.data.map(
      (item: { role: string; content: Array<{ text: string }> }) => `${item.role}:${item.content[0]!.text}`,
    );
    expect(texts).toEqual(['user:Remember 73', 'assistant:Hello there!', 'user:What value?']);
  });
});

describe('createResponse: request fields', () => {
  it('prompt_cache_key: up to 256 characters echoed, longer is a 400 before engine work', async () => {
    const app = scriptedApp([TEXT]);
    const ok = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', prompt_cache_key: 'k'.repeat(256), ...NO_THINKING });
    expect(ok.body.prompt_cache_key).toBe('k'.repeat(256));
    const long = scriptedApp([TEXT]);
    const res = await long.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', prompt_cache_key: 'k'.repeat(257) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param: 'prompt_cache_key' });
    expect(long.engine.calls).toEqual([]);
  });

  it('instructions apply to this request only; history (with reasoning) is replayed into the next prompt', async () => {
    const base = scriptedRuntime([THINK_TEXT, TEXT]);
    const prompts: string[] = [];
    const tokenizer = {
      ...base.tokenizer,
      encode: (text: string) => (prompts.push(text), base.tokenizer.encode(text)),
    };
    const { request } = createTestApp({ runtime: stubRuntime({ ...base, tokenizer, id: 'maya-test' }) });
    const first = await request
      .post('/v1/responses')
      .send({ model: 'maya-test', instructions: 'INSTRUCTION-ONE', input: 'Remember 73', store: true });
    expect(first.body.status).toBe('completed');
    const second = await request.post('/v1/responses').send({
      model: 'maya-test',
      instructions: 'INSTRUCTION-TWO',
      input: 'What value?',
      previous_response_id: first.body.id,
      ...NO_THINKING,
    });
    expect(second.body.status).toBe('completed');
    expect(prompts[0]).toContain('INSTRUCTION-ONE');
    expect(prompts[1]).not.toContain('INSTRUCTION-ONE');
    expect(prompts[1]).toContain('INSTRUCTION-TWO');
    for (const text of ['Remember 73', 'Hello there!', 'What value?']) expect(prompts[1]).toContain(text);
    expect(prompts[1]!.indexOf('Remember 73')).toBeLessThan(prompts[1]!.indexOf('What value?'));
    // store:false continuation: the new result is not saved.
    expect((await request.get(`/v1/responses/${second.body.id}`)).status).toBe(404);
  });
});

describe('createResponse: what store:true keeps', () => {
  it('a failed foreground response is not stored; a completed and an output-limited one are', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Hi'], finishReason: 'error' }, TEXT, LONG_WORDS]);
    const failed = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', store: true, ...NO_THINKING });
    expect(failed.body.status).toBe('failed');
    expect((await app.request.get(`/v1/responses/${failed.body.id}`)).status).toBe(404);
    const completed = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', store: true, ...NO_THINKING });
    const cut = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'x', store: true, max_output_tokens: 16, ...NO_THINKING });
    expect([completed.body.status, cut.body.status]).toEqual(['completed', 'incomplete']);
    for (const stored of [completed, cut]) {
      const got = await app.request.get(`/v1/responses/${stored.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body.output).toEqual(stored.body.output);
    }
    expect((await app.deps.store.stats()).entries).toBe(2);
  });

  it('a streamed store:true response that the client abandons is not stored', async () => {
    const base = scriptedApp([{ pieces: ['\n', ...Array.from({ length: 200 }, (_, i) => ` w${i}`), '<|user|>'] }], {
      tokenDelayMs: 5,
    });
    const served = await listenTestApp({ runtime: base.runtime, deps: { store: base.deps.store } });
    try {
      const abort = new AbortController();
      const res = await fetch(`${served.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        signal: abort.signal,
        body: JSON.stringify({ model: 'maya-test', input: 'Talk', stream: true, store: true, ...NO_THINKING }),
      });
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('output_text.delta')) text += new TextDecoder().decode((await reader.read()).value);
      const id = /"id":"(resp_[0-9a-f]+)"/.exec(text)![1]!;
      abort.abort();
      await vi.waitFor(() => expect(base.engine.activeCount).toBe(0), { timeout: 10_000, interval: 20 });
      expect(base.engine.cancelledCount).toBe(1);
      expect((await base.request.get(`/v1/responses/${id}`)).status).toBe(404);
      expect((await base.deps.store.stats()).entries).toBe(0);
    } finally {
      await served.close();
    }
  });
});
