/**
 * The MAYA_GLM_RESPONSES_* settings of the spec's "Settings and Metrics" table: names, defaults
 * and rules. Loading and validation (environment, config file `env` block, legacy STRATA_ names)
 * live beside the table in this file.
 */

import { DIALECT_NAMES } from '../dialects/select.ts';

export const RESPONSES_SETTINGS = {
  CACHE_ENTRIES: { default: 128 },
  CACHE_BYTES: { default: 67108864 },
  CACHE_TTL_S: { default: 3600 },
  ENTRY_BYTES: { default: 67108864 },
  OWNER_ENTRIES: { default: 0, allowZero: true },
  OWNER_BYTES: { default: 0, allowZero: true },
  ASSEMBLY_BYTES: { default: 67108864 },
  JOB_WORKERS: { default: 2, max: 32 },
  JOB_ENTRIES: { default: 16, max: 4096 },
  JOB_OWNER_ENTRIES: { default: 4 },
  JOB_TIMEOUT_S: { default: 300 },
  JOB_TTL_S: { default: 900 },
  JOB_INPUT_BYTES: { default: 2097152 },
  EVENT_BYTES: { default: 2097152, min: 4096 },
  EVENT_COUNT: { default: 4096 },
  STREAM_READERS: { default: 32 },
  STREAM_OWNER_READERS: { default: 8 },
  STREAM_TIMEOUT_S: { default: 5 },
} as const satisfies Record<string, { default: number; allowZero?: boolean; max?: number; min?: number }>;

export type ResponsesSettingName = keyof typeof RESPONSES_SETTINGS;
/** Resolved settings, keyed by the suffix after MAYA_GLM_RESPONSES_. */
export type ResponsesSettings = { readonly [K in ResponsesSettingName]: number };

export const DEFAULT_RESPONSES_SETTINGS: ResponsesSettings = Object.fromEntries(
  Object.entries(RESPONSES_SETTINGS).map(([name, rule]) => [name, rule.default]),
) as ResponsesSettings;

/** A setting that breaks its rule; the message names the variable and the rule. */
export class SettingsError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'SettingsError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

const MAYA_PREFIX = 'MAYA_GLM_RESPONSES_';
const LEGACY_PREFIX = 'STRATA_GLM_RESPONSES_';

/** Decimal digits only: no sign, no exponent, no fraction, no surrounding text. */
function parseInteger(variable: string, raw: string, rule: string): number {
  const text = raw.trim();
  if (!/^\d+$/.test(text)) throw new SettingsError(variable, `${variable}=${JSON.stringify(raw)}: must be ${rule}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new SettingsError(variable, `${variable}=${JSON.stringify(raw)}: must be ${rule} (too large)`);
  return value;
}

function ruleText(rule: { allowZero?: boolean; max?: number; min?: number }): string {
  let text = rule.allowZero ? 'an integer >= 0' : 'a positive integer';
  if (rule.min !== undefined) text += ` >= ${rule.min}`;
  if (rule.max !== undefined) text += ` <= ${rule.max}`;
  return text;
}

/**
 * Resolves every MAYA_GLM_RESPONSES_* setting from `env` (already merged with the config file's
 * `env` block by the caller): the MAYA_ spelling wins over the legacy STRATA_ one; unset or empty
 * means the default. Throws SettingsError on the first value that breaks its rule.
 */
export function loadResponsesSettings(env: Env): ResponsesSettings {
  const out: Record<string, number> = {};
  for (const [name, spec] of Object.entries(RESPONSES_SETTINGS) as [
    ResponsesSettingName,
    (typeof RESPONSES_SETTINGS)[ResponsesSettingName],
  ][]) {
    const rule = spec as { default: number; allowZero?: boolean; max?: number; min?: number };
    const mayaValue = env[MAYA_PREFIX + name];
    const legacyValue = env[LEGACY_PREFIX + name];
    const [variable, raw] =
      mayaValue !== undefined && mayaValue !== ''
        ? [MAYA_PREFIX + name, mayaValue]
        : [LEGACY_PREFIX + name, legacyValue];
    if (raw === undefined || raw === '') {
      out[name] = rule.default;
      continue;
    }
    const text = ruleText(rule);
    const value = parseInteger(variable, raw, text);
    if (value === 0 && !rule.allowZero) throw new SettingsError(variable, `${variable}=${raw}: must be ${text}`);
    if (rule.min !== undefined && value < rule.min)
      throw new SettingsError(variable, `${variable}=${raw}: must be ${text}`);
    if (rule.max !== undefined && value > rule.max)
      throw new SettingsError(variable, `${variable}=${raw}: must be ${text}`);
    out[name] = value;
  }
  return out as ResponsesSettings;
}

/** Server-level settings (not in the spec's table): where to listen, who may call, body limits. */
export interface ServerSettings {
  /** MAYA_HOST, default 127.0.0.1. */
  readonly host: string;
  /** MAYA_PORT, default 8080 (0 = any free port). */
  readonly port: number;
  /** MAYA_MODEL; undefined = the embedded demo model. */
  readonly model: string | undefined;
  /** MAYA_API_KEYS (comma-separated) plus every --api-key; empty = no authentication. */
  readonly apiKeys: readonly string[];
  /** MAYA_CORS_ORIGINS (comma-separated, `*` = any); undefined = loopback origins only. */
  readonly corsOrigins: readonly string[] | undefined;
  /** MAYA_MAX_BODY_BYTES, default 16 MiB: larger request bodies get 413. */
  readonly maxBodyBytes: number;
  /** MAYA_DIALECT: overrides the dialect detected from the checkpoint (e.g. glm47); undefined = detect. */
  readonly dialect?: string;
}

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

function splitList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** Resolves the server settings from `env`; `extraApiKeys` are the CLI's --api-key values. */
export function loadServerSettings(env: Env, extraApiKeys: readonly string[] = []): ServerSettings {
  const portRaw = env.MAYA_PORT;
  let port = 8080;
  if (portRaw !== undefined && portRaw !== '') {
    port = parseInteger('MAYA_PORT', portRaw, 'an integer port 0..65535');
    if (port > 65535) throw new SettingsError('MAYA_PORT', `MAYA_PORT=${portRaw}: must be an integer port 0..65535`);
  }
  let maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
  const bodyRaw = env.MAYA_MAX_BODY_BYTES;
  if (bodyRaw !== undefined && bodyRaw !== '') {
    maxBodyBytes = parseInteger('MAYA_MAX_BODY_BYTES', bodyRaw, 'a positive integer');
    if (maxBodyBytes === 0)
      throw new SettingsError('MAYA_MAX_BODY_BYTES', `MAYA_MAX_BODY_BYTES=${bodyRaw}: must be a positive integer`);
  }
  const origins = splitList(env.MAYA_CORS_ORIGINS);
  const model = env.MAYA_MODEL;
  const dialect = env.MAYA_DIALECT !== undefined && env.MAYA_DIALECT !== '' ? env.MAYA_DIALECT : undefined;
  if (dialect !== undefined && !DIALECT_NAMES.includes(dialect as never)) {
    throw new SettingsError('MAYA_DIALECT', `MAYA_DIALECT=${dialect}: must be one of ${DIALECT_NAMES.join(', ')}`);
  }
  return {
    host: env.MAYA_HOST !== undefined && env.MAYA_HOST !== '' ? env.MAYA_HOST : '127.0.0.1',
    port,
    model: model !== undefined && model !== '' ? model : undefined,
    apiKeys: [...new Set([...splitList(env.MAYA_API_KEYS), ...extraApiKeys.filter((key) => key !== '')])],
    corsOrigins: origins.length > 0 ? origins : undefined,
    maxBodyBytes,
    ...(dialect !== undefined ? { dialect } : {}),
  };
}
