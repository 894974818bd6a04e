import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';

describe('MAYA_WEIGHT_DTYPE', () => {
  it('unset or empty keeps the weights as stored', () => {
    expect(loadServerSettings({}).weightDtype).toBeUndefined();
    expect(loadServerSettings({ MAYA_WEIGHT_DTYPE: '' }).weightDtype).toBeUndefined();
  });

  it('accepts q8 and stored', () => {
    expect(loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q8' }).weightDtype).toBe('q8');
    expect(loadServerSettings({ MAYA_WEIGHT_DTYPE: 'stored' }).weightDtype).toBe('stored');
  });

  it('refuses anything else, naming the variable and the choices', () => {
    expect(() => loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q4' })).toThrow(SettingsError);
    expect(() => loadServerSettings({ MAYA_WEIGHT_DTYPE: 'q4' })).toThrow(
      /MAYA_WEIGHT_DTYPE=q4: must be one of stored, q8/,
    );
  });
});
