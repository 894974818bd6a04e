/**
 * createChatCompletion (POST /v1/chat/completions) on the Responses pipeline: the same plan,
 * engine run and parser, reported as a chat.completion object or chat.completion.chunk frames
 * (`reasoning_content` for thinking models, `stream_options.include_usage` for a usage chunk).
 */
import type { Handler } from './app-deps.ts';
import { ApiError, unavailable } from '../contract/errors.ts';
import { newId } from '../responses/ids.ts';
import { chatHistory, chatPlanRequest, type ChatRequest } from '../responses/chat-request.ts';
import type { FunctionCallItem } from '../responses/output-assembler.ts';
import { newResponseObject, type ResponseObject } from '../responses/response-object.ts';
import { planResponse, withSamplingDefaults } from '../responses/response-plan.ts';
import { runResponse } from '../responses/run-response.ts';
import type { StreamEvent } from '../contract/stream-events.ts';

type Chunk = Record<string, unknown>;

function finishReason(response: ResponseObject): 'stop' | 'length' | 'tool_calls' {
  if (response.status === 'incomplete') return 'length';
  return response.output.some((item) => item.type === 'function_call') ? 'tool_calls' : 'stop';
}

function usage(response: ResponseObject) {
  const u = response.usage!;
  return {
    prompt_tokens: u.input_tokens, completion_tokens: u.output_tokens, total_tokens: u.total_tokens,
    prompt_tokens_details: { cached_tokens: u.input_tokens_details.cached_tokens },
    completion_tokens_details: { reasoning_tokens: u.output_tokens_details.reasoning_tokens },
  };
}

function failure(response: ResponseObject): ApiError {
  return new ApiError(500, response.error?.message ?? 'Generation failed.', 'server_error', response.error?.code ?? 'server_error', null);
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
    role: 'assistant', content: calls.length > 0 && content === '' ? null : content, refusal: null,
    ...(reasoning ? { reasoning_content: reasoning } : {}),
    ...(calls.length > 0 ? { tool_calls: calls.map((call) => ({ id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } })) } : {}),
  };
}

/** One Responses stream event → the chat delta it carries, if any. */
function delta(event: StreamEvent, callIndex: Map<string, number>): Chunk | undefined {
  switch (event.type) {
    case 'response.output_text.delta': return { content: event.delta };
    case 'response.reasoning_text.delta': return { reasoning_content: event.delta };
    case 'response.output_item.added': {
      const item = event.item as FunctionCallItem;
      if (item.type !== 'function_call') return undefined;
      callIndex.set(item.id, callIndex.size);
      return { tool_calls: [{ index: callIndex.size - 1, id: item.call_id, type: 'function', function: { name: item.name, arguments: '' } }] };
    }
    case 'response.function_call_arguments.delta':
      return { tool_calls: [{ index: callIndex.get(event.item_id as string), function: { arguments: event.delta } }] };
    default: return undefined;
  }
}

async function* chunks(events: AsyncGenerator<StreamEvent, ResponseObject>, base: Chunk, includeUsage: boolean): AsyncGenerator<Chunk> {
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

async function writeChunks(ctx: Parameters<Handler>[0], source: AsyncGenerator<Chunk>, disconnect: AbortController): Promise<void> {
  const res = ctx.res;
  ctx.respond = false;
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  res.once('close', () => { if (!res.writableFinished) disconnect.abort(); });
  try {
    for await (const chunk of source) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
  } catch (error) {
    const api = error instanceof ApiError ? error : new ApiError(500, 'Generation failed.', 'server_error', 'server_error');
    if (!res.destroyed) res.write(`data: ${JSON.stringify(api.toJSON())}\n\n`);
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

export const createChatCompletion: Handler = async (ctx, deps) => {
  const runtime = deps.getRuntime();
  if (!runtime) throw unavailable('The model is still loading.', 'model_loading', 5);
  const chat = ctx.state.body as ChatRequest;
  const request = withSamplingDefaults(runtime, chatPlanRequest(chat));
  const plan = planResponse(runtime, request, chatHistory(chat.messages), 0);
  const response = newResponseObject(request, newId('resp'), runtime.id, 'in_progress');
  const disconnect = new AbortController();
  const events = runResponse(runtime, plan, response, { signal: disconnect.signal, seed: request.seed });
  const base = { id: newId('chatcmpl'), object: 'chat.completion.chunk', created: response.created_at, model: runtime.id, system_fingerprint: null };
  if (chat.stream) {
    await writeChunks(ctx, chunks(events, base, chat.stream_options?.include_usage === true), disconnect);
    return;
  }
  ctx.res.once('close', () => { if (!ctx.res.writableFinished) disconnect.abort(); });
  let step = await events.next();
  while (!step.done) step = await events.next();
  const final = step.value;
  if (final.status === 'failed') throw failure(final);
  ctx.body = {
    id: base.id, object: 'chat.completion', created: final.created_at, model: runtime.id, system_fingerprint: null,
    choices: [{ index: 0, message: message(final), finish_reason: finishReason(final), logprobs: null }],
    usage: usage(final),
  };
};
