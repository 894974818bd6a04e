import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';

describe('MAYA_WEB', () => {
  it('unset, empty or on keeps the web page (no field: the default)', () => {
    expect(loadServerSettings({}).web).toBeUndefined();
    expect(loadServerSettings({ MAYA_WEB: '' }).web).toBeUndefined();
    expect(loadServerSettings({ MAYA_WEB: 'on' }).web).toBeUndefined();
  });

  it('off (any case) turns it off', () => {
    expect(loadServerSettings({ MAYA_WEB: 'off' }).web).toBe(false);
    expect(loadServerSettings({ MAYA_WEB: ' OFF ' }).web).toBe(false);
  });

  it('refuses anything else, naming the variable and the rule', () => {
    expect(() => loadServerSettings({ MAYA_WEB: '0' })).toThrow(SettingsError);
    expect(() => loadServerSettings({ MAYA_WEB: 'no' })).toThrow(/MAYA_WEB=no: must be on or off/);
  });
});
