import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergeEnv, readConfigFile } from '../../config/config-file.ts';
import { SettingsError, loadResponsesSettings } from '../../config/settings.ts';

function file(content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'maya-config-')), 'config.json');
  writeFileSync(path, content);
  return path;
}

describe('config file', () => {
  it('reads the env block; numbers become strings', () => {
    const path = file(JSON.stringify({ env: { MAYA_GLM_RESPONSES_CACHE_ENTRIES: 9, MAYA_HOST: '::1' } }));
    expect(readConfigFile(path)).toEqual({ MAYA_GLM_RESPONSES_CACHE_ENTRIES: '9', MAYA_HOST: '::1' });
  });

  it('the real environment wins over the file', () => {
    const merged = mergeEnv(
      { MAYA_GLM_RESPONSES_CACHE_ENTRIES: '9', MAYA_GLM_RESPONSES_JOB_WORKERS: '4' },
      { MAYA_GLM_RESPONSES_CACHE_ENTRIES: '3' },
    );
    expect(loadResponsesSettings(merged)).toMatchObject({ CACHE_ENTRIES: 3, JOB_WORKERS: 4 });
  });

  it('a bad value in the file is reported with its variable', () => {
    const env = readConfigFile(file(JSON.stringify({ env: { MAYA_GLM_RESPONSES_JOB_WORKERS: '64' } })));
    expect(() => loadResponsesSettings(mergeEnv(env, {}))).toThrow(/MAYA_GLM_RESPONSES_JOB_WORKERS.*<= 32/);
  });

  it.each([
    ['not JSON', '{env:'],
    ['not an object', '[1]'],
    ['unknown top-level key', '{"envs":{}}'],
    ['env not an object', '{"env":"x"}'],
    ['nested value', '{"env":{"A":{"b":1}}}'],
  ])('%s → SettingsError', (_name, content) => {
    expect(() => readConfigFile(file(content))).toThrow(SettingsError);
  });

  it('a missing file → SettingsError naming --config', () => {
    expect(() => readConfigFile('/nonexistent/maya.json')).toThrow(/--config \/nonexistent\/maya.json/);
  });
});
