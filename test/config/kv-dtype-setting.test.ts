import { describe, expect, it } from 'vitest';
import { loadEngineSettings } from '../../config/engine-settings.ts';
import { SettingsError } from '../../config/settings.ts';
import { ENG, encodeParams } from '../../engine-cuda/ffi.ts';

describe('MAYA_KV_DTYPE', () => {
  it('unset or empty leaves the engine its default (ENG_PARAM_KV_DTYPE 0)', () => {
    expect(loadEngineSettings({}).kvDtype).toBeUndefined();
    expect(loadEngineSettings({ MAYA_KV_DTYPE: '' }).kvDtype).toBeUndefined();
    expect(encodeParams(loadEngineSettings({}))[ENG.PARAM_KV_DTYPE]).toBe(0n);
  });

  it('names each row format, encoded as 1 + ENG_KV_DTYPE_*', () => {
    const want = { auto: 0, f32: 1, f16: 2, bf16: 3, q8_0: 9 } as const;
    for (const [name, code] of Object.entries(want)) {
      const settings = loadEngineSettings({ MAYA_KV_DTYPE: name });
      expect(settings.kvDtype).toBe(name);
      expect(encodeParams(settings)[ENG.PARAM_KV_DTYPE]).toBe(BigInt(code));
    }
  });

  it('refuses anything else, naming the variable and the choices', () => {
    expect(() => loadEngineSettings({ MAYA_KV_DTYPE: 'q4_0' })).toThrow(SettingsError);
    expect(() => loadEngineSettings({ MAYA_KV_DTYPE: 'q4_0' })).toThrow(
      /MAYA_KV_DTYPE=q4_0: must be one of auto, f32, bf16, f16, q8_0/,
    );
  });
});
