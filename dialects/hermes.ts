/**
 * Qwen-style dialect (`qwen3`: Qwen3 and Qwen2.5 chat templates, "Hermes" tool format), plus the
 * `plain` fallback for any other chat template. Prompts go through the checkpoint's template.
 * Qwen output syntax (as the Qwen3 template's tool section describes it):
 *
 *   [<think>\nR\n</think>\n\n]TEXT\n<tool_call>\n{"name": "NAME", "arguments": {…}}\n</tool_call>
 *
 * The call body is JSON: the name is published once its string closes, and the raw text of the
 * `arguments` object streams as it arrives (a string-encoded arguments value is decoded at its
 * end). A body in another key order is parsed whole at `</tool_call>`.
 * `plain` renders the template, parses `<think>` reasoning and has no tool-call syntax.
 */
import type { ChatTemplate } from '../checkpoint/chat-template.ts';
import { argumentsObject } from './arg-typing.ts';
import {
  DialectError,
  type ChatTurn,
  type Dialect,
  type ParserOptions,
  type ReasoningEffort,
  type RenderOptions,
  type RenderedPrompt,
  type ThinkingSetting,
} from './dialect.ts';
import { templateMessage, templateTool } from './glm.ts';
import {
  CALL,
  CALL_END,
  QWEN_STOP_TOKENS,
  THINK,
  THINK_END,
  plainOutputGrammar,
  qwenOutputGrammar,
} from './hermes-grammar.ts';
import { StreamParser } from './stream-parser.ts';
import { orderToolResults } from './tool-results.ts';

export { QWEN_STOP_TOKENS };

export function createQwenDialect(template: ChatTemplate): Dialect {
  return {
    name: 'qwen3',
    stopTokens: QWEN_STOP_TOKENS,
    markerTokens: [THINK, THINK_END, CALL, CALL_END],
    thinkingControl: onUnlessNone,
    renderPrompt: (turns, options) => renderQwen(template, turns, options),
    createParser: (options) => new HermesParser(options, [...QWEN_STOP_TOKENS], true),
    outputGrammar: qwenOutputGrammar,
  };
}

/** Any other template: rendered as is, reasoning in `<think>` parsed, no tools. */
export function createPlainDialect(template: ChatTemplate): Dialect {
  const stops = template.specialTokens.eos_token ? [template.specialTokens.eos_token] : [];
  return {
    name: 'plain',
    stopTokens: stops,
    markerTokens: [THINK, THINK_END],
    thinkingControl: onUnlessNone,
    renderPrompt: (turns, options) => {
      if ((options.tools?.length ?? 0) > 0 || options.forcedTool) {
        throw new DialectError('this model has no known tool-call syntax; function tools are not available');
      }
      const kwargs = options.thinking ? {} : { enable_thinking: false };
      const text = template.render(orderToolResults(turns).map(templateMessage), { addGenerationPrompt: true, kwargs });
      return { text, parser: { tools: [], startInReasoning: text.trimEnd().endsWith(THINK) } };
    },
    createParser: (options) => new HermesParser(options, stops, false),
    outputGrammar: (options) => plainOutputGrammar(stops, options),
  };
}

function onUnlessNone(effort: ReasoningEffort | null | undefined): ThinkingSetting {
  return { thinking: effort !== 'none' };
}

function renderQwen(template: ChatTemplate, turns: ChatTurn[], options: RenderOptions): RenderedPrompt {
  const tools = options.tools ?? [];
  const forced = options.forcedTool;
  const forcedName = typeof forced === 'object' ? forced.name : undefined;
  if (forcedName !== undefined && !tools.some((t) => t.name === forcedName)) {
    throw new DialectError(`tool_choice names "${forcedName}", which is not among the tools`);
  }
  const thinking = options.thinking && !forced;
  let text = template.render(orderToolResults(turns).map(templateMessage), {
    tools: tools.map(templateTool),
    addGenerationPrompt: true,
    kwargs: thinking ? {} : { enable_thinking: false },
  });
  if (forced)
    text += `${CALL}\n${forcedName !== undefined ? `{"name": ${JSON.stringify(forcedName)}, "arguments": ` : ''}`;
  const parser: ParserOptions = { tools, startInReasoning: !forced && text.trimEnd().endsWith(THINK) };
  if (forced) parser.startInToolCall = forcedName !== undefined ? { name: forcedName } : {};
  return { text, parser };
}

/** `{"name": "…", "arguments": ` up to the first character of the arguments value. */
const NAME_FIRST = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*(?=\S)/;

type HermesState = 'text' | 'reasoning' | 'call';

class HermesParser extends StreamParser {
  private state: HermesState;
  private sawContent = false;
  private body = '';
  /** Where the arguments value starts in `body` (-1 until known), and how far it was scanned. */
  private argsStart = -1;
  private scanned = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private argsEnd = -1;
  private named = false;

  constructor(
    options: ParserOptions,
    private readonly stops: string[],
    private readonly hasTools: boolean,
  ) {
    super(options.tools);
    this.state = options.startInReasoning ? 'reasoning' : 'text';
    if (options.startInToolCall) {
      this.openCall();
      const name = options.startInToolCall.name;
      if (name !== undefined) this.feedBody(`{"name": ${JSON.stringify(name)}, "arguments": `);
    }
  }

  protected step(final: boolean): boolean {
    if (this.state === 'call') return this.stepCall(final);
    const reasoning = this.state === 'reasoning';
    const calls = this.hasTools ? [CALL] : [];
    const markers = reasoning
      ? [THINK_END, ...calls, ...this.stops]
      : this.sawContent
        ? [...calls, ...this.stops]
        : [THINK, THINK_END, ...calls, ...this.stops];
    const r = this.scanner.take(markers, final);
    if (!r) return false;
    const late = !reasoning && (r.marker === THINK || r.marker === THINK_END) && r.text.trim() !== '';
    if (r.text.trim() !== '') this.sawContent = true;
    if (reasoning) this.emitReasoning(r.text);
    else this.emitText(late ? r.text + r.marker! : r.text);
    if (late || r.marker === null) return true;
    this.sawContent = true;
    if (r.marker === THINK) {
      this.state = 'reasoning';
    } else if (r.marker === THINK_END) {
      this.closeReasoning();
      this.state = 'text';
    } else if (r.marker === CALL) {
      this.openCall();
    } else {
      this.endTurn();
    }
    return true;
  }

  private openCall(): void {
    this.beginCall();
    this.state = 'call';
    this.body = '';
    this.argsStart = -1;
    this.argsEnd = -1;
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.named = false;
  }

  private stepCall(final: boolean): boolean {
    const r = this.scanner.take([CALL_END, ...this.stops], final);
    if (!r) return false;
    this.feedBody(r.text);
    if (r.marker === CALL_END) {
      this.closeBody();
      this.state = 'text';
    } else if (r.marker !== null) {
      this.endTurn();
    }
    return true;
  }

  /** Publishes the name once it closes, then streams the arguments object as it is scanned. */
  private feedBody(text: string): void {
    this.body += text;
    if (this.argsStart < 0) {
      const m = NAME_FIRST.exec(this.body);
      if (!m) return;
      const name = JSON.parse(`"${m[1]!}"`) as string;
      if (!this.nameCall(name)) return;
      this.named = true;
      this.argsStart = m[0].length;
      this.scanned = this.argsStart;
    }
    // A string-encoded arguments value is decoded whole in closeBody.
    if (this.argsEnd >= 0 || this.body[this.argsStart] === '"') return;
    const from = this.scanned;
    while (this.scanned < this.body.length && this.argsEnd < 0) {
      const c = this.body[this.scanned++]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') {
        this.inString = true;
      } else if (c === '{' || c === '[') {
        this.depth++;
      } else if ((c === '}' || c === ']') && --this.depth === 0) {
        this.argsEnd = this.scanned;
      }
    }
    this.argsDelta(this.body.slice(Math.max(from, this.argsStart), this.scanned));
  }

  private closeBody(): void {
    if (this.named && this.argsEnd >= 0) {
      this.finishCall(this.body.slice(this.argsStart, this.argsEnd));
      return;
    }
    const parsed = parseBody(this.body);
    if (this.named && this.argsStart >= 0 && this.body.slice(this.argsStart).trimStart().startsWith('"') && parsed) {
      const args = argumentsText(parsed.arguments);
      this.argsDelta(args);
      this.finishCall(args);
      return;
    }
    if (this.named || !parsed || typeof parsed.name !== 'string') {
      this.fail('malformed_tool_call', 'tool call body is not {"name": …, "arguments": {…}} JSON');
      return;
    }
    if (!this.nameCall(parsed.name)) return;
    const args = argumentsText(parsed.arguments);
    this.argsDelta(args);
    this.finishCall(args);
  }
}

function parseBody(body: string): { name?: unknown; arguments?: unknown } | null {
  try {
    const value: unknown = JSON.parse(body);
    return value && typeof value === 'object' ? (value as { name?: unknown; arguments?: unknown }) : null;
  } catch {
    return null;
  }
}

/** The arguments as a JSON object text (objects re-serialised, JSON strings decoded). */
function argumentsText(value: unknown): string {
  if (value === undefined || value === null) return '{}';
  if (typeof value === 'string') return JSON.stringify(argumentsObject(value));
  return JSON.stringify(value);
}
