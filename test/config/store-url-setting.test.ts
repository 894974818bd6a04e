import { describe, expect, it } from 'vitest';
import { loadServerSettings, SettingsError } from '../../config/settings.ts';
import { parseStoreUrl } from '../../config/store-url.ts';

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

  it('accepts the Redis Sentinel form: Sentinels, master name, database, credentials', () => {
    const url = 'redis+sentinel://app:s%40cret@10.0.0.1:26380,sentinel-b,[::1]:26381/cache-main/2?sentinel_password=sp';
    expect(loadServerSettings({ MAYA_STORE_URL: url }).storeUrl).toBe(url);
    expect(parseStoreUrl(url)).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26380 },
        { host: 'sentinel-b', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'cache-main',
      db: 2,
      username: 'app',
      password: 's@cret',
      sentinelPassword: 'sp',
      tls: false,
    });
    expect(parseStoreUrl('rediss+sentinel://h/m')).toMatchObject({ kind: 'sentinel', name: 'm', db: 0, tls: true });
    expect(parseStoreUrl('redis://127.0.0.1:6379/2')).toEqual({ kind: 'redis', url: 'redis://127.0.0.1:6379/2' });
  });

  it('MAYA_STORE_WAIT_REPLICAS: unset is 1 with Sentinel and 0 (absent) otherwise, else an integer >= 0', () => {
    expect(loadServerSettings({}).storeWaitReplicas).toBeUndefined();
    expect(loadServerSettings({ MAYA_STORE_URL: 'redis://h:6379' }).storeWaitReplicas).toBeUndefined();
    expect(loadServerSettings({ MAYA_STORE_URL: 'redis+sentinel://h/m' }).storeWaitReplicas).toBe(1);
    expect(
      loadServerSettings({ MAYA_STORE_URL: 'redis+sentinel://h/m', MAYA_STORE_WAIT_REPLICAS: '0' }).storeWaitReplicas,
    ).toBeUndefined();
    expect(loadServerSettings({ MAYA_STORE_WAIT_REPLICAS: '0' }).storeWaitReplicas).toBeUndefined();
    expect(loadServerSettings({ MAYA_STORE_WAIT_REPLICAS: '2' }).storeWaitReplicas).toBe(2);
    expect(() => loadServerSettings({ MAYA_STORE_WAIT_REPLICAS: '-1' })).toThrow(/MAYA_STORE_WAIT_REPLICAS/);
  });

  it('refuses anything else, naming the variable and never echoing the value (it may hold a password)', () => {
    for (const value of [
      'http://x',
      'localhost:6379',
      'redis//pw@host',
      'redis+sentinel://:pw@h1:26379,h2:26379',
      'redis+sentinel://:pw@h1:99999/m',
      'redis+sentinel://:pw@h1/m/x',
      'redis+sentinel://:pw@h1/m?password=x',
      'redis+sentinel://:pw@/m',
    ]) {
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
