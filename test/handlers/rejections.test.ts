import { describe, expect, it, vi } from 'vitest';
import { createTestApp } from '../helpers/test-app.ts';
import type { Handler } from '../../handlers/app-deps.ts';
import {
  CREATE_CHAT_COMPLETION_REJECTIONS,
  CREATE_RESPONSE_REJECTIONS,
  MESSAGES_REJECTIONS,
  rejectionsFor,
} from '../../handlers/rejections.ts';

const user = (content: unknown) => ({ role: 'user', content });
const image = (extra: Record<string, unknown>) => ({
  type: 'input_image',
  image_url: 'data:image/png;base64,AAAA',
  ...extra,
});

/** One case per row: a body that only that row refuses, and the exact param it must name. */
const CASES: { id: string; body: Record<string, unknown>; param: string }[] = [
  { id: 'conversation', body: { input: 'hi', conversation: 'conv_1' }, param: 'conversation' },
  {
    id: 'item_reference',
    body: { input: [user('hi'), { type: 'item_reference', id: 'msg_1' }] },
    param: 'input[1].type',
  },
  {
    id: 'hosted_tool',
    body: { input: 'hi', tools: [{ type: 'function', name: 'f' }, { type: 'web_search' }] },
    param: 'tools[1].type',
  },
  {
    id: 'mcp_tool',
    body: {
      input: 'hi',
      tools: [
        { type: 'function', name: 'f' },
        { type: 'mcp', server_label: 'weather' },
      ],
    },
    param: 'tools[1].type',
  },
  {
    id: 'mcp_item',
    body: { input: [user('hi'), { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: true }] },
    param: 'input[1].type',
  },
  { id: 'hosted_tool_choice', body: { input: 'hi', tool_choice: { type: 'file_search' } }, param: 'tool_choice.type' },
  {
    id: 'encrypted_reasoning',
    body: { input: [user('hi'), { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAA' }] },
    param: 'input[1].encrypted_content',
  },
  {
    id: 'reasoning_summary_input',
    body: { input: [user('hi'), { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'x' }] }] },
    param: 'input[1].summary',
  },
  {
    id: 'reasoning_summary',
    body: { input: 'hi', reasoning: { effort: 'low', summary: 'auto' } },
    param: 'reasoning.summary',
  },
  {
    id: 'reasoning_generate_summary',
    body: { input: 'hi', reasoning: { generate_summary: 'concise' } },
    param: 'reasoning.generate_summary',
  },
  {
    id: 'input_file',
    body: {
      input: [
        user([
          { type: 'input_text', text: 'read' },
          { type: 'input_file', file_id: 'file_1' },
        ]),
      ],
    },
    param: 'input[0].content[1].type',
  },
  {
    id: 'image_file_id',
    body: { input: [user([{ type: 'input_image', file_id: 'file_1' }])] },
    param: 'input[0].content[0].file_id',
  },
  {
    id: 'audio',
    body: { input: [user([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }])] },
    param: 'input[0].content[0].type',
  },
  { id: 'image_detail', body: { input: [user([image({ detail: 'high' })])] }, param: 'input[0].content[0].detail' },
  { id: 'truncation', body: { input: 'hi', truncation: 'auto' }, param: 'truncation' },
  { id: 'service_tier', body: { input: 'hi', service_tier: 'flex' }, param: 'service_tier' },
  {
    id: 'include',
    body: { input: 'hi', include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] },
    param: 'include[1]',
  },
  {
    id: 'include_encrypted_reasoning',
    body: { input: 'hi', include: ['reasoning.encrypted_content'] },
    param: 'include[0]',
  },
  { id: 'background_without_store', body: { input: 'hi', background: true }, param: 'background' },
  {
    id: 'prompt_cache_key_length',
    body: { input: 'hi', prompt_cache_key: 'k'.repeat(257) },
    param: 'prompt_cache_key',
  },
  {
    id: 'client_metadata_values',
    body: { input: 'hi', client_metadata: { app: 'x', build: 7 } },
    param: 'client_metadata.build',
  },
  { id: 'prompt_template', body: { input: 'hi', prompt: { id: 'pmpt_1' } }, param: 'prompt' },
  {
    id: 'client_metadata_size',
    body: { input: 'hi', client_metadata: { a: 'x'.repeat(8192), b: 'é'.repeat(4096) } },
    param: 'client_metadata',
  },
];

function setup() {
  const handler = vi.fn<Handler>(async (ctx) => {
    ctx.body = { ok: true };
  });
  return { handler, ...createTestApp({ handlers: { createResponse: handler } }) };
}

describe('rejection table', () => {
  it('has a case here for every row', () => {
    expect(CASES.map((c) => c.id).sort()).toEqual(CREATE_RESPONSE_REJECTIONS.map((r) => r.id).sort());
  });

  for (const { id, body, param } of CASES) {
    it(`${id} → 400 naming ${param}, handler never reached`, async () => {
      const row = CREATE_RESPONSE_REJECTIONS.find((r) => r.id === id)!;
      const { handler, request } = setup();
      const res = await request.post('/v1/responses').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { message: row.message, type: 'invalid_request_error', param, code: row.code },
      });
      expect(handler).not.toHaveBeenCalled();
    });
  }
});

describe('supported neighbours of each rejection pass', () => {
  const ACCEPTED: [string, Record<string, unknown>][] = [
    [
      'include with explicit effort none',
      { input: 'hi', include: ['reasoning.encrypted_content'], reasoning: { effort: 'none' } },
    ],
    ['background with store:true', { input: 'hi', background: true, store: true }],
    ['background:false without store', { input: 'hi', background: false }],
    ['service_tier auto', { input: 'hi', service_tier: 'auto' }],
    ['service_tier default', { input: 'hi', service_tier: 'default' }],
    ['truncation disabled', { input: 'hi', truncation: 'disabled' }],
    ['image detail auto', { input: [user([image({ detail: 'auto' })])] }],
    ['image without detail', { input: [user([image({})])] }],
    ['prompt_cache_key of 256 characters', { input: 'hi', prompt_cache_key: 'k'.repeat(256) }],
    ['string client_metadata', { input: 'hi', client_metadata: { app: 'x' } }],
    [
      'client_metadata values over 512 characters (Codex CLI turn metadata), 16384 bytes in all',
      {
        input: 'hi',
        client_metadata: { 'x-codex-turn-metadata': 'm'.repeat(800), a: 'x'.repeat(16384 - 800 - 21 - 1) },
      },
    ],
    [
      'reasoning item replayed without summary or encryption',
      {
        input: [
          user('hi'),
          { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 't' }] },
          user('next'),
        ],
      },
    ],
    ['reasoning with null summary', { input: 'hi', reasoning: { effort: 'high', summary: null } }],
    [
      'function tools and a function tool_choice',
      { input: 'hi', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'f' } },
    ],
    ['conversation null', { input: 'hi', conversation: null }],
  ];
  for (const [name, body] of ACCEPTED) {
    it(name, async () => {
      const { handler, request } = setup();
      const res = await request.post('/v1/responses').send(body);
      expect(res.body).toEqual({ ok: true });
      expect(handler).toHaveBeenCalledTimes(1);
    });
  }
});

describe('chat completions rejection table', () => {
  const chatUser = (content: unknown) => ({
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content },
    ],
  });
  const CHAT_CASES: { id: string; body: Record<string, unknown>; param: string }[] = [
    {
      id: 'chat_image_detail',
      body: chatUser([{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } }]),
      param: 'messages[1].content[0].image_url.detail',
    },
    {
      id: 'chat_file',
      body: chatUser([
        { type: 'text', text: 'read' },
        { type: 'file', file: { file_id: 'f' } },
      ]),
      param: 'messages[1].content[1].type',
    },
    {
      id: 'chat_audio',
      body: chatUser([{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]),
      param: 'messages[1].content[0].type',
    },
    { id: 'chat_presence_penalty', body: { ...chatUser('hi'), presence_penalty: 0.5 }, param: 'presence_penalty' },
    { id: 'chat_frequency_penalty', body: { ...chatUser('hi'), frequency_penalty: -1 }, param: 'frequency_penalty' },
    { id: 'chat_service_tier', body: { ...chatUser('hi'), service_tier: 'priority' }, param: 'service_tier' },
  ];

  it('has a case here for every row', () => {
    expect(CHAT_CASES.map((c) => c.id).sort()).toEqual(CREATE_CHAT_COMPLETION_REJECTIONS.map((r) => r.id).sort());
  });

  for (const { id, body, param } of CHAT_CASES) {
    it(`${id} → 400 naming ${param}, handler never reached`, async () => {
      const row = CREATE_CHAT_COMPLETION_REJECTIONS.find((r) => r.id === id)!;
      const handler = vi.fn<Handler>(async (ctx) => {
        ctx.body = { ok: true };
      });
      const { request } = createTestApp({ handlers: { createChatCompletion: handler } });
      const res = await request.post('/v1/chat/completions').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { message: row.message, type: 'invalid_request_error', param, code: row.code },
      });
      expect(handler).not.toHaveBeenCalled();
    });
  }

  it('an image with detail auto passes', async () => {
    const handler = vi.fn<Handler>(async (ctx) => {
      ctx.body = { ok: true };
    });
    const { request } = createTestApp({ handlers: { createChatCompletion: handler } });
    const res = await request
      .post('/v1/chat/completions')
      .send(chatUser([{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'auto' } }]));
    expect(res.body).toEqual({ ok: true });
  });
});

describe('Anthropic Messages rejection table (both operations, in the Anthropic envelope)', () => {
  const ask = { model: 'm', max_tokens: 16 };
  const tool = { name: 'f', input_schema: { type: 'object' } };
  const said = (content: unknown) => ({ ...ask, messages: [{ role: 'user', content }] });
  const withResult = (inner: unknown[]) => ({
    ...ask,
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: inner }] },
    ],
  });
  const MESSAGE_CASES: { id: string; body: Record<string, unknown>; param: string }[] = [
    {
      id: 'anthropic_server_tool',
      body: { ...said('hi'), tools: [tool, { type: 'code_execution_20250825', name: 'code_execution' }] },
      param: 'tools[1].type',
    },
    {
      id: 'anthropic_allowed_callers',
      body: { ...said('hi'), tools: [{ ...tool, allowed_callers: ['direct', 'code_execution_20250825'] }] },
      param: 'tools[0].allowed_callers',
    },
    { id: 'anthropic_mcp_servers', body: { ...said('hi'), mcp_servers: [] }, param: 'mcp_servers' },
    { id: 'anthropic_container', body: { ...said('hi'), container: { id: 'c' } }, param: 'container' },
    {
      id: 'anthropic_context_management',
      body: {
        ...said('hi'),
        context_management: { edits: [{ type: 'clear_thinking_20251015' }, { type: 'compact_20260112' }] },
      },
      param: 'context_management.edits[1].type',
    },
    {
      id: 'anthropic_document',
      body: said([
        { type: 'text', text: 'read' },
        { type: 'document', source: { type: 'file', file_id: 'f' } },
      ]),
      param: 'messages[0].content[1].type',
    },
    {
      id: 'anthropic_search_result',
      body: withResult([{ type: 'search_result', source: 's', title: 't', content: [] }]),
      param: 'messages[2].content[0].content[0].type',
    },
    {
      id: 'anthropic_server_tool_block',
      body: withResult([{ type: 'web_search_tool_result', tool_use_id: 's', content: [] }]),
      param: 'messages[2].content[0].content[0].type',
    },
    {
      id: 'anthropic_redacted_thinking',
      body: {
        ...ask,
        messages: [
          { role: 'user', content: 'q' },
          { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] },
          { role: 'user', content: 'again' },
        ],
      },
      param: 'messages[1].content[0].type',
    },
    {
      id: 'anthropic_file_source',
      body: withResult([{ type: 'image', source: { type: 'file', file_id: 'f' } }]),
      param: 'messages[2].content[0].content[0].source.type',
    },
    {
      id: 'anthropic_citations',
      body: said([{ type: 'text', text: 'x', citations: [{ type: 'char_location', cited_text: 'x' }] }]),
      param: 'messages[0].content[0].citations',
    },
  ];

  it('has a case here for every row', () => {
    expect(MESSAGE_CASES.map((c) => c.id).sort()).toEqual(MESSAGES_REJECTIONS.map((r) => r.id).sort());
  });

  for (const { id, body, param } of MESSAGE_CASES) {
    it(`${id} → 400 naming ${param} on /v1/messages and count_tokens, handlers never reached`, async () => {
      const row = MESSAGES_REJECTIONS.find((r) => r.id === id)!;
      const handler = vi.fn<Handler>(async (ctx) => {
        ctx.body = { ok: true };
      });
      const { request } = createTestApp({ handlers: { createMessage: handler, countMessageTokens: handler } });
      for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
        const res = await request.post(path).send(body);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          type: 'error',
          error: {
            type: 'invalid_request_error',
            // Anthropic's `field: problem` form, unless the message names the field itself.
            message: row.message.includes(param) ? row.message : `${param}: ${row.message}`,
            details: { error_code: row.code, param },
          },
          request_id: res.headers['request-id'],
        });
      }
      expect(handler).not.toHaveBeenCalled();
    });
  }

  const ACCEPTED: [string, Record<string, unknown>][] = [
    [
      'a custom tool with cache_control',
      { ...said('hi'), tools: [{ ...tool, type: 'custom', cache_control: { type: 'ephemeral' } }] },
    ],
    ['direct callers only', { ...said('hi'), tools: [{ ...tool, allowed_callers: ['direct'] }] }],
    [
      'clear_thinking edits',
      { ...said('hi'), context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] } },
    ],
    [
      'empty and null citations',
      said([
        { type: 'text', text: 'a', citations: [] },
        { type: 'text', text: 'b', citations: null },
      ]),
    ],
    ['base64 and url images', said([{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }])],
  ];
  for (const [name, body] of ACCEPTED) {
    it(`accepted: ${name}`, async () => {
      const handler = vi.fn<Handler>(async (ctx) => {
        ctx.body = { ok: true };
      });
      const { request } = createTestApp({ handlers: { createMessage: handler } });
      const res = await request.post('/v1/messages').send(body);
      expect(res.body).toEqual({ ok: true });
    });
  }
});

describe('opt-in settings lift their rows (and only those)', () => {
  const LIFTED = {
    itemReferences: ['item_reference'],
    encryptedReasoning: [
      'encrypted_reasoning',
      'reasoning_summary',
      'reasoning_generate_summary',
      'include_encrypted_reasoning',
    ],
    mcp: ['mcp_tool', 'mcp_item'],
  } as const;

  it('the lifted rows are exactly the item-reference, encrypted-reasoning and MCP rows', () => {
    const lifted = CREATE_RESPONSE_REJECTIONS.filter((row) => row.liftedBy !== undefined).map((row) => [
      row.liftedBy,
      row.id,
    ]);
    expect(lifted.sort()).toEqual(
      Object.entries(LIFTED)
        .flatMap(([setting, ids]) => ids.map((id) => [setting, id]))
        .sort(),
    );
    expect(rejectionsFor('createResponse')).toEqual(CREATE_RESPONSE_REJECTIONS);
  });

  it('off (the default): each lifted row still refuses, its message naming the setting that lifts it', () => {
    for (const row of CREATE_RESPONSE_REJECTIONS.filter((r) => r.liftedBy !== undefined))
      expect(row.message).toMatch(/MAYA_GLM_RESPONSES_(ITEM_REFERENCES|ENCRYPTED_REASONING|MCP)=on/);
  });

  for (const [setting, ids] of Object.entries(LIFTED) as [keyof typeof LIFTED, readonly string[]][]) {
    it(`${setting} on: ${ids.join(', ')} reach the handler; the other opt-in's rows still refuse`, async () => {
      const handler = vi.fn<Handler>(async (ctx) => {
        ctx.body = { ok: true };
      });
      const optIns = {
        itemReferences: setting === 'itemReferences',
        encryptedReasoning: setting === 'encryptedReasoning',
        mcp: setting === 'mcp',
      };
      const { request } = createTestApp({ handlers: { createResponse: handler }, server: { optIns } });
      for (const { id, body, param } of CASES.filter(
        (c) => CREATE_RESPONSE_REJECTIONS.find((r) => r.id === c.id)!.liftedBy,
      )) {
        const res = await request.post('/v1/responses').send(body);
        if (ids.includes(id)) expect(res.body, id).toEqual({ ok: true });
        else expect(res.body.error, id).toMatchObject({ param });
      }
      // A row no opt-in lifts still applies.
      const res = await request.post('/v1/responses').send({ input: 'hi', truncation: 'auto' });
      expect(res.body.error).toMatchObject({ param: 'truncation' });
    });
  }
});
