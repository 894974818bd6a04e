/**
 * DeepSeek-V3.1 / V3.1-Terminus dialect (`deepseek-v31`). The prompt goes through the
 * checkpoint's own chat template, which does not render `tools`: this dialect writes the tool
 * section into the system prompt itself, in the model card's format (as reproduced by vLLM
 * `examples/tool_chat_template_deepseekv31.jinja`). Output syntax (vLLM's deepseek_v31 tool parser,
 * vllm/tool_parsers/deepseekv31_tool_parser.py):
 *
 *   [R</think>]TEXT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
 *
 * Thinking is the template's `thinking` kwarg: the generation prompt ends `<｜Assistant｜><think>`
 * (on) or `<｜Assistant｜></think>` (off). Arguments are passed through as the model wrote them
 * (trimmed); validating them is the pipeline's job (strict tools).
 * DeepSeek V3.2 / V4 / V4.1 (DSML) live in dsml.ts.
 */
import type { ChatTemplate, TemplateMessage } from '../checkpoint/chat-template.ts';
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
} from './dialect.ts';
import {
  CALL_BEGIN,
  CALL_END,
  CALLS_BEGIN,
  CALLS_BEGIN_VARIANTS,
  CALLS_END,
  DEEPSEEK_EOS,
  SEP,
  THINK_END,
  deepseekV31OutputGrammar,
} from './deepseek-grammar.ts';
import { pythonJson } from './python-json.ts';
import { StreamParser, TrimmedChannel } from './stream-parser.ts';
import { orderToolResults } from './tool-results.ts';

export { DEEPSEEK_EOS };

export function createDeepseekV31Dialect(template: ChatTemplate): Dialect {
  return {
    name: 'deepseek-v31',
    stopTokens: [DEEPSEEK_EOS],
    markerTokens: ['<think>', THINK_END, CALLS_BEGIN, ...CALLS_BEGIN_VARIANTS, CALLS_END, CALL_BEGIN, CALL_END, SEP],
    thinkingControl: deepseekThinking(false),
    renderPrompt: (turns, options) => renderV31(template, turns, options),
    createParser: (options) => new V31Parser(options),
    outputGrammar: deepseekV31OutputGrammar,
  };
}

/** Thinking follows the effort when one is sent (`none` = off); otherwise the model's default. */
export function deepseekThinking(byDefault: boolean): (effort: ReasoningEffort | null | undefined) => ThinkingSetting {
  return (effort) => ({ thinking: effort === undefined || effort === null ? byDefault : effort !== 'none' });
}

/** The model card's tool section (byte layout of vLLM's tool_chat_template_deepseekv31.jinja). */
export function v31ToolsText(tools: readonly ToolSpec[]): string {
  let text = '## Tools\nYou have access to the following tools:\n';
  for (const t of tools) {
    text += `\n### ${t.name}\nDescription: ${t.description ?? ''}\n\nParameters: ${pythonJson(t.parameters)}\n`;
  }
  return (
    `${text}\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n` +
    `${CALLS_BEGIN}${CALL_BEGIN}tool_call_name${SEP}tool_call_arguments${CALL_END}{{additional_tool_calls}}${CALLS_END}\n\n` +
    'Where:\n\n' +
    '- `tool_call_name` must be an exact match to one of the available tools\n' +
    "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n" +
    '- For multiple tool calls, chain them directly without separators or spaces\n'
  );
}

function renderV31(template: ChatTemplate, turns: ChatTurn[], options: RenderOptions): RenderedPrompt {
  const tools = options.tools ?? [];
  const forced = options.forcedTool;
  const forcedName = typeof forced === 'object' ? forced.name : undefined;
  if (forcedName !== undefined && !tools.some((t) => t.name === forcedName)) {
    throw new DialectError(`tool_choice names "${forcedName}", which is not among the tools`);
  }
  const messages = orderToolResults(turns).map(v31Message);
  // The template joins every system message (in order) with "\n\n": the tool section goes last.
  if (tools.length > 0) messages.push({ role: 'system', content: v31ToolsText(tools) });
  const thinking = options.thinking && !forced;
  let text = template.render(messages, { addGenerationPrompt: true, kwargs: { thinking } });
  if (forced) text += CALLS_BEGIN + CALL_BEGIN + (forcedName !== undefined ? forcedName + SEP : '');
  const parser: ParserOptions = { tools, startInReasoning: !forced && text.endsWith('<think>') };
  if (forced) parser.startInToolCall = forcedName !== undefined ? { name: forcedName } : {};
  return { text, parser };
}

function v31Message(turn: ChatTurn): TemplateMessage {
  switch (turn.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: turn.content };
    case 'user':
      return { role: 'user', content: turn.content };
    case 'tool':
      return { role: 'tool', content: turn.content, tool_call_id: turn.toolCallId };
    case 'assistant':
      // History reasoning is always stripped by this template; the arguments are concatenated as text.
      if (!turn.toolCalls?.length) return { role: 'assistant', content: turn.content };
      return {
        role: 'assistant',
        content: turn.content === '' ? null : turn.content,
        tool_calls: turn.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
  }
}

type V31State = 'text' | 'reasoning' | 'calls' | 'name' | 'args';

class V31Parser extends StreamParser {
  private state: V31State;
  private name = '';
  private args = '';
  private readonly argsChannel = new TrimmedChannel();

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
      case 'reasoning':
        return this.stepOutside(
          final,
          [THINK_END, CALLS_BEGIN, ...CALLS_BEGIN_VARIANTS, CALL_BEGIN, DEEPSEEK_EOS],
          true,
        );
      case 'text':
        return this.stepOutside(final, [CALLS_BEGIN, ...CALLS_BEGIN_VARIANTS, CALL_BEGIN, DEEPSEEK_EOS], false);
      case 'calls':
        return this.stepCalls(final);
      case 'name':
        return this.stepName(final);
      case 'args':
        return this.stepArgs(final);
    }
  }

  private stepOutside(final: boolean, markers: string[], reasoning: boolean): boolean {
    const r = this.scanner.take(markers, final);
    if (!r) return false;
    if (reasoning) this.emitReasoning(r.text);
    else this.emitText(r.text);
    if (r.marker === null) return true;
    if (r.marker === THINK_END) {
      this.closeReasoning();
      this.state = 'text';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    } else if (r.marker === CALLS_BEGIN || CALLS_BEGIN_VARIANTS.includes(r.marker)) {
      this.closeSegments();
      this.state = 'calls';
    } else {
      this.beginCall();
      this.name = '';
      this.state = 'name';
    }
    return true;
  }

  private stepCalls(final: boolean): boolean {
    const r = this.scanner.take([CALL_BEGIN, CALLS_END, DEEPSEEK_EOS], final);
    if (!r) return false;
    if (r.marker === CALL_BEGIN) {
      this.beginCall();
      this.name = '';
      this.state = 'name';
    } else if (r.marker === CALLS_END) {
      this.state = 'text';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }

  private stepName(final: boolean): boolean {
    const r = this.scanner.take([SEP, CALL_END, DEEPSEEK_EOS], final);
    if (!r) return false;
    this.name += r.text;
    if (r.marker === SEP) {
      this.openArgs(this.name.trim());
    } else if (r.marker === CALL_END) {
      this.fail('malformed_tool_call', 'tool call without a separator between name and arguments');
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    } else if (this.name.length > 256) {
      this.fail('malformed_tool_call', 'tool call name is too long');
    }
    return true;
  }

  private openArgs(name: string): void {
    if (!this.nameCall(name)) return;
    this.args = '';
    this.argsChannel.close();
    this.state = 'args';
  }

  private stepArgs(final: boolean): boolean {
    const r = this.scanner.take([CALL_END, DEEPSEEK_EOS], final);
    if (!r) return false;
    const delta = this.argsChannel.write(r.text);
    this.args += delta;
    this.argsDelta(delta);
    if (r.marker === CALL_END) {
      this.finishCall(this.args);
      this.state = 'calls';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }
}
