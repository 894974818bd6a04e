/**
 * The MAYA_GLM_RESPONSES_* settings of the spec's "Settings and Metrics" table: names, defaults
 * and rules. Loading and validation (environment, config file `env` block, legacy STRATA_ names)
 * live beside the table in this file.
 */

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
