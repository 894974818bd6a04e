/**
 * The Dialect contract: how one model family turns a conversation into prompt text and how its
 * generated text turns back into reasoning, message text and function calls.
 *
 * Pipeline use (runtime/load-model-runtime.ts loads the dialect, responses/response-plan.ts
 * renders the prompt and maps the stop tokens, responses/run-response.ts feeds the parser):
 *
 *   const dialect = await loadDialect(modelDir, override);   // select.ts (or selectDialect(info))
 *   const turns: ChatTurn[] = ...;            // Responses input items → model-neutral turns
 *   const { thinking, effort } = dialect.thinkingControl(request.reasoning?.effort);
 *   const rendered = dialect.renderPrompt(turns, { tools, thinking, effort, forcedTool });
 *   // tokenise rendered.text WITHOUT adding special tokens (the text already has BOS/[gMASK])
 *   const stopIds = dialect.stopTokens.map((s) => tokenizer.tokenToId(s));
 *   const parser = dialect.createParser(rendered.parser);
 *   for await (const ev of engine.generate(...)) events.push(...parser.push(detokenisedDelta));
 *   events.push(...parser.end(finish.reason));
 *
 * Rules the pipeline relies on:
 * - Detokenise with special tokens KEPT (`<tool_call>`, `<｜tool▁sep｜>` and `<think>` are special
 *   tokens in these vocabularies; skipping them loses the markup). Do not push the stop token's
 *   text; if it is pushed anyway the parser treats it as the end of the turn.
 * - `push()` accepts chunks of any size (part of a token's text, one token, many tokens); the
 *   events depend only on the concatenated text, never on the chunking. Chunks are JS strings:
 *   the detokeniser must not split a UTF-8 sequence (a lone surrogate half is the caller's bug).
 * - Text and reasoning are published trimmed, as the templates trim history: leading whitespace
 *   of a segment is dropped and trailing whitespace is held until more text follows (so the
 *   `\n\n` before a DSML block or the `\n` before `<tool_call>` never reaches a delta).
 * - No text/reasoning delta ever contains a prefix of a marker that may still complete: partial
 *   markers are held back until the next chunk or `end()` disambiguates them.
 * - `tool_call_start` is emitted only when the name is complete and declared in `tools`; an
 *   undeclared name yields `{type:'error', code:'undeclared_tool'}` and the parser then ignores
 *   all further input (the response fails).
 * - For each call: `tool_call_start`, then zero or more `tool_args_delta`, then exactly one of
 *   `tool_call_done` (complete) or `tool_call_incomplete` (at `end('length'|'cancelled'|'error')`).
 *   The concatenation of a call's deltas equals its `arguments` string (compact JSON object).
 * - `end('stop')` inside an unfinished call yields `{type:'error', code:'unfinished_tool_call'}`.
 *   A call whose name never completed is dropped at `end('length')` (nothing was published).
 *   Ending between complete calls of a call block (e.g. parallel_tool_calls:false stopping after
 *   the first call) is not an error. A marker that never completed is flushed as plain text.
 * - Arguments: GLM and DSML arguments are rebuilt as compact JSON (`{"city":"Paris","days":2}`),
 *   values typed through the tool schema (GLM) or the `string="…"` attribute (DSML); DeepSeek
 *   V3.1 arguments are the model's JSON text as written (trimmed), not validated here.
 * - `reasoning_done` follows the last `reasoning_delta` (also when the turn ends inside
 *   reasoning). Reasoning always precedes text and calls in the event order of one turn.
 *
 * Forced calls (`tool_choice` required or named): `renderPrompt` opens the call in the prompt
 * (that turn gets no reasoning, since the call must start the answer) and returns
 * `parser.startInToolCall`, so the parser starts inside the call. The pipeline still checks that
 * a complete call arrived (a DSML block that ends before any invoke is not reported as an error).
 *
 * History: `developer` turns render as system turns in every dialect (none of the supported
 * formats has a developer role that means "instructions"). Each run of `tool` turns is rendered
 * in the order of the preceding assistant turn's calls (tool-results.ts). Reasoning is replayed
 * as each format does: GLM keeps it only for assistant turns after the last user turn (template),
 * DeepSeek V3.1 never, V3.2 after the last user turn, V4/V4.1 always when tools are declared.
 * Implementations: glm.ts (glm45, glm47), deepseek.ts (deepseek-v31), dsml.ts (deepseek-v32,
 * deepseek-v4, deepseek-v41), hermes.ts (qwen3, and `plain` for any other template: chat and
 * `<think>` reasoning, no function tools); select.ts picks one for a checkpoint.
 *
 * Constrained decoding: `outputGrammar` gives the grammar of what a request allows, built in the
 * dialect's *-grammar.ts file, which also owns the markup constants its parser reads (one source
 * for both); output-grammar.ts holds the think-then-answer skeleton they share.
 */
import type { ReasoningEffort as ContractReasoningEffort } from '../contract/types.ts';
import type { FinishReason } from '../engine-cuda/engine.ts';
import type { Grammar } from '../grammar/grammar.ts';
import type { JsonLimits } from '../grammar/json-schema.ts';

export type TurnRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A function call the assistant made earlier in the conversation. */
export interface ToolCallRecord {
  /** The Responses `call_id`. */
  id: string;
  name: string;
  /** The arguments as a JSON text (as the Responses API carries them). */
  arguments: string;
}

/**
 * One turn of a model-neutral conversation. Responses items map onto it: messages by role;
 * `reasoning` items become `reasoning` of the following assistant turn; `function_call` items
 * become `toolCalls` of an assistant turn; each `function_call_output` is one `tool` turn
 * (consecutive tool turns form one group of results).
 */
export interface ChatTurn {
  role: TurnRole;
  /** Plain text (input_text/output_text parts joined, without the images). */
  content: string;
  /**
   * User and tool turns that carry images: the text and image parts in their order (a template
   * renders each image part as its image placeholder). Absent for text-only turns.
   */
  parts?: TurnPart[];
  /** Assistant only: the model's reasoning for this turn. */
  reasoning?: string;
  /** Assistant only. */
  toolCalls?: ToolCallRecord[];
  /** Tool only: the call this result answers. */
  toolCallId?: string;
}

/** A content part of a turn with images; the image itself travels beside the turns (by order). */
export type TurnPart = { type: 'text'; text: string } | { type: 'image' };

/** A function tool, in the flat Responses shape. */
export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  strict?: boolean;
}

/** Responses `reasoning.effort` when sent (the contract's enum without null). */
export type ReasoningEffort = NonNullable<ContractReasoningEffort>;

export interface ThinkingSetting {
  /** Render the prompt in thinking mode. */
  thinking: boolean;
  /** Dialect-specific effort level passed back through RenderOptions (DeepSeek V4/V4.1). */
  effort?: 'max' | number;
}

/** `tool_choice` forms that require a call: any declared function, or the named one. */
export type ForcedTool = 'required' | { name: string };

export interface RenderOptions {
  /** Declared tools ([] or undefined when tool_choice is none or no tools were sent). */
  tools?: ToolSpec[];
  thinking: boolean;
  effort?: ThinkingSetting['effort'];
  forcedTool?: ForcedTool;
}

export interface ParserOptions {
  tools: ToolSpec[];
  /** The prompt ends inside an open reasoning block: the output starts as reasoning. */
  startInReasoning: boolean;
  /**
   * The prompt ends inside an opened call. With `name` the name is already in the prompt (named
   * tool_choice); without it the output starts with the name.
   */
  startInToolCall?: { name?: string };
}

export interface RenderedPrompt {
  /** The text to tokenise (no special tokens added by the tokeniser). */
  text: string;
  /** Options for createParser matching how this prompt ends. */
  parser: ParserOptions;
}

export type ParserEvent =
  | { type: 'reasoning_delta'; text: string }
  | { type: 'reasoning_done' }
  | { type: 'text_delta'; text: string }
  | { type: 'tool_call_start'; index: number; name: string }
  | { type: 'tool_args_delta'; index: number; delta: string }
  | { type: 'tool_call_done'; index: number; arguments: string }
  | { type: 'tool_call_incomplete'; index: number }
  | { type: 'error'; code: ParserErrorCode; message: string; name?: string };

export type ParserErrorCode = 'undeclared_tool' | 'unfinished_tool_call' | 'malformed_tool_call';

/** What a request allows, for Dialect.outputGrammar (constrained decoding). */
export interface GrammarOptions {
  /** As renderPrompt returned it, with `tools` = the tools the model may call ([] for none). */
  parser: ParserOptions;
  /** The answer must be JSON: of `schema` (json_schema), or any object (json_object). */
  json?: { schema?: Record<string, unknown> };
  /** Soft limits for unbounded strings/arrays in JSON answers and JSON arguments (grammar/json-schema.ts). */
  limits?: JsonLimits;
}

export interface OutputParser {
  /** Feeds the next detokenised text; returns the events it completes. */
  push(chunk: string): ParserEvent[];
  /** Ends the turn with the engine's finish reason; flushes held-back text. Call once. */
  end(reason: FinishReason): ParserEvent[];
}

export interface Dialect {
  /** One of select.ts DIALECT_NAMES: 'glm45', 'glm47', 'deepseek-v31', 'deepseek-v32', 'deepseek-v4',
   * 'deepseek-v41', 'qwen3', 'plain'. */
  readonly name: string;
  /** Special-token strings that end the assistant turn; the pipeline maps them to ids. */
  readonly stopTokens: readonly string[];
  /**
   * The markup its parser reads in the output (reasoning and tool-call markers). A generated
   * special token is text only where its content occurs in one of these strings; any other (a
   * role or template token such as `<|assistant|>`) is dropped from the output, as
   * `skip_special_tokens` does in Hugging Face servers.
   */
  readonly markerTokens: readonly string[];
  /** Maps Responses `reasoning.effort` (undefined = not sent) to the dialect's control. */
  thinkingControl(effort: ReasoningEffort | null | undefined): ThinkingSetting;
  /** Renders the conversation plus an open assistant turn (the generation prompt). */
  renderPrompt(turns: ChatTurn[], options: RenderOptions): RenderedPrompt;
  createParser(options: ParserOptions): OutputParser;
  /**
   * The grammar of every output this dialect's parser reads as allowed by `options` (declared
   * tools only, their parameter names and value types; JSON answers of the schema), written in
   * the same markup the parser reads. Absent: the dialect is not constrained.
   */
  outputGrammar?(options: GrammarOptions): Grammar;
}

/** Thrown by renderPrompt for a conversation the dialect cannot express. */
export class DialectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DialectError';
  }
}
