import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';

describe('MAYA_WEIGHT_DTYPE', () => {
  it('unset or empty keeps the weights as stored', () => {
    expect(loadServerSettings({}).weightDtype).toBeUndefined();
    expect(loadServerSettings({ MAYA_WEIGHT_DTYPE: '' }).weightDtype).toBeUndefined();
  });

  it('accepts stored, q8 and the llama.cpp mixtures', () => {
    for (const value of ['stored', 'q8', 'q4_k_m', 'q4_0', 'q6_k', 'q8_0']) {
      expect(loadServerSettings({ MAYA_WEIGHT_DTYPE: value }).weightDtype).toBe(value);
    }
  });

  it('refuses anything else, naming the variable and the choices', () => {
    expect(() => loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q4' })).toThrow(SettingsError);
    expect(() => loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q4' })).toThrow(
      /MAYA_WEIGHT_DTYPE=q4: must be one of stored, q8, q4_k_m, q4_0, q6_k, q8_0/,
    );
  });
});
