/**
 * The Qwen/Hermes markup (shared by hermes.ts's parser and constrained decoding) and its output
 * grammar, in the shape of output-grammar.ts with
 *
 *   CALL: [\n] {"name": "NAME", "arguments": ARGS} [\n] </tool_call>
 *
 * NAME a declared tool; ARGS JSON of the tool's parameters (strict tools: the full schema; others:
 * the declared keys in schema order with their declared types, required ones present). The name
 * comes first, as the template's instructions show (the parser also reads other key orders).
 */
import { opt, rep, seq, special, text, type Expr, type Grammar, type RuleSet } from '../grammar/grammar.ts';
import type { JsonLimits } from '../grammar/json-schema.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';
import { argumentsGrammar, outputGrammar, type DialectMarkup } from './output-grammar.ts';

export const THINK = '<think>';
export const THINK_END = '</think>';
export const CALL = '<tool_call>';
export const CALL_END = '</tool_call>';
/** Qwen turn ends (`<|im_end|>`) and end of text. */
export const QWEN_STOP_TOKENS = ['<|im_end|>', '<|endoftext|>'] as const;

const NL = rep(text('\n'), 0, 2);
const SPACE = opt(text(' '));

function hermesMarkup(stops: readonly string[], hasCalls: boolean): DialectMarkup {
  return {
    think: THINK,
    thinkEnd: THINK_END,
    callOpen: CALL,
    markers: hasCalls ? [THINK, THINK_END, CALL, CALL_END, ...stops] : [THINK, THINK_END, ...stops],
    call: (rules, tool, limits) =>
      seq(
        NL,
        text('{"name":'),
        SPACE,
        text(JSON.stringify(tool.name)),
        text(','),
        SPACE,
        text('"arguments":'),
        SPACE,
        afterArgs(rules, tool, limits),
      ),
    afterName: afterArgs,
  };
}

function afterArgs(rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr {
  return seq(argumentsGrammar(rules, tool, limits), text('}'), NL, special(CALL_END));
}

export function qwenOutputGrammar(options: GrammarOptions): Grammar {
  return outputGrammar(hermesMarkup(QWEN_STOP_TOKENS, true), options);
}

/** `plain`: reasoning and text (and JSON answers); it has no tool calls. */
export function plainOutputGrammar(stops: readonly string[], options: GrammarOptions): Grammar {
  return outputGrammar(hermesMarkup(stops, false), { ...options, parser: { ...options.parser, tools: [] } });
}
