/**
 * One list of settings: the variables config/'s loaders read are exactly SETTING_NAMES (plus the
 * legacy STRATA_GLM_RESPONSES_* spellings), and the README's settings tables list exactly the same
 * names, each with a default and a meaning.
 */
import { loadMcpSettings } from '../../config/mcp-settings.ts';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEngineSettings } from '../../config/engine-settings.ts';
import {
  SETTING_NAMES,
  loadResponsesOptIns,
  loadResponsesSettings,
  loadServerSettings,
  type Env,
} from '../../config/settings.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** An empty environment that records every variable a loader asks for. */
function recordingEnv(): { env: Env; read: Set<string> } {
  const read = new Set<string>();
  const env = new Proxy({} as Env, {
    get: (_target, key) => {
      if (typeof key === 'string') read.add(key);
      return undefined;
    },
  });
  return { env, read };
}

/** The rows of the README's settings tables: `MAYA_*` in the main one, MAYA_GLM_RESPONSES_ + suffix in the two of "Responses settings". */
function readmeSettings(): { name: string; cells: string[] }[] {
  const rows: { name: string; cells: string[] }[] = [];
  for (const line of README.split('\n')) {
    const m = /^\| `(MAYA_[A-Z0-9_]+)`[^|]*\|([^|]*)\|([^|]*)\|/.exec(line);
    if (m) rows.push({ name: m[1]!, cells: [m[2]!.trim(), m[3]!.trim()] });
  }
  const section = README.slice(README.indexOf('### Responses settings'), README.indexOf('### Shared store'));
  for (const line of section.split('\n')) {
    const m = /^\| ([A-Z][A-Z0-9_]+) \|([^|]*)\|([^|]*)\|/.exec(line);
    if (m) rows.push({ name: `MAYA_GLM_RESPONSES_${m[1]}`, cells: [m[2]!.trim(), m[3]!.trim()] });
  }
  return rows;
}

describe('the settings list', () => {
  it('the loaders read exactly SETTING_NAMES, and the legacy STRATA_ spelling of each Responses setting', () => {
    const { env, read } = recordingEnv();
    loadResponsesSettings(env);
    loadResponsesOptIns(env);
    loadServerSettings(env);
    loadEngineSettings(env);
    loadMcpSettings(env);
    const legacy = [...read].filter((name) => name.startsWith('STRATA_GLM_RESPONSES_'));
    const current = [...read].filter((name) => !name.startsWith('STRATA_'));
    expect(current.sort()).toEqual([...SETTING_NAMES].sort());
    expect(legacy.sort()).toEqual(
      SETTING_NAMES.filter((name) => name.startsWith('MAYA_GLM_RESPONSES_'))
        .map((name) => name.replace('MAYA_', 'STRATA_'))
        .sort(),
    );
    expect(new Set(SETTING_NAMES).size).toBe(SETTING_NAMES.length);
  });

  it('the README tables list the same names, each once, with a default and a meaning', () => {
    const rows = readmeSettings();
    expect(rows.map((row) => row.name).sort()).toEqual([...SETTING_NAMES].sort());
    for (const row of rows) {
      expect(row.cells[0], `${row.name}: default`).not.toBe('');
      expect(row.cells[1], `${row.name}: meaning`).not.toBe('');
    }
  });
});
