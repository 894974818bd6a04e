/**
 * What Maya's Responses pipeline actually emits, checked against the contract: every SSE event
 * of real runs (text with reasoning, a function call, an output-limit cut, an engine failure, a
 * strict-tool failure, structured output) validates against ResponseStreamEvent, each final
 * Response against Response, and each output list is valid input for the next request.
 */
import { describe, expect, it } from 'vitest';
import { normaliseInput } from '../../responses/input-history.ts';
import { newResponseObject, type ResponseObject } from '../../responses/response-object.ts';
import { planResponse, type PlanRequest } from '../../responses/response-plan.ts';
import { runResponse } from '../../responses/run-response.ts';
import type { StreamEvent } from '../../contract/stream-events.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';
import { errorsOf, schemaValidator } from './contract-schemas.ts';

const WEATHER = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const CALL = ['<tool_call>', 'get_weather', '\n', '<arg_key>', 'city', '</arg_key>', '\n', '<arg_value>', 'Paris', '</arg_value>', '\n', '</tool_call>'];
const FORMAT = { type: 'json_schema', name: 'count', strict: true, schema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false } };

type Script = { pieces: string[]; finishReason?: 'stop' | 'length' | 'error' };

async function run(script: Script, request: PlanRequest & { input: string }): Promise<{ events: StreamEvent[]; response: ResponseObject }> {
  const runtime = scriptedRuntime([script]);
  const plan = planResponse(runtime, request, normaliseInput(request.input), 0);
  const generator = runResponse(runtime, plan, newResponseObject(request, 'resp_contract', runtime.id, 'in_progress'));
  const events: StreamEvent[] = [];
  let step = await generator.next();
  for (; !step.done; step = await generator.next()) events.push(step.value);
  return { events, response: step.value };
}

const cases: Array<[string, Script, PlanRequest & { input: string }, string]> = [
  ['reasoning then text', { pieces: ['<think>', 'The user', ' greets.', '</think>', '\n', 'Hello', ' there!', '<|user|>'] }, { input: 'Hello' }, 'completed'],
  ['a function call', { pieces: ['\n', ...CALL, '<|observation|>'] }, { input: 'Weather?', tools: [WEATHER], reasoning: { effort: 'none' } }, 'completed'],
  ['an output-limit cut', { pieces: ['\n', 'One', ' two', ' three', ' four'] }, { input: 'Count', max_output_tokens: 3, reasoning: { effort: 'none' } }, 'incomplete'],
  ['an engine failure', { pieces: ['\n', 'Hi'], finishReason: 'error' }, { input: 'Hello', reasoning: { effort: 'none' } }, 'failed'],
  ['an undeclared function', { pieces: ['\n', '<tool_call>', 'rm_rf', '\n', '</tool_call>', '<|observation|>'] }, { input: 'x', tools: [WEATHER], reasoning: { effort: 'none' } }, 'failed'],
  ['structured output', { pieces: ['\n', '{"count"', ': 3}', '<|user|>'] }, { input: 'Count', text: { format: FORMAT }, reasoning: { effort: 'none' } }, 'completed'],
  ['invalid structured output', { pieces: ['\n', '{"count"', ': "x"}', '<|user|>'] }, { input: 'Count', text: { format: FORMAT }, reasoning: { effort: 'none' } }, 'failed'],
];

describe('the Responses pipeline against the contract', () => {
  it.each(cases)('%s: every event, the final Response and its replay validate', async (_label, script, request, status) => {
    const { events, response } = await run(script, request);
    expect(response.status).toBe(status);
    const eventSchema = schemaValidator('ResponseStreamEvent');
    for (const event of events) expect(eventSchema(event), `${event.type}: ${errorsOf(eventSchema)}`).toBe(true);
    const responseSchema = schemaValidator('Response');
    expect(responseSchema(response), errorsOf(responseSchema)).toBe(true);
    const createSchema = schemaValidator('CreateResponse');
    const replay = { input: [{ role: 'user', content: request.input }, ...response.output], tools: request.tools };
    expect(createSchema(replay), errorsOf(createSchema)).toBe(true);
  });
});
