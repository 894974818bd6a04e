/**
 * Anthropic's Messages API, translated onto the Responses service as Chat Completions is
 * (chat-completions.ts): a Messages request becomes the same history items and plan request, so
 * the model, limits, dialect parsers, constrained decoding, images and shutdown are the other
 * endpoints' own; the run's events become Anthropic's (anthropic-events.ts). The handlers
 * (handlers/create-message.ts, count-message-tokens.ts) only do HTTP and SSE.
 *
 * Request mapping: `system` (and `role: system` messages) → system turns; text and image blocks →
 * message parts (an image's base64 source as a data: URL, through responses/images.ts);
 * `tool_use` / `tool_result` → function_call / function_call_output items (call id = the block's
 * id); `thinking` blocks → reasoning items; tools → function tools (`defer_loading` tools join
 * only once a `tool_reference` names them); tool_choice auto/any/tool/none → auto/required/
 * named/none; `thinking` and `output_config.effort` → the dialect's reasoning switch (below);
 * `output_config.format` → a strict json_schema text format; `stop_sequences` → the run's stop
 * sequences; `max_tokens` beyond the context's room is cut to it (stop_reason
 * `model_context_window_exceeded`). Errors name the request's own fields (`messages[1].content[0]
 * .tool_use_id`, `max_tokens`, `tools[2].input_schema`).
 */
import { ApiError, badRequest } from '../contract/errors.ts';
import type {
  AnthropicAssistantContentBlock,
  AnthropicCountTokensRequest,
  AnthropicCreateMessageRequest,
  AnthropicImageBlockParam,
  AnthropicMessage,
  AnthropicMessageParam,
  AnthropicMessageStreamEvent,
  AnthropicMessageTokensCount,
  AnthropicTextBlockParam,
  AnthropicToolResultContentBlock,
  AnthropicUserContentBlock,
  ReasoningEffort,
} from '../contract/types.ts';
import { messageEvents, messageOf, runFailure, type MessageMeta, type ThinkingDisplay } from './anthropic-events.ts';
import { thinkingSignatures, type ReasoningSeal } from './client-features.ts';
import { newId } from './ids.ts';
import type { HistoryItem } from './input-history.ts';
import type { PlanRequest, WireNames } from './response-plan.ts';
import {
  countTranslatedTokens,
  firstTokenObserver,
  requireRuntime,
  runToEnd,
  startTranslatedRun,
  type ServiceDeps,
} from './service.ts';

export type MessagesDeps = Pick<ServiceDeps, 'getRuntime' | 'isStopping' | 'server' | 'registry'>;
type AnyRequest = AnthropicCreateMessageRequest | AnthropicCountTokensRequest;
type Effort = NonNullable<ReasoningEffort>;

/** A translated request: the plan request, the history it runs over, and how thinking is shown. */
export interface TranslatedMessages {
  plan: PlanRequest;
  history: HistoryItem[];
  display: ThinkingDisplay;
}

/** Where a history item came from: its `param` base and the request's name for each item field. */
interface Source {
  base: string;
  fields: Readonly<Record<string, string>>;
}

const blockText = (content: string | AnthropicTextBlockParam[]): string =>
  typeof content === 'string' ? content : content.map((block) => block.text).join('\n');

function imageUrl(block: AnthropicImageBlockParam): string {
  const source = block.source;
  return source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
}

/** A tool result's content as a function_call_output's output; tool_reference blocks name the deferred tools they load. */
function toolOutput(
  content: string | AnthropicToolResultContentBlock[] | undefined,
  referenced: Set<string>,
): string | Array<Record<string, unknown>> {
  if (content === undefined || typeof content === 'string') return content ?? '';
  const parts: Array<Record<string, unknown>> = [];
  for (const block of content) {
    if (block.type === 'text') parts.push({ type: 'input_text', text: block.text });
    else if (block.type === 'image') parts.push({ type: 'input_image', image_url: imageUrl(block) });
    else referenced.add(block.tool_name);
  }
  return parts;
}

/** The `thinking` text a replayed thinking block stands for, its signature checked when signatures are on. */
function thinkingText(
  block: { thinking: string; signature: string },
  param: string,
  signatures: ReasoningSeal | undefined,
): string {
  if (signatures === undefined || block.signature === '') return block.thinking;
  let sealed: string;
  try {
    sealed = signatures
      .open(block.signature, `${param}.signature`)
      .map((part) => part.text)
      .join('');
  } catch (error) {
    if (error instanceof ApiError) throw invalidSignature(`${param}.signature`);
    throw error;
  }
  if (block.thinking !== '' && block.thinking !== sealed) throw invalidSignature(`${param}.thinking`);
  return sealed;
}

function invalidSignature(param: string): ApiError {
  return badRequest(
    param,
    'The thinking block does not match its signature: it was altered, or signed for another API key or by a server with another MAYA_GLM_RESPONSES_REASONING_KEY (or before a restart). Send thinking blocks back exactly as this server returned them, or drop them.',
    'invalid_signature',
  );
}

/** Assistant messages whose thinking is dropped (context_management clear_thinking keeps the last N turns with thinking). */
function clearedThinking(request: AnyRequest): Set<number> {
  const cleared = new Set<number>();
  const keep = request.context_management?.edits?.find((edit) => edit.type === 'clear_thinking_20251015')?.keep;
  if (keep === undefined || keep === 'all') return cleared;
  let kept = 0;
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    const hasThinking =
      message.role === 'assistant' &&
      Array.isArray(message.content) &&
      message.content.some((block) => block.type === 'thinking');
    if (hasThinking && kept++ >= keep.value) cleared.add(i);
  }
  return cleared;
}

class HistoryBuilder {
  readonly items: HistoryItem[] = [];
  readonly sources: Source[] = [];
  readonly referenced = new Set<string>();
  private parts: Array<Record<string, unknown>> = [];
  private partsRole: 'user' | 'assistant' | 'system' = 'user';
  private partsBase = '';

  constructor(
    private readonly signatures: ReasoningSeal | undefined,
    private readonly cleared: Set<number>,
  ) {}

  add(message: AnthropicMessageParam, index: number): void {
    const base = `messages[${index}]`;
    if (typeof message.content === 'string' || message.role === 'system') {
      const text = message.role === 'system' ? blockText(message.content) : (message.content as string);
      this.part(message.role, base, message.role === 'assistant' ? 'output_text' : 'input_text', { text });
    } else if (message.role === 'user') {
      message.content.forEach((block, j) => this.userBlock(block, `${base}.content[${j}]`, base));
    } else {
      message.content.forEach((block, j) => this.assistantBlock(block, `${base}.content[${j}]`, base, index));
    }
    this.flush();
  }

  private userBlock(block: AnthropicUserContentBlock, param: string, base: string): void {
    if (block.type === 'text') return this.part('user', base, 'input_text', { text: block.text });
    if (block.type === 'image') return this.part('user', base, 'input_image', { image_url: imageUrl(block) });
    this.push(
      {
        type: 'function_call_output',
        id: newId('fco'),
        call_id: block.tool_use_id,
        output: toolOutput(block.content, this.referenced),
      },
      { base: param, fields: { call_id: 'tool_use_id', output: 'content' } },
    );
  }

  private assistantBlock(block: AnthropicAssistantContentBlock, param: string, base: string, index: number): void {
    if (block.type === 'text') return this.part('assistant', base, 'output_text', { text: block.text });
    if (block.type === 'thinking') {
      if (this.cleared.has(index)) return;
      const text = thinkingText(block, param, this.signatures);
      this.push(
        { type: 'reasoning', id: newId('rs'), summary: [], content: [{ type: 'reasoning_text', text }] },
        { base: param, fields: { content: 'thinking' } },
      );
      return;
    }
    this.push(
      {
        type: 'function_call',
        id: newId('fc'),
        call_id: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input),
      },
      { base: param, fields: { call_id: 'id', arguments: 'input' } },
    );
  }

  /** Adds a text or image part to the message being gathered (consecutive blocks of one message are one item). */
  private part(
    role: 'user' | 'assistant' | 'system',
    base: string,
    type: string,
    fields: Record<string, unknown>,
  ): void {
    if (this.parts.length > 0 && (this.partsRole !== role || this.partsBase !== base)) this.flush();
    this.partsRole = role;
    this.partsBase = base;
    this.parts.push({ type, ...fields });
  }

  private flush(): void {
    if (this.parts.length === 0) return;
    const item = { type: 'message', id: newId('msg'), role: this.partsRole, content: this.parts };
    this.parts = [];
    this.items.push(item);
    this.sources.push({ base: this.partsBase, fields: { content: 'content' } });
  }

  private push(item: HistoryItem, source: Source): void {
    this.flush();
    this.items.push(item);
    this.sources.push(source);
  }
}

/**
 * The reasoning effort for `thinking` and `output_config.effort`: disabled or absent → `none`
 * (no thinking blocks unless asked for, as Anthropic's API); adaptive → the given effort, else
 * the model's own default; enabled → the given effort, else by `budget_tokens`: below 4096
 * `low`, below 16384 `medium`, else `high` (the budget is not a cut-off: the model ends its
 * thinking itself, within max_tokens).
 */
export function reasoningEffort(request: AnyRequest): Effort | undefined {
  const thinking = request.thinking;
  const effort = request.output_config?.effort ?? undefined;
  if (thinking === undefined || thinking.type === 'disabled') return 'none';
  if (thinking.type === 'adaptive') return effort;
  return effort ?? (thinking.budget_tokens < 4096 ? 'low' : thinking.budget_tokens < 16384 ? 'medium' : 'high');
}

function toolChoice(request: AnyRequest): Pick<PlanRequest, 'tool_choice' | 'parallel_tool_calls'> {
  const choice = request.tool_choice;
  if (choice === undefined) return {};
  const parallel =
    'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true ? false : undefined;
  const mapped: PlanRequest['tool_choice'] =
    choice.type === 'any' ? 'required' : choice.type === 'tool' ? { type: 'function', name: choice.name } : choice.type;
  return { tool_choice: mapped, ...(parallel === false ? { parallel_tool_calls: false } : {}) };
}

/** The request's tools as function tools (deferred ones only once referenced), and each one's index in `tools`. */
function toolsOf(request: AnyRequest, referenced: Set<string>): { tools: PlanRequest['tools']; indexes: number[] } {
  const indexes: number[] = [];
  const tools = (request.tools ?? []).flatMap((tool, index) => {
    if (tool.defer_loading === true && !referenced.has(tool.name)) return [];
    indexes.push(index);
    const spec = { type: 'function', name: tool.name, parameters: tool.input_schema, strict: tool.strict };
    return [{ ...spec, ...(tool.description ? { description: tool.description } : {}) }];
  });
  return { tools, indexes };
}

/** Errors name the request's own fields: the block a history item came from, `tools[i].input_schema`, `max_tokens`. */
function wireNames(sources: readonly Source[], toolIndexes: readonly number[]): WireNames {
  return {
    input: 'messages',
    maxOutputTokens: 'max_tokens',
    itemParam: (index, field) => {
      const source = sources[index] ?? { base: 'messages', fields: {} };
      return field === undefined ? source.base : `${source.base}.${source.fields[field] ?? field}`;
    },
    toolParam: (index) => `tools[${toolIndexes[index] ?? index}].input_schema`,
  };
}

function displayOf(request: AnyRequest): ThinkingDisplay {
  const thinking = request.thinking;
  return thinking !== undefined && 'display' in thinking ? (thinking.display ?? 'summarized') : 'summarized';
}

/** A Messages (or count_tokens) request as the plan request and history the service runs. */
export function translateMessages(request: AnyRequest, signatures?: ReasoningSeal): TranslatedMessages {
  const last = request.messages.length - 1;
  if (request.messages[last]!.role === 'assistant') {
    throw badRequest(
      `messages[${last}].role`,
      'A final assistant message (prefill) is not supported: Maya cannot continue a partial assistant turn. End with a user message.',
      'unsupported_value',
    );
  }
  const builder = new HistoryBuilder(signatures, clearedThinking(request));
  request.messages.forEach((message, index) => builder.add(message, index));
  const { tools, indexes } = toolsOf(request, builder.referenced);
  const effort = reasoningEffort(request);
  const format = request.output_config?.format;
  const system = request.system === undefined ? '' : blockText(request.system);
  const create = 'max_tokens' in request ? request : undefined;
  const plan: PlanRequest = {
    model: request.model,
    ...(system !== '' ? { instructions: system } : {}),
    tools,
    ...toolChoice(request),
    temperature: create?.temperature,
    top_p: create?.top_p,
    ...(create?.top_k !== undefined ? { topK: create.top_k } : {}),
    max_output_tokens: create?.max_tokens,
    ...(effort !== undefined ? { reasoning: { effort } } : {}),
    ...(format
      ? { text: { format: { type: 'json_schema', name: 'output', schema: format.schema, strict: true } } }
      : {}),
    wire: wireNames(builder.sources, indexes),
    ...(create?.stop_sequences ? { stopSequences: create.stop_sequences } : {}),
    clampOutputToContext: true,
  };
  return { history: builder.items, display: displayOf(request), plan };
}

/** The pipeline names an image by its Responses field (`….image_url`); here it is the block's `source`. */
function withMessagesParam(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.param === null || !error.param.endsWith('.image_url')) return error;
  const param = `${error.param.slice(0, -'.image_url'.length)}.source`;
  return new ApiError(error.status, error.message, error.type, error.code, param, error.headers);
}

/** A created message: the events to stream, or the message to answer. */
export type MessageResult =
  | { stream: true; events: AsyncGenerator<AnthropicMessageStreamEvent, void, void> }
  | { stream: false; message: AnthropicMessage };

/**
 * createMessage: the loaded model (or 503), the request translated and planned (its 4xx raised
 * here, before any event) and run. Streamed: the events, generated as they are read; a failed run
 * raises its error from them. Otherwise the run is drained here: the message, or the failed run's
 * error.
 */
export async function createMessage(
  deps: MessagesDeps,
  scope: string,
  request: AnthropicCreateMessageRequest,
  signal: AbortSignal,
): Promise<MessageResult> {
  const runtime = requireRuntime(deps);
  const signatures = thinkingSignatures(deps, scope);
  const { plan, history, display } = translateMessages(request, signatures);
  let stopSequence: string | undefined;
  const run = await startTranslatedRun(runtime, plan, history, signal, {
    images: deps.server?.images,
    hooks: {
      sealReasoning: signatures?.seal,
      onStopSequence: (sequence) => (stopSequence = sequence),
      onFirstToken: firstTokenObserver(deps),
    },
  }).catch((error: unknown) => {
    throw withMessagesParam(error);
  });
  const meta: MessageMeta = {
    id: newId('msg'),
    model: runtime.id,
    display,
    isClamped: run.maxTokens < request.max_tokens,
    promptTokens: run.promptTokens,
    stopSequence: () => stopSequence,
  };
  if (request.stream === true) return { stream: true, events: messageEvents(run.events, meta) };
  const final = await runToEnd(run.events);
  if (final.status === 'failed') throw runFailure(final);
  return { stream: false, message: messageOf(final, meta) };
}

/** countMessageTokens: the prompt the request would run with, counted (system, tools, messages, images). */
export async function countMessageTokens(
  deps: MessagesDeps,
  scope: string,
  request: AnthropicCountTokensRequest,
  signal: AbortSignal,
): Promise<AnthropicMessageTokensCount> {
  const runtime = requireRuntime(deps);
  const { plan, history } = translateMessages(request, thinkingSignatures(deps, scope));
  const inputTokens = await countTranslatedTokens(runtime, plan, history, signal, {
    images: deps.server?.images,
  }).catch((error: unknown) => {
    throw withMessagesParam(error);
  });
  return { input_tokens: inputTokens };
}
