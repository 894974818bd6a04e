/**
 * The shape every think-then-answer dialect's output grammar shares (GLM, Qwen/Hermes):
 *
 *   ws [THINK R THINK_END | THINK_END] ws ANSWER     (R free; a prompt ending in THINK starts at R;
 *                                                     R may also end at a call, as the parsers allow)
 *   ANSWER: TEXT (CALL_OPEN CALL TEXT)*  |  JSON ws  |  (CALL_OPEN CALL ws)+ when JSON is asked and tools are allowed
 *   forced call (prompt ends inside the call): CALL-or-its-arguments (ws CALL_OPEN CALL)* ws
 *
 * A dialect supplies its markup (as special tokens, matched as text where the vocabulary has no
 * such token), the free-text rule (never spelling a marker out) and its call bodies.
 */
import { RuleSet, alt, avoid, opt, rep, seq, special, text, type Expr, type Grammar } from '../grammar/grammar.ts';
import { anyObject, jsonSchemaValue, type JsonLimits } from '../grammar/json-schema.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';

export interface DialectMarkup {
  think: string;
  thinkEnd: string;
  callOpen: string;
  /** Every marker the parser reads; free text never contains one. */
  markers: readonly string[];
  /** NAME + arguments + the call's close, for one tool. */
  call(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr;
  /** What follows an already written name (named tool_choice prefills it). */
  afterName(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr;
  /**
   * Calls come in a block (DeepSeek): callOpen, then `callBegin CALL` one or more times, then
   * `end`. `requiredOpensBlock`: a required-call prompt ends after callOpen (DSML), not after the
   * first callBegin (V3.1).
   */
  group?: { callBegin: string; end: string; requiredOpensBlock?: boolean };
  /** What follows callOpen before the first call (DSML: a newline). */
  afterOpen?: Expr;
}

const WS = rep(alt(text('\n'), text(' ')), 0, 2);

export function outputGrammar(markup: DialectMarkup, options: GrammarOptions): Grammar {
  const rules = new RuleSet();
  const { parser, limits } = options;
  const tools = parser.tools;
  const free = rules.shared('free', () => avoid(...markup.markers));
  const open = markup.afterOpen ? seq(special(markup.callOpen), markup.afterOpen) : special(markup.callOpen);
  const one =
    tools.length > 0 ? rules.define('call', alt(...tools.map((tool) => markup.call(rules, tool, limits)))) : undefined;
  const group = markup.group;
  // The rest of a call block after its first call (nothing when calls are not grouped).
  const blockTail = group && one ? seq(rep(seq(special(group.callBegin), one), 0, -1), special(group.end)) : text('');
  const anyCall = group && one ? seq(special(group.callBegin), one, blockTail) : one;
  const moreCalls = anyCall ? rep(seq(WS, open, anyCall), 0, -1) : text('');

  if (parser.startInToolCall) {
    const tool = tools.find((t) => t.name === parser.startInToolCall!.name);
    const first = tool
      ? markup.afterName(rules, tool, limits)
      : group?.requiredOpensBlock && one
        ? seq(markup.afterOpen ?? text(''), special(group.callBegin), one)
        : (one ?? text(''));
    return rules.grammar(seq(first, blockTail, moreCalls, WS));
  }

  let answer: Expr;
  let callAnswer: Expr | undefined;
  if (options.json) {
    const schema = options.json.schema;
    answer = seq(schema ? jsonSchemaValue(rules, schema, limits) : anyObject(rules), WS);
    if (anyCall) {
      callAnswer = seq(open, anyCall, moreCalls, WS);
      answer = alt(answer, callAnswer);
    }
  } else {
    answer = rules.define('answer', anyCall ? seq(free, rep(seq(open, anyCall, free), 0, -1)) : free);
    if (anyCall) callAnswer = seq(open, anyCall, answer);
  }
  const closeThink = seq(special(markup.thinkEnd), WS, answer);
  const afterReasoning = callAnswer ? alt(closeThink, callAnswer) : closeThink;
  if (parser.startInReasoning) return rules.grammar(seq(free, afterReasoning));
  return rules.grammar(
    alt(seq(WS, special(markup.think), free, afterReasoning), seq(WS, opt(special(markup.thinkEnd)), WS, answer)),
  );
}

/** A non-strict parameter keeps only its declared types (array item types included). */
export function typesOnly(s: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.type !== undefined) out.type = s.type;
  if (Array.isArray(s.anyOf)) out.anyOf = s.anyOf.map((b) => typesOnly((b ?? {}) as Record<string, unknown>));
  if (s.items && typeof s.items === 'object') out.items = typesOnly(s.items as Record<string, unknown>);
  return out;
}

/**
 * A call's arguments as one JSON object: strict tools follow their full schema; others their
 * declared keys in schema order (required ones present) with the declared types.
 */
export function argumentsGrammar(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr {
  if (tool.strict) return jsonSchemaValue(rules, tool.parameters, limits);
  const { entries, required } = toolParameters(tool);
  if (entries.length === 0) return text('{}');
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: [...required],
    properties: Object.fromEntries(entries.map(([key, s]) => [key, typesOnly((s ?? {}) as Record<string, unknown>)])),
  };
  return jsonSchemaValue(rules, schema, limits);
}

/** Declared properties of a tool, in schema order, and which are required. */
export function toolParameters(tool: ToolSpec): { entries: Array<[string, unknown]>; required: Set<string> } {
  const props = tool.parameters.properties;
  const entries = props && typeof props === 'object' ? Object.entries(props as Record<string, unknown>) : [];
  return {
    entries,
    required: new Set(Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : []),
  };
}
