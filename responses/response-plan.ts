/**
 * Everything decided before generation: the rendered prompt, token budget, tools, tool_choice,
 * thinking and the publish policy. Every 400 the Responses pipeline can give is thrown here, so
 * a plan that exists never fails for a reason the client could have fixed.
 */
import type { ForcedTool, ParserOptions, ReasoningEffort, ToolSpec } from '../dialects/dialect.ts';
import type { Constraint } from '../grammar/constraint.ts';
import { DialectError } from '../dialects/dialect.ts';
import { badRequest } from '../contract/errors.ts';
import type { GenerationRuntime } from '../runtime/generation-runtime.ts';
import { toTurns, type HistoryItem } from './input-history.ts';
import type { EchoedRequest } from './response-object.ts';
import { compileTextFormat, type OutputValidator } from './structured-output.ts';

/** The validated CreateResponse fields the pipeline reads. */
export interface PlanRequest extends EchoedRequest {
  tools?: Array<{
    type: string;
    name: string;
    description?: string | null;
    parameters?: Record<string, unknown> | null;
    strict?: boolean | null;
  }>;
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; name: string };
  text?: { format?: Record<string, unknown>; verbosity?: string | null } | null;
  reasoning?: { effort?: ReasoningEffort | null } | null;
  seed?: number;
}

export interface ResponsePlan {
  promptIds: number[];
  maxTokens: number;
  stopIds: number[];
  temperature: number;
  topP: number;
  parser: ParserOptions;
  /** Declared tools the model may call (empty when tool_choice is none). */
  allowedTools: ToolSpec[];
  /** required / named tool_choice: the response fails without a complete call. */
  forced?: ForcedTool;
  /** Validators run before anything generated is published (json_schema, strict tools). */
  textValidator?: OutputValidator;
  strictTools: Map<string, OutputValidator>;
  /** Constrained decoding: the grammar of every output this request allows (validation still runs). */
  constraint?: Constraint;
  /** True when generated events are buffered until validation. */
  isBuffered: boolean;
  parallelToolCalls: boolean;
}

function toolSpecs(request: PlanRequest): ToolSpec[] {
  return (request.tools ?? []).map((tool) => ({
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    parameters: tool.parameters ?? { type: 'object', properties: {} },
    ...(tool.strict ? { strict: true } : {}),
  }));
}

function forcedTool(request: PlanRequest, tools: ToolSpec[]): ForcedTool | undefined {
  const choice = request.tool_choice;
  if (choice === 'required') {
    if (tools.length === 0)
      throw badRequest('tool_choice', "tool_choice 'required' needs at least one function tool in 'tools'.");
    return 'required';
  }
  if (choice && typeof choice === 'object') {
    if (!tools.some((tool) => tool.name === choice.name)) {
      throw badRequest('tool_choice.name', `tool_choice names '${choice.name}', which is not declared in 'tools'.`);
    }
    return { name: choice.name };
  }
  return undefined;
}

/** Appends the JSON instruction to the conversation's system turn (or adds one). */
function withJsonInstruction(turns: ReturnType<typeof toTurns>, instruction: string | undefined) {
  if (!instruction) return turns;
  const first = turns[0];
  if (first && (first.role === 'system' || first.role === 'developer')) {
    return [{ ...first, content: `${first.content}\n\n${instruction}` }, ...turns.slice(1)];
  }
  return [{ role: 'system' as const, content: instruction }, ...turns];
}

/** The grammar of what this request allows, when the runtime constrains and the dialect has a grammar. */
function requestConstraint(
  runtime: GenerationRuntime,
  parser: ParserOptions,
  format: Record<string, unknown> | undefined,
  stopIds: number[],
): Constraint | undefined {
  if (!runtime.constrainedDecoding || !runtime.dialect.outputGrammar) return undefined;
  const type = format?.type;
  const json =
    type === 'json_schema'
      ? { schema: format!.schema as Record<string, unknown> }
      : type === 'json_object'
        ? {}
        : undefined;
  const limits = runtime.grammarLimits;
  return {
    grammar: runtime.dialect.outputGrammar({ parser, ...(limits ? { limits } : {}), ...(json ? { json } : {}) }),
    stopIds,
  };
}

/** Fills omitted temperature / top_p from the checkpoint's generation_config.json (as vLLM does). */
export function withSamplingDefaults<T extends PlanRequest>(runtime: GenerationRuntime, request: T): T {
  const defaults = runtime.samplingDefaults ?? {};
  return {
    ...request,
    temperature: request.temperature ?? defaults.temperature ?? 1,
    top_p: request.top_p ?? defaults.topP ?? 1,
  };
}

export function planResponse(
  runtime: GenerationRuntime,
  request: PlanRequest,
  history: HistoryItem[],
  offset: number,
): ResponsePlan {
  const declared = toolSpecs(request);
  const forced = forcedTool(request, declared);
  const allowedTools =
    request.tool_choice === 'none'
      ? []
      : forced && forced !== 'required'
        ? declared.filter((t) => t.name === forced.name)
        : declared;
  const format = compileTextFormat(request.text?.format);
  const strictTools = new Map<string, OutputValidator>();
  declared.forEach((tool, index) => {
    if (tool.strict)
      strictTools.set(
        tool.name,
        compileTextFormat(
          { type: 'json_schema', name: tool.name, schema: tool.parameters, strict: true },
          `tools[${index}].parameters`,
        ).validator!,
      );
  });

  let turns = toTurns(history, offset);
  if (request.instructions) turns = [{ role: 'system', content: request.instructions }, ...turns];
  turns = withJsonInstruction(turns, format.instruction);

  const thinking = runtime.dialect.thinkingControl(request.reasoning?.effort);
  let rendered;
  try {
    rendered = runtime.dialect.renderPrompt(turns, {
      tools: request.tool_choice === 'none' ? [] : declared,
      thinking: thinking.thinking,
      effort: thinking.effort,
      forcedTool: forced,
    });
  } catch (error) {
    if (error instanceof DialectError) throw badRequest('input', error.message, 'unsupported_history');
    throw error;
  }
  const promptIds = runtime.tokenizer.encode(rendered.text);
  const room = runtime.contextLength - promptIds.length;
  const maxTokens = request.max_output_tokens ?? room;
  if (maxTokens > room || room <= 0) {
    throw badRequest(
      request.max_output_tokens ? 'max_output_tokens' : 'input',
      `The prompt (${promptIds.length} tokens) plus max_output_tokens (${maxTokens}) exceeds the model's context of ${runtime.contextLength} tokens.`,
      'context_length_exceeded',
    );
  }
  const stopIds = runtime.dialect.stopTokens
    .map((token) => runtime.tokenizer.tokenToId(token))
    .filter((id): id is number => id !== undefined);
  const parser = { ...rendered.parser, tools: allowedTools };
  const constraint = requestConstraint(runtime, parser, request.text?.format, stopIds);
  return {
    promptIds,
    maxTokens,
    stopIds,
    temperature: request.temperature ?? 1,
    topP: request.top_p ?? 1,
    parser,
    allowedTools,
    ...(constraint ? { constraint } : {}),
    forced,
    textValidator: format.validator,
    strictTools,
    isBuffered: format.validator !== undefined || strictTools.size > 0,
    parallelToolCalls: request.parallel_tool_calls ?? true,
  };
}
