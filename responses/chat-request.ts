/**
 * Chat Completions on the Responses pipeline: a chat request becomes the same history items and
 * plan request (tools flattened, response_format → text.format, max_tokens → max_output_tokens,
 * reasoning_effort → reasoning.effort), so both endpoints share model, limits and engine.
 */
import { badRequest } from '../contract/errors.ts';
import type { HistoryItem } from './input-history.ts';
import { newId } from './ids.ts';
import type { PlanRequest, WireNames } from './response-plan.ts';

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
  reasoning_effort?: string | null;
  response_format?:
    | { type: 'text' }
    | { type: 'json_object' }
    | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null } };
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
    wire: chatWire(chat),
  };
}
