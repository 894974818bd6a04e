/**
 * GLM dialects: GLM-4.5 / 4.5-Air / 4.6 (`glm45`) and GLM-4.7 / 4.7-Flash / GLM-5.x (`glm47`).
 * Prompts go through the checkpoint's own chat template (it renders tools, reasoning history
 * and `<|observation|>` tool-result groups). Output syntax (the chat templates of zai-org's
 * GLM-4.5/4.6 and GLM-4.7 checkpoints on Hugging Face; vLLM's glm45 and glm47 tool parsers,
 * vllm/tool_parsers/glm4_moe_tool_parser.py and glm47_moe_tool_parser.py):
 *
 *   glm45: [\n<think>R</think>]\nTEXT\n<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>
 *   glm47: (prompt ends <think>) R</think>TEXT<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>
 *          zero-argument call: <tool_call>NAME</tool_call>
 *
 * The parser accepts both spellings in both variants (a name ends at a newline, `<arg_key>` or
 * `</tool_call>`; whitespace between tags is ignored). Argument values are typed through the
 * tool's schema (arg-typing.ts); string-typed values stream as JSON string fragments.
 */
import type { ChatTemplate, TemplateContentPart, TemplateMessage, TemplateTool } from '../checkpoint/chat-template.ts';
import { argumentsObject, isStringOnly, parameterTypes, typeArgValue } from './arg-typing.ts';
import {
  DialectError,
  type ChatTurn,
  type Dialect,
  type ParserOptions,
  type ReasoningEffort,
  type RenderOptions,
  type RenderedPrompt,
  type ThinkingSetting,
  type ToolSpec,
  type TurnPart,
} from './dialect.ts';
import {
  CALL,
  CALL_END,
  GLM_STOP_TOKENS,
  KEY,
  KEY_END,
  THINK,
  THINK_END,
  VALUE,
  VALUE_END,
  glmOutputGrammar,
} from './glm-grammar.ts';
import { JsonArgsWriter, StreamParser, TrimmedChannel } from './stream-parser.ts';
import { orderToolResults } from './tool-results.ts';

export type GlmVariant = 'glm45' | 'glm47';

export { GLM_STOP_TOKENS };

export function createGlmDialect(variant: GlmVariant, template: ChatTemplate): Dialect {
  return {
    name: variant,
    stopTokens: GLM_STOP_TOKENS,
    markerTokens: [THINK, THINK_END, CALL, CALL_END, KEY, KEY_END, VALUE, VALUE_END],
    thinkingControl: glmThinking,
    renderPrompt: (turns, options) => renderGlm(variant, template, turns, options),
    createParser: (options) => new GlmParser(options),
    outputGrammar: glmOutputGrammar,
  };
}

/** Thinking is on by default (zai README); effort `none` turns it off (`enable_thinking=false`). */
function glmThinking(effort: ReasoningEffort | null | undefined): ThinkingSetting {
  return { thinking: effort !== 'none' };
}

function renderGlm(
  variant: GlmVariant,
  template: ChatTemplate,
  turns: ChatTurn[],
  options: RenderOptions,
): RenderedPrompt {
  const tools = options.tools ?? [];
  const forced = options.forcedTool;
  const forcedName = typeof forced === 'object' ? forced.name : undefined;
  if (forcedName !== undefined && !tools.some((t) => t.name === forcedName)) {
    throw new DialectError(`tool_choice names "${forcedName}", which is not among the tools`);
  }
  // A forced call must open the answer, so that turn gets an empty reasoning block. GLM-4.5
  // writes it after `<|assistant|>` itself (the history form `\n<think></think>`, without the
  // `/nothink` that enable_thinking=false adds to user turns); GLM-4.7 renders thinking off.
  const thinking = variant === 'glm45' ? options.thinking : options.thinking && !forced;
  let text = template.render(orderToolResults(turns).map(templateMessage), {
    tools: tools.map(templateTool),
    addGenerationPrompt: true,
    kwargs: thinking ? {} : { enable_thinking: false },
  });
  if (forced && variant === 'glm45') {
    if (!text.endsWith('<think></think>')) text += '\n<think></think>';
    text += `\n<tool_call>${forcedName !== undefined ? `${forcedName}\n` : ''}`;
  } else if (forced) {
    text += `<tool_call>${forcedName ?? ''}`;
  }
  const parser: ParserOptions = { tools, startInReasoning: !forced && text.endsWith('<think>') };
  if (forced) parser.startInToolCall = forcedName !== undefined ? { name: forcedName } : {};
  return { text, parser };
}

export function templateTool(tool: ToolSpec): TemplateTool {
  const { name, description, parameters } = tool;
  return {
    type: 'function',
    function: description !== undefined ? { name, description, parameters } : { name, parameters },
  };
}

/**
 * Text and image parts in the chat-completions list shape HF multimodal templates read: an image
 * part is `{type:'image'}` (GLM-4.1V/4.5V-style templates test `item.type == 'image'`, as
 * transformers' Glm4vProcessor expects) and renders as the template's placeholder.
 */
function templateParts(parts: TurnPart[]): TemplateContentPart[] {
  return parts.map((part) => (part.type === 'text' ? { type: 'text', text: part.text } : { type: 'image' }));
}

/** A model-neutral turn as the message HF chat templates expect (shared by the Jinja-rendered dialects). */
export function templateMessage(turn: ChatTurn): TemplateMessage {
  switch (turn.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: turn.content };
    case 'user':
      return { role: 'user', content: turn.parts ? templateParts(turn.parts) : turn.content };
    case 'tool':
      // A result with images takes the list form GLM templates read as tool results (each item's
      // `output` rendered through the template's part loop), so image parts render there.
      return {
        role: 'tool',
        content: turn.parts ? [{ type: 'tool_result', output: templateParts(turn.parts) }] : turn.content,
        tool_call_id: turn.toolCallId,
      };
    case 'assistant': {
      const m: TemplateMessage = { role: 'assistant', content: turn.content };
      if (turn.reasoning !== undefined) m.reasoning_content = turn.reasoning;
      if (turn.toolCalls?.length) {
        m.tool_calls = turn.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: argumentsObject(c.arguments) },
        }));
      }
      return m;
    }
  }
}

const STOPS: readonly string[] = GLM_STOP_TOKENS;
/** Longest name we wait for before declaring the call malformed. */
const MAX_NAME = 256;

type GlmState = 'text' | 'reasoning' | 'name' | 'args' | 'key' | 'afterKey' | 'value';

class GlmParser extends StreamParser {
  private state: GlmState;
  private sawContent = false;
  private name = '';
  private argsWriter: JsonArgsWriter | null = null;
  private key = '';
  private valueRaw = '';
  private valueStreams = false;
  private readonly valueChannel = new TrimmedChannel();

  constructor(options: ParserOptions) {
    super(options.tools);
    this.state = options.startInReasoning ? 'reasoning' : 'text';
    if (options.startInToolCall) {
      this.beginCall();
      const name = options.startInToolCall.name;
      if (name === undefined) this.state = 'name';
      else this.openArgs(name);
    }
  }

  protected step(final: boolean): boolean {
    switch (this.state) {
      case 'text':
        return this.stepText(final);
      case 'reasoning':
        return this.stepReasoning(final);
      case 'name':
        return this.stepName(final);
      case 'args':
        return this.stepArgs(final);
      case 'key':
        return this.stepKey(final);
      case 'afterKey':
        return this.stepAfterKey(final);
      case 'value':
        return this.stepValue(final);
    }
  }

  private stepText(final: boolean): boolean {
    // Before any content, `<think>` opens reasoning and a stray `</think>` (the prompt already
    // closed reasoning) is dropped.
    const markers = this.sawContent ? [CALL, ...STOPS] : [THINK, THINK_END, CALL, ...STOPS];
    const r = this.scanner.take(markers, final);
    if (!r) return false;
    const isLateThink = (r.marker === THINK || r.marker === THINK_END) && r.text.trim() !== '';
    if (r.text.trim() !== '') this.sawContent = true;
    // After content, think tags are literal text (whatever the chunking, see sawContent).
    this.emitText(isLateThink ? r.text + r.marker! : r.text);
    if (isLateThink) {
      return true;
    } else if (r.marker === THINK) {
      this.sawContent = true;
      this.state = 'reasoning';
    } else if (r.marker === THINK_END) {
      this.sawContent = true;
    } else if (r.marker === CALL) {
      this.sawContent = true;
      this.beginCall();
      this.name = '';
      this.state = 'name';
    } else if (r.marker !== null) {
      this.endTurn();
    }
    return true;
  }

  private stepReasoning(final: boolean): boolean {
    const r = this.scanner.take([THINK_END, CALL, ...STOPS], final);
    if (!r) return false;
    this.emitReasoning(r.text);
    if (r.marker === null) return true;
    this.closeReasoning();
    this.sawContent = true;
    if (r.marker === THINK_END) {
      this.state = 'text';
    } else if (r.marker === CALL) {
      this.beginCall();
      this.name = '';
      this.state = 'name';
    } else {
      this.endTurn();
    }
    return true;
  }

  private stepName(final: boolean): boolean {
    const r = this.scanner.take(['\n', KEY, CALL_END, ...STOPS], final);
    if (!r) return false;
    this.name += r.text;
    if (r.marker === null) {
      if (this.name.length > MAX_NAME) this.fail('malformed_tool_call', 'tool call name is too long');
      return true;
    }
    if (STOPS.includes(r.marker)) {
      this.endTurn();
      return true;
    }
    const name = this.name.trim();
    if (name === '' && r.marker === '\n') return true;
    if (!this.openArgs(name)) return false;
    if (r.marker === KEY) this.state = 'key';
    else if (r.marker === CALL_END) this.closeCall();
    return true;
  }

  private openArgs(name: string): boolean {
    if (!this.nameCall(name)) return false;
    this.name = name;
    this.argsWriter = new JsonArgsWriter((d) => this.argsDelta(d));
    this.argsWriter.open();
    this.state = 'args';
    return true;
  }

  private closeCall(): void {
    this.finishCall(this.argsWriter?.close() ?? '{}');
    this.argsWriter = null;
    this.state = 'text';
  }

  private stepArgs(final: boolean): boolean {
    const r = this.scanner.take([KEY, CALL_END, ...STOPS], final);
    if (!r) return false;
    if (r.marker === KEY) {
      this.key = '';
      this.state = 'key';
    } else if (r.marker === CALL_END) {
      this.closeCall();
    } else if (r.marker !== null) {
      this.endTurn();
    }
    return true;
  }

  private stepKey(final: boolean): boolean {
    const r = this.scanner.take([KEY_END, CALL_END, ...STOPS], final);
    if (!r) return false;
    this.key += r.text;
    if (r.marker === KEY_END) this.state = 'afterKey';
    else if (r.marker === CALL_END) this.closeCall();
    else if (r.marker !== null) this.endTurn();
    return true;
  }

  private stepAfterKey(final: boolean): boolean {
    const r = this.scanner.take([VALUE, KEY, CALL_END, ...STOPS], final);
    if (!r) return false;
    if (r.marker === VALUE) {
      this.openValue();
    } else if (r.marker === KEY) {
      this.key = '';
      this.state = 'key';
    } else if (r.marker === CALL_END) {
      this.closeCall();
    } else if (r.marker !== null) {
      this.endTurn();
    }
    return true;
  }

  private openValue(): void {
    const key = this.key.trim();
    this.key = key;
    this.valueRaw = '';
    this.valueStreams = isStringOnly(parameterTypes(this.toolSpec(this.name), key));
    if (this.valueStreams) this.argsWriter?.key(key, true);
    this.valueChannel.close();
    this.state = 'value';
  }

  private stepValue(final: boolean): boolean {
    // A call closed without `</arg_value>` still ends the value (lenient, like the tag-less spelling).
    const r = this.scanner.take([VALUE_END, CALL_END, ...STOPS], final);
    if (!r) return false;
    if (this.valueStreams) this.argsWriter?.stringChunk(this.valueChannel.write(r.text));
    else this.valueRaw += r.text;
    if (r.marker === VALUE_END || r.marker === CALL_END) {
      if (this.valueStreams) {
        this.argsWriter?.endString();
      } else {
        this.argsWriter?.key(this.key, false);
        this.argsWriter?.value(typeArgValue(this.valueRaw.trim(), parameterTypes(this.toolSpec(this.name), this.key)));
      }
      if (r.marker === CALL_END) this.closeCall();
      else this.state = 'args';
    } else if (r.marker !== null) {
      this.endTurn();
    }
    return true;
  }
}
