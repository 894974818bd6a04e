/**
 * Sample bodies against the contract's schemas: what Maya accepts passes, and each limit and
 * closed-object rule in the yaml refuses what it should (unknown parameters, non-string
 * client_metadata, prompt_cache_key over 256, limit over 100, ...).
 */
import { describe, expect, it } from 'vitest';
import { errorsOf, loadDocument, parameterValidator, schemaValidator } from './contract-schemas.ts';
import { chatBody, chatChunk, chatCompletion, fullCreateBody, itemList, response, status } from './fixtures.ts';

const doc = loadDocument();

/** Passes validation, also with ajv in lenient mode (discriminator ignored). */
function accepts(schema: string, value: unknown): void {
  const validate = schemaValidator(schema);
  expect(validate(value), errorsOf(validate)).toBe(true);
  const lenient = schemaValidator(schema, 'lenient');
  expect(lenient(value), errorsOf(lenient)).toBe(true);
}

/** Fails validation, with an error at `path` (a JSON pointer into the value); lenient mode agrees. */
function rejects(schema: string, value: unknown, path: string): void {
  const validate = schemaValidator(schema);
  expect(validate(value)).toBe(false);
  expect(validate.errors?.map((e) => e.instancePath), errorsOf(validate)).toContain(path);
  expect(schemaValidator(schema, 'lenient')(value)).toBe(false);
}

const create = (extra: Record<string, unknown>) => ({ input: 'Hello', ...extra });

describe('CreateResponse accepts', () => {
  it("the spec's minimal request", () => accepts('CreateResponse', { input: 'Hello', store: false, stream: true, max_output_tokens: 256 }));
  it('a request with every supported parameter and item type', () => accepts('CreateResponse', fullCreateBody));
  it('a history replayed from a Response output (as the SDKs send it back)', () =>
    accepts('CreateResponse', { input: [{ role: 'user', content: 'Look up alpha' }, ...response.output, { type: 'function_call_output', call_id: 'call_1', output: '73' }] }));
  it('fields that code rejects with a clear message (conversation, item_reference, summaries, encrypted reasoning)', () => {
    accepts('CreateResponse', create({ conversation: 'conv_1' }));
    accepts('CreateResponse', create({ conversation: { id: 'conv_1' } }));
    accepts('CreateResponse', { input: [{ type: 'item_reference', id: 'msg_1' }] });
    accepts('CreateResponse', create({ reasoning: { effort: 'low', summary: 'auto', generate_summary: 'concise' } }));
    accepts('CreateResponse', { input: [{ ...response.output[0], encrypted_content: 'gAAA' }] });
    accepts('CreateResponse', create({ truncation: 'auto', service_tier: 'flex', background: true }));
    accepts('CreateResponse', { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' }] }] });
  });
  it('null for every nullable parameter', () =>
    accepts('CreateResponse', create({ instructions: null, previous_response_id: null, store: null, stream: null, stream_options: null, background: null, temperature: null, top_p: null, max_output_tokens: null, metadata: null, parallel_tool_calls: null, reasoning: null, prompt_cache_key: null, client_metadata: null, include: null, truncation: null, service_tier: null, safety_identifier: null, top_logprobs: null, max_tool_calls: null, conversation: null })));
});

describe('CreateResponse rejects', () => {
  it('an unknown top-level parameter', () => rejects('CreateResponse', create({ frobnicate: true }), ''));
  it('OpenAI parameters Maya does not take (prompt, moderation, context_management)', () => {
    rejects('CreateResponse', create({ prompt: { id: 'pmpt_1' } }), '');
    rejects('CreateResponse', create({ moderation: {} }), '');
    rejects('CreateResponse', create({ context_management: [] }), '');
  });
  it('an unknown field inside an input message', () => rejects('CreateResponse', { input: [{ role: 'user', content: 'hi', mood: 'happy' }] }, '/input/0'));
  it('an unknown field inside a content part', () =>
    rejects('CreateResponse', { input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi', cache: true }] }] }, '/input/0/content/0'));
  it('non-string client_metadata values', () => {
    rejects('CreateResponse', create({ client_metadata: { n: 1 } }), '/client_metadata/n');
    rejects('CreateResponse', create({ client_metadata: { nested: { a: 'b' } } }), '/client_metadata/nested');
    rejects('CreateResponse', create({ client_metadata: 'text' }), '/client_metadata');
  });
  it('prompt_cache_key of 257 characters', () => rejects('CreateResponse', create({ prompt_cache_key: 'k'.repeat(257) }), '/prompt_cache_key'));
  it('metadata over 16 pairs, 64-character keys or 512-character values', () => {
    rejects('CreateResponse', create({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }), '/metadata');
    rejects('CreateResponse', create({ metadata: { ['k'.repeat(65)]: 'v' } }), '/metadata');
    rejects('CreateResponse', create({ metadata: { k: 'v'.repeat(513) } }), '/metadata/k');
    rejects('CreateResponse', create({ metadata: { k: 1 } }), '/metadata/k');
  });
  it('include values other than reasoning.encrypted_content', () => rejects('CreateResponse', create({ include: ['message.output_text.logprobs'] }), '/include/0'));
  it('hosted tools and tool choices', () => {
    rejects('CreateResponse', create({ tools: [{ type: 'web_search' }] }), '/tools/0');
    rejects('CreateResponse', create({ tools: [{ type: 'mcp' }] }), '/tools/0');
    rejects('CreateResponse', create({ tool_choice: { type: 'web_search' } }), '/tool_choice');
    rejects('CreateResponse', create({ tool_choice: 'sometimes' }), '/tool_choice');
  });
  it('file and audio content parts, and images by file id', () => {
    rejects('CreateResponse', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, '/input/0/content/0/type');
    rejects('CreateResponse', { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1', detail: 'auto' }] }] }, '/input/0/content/0');
  });
  it('out-of-range sampling and output limits', () => {
    rejects('CreateResponse', create({ temperature: 2.5 }), '/temperature');
    rejects('CreateResponse', create({ top_p: 1.5 }), '/top_p');
    rejects('CreateResponse', create({ max_output_tokens: 15 }), '/max_output_tokens');
    rejects('CreateResponse', create({ top_logprobs: 21 }), '/top_logprobs');
    rejects('CreateResponse', create({ safety_identifier: 's'.repeat(65) }), '/safety_identifier');
  });
  it('a json_schema format without a name or with a non-object root', () => {
    rejects('CreateResponse', create({ text: { format: { type: 'json_schema', schema: { type: 'object' } } } }), '/text/format');
    rejects('CreateResponse', create({ text: { format: { type: 'json_schema', name: 'list', schema: { type: 'array' } } } }), '/text/format/schema/type');
    rejects('CreateResponse', create({ text: { format: { type: 'xml' } } }), '/text/format');
  });
  it('wrong types for input and messages', () => {
    rejects('CreateResponse', { input: 42 }, '/input');
    rejects('CreateResponse', { input: [{ role: 'robot', content: 'hi' }] }, '/input/0/role');
    rejects('CreateResponse', { input: [{ type: 'function_call_output', output: 'no call id' }] }, '/input/0');
  });
});

describe('query parameters', () => {
  it('listInputItems limit is 1..100', () => {
    const limit = parameterValidator(doc, 'listInputItems', 'limit');
    expect([1, 20, 100].map((n) => limit(n))).toEqual([true, true, true]);
    expect([0, 101, 2.5].map((n) => limit(n))).toEqual([false, false, false]);
  });
  it('listInputItems order is asc or desc', () => {
    const order = parameterValidator(doc, 'listInputItems', 'order');
    expect([order('asc'), order('desc'), order('newest')]).toEqual([true, true, false]);
  });
  it('getResponse starting_after is a nonnegative integer and include has one value', () => {
    const after = parameterValidator(doc, 'getResponse', 'starting_after');
    expect([after(0), after(7), after(-1)]).toEqual([true, true, false]);
    const include = parameterValidator(doc, 'getResponse', 'include');
    expect([include(['reasoning.encrypted_content']), include(['file_search_call.results'])]).toEqual([true, false]);
  });
});

describe('response-side schemas', () => {
  it('accept a complete Response', () => accepts('Response', response));
  it('require status and the cached_tokens usage detail', () => {
    const { status: _status, ...withoutStatus } = response;
    rejects('Response', withoutStatus, '');
    rejects('Response', { ...response, usage: { ...response.usage!, input_tokens_details: { cache_write_tokens: 0 } } }, '/usage/input_tokens_details');
  });
  it('require annotations and logprobs on output_text', () =>
    rejects('OutputMessage', { ...response.output[1], content: [{ type: 'output_text', text: 'x' }] }, '/content/0'));
  it('accept the input item list, the delete result and the service documents', () => {
    accepts('ResponseItemList', itemList);
    accepts('ResponseItemList', { object: 'list', data: [], has_more: false, first_id: null, last_id: null });
    accepts('DeleteResponseResult', { id: 'resp_1', object: 'response', deleted: true });
    rejects('DeleteResponseResult', { id: 'resp_1', object: 'response', deleted: false }, '/deleted');
    accepts('MayaStatus', status);
    accepts('HealthStatus', { status: 'loading' });
    accepts('ListModelsResponse', { object: 'list', data: [{ id: 'maya-demo', object: 'model', created: 1764460800, owned_by: 'maya' }] });
  });
  it('require every error field', () => {
    accepts('ErrorResponse', { error: { message: 'bad', type: 'invalid_request_error', param: 'input', code: null } });
    rejects('ErrorResponse', { error: { message: 'bad', type: 'invalid_request_error', code: null } }, '/error');
  });
});

describe('chat completions', () => {
  it('accept a request with every supported parameter and role', () => accepts('CreateChatCompletionRequest', chatBody));
  it('accept n:1 and logprobs:false, which some clients always send', () =>
    accepts('CreateChatCompletionRequest', { messages: [{ role: 'user', content: 'x' }], n: 1, logprobs: false, user: 'u' }));
  it('reject unknown parameters, unsupported roles and too many stop strings', () => {
    rejects('CreateChatCompletionRequest', { ...chatBody, logit_bias: { '50256': -100 } }, '');
    rejects('CreateChatCompletionRequest', { ...chatBody, n: 2 }, '/n');
    rejects('CreateChatCompletionRequest', { ...chatBody, logprobs: true }, '/logprobs');
    rejects('CreateChatCompletionRequest', { messages: [{ role: 'function', name: 'f', content: 'x' }] }, '/messages/0');
    rejects('CreateChatCompletionRequest', { messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b', 'c', 'd', 'e'] }, '/stop');
    rejects('CreateChatCompletionRequest', { messages: [] }, '/messages');
    rejects('CreateChatCompletionRequest', { messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true, extra: 1 } }, '/stream_options');
  });
  it('accept a completion and a chunk with reasoning_content', () => {
    accepts('CreateChatCompletionResponse', chatCompletion);
    accepts('CreateChatCompletionStreamResponse', chatChunk);
    accepts('CreateChatCompletionStreamResponse', { ...chatChunk, choices: [], usage: chatCompletion.usage });
  });
});
