/**
 * Example SSE event sequences (text with reasoning, a function call, background lifecycle and
 * failures) validate against ResponseStreamEvent and against their own event schemas; broken
 * events do not.
 */
import { describe, expect, it } from 'vitest';
import type { ResponseStreamEvent, StreamEventOf } from '../../contract/types.ts';
import { errorsOf, loadDocument, schemaValidator } from './contract-schemas.ts';
import { functionCall, outputMessage, reasoningItem, response } from './fixtures.ts';

const doc = loadDocument();
const mapping = (doc.components.schemas.ResponseStreamEvent as { discriminator: { mapping: Record<string, string> } }).discriminator.mapping;

const inProgress = { ...response, status: 'in_progress' as const, completed_at: null, output: [], usage: null };
const emptyText = { type: 'output_text' as const, text: '', annotations: [], logprobs: [] };

const textStream: ResponseStreamEvent[] = [
  { type: 'response.created', sequence_number: 0, response: inProgress },
  { type: 'response.in_progress', sequence_number: 1, response: inProgress },
  { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...reasoningItem, status: 'in_progress', content: [] } },
  { type: 'response.content_part.added', sequence_number: 3, item_id: 'rs_1', output_index: 0, content_index: 0, part: { type: 'reasoning_text', text: '' } },
  { type: 'response.reasoning_text.delta', sequence_number: 4, item_id: 'rs_1', output_index: 0, content_index: 0, delta: 'The user ' },
  { type: 'response.reasoning_text.done', sequence_number: 5, item_id: 'rs_1', output_index: 0, content_index: 0, text: 'The user greets me.' },
  { type: 'response.content_part.done', sequence_number: 6, item_id: 'rs_1', output_index: 0, content_index: 0, part: { type: 'reasoning_text', text: 'The user greets me.' } },
  { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item: reasoningItem },
  { type: 'response.output_item.added', sequence_number: 8, output_index: 1, item: { ...outputMessage, status: 'in_progress', content: [] } },
  { type: 'response.content_part.added', sequence_number: 9, item_id: 'msg_1', output_index: 1, content_index: 0, part: emptyText },
  { type: 'response.output_text.delta', sequence_number: 10, item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'Hello', logprobs: [] },
  { type: 'response.output_text.done', sequence_number: 11, item_id: 'msg_1', output_index: 1, content_index: 0, text: 'Hello there.', logprobs: [] },
  { type: 'response.content_part.done', sequence_number: 12, item_id: 'msg_1', output_index: 1, content_index: 0, part: { ...emptyText, text: 'Hello there.' } },
  { type: 'response.output_item.done', sequence_number: 13, output_index: 1, item: outputMessage },
  { type: 'response.completed', sequence_number: 14, response: { ...response, output: [reasoningItem, outputMessage] } },
];

const callStream: ResponseStreamEvent[] = [
  { type: 'response.queued', sequence_number: 0, response: { ...inProgress, status: 'queued', background: true, store: true } },
  { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...functionCall, arguments: '', status: 'in_progress' } },
  { type: 'response.function_call_arguments.delta', sequence_number: 2, item_id: 'fc_1', output_index: 0, delta: '{"key":' },
  { type: 'response.function_call_arguments.done', sequence_number: 3, item_id: 'fc_1', name: 'lookup', output_index: 0, arguments: '{"key":"alpha"}' },
  { type: 'response.output_item.done', sequence_number: 4, output_index: 0, item: functionCall },
  { type: 'response.incomplete', sequence_number: 5, response: { ...response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [functionCall] } },
];

const listed = { type: 'mcp_list_tools' as const, id: 'mcpl_1', server_label: 'weather', tools: [{ name: 'get_weather', description: null, input_schema: { type: 'object' }, annotations: { readOnlyHint: true } }] };
const mcpCall = { type: 'mcp_call' as const, id: 'mcp_1', server_label: 'weather', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' as const, output: '{"temperature": 21}' };
/** The hosted mcp tool (MAYA_GLM_RESPONSES_MCP): a tool list, then a call the server runs. */
const mcpStream: ResponseStreamEvent[] = [
  { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...listed, tools: [] } },
  { type: 'response.mcp_list_tools.in_progress', sequence_number: 3, item_id: 'mcpl_1', output_index: 0 },
  { type: 'response.mcp_list_tools.completed', sequence_number: 4, item_id: 'mcpl_1', output_index: 0 },
  { type: 'response.mcp_list_tools.failed', sequence_number: 4, item_id: 'mcpl_1', output_index: 0 },
  { type: 'response.output_item.done', sequence_number: 5, output_index: 0, item: listed },
  { type: 'response.output_item.added', sequence_number: 6, output_index: 1, item: { ...mcpCall, arguments: '', status: 'in_progress', output: null } },
  { type: 'response.mcp_call_arguments.delta', sequence_number: 7, item_id: 'mcp_1', output_index: 1, delta: '{"city":' },
  { type: 'response.mcp_call_arguments.done', sequence_number: 8, item_id: 'mcp_1', output_index: 1, arguments: '{"city":"Paris"}' },
  { type: 'response.mcp_call.in_progress', sequence_number: 9, item_id: 'mcp_1', output_index: 1 },
  { type: 'response.mcp_call.completed', sequence_number: 10, item_id: 'mcp_1', output_index: 1 },
  { type: 'response.mcp_call.failed', sequence_number: 10, item_id: 'mcp_1', output_index: 1 },
  { type: 'response.output_item.done', sequence_number: 11, output_index: 1, item: mcpCall },
  { type: 'response.output_item.done', sequence_number: 12, output_index: 2, item: { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'weather', name: 'get_weather', arguments: '{}' } },
];

const failures: ResponseStreamEvent[] = [
  { type: 'response.failed', sequence_number: 6, response: { ...response, status: 'failed', output: [], error: { code: 'server_error', message: 'engine failure', type: 'server_error' } } },
  { type: 'error', sequence_number: 7, code: 'response_cancelled', message: 'The response was cancelled.', param: null,
    error: { type: 'invalid_request_error', code: 'response_cancelled', message: 'The response was cancelled.', param: null } },
  { type: 'error', sequence_number: 0, code: null, message: 'Reader fell behind.', param: null },
];

function schemaFor(type: string): string {
  const ref = mapping[type];
  if (!ref) throw new Error(`no event schema for ${type}`);
  return ref.split('/').pop()!;
}

describe('stream event schemas', () => {
  const all = [...textStream, ...callStream, ...mcpStream, ...failures];

  it('cover every event type Maya emits in these sequences', () => {
    expect(new Set(all.map((e) => e.type)).size).toBe(Object.keys(mapping).length);
  });

  it.each(all.map((event) => [`${event.type} #${event.sequence_number}`, event] as const))('%s validates', (_label, event) => {
    const union = schemaValidator('ResponseStreamEvent');
    expect(union(event), errorsOf(union)).toBe(true);
    const own = schemaValidator(schemaFor(event.type));
    expect(own(event), errorsOf(own)).toBe(true);
  });

  it('rejects an event without sequence_number', () => {
    const { sequence_number: _n, ...event } = textStream[10] as StreamEventOf<'response.output_text.delta'>;
    expect(schemaValidator('ResponseTextDeltaEvent')(event)).toBe(false);
    expect(schemaValidator('ResponseStreamEvent')(event)).toBe(false);
  });

  it('rejects an output_text delta without logprobs and a negative sequence number', () => {
    const { logprobs: _l, ...noLogprobs } = textStream[10] as StreamEventOf<'response.output_text.delta'>;
    expect(schemaValidator('ResponseTextDeltaEvent')(noLogprobs)).toBe(false);
    expect(schemaValidator('ResponseStreamEvent')({ ...textStream[10], sequence_number: -1 })).toBe(false);
  });

  it('rejects unknown event types (the SDK stream helpers throw on them)', () => {
    expect(schemaValidator('ResponseStreamEvent')({ type: 'response.cancelled', sequence_number: 3, response })).toBe(false);
    expect(schemaValidator('ResponseStreamEvent')({ type: 'response.reasoning.delta', sequence_number: 3, item_id: 'rs_1', output_index: 0, content_index: 0, delta: 'x' })).toBe(false);
  });

  it('rejects a function_call_arguments.done without the function name', () => {
    const { name: _name, ...event } = callStream[3] as StreamEventOf<'response.function_call_arguments.done'>;
    expect(schemaValidator('ResponseFunctionCallArgumentsDoneEvent')(event)).toBe(false);
  });
});
