/** Plain-text requests never load the JSON-schema validator (ajv is imported on first use). */
import { describe, expect, it } from 'vitest';
import { normaliseInput } from '../../responses/input-history.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { isValidatorLoaded } from '../../responses/structured-output.ts';
import { scriptedRuntime } from './scripted-runtime.ts';

describe('validator loading', () => {
  it('stays unloaded for text and tool requests, loads for json_schema', () => {
    const runtime = scriptedRuntime([]);
    planResponse(runtime, { input: 'x' } as never, normaliseInput('x'), 0);
    planResponse(
      runtime,
      {
        text: { format: { type: 'text' } },
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} } }],
      },
      normaliseInput('x'),
      0,
    );
    expect(isValidatorLoaded()).toBe(false);
    planResponse(
      runtime,
      { text: { format: { type: 'json_schema', name: 'n', schema: { type: 'object' } } } },
      normaliseInput('x'),
      0,
    );
    expect(isValidatorLoaded()).toBe(true);
  });
});
