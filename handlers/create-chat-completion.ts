/**
 * createChatCompletion (POST /v1/chat/completions) on the Responses service: the same plan,
 * engine run and parser, reported as a chat.completion object or chat.completion.chunk frames
 * through the one SSE writer (`reasoning_content` for thinking models,
 * `stream_options.include_usage` for a usage chunk). This file only formats.
 */
import type { Handler } from './app-deps.ts';
import { abortOnDisconnect, chatFormat, streamSse } from './sse.ts';
import { ApiError } from '../contract/errors.ts';
import type { StreamEvent } from '../contract/stream-events.ts';
import type { FunctionCallItem, ResponseObject } from '../contract/types.ts';
import type { ChatRequest } from '../responses/chat-request.ts';
import { newId } from '../responses/ids.ts';
import { createChatCompletion as run, runToEnd } from '../responses/service.ts';

type Chunk = Record<string, unknown>;

function finishReason(response: ResponseObject): 'stop' | 'length' | 'tool_calls' {
  if (response.status === 'incomplete') return 'length';
  return response.output.some((item) => item.type === 'function_call') ? 'tool_calls' : 'stop';
}

function usage(response: ResponseObject) {
  const u = response.usage!;
  return {
    prompt_tokens: u.input_tokens,
    completion_tokens: u.output_tokens,
    total_tokens: u.total_tokens,
    prompt_tokens_details: { cached_tokens: u.input_tokens_details.cached_tokens },
    completion_tokens_details: { reasoning_tokens: u.output_tokens_details.reasoning_tokens },
  };
}

/** A failed run as an error: 503 when the server was shutting down (retry elsewhere), else 500. */
function failure(response: ResponseObject): ApiError {
  const code = response.error?.code ?? 'server_error';
  return new ApiError(
    code === 'server_shutdown' ? 503 : 500,
    response.error?.message ?? 'Generation failed.',
    'server_error',
    code,
    null,
  );
}

function message(response: ResponseObject) {
  let content = '';
  let reasoning = '';
  const calls: FunctionCallItem[] = [];
  for (const item of response.output) {
    if (item.type === 'message') content += item.content.map((part) => part.text).join('');
    else if (item.type === 'reasoning') reasoning += item.content.map((part) => part.text).join('');
    else calls.push(item);
  }
  return {
    role: 'assistant',
    content: calls.length > 0 && content === '' ? null : content,
    refusal: null,
    ...(reasoning ? { reasoning_content: reasoning } : {}),
    ...(calls.length > 0
      ? {
          tool_calls: calls.map((call) => ({
            id: call.call_id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      : {}),
  };
}

/** One Responses stream event → the chat delta it carries, if any. */
function delta(event: StreamEvent, callIndex: Map<string, number>): Chunk | undefined {
  switch (event.type) {
    case 'response.output_text.delta':
      return { content: event.delta };
    case 'response.reasoning_text.delta':
      return { reasoning_content: event.delta };
    case 'response.output_item.added': {
      const item = event.item as FunctionCallItem;
      if (item.type !== 'function_call') return undefined;
      callIndex.set(item.id, callIndex.size);
      return {
        tool_calls: [
          {
            index: callIndex.size - 1,
            id: item.call_id,
            type: 'function',
            function: { name: item.name, arguments: '' },
          },
        ],
      };
    }
    case 'response.function_call_arguments.delta':
      return { tool_calls: [{ index: callIndex.get(event.item_id as string), function: { arguments: event.delta } }] };
    default:
      return undefined;
  }
}

async function* chunks(
  events: AsyncGenerator<StreamEvent, ResponseObject>,
  base: Chunk,
  includeUsage: boolean,
): AsyncGenerator<Chunk> {
  const callIndex = new Map<string, number>();
  yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
  let step = await events.next();
  for (; !step.done; step = await events.next()) {
    const d = delta(step.value, callIndex);
    if (d) yield { ...base, choices: [{ index: 0, delta: d, finish_reason: null }] };
  }
  const response = step.value;
  if (response.status === 'failed') throw failure(response);
  if (response.status === 'cancelled') return;
  yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: finishReason(response) }] };
  if (includeUsage) yield { ...base, choices: [], usage: usage(response) };
}

export const createChatCompletion: Handler = async (ctx, deps) => {
  const chat = ctx.state.body as ChatRequest;
  // Watched from the start: a client gone during planning stops the run before it generates.
  const disconnect = abortOnDisconnect(ctx.res);
  const { runtime, response, events } = await run(deps, chat, disconnect.signal);
  const base = {
    id: newId('chatcmpl'),
    object: 'chat.completion.chunk',
    created: response.created_at,
    model: runtime.id,
    system_fingerprint: null,
  };
  if (chat.stream) {
    const frames = chunks(events, base, chat.stream_options?.include_usage === true);
    await streamSse(ctx, frames, { format: chatFormat, onDisconnect: disconnect });
    return;
  }
  const final = await runToEnd(events);
  if (final.status === 'failed') throw failure(final);
  ctx.body = {
    id: base.id,
    object: 'chat.completion',
    created: final.created_at,
    model: runtime.id,
    system_fingerprint: null,
    choices: [{ index: 0, message: message(final), finish_reason: finishReason(final), logprobs: null }],
    usage: usage(final),
  };
};
