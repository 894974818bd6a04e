/**
 * The per-request constraint planResponse compiles (responses/response-plan.ts): present only when
 * the runtime constrains (MAYA_CONSTRAINED_DECODING) and the dialect has a grammar; built from the
 * tools tool_choice allows and the text format; stop ids allowed only at its end.
 */
import { describe, expect, it } from 'vitest';
import { CompiledGrammar } from '../../grammar/matcher.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { planResponse, type PlanRequest } from '../../responses/response-plan.ts';
import { scriptedRuntime } from './scripted-runtime.ts';

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

function plan(request: PlanRequest & { input: string }, constrainedDecoding = true) {
  const runtime = { ...scriptedRuntime([]), constrainedDecoding };
  return planResponse(runtime, request, normaliseInput(request.input), 0);
}
const admits = (p: ReturnType<typeof plan>, text: string) =>
  new CompiledGrammar(p.constraint!.grammar, new Map()).createRun().matches(text);
const CALL = '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>';

describe('request constraint', () => {
  it('absent when the runtime does not constrain', () => {
    expect(plan({ input: 'Hi' }, false).constraint).toBeUndefined();
    expect(plan({ input: 'Hi' }).constraint?.stopIds).toEqual(plan({ input: 'Hi' }).stopIds);
  });

  it('tool_choice decides which calls the grammar admits', () => {
    expect(admits(plan({ input: 'Hi', tools: [WEATHER] as never }), `\n<think>x</think>\nOk.\n${CALL}`)).toBe(true);
    expect(
      admits(plan({ input: 'Hi', tools: [WEATHER] as never, tool_choice: 'none' }), `\n<think>x</think>\nOk.\n${CALL}`),
    ).toBe(false);
    expect(admits(plan({ input: 'Hi' }), `Ok.\n${CALL}`)).toBe(false);
    const named = plan({
      input: 'Hi',
      tools: [WEATHER] as never,
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(admits(named, '<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>')).toBe(true);
    expect(admits(named, 'Sure!')).toBe(false);
  });

  it('text.format json_schema / json_object constrain the answer after free reasoning', () => {
    const schema = plan({
      input: 'Hi',
      text: {
        format: {
          type: 'json_schema',
          name: 'n',
          schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
        },
      },
    });
    expect(admits(schema, '\n<think>any</think>\n{"n": 2}')).toBe(true);
    expect(admits(schema, '\n<think>any</think>\nThe answer is {"n": 2}')).toBe(false);
    const object = plan({ input: 'Hi', text: { format: { type: 'json_object' } } });
    expect(admits(object, '{"anything": [true]}')).toBe(true);
    expect(admits(object, '"just a string"')).toBe(false);
  });
});
