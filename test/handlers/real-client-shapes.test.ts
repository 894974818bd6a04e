/**
 * Regression tests for issue 21 (real clients, unmodified), in-process over the scripted GLM-4.5
 * runtime: the request shapes the AI SDK, LangChain, Codex CLI and the openai SDK send, which
 * Maya refused, and the error text that named the wrong field. Each `describe` is one defect.
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { scriptedApp, type Script } from './scripted-app.ts';

const TEXT: Script = { pieces: ['\n', 'Hello', ' there', '!', '<|user|>'] };
const NO_THINKING = { reasoning: { effort: 'none' } };
const error400 = (param: string | null, code: string) => ({
  error: { message: expect.any(String), type: 'invalid_request_error', param, code },
});

describe('defect 1: replayed assistant messages in every shape OpenAI accepts', () => {
  const user = { role: 'user', content: 'Hi' };
  const next = { role: 'user', content: 'And now?' };
  const SHAPES: [string, Record<string, unknown>][] = [
    [
      'id without type (the AI SDK with store:false)',
      { role: 'assistant', content: [{ type: 'output_text', text: 'Hello there!' }], id: 'msg_ai_sdk_1' },
    ],
    [
      'output_text without logprobs or annotations',
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_2',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello' }],
      },
    ],
    [
      'status without id or type',
      { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] },
    ],
    [
      'phase and a refusal part',
      {
        type: 'message',
        role: 'assistant',
        id: 'msg_3',
        status: 'completed',
        phase: 'final_answer',
        content: [{ type: 'refusal', refusal: 'No.' }],
      },
    ],
    [
      'a user message with id and status',
      {
        type: 'message',
        role: 'user',
        id: 'msg_user_1',
        status: 'completed',
        content: [{ type: 'input_text', text: 'Hi again' }],
      },
    ],
  ];
  for (const [name, message] of SHAPES) {
    it(`${name} → 200, its id kept in the stored input items`, async () => {
      const app = scriptedApp([TEXT]);
      const res = await app.request
        .post('/v1/responses')
        .send({ model: 'maya-test', input: [user, message, next], store: true, ...NO_THINKING });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('completed');
      const items = await app.request.get(`/v1/responses/${res.body.id}/input_items?order=asc`);
      expect(items.status).toBe(200);
      expect(items.body.data).toHaveLength(3);
      expect(items.body.data[1]).toMatchObject({ type: 'message', role: message.role, status: 'completed' });
      if (typeof message.id === 'string') expect(items.body.data[1].id).toBe(message.id);
    });
  }

  it('the replayed text reaches the prompt', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: [user, SHAPES[0]![1], next], ...NO_THINKING });
    expect(res.status).toBe(200);
    expect(app.engine.calls).toHaveLength(1);
  });

  const WRONG: [string, Record<string, unknown>, string, string][] = [
    [
      'an unknown field on a type-less message',
      { role: 'assistant', content: 'x', colour: 'red' },
      'input[1].colour',
      'unknown_parameter',
    ],
    [
      'a bad status on a type-less message',
      { role: 'assistant', status: 'done', content: [{ type: 'output_text', text: 'x' }] },
      'input[1].status',
      'invalid_value',
    ],
    [
      'an output_text without text',
      { role: 'assistant', id: 'msg_1', content: [{ type: 'output_text' }] },
      'input[1].content[0].text',
      'missing_required_parameter',
    ],
    ['an unknown role', { role: 'critic', content: 'x' }, 'input[1].role', 'invalid_value'],
    [
      'an unknown content part type',
      { role: 'assistant', content: [{ type: 'output_audio', text: 'x' }] },
      'input[1].content[0].type',
      'invalid_value',
    ],
  ];
  for (const [name, message, param, code] of WRONG) {
    it(`${name} → 400 naming ${param}`, async () => {
      const app = scriptedApp([TEXT]);
      const res = await app.request.post('/v1/responses').send({ model: 'maya-test', input: [user, message] });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(error400(param, code));
      expect(app.engine.calls).toEqual([]);
    });
  }
});

describe('defect 2: client_metadata is bounded by total bytes, not per value', () => {
  it("Codex CLI's ~800-character x-codex-turn-metadata is accepted", async () => {
    const app = scriptedApp([TEXT]);
    const turn = JSON.stringify({
      turn_id: 't'.repeat(36),
      sandbox: 'workspace-write',
      cwd: '/home/user/'.padEnd(700, 'p'),
    });
    expect(turn.length).toBeGreaterThan(512);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Hi', client_metadata: { 'x-codex-turn-metadata': turn }, ...NO_THINKING });
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('client_metadata');
  });

  it('over 16384 bytes in all → 400 naming client_metadata', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Hi', client_metadata: { a: 'x'.repeat(16384) } });
    expect(res.body).toEqual(error400('client_metadata', 'object_above_max_size'));
  });
});

describe('defect 3: Chat Completions accepts the standard fields', () => {
  const messages = [
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: 'sunny' },
  ];
  const tools = [
    {
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    },
  ];

  it("LangChain's tool message with `name` and the accept-and-ignore fields → 200", async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request.post('/v1/chat/completions').send({
      model: 'maya-test',
      messages,
      tools,
      presence_penalty: 0,
      frequency_penalty: 0,
      store: false,
      metadata: { run: '1' },
      service_tier: 'auto',
      prompt_cache_key: 'k',
      prompt_cache_retention: '24h',
      safety_identifier: 'user-1',
      top_logprobs: 0,
      reasoning_effort: 'none',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'chat.completion',
      choices: [{ finish_reason: 'stop', message: { role: 'assistant', content: 'Hello there!' } }],
    });
  });

  it('null penalties are accepted too', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request.post('/v1/chat/completions').send({
      model: 'maya-test',
      messages: [messages[0]],
      presence_penalty: null,
      frequency_penalty: null,
      reasoning_effort: 'none',
    });
    expect(res.status).toBe(200);
  });

  it('a non-zero penalty (which the sampler cannot apply) → 400 unsupported_value, no engine work', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [messages[0]], presence_penalty: 0.6 });
    expect(res.body).toEqual(error400('presence_penalty', 'unsupported_value'));
    expect(app.engine.calls).toEqual([]);
  });

  it('an unknown field on a tool message is named as such, not as tool_call_id', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [messages[0], messages[1], { ...messages[2], colour: 'red' }] });
    expect(res.body).toEqual(error400('messages[2].colour', 'unknown_parameter'));
  });

  it('a tool message missing tool_call_id names messages[i].tool_call_id', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [messages[0], { role: 'tool', content: 'x' }] });
    expect(res.body).toEqual(error400('messages[1].tool_call_id', 'missing_required_parameter'));
  });
});

describe('defect 4: prompt_cache_retention on /v1/responses', () => {
  for (const value of ['in_memory', '24h', null]) {
    it(`${String(value)} → 200`, async () => {
      const app = scriptedApp([TEXT]);
      const res = await app.request
        .post('/v1/responses')
        .send({ model: 'maya-test', input: 'Hi', prompt_cache_retention: value, ...NO_THINKING });
      expect(res.status).toBe(200);
    });
  }
  it('another value → 400 naming it', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: 'Hi', prompt_cache_retention: 'forever' });
    expect(res.body).toEqual(error400('prompt_cache_retention', 'invalid_value'));
  });
});

describe('defect 5: GET /v1/models/{model}', () => {
  it('the served model → its Model object', async () => {
    const { request } = createTestApp({ runtime: stubRuntime({ id: 'maya-demo', createdAt: 1_750_000_000 }) });
    const res = await request.get('/v1/models/maya-demo');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'maya-demo', object: 'model', created: 1_750_000_000, owned_by: 'maya' });
  });
  it('another id → 404 model_not_found naming model', async () => {
    const { request } = createTestApp({ runtime: stubRuntime({ id: 'maya-demo' }) });
    const res = await request.get('/v1/models/gpt-4o');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: {
        message: expect.stringContaining("'gpt-4o'"),
        type: 'invalid_request_error',
        param: 'model',
        code: 'model_not_found',
      },
    });
  });
  it('while loading → 503 model_loading', async () => {
    const { request } = createTestApp({ runtime: null });
    const res = await request.get('/v1/models/maya-demo');
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('model_loading');
  });
});

describe('defect 6: context errors name the fields the client sent', () => {
  const long = 'x'.repeat(1000);
  it('/v1/responses without max_output_tokens: no negative token count, param input', async () => {
    const app = scriptedApp([TEXT], { contextLength: 128 });
    const res = await app.request.post('/v1/responses').send({ model: 'maya-test', input: long });
    expect(res.body).toEqual(error400('input', 'context_length_exceeded'));
    expect(res.body.error.message).not.toMatch(/-\d|max_output_tokens/);
    expect(res.body.error.message).toMatch(/context of 128 tokens/);
  });
  it('/v1/chat/completions without a limit: param messages', async () => {
    const app = scriptedApp([TEXT], { contextLength: 128 });
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [{ role: 'user', content: long }] });
    expect(res.body).toEqual(error400('messages', 'context_length_exceeded'));
    expect(res.body.error.message).not.toMatch(/-\d|input|max_output_tokens/);
  });
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    it(`/v1/chat/completions with ${field}: param and message name ${field}`, async () => {
      const app = scriptedApp([TEXT], { contextLength: 128 });
      const res = await app.request
        .post('/v1/chat/completions')
        .send({ model: 'maya-test', messages: [{ role: 'user', content: 'x'.repeat(300) }], [field]: 100 });
      expect(res.body).toEqual(error400(field, 'context_length_exceeded'));
      expect(res.body.error.message).toContain(`${field} (100)`);
      expect(res.body.error.message).not.toMatch(/max_output_tokens/);
    });
  }
  it('a chat tool result without a preceding call names messages[i].tool_call_id', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request.post('/v1/chat/completions').send({
      model: 'maya-test',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'tool', tool_call_id: 'nope', content: 'r' },
      ],
    });
    expect(res.body).toEqual(error400('messages[1].tool_call_id', 'unknown_call_id'));
  });
  it('a chat tool call without its result names the assistant message', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request.post('/v1/chat/completions').send({
      model: 'maya-test',
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
      ],
      tools: [{ type: 'function', function: { name: 'f' } }],
    });
    expect(res.body).toEqual(error400('messages[1]', 'missing_function_call_output'));
  });
});
