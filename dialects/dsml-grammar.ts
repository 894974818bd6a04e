/**
 * The output grammar of the DSML dialects (DeepSeek V3.2 / V4 / V4.1), from the same tags
 * dsml.ts's parser reads (passed in, so both use one definition), in the shape of
 * output-grammar.ts with calls in a block:
 *
 *   <｜DSML｜B>\n (<｜DSML｜I name="NAME">\n (<｜DSML｜P name="K" string="true|false">V</｜DSML｜P>\n)* </｜DSML｜I>\n)+ </｜DSML｜B>
 *
 * NAME a declared tool; its parameters in schema order (required ones present); string-typed
 * parameters raw text (`string="true"`, or one of the enum values), others JSON (`string="false"`)
 * of the schema (strict) or the declared types. The tags are plain text, not special tokens.
 */
import { alt, avoid, opt, rep, seq, text, type Expr, type Grammar, type RuleSet } from '../grammar/grammar.ts';
import { jsonSchemaValue, type JsonLimits } from '../grammar/json-schema.ts';
import { DEEPSEEK_EOS, THINK, THINK_END } from './deepseek-grammar.ts';
import type { GrammarOptions, ToolSpec } from './dialect.ts';
import { outputGrammar, toolParameters, typesOnly, type DialectMarkup } from './output-grammar.ts';

/** [block open, block close, invoke open (attributes follow), invoke close, param open, param close]. */
export type DsmlTagList = readonly [string, string, string, string, string, string];

const NL = rep(text('\n'), 0, 2);

export function dsmlOutputGrammar(tags: DsmlTagList, options: GrammarOptions): Grammar {
  const [blockOpen, blockClose, invokeOpen, invokeClose, paramOpen, paramClose] = tags;
  const value = (rules: RuleSet, schema: unknown, strict: boolean, limits?: JsonLimits): Expr => {
    const s = (schema && typeof schema === 'object' ? schema : {}) as Record<string, unknown>;
    if (s.type === 'string') {
      const raw =
        Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string' && v !== '')
          ? alt(...s.enum.map((v) => text(v as string)))
          : rules.shared('dsml.raw', () => avoid(paramClose, DEEPSEEK_EOS));
      return seq(text(' string="true">'), raw);
    }
    return seq(text(' string="false">'), jsonSchemaValue(rules, strict ? s : typesOnly(s), limits));
  };
  const afterName = (rules: RuleSet, tool: ToolSpec, limits?: JsonLimits): Expr => {
    const { entries, required } = toolParameters(tool);
    const params = entries.map(([key, schema]) => {
      const param = seq(
        text(`${paramOpen} name="${key}"`),
        value(rules, schema, tool.strict === true, limits),
        text(paramClose),
        NL,
      );
      return required.has(key) ? param : opt(param);
    });
    return seq(NL, ...params, text(invokeClose), NL);
  };
  const markup: DialectMarkup = {
    think: THINK,
    thinkEnd: THINK_END,
    callOpen: blockOpen,
    markers: [THINK, THINK_END, blockOpen, DEEPSEEK_EOS],
    call: (rules, tool, limits) => seq(text(` name="${tool.name}">`), afterName(rules, tool, limits)),
    afterName,
    group: { callBegin: invokeOpen, end: blockClose, requiredOpensBlock: true },
    afterOpen: NL,
  };
  return outputGrammar(markup, options);
}
