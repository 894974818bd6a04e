/**
 * A run's answer in Anthropic's Messages shapes (anthropic-messages.ts translates the request):
 * the final Response as a `message` (thinking, text and tool_use blocks in output order,
 * stop_reason, usage), and the run's stream events as Anthropic's: message_start, ping, then per
 * output item content_block_start / content_block_delta (thinking_delta, text_delta,
 * input_json_delta, signature_delta) / content_block_stop, then message_delta (stop reason,
 * final usage) and message_stop. A block's `index` is its output item's `output_index`.
 *
 * Usage: `input_tokens` are the prompt tokens the engine's prefix cache did not hold and
 * `cache_read_input_tokens` the ones it reused (Anthropic's split: their sum is the prompt);
 * nothing is written to a cache on request, so `cache_creation_input_tokens` is 0.
 */
import { ApiError, type ErrorType } from '../contract/errors.ts';
import { relayEvents, type StreamEvent } from '../contract/stream-events.ts';
import type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicMessageStreamEvent,
  AnthropicStopReason,
  AnthropicUsage,
  FunctionCallItem,
  ReasoningOutputItem,
  ResponseObject,
  ServerOutputItem,
} from '../contract/types.ts';

/** `summarized`: thinking blocks carry the reasoning; `omitted`: they carry none (the signature may). */
export type ThinkingDisplay = 'summarized' | 'omitted';

/** What the answer needs besides the run's events. */
export interface MessageMeta {
  /** The message id (`msg_…`). */
  id: string;
  /** The served model's ID. */
  model: string;
  display: ThinkingDisplay;
  /** The run's output budget was cut to the context's room (below the request's max_tokens). */
  isClamped: boolean;
  promptTokens: number;
  /** The stop sequence that ended the text, once the run has ended. */
  stopSequence: () => string | undefined;
}

/** A failed run as an error: 503 for a shutdown (Anthropic's 529), 400 for a request-caused failure, else 500. */
export function runFailure(response: ResponseObject): ApiError {
  const error = response.error;
  const code = error?.code ?? 'server_error';
  const type: ErrorType = error?.type === 'invalid_request_error' ? 'invalid_request_error' : 'server_error';
  const status = code === 'server_shutdown' ? 503 : type === 'invalid_request_error' ? 400 : 500;
  return new ApiError(status, error?.message ?? 'Generation failed.', type, code, null);
}

function usageOf(response: ResponseObject): AnthropicUsage {
  const usage = response.usage!;
  const cached = usage.input_tokens_details.cached_tokens;
  return {
    input_tokens: usage.input_tokens - cached,
    output_tokens: usage.output_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens_details: { thinking_tokens: usage.output_tokens_details.reasoning_tokens },
    service_tier: 'standard',
  };
}

function stopOf(
  response: ResponseObject,
  meta: MessageMeta,
): { stop_reason: AnthropicStopReason; stop_sequence: string | null } {
  const sequence = meta.stopSequence();
  const reason: AnthropicStopReason =
    response.status === 'incomplete'
      ? meta.isClamped
        ? 'model_context_window_exceeded'
        : 'max_tokens'
      : sequence !== undefined
        ? 'stop_sequence'
        : response.output.some((item) => item.type === 'function_call')
          ? 'tool_use'
          : 'end_turn';
  return { stop_reason: reason, stop_sequence: sequence ?? null };
}

/** A tool call's arguments as the block's `input` (an object; {} for arguments cut short). */
function toolInput(call: FunctionCallItem): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(call.arguments);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

function thinkingBlock(item: ReasoningOutputItem, display: ThinkingDisplay): AnthropicContentBlock {
  const thinking = display === 'omitted' ? '' : item.content.map((part) => part.text).join('');
  return { type: 'thinking', thinking, signature: item.encrypted_content ?? '' };
}

/** The output items a Messages run makes: /v1/messages offers no hosted tools, so never an mcp_* item. */
type MessageRunItem = Extract<ServerOutputItem, { type: 'reasoning' | 'message' | 'function_call' }>;

function runItem(item: ServerOutputItem): MessageRunItem {
  if (item.type === 'reasoning' || item.type === 'message' || item.type === 'function_call') return item;
  throw new Error(`a Messages run made a ${item.type} item`);
}

function blockOf(output: ServerOutputItem, display: ThinkingDisplay): AnthropicContentBlock {
  const item = runItem(output);
  if (item.type === 'reasoning') return thinkingBlock(item, display);
  if (item.type === 'message')
    return { type: 'text', text: item.content.map((part) => part.text).join(''), citations: null };
  return { type: 'tool_use', id: item.call_id, name: item.name, input: toolInput(item) };
}

/** The final Response as Anthropic's `message`. */
export function messageOf(response: ResponseObject, meta: MessageMeta): AnthropicMessage {
  return {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content: response.output.map((item) => blockOf(item, meta.display)),
    ...stopOf(response, meta),
    stop_details: null,
    container: null,
    usage: usageOf(response),
  };
}

/** A block as content_block_start announces it: empty, filled by its deltas. */
function openedBlock(output: ServerOutputItem): AnthropicContentBlock {
  const item = runItem(output);
  if (item.type === 'reasoning') return { type: 'thinking', thinking: '', signature: '' };
  if (item.type === 'message') return { type: 'text', text: '', citations: null };
  return { type: 'tool_use', id: item.call_id, name: item.name, input: {} };
}

/** One Responses stream event → the Anthropic events it carries (none for lifecycle events). */
function blockEvents(event: StreamEvent, display: ThinkingDisplay): AnthropicMessageStreamEvent[] {
  const index = event.output_index as number;
  switch (event.type) {
    case 'response.output_item.added':
      return [{ type: 'content_block_start', index, content_block: openedBlock(event.item as ServerOutputItem) }];
    case 'response.reasoning_text.delta':
      if (display === 'omitted') return [];
      return [
        { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: event.delta as string } },
      ];
    case 'response.output_text.delta':
      return [{ type: 'content_block_delta', index, delta: { type: 'text_delta', text: event.delta as string } }];
    case 'response.function_call_arguments.delta':
      return [
        {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: event.delta as string },
        },
      ];
    case 'response.output_item.done': {
      const item = event.item as ServerOutputItem;
      const stop: AnthropicMessageStreamEvent = { type: 'content_block_stop', index };
      if (item.type !== 'reasoning' || item.encrypted_content === undefined) return [stop];
      return [
        { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: item.encrypted_content } },
        stop,
      ];
    }
    default:
      return [];
  }
}

/** Yields every element of the lists `lists` yields; returns what it returns. */
async function* flatten<T, R>(lists: AsyncGenerator<T[], R, void>): AsyncGenerator<T, R, void> {
  let step = await lists.next();
  while (!step.done) {
    yield* step.value;
    step = await lists.next();
  }
  return step.value;
}

/**
 * The run's events as Anthropic's stream. message_start carries the whole prompt as
 * `input_tokens` (the prefix cache's share is known only once the prompt ran); message_delta
 * then carries the final usage, which the SDKs take over. A failed run raises its error (the SSE
 * writer turns it into an `error` event); a cancelled one (the client went away) just ends.
 */
export async function* messageEvents(
  events: AsyncGenerator<StreamEvent, ResponseObject, void>,
  meta: MessageMeta,
): AsyncGenerator<AnthropicMessageStreamEvent, void, void> {
  yield {
    type: 'message_start',
    message: {
      id: meta.id,
      type: 'message',
      role: 'assistant',
      model: meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      container: null,
      usage: {
        input_tokens: meta.promptTokens,
        output_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    },
  };
  yield { type: 'ping' };
  const final = yield* flatten(relayEvents(events, (event) => blockEvents(event, meta.display)));
  if (final.status === 'failed') throw runFailure(final);
  if (final.status === 'cancelled') return;
  yield { type: 'message_delta', delta: { ...stopOf(final, meta), stop_details: null }, usage: usageOf(final) };
  yield { type: 'message_stop' };
}
