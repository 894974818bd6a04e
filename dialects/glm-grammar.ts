/**
 * The GLM markup (one definition for glm.ts's parser and for constrained decoding) and the
 * grammar of GLM output a request allows, in the shape of output-grammar.ts with
 *
 *   CALL:   NAME [\n] (<arg_key>KEY</arg_key>[\n]<arg_value>VALUE</arg_value>[\n])* </tool_call>
 *
 * TEXT and R never spell a marker out in plain bytes (the parser would read it as markup);
 * NAME is a declared tool, KEYs its parameters in schema order (required ones present), and a
 * VALUE is raw text for a string parameter (or one of its enum values) and JSON of the parameter
 * schema otherwise (strict tools: the full schema; others: the declared types).
 */
import { alt, avoid, opt, seq, special, text, type Expr, type Grammar, type RuleSet } from '../grammar/grammar.ts';
import { jsonSchemaValue, type JsonLimits } from '../grammar/json-schema.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';
import { outputGrammar, toolParameters, typesOnly, type DialectMarkup } from './output-grammar.ts';

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
const NL = opt(text('\n'));

const GLM_MARKUP: DialectMarkup = {
  think: THINK,
  thinkEnd: THINK_END,
  callOpen: CALL,
  markers: MARKERS,
  call: (rules, tool, limits) => seq(text(tool.name), callBody(rules, tool, limits)),
  afterName: callBody,
};

export function glmOutputGrammar(options: GrammarOptions): Grammar {
  return outputGrammar(GLM_MARKUP, options);
}

function callBody(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr {
  const { entries, required } = toolParameters(tool);
  const args = entries.map(([key, schema]) => {
    const arg = seq(
      special(KEY),
      text(key),
      special(KEY_END),
      NL,
      special(VALUE),
      argValue(rules, schema, tool.strict === true, limits),
      special(VALUE_END),
      NL,
    );
    return required.has(key) ? arg : opt(arg);
  });
  return seq(NL, ...args, special(CALL_END));
}

/** A parameter value as GLM writes it (see arg-typing.ts: strings raw, the rest JSON). */
function argValue(rules: RuleSet, schema: unknown, strict: boolean, limits?: JsonLimits): Expr {
  const s = (schema && typeof schema === 'object' ? schema : {}) as Record<string, unknown>;
  if (s.type === 'string') {
    if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string' && v.trim() === v && v !== ''))
      return alt(...s.enum.map((v) => text(v as string)));
    return rules.shared('glm.rawValue', () => avoid(...MARKERS));
  }
  return jsonSchemaValue(rules, strict ? s : typesOnly(s), limits);
}
