/**
 * Chat Completions on the Responses pipeline: a chat request becomes the same history items and
 * plan request (tools flattened, response_format → text.format, max_tokens → max_output_tokens,
 * reasoning_effort → reasoning.effort), so both endpoints share model, limits and engine.
 */
import { badRequest } from '../contract/errors.ts';
import type { HistoryItem } from './input-history.ts';
import { newId } from './ids.ts';
import type { PlanRequest } from './response-plan.ts';

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

/** Chat messages → the Responses history items the pipeline folds into turns. */
export function chatHistory(messages: ChatMessage[]): HistoryItem[] {
  const items: HistoryItem[] = [];
  messages.forEach((message, index) => {
    const param = `messages[${index}].content`;
    const text = contentText(message.content, param);
    if (message.role === 'tool') {
      items.push({ type: 'function_call_output', id: newId('fco'), call_id: message.tool_call_id ?? '', output: text });
      return;
    }
    if (message.role === 'assistant') {
      if (message.reasoning_content)
        items.push({
          type: 'reasoning',
          id: newId('rs'),
          summary: [],
          content: [{ type: 'reasoning_text', text: message.reasoning_content }],
        });
      if (text !== '')
        items.push({ type: 'message', id: newId('msg'), role: 'assistant', content: [{ type: 'output_text', text }] });
      for (const call of message.tool_calls ?? [])
        items.push({
          type: 'function_call',
          id: newId('fc'),
          call_id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
      return;
    }
    items.push({ type: 'message', id: newId('msg'), role: message.role, content: [{ type: 'input_text', text }] });
  });
  return items;
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
  };
}
