/**
 * POST /v1/chat/completions on the Responses pipeline, through createApp over FakeEngine + the
 * real GLM-4.5 dialect: the chat.completion JSON body (reasoning_content, tool_calls,
 * finish_reason, usage) against the contract; streamed chunks (role first, reasoning_content
 * and content deltas, tool_calls deltas with stable index, finish_reason, the usage chunk with
 * stream_options.include_usage, `data: [DONE]`); and the same context limit and auth as
 * POST /v1/responses.
 */
import { describe, expect, it } from 'vitest';
import { listenTestApp } from '../helpers/test-app.ts';
import { rawText } from '../helpers/sse.ts';
import { checkChatStream, schemaProblems } from '../e2e/stream-contract.ts';
import {
  CALL,
  expectCancelled,
  leaveMidStream,
  LONG,
  scriptedApp,
  THINK_TEXT,
  type ScriptedApp,
} from './scripted-app.ts';

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const USER = [{ role: 'user', content: 'Hello' }];

type Chunk = {
  id: string;
  object: string;
  choices: Array<{ index: number; delta: Record<string, unknown>; finish_reason: string | null }>;
  usage?: Record<string, unknown>;
};

async function streamChunks(app: ScriptedApp, body: Record<string, unknown>) {
  const res = await app.request
    .post('/v1/chat/completions')
    .send({ model: 'maya-test', stream: true, ...body })
    .buffer(true)
    .parse(rawText);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  const { chunks, problems } = checkChatStream(res.body as string);
  expect(problems).toEqual([]);
  return chunks as unknown as Chunk[];
}

const deltas = (chunks: Chunk[], field: string) =>
  chunks
    .flatMap((c) => c.choices.map((choice) => choice.delta[field]))
    .filter((v) => typeof v === 'string')
    .join('');

describe('createChatCompletion JSON', () => {
  it('a chat.completion with content, reasoning_content, finish_reason stop and usage, valid against the contract', async () => {
    const app = scriptedApp([THINK_TEXT]);
    const res = await app.request.post('/v1/chat/completions').send({ model: 'maya-test', messages: USER });
    expect(res.status).toBe(200);
    expect(schemaProblems('CreateChatCompletionResponse', res.body)).toBe('');
    expect(res.body.id).toMatch(/^chatcmpl/);
    expect(res.body).toMatchObject({ object: 'chat.completion', model: 'maya-test' });
    expect(res.body.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: 'Hello there!', refusal: null, reasoning_content: 'The user greets.' },
        finish_reason: 'stop',
        logprobs: null,
      },
    ]);
    const input = app.engine.calls[0]!.promptIds.length;
    expect(res.body.usage).toEqual({
      prompt_tokens: input,
      completion_tokens: 8,
      total_tokens: input + 8,
      prompt_tokens_details: { cached_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
  });

  it('a tool call: content null, tool_calls with JSON arguments, finish_reason tool_calls', async () => {
    const app = scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: USER, tools: [WEATHER], reasoning_effort: 'none' });
    expect(schemaProblems('CreateChatCompletionResponse', res.body)).toBe('');
    const choice = res.body.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      },
    ]);
  });

  it('max_tokens cut → finish_reason length', async () => {
    const app = scriptedApp([{ pieces: ['\n', ...Array.from({ length: 30 }, (_, i) => ` w${i}`)] }]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: USER, max_tokens: 16, reasoning_effort: 'none' });
    expect(res.body.choices[0].finish_reason).toBe('length');
    expect(res.body.usage.completion_tokens).toBe(16);
    expect(app.engine.calls[0]!.maxTokens).toBe(16);
  });

  it('stop: the content ends before the first stop string to appear (one split across tokens too), finish_reason stop', async () => {
    const pieces = ['\n', 'One', ' two', ' ST', 'OP', ' three', '<|user|>'];
    const app = scriptedApp([{ pieces }, { pieces }, { pieces }]);
    const send = (stop: unknown) =>
      app.request
        .post('/v1/chat/completions')
        .send({ model: 'maya-test', messages: USER, reasoning_effort: 'none', stop });
    const listed = await send(['END', 'STOP']);
    expect(listed.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'One two ' } });
    expect(app.engine.cancelledCount).toBe(1);
    const single = await send('two');
    expect(single.body.choices[0].message.content).toBe('One ');
    const none = await send('');
    expect(none.body.choices[0].message.content).toBe('One two STOP three');
    const chunks = await streamChunks(scriptedApp([{ pieces }]), {
      messages: USER,
      reasoning_effort: 'none',
      stop: 'STOP',
    });
    const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe('One two ');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('history with an assistant tool call and its tool result is accepted and rendered', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Sunny.', '<|user|>'] }]);
    const messages = [
      ...USER,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '22 C' },
    ];
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages, tools: [WEATHER], reasoning_effort: 'none' });
    expect(res.status).toBe(200);
    expect(res.body.choices[0].message.content).toBe('Sunny.');
  });

  it('an engine failure is a 500 server_error in the error shape', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Hi'], finishReason: 'error' }]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: USER, reasoning_effort: 'none' });
    expect(res.status).toBe(500);
    expect(res.body.error).toMatchObject({ type: 'server_error' });
  });
});

describe('createChatCompletion streaming', () => {
  it('role first, reasoning_content then content deltas, finish_reason, then the usage chunk and [DONE]', async () => {
    const chunks = await streamChunks(scriptedApp([THINK_TEXT]), {
      messages: USER,
      stream_options: { include_usage: true },
    });
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(deltas(chunks, 'reasoning_content')).toBe('The user greets.');
    expect(deltas(chunks, 'content')).toBe('Hello there!');
    const firstContent = chunks.findIndex(
      (c) => typeof c.choices[0]?.delta.content === 'string' && c.choices[0]!.delta.content !== '',
    );
    const lastReasoning = chunks.reduce(
      (last, c, index) => (typeof c.choices[0]?.delta.reasoning_content === 'string' ? index : last),
      -1,
    );
    expect(lastReasoning).toBeLessThan(firstContent);
    const finals = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finals).toHaveLength(1);
    expect(finals[0]!.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'stop' });
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      completion_tokens: 8,
      prompt_tokens_details: { cached_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
  });

  it('no usage chunk without stream_options.include_usage', async () => {
    const chunks = await streamChunks(scriptedApp([THINK_TEXT]), { messages: USER });
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('tool_calls deltas: name and id first, argument fragments that concatenate to the JSON, finish_reason tool_calls', async () => {
    const chunks = await streamChunks(scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]), {
      messages: USER,
      tools: [WEATHER],
      reasoning_effort: 'none',
    });
    const calls = chunks.flatMap(
      (c) =>
        (c.choices[0]?.delta.tool_calls as
          Array<{ index: number; id?: string; function: { name?: string; arguments: string } }> | undefined) ?? [],
    );
    expect(calls[0]).toMatchObject({
      index: 0,
      id: expect.stringMatching(/^call_/),
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    expect(calls.every((call) => call.index === 0)).toBe(true);
    expect(calls.map((call) => call.function.arguments).join('')).toBe('{"city":"Paris"}');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('the output limit ends with finish_reason length', async () => {
    const chunks = await streamChunks(
      scriptedApp([{ pieces: ['\n', ...Array.from({ length: 30 }, (_, i) => ` w${i}`)] }]),
      { messages: USER, max_completion_tokens: 16, reasoning_effort: 'none' },
    );
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
  });

  it('an engine failure after headers becomes an error chunk, then [DONE]', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Hi'], finishReason: 'error' }]);
    const res = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: USER, stream: true, reasoning_effort: 'none' })
      .buffer(true)
      .parse(rawText);
    const { chunks, problems } = checkChatStream(res.body as string);
    expect(problems).toEqual([]);
    expect(chunks.at(-1)).toMatchObject({ error: { type: 'server_error' } });
  });
});

describe('the same context limit and auth as /v1/responses', () => {
  it('prompt + max tokens over the context → 400 context_length_exceeded on both endpoints, no engine work', async () => {
    const app = scriptedApp([{ pieces: ['x'] }], { contextLength: 128 });
    const long = 'x'.repeat(400);
    const chat = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [{ role: 'user', content: long }], max_tokens: 100 });
    const responses = await app.request
      .post('/v1/responses')
      .send({ model: 'maya-test', input: long, max_output_tokens: 100 });
    for (const res of [chat, responses]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code: 'context_length_exceeded' });
    }
    const chatStream = await app.request
      .post('/v1/chat/completions')
      .send({ model: 'maya-test', messages: [{ role: 'user', content: 'x'.repeat(1000) }], stream: true });
    expect(chatStream.status).toBe(400);
    expect(chatStream.body.error.code).toBe('context_length_exceeded');
    expect(app.engine.calls).toEqual([]);
  });

  it('with API keys configured: 401 without a key on both endpoints, 200 with it (Bearer or x-api-key)', async () => {
    const app = scriptedApp([THINK_TEXT, THINK_TEXT], { apiKeys: ['sk-one'] });
    const chatBody = { model: 'maya-test', messages: USER };
    const respBody = { model: 'maya-test', input: 'Hello' };
    for (const [path, body] of [
      ['/v1/chat/completions', chatBody],
      ['/v1/responses', respBody],
    ] as const) {
      const missing = await app.request.post(path).send(body);
      expect(missing.status).toBe(401);
      expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
      const wrong = await app.request.post(path).set('Authorization', 'Bearer sk-two').send(body);
      expect(wrong.status).toBe(401);
    }
    expect(app.engine.calls).toEqual([]);
    expect(
      (await app.request.post('/v1/chat/completions').set('Authorization', 'Bearer sk-one').send(chatBody)).status,
    ).toBe(200);
    expect((await app.request.post('/v1/responses').set('x-api-key', 'sk-one').send(respBody)).status).toBe(200);
    expect(app.engine.calls).toHaveLength(2);
  });

  it('CORS: an allowed origin gets the same headers on both endpoints, JSON and streamed', async () => {
    const app = scriptedApp(Array.from({ length: 4 }, () => THINK_TEXT));
    const origin = 'http://localhost:5173';
    const calls = [
      app.request.post('/v1/chat/completions').set('Origin', origin).send({ model: 'maya-test', messages: USER }),
      app.request.post('/v1/responses').set('Origin', origin).send({ model: 'maya-test', input: 'Hello' }),
      app.request
        .post('/v1/chat/completions')
        .set('Origin', origin)
        .send({ model: 'maya-test', messages: USER, stream: true })
        .buffer(true)
        .parse(rawText),
      app.request
        .post('/v1/responses')
        .set('Origin', origin)
        .send({ model: 'maya-test', input: 'Hello', stream: true })
        .buffer(true)
        .parse(rawText),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(res.headers['access-control-expose-headers']).toContain('x-request-id');
    }
    for (const path of ['/v1/chat/completions', '/v1/responses']) {
      const preflight = await app.request
        .options(path)
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type');
      expect(preflight.status).toBe(204);
      expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    }
    const foreign = await app.request
      .post('/v1/chat/completions')
      .set('Origin', 'https://evil.example')
      .send({ model: 'maya-test', messages: USER });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('createChatCompletion: a client that disconnects mid-stream stops generation', () => {
  it('the sequence is cancelled after the socket closes', async () => {
    const base = scriptedApp([LONG], { tokenDelayMs: 5 });
    const served = await listenTestApp({ runtime: base.runtime });
    try {
      await leaveMidStream(
        `${served.origin}/v1/chat/completions`,
        { model: 'maya-test', messages: USER, stream: true, reasoning_effort: 'none' },
        ' w1',
      );
      await expectCancelled(base.engine, LONG);
    } finally {
      await served.close();
    }
  });
});
