/**
 * Builds the wire `Response` object: every field OpenAI's schema requires, plus the fields the
 * Open Responses schema requires present (nullable ones as null), echoing the request's settings.
 * Snake_case wire form from here to the store and back out.
 */
import type { OutputItem } from './output-assembler.ts';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** The request fields a Response echoes (a validated CreateResponse body). */
export interface EchoedRequest {
  model?: string;
  instructions?: string | null;
  previous_response_id?: string | null;
  store?: boolean;
  background?: boolean;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  max_tool_calls?: number | null;
  metadata?: Record<string, string> | null;
  tools?: Array<Record<string, unknown>>;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
  text?: { format?: Record<string, unknown>; verbosity?: string } | null;
  reasoning?: { effort?: string | null } | null;
  prompt_cache_key?: string | null;
  safety_identifier?: string | null;
  user?: string | null;
  service_tier?: string | null;
  top_logprobs?: number | null;
}

export interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseError { code: string; message: string }

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  background: boolean;
  error: ResponseError | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  max_tool_calls: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  reasoning: { effort: string | null; summary: null };
  safety_identifier: string | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: Record<string, unknown>; verbosity: string };
  tool_choice: unknown;
  tools: Array<Record<string, unknown>>;
  top_logprobs: number;
  top_p: number;
  truncation: 'disabled';
  usage: Usage | null;
  user: string | null;
  metadata: Record<string, string>;
  presence_penalty: number;
  frequency_penalty: number;
}

/** Function tools echoed with description/parameters/strict keys always present. */
function echoTools(tools: EchoedRequest['tools']): Array<Record<string, unknown>> {
  return (tools ?? []).map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description ?? null,
    parameters: tool.parameters ?? null,
    strict: tool.strict ?? null,
  }));
}

export function newResponseObject(request: EchoedRequest, id: string, model: string, status: ResponseStatus): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    completed_at: null,
    status,
    background: request.background ?? false,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: request.max_tool_calls ?? null,
    model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
    safety_identifier: request.safety_identifier ?? null,
    service_tier: 'default',
    store: request.store ?? false,
    temperature: request.temperature ?? 1,
    text: { format: request.text?.format ?? { type: 'text' }, verbosity: request.text?.verbosity ?? 'medium' },
    tool_choice: request.tool_choice ?? 'auto',
    tools: echoTools(request.tools),
    top_logprobs: request.top_logprobs ?? 0,
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    user: request.user ?? null,
    metadata: request.metadata ?? {},
    presence_penalty: 0,
    frequency_penalty: 0,
  };
}

export function makeUsage(inputTokens: number, cachedTokens: number, outputTokens: number, reasoningTokens: number): Usage {
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cachedTokens, cache_write_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: inputTokens + outputTokens,
  };
}
