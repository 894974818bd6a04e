/**
 * Builds the wire `Response` object: every field OpenAI's schema requires, plus the fields the
 * Open Responses schema requires present (nullable ones as null), echoing the request's settings.
 * Snake_case wire form from here to the store and back out.
 */
import type { McpTool, Response, ResponseFailure, ResponseObject, ResponseUsage } from '../contract/types.ts';

export type { ResponseObject } from '../contract/types.ts';

export type ResponseStatus = Response['status'];

/**
 * The request fields a Response echoes. Looser than the contract's CreateResponse (tests and the
 * Chat Completions path build it by hand); the validated body is assignable to it (pinned below).
 */
export interface EchoedRequest {
  model?: string;
  instructions?: string | null;
  previous_response_id?: string | null;
  store?: boolean | null;
  background?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  max_tool_calls?: number | null;
  metadata?: Record<string, string> | null;
  tools?: Array<
    | {
        type: string;
        name: string;
        description?: string | null;
        parameters?: Record<string, unknown> | null;
        strict?: boolean | null;
      }
    | McpTool
  >;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  text?: { format?: Record<string, unknown>; verbosity?: string | null } | null;
  reasoning?: { effort?: string | null; summary?: string | null; generate_summary?: string | null } | null;
  prompt_cache_key?: string | null;
  safety_identifier?: string | null;
  user?: string | null;
  service_tier?: string | null;
  top_logprobs?: number | null;
}

export type Usage = ResponseUsage;

export type ResponseError = ResponseFailure;

/** Function tools echoed with description/parameters/strict keys always present; mcp tools as sent. */
function echoTools(tools: EchoedRequest['tools']): Response['tools'] {
  return (tools ?? []).map((tool) =>
    'server_label' in tool
      ? { ...tool }
      : {
          type: 'function',
          name: tool.name,
          description: tool.description ?? null,
          parameters: tool.parameters ?? null,
          strict: tool.strict ?? null,
        },
  );
}

// The request's values passed the contract's schema before the pipeline ran; these name their wire types.
type ReasoningEffort = NonNullable<Response['reasoning']>['effort'];
type ReasoningSummary = NonNullable<Response['reasoning']>['summary'];
type TextFormat = Response['text']['format'];
type Verbosity = Response['text']['verbosity'];

/** A new Response for `request`; every field the contract requires is present. */
export function newResponseObject(
  request: EchoedRequest,
  id: string,
  model: string,
  status: ResponseStatus,
): ResponseObject {
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
    // A summary setting reaches here only with encrypted reasoning on; it is echoed, and none is made.
    reasoning: {
      effort: (request.reasoning?.effort ?? null) as ReasoningEffort,
      summary: (request.reasoning?.summary ?? request.reasoning?.generate_summary ?? null) as ReasoningSummary,
    },
    safety_identifier: request.safety_identifier ?? null,
    service_tier: 'default',
    store: request.store ?? false,
    temperature: request.temperature ?? 1,
    text: {
      format: (request.text?.format ?? { type: 'text' }) as TextFormat,
      verbosity: (request.text?.verbosity ?? 'medium') as Verbosity,
    },
    tool_choice: (request.tool_choice ?? 'auto') as Response['tool_choice'],
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

export function makeUsage(
  inputTokens: number,
  cachedTokens: number,
  outputTokens: number,
  reasoningTokens: number,
): Usage {
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cachedTokens, cache_write_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: inputTokens + outputTokens,
  };
}
