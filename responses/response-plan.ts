/**
 * Everything decided before generation: the rendered prompt, token budget, tools, tool_choice,
 * thinking and the publish policy. Every 400 the Responses pipeline can give is thrown here, so
 * a plan that exists never fails for a reason the client could have fixed.
 */
import type { ForcedTool, ParserOptions, ReasoningEffort, RenderOptions, ToolSpec } from '../dialects/dialect.ts';
import type { Constraint } from '../grammar/constraint.ts';
import { DialectError } from '../dialects/dialect.ts';
import { badRequest } from '../contract/errors.ts';
import type { GenerationRuntime, VisionConfig } from '../runtime/generation-runtime.ts';
import type { EngineImage } from '../engine-cuda/engine.ts';
import { DEFAULT_IMAGE_SETTINGS, type ImageSettings } from '../config/settings.ts';
import { toTurns, type ChatTurnInput, type HistoryItem, type ItemParam } from './input-history.ts';
import { prepareImage, type ImageSource, type PreparedImage } from './images.ts';
import type { EchoedRequest } from './response-object.ts';
import { checkToolParameters, compileTextFormat, type OutputValidator } from './structured-output.ts';

/** The validated CreateResponse fields the pipeline reads. */
export interface PlanRequest extends Omit<EchoedRequest, 'tools'> {
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
  /** How the client's request names what errors point at; default the Responses names. */
  wire?: WireNames;
  /** Texts that end the output where one first appears in the answer's text, itself left out (Anthropic's stop_sequences). */
  stopSequences?: string[];
  /** A max_output_tokens beyond the room the prompt leaves is cut to that room, not refused (Anthropic's Messages API). */
  clampOutputToContext?: boolean;
  /** Sample among the top_k most likely tokens only (Anthropic's top_k; OpenAI's APIs have none); 0 or absent = off. */
  topK?: number;
}

/** Field names for `param` and messages: Chat Completions says `messages` and `max_tokens`. */
export interface WireNames {
  input: string;
  maxOutputTokens: string;
  /** `param` of field `field` (a Responses item field) of history item `index`. */
  itemParam?: ItemParam;
  /** `param` of the JSON schema of tool `index`; default `tools[index].parameters`. */
  toolParam?: (index: number) => string;
}

export const RESPONSES_WIRE: WireNames = { input: 'input', maxOutputTokens: 'max_output_tokens' };

export interface ResponsePlan {
  promptIds: number[];
  maxTokens: number;
  stopIds: number[];
  temperature: number;
  topP: number;
  /** 0 = off. */
  topK: number;
  parser: ParserOptions;
  /** Declared tools the model may call (empty when tool_choice is none). */
  allowedTools: ToolSpec[];
  /** required / named tool_choice: the response fails without a complete call. */
  forced?: ForcedTool;
  /** Validators run before anything generated is published (json_schema, strict tools). */
  textValidator?: OutputValidator;
  strictTools: Map<string, OutputValidator>;
  /** True when generated events are buffered until validation. */
  isBuffered: boolean;
  parallelToolCalls: boolean;
  /** Constrained decoding: the grammar of every output this request allows (validation still runs). */
  constraint?: Constraint;
  /** The prompt's images in order (vision models); each one's tokens are in promptIds. */
  images?: EngineImage[];
  /** Texts that end the output (PlanRequest.stopSequences). */
  stopSequences?: string[];
}

/** What planning needs besides the request: image limits, and the signal that stops downloads. */
export interface PlanOptions {
  images?: ImageSettings;
  signal?: AbortSignal;
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

/** The text of a conversation that came from users, tools and history (never template markup). */
function plainStrings(turns: ReturnType<typeof toTurns>): string[] {
  return turns.flatMap((turn) => [
    turn.content,
    // A turn with images renders each text part on its own, between image placeholders.
    ...(turn.parts ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])),
    turn.reasoning ?? '',
    // Templates render arguments whole (JSON) or value by value (GLM's arg_key/arg_value).
    ...(turn.toolCalls ?? []).flatMap((call) => [call.arguments, ...argumentStrings(call.arguments)]),
  ]);
}

/** The string values inside a tool call's JSON arguments (none when they are not JSON). */
function argumentStrings(json: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return [];
  }
  const out: string[] = [];
  const stack = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') out.push(node);
    else if (typeof node === 'object' && node !== null) stack.push(...Object.values(node));
  }
  return out;
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

/** 400 context_length_exceeded, naming the output limit only when the client set one. */
function contextExceeded(
  wire: WireNames,
  promptTokens: number,
  maxOutputTokens: number | undefined,
  contextLength: number,
) {
  const prompt = `The prompt (${promptTokens} tokens)`;
  const context = `the model's context of ${contextLength} tokens`;
  return maxOutputTokens === undefined
    ? badRequest(
        wire.input,
        `${prompt} leaves no room for output in ${context}; shorten '${wire.input}'.`,
        'context_length_exceeded',
      )
    : badRequest(
        wire.maxOutputTokens,
        `${prompt} plus ${wire.maxOutputTokens} (${maxOutputTokens}) exceeds ${context}.`,
        'context_length_exceeded',
      );
}

/** Fills omitted temperature / top_p from the checkpoint's generation_config.json (as vLLM does). */
export function withSamplingDefaults<T extends Pick<PlanRequest, 'temperature' | 'top_p'>>(
  runtime: GenerationRuntime,
  request: T,
): T {
  const defaults = runtime.samplingDefaults ?? {};
  return {
    ...request,
    temperature: request.temperature ?? defaults.temperature ?? 1,
    top_p: request.top_p ?? defaults.topP ?? 1,
  };
}

/**
 * Inputs at least this large (UTF-8 bytes of message text) are rendered and tokenised off the main
 * thread: 8 KiB tokenises in about 20 ms on the shared 2-core box (90 KB took 217 ms inline).
 */
export const OFF_THREAD_INPUT_BYTES = 8 * 1024;

/** Everything decided before the prompt is rendered. */
interface Draft {
  wire: WireNames;
  declared: ToolSpec[];
  forced: ForcedTool | undefined;
  allowedTools: ToolSpec[];
  format: ReturnType<typeof compileTextFormat>;
  strictTools: Map<string, OutputValidator>;
  turns: ReturnType<typeof toTurns>;
  renderOptions: RenderOptions;
  /** The conversation's own text (tokenised as plain text, see Tokenizer.encodePrompt). */
  plain: string[];
  /** UTF-8 bytes of the message contents and tool calls: the prompt has at least this many bytes. */
  inputBytes: number;
  /** inputBytes plus reasoning (which a template may drop): how much text rendering may have to handle. */
  renderBytes: number;
  /** The images of the turns, in the order the template renders their placeholders. */
  images: ImageSource[];
}

function draftPlan(runtime: GenerationRuntime, request: PlanRequest, history: HistoryItem[], offset: number): Draft {
  const wire = request.wire ?? RESPONSES_WIRE;
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
  const toolParam = wire.toolParam ?? ((index: number) => `tools[${index}].parameters`);
  declared.forEach((tool, index) => {
    if (request.tools?.[index]?.parameters != null) checkToolParameters(tool.parameters, toolParam(index));
    if (tool.strict)
      strictTools.set(
        tool.name,
        compileTextFormat(
          { type: 'json_schema', name: tool.name, schema: tool.parameters, strict: true },
          toolParam(index),
        ).validator!,
      );
  });

  let turns: ChatTurnInput[] = toTurns(history, offset, wire.itemParam, { images: runtime.vision !== undefined });
  if (request.instructions) turns = [{ role: 'system', content: request.instructions }, ...turns];
  turns = withJsonInstruction(turns, format.instruction);
  // Image sources stay here (data: URLs are large); the turns keep only their placeholders.
  const images: ImageSource[] = [];
  turns = turns.map(({ images: sources, ...turn }) => {
    if (sources) images.push(...sources);
    return turn;
  });
  let inputBytes = 0;
  let reasoningBytes = 0;
  for (const turn of turns) {
    inputBytes += Buffer.byteLength(turn.content);
    // A call's argument values are rendered at least once, however the template spells the JSON.
    for (const call of turn.toolCalls ?? []) {
      inputBytes += Buffer.byteLength(call.name);
      for (const value of argumentStrings(call.arguments)) inputBytes += Buffer.byteLength(value);
    }
    reasoningBytes += Buffer.byteLength(turn.reasoning ?? '');
  }
  checkCanFit(runtime, inputBytes, wire);

  const thinking = runtime.dialect.thinkingControl(request.reasoning?.effort);
  const renderOptions: RenderOptions = {
    tools: request.tool_choice === 'none' ? [] : declared,
    thinking: thinking.thinking,
    effort: thinking.effort,
    forcedTool: forced,
  };
  return {
    wire,
    declared,
    forced,
    allowedTools,
    format,
    strictTools,
    turns,
    renderOptions,
    plain: plainStrings(turns),
    inputBytes,
    renderBytes: inputBytes + reasoningBytes,
    images,
  };
}

/**
 * A cheap refusal before any rendering or tokenising: no token spans more than the vocabulary's
 * longest token, so the message text alone needs at least bytes / maxTokenBytes tokens. An input
 * that cannot fit the context is a 400 at once, whatever its size.
 */
function checkCanFit(runtime: GenerationRuntime, inputBytes: number, wire: WireNames): void {
  const perToken = runtime.tokenizer.maxTokenBytes;
  if (!perToken) return;
  const atLeast = Math.ceil(inputBytes / perToken);
  if (atLeast >= runtime.contextLength) {
    throw badRequest(
      wire.input,
      `The ${wire.input} (${inputBytes} bytes, at least ${atLeast} tokens) does not fit the model's context of ${runtime.contextLength} tokens.`,
      'context_length_exceeded',
    );
  }
}

function renderHere(runtime: GenerationRuntime, draft: Draft): { promptIds: number[]; parser: ParserOptions } {
  let rendered;
  try {
    rendered = runtime.dialect.renderPrompt(draft.turns, draft.renderOptions);
  } catch (error) {
    throw asRequestError(error, draft.wire);
  }
  return { promptIds: runtime.tokenizer.encode(rendered.text, draft.plain), parser: rendered.parser };
}

function asRequestError(error: unknown, wire: WireNames): unknown {
  return error instanceof DialectError ? badRequest(wire.input, error.message, 'unsupported_history') : error;
}

/**
 * The request's images, decoded and processed in order (the first bad one is the 400), after a
 * check of their number.
 */
async function prepareImages(
  runtime: GenerationRuntime,
  vision: VisionConfig,
  sources: ImageSource[],
  options: PlanOptions,
): Promise<PreparedImage[]> {
  const settings = options.images ?? DEFAULT_IMAGE_SETTINGS;
  if (sources.length > settings.maxCount) {
    throw badRequest(
      sources[settings.maxCount]!.param,
      `The conversation holds ${sources.length} images; this server takes at most ${settings.maxCount} per request (MAYA_IMAGE_MAX_COUNT).`,
      'too_many_images',
    );
  }
  const prepared: PreparedImage[] = [];
  const workers = runtime.promptWorkers;
  const offThread = workers?.processImage ? workers.processImage.bind(workers) : undefined;
  for (const source of sources)
    prepared.push(await prepareImage(source, vision.processor, settings, options.signal, offThread));
  return prepared;
}

/**
 * Each image placeholder token the template rendered → the image's t·h·w / merge² copies of it
 * (what the HF processor does to the rendered text). The template must render exactly one
 * placeholder per image; user and tool text cannot add one (it is tokenised as plain text).
 */
export function expandImageTokens(
  promptIds: number[],
  imageTokenId: number,
  images: ReadonlyArray<{ tokens: number }>,
  wire: WireNames,
): number[] {
  const out: number[] = [];
  let next = 0;
  for (const id of promptIds) {
    if (id !== imageTokenId) {
      out.push(id);
      continue;
    }
    const image = images[next++];
    if (image) for (let i = 0; i < image.tokens; i++) out.push(id);
  }
  if (next !== images.length) {
    throw badRequest(
      wire.input,
      `The model's chat template rendered ${next} image placeholder(s) for ${images.length} image(s); this model cannot take images where they were sent.`,
      'unsupported_content',
    );
  }
  return out;
}

function finishPlan(
  runtime: GenerationRuntime,
  request: PlanRequest,
  draft: Draft,
  rendered: { promptIds: number[]; parser: ParserOptions },
  images: PreparedImage[] = [],
): ResponsePlan {
  const promptIds =
    runtime.vision && images.length > 0
      ? expandImageTokens(rendered.promptIds, runtime.vision.imageTokenId, images, draft.wire)
      : rendered.promptIds;
  const room = runtime.contextLength - promptIds.length;
  const asked = request.max_output_tokens ?? room;
  const maxTokens = request.clampOutputToContext === true ? Math.min(asked, room) : asked;
  if (maxTokens > room || room <= 0)
    throw contextExceeded(draft.wire, promptIds.length, request.max_output_tokens ?? undefined, runtime.contextLength);
  const stopIds = runtime.dialect.stopTokens
    .map((token) => runtime.tokenizer.tokenToId(token))
    .filter((id): id is number => id !== undefined);
  const parser = { ...rendered.parser, tools: draft.allowedTools };
  const constraint = requestConstraint(runtime, parser, request.text?.format, stopIds);
  return {
    promptIds,
    maxTokens,
    stopIds,
    // top_p 0 keeps only the most likely token: greedy, as OpenAI treats it.
    temperature: request.top_p === 0 ? 0 : (request.temperature ?? 1),
    topP: request.top_p === 0 ? 1 : (request.top_p ?? 1),
    topK: request.topK ?? 0,
    parser,
    allowedTools: draft.allowedTools,
    forced: draft.forced,
    textValidator: draft.format.validator,
    strictTools: draft.strictTools,
    isBuffered: draft.format.validator !== undefined || draft.strictTools.size > 0,
    parallelToolCalls: request.parallel_tool_calls ?? true,
    ...(constraint ? { constraint } : {}),
    ...(images.length > 0 ? { images: images.map(({ pixels, grid, hash }) => ({ pixels, grid, hash })) } : {}),
    ...(request.stopSequences && request.stopSequences.length > 0 ? { stopSequences: request.stopSequences } : {}),
  };
}

/** The plan, rendered and tokenised on the calling thread. */
export function planResponse(
  runtime: GenerationRuntime,
  request: PlanRequest,
  history: HistoryItem[],
  offset: number,
): ResponsePlan {
  const draft = draftPlan(runtime, request, history, offset);
  if (draft.images.length > 0) throw new Error('a request with images is planned with planResponseAsync');
  return finishPlan(runtime, request, draft, renderHere(runtime, draft));
}

/** The plan; a large input is rendered and tokenised by the runtime's prompt workers when it has them. */
export async function planResponseAsync(
  runtime: GenerationRuntime,
  request: PlanRequest,
  history: HistoryItem[],
  offset: number,
  options: PlanOptions = {},
): Promise<ResponsePlan> {
  const draft = draftPlan(runtime, request, history, offset);
  // Every image is decoded and checked before anything is rendered or generated.
  const images =
    runtime.vision && draft.images.length > 0
      ? await prepareImages(runtime, runtime.vision, draft.images, options)
      : [];
  const workers = runtime.promptWorkers;
  const rendered =
    workers && draft.renderBytes >= OFF_THREAD_INPUT_BYTES
      ? await workers.render(draft.turns, draft.renderOptions, draft.plain).catch((error: unknown) => {
          throw asRequestError(error, draft.wire);
        })
      : renderHere(runtime, draft);
  return finishPlan(runtime, request, draft, rendered, images);
}
