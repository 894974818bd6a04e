/**
 * Chat Completions, translated onto the Responses service: a chat request becomes the same
 * history items and plan request (tools flattened, response_format → text.format, max_tokens →
 * max_output_tokens, reasoning_effort → reasoning.effort), so both endpoints share model, limits
 * and engine; the run's events become `chat.completion.chunk` objects (`reasoning_content` for
 * thinking models, `stream_options.include_usage` for a usage chunk) and its final Response a
 * `chat.completion`. The handler (handlers/create-chat-completion.ts) only does HTTP and SSE.
 *
 * Shape of a translator: `createChatCompletion(deps, request, signal)` plans before it answers
 * (every 400 comes before any frame), then hands back either the chunks to stream or the body.
 * Another API translated onto the service sits beside this file in the same shape.
 */
import { ApiError, badRequest } from '../contract/errors.ts';
import { relayEvents, type StreamEvent } from '../contract/stream-events.ts';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionFinishReason,
  ChatCompletionResponseMessage,
  ChatCompletionStreamResponseDelta,
  CompletionUsage,
  FunctionCallItem,
  McpCallItem,
  PromptProgress,
  ResponseObject,
  StrataMcpCall,
  StrataMcpEvent,
} from '../contract/types.ts';
import type { HistoryItem } from './input-history.ts';
import { newId } from './ids.ts';
import type { PlanRequest, WireNames } from './response-plan.ts';
import { mcpHostedTools } from './mcp-tools.ts';
import { firstTokenObserver, requireRuntime, runToEnd, startTranslatedRun, type ServiceDeps } from './service.ts';
import { TOOL_LIMIT_ERROR, type HostedTools } from './tool-loop.ts';

type ChatContent = string | Array<{ type: string; text?: string }> | null | undefined;
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: ChatContent;
  reasoning_content?: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: Array<{
    type: 'function';
    function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
  }>;
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };
  parallel_tool_calls?: boolean;
  temperature?: number | null;
  top_p?: number | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  seed?: number | null;
  /** Up to 4 strings that end the content where one first appears (not returned). */
  stop?: string | string[] | null;
  reasoning_effort?: string | null;
  response_format?:
    | { type: 'text' }
    | { type: 'json_object' }
    | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null } };
  /** Strata's extension: the operator's MCP tools beside `tools` (only `true`; the schema refuses anything else). */
  strata_mcp?: true;
  /** llama.cpp's extension: `prompt_progress` chunks before the first token (needs stream). */
  return_progress?: boolean | null;
}

function contentText(content: ChatContent, param: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, index) => {
      if (part.type === 'text') return part.text ?? '';
      throw badRequest(
        `${param}[${index}]`,
        `Content of type '${part.type}' needs a vision encoder, and this model has none.`,
        'unsupported_content',
      );
    })
    .join('');
}

/** Each history item of `messages` with the index of the message it came from. */
function chatItems(messages: ChatMessage[]): Array<{ item: HistoryItem; message: number }> {
  const out: Array<{ item: HistoryItem; message: number }> = [];
  messages.forEach((message, index) => {
    const push = (item: HistoryItem) => out.push({ item, message: index });
    const text = contentText(message.content, `messages[${index}].content`);
    if (message.role === 'tool') {
      push({ type: 'function_call_output', id: newId('fco'), call_id: message.tool_call_id ?? '', output: text });
      return;
    }
    if (message.role === 'assistant') {
      if (message.reasoning_content)
        push({
          type: 'reasoning',
          id: newId('rs'),
          summary: [],
          content: [{ type: 'reasoning_text', text: message.reasoning_content }],
        });
      if (text !== '')
        push({ type: 'message', id: newId('msg'), role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const call of message.tool_calls ?? [])
        push({
          type: 'function_call',
          id: newId('fc'),
          call_id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
      return;
    }
    push({ type: 'message', id: newId('msg'), role: message.role, content: [{ type: 'input_text', text }] });
  });
  return out;
}

/** Chat messages → the Responses history items the pipeline folds into turns. */
export function chatHistory(messages: ChatMessage[]): HistoryItem[] {
  return chatItems(messages).map((entry) => entry.item);
}

/** Responses item fields → the chat message fields they came from. */
const CHAT_FIELDS: Record<string, string> = { call_id: 'tool_call_id', output: 'content', content: 'content' };

/** Errors name the chat request's own fields: `messages[i].tool_call_id`, `max_tokens`. */
function chatWire(chat: ChatRequest): WireNames {
  const sources = chatItems(chat.messages).map((entry) => entry.message);
  return {
    input: 'messages',
    maxOutputTokens: chat.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
    itemParam: (index, field) =>
      `messages[${sources[index] ?? 0}]${field === undefined ? '' : `.${CHAT_FIELDS[field] ?? field}`}`,
  };
}

export function chatPlanRequest(chat: ChatRequest): PlanRequest {
  const format = chat.response_format;
  const choice = chat.tool_choice;
  return {
    model: chat.model,
    tools: (chat.tools ?? []).map((tool) => ({
      type: 'function',
      name: tool.function.name,
      description: tool.function.description,
      parameters: tool.function.parameters,
      strict: tool.function.strict ?? undefined,
    })),
    tool_choice: choice && typeof choice === 'object' ? { type: 'function', name: choice.function.name } : choice,
    parallel_tool_calls: chat.parallel_tool_calls,
    temperature: chat.temperature ?? undefined,
    top_p: chat.top_p ?? undefined,
    max_output_tokens: chat.max_completion_tokens ?? chat.max_tokens ?? undefined,
    reasoning: chat.reasoning_effort ? { effort: chat.reasoning_effort as never } : undefined,
    text:
      format?.type === 'json_schema'
        ? {
            format: {
              type: 'json_schema',
              name: format.json_schema.name,
              schema: format.json_schema.schema ?? { type: 'object' },
              strict: format.json_schema.strict ?? false,
            },
          }
        : format
          ? { format: { type: format.type } }
          : undefined,
    seed: chat.seed ?? undefined,
    ...stopField(chat.stop),
    wire: chatWire(chat),
  };
}

/** Chat's `stop` (a string or up to 4): the run's stop sequences (stop-sequences.ts); empty strings stop nothing. */
function stopField(stop: ChatRequest['stop']): { stopSequences?: string[] } {
  const sequences = (typeof stop === 'string' ? [stop] : (stop ?? [])).filter((sequence) => sequence !== '');
  return sequences.length > 0 ? { stopSequences: sequences } : {};
}

/** A created chat completion: the chunks to stream, or the body to answer. */
export type ChatCompletionResult =
  | { stream: true; chunks: AsyncGenerator<ChatCompletionChunk, void, void> }
  | { stream: false; completion: ChatCompletion };

/**
 * createChatCompletion: the loaded model (or 503), then the request planned (its 4xx raised here,
 * before any chunk) and run.
 * Streamed: the chunks, generated as they are read; a failed run raises its error from them.
 * Otherwise the run is drained here: the chat.completion, or the failed run's 500/503.
 */
export async function createChatCompletion(
  deps: Pick<ServiceDeps, 'getRuntime' | 'isStopping' | 'registry' | 'mcp'>,
  chat: ChatRequest,
  signal: AbortSignal,
): Promise<ChatCompletionResult> {
  const runtime = requireRuntime(deps);
  if (chat.return_progress === true && chat.stream !== true)
    throw badRequest(
      'return_progress',
      'return_progress reports prompt processing in streamed chunks; it needs "stream": true.',
      'invalid_value',
    );
  const hosted = chat.strata_mcp === true ? await strataTools(deps, chat) : undefined;
  const { response, events } = await startTranslatedRun(
    runtime,
    chatPlanRequest(chat),
    chatHistory(chat.messages),
    signal,
    {
      hooks: { onFirstToken: firstTokenObserver(deps) },
      ...(hosted ? { hosted } : {}),
      ...(chat.return_progress === true ? { reportProgress: true } : {}),
    },
  );
  const id = newId('chatcmpl');
  if (chat.stream) {
    const head: ChunkHead = {
      id,
      object: 'chat.completion.chunk',
      created: response.created_at,
      model: runtime.id,
      system_fingerprint: null,
    };
    return { stream: true, chunks: chatChunks(events, head, chat.stream_options?.include_usage === true) };
  }
  const final = await runToEnd(events);
  if (final.status === 'failed') throw failure(final);
  const completion: ChatCompletion = {
    id,
    object: 'chat.completion',
    created: final.created_at,
    model: runtime.id,
    system_fingerprint: null,
    choices: [{ index: 0, message: message(final), finish_reason: finishReason(final), logprobs: null }],
    usage: usage(final),
    ...(hosted ? { strata_mcp: strataCalls(final) } : {}),
  };
  return { stream: false, completion };
}

/** `strata_mcp: true`: every permitted tool of the operator's MCP servers, beside the request's own. */
async function strataTools(deps: Pick<ServiceDeps, 'mcp'>, chat: ChatRequest): Promise<HostedTools> {
  if (!deps.mcp)
    throw badRequest('strata_mcp', 'This server has no MCP servers configured (MAYA_MCP_CONFIG).', 'invalid_value');
  const choice = chat.tool_choice;
  if (choice === 'required' || typeof choice === 'object')
    throw badRequest(
      'tool_choice',
      'tool_choice cannot force a call while strata_mcp is on (every round would have to call a tool); use auto or none.',
      'invalid_value',
    );
  const taken = new Set((chat.tools ?? []).map((tool) => tool.function.name));
  return (await mcpHostedTools(deps.mcp, { taken })).hosted;
}

/** The MCP calls of a finished strata_mcp run; a round is each run of calls between the model's other output. */
function strataCalls(response: ResponseObject): StrataMcpCall[] {
  const calls: StrataMcpCall[] = [];
  let round = 0;
  let isInCalls = false;
  for (const item of response.output) {
    if (item.type !== 'mcp_call') {
      isInCalls = false;
      continue;
    }
    if (!isInCalls) round++;
    isInCalls = true;
    calls.push({
      id: item.id,
      server: item.server_label,
      tool: item.name,
      arguments: item.arguments,
      ok: item.status === 'completed',
      text: item.output ?? item.error ?? '',
      round,
    });
  }
  return calls;
}

/** The fields every chunk of one completion repeats. */
type ChunkHead = Omit<ChatCompletionChunk, 'choices' | 'usage'>;

function chunk(
  head: ChunkHead,
  delta: ChatCompletionStreamResponseDelta,
  finish: ChatCompletionFinishReason | null = null,
): ChatCompletionChunk {
  return { ...head, choices: [{ index: 0, delta, finish_reason: finish }] };
}

async function* chatChunks(
  events: AsyncGenerator<StreamEvent, ResponseObject, void>,
  head: ChunkHead,
  includeUsage: boolean,
): AsyncGenerator<ChatCompletionChunk, void, void> {
  const callIndex = new Map<string, number>();
  const strata = new StrataEvents();
  let isOpened = false;
  const open = () => (isOpened ? [] : ((isOpened = true), [chunk(head, { role: 'assistant', content: '' })]));
  const response = yield* relayChunks(events, (event) => {
    if (event.type === 'maya.prompt_progress')
      return [
        {
          ...chunk(head, { role: 'assistant', content: null }),
          prompt_progress: event.prompt_progress as PromptProgress,
        },
      ];
    const mcp = strata.map(event);
    if (mcp) return [...open(), ...mcp.map((e) => ({ ...chunk(head, {}), strata_mcp: e }))];
    const d = delta(event, callIndex);
    return d ? [...open(), chunk(head, d)] : [];
  });
  yield* open();
  if (response.status === 'failed') throw failure(response);
  if (response.status === 'cancelled') return;
  yield chunk(head, {}, finishReason(response));
  if (includeUsage) yield { ...head, choices: [], usage: usage(response) };
}

/** Like relayEvents, for a map that gives any number of chunks per event. */
async function* relayChunks<R>(
  events: AsyncGenerator<StreamEvent, R, void>,
  map: (event: StreamEvent) => ChatCompletionChunk[],
): AsyncGenerator<ChatCompletionChunk, R, void> {
  const chunks = relayEvents(events, (event) => {
    const out = map(event);
    return out.length > 0 ? out : undefined;
  });
  let step = await chunks.next();
  while (!step.done) {
    yield* step.value;
    step = await chunks.next();
  }
  return step.value;
}

/**
 * The tool loop's mcp_call events as Strata's `strata_mcp` chunk bodies: `start` when the model
 * begins a call, `call` when it runs (its arguments complete), `result` with what the model reads,
 * `limit` for a call not run because MAYA_MCP_MAX_ROUNDS was reached.
 */
class StrataEvents {
  private readonly calls = new Map<string, McpCallItem>();
  private round = 0;
  private isInCalls = false;

  map(event: StreamEvent): StrataMcpEvent[] | undefined {
    const item = event.item as McpCallItem | undefined;
    if (event.type === 'response.output_item.added') {
      if (item?.type !== 'mcp_call') return undefined;
      if (!this.isInCalls) this.round++;
      this.isInCalls = true;
      this.calls.set(item.id, { ...item });
      return [{ event: 'start', id: item.id, server: item.server_label, tool: item.name, round: this.round }];
    }
    if (event.type === 'response.output_item.done' && item?.type === 'mcp_call') {
      const base = {
        id: item.id,
        server: item.server_label,
        tool: item.name,
        arguments: item.arguments,
        round: this.round,
      };
      if (item.error === TOOL_LIMIT_ERROR) return [{ event: 'limit', ...base, ok: false, text: item.error }];
      return [{ event: 'result', ...base, ok: item.status === 'completed', text: item.output ?? item.error ?? '' }];
    }
    const call = typeof event.item_id === 'string' ? this.calls.get(event.item_id) : undefined;
    if (event.type === 'response.mcp_call_arguments.done' && call) call.arguments = event.arguments as string;
    if (event.type === 'response.mcp_call.in_progress' && call)
      return [
        {
          event: 'call',
          id: call.id,
          server: call.server_label,
          tool: call.name,
          arguments: call.arguments,
          round: this.round,
        },
      ];
    if (call) return [];
    if (event.type === 'response.output_item.added' || event.type.endsWith('.delta')) this.isInCalls = false;
    return undefined;
  }
}

/** One Responses stream event → the chat delta it carries, if any. */
function delta(event: StreamEvent, callIndex: Map<string, number>): ChatCompletionStreamResponseDelta | undefined {
  switch (event.type) {
    case 'response.output_text.delta':
      return { content: event.delta as string };
    case 'response.reasoning_text.delta':
      return { reasoning_content: event.delta as string };
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
      return {
        tool_calls: [
          { index: callIndex.get(event.item_id as string)!, function: { arguments: event.delta as string } },
        ],
      };
    default:
      return undefined;
  }
}

function finishReason(response: ResponseObject): ChatCompletionFinishReason {
  if (response.status === 'incomplete') return 'length';
  return response.output.some((item) => item.type === 'function_call') ? 'tool_calls' : 'stop';
}

function usage(response: ResponseObject): CompletionUsage {
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

function message(response: ResponseObject): ChatCompletionResponseMessage {
  let content = '';
  let reasoning = '';
  const calls: FunctionCallItem[] = [];
  for (const item of response.output) {
    if (item.type === 'message') content += item.content.map((part) => part.text).join('');
    else if (item.type === 'reasoning') reasoning += item.content.map((part) => part.text).join('');
    else if (item.type === 'function_call') calls.push(item);
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
            type: 'function' as const,
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      : {}),
  };
}
