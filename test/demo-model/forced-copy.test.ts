/**
 * A forced call copies the value it is given (issue 39): through the real service (native engine on
 * the embedded demo checkpoint, GLM-4.5 dialect, constrained decoding as `npm start` has it), a
 * request that names a value and the tool_choice that names the tool must produce a call whose
 * argument is exactly that value. The third edition answered "Look up alpha" with
 * lookup({"name":"Rosa"}) (in this test: "Rossi"): a name from its training pools. It passes 4 of these 10.
 *
 * The values are ones the model cannot have memorised: "alpha" and strings no training pool holds,
 * three of them from the evaluation's held-out value families (version numbers and dotted
 * identifiers, pools.HELD_FAMILIES), which no training text contains (heldout.test.ts). The tool and
 * parameter names are the user's own. The cases were written before the fourth edition was trained.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';

let demo: DemoService;

beforeAll(async () => {
  demo = await startDemoService([], { constrainedDecoding: true });
}, 120_000);
afterAll(async () => {
  await demo?.stop();
});

const CASES: { input: string; tool: string; param: string; value: string }[] = [
  { input: 'Look up alpha', tool: 'lookup', param: 'name', value: 'alpha' },
  { input: 'Look up v2.14.7', tool: 'lookup', param: 'name', value: 'v2.14.7' },
  { input: 'Search for bravo kilo', tool: 'search', param: 'query', value: 'bravo kilo' },
  { input: 'Resolve io.kappa.nimbus', tool: 'resolve_host', param: 'hostname', value: 'io.kappa.nimbus' },
  { input: 'Find ulla.brenk@quodex.net', tool: 'find_contact', param: 'email', value: 'ulla.brenk@quodex.net' },
  { input: 'Delete /var/tmp/zebra-notes.txt', tool: 'delete_file', param: 'path', value: '/var/tmp/zebra-notes.txt' },
  { input: 'Track parcel QX-90417', tool: 'track_parcel', param: 'tracking_code', value: 'QX-90417' },
  { input: 'Say hello to Mondegreen Ashby', tool: 'greet', param: 'person', value: 'Mondegreen Ashby' },
  { input: 'Check release 7.0.12', tool: 'check_release', param: 'tag', value: '7.0.12' },
  { input: 'Rename the project to Zyxwv', tool: 'rename_project', param: 'new_name', value: 'Zyxwv' },
];

const toolOf = (name: string, param: string): OpenAI.Responses.FunctionTool => ({
  type: 'function',
  name,
  strict: true,
  parameters: {
    type: 'object',
    properties: { [param]: { type: 'string' } },
    required: [param],
    additionalProperties: false,
  },
});

describe('a forced call copies the value it was given (real service, demo model)', () => {
  it.each(CASES)(
    '$input -> $tool({"$param": "$value"})',
    async ({ input, tool, param, value }) => {
      const r = await demo.client.responses.create({
        model: 'maya-demo',
        input,
        tools: [toolOf(tool, param)],
        tool_choice: { type: 'function', name: tool },
        temperature: 0,
        store: false,
        max_output_tokens: 100,
      });
      expect(r.status, JSON.stringify(r.error)).toBe('completed');
      const calls = r.output.filter((item) => item.type === 'function_call');
      expect(calls.map((c) => c.name)).toEqual([tool]);
      expect(JSON.parse(calls[0]!.arguments)).toEqual({ [param]: value });
    },
    60_000,
  );
});
