import { describe, expect, it } from 'vitest';
import {
  DEFAULT_IMAGE_SETTINGS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_RESPONSES_SETTINGS,
  DEFAULT_SERVER_LIMITS,
  RESPONSES_SETTINGS,
  SettingsError,
  loadResponsesSettings,
  loadServerSettings,
} from '../../config/settings.ts';

const M = 'MAYA_GLM_RESPONSES_';
const S = 'STRATA_GLM_RESPONSES_';

function errorOf(fn: () => unknown): SettingsError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SettingsError) return err;
    throw err;
  }
  throw new Error('expected a SettingsError');
}

describe('loadResponsesSettings', () => {
  it('every setting of the spec table has its default when unset', () => {
    expect(loadResponsesSettings({})).toEqual(DEFAULT_RESPONSES_SETTINGS);
    expect(DEFAULT_RESPONSES_SETTINGS).toMatchObject({
      CACHE_ENTRIES: 128,
      CACHE_BYTES: 67108864,
      CACHE_TTL_S: 3600,
      ENTRY_BYTES: 67108864,
      OWNER_ENTRIES: 0,
      OWNER_BYTES: 0,
      ASSEMBLY_BYTES: 67108864,
      JOB_WORKERS: 2,
      JOB_ENTRIES: 16,
      JOB_OWNER_ENTRIES: 4,
      JOB_TIMEOUT_S: 300,
      JOB_TTL_S: 900,
      JOB_INPUT_BYTES: 2097152,
      EVENT_BYTES: 2097152,
      EVENT_COUNT: 4096,
      STREAM_READERS: 32,
      STREAM_OWNER_READERS: 8,
      STREAM_TIMEOUT_S: 5,
    });
    expect(Object.keys(RESPONSES_SETTINGS)).toHaveLength(18);
  });

  it('reads MAYA_ values', () => {
    expect(loadResponsesSettings({ [`${M}CACHE_ENTRIES`]: '7', [`${M}JOB_TTL_S`]: ' 60 ' })).toMatchObject({
      CACHE_ENTRIES: 7,
      JOB_TTL_S: 60,
    });
  });

  it('legacy STRATA_ spellings work', () => {
    expect(loadResponsesSettings({ [`${S}CACHE_TTL_S`]: '10' }).CACHE_TTL_S).toBe(10);
  });

  it('MAYA_ wins over STRATA_ when both are set', () => {
    expect(loadResponsesSettings({ [`${S}CACHE_TTL_S`]: '10', [`${M}CACHE_TTL_S`]: '20' }).CACHE_TTL_S).toBe(20);
  });

  it('an empty value means the default', () => {
    expect(loadResponsesSettings({ [`${M}JOB_WORKERS`]: '' }).JOB_WORKERS).toBe(2);
  });

  it.each([['0'], ['-1'], ['1.5'], ['1e3'], ['abc'], ['12abc'], ['0x10']])(
    'positive integers only: CACHE_ENTRIES=%s is refused',
    (raw) => {
      const err = errorOf(() => loadResponsesSettings({ [`${M}CACHE_ENTRIES`]: raw }));
      expect(err.variable).toBe(`${M}CACHE_ENTRIES`);
      expect(err.message).toContain(`${M}CACHE_ENTRIES`);
      expect(err.message).toContain('positive integer');
    },
  );

  it.each([['OWNER_ENTRIES'], ['OWNER_BYTES']])('owner quota %s may be 0 but not negative', (name) => {
    expect(loadResponsesSettings({ [`${M}${name}`]: '0' })[name as 'OWNER_ENTRIES']).toBe(0);
    expect(loadResponsesSettings({ [`${M}${name}`]: '5' })[name as 'OWNER_ENTRIES']).toBe(5);
    expect(errorOf(() => loadResponsesSettings({ [`${M}${name}`]: '-1' })).message).toContain('>= 0');
  });

  it('JOB_WORKERS <= 32', () => {
    expect(loadResponsesSettings({ [`${M}JOB_WORKERS`]: '32' }).JOB_WORKERS).toBe(32);
    const err = errorOf(() => loadResponsesSettings({ [`${M}JOB_WORKERS`]: '33' }));
    expect(err.message).toMatch(/MAYA_GLM_RESPONSES_JOB_WORKERS.*<= 32/);
  });

  it('JOB_ENTRIES <= 4096', () => {
    expect(loadResponsesSettings({ [`${M}JOB_ENTRIES`]: '4096' }).JOB_ENTRIES).toBe(4096);
    expect(errorOf(() => loadResponsesSettings({ [`${M}JOB_ENTRIES`]: '4097' })).message).toMatch(
      /JOB_ENTRIES.*<= 4096/,
    );
  });

  it('EVENT_BYTES >= 4096', () => {
    expect(loadResponsesSettings({ [`${M}EVENT_BYTES`]: '4096' }).EVENT_BYTES).toBe(4096);
    expect(errorOf(() => loadResponsesSettings({ [`${M}EVENT_BYTES`]: '4095' })).message).toMatch(
      /EVENT_BYTES.*>= 4096/,
    );
  });

  it('a bad legacy value names the legacy variable', () => {
    expect(errorOf(() => loadResponsesSettings({ [`${S}JOB_WORKERS`]: '99' })).variable).toBe(`${S}JOB_WORKERS`);
  });

  it('a bad legacy value is ignored when MAYA_ overrides it', () => {
    expect(loadResponsesSettings({ [`${S}JOB_WORKERS`]: '99', [`${M}JOB_WORKERS`]: '3' }).JOB_WORKERS).toBe(3);
  });

  it('values beyond 2^53 are refused', () => {
    expect(errorOf(() => loadResponsesSettings({ [`${M}CACHE_BYTES`]: '99999999999999999999' })).message).toContain(
      'CACHE_BYTES',
    );
  });
});

describe('loadServerSettings', () => {
  it('defaults: 127.0.0.1:8080, no keys, loopback CORS, 16 MiB bodies, access log at info', () => {
    expect(loadServerSettings({})).toEqual({
      host: '127.0.0.1',
      port: 8080,
      model: undefined,
      apiKeys: [],
      corsOrigins: undefined,
      maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
      logLevel: 'info',
      limits: DEFAULT_SERVER_LIMITS,
      decoding: { constrained: true, maxString: 128, maxItems: 16 },
      images: DEFAULT_IMAGE_SETTINGS,
    });
    expect(DEFAULT_SERVER_LIMITS).toEqual({
      MAX_CONNECTIONS: 1024,
      HEADERS_TIMEOUT_S: 10,
      REQUEST_TIMEOUT_S: 30,
      KEEPALIVE_TIMEOUT_S: 5,
      SHUTDOWN_GRACE_S: 10,
    });
    expect(DEFAULT_MAX_BODY_BYTES).toBe(16 * 1024 * 1024);
  });

  it('reads MAYA_HOST, MAYA_PORT, MAYA_MODEL, MAYA_API_KEYS (+ --api-key), MAYA_CORS_ORIGINS, MAYA_MAX_BODY_BYTES, MAYA_LOG_LEVEL', () => {
    const env = {
      MAYA_HOST: '0.0.0.0',
      MAYA_PORT: '9000',
      MAYA_MODEL: '/m',
      MAYA_API_KEYS: 'a, b,,a',
      MAYA_CORS_ORIGINS: 'https://x.example, *',
      MAYA_MAX_BODY_BYTES: '1024',
      MAYA_LOG_LEVEL: 'warn',
    };
    expect(loadServerSettings(env, ['c', 'a'])).toEqual({
      host: '0.0.0.0',
      port: 9000,
      model: '/m',
      apiKeys: ['a', 'b', 'c'],
      corsOrigins: ['https://x.example', '*'],
      maxBodyBytes: 1024,
      logLevel: 'warn',
      limits: DEFAULT_SERVER_LIMITS,
      decoding: { constrained: true, maxString: 128, maxItems: 16 },
      images: DEFAULT_IMAGE_SETTINGS,
    });
  });

  it('reads the constrained-decoding settings (config file env blocks reach them too)', () => {
    const env = { MAYA_CONSTRAINED_DECODING: '0', MAYA_GRAMMAR_MAX_STRING: '0', MAYA_GRAMMAR_MAX_ITEMS: '4' };
    expect(loadServerSettings(env).decoding).toEqual({ constrained: false, maxString: 0, maxItems: 4 });
  });

  it('reads the image settings: MAYA_IMAGE_URL_ALLOW hosts (lower-cased) and the MAYA_IMAGE_* limits', () => {
    expect(DEFAULT_IMAGE_SETTINGS).toEqual({
      urlAllow: [],
      maxBytes: 10 * 1024 * 1024,
      maxPixels: 32 * 1024 * 1024,
      maxCount: 16,
      fetchTimeoutMs: 10_000,
      maxRedirects: 3,
    });
    const env = {
      MAYA_IMAGE_URL_ALLOW: 'Images.Example.com, 127.0.0.1:8081',
      MAYA_IMAGE_MAX_BYTES: '1000',
      MAYA_IMAGE_MAX_PIXELS: '4096',
      MAYA_IMAGE_MAX_COUNT: '2',
      MAYA_IMAGE_FETCH_TIMEOUT_MS: '250',
      MAYA_IMAGE_MAX_REDIRECTS: '0',
    };
    expect(loadServerSettings(env).images).toEqual({
      urlAllow: ['images.example.com', '127.0.0.1:8081'],
      maxBytes: 1000,
      maxPixels: 4096,
      maxCount: 2,
      fetchTimeoutMs: 250,
      maxRedirects: 0,
    });
  });

  it('reads the connection and shutdown limits (MAYA_MAX_CONNECTIONS, timeouts, MAYA_SHUTDOWN_GRACE_S; grace may be 0)', () => {
    const env = {
      MAYA_MAX_CONNECTIONS: '64',
      MAYA_HEADERS_TIMEOUT_S: '3',
      MAYA_REQUEST_TIMEOUT_S: '9',
      MAYA_KEEPALIVE_TIMEOUT_S: '2',
      MAYA_SHUTDOWN_GRACE_S: '0',
    };
    expect(loadServerSettings(env).limits).toEqual({
      MAX_CONNECTIONS: 64,
      HEADERS_TIMEOUT_S: 3,
      REQUEST_TIMEOUT_S: 9,
      KEEPALIVE_TIMEOUT_S: 2,
      SHUTDOWN_GRACE_S: 0,
    });
  });

  it.each([
    ['MAYA_PORT', '70000'],
    ['MAYA_PORT', 'http'],
    ['MAYA_MAX_BODY_BYTES', '0'],
    ['MAYA_MAX_BODY_BYTES', '-5'],
    ['MAYA_LOG_LEVEL', 'verbose'],
    ['MAYA_MAX_CONNECTIONS', '0'],
    ['MAYA_HEADERS_TIMEOUT_S', '1.5'],
    ['MAYA_SHUTDOWN_GRACE_S', '-1'],
    ['MAYA_CONSTRAINED_DECODING', 'yes'],
    ['MAYA_GRAMMAR_MAX_ITEMS', '-2'],
    ['MAYA_IMAGE_MAX_BYTES', '0'],
    ['MAYA_IMAGE_FETCH_TIMEOUT_MS', '1s'],
    ['MAYA_IMAGE_URL_ALLOW', 'https://images.example.com/'],
  ])('%s=%s is refused', (name, raw) => {
    expect(errorOf(() => loadServerSettings({ [name]: raw })).variable).toBe(name);
  });
});
