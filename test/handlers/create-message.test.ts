/**
 * POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) on the Responses
 * pipeline, through createApp over FakeEngine + the real GLM-4.5 dialect: the message JSON
 * (thinking, text and tool_use blocks, stop reasons, usage with the prefix cache's share) against
 * the contract; the event stream (message_start, ping, block start/delta/stop, signature_delta,
 * message_delta, message_stop; `event:` framing, no `[DONE]`), the same answer streamed or not;
 * stop sequences; max_tokens cut to the context; errors in Anthropic's envelope and statuses
 * (400, 401, 404, 405, 413, 529, an `error` event after the stream began) while the OpenAI
 * endpoints keep theirs; thinking signatures sealed and checked with encrypted reasoning on;
 * count_tokens equal to the prompt a run gets; a client that goes away stops the run.
 */
import { describe, expect, it } from 'vitest';
import { createTestApp, listenTestApp, stubRuntime } from '../helpers/test-app.ts';
import { parseSse, rawText } from '../helpers/sse.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
import { schemaProblems } from '../e2e/stream-contract.ts';
import { CALL, expectCancelled, leaveMidStream, LONG, scriptedApp, THINK_TEXT } from './scripted-app.ts';
import type { Script, ScriptedApp } from './scripted-app.ts';
import type { ResponsesOptIns } from '../../config/settings.ts';

type Json = Record<string, unknown>;

const TEXT: Script = { pieces: ['\n', 'Hello', ' there!', '<|user|>'] };
const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const USER = [{ role: 'user', content: 'Hello' }];
const BASE = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: USER };
const THINKING = { type: 'enabled', budget_tokens: 2048 };

async function stream(app: ScriptedApp, body: Json): Promise<{ events: Json[]; text: string }> {
  const res = await app.request
    .post('/v1/messages')
    .send({ ...BASE, stream: true, ...body })
    .buffer(true)
    .parse(rawText);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
  const text = res.body as string;
  const frames = parseSse(text).filter((frame) => frame.data !== '' || frame.event !== undefined);
  for (const frame of frames) {
    expect(frame.event, frame.data).toBe((frame.json as Json).type);
    expect(schemaProblems('AnthropicMessageStreamEvent', frame.json), frame.data).toBe('');
  }
  expect(text).not.toContain('[DONE]');
  return { events: frames.map((frame) => frame.json as Json), text };
}

/** Builds the final message from stream events the way the Anthropic SDK's MessageStream does. */
function accumulate(events: Json[]): Json {
  let message: Json | undefined;
  const json: string[] = [];
  for (const event of events) {
    if (event.type === 'message_start') message = structuredClone(event.message as Json);
    const content = message?.content as Json[] | undefined;
    if (event.type === 'content_block_start') content!.push(structuredClone(event.content_block as Json));
    if (event.type === 'content_block_delta') {
      const block = content![event.index as number]!;
      const delta = event.delta as Json;
      if (delta.type === 'text_delta') block.text = String(block.text) + String(delta.text);
      if (delta.type === 'thinking_delta') block.thinking = String(block.thinking) + String(delta.thinking);
      if (delta.type === 'signature_delta') block.signature = delta.signature;
      if (delta.type === 'input_json_delta')
        json[event.index as number] = (json[event.index as number] ?? '') + String(delta.partial_json);
    }
    if (event.type === 'content_block_stop' && json[event.index as number] !== undefined)
      content![event.index as number]!.input = JSON.parse(json[event.index as number]!);
    if (event.type === 'message_delta') {
      Object.assign(message!, event.delta as Json);
      Object.assign(message!.usage as Json, event.usage as Json);
    }
  }
  return message!;
}

describe('createMessage JSON', () => {
  it('thinking enabled: a thinking block then a text block, end_turn, usage split by the prefix cache, valid against the contract', async () => {
    const app = scriptedApp([THINK_TEXT]);
    const res = await app.request.post('/v1/messages').send({ ...BASE, thinking: THINKING });
    expect(res.status).toBe(200);
    expect(schemaProblems('AnthropicMessage', res.body)).toBe('');
    expect(res.body.id).toMatch(/^msg_/);
    expect(res.body).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'maya-test',
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(res.body.content).toEqual([
      { type: 'thinking', thinking: 'The user greets.', signature: '' },
      { type: 'text', text: 'Hello there!', citations: null },
    ]);
    const prompt = app.engine.calls[0]!.promptIds.length;
    expect(res.body.usage).toEqual({
      input_tokens: prompt - 2,
      output_tokens: 8,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 2,
      output_tokens_details: { thinking_tokens: 3 },
      service_tier: 'standard',
    });
  });

  it('a tool call: a tool_use block with the parsed input and its call id, stop_reason tool_use', async () => {
    const app = scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]);
    const res = await app.request.post('/v1/messages').send({ ...BASE, tools: [WEATHER] });
    expect(res.status).toBe(200);
    expect(schemaProblems('AnthropicMessage', res.body)).toBe('');
    expect(res.body.stop_reason).toBe('tool_use');
    expect(res.body.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });

  it('a tool round trip: tool_use then tool_result in the history is accepted; an unknown tool_use_id names the block', async () => {
    const app = scriptedApp([TEXT]);
    const history = [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '18 C' }] }],
      },
    ];
    const ok = await app.request.post('/v1/messages').send({ ...BASE, tools: [WEATHER], messages: history });
    expect(ok.status).toBe(200);
    expect(ok.body.content).toEqual([{ type: 'text', text: 'Hello there!', citations: null }]);
    const bad = structuredClone(history);
    (bad[2]!.content as Json[])[0]!.tool_use_id = 'toolu_2';
    const refused = await app.request.post('/v1/messages').send({ ...BASE, tools: [WEATHER], messages: bad });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      type: 'invalid_request_error',
      details: { param: 'messages[2].content[0].tool_use_id', error_code: 'unknown_call_id' },
    });
  });

  it('max_tokens: the engine stopping at the limit is max_tokens; a limit beyond the context is cut to it (model_context_window_exceeded)', async () => {
    const cut: Script = { pieces: ['\n', 'Hello', ' there'], finishReason: 'length' };
    const app = scriptedApp([cut, cut], { contextLength: 512 });
    const limited = await app.request.post('/v1/messages').send({ ...BASE, max_tokens: 16 });
    expect(limited.body).toMatchObject({ stop_reason: 'max_tokens', content: [{ type: 'text', text: 'Hello there' }] });
    expect(app.engine.calls[0]!.maxTokens).toBe(16);
    const beyond = await app.request.post('/v1/messages').send({ ...BASE, max_tokens: 128_000 });
    expect(beyond.status).toBe(200);
    expect(beyond.body.stop_reason).toBe('model_context_window_exceeded');
    expect(app.engine.calls[1]!.maxTokens).toBe(512 - app.engine.calls[1]!.promptIds.length);
  });

  it('stop_sequences: the text ends before the first sequence to appear, even one split across tokens', async () => {
    const app = scriptedApp([
      { pieces: ['\n', 'One', ' two', ' ST', 'OP', ' three', '<|user|>'] },
      { pieces: ['\n', 'One', ' ST', 'ray', '<|user|>'] },
    ]);
    const res = await app.request.post('/v1/messages').send({ ...BASE, stop_sequences: ['STOP', 'END'] });
    expect(res.body).toMatchObject({
      stop_reason: 'stop_sequence',
      stop_sequence: 'STOP',
      content: [{ type: 'text', text: 'One two ' }],
    });
    expect(app.engine.cancelledCount).toBe(1);
    // A held-back prefix that does not complete is published after all.
    const { events } = await stream(app, { stop_sequences: ['STOP'] });
    const deltas = events.filter((e) => e.type === 'content_block_delta').map((e) => (e.delta as Json).text);
    expect(deltas.join('')).toBe('One STray');
    expect(deltas).not.toContain(' ST');
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({
      delta: { stop_reason: 'end_turn', stop_sequence: null },
    });
  });

  it('top_k, temperature and top_p reach the engine call; top_k absent or 0 is off', async () => {
    const app = scriptedApp(Array.from({ length: 4 }, () => TEXT));
    const sampled = await app.request.post('/v1/messages').send({ ...BASE, top_k: 40, temperature: 0.7, top_p: 0.9 });
    expect(sampled.status).toBe(200);
    expect(app.engine.calls[0]).toMatchObject({ topK: 40, temperature: 0.7, topP: 0.9 });
    await stream(app, { top_k: 1 });
    expect(app.engine.calls[1]!.topK).toBe(1);
    await app.request.post('/v1/messages').send({ ...BASE, top_k: 0 });
    await app.request.post('/v1/messages').send(BASE);
    expect(app.engine.calls[2]!.topK ?? 0).toBe(0);
    expect(app.engine.calls[3]!.topK ?? 0).toBe(0);
  });

  it('no thinking asked for: the dialect renders thinking off; disabled and adaptive map to the reasoning switch', async () => {
    const app = scriptedApp(Array.from({ length: 3 }, () => TEXT));
    await app.request.post('/v1/messages').send(BASE);
    await app.request.post('/v1/messages').send({ ...BASE, thinking: { type: 'disabled' } });
    await app.request.post('/v1/messages').send({ ...BASE, thinking: { type: 'adaptive' } });
    const [absent, disabled, adaptive] = app.engine.calls.map((call) => call.promptIds.length);
    // GLM renders thinking off as `/nothink` after the user message: a longer prompt.
    expect(absent).toBe(disabled);
    expect(adaptive).toBeLessThan(absent!);
  });
});

describe('createMessage stream', () => {
  it('message_start, ping, blocks with their deltas, message_delta, message_stop: the same message as the JSON answer', async () => {
    const app = scriptedApp([THINK_TEXT, THINK_TEXT]);
    const json = (await app.request.post('/v1/messages').send({ ...BASE, thinking: THINKING })).body as Json;
    const { events } = await stream(app, { thinking: THINKING });
    expect(
      events.map((e) => (e.type === 'content_block_delta' ? `${e.type}:${(e.delta as Json).type}` : e.type)),
    ).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta:thinking_delta',
      'content_block_delta:thinking_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta:text_delta',
      'content_block_delta:text_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0]).toMatchObject({
      message: { content: [], stop_reason: null, usage: { input_tokens: app.engine.calls[1]!.promptIds.length } },
    });
    const streamed = accumulate(events);
    expect({ ...streamed, id: json.id }).toEqual(json);
  });

  it('tool input streams as input_json_delta and parses to the same input', async () => {
    const app = scriptedApp([{ pieces: ['\n', ...CALL, '<|observation|>'] }]);
    const { events } = await stream(app, { tools: [WEATHER] });
    const message = accumulate(events);
    expect(message.content).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(events.some((e) => (e.delta as Json | undefined)?.type === 'input_json_delta')).toBe(true);
  });

  it('a failure after the stream began is an error event in the envelope, ending the stream', async () => {
    const app = scriptedApp([{ pieces: ['\n', 'Hello', ' there'], finishReason: 'cancelled' }]);
    const { events } = await stream(app, {});
    expect(events.at(-1)).toEqual({
      type: 'error',
      error: {
        type: 'overloaded_error',
        message: expect.stringContaining('server stopped'),
        details: { error_code: 'server_shutdown', param: null },
      },
    });
    expect(events.map((e) => e.type)).not.toContain('message_stop');
  });
});

describe('Anthropic errors', () => {
  it('a schema violation: 400 invalid_request_error in the envelope naming the field, request_id = the request-id header', async () => {
    const app = scriptedApp([]);
    const res = await app.request.post('/v1/messages').send({ model: 'x', messages: USER });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: "Missing required parameter: 'max_tokens'.",
        details: { error_code: 'missing_required_parameter', param: 'max_tokens' },
      },
      request_id: res.headers['request-id'],
    });
    expect(res.headers['request-id']).toBe(res.headers['x-request-id']);
    expect(schemaProblems('AnthropicErrorResponse', res.body)).toBe('');
    // Messages that do not name the field start with it, in Anthropic's `field: problem` form.
    const type = await app.request
      .post('/v1/messages')
      .send({ ...BASE, messages: [{ role: 'user', content: [{ type: 'video' }] }] });
    expect(type.body.error.message).toMatch(/^Invalid value for 'messages\[0\]\.content\[0\]\.type': 'video'/);
    const tool = await app.request
      .post('/v1/messages')
      .send({ ...BASE, tools: [{ type: 'bash_20250124', name: 'bash' }] });
    expect(tool.body.error.message).toMatch(/^tools\[0\]\.type: Server tools /);
    expect(app.engine.calls).toEqual([]);
  });

  it('the OpenAI endpoints keep the OpenAI envelope', async () => {
    const app = scriptedApp([]);
    const res = await app.request.post('/v1/chat/completions').send({ messages: USER, frobnicate: 1 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.objectContaining({ type: 'invalid_request_error', code: 'unknown_parameter', param: 'frobnicate' }),
    });
    expect(res.headers['request-id']).toBeUndefined();
  });

  it('401 authentication_error without a key; x-api-key and Authorization: Bearer both work', async () => {
    const app = scriptedApp([TEXT, TEXT], { apiKeys: ['sk-one'] });
    const missing = await app.request.post('/v1/messages').send(BASE);
    expect(missing.status).toBe(401);
    expect(missing.body.error.type).toBe('authentication_error');
    expect((await app.request.post('/v1/messages').set('x-api-key', 'sk-two').send(BASE)).status).toBe(401);
    expect(
      (
        await app.request
          .post('/v1/messages')
          .set('x-api-key', 'sk-one')
          .set('anthropic-version', '2023-06-01')
          .send(BASE)
      ).status,
    ).toBe(200);
    expect(
      (await app.request.post('/v1/messages?beta=true').set('Authorization', 'Bearer sk-one').send(BASE)).status,
    ).toBe(200);
  });

  it('529 overloaded_error while the model loads; 413 request_too_large; 404 and 405 below /v1/messages', async () => {
    const app = scriptedApp([], { maxBodyBytes: 4096 });
    app.setRuntime(undefined);
    const loading = await app.request.post('/v1/messages').send(BASE);
    expect(loading.status).toBe(529);
    expect(loading.headers['retry-after']).toBe('5');
    expect(loading.body.error).toMatchObject({ type: 'overloaded_error', details: { error_code: 'model_loading' } });
    expect((await app.request.post('/v1/messages/count_tokens').send({ model: 'x', messages: USER })).status).toBe(529);
    const large = await app.request.post('/v1/messages').send({ ...BASE, system: 'x'.repeat(5000) });
    expect(large.status).toBe(413);
    expect(large.body.error.type).toBe('request_too_large');
    const batches = await app.request.post('/v1/messages/batches').send({ requests: [] });
    expect(batches.status).toBe(404);
    expect(batches.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const get = await app.request.get('/v1/messages');
    expect(get.status).toBe(405);
    expect(get.body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', details: { error_code: 'method_not_allowed' } },
    });
  });

  it('shutting down: 529 overloaded_error shutting_down with Retry-After, as the other endpoints answer 503', async () => {
    const base = scriptedRuntime([TEXT]);
    const runtime = stubRuntime({ ...base, id: 'maya-test' });
    const app = createTestApp({ runtime, deps: { isStopping: () => true } });
    const res = await app.request.post('/v1/messages').send(BASE);
    expect(res.status).toBe(529);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.error).toMatchObject({ type: 'overloaded_error', details: { error_code: 'shutting_down' } });
    expect((await app.request.post('/v1/chat/completions').send({ messages: USER })).status).toBe(503);
    expect(base.engine.calls).toEqual([]);
  });

  it('an image for a model without a vision path: 400 unsupported_content naming the block', async () => {
    const app = scriptedApp([]);
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
    const res = await app.request
      .post('/v1/messages')
      .send({ ...BASE, messages: [{ role: 'user', content: [{ type: 'text', text: 'Look' }, image] }] });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual({ error_code: 'unsupported_content', param: 'messages[0].content[1]' });
    expect(app.engine.calls).toEqual([]);
  });

  it.each([
    ['a server tool', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [
      'programmatic tool calling',
      { tools: [{ ...WEATHER, allowed_callers: ['code_execution_20250825'] }] },
      'tools[0].allowed_callers',
    ],
    ['the MCP connector', { mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }] }, 'mcp_servers'],
    ['a container', { container: 'c_1' }, 'container'],
    [
      'tool-result clearing',
      { context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } },
      'context_management.edits[0].type',
    ],
    ['a negative top_k', { top_k: -1 }, 'top_k'],
    ['a non-integer top_k', { top_k: 2.5 }, 'top_k'],
    [
      'a document',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }],
          },
        ],
      },
      'messages[0].content[0].type',
    ],
    [
      'a search result in a tool result',
      {
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'get_weather', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't',
                content: [{ type: 'search_result', source: 's', title: 't', content: [] }],
              },
            ],
          },
        ],
      },
      'messages[2].content[0].content[0].type',
    ],
    [
      'a server tool block',
      {
        messages: [
          { role: 'assistant', content: [{ type: 'server_tool_use', id: 's', name: 'web_search', input: {} }] },
          ...USER,
        ],
      },
      'messages[0].content[0].type',
    ],
    [
      'redacted thinking',
      { messages: [{ role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] }, ...USER] },
      'messages[0].content[0].type',
    ],
    [
      'a file image',
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] },
      'messages[0].content[0].source.type',
    ],
    [
      'citations',
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'x', citations: [{ type: 'char_location' }] }] }] },
      'messages[0].content[0].citations',
    ],
    [
      'an assistant prefill',
      { messages: [...USER, { role: 'assistant', content: 'The answer is' }] },
      'messages[1].role',
    ],
    ['a thinking type Maya does not have', { thinking: { type: 'between_tools' } }, 'thinking.type'],
  ])('%s is refused with a 400 naming the field, before any generation', async (_name, body, param) => {
    const app = scriptedApp([]);
    const res = await app.request.post('/v1/messages').send({ ...BASE, tools: [WEATHER], ...body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', details: { param } });
    expect(res.body.error.message).toContain(param);
    expect(app.engine.calls).toEqual([]);
  });

  it('cache_control markers, metadata, service_tier and the anthropic headers are accepted and ignored', async () => {
    const app = scriptedApp([TEXT]);
    const res = await app.request
      .post('/v1/messages')
      .set('anthropic-version', '2023-06-01')
      .set('anthropic-beta', 'prompt-caching-2024-07-31')
      .send({
        ...BASE,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello', cache_control: { type: 'ephemeral' } }] }],
        tools: [{ ...WEATHER, cache_control: { type: 'ephemeral' } }],
        cache_control: { type: 'ephemeral' },
        metadata: { user_id: 'u-1' },
        service_tier: 'auto',
      });
    expect(res.status).toBe(200);
  });
});

describe('thinking signatures (MAYA_GLM_RESPONSES_ENCRYPTED_REASONING)', () => {
  const ON: ResponsesOptIns = { itemReferences: false, encryptedReasoning: true };

  it('on: thinking blocks carry a sealed signature (streamed as signature_delta) that replays; altered thinking or another key is refused', async () => {
    const app = scriptedApp(
      Array.from({ length: 6 }, () => THINK_TEXT),
      { optIns: ON, apiKeys: ['sk-one', 'sk-two'] },
    );
    const first = await app.request
      .post('/v1/messages')
      .set('x-api-key', 'sk-one')
      .send({ ...BASE, thinking: THINKING });
    const thinking = first.body.content[0] as Json;
    expect(thinking).toMatchObject({
      type: 'thinking',
      thinking: 'The user greets.',
      signature: expect.stringMatching(/^[A-Za-z0-9+/]{40,}={0,2}$/),
    });
    const replay = (block: Json) => ({
      ...BASE,
      thinking: THINKING,
      messages: [
        ...USER,
        { role: 'assistant', content: [block, { type: 'text', text: 'Hello there!' }] },
        { role: 'user', content: 'Thanks' },
      ],
    });
    expect((await app.request.post('/v1/messages').set('x-api-key', 'sk-one').send(replay(thinking))).status).toBe(200);
    const altered = await app.request
      .post('/v1/messages')
      .set('x-api-key', 'sk-one')
      .send(replay({ ...thinking, thinking: 'Something else.' }));
    expect(altered.status).toBe(400);
    expect(altered.body.error.details).toEqual({
      error_code: 'invalid_signature',
      param: 'messages[1].content[0].thinking',
    });
    const otherKey = await app.request.post('/v1/messages').set('x-api-key', 'sk-two').send(replay(thinking));
    expect(otherKey.body.error.details).toEqual({
      error_code: 'invalid_signature',
      param: 'messages[1].content[0].signature',
    });
  });

  it('display omitted: no thinking text, and the signature alone carries it into the next turn', async () => {
    const app = scriptedApp(
      Array.from({ length: 4 }, () => THINK_TEXT),
      { optIns: ON },
    );
    const omitted = { type: 'enabled', budget_tokens: 2048, display: 'omitted' };
    const res = await app.request.post('/v1/messages').send({ ...BASE, thinking: omitted });
    const block = res.body.content[0] as Json;
    expect(block).toMatchObject({ type: 'thinking', thinking: '' });
    const { events } = await stream(app, { thinking: omitted });
    expect(events.some((e) => (e.delta as Json | undefined)?.type === 'thinking_delta')).toBe(false);
    expect(events.find((e) => (e.delta as Json | undefined)?.type === 'signature_delta')).toBeDefined();
    const next = (first: Json) => ({
      ...BASE,
      thinking: THINKING,
      messages: [
        ...USER,
        { role: 'assistant', content: [first, { type: 'text', text: 'Hello there!' }] },
        { role: 'user', content: 'Thanks' },
      ],
    });
    await app.request.post('/v1/messages').send(next(block));
    await app.request
      .post('/v1/messages')
      .send(next({ type: 'thinking', thinking: 'The user greets.', signature: '' }));
    const [, , fromSignature, fromText] = app.engine.calls.map((call) => call.promptIds.length);
    expect(fromSignature).toBe(fromText);
  });

  it('off: the signature is empty and not checked; the thinking text is replayed', async () => {
    const app = scriptedApp([THINK_TEXT, TEXT]);
    const first = await app.request.post('/v1/messages').send({ ...BASE, thinking: THINKING });
    expect(first.body.content[0].signature).toBe('');
    const replay = await app.request.post('/v1/messages').send({
      ...BASE,
      messages: [
        ...USER,
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'x', signature: 'from-elsewhere' },
            { type: 'text', text: 'Hi' },
          ],
        },
        { role: 'user', content: 'Thanks' },
      ],
    });
    expect(replay.status).toBe(200);
  });
});

describe('countMessageTokens', () => {
  it('the prompt tokens a run of the same request gets, tools and system included', async () => {
    const app = scriptedApp([TEXT]);
    const body = { model: 'x', system: 'Be brief.', tools: [WEATHER], messages: USER };
    const counted = await app.request.post('/v1/messages/count_tokens').send(body);
    expect(counted.status).toBe(200);
    expect(schemaProblems('AnthropicMessageTokensCount', counted.body)).toBe('');
    await app.request.post('/v1/messages').send({ ...body, max_tokens: 64 });
    expect(counted.body).toEqual({ input_tokens: app.engine.calls[0]!.promptIds.length });
    const smaller = await app.request.post('/v1/messages/count_tokens').send({ model: 'x', messages: USER });
    expect(smaller.body.input_tokens).toBeLessThan(counted.body.input_tokens);
    const refused = await app.request
      .post('/v1/messages/count_tokens')
      .send({ model: 'x', messages: USER, max_tokens: 5 });
    expect(refused.body.error.details).toEqual({ error_code: 'unknown_parameter', param: 'max_tokens' });
  });
});

describe('createMessage: a client that disconnects mid-stream stops generation', () => {
  it('the sequence is cancelled after the socket closes', async () => {
    const base = scriptedApp([LONG], { tokenDelayMs: 5 });
    const served = await listenTestApp({ runtime: base.runtime });
    try {
      await leaveMidStream(`${served.origin}/v1/messages`, { ...BASE, stream: true }, ' w1');
      await expectCancelled(base.engine, LONG);
    } finally {
      await served.close();
    }
  });
});
