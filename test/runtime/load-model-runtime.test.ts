/**
 * loadModelRuntime takes its settings from its options only (config/ parsed them once): the
 * constrained-decoding switch and soft limits, and the engine's creation options. Variables in
 * the environment change nothing; unset options take config/'s defaults (DEFAULT_DECODING_SETTINGS).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { engineOptions } from '../../config/engine-settings.ts';
import { DEFAULT_DECODING_SETTINGS, loadServerSettings } from '../../config/settings.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

const DEMO = join(import.meta.dirname, '../../models/maya-demo');
/** Values that the runtime used to read from the environment when an option was unset. */
const STRAY_ENV = {
  MAYA_CONSTRAINED_DECODING: '0',
  MAYA_GRAMMAR_MAX_STRING: '7',
  MAYA_GRAMMAR_MAX_ITEMS: '3',
  MAYA_WEIGHT_DTYPE: 'q8',
};

let runtime: ModelRuntime | undefined;
const saved = new Map<string, string | undefined>();
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  saved.clear();
});

function setStrayEnv(): void {
  for (const [name, value] of Object.entries(STRAY_ENV)) {
    saved.set(name, process.env[name]);
    process.env[name] = value;
  }
}

describe('loadModelRuntime', () => {
  it('unset options take config/ defaults, whatever the environment says', async () => {
    setStrayEnv();
    runtime = await loadModelRuntime(DEMO, { engine: TEST_ENGINE });
    expect(runtime.constrainedDecoding).toBe(DEFAULT_DECODING_SETTINGS.constrained);
    expect(runtime.grammarLimits).toEqual({
      maxStringLength: DEFAULT_DECODING_SETTINGS.maxString,
      maxItems: DEFAULT_DECODING_SETTINGS.maxItems,
    });
    expect(runtime.engine.info.weightDtype).toBe('bf16'); // the demo model's weights as stored
  });

  it('the options it is given reach the runtime and the engine', async () => {
    runtime = await loadModelRuntime(DEMO, {
      constrainedDecoding: false,
      grammarLimits: { maxStringLength: 40, maxItems: 0 },
      engine: { ...TEST_ENGINE, simd: 'scalar', weightDtype: 'q8' },
    });
    expect(runtime.constrainedDecoding).toBe(false);
    expect(runtime.grammarLimits).toEqual({ maxStringLength: 40, maxItems: 0 });
    expect(runtime.engine.info).toMatchObject({ simd: 'scalar', weightDtype: 'q8' });
  });

  it('MAYA_WEIGHT_DTYPE=q4_k_m quantizes the demo model at load to the Q4_K_M mixture, with an f16 KV cache', async () => {
    const server = loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q4_k_m' });
    runtime = await loadModelRuntime(DEMO, {
      engine: { ...TEST_ENGINE, ...engineOptions(undefined, server.weightDtype) },
    });
    expect(runtime.engine.info).toMatchObject({ weightDtype: 'q4_k', kvDtype: 'f16' });
  });
});
