/**
 * Wire samples typed with contract/types.ts (so `npm run typecheck` checks that the generated
 * types accept them) and validated against the schemas in the tests.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  CreateChatCompletionBody,
  CreateResponseBody,
  FunctionToolCall,
  MayaStatus,
  OutputMessage,
  ReasoningItem,
  Response,
  ResponseItemList,
} from '../../contract/types.ts';

export const outputMessage: OutputMessage = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text: 'Hello there.', annotations: [], logprobs: [] }],
};

export const reasoningItem: ReasoningItem = {
  id: 'rs_1',
  type: 'reasoning',
  summary: [],
  content: [{ type: 'reasoning_text', text: 'The user greets me.' }],
  encrypted_content: null,
  status: 'completed',
};

export const functionCall: FunctionToolCall = {
  id: 'fc_1',
  type: 'function_call',
  call_id: 'call_1',
  name: 'lookup',
  arguments: '{"key":"alpha"}',
  status: 'completed',
};

export const fullCreateBody: CreateResponseBody = {
  model: 'maya-demo',
  instructions: 'Answer briefly.',
  input: [
    { role: 'system', content: 'You are terse.' },
    { role: 'developer', content: [{ type: 'input_text', text: 'Prefer tools.' }] },
    { type: 'message', role: 'user', content: [
      { type: 'input_text', text: 'What is this?' },
      { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
    ] },
    { role: 'assistant', content: [{ type: 'output_text', text: 'A picture.' }] },
    { id: 'msg_u2', type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Look up alpha' }] },
    reasoningItem,
    functionCall,
    { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: '73' }] },
    { type: 'function_call_output', call_id: 'call_2', output: '{"ok":true}' },
    outputMessage,
  ],
  previous_response_id: null,
  store: true,
  stream: true,
  stream_options: { include_obfuscation: false },
  background: false,
  temperature: 0.7,
  top_p: 0.9,
  max_output_tokens: 256,
  metadata: { topic: 'demo' },
  tools: [{ type: 'function', name: 'lookup', description: 'Look a key up', strict: true, parameters: {
    type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false,
  } }],
  tool_choice: { type: 'function', name: 'lookup' },
  parallel_tool_calls: false,
  text: { format: { type: 'json_schema', name: 'count', strict: true, schema: {
    type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false,
  } }, verbosity: 'medium' },
  reasoning: { effort: 'none' },
  prompt_cache_key: 'k'.repeat(256),
  client_metadata: { session: 'abc', client: 'tests' },
  include: ['reasoning.encrypted_content'],
  truncation: 'disabled',
  service_tier: 'auto',
  user: 'user-1',
  safety_identifier: 'sid-1',
  top_logprobs: 0,
  max_tool_calls: 4,
};

export const response: Response = {
  id: 'resp_1',
  object: 'response',
  created_at: 1764460800,
  completed_at: 1764460801,
  status: 'completed',
  error: null,
  incomplete_details: null,
  model: 'maya-demo',
  instructions: null,
  previous_response_id: null,
  output: [reasoningItem, outputMessage, functionCall],
  tools: [{ type: 'function', name: 'lookup', description: null, parameters: null, strict: false }],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  text: { format: { type: 'text' } },
  reasoning: { effort: 'medium', summary: null },
  temperature: 1,
  top_p: 1,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  max_output_tokens: null,
  max_tool_calls: null,
  truncation: 'disabled',
  store: false,
  background: false,
  service_tier: 'default',
  metadata: {},
  prompt_cache_key: null,
  safety_identifier: null,
  usage: {
    input_tokens: 20,
    input_tokens_details: { cached_tokens: 8, cache_write_tokens: 0 },
    output_tokens: 12,
    output_tokens_details: { reasoning_tokens: 5 },
    total_tokens: 32,
  },
};

export const itemList: ResponseItemList = {
  object: 'list',
  data: [
    { id: 'msg_u1', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'hi' }] },
    outputMessage,
    { ...functionCall, status: 'completed', id: 'fc_1' },
    { id: 'fco_1', type: 'function_call_output', call_id: 'call_1', output: '73', status: 'completed' },
    reasoningItem,
  ],
  has_more: false,
  first_id: 'msg_u1',
  last_id: 'rs_1',
};

export const status: MayaStatus = {
  version: '0.1.0',
  model: 'maya-demo',
  context_length: 4096,
  model_dialect: 'glm45',
  dialects: [
    { name: 'responses', endpoint: '/v1/responses' },
    { name: 'chat.completions', endpoint: '/v1/chat/completions' },
  ],
  engine: {
    backend: 'cpu', vision: false, simd: 'avx2', threads: 2, weight_dtype: 'bf16', kv_dtype: 'f32', kv_bytes_per_token: 4096, kv_capacity_tokens: 1024, blocks_total: 64, blocks_free: 60, blocks_cached: 2, seqs_waiting: 0, seqs_running: 1,
    steps: 10, prefill_tokens: 20, cached_tokens: 8, decode_tokens: 12, preemptions: 0,
    speculative: 'ngram', draft_tokens: 6, draft_accepted: 4, decode_passes: 8, tokens_per_pass: 1.5,
    mtp_drafts: 0, mtp_first_accepted: 0, mtp_draft_tokens: 0, mtp_draft_accepted: 0,
  },
  responses_cache: { entries: 1, bytes: 2048, hits: 3, misses: 1, writes: 2, rejections: 0, evictions: 0, expirations: 0, assembly_bytes: 0 },
  responses_jobs: { queued: 0, running: 1, records: 2, event_bytes: 4096, readers: 1, admissions: 2, rejections: 0, cancellations: 1, deadline_failures: 0 },
  settings: [{ name: 'MAYA_PORT', value: '9000' }, { name: 'MAYA_API_KEYS', value: '(hidden)' }],
};

export const chatBody: CreateChatCompletionBody = {
  model: 'maya-demo',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'developer', content: [{ type: 'text', text: 'Use tools.' }] },
    { role: 'user', content: [{ type: 'text', text: 'Look at this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' } }] },
    { role: 'assistant', content: null, reasoning_content: 'Need the tool.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '73' },
  ],
  tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false } }],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  temperature: 0.5,
  top_p: 1,
  max_tokens: 64,
  max_completion_tokens: 64,
  stream: true,
  stream_options: { include_usage: true },
  seed: 7,
  stop: ['\n\n'],
  reasoning_effort: 'low',
  response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: true, schema: { type: 'object', properties: {} } } },
};

export const chatCompletion: ChatCompletion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1764460800,
  model: 'maya-demo',
  choices: [{ index: 0, finish_reason: 'tool_calls', logprobs: null, message: {
    role: 'assistant', content: null, refusal: null, reasoning_content: 'Need the tool.',
    tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"key":"alpha"}' } }],
  } }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
};

export const chatChunk: ChatCompletionChunk = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  system_fingerprint: null,
  created: 1764460800,
  model: 'maya-demo',
  choices: [{ index: 0, finish_reason: null, delta: { role: 'assistant', reasoning_content: 'Need', content: null } }],
};
