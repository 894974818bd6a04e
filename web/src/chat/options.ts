/**
 * The chat's request options (kept in local storage) and the POST /v1/responses body they make:
 * always stored (`store: true`) and continued with `previous_response_id`, the reasoning effort,
 * the output limit, the function tools and the json_schema format when they are switched on.
 */
import type { SentRequest } from './conversations.ts';

export const EFFORTS = ['none', 'low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORTS)[number];

export interface ChatOptions {
  effort: Effort;
  maxOutputTokens: number;
  toolsOn: boolean;
  toolsJson: string;
  schemaOn: boolean;
  schemaName: string;
  schemaJson: string;
}

export const EXAMPLE_TOOLS = JSON.stringify(
  [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Get the current weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city'],
      },
    },
  ],
  null,
  2,
);

export const EXAMPLE_SCHEMA = JSON.stringify(
  {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer' } },
    required: ['name', 'age'],
    additionalProperties: false,
  },
  null,
  2,
);

export const DEFAULT_OPTIONS: ChatOptions = {
  effort: 'medium',
  maxOutputTokens: 1024,
  toolsOn: false,
  toolsJson: EXAMPLE_TOOLS,
  schemaOn: false,
  schemaName: 'answer',
  schemaJson: EXAMPLE_SCHEMA,
};

const STORAGE_KEY = 'maya.chatOptions.v1';

export function loadOptions(): ChatOptions {
  try {
    return { ...DEFAULT_OPTIONS, ...(JSON.parse(localStorage.getItem(STORAGE_KEY) ?? '{}') as Partial<ChatOptions>) };
  } catch {
    return DEFAULT_OPTIONS;
  }
}

export function saveOptions(options: ChatOptions): void {
  localStorage.setItem(STORAGE_KEY, JSON.stringify(options));
}

/** The parse error of a JSON editor's text, or undefined when it parses to the kind asked for. */
export function jsonProblem(text: string, kind: 'array' | 'object'): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  const isArray = Array.isArray(value);
  if (kind === 'array' && !isArray) return 'Expected a JSON array of tools.';
  if (kind === 'object' && (isArray || value === null || typeof value !== 'object')) return 'Expected a JSON object.';
  return undefined;
}

/** The request body, or the problem that keeps it from being sent (an editor's invalid JSON). */
export function requestBody(
  model: string,
  sent: SentRequest,
  options: ChatOptions,
): { body: Record<string, unknown> } | { problem: string } {
  const body: Record<string, unknown> = {
    model,
    input: sent.input,
    store: true,
    reasoning: { effort: options.effort },
    max_output_tokens: options.maxOutputTokens,
  };
  if (sent.previousResponseId) body.previous_response_id = sent.previousResponseId;
  if (options.toolsOn) {
    const problem = jsonProblem(options.toolsJson, 'array');
    if (problem) return { problem: `Function tools: ${problem}` };
    body.tools = JSON.parse(options.toolsJson);
  }
  if (options.schemaOn) {
    const problem = jsonProblem(options.schemaJson, 'object');
    if (problem) return { problem: `JSON schema: ${problem}` };
    body.text = {
      format: {
        type: 'json_schema',
        name: options.schemaName || 'answer',
        schema: JSON.parse(options.schemaJson),
        strict: true,
      },
    };
  }
  return { body };
}
