/** settingsInEffect: what GET /v1/status lists as the server's non-default settings (the About page). */
import { describe, expect, it } from 'vitest';
import { settingsInEffect } from '../../config/settings-in-effect.ts';

describe('settingsInEffect', () => {
  it('nothing set: nothing listed', () => {
    expect(settingsInEffect({})).toEqual([]);
  });

  it('lists the variables that change a resolved setting, by name, sorted, with their values as given', () => {
    const env = {
      MAYA_PORT: '9000',
      MAYA_LOG_LEVEL: 'warn',
      MAYA_GLM_RESPONSES_CACHE_ENTRIES: '64',
      MAYA_WEB: 'off',
      PATH: '/usr/bin',
    };
    expect(settingsInEffect(env)).toEqual([
      { name: 'MAYA_GLM_RESPONSES_CACHE_ENTRIES', value: '64' },
      { name: 'MAYA_LOG_LEVEL', value: 'warn' },
      { name: 'MAYA_PORT', value: '9000' },
      { name: 'MAYA_WEB', value: 'off' },
    ]);
  });

  it('leaves out defaults spelled out, unknown MAYA_ variables and a legacy spelling the MAYA_ one overrides', () => {
    const env = {
      MAYA_PORT: '8080',
      MAYA_LOG_LEVEL: 'info',
      MAYA_NOT_A_SETTING: 'x',
      MAYA_GLM_RESPONSES_JOB_WORKERS: '4',
      STRATA_GLM_RESPONSES_JOB_WORKERS: '3',
    };
    expect(settingsInEffect(env)).toEqual([{ name: 'MAYA_GLM_RESPONSES_JOB_WORKERS', value: '4' }]);
  });

  it("lists the engine's settings (config/engine-settings.ts) as given, none hidden, and leaves out unset ones", () => {
    const env = {
      MAYA_ENGINE_SIMD: 'scalar',
      MAYA_ENGINE_BACKEND: 'cpu',
      MAYA_ENGINE_KV_BYTES: '1048576',
      MAYA_ENGINE_WEIGHT_COPY: '0',
      MAYA_ENGINE_LIB: '/opt/maya/libmaya_engine.so',
      MAYA_CUDA_DEVICE: '1',
      MAYA_CUDA_TC_MIN_TOKENS: '0',
      MAYA_CUDA_GRAPHS: '0',
      MAYA_WEIGHT_DTYPE: 'q8',
      MAYA_ENGINE_CUDA_LIB: '',
    };
    expect(settingsInEffect(env)).toEqual([
      { name: 'MAYA_CUDA_DEVICE', value: '1' },
      { name: 'MAYA_CUDA_GRAPHS', value: '0' },
      { name: 'MAYA_CUDA_TC_MIN_TOKENS', value: '0' },
      { name: 'MAYA_ENGINE_BACKEND', value: 'cpu' },
      { name: 'MAYA_ENGINE_KV_BYTES', value: '1048576' },
      { name: 'MAYA_ENGINE_LIB', value: '/opt/maya/libmaya_engine.so' },
      { name: 'MAYA_ENGINE_SIMD', value: 'scalar' },
      { name: 'MAYA_ENGINE_WEIGHT_COPY', value: '0' },
      { name: 'MAYA_WEIGHT_DTYPE', value: 'q8' },
    ]);
  });

  it('hides secrets: API keys (also from --api-key), the reasoning key, a store URL credential', () => {
    const key = 'ab'.repeat(32);
    const env = {
      MAYA_API_KEYS: 'sk-one,sk-two',
      MAYA_GLM_RESPONSES_ENCRYPTED_REASONING: 'on',
      MAYA_GLM_RESPONSES_REASONING_KEY: key,
      MAYA_STORE_URL: 'redis://user:s3cret@10.0.0.5:6379/2',
    };
    const listed = settingsInEffect(env);
    expect(listed).toEqual([
      { name: 'MAYA_API_KEYS', value: '(hidden)' },
      { name: 'MAYA_GLM_RESPONSES_ENCRYPTED_REASONING', value: 'on' },
      { name: 'MAYA_GLM_RESPONSES_REASONING_KEY', value: '(hidden)' },
      { name: 'MAYA_STORE_URL', value: 'redis://***@10.0.0.5:6379/2' },
    ]);
    const text = JSON.stringify(listed);
    for (const secret of ['sk-one', 'sk-two', key, 's3cret', 'user:']) expect(text).not.toContain(secret);
    expect(settingsInEffect({}, ['sk-flag'])).toEqual([{ name: 'MAYA_API_KEYS', value: '(hidden)' }]);
  });
});
