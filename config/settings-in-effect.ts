/**
 * The settings a server runs with that differ from the defaults, for GET /v1/status (the web
 * page's About tab): every MAYA_* (and legacy STRATA_*) variable that changes what config/'s
 * loaders resolve, the engine's MAYA_ENGINE_* / MAYA_CUDA_* among them, with secrets hidden.
 */
import { loadMcpSettings } from './mcp-settings.ts';
import { loadResponsesSettings, loadServerSettings, type Env, type SettingInEffect } from './settings.ts';

/**
 * Variables whose values are secrets: never shown, only that they are set. By pattern, so that a
 * later key or password setting is hidden too; `_TOKEN` only as a suffix (MAYA_CUDA_TC_MIN_TOKENS
 * is a count).
 */
const SECRET_SETTING = /(^MAYA_API_KEYS$|_KEY$|SECRET|PASSWORD|_TOKEN$)/;

/**
 * The settings in `env` that change what the loaders resolve (a default spelled out, an unknown
 * variable or one the loaders ignore is not listed). loadServerSettings holds the engine's settings
 * (engine-settings.ts) and the opt-ins, loadResponsesSettings the MAYA_GLM_RESPONSES_* table,
 * loadMcpSettings the MAYA_MCP_* servers and limits (a limit without servers changes nothing).
 * `extraApiKeys` (the CLI's --api-key) count as MAYA_API_KEYS. Secret values are `(hidden)`; a
 * URL's user and password are replaced by `***`.
 */
export function settingsInEffect(env: Env, extraApiKeys: readonly string[] = []): SettingInEffect[] {
  const keys = [env.MAYA_API_KEYS ?? '', ...extraApiKeys].filter((key) => key !== '').join(',');
  const full: Record<string, string | undefined> = { ...env, ...(keys !== '' ? { MAYA_API_KEYS: keys } : {}) };
  const resolved = (of: Env) =>
    JSON.stringify([loadServerSettings(of), loadResponsesSettings(of), loadMcpSettings(of)], (_key, value) =>
      value instanceof Uint8Array ? [...value] : value,
    );
  const base = resolved(full);
  return Object.keys(full)
    .filter((name) => /^(MAYA|STRATA)_/.test(name) && (full[name] ?? '').trim() !== '')
    .sort()
    .filter((name) => resolved({ ...full, [name]: undefined }) !== base)
    .map((name) => ({ name, value: shownValue(name, full[name]!.trim()) }));
}

function shownValue(name: string, value: string): string {
  if (SECRET_SETTING.test(name)) return '(hidden)';
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1***@');
}
