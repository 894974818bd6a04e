/**
 * The GLM markup (one definition for glm.ts's parser and for constrained decoding) and the
 * grammar of GLM output a request allows:
 *
 *   ws [<think>R</think> | </think>] ws ANSWER    (R free; prompt ending `<think>`: R</think> ws ANSWER;
 *                                                 R may also end at a call, as the parser allows)
 *   ANSWER: TEXT (<tool_call>CALL TEXT)*  |  JSON ws  |  (<tool_call>CALL ws)+ when JSON is asked and tools are allowed
 *   CALL:   NAME [\n] (<arg_key>KEY</arg_key>[\n]<arg_value>VALUE</arg_value>[\n])* </tool_call>
 *
 * TEXT and R never spell a marker out in plain bytes (the parser would read it as markup);
 * NAME is a declared tool, KEYs its parameters in schema order (required ones present), and a
 * VALUE is raw text for a string parameter (or one of its enum values) and JSON of the parameter
 * schema otherwise (strict tools: the full schema; others: the declared types).
 */
import { RuleSet, alt, avoid, opt, rep, seq, special, text, type Expr, type Grammar } from '../grammar/grammar.ts';
import { anyObject, jsonSchemaValue, type JsonLimits } from '../grammar/json-schema.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';

export const THINK = '<think>';
export const THINK_END = '</think>';
export const CALL = '<tool_call>';
export const CALL_END = '</tool_call>';
export const KEY = '<arg_key>';
export const KEY_END = '</arg_key>';
export const VALUE = '<arg_value>';
export const VALUE_END = '</arg_value>';
/** `generation_config.json` eos ids of GLM-4.x: `<|endoftext|>`, `<|user|>`, `<|observation|>`. */
export const GLM_STOP_TOKENS = ['<|endoftext|>', '<|user|>', '<|observation|>'] as const;

const MARKERS = [THINK, THINK_END, CALL, CALL_END, KEY, KEY_END, VALUE, VALUE_END, ...GLM_STOP_TOKENS];
const WS = rep(alt(text('\n'), text(' ')), 0, 2);
const NL = opt(text('\n'));

export function glmOutputGrammar(options: GrammarOptions): Grammar {
  const rules = new RuleSet();
  const { parser } = options;
  const tools = parser.tools;
  const free = rules.shared('glm.free', () => avoid(...MARKERS));
  const limits = options.limits;
  const anyCall = tools.length > 0 ? rules.define('call', alt(...tools.map((tool) => seq(text(tool.name), callBody(rules, tool, limits))))) : undefined;
  const moreCalls = anyCall ? rep(seq(WS, special(CALL), anyCall), 0, -1) : text('');

  if (parser.startInToolCall) {
    const named = parser.startInToolCall.name;
    const tool = tools.find((t) => t.name === named);
    const first = named !== undefined && tool ? callBody(rules, tool, limits) : anyCall ?? text('');
    return rules.grammar(seq(first, moreCalls, WS));
  }

  let answer: Expr;
  let callAnswer: Expr | undefined;
  if (options.json) {
    const schema = options.json.schema;
    answer = seq(schema ? jsonSchemaValue(rules, schema, limits) : anyObject(rules), WS);
    if (anyCall) {
      callAnswer = seq(special(CALL), anyCall, moreCalls, WS);
      answer = alt(answer, callAnswer);
    }
  } else {
    answer = rules.define('answer', anyCall ? seq(free, rep(seq(special(CALL), anyCall, free), 0, -1)) : free);
    if (anyCall) callAnswer = seq(special(CALL), anyCall, answer);
  }
  // Reasoning ends at </think>, or (as the parser allows) at a call.
  const afterReasoning = callAnswer ? alt(seq(special(THINK_END), WS, answer), callAnswer) : seq(special(THINK_END), WS, answer);
  if (parser.startInReasoning) return rules.grammar(seq(free, afterReasoning));
  return rules.grammar(alt(seq(WS, special(THINK), free, afterReasoning), seq(WS, opt(special(THINK_END)), WS, answer)));
}

function callBody(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr {
  const props = tool.parameters.properties;
  const entries = props && typeof props === 'object' ? Object.entries(props as Record<string, unknown>) : [];
  const required = new Set(Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : []);
  const args = entries.map(([key, schema]) => {
    const arg = seq(special(KEY), text(key), special(KEY_END), NL, special(VALUE), argValue(rules, schema, tool.strict === true, limits), special(VALUE_END), NL);
    return required.has(key) ? arg : opt(arg);
  });
  return seq(NL, ...args, special(CALL_END));
}

/** A parameter value as GLM writes it (see arg-typing.ts: strings raw, the rest JSON). */
function argValue(rules: RuleSet, schema: unknown, strict: boolean, limits?: JsonLimits): Expr {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Record<string, unknown>;
  if (s.type === 'string') {
    if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string' && v.trim() === v && v !== '')) return alt(...s.enum.map((v) => text(v as string)));
    return rules.shared('glm.rawValue', () => avoid(...MARKERS));
  }
  return jsonSchemaValue(rules, strict ? s : typesOnly(s), limits);
}

/** A non-strict parameter keeps only its declared types (nested properties stay declared). */
function typesOnly(s: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.type !== undefined) out.type = s.type;
  if (Array.isArray(s.anyOf)) out.anyOf = s.anyOf.map((b) => typesOnly((b ?? {}) as Record<string, unknown>));
  if (s.items && typeof s.items === 'object') out.items = typesOnly(s.items as Record<string, unknown>);
  return out;
}
