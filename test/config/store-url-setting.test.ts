import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';

describe('MAYA_STORE_URL', () => {
  it('unset or empty keeps the in-memory store', () => {
    expect(loadServerSettings({}).storeUrl).toBeUndefined();
    expect(loadServerSettings({ MAYA_STORE_URL: ' ' }).storeUrl).toBeUndefined();
  });

  it('accepts redis:// and rediss:// URLs', () => {
    expect(loadServerSettings({ MAYA_STORE_URL: 'redis://127.0.0.1:6379/2' }).storeUrl).toBe(
      'redis://127.0.0.1:6379/2',
    );
    expect(loadServerSettings({ MAYA_STORE_URL: 'rediss://user:pw@cache.internal:6380' }).storeUrl).toBe(
      'rediss://user:pw@cache.internal:6380',
    );
  });

  it('refuses anything else, naming the variable and never echoing the value (it may hold a password)', () => {
    for (const value of ['http://x', 'localhost:6379', 'redis//pw@host']) {
      let error: unknown;
      try {
        loadServerSettings({ MAYA_STORE_URL: value });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(SettingsError);
      expect((error as SettingsError).variable).toBe('MAYA_STORE_URL');
      expect((error as Error).message).toContain('redis://');
      expect((error as Error).message).not.toContain(value);
    }
  });
});
