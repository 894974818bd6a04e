/**
 * The DeepSeek-V3.1 markup (shared by deepseek.ts's parser and constrained decoding) and its
 * output grammar, in the shape of output-grammar.ts with calls in a block:
 *
 *   <｜tool▁calls▁begin｜>(<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>)+<｜tool▁calls▁end｜>
 *
 * NAME a declared tool, ARGS one JSON object of its parameters (output-grammar.ts
 * argumentsGrammar). The parser's tolerated misspellings of the block opener are never generated.
 */
import { seq, special, text, type Expr, type Grammar, type RuleSet } from '../grammar/grammar.ts';
import type { JsonLimits } from '../grammar/json-schema.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';
import { argumentsGrammar, outputGrammar, type DialectMarkup } from './output-grammar.ts';

export const DEEPSEEK_EOS = '<｜end▁of▁sentence｜>';
export const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
export const CALLS_END = '<｜tool▁calls▁end｜>';
export const CALL_BEGIN = '<｜tool▁call▁begin｜>';
export const CALL_END = '<｜tool▁call▁end｜>';
export const SEP = '<｜tool▁sep｜>';
export const THINK = '<think>';
export const THINK_END = '</think>';
/** Misspellings of the calls-begin token that the model is known to produce (llama.cpp
 * `common_chat_params_init_deepseek_v3_1` accepts the same set). */
export const CALLS_BEGIN_VARIANTS = ['<｜tool_calls_begin｜>', '<｜tool calls begin｜>', '<｜tool▁calls｜>'];

function afterName(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr {
  return seq(argumentsGrammar(rules, tool, limits), special(CALL_END));
}

const V31_MARKUP: DialectMarkup = {
  think: THINK,
  thinkEnd: THINK_END,
  callOpen: CALLS_BEGIN,
  markers: [THINK, THINK_END, CALLS_BEGIN, ...CALLS_BEGIN_VARIANTS, CALLS_END, CALL_BEGIN, CALL_END, SEP, DEEPSEEK_EOS],
  call: (rules, tool, limits) => seq(text(tool.name), special(SEP), afterName(rules, tool, limits)),
  afterName,
  group: { callBegin: CALL_BEGIN, end: CALLS_END },
};

export function deepseekV31OutputGrammar(options: GrammarOptions): Grammar {
  return outputGrammar(V31_MARKUP, options);
}
