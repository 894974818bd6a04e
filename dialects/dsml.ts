/**
 * DeepSeek V3.2 / V4 / V4.1 dialects (`deepseek-v32`, `deepseek-v4`, `deepseek-v41`). These
 * models ship no Jinja template: the prompt format is defined by DeepSeek's Python reference
 * encoders (`encoding_dsv32.py`, `deepseek_v4_encoding.py`, `deepseek_v41_encoding.py`, vendored
 * in vLLM `vllm/tokenizers/`), re-implemented here in TypeScript from their format rules (and
 * vLLM's deepseek_v32 / deepseek_v4 tool parsers, SGLang's DeepSeekV41Detector). Tool calls are
 * DSML blocks:
 *
 *   \n\n<｜DSML｜B>\n<｜DSML｜I name="NAME">\n<｜DSML｜P name="K" string="true|false">V</｜DSML｜P>\n…</｜DSML｜I>\n</｜DSML｜B>
 *
 * with B/I/P = function_calls/invoke/parameter (V3.2), tool_calls/invoke/parameter (V4),
 * " calls"/" invoke"/" parameter" (V4.1, leading space). `string="true"` values are raw text,
 * `string="false"` values JSON. `｜DSML｜` is plain text (several BPE tokens), so the parser
 * matches text.
 */
import {
  DialectError,
  type ChatTurn,
  type Dialect,
  type ParserOptions,
  type ReasoningEffort,
  type RenderOptions,
  type RenderedPrompt,
  type ThinkingSetting,
  type ToolCallRecord,
  type ToolSpec,
} from './dialect.ts';
import { argumentsObject } from './arg-typing.ts';
import { DEEPSEEK_EOS, deepseekThinking } from './deepseek.ts';
import { dsmlOutputGrammar } from './dsml-grammar.ts';
import { pythonJson } from './python-json.ts';
import { JsonArgsWriter, StreamParser } from './stream-parser.ts';
import { orderToolResults } from './tool-results.ts';

export type DsmlVersion = 'v32' | 'v4' | 'v41';

const BOS = '<｜begin▁of▁sentence｜>';
const USER = '<｜User｜>';
const ASSISTANT = '<｜Assistant｜>';
const SYSTEM = '<｜System｜>';
const THINK = '<think>';
const THINK_END = '</think>';
const DSML = '｜DSML｜';

interface Tags {
  block: string;
  invoke: string;
  param: string;
}
const TAGS: Record<DsmlVersion, Tags> = {
  v32: { block: 'function_calls', invoke: 'invoke', param: 'parameter' },
  v4: { block: 'tool_calls', invoke: 'invoke', param: 'parameter' },
  v41: { block: ' calls', invoke: ' invoke', param: ' parameter' },
};

/** The block, invoke and parameter tags, opening then closing (an opening invoke or parameter tag
 * continues with its attributes). */
function dsmlTags(tags: Tags): [string, string, string, string, string, string] {
  return [
    `<${DSML}${tags.block}>`,
    `</${DSML}${tags.block}>`,
    `<${DSML}${tags.invoke}`,
    `</${DSML}${tags.invoke}>`,
    `<${DSML}${tags.param}`,
    `</${DSML}${tags.param}>`,
  ];
}

/** V4 only changes the prompt for `max` (a fixed preamble); V4.1 takes 1–100 (default 50). */
const V41_EFFORT: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  minimal: 10,
  low: 25,
  medium: 37,
  high: 50,
  xhigh: 75,
  max: 100,
};
const V41_DEFAULT_EFFORT = 50;
const V4_EFFORT_MAX =
  'Reasoning Effort: Absolute maximum with no shortcuts permitted.\n' +
  'You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\n' +
  'Explicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n';

export function createDsmlDialect(version: DsmlVersion): Dialect {
  const byDefault = version === 'v41';
  const thinking = deepseekThinking(byDefault);
  return {
    name: version === 'v32' ? 'deepseek-v32' : version === 'v4' ? 'deepseek-v4' : 'deepseek-v41',
    stopTokens: [DEEPSEEK_EOS],
    markerTokens: [THINK, THINK_END, ...dsmlTags(TAGS[version])],
    thinkingControl: (effort): ThinkingSetting => {
      const base = thinking(effort);
      if (!base.thinking || !effort || effort === 'none') return base;
      if (version === 'v4' && (effort === 'xhigh' || effort === 'max')) return { ...base, effort: 'max' };
      if (version === 'v41') return { ...base, effort: V41_EFFORT[effort] };
      return base;
    },
    renderPrompt: (turns, options) => renderDsml(version, turns, options),
    createParser: (options) => new DsmlParser(TAGS[version], options),
    outputGrammar: (options) => dsmlOutputGrammar(dsmlTags(TAGS[version]), options),
  };
}

function renderDsml(version: DsmlVersion, turns: ChatTurn[], options: RenderOptions): RenderedPrompt {
  const tools = options.tools ?? [];
  const forced = options.forcedTool;
  const forcedName = typeof forced === 'object' ? forced.name : undefined;
  if (forcedName !== undefined && !tools.some((t) => t.name === forcedName)) {
    throw new DialectError(`tool_choice names "${forcedName}", which is not among the tools`);
  }
  const thinking = options.thinking && !forced;
  let text =
    version === 'v32' ? encodeV32(turns, tools, thinking) : encodeV4(version, turns, tools, thinking, options.effort);
  if (forced) {
    const t = TAGS[version];
    text += `\n\n<${DSML}${t.block}>\n${forcedName !== undefined ? `<${DSML}${t.invoke} name="${forcedName}">\n` : ''}`;
  }
  const parser: ParserOptions = { tools, startInReasoning: !forced && text.endsWith(THINK) };
  if (forced) parser.startInToolCall = forcedName !== undefined ? { name: forcedName } : {};
  return { text, parser };
}

interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  reasoning?: string;
  toolCalls?: ToolCallRecord[];
  tools?: readonly ToolSpec[];
  /** V4/V4.1 user turns: text and tool results, joined with "\n\n". */
  blocks?: { kind: 'text' | 'tool_result'; text: string }[];
}

function toMessages(turns: ChatTurn[]): Message[] {
  return orderToolResults(turns).map((t) => {
    const role = t.role === 'developer' ? 'system' : t.role;
    const m: Message = { role, content: t.content };
    if (t.reasoning !== undefined) m.reasoning = t.reasoning;
    if (t.toolCalls?.length) m.toolCalls = t.toolCalls;
    return m;
  });
}

function toolSchemas(tools: readonly ToolSpec[]): string {
  return tools
    .map((t) =>
      pythonJson(
        t.description !== undefined
          ? { name: t.name, description: t.description, parameters: t.parameters }
          : { name: t.name, parameters: t.parameters },
      ),
    )
    .join('\n');
}

function v32ToolsText(tools: readonly ToolSpec[]): string {
  const d = DSML;
  return (
    "## Tools\nYou have access to a set of tools you can use to answer the user's question.\n" +
    `You can invoke functions by writing a "<${d}function_calls>" block like the following as part of your reply to the user:\n` +
    `<${d}function_calls>\n<${d}invoke name="$FUNCTION_NAME">\n` +
    `<${d}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</${d}parameter>\n...\n</${d}invoke>\n` +
    `<${d}invoke name="$FUNCTION_NAME2">\n...\n</${d}invoke>\n</${d}function_calls>\n` +
    'String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. ' +
    'The "string" attribute should be set to "true" for string type parameters and "false" for other types (numbers, booleans, arrays, objects).\n' +
    'If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:\n' +
    `<${d}function_calls>\n...\n</${d}function_calls>\n<function_results>\n...\n</function_results>\n${THINK}...thinking about results${THINK_END}\n` +
    `Here are the functions available in JSONSchema format:\n<functions>\n${toolSchemas(tools)}\n</functions>\n`
  );
}

function v4ToolsText(tags: Tags, tools: readonly ToolSpec[]): string {
  const d = DSML;
  return (
    `## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<${d}${tags.block}>" block like the following:\n\n` +
    `<${d}${tags.block}>\n<${d}${tags.invoke} name="$TOOL_NAME">\n` +
    `<${d}${tags.param} name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</${d}${tags.param}>\n...\n</${d}${tags.invoke}>\n` +
    `<${d}${tags.invoke} name="$TOOL_NAME2">\n...\n</${d}${tags.invoke}>\n</${d}${tags.block}>\n\n` +
    'String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.\n\n' +
    `If thinking_mode is enabled (triggered by ${THINK}), you MUST output your complete reasoning inside ${THINK}...${THINK_END} BEFORE any tool calls or final response.\n\n` +
    `Otherwise, output directly after ${THINK_END} with tool calls or final response.\n\n` +
    `### Available Tool Schemas\n\n${toolSchemas(tools)}\n\n` +
    'You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n'
  );
}

/** The DSML block for an assistant turn's calls (empty without calls). */
function callsBlock(tags: Tags, calls: readonly ToolCallRecord[] | undefined): string {
  if (!calls?.length) return '';
  const invokes = calls.map((c) => {
    const params = Object.entries(argumentsObject(c.arguments)).map(([k, v]) => {
      const isString = typeof v === 'string';
      return `<${DSML}${tags.param} name="${k}" string="${isString}">${isString ? v : pythonJson(v)}</${DSML}${tags.param}>`;
    });
    return `<${DSML}${tags.invoke} name="${c.name}">\n${params.join('\n')}\n</${DSML}${tags.invoke}>`;
  });
  return `\n\n<${DSML}${tags.block}>\n${invokes.join('\n')}\n</${DSML}${tags.block}>`;
}

function lastIndex(messages: readonly Message[], pred: (m: Message, i: number) => boolean): number {
  for (let i = messages.length - 1; i >= 0; i--) if (pred(messages[i]!, i)) return i;
  return -1;
}

/** encoding_dsv32.py `encode_messages` with vLLM's wrapper (tools as a system message at 0). */
export function encodeV32(turns: ChatTurn[], tools: readonly ToolSpec[], thinking: boolean): string {
  const messages = toMessages(turns);
  if (tools.length > 0) messages.unshift({ role: 'system', content: '', tools });
  const lastUser = lastIndex(messages, (m) => m.role === 'user');
  let prompt = BOS;
  messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
        prompt += m.content + (m.tools ? `\n\n${v32ToolsText(m.tools)}` : '');
        break;
      case 'user':
        prompt += `${USER}${m.content}${ASSISTANT}${i === lastUser && thinking ? THINK : THINK_END}`;
        break;
      case 'assistant':
        prompt +=
          (thinking && i > lastUser ? (m.reasoning ?? '') + THINK_END : '') +
          m.content +
          callsBlock(TAGS.v32, m.toolCalls) +
          DEEPSEEK_EOS;
        break;
      case 'tool': {
        const owner = lastIndex(messages.slice(0, i), (x) => x.role !== 'tool');
        const calls = messages[owner]?.role === 'assistant' ? (messages[owner]!.toolCalls ?? []) : [];
        const position = i - owner;
        if (position > calls.length)
          throw new DialectError('a tool result has no matching call in the preceding assistant turn');
        if (position === 1) prompt += '\n\n<function_results>';
        prompt += `\n<result>${m.content}</result>`;
        if (position === calls.length)
          prompt += `\n</function_results>\n\n${i >= lastUser && thinking ? THINK : THINK_END}`;
        break;
      }
    }
  });
  return prompt;
}

/** `merge_tool_messages`: tool results (and following user text) join one user turn of blocks. */
function mergeToolMessages(messages: Message[]): Message[] {
  const merged: Message[] = [];
  for (const m of messages) {
    const last = merged[merged.length - 1];
    if (m.role === 'tool' || m.role === 'user') {
      const block = { kind: m.role === 'tool' ? ('tool_result' as const) : ('text' as const), text: m.content };
      if (last?.role === 'user' && last.blocks) last.blocks.push(block);
      else merged.push({ role: 'user', content: m.content, blocks: [block] });
    } else {
      merged.push(m);
    }
  }
  return merged;
}

/** deepseek_v4_encoding.py / deepseek_v41_encoding.py `encode_messages` with vLLM's wrappers. */
export function encodeV4(
  version: 'v4' | 'v41',
  turns: ChatTurn[],
  tools: readonly ToolSpec[],
  thinking: boolean,
  effort?: 'max' | number,
): string {
  const tags = TAGS[version];
  const messages = toMessages(turns);
  if (tools.length > 0) {
    // V4 inserts a tools-only system message first; V4.1 attaches tools to the first system message.
    const system = version === 'v41' ? messages.find((m) => m.role === 'system') : undefined;
    if (system) system.tools = tools;
    else messages.unshift({ role: 'system', content: '', tools });
  }
  const all = mergeToolMessages(messages);
  const isUserLike = (m: Message, i: number) =>
    m.role === 'user' || (version === 'v41' && m.role === 'system' && i > 0);
  const lastUser = lastIndex(all, isUserLike);
  // Past reasoning is dropped before the last user turn, except when tools are declared.
  const dropThinking = tools.length === 0;
  let prompt = BOS;
  all.forEach((m, i) => {
    let effortText = '';
    if (i === 0 && thinking) {
      if (version === 'v4' && effort === 'max') effortText = V4_EFFORT_MAX;
      if (version === 'v41') {
        const n = typeof effort === 'number' ? effort : effort === 'max' ? 100 : V41_DEFAULT_EFFORT;
        effortText = `Reasoning Effort: ${n} (range 1-100, the higher the value, the more thorough the reasoning)\n\n`;
      }
    }
    if (version === 'v41' && i === 0 && (effortText !== '' || m.role === 'system')) prompt += SYSTEM;
    prompt += effortText;
    switch (m.role) {
      case 'system':
        if (version === 'v41' && i > 0) prompt += SYSTEM;
        prompt += m.content + (m.tools ? `\n\n${v4ToolsText(tags, m.tools)}` : '');
        break;
      case 'user':
        prompt +=
          USER +
          (m.blocks ?? [])
            .map((b) => (b.kind === 'text' ? b.text : `<tool_result>${b.text}</tool_result>`))
            .join('\n\n');
        break;
      case 'assistant': {
        const keep = !dropThinking || i > lastUser;
        prompt +=
          (thinking && keep ? (m.reasoning ?? '') + THINK_END : '') +
          m.content +
          callsBlock(tags, m.toolCalls) +
          DEEPSEEK_EOS;
        break;
      }
      case 'tool':
        throw new DialectError('internal: tool turns are merged into user turns');
    }
    const next = all[i + 1];
    if (next && next.role !== 'assistant') return;
    if (isUserLike(m, i)) {
      const open = thinking && (!dropThinking || i >= lastUser);
      prompt += ASSISTANT + (open ? THINK : THINK_END);
    }
  });
  return prompt;
}

type DsmlState = 'text' | 'reasoning' | 'block' | 'invokeHead' | 'params' | 'paramHead' | 'value';

class DsmlParser extends StreamParser {
  private state: DsmlState;
  private readonly blockOpen: string;
  private readonly blockClose: string;
  private readonly invokeOpen: string;
  private readonly invokeClose: string;
  private readonly paramOpen: string;
  private readonly paramClose: string;
  private head = '';
  private writer: JsonArgsWriter | null = null;
  private paramIsString = false;
  private value = '';

  constructor(tags: Tags, options: ParserOptions) {
    super(options.tools);
    [this.blockOpen, this.blockClose, this.invokeOpen, this.invokeClose, this.paramOpen, this.paramClose] =
      dsmlTags(tags);
    this.state = options.startInReasoning ? 'reasoning' : 'text';
    if (options.startInToolCall) {
      const name = options.startInToolCall.name;
      if (name === undefined) {
        this.state = 'block';
      } else {
        this.beginCall();
        this.openInvoke(name);
      }
    }
  }

  protected step(final: boolean): boolean {
    switch (this.state) {
      case 'reasoning':
        return this.stepOutside(final, true);
      case 'text':
        return this.stepOutside(final, false);
      case 'block':
        return this.stepBlock(final);
      case 'invokeHead':
        return this.stepInvokeHead(final);
      case 'params':
        return this.stepParams(final);
      case 'paramHead':
        return this.stepParamHead(final);
      case 'value':
        return this.stepValue(final);
    }
  }

  private stepOutside(final: boolean, reasoning: boolean): boolean {
    // V4-Flash sometimes omits </think> before a call block; the block ends reasoning too.
    const markers = reasoning ? [THINK_END, this.blockOpen, DEEPSEEK_EOS] : [this.blockOpen, DEEPSEEK_EOS];
    const r = this.scanner.take(markers, final);
    if (!r) return false;
    if (reasoning) this.emitReasoning(r.text);
    else this.emitText(r.text);
    if (r.marker === THINK_END) {
      this.closeReasoning();
      this.state = 'text';
    } else if (r.marker === this.blockOpen) {
      this.closeSegments();
      this.state = 'block';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }

  private stepBlock(final: boolean): boolean {
    const r = this.scanner.take([this.invokeOpen, this.blockClose, DEEPSEEK_EOS], final);
    if (!r) return false;
    if (r.marker === this.invokeOpen) {
      this.beginCall();
      this.head = '';
      this.state = 'invokeHead';
    } else if (r.marker === this.blockClose) {
      this.state = 'text';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }

  private stepInvokeHead(final: boolean): boolean {
    const r = this.scanner.take(['>', DEEPSEEK_EOS], final);
    if (!r) return false;
    this.head += r.text;
    if (r.marker === '>') {
      const m = /^\s*name="([^"]*)"\s*$/.exec(this.head);
      if (!m) this.fail('malformed_tool_call', 'DSML invoke without a name attribute');
      else this.openInvoke(m[1]!);
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    } else if (this.head.length > 300) {
      this.fail('malformed_tool_call', 'DSML invoke header is too long');
    }
    return true;
  }

  private openInvoke(name: string): void {
    if (!this.nameCall(name)) return;
    this.writer = new JsonArgsWriter((d) => this.argsDelta(d));
    this.writer.open();
    this.state = 'params';
  }

  private stepParams(final: boolean): boolean {
    const r = this.scanner.take([this.paramOpen, this.invokeClose, DEEPSEEK_EOS], final);
    if (!r) return false;
    if (r.marker === this.paramOpen) {
      this.head = '';
      this.state = 'paramHead';
    } else if (r.marker === this.invokeClose) {
      this.finishCall(this.writer?.close() ?? '{}');
      this.writer = null;
      this.state = 'block';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }

  private stepParamHead(final: boolean): boolean {
    const r = this.scanner.take(['>', DEEPSEEK_EOS], final);
    if (!r) return false;
    this.head += r.text;
    if (r.marker === '>') {
      const m = /^\s*name="([^"]*)"(?:\s+string="(true|false)")?\s*$/.exec(this.head);
      if (!m) {
        this.fail('malformed_tool_call', 'DSML parameter without a name attribute');
        return true;
      }
      this.paramIsString = m[2] !== 'false';
      this.writer?.key(m[1]!, this.paramIsString);
      this.value = '';
      this.state = 'value';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    } else if (this.head.length > 300) {
      this.fail('malformed_tool_call', 'DSML parameter header is too long');
    }
    return true;
  }

  private stepValue(final: boolean): boolean {
    const r = this.scanner.take([this.paramClose, DEEPSEEK_EOS], final);
    if (!r) return false;
    if (this.paramIsString) this.writer?.stringChunk(r.text);
    else this.value += r.text;
    if (r.marker === this.paramClose) {
      if (this.paramIsString) this.writer?.endString();
      else this.writer?.value(jsonOrString(this.value.trim()));
      this.state = 'params';
    } else if (r.marker === DEEPSEEK_EOS) {
      this.endTurn();
    }
    return true;
  }
}

/** `string="false"` values are JSON; text that does not parse is kept as a string. */
function jsonOrString(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
