/**
 * Every MAYA_* setting: names, defaults and rules, and their loading from the environment merged
 * with a config file's `env` block (legacy STRATA_ names too). The spec's MAYA_GLM_RESPONSES_*
 * table, the server's settings and (engine-settings.ts) the engine's. config/ is the only reader
 * of these variables; everything below gets the parsed values passed down. SETTING_NAMES lists
 * them all, as the README's settings tables do.
 */

import { DIALECT_NAMES } from '../dialects/select.ts';
import { ENGINE_SETTING_NAMES, loadEngineSettings, type EngineSettings } from './engine-settings.ts';
import { MCP_SETTING_NAMES, type McpSettings } from './mcp-settings.ts';
import {
  parseInteger,
  rawValue,
  ruledInteger,
  SettingsError,
  splitList,
  type Env,
  type IntegerRule,
} from './setting-rules.ts';

export { SettingsError, type Env } from './setting-rules.ts';
export type { McpServerConfig, McpSettings } from './mcp-settings.ts';
import { parseStoreUrl, STORE_URL_RULE } from './store-url.ts';

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

const MAYA_PREFIX = 'MAYA_GLM_RESPONSES_';
const LEGACY_PREFIX = 'STRATA_GLM_RESPONSES_';

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
    const rule = spec as IntegerRule & { default: number };
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
    out[name] = ruledInteger(variable, raw, rule);
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
  /** MAYA_CHAT_TEMPLATE: a Jinja chat template file replacing the checkpoint's (a GGUF file without
   * tokenizer.chat_template needs one); undefined = the checkpoint's. */
  readonly chatTemplate?: string;
  /** MAYA_CONSTRAINED_DECODING (0|1, default 1) and MAYA_GRAMMAR_MAX_STRING / _MAX_ITEMS (>= 0, 0 = no limit). */
  readonly decoding?: DecodingSettings;
  /** Connection and shutdown limits (SERVER_LIMITS); absent = DEFAULT_SERVER_LIMITS. */
  readonly limits?: ServerLimits;
  /** MAYA_LOG_LEVEL, default `info` (`silent` = none): the level of the one logger (handlers/logger.ts). */
  readonly logLevel?: LogLevel;
  /** MAYA_STORE_URL: `redis://…`, `rediss://…` or `redis+sentinel://…` shares stored responses through Redis; undefined = in memory. */
  readonly storeUrl?: string;
  /**
   * MAYA_STORE_WAIT_REPLICAS (integer >= 0; default 1 with redis+sentinel://, else 0): with a
   * Redis store, how many Redis replicas must acknowledge a stored response (Redis WAIT) before it
   * is reported stored; fewer within STORE_WAIT_MS is 503 `store_unavailable`. 0 = the primary's
   * acknowledgement is enough (a failover can then lose what the replica had not received).
   */
  readonly storeWaitReplicas?: number;
  /** Opt-in client-compatibility features beyond the spec (loadResponsesOptIns); absent = all off. */
  readonly optIns?: ResponsesOptIns;
  /** MAYA_IMAGE_*: limits on `input_image` URLs and images (IMAGE_LIMITS); absent = DEFAULT_IMAGE_SETTINGS. */
  readonly images?: ImageSettings;
  /**
   * MAYA_WEIGHT_DTYPE: `q8` quantizes the weights to 8 bits at load (CPU engine); `q4_k_m`, `q4_0`, `q6_k`,
   * `q8_0` to that llama.cpp file type's mixture of GGUF block types; undefined = as stored.
   */
  readonly weightDtype?: WeightDtype;
  /** MAYA_ENGINE_* / MAYA_CUDA_* (engine-settings.ts); absent when none is set (all engine defaults). */
  readonly engine?: EngineSettings;
  /** MAYA_WEB (`on`|`off`, default on): the web page at `/` (web/); false = `/` answers 404. Absent = on. */
  readonly web?: boolean;
  /** The settings in effect that differ from the defaults, secrets hidden (settings-in-effect.ts; GET /v1/status). */
  readonly inEffect?: readonly SettingInEffect[];
  /** MAYA_MCP_* (mcp-settings.ts loadMcpSettings): the operator's MCP servers; absent = none configured. */
  readonly mcp?: McpSettings;
}

/** One setting the server runs with: its variable and its value as given (or `(hidden)`). */
export interface SettingInEffect {
  readonly name: string;
  readonly value: string;
}

/** MAYA_WEB: unset or empty = on; else `on` or `off` (any case). */
function loadWebSetting(env: Env): boolean {
  const raw = rawValue(env, 'MAYA_WEB');
  if (raw === undefined || raw.trim() === '') return true;
  const text = raw.trim().toLowerCase();
  if (text !== 'on' && text !== 'off') throw new SettingsError('MAYA_WEB', `MAYA_WEB=${raw}: must be on or off`);
  return text === 'on';
}

/**
 * Integer limits on input images: name (after MAYA_IMAGE_) → default and rule. MAX_BYTES bounds
 * the encoded image (a data URL's decoded bytes, or a download), MAX_PIXELS its decoded width ×
 * height (before the model's own resize), MAX_COUNT the images of one request (history included);
 * a download gets FETCH_TIMEOUT_MS in all and at most MAX_REDIRECTS redirects.
 */
export const IMAGE_LIMITS = {
  MAX_BYTES: { default: 10 * 1024 * 1024 },
  MAX_PIXELS: { default: 32 * 1024 * 1024 },
  MAX_COUNT: { default: 16 },
  FETCH_TIMEOUT_MS: { default: 10_000 },
  MAX_REDIRECTS: { default: 3, allowZero: true },
} as const satisfies Record<string, { default: number; allowZero?: boolean }>;

export interface ImageSettings {
  /**
   * MAYA_IMAGE_URL_ALLOW (comma-separated host names, or host:port): the hosts whose http(s) image
   * URLs are fetched, redirects included. Empty (the default) = remote image URLs are refused.
   */
  readonly urlAllow: readonly string[];
  readonly maxBytes: number;
  readonly maxPixels: number;
  readonly maxCount: number;
  readonly fetchTimeoutMs: number;
  readonly maxRedirects: number;
}

export const DEFAULT_IMAGE_SETTINGS: ImageSettings = {
  urlAllow: [],
  maxBytes: IMAGE_LIMITS.MAX_BYTES.default,
  maxPixels: IMAGE_LIMITS.MAX_PIXELS.default,
  maxCount: IMAGE_LIMITS.MAX_COUNT.default,
  fetchTimeoutMs: IMAGE_LIMITS.FETCH_TIMEOUT_MS.default,
  maxRedirects: IMAGE_LIMITS.MAX_REDIRECTS.default,
};

/** The MAYA_IMAGE_* settings from `env`; unset or empty = the default. */
export function loadImageSettings(env: Env): ImageSettings {
  const value = (name: keyof typeof IMAGE_LIMITS) => {
    const rule = IMAGE_LIMITS[name] as { default: number; allowZero?: boolean };
    const raw = env[`MAYA_IMAGE_${name}`];
    return raw === undefined || raw === '' ? rule.default : ruledInteger(`MAYA_IMAGE_${name}`, raw, rule);
  };
  const urlAllow = splitList(env.MAYA_IMAGE_URL_ALLOW).map((host) => host.toLowerCase());
  const bad = urlAllow.find((host) => !/^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/.test(host));
  if (bad !== undefined)
    throw new SettingsError(
      'MAYA_IMAGE_URL_ALLOW',
      `MAYA_IMAGE_URL_ALLOW: ${JSON.stringify(bad)} is not a host name (comma-separated hosts, optionally host:port)`,
    );
  return {
    urlAllow,
    maxBytes: value('MAX_BYTES'),
    maxPixels: value('MAX_PIXELS'),
    maxCount: value('MAX_COUNT'),
    fetchTimeoutMs: value('FETCH_TIMEOUT_MS'),
    maxRedirects: value('MAX_REDIRECTS'),
  };
}

export const WEIGHT_DTYPES = ['stored', 'q8', 'q4_k_m', 'q4_0', 'q6_k', 'q8_0'] as const;
export type WeightDtype = (typeof WEIGHT_DTYPES)[number];

/** MAYA_WEIGHT_DTYPE: unset or empty = as stored; else one of WEIGHT_DTYPES. */
export function loadWeightDtype(raw: string | undefined): WeightDtype | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = raw.trim();
  if (!WEIGHT_DTYPES.includes(value as WeightDtype)) {
    throw new SettingsError(
      'MAYA_WEIGHT_DTYPE',
      `MAYA_WEIGHT_DTYPE=${raw}: must be one of ${WEIGHT_DTYPES.join(', ')}`,
    );
  }
  return value as WeightDtype;
}

/**
 * Integer server limits: name → default and rule. Times are seconds. The defaults bound what one
 * client can hold: a slow header or body is cut after HEADERS/REQUEST_TIMEOUT_S, an idle
 * keep-alive socket after KEEPALIVE_TIMEOUT_S, and sockets beyond MAX_CONNECTIONS are refused.
 */
export const SERVER_LIMITS = {
  /** MAYA_MAX_CONNECTIONS: open sockets at once; more are closed on arrival. */
  MAX_CONNECTIONS: { default: 1024 },
  /** MAYA_HEADERS_TIMEOUT_S: time to receive a request's headers. */
  HEADERS_TIMEOUT_S: { default: 10 },
  /** MAYA_REQUEST_TIMEOUT_S: time to receive a whole request (headers and body). */
  REQUEST_TIMEOUT_S: { default: 30 },
  /** MAYA_KEEPALIVE_TIMEOUT_S: idle time before a keep-alive socket is closed. */
  KEEPALIVE_TIMEOUT_S: { default: 5 },
  /**
   * MAYA_SHUTDOWN_GRACE_S: on SIGTERM/SIGINT, how long foreground generations may run on to a
   * natural end; after it the model closes and unfinished ones end `failed` (`server_shutdown`).
   */
  SHUTDOWN_GRACE_S: { default: 10, allowZero: true },
} as const satisfies Record<string, { default: number; allowZero?: boolean }>;

export type ServerLimits = { readonly [K in keyof typeof SERVER_LIMITS]: number };

export const DEFAULT_SERVER_LIMITS: ServerLimits = Object.fromEntries(
  Object.entries(SERVER_LIMITS).map(([name, rule]) => [name, rule.default]),
) as ServerLimits;

function loadServerLimits(env: Env): ServerLimits {
  const out: Record<string, number> = {};
  for (const [name, spec] of Object.entries(SERVER_LIMITS)) {
    const rule = spec as { default: number; allowZero?: boolean };
    const variable = `MAYA_${name}`;
    const raw = env[variable];
    if (raw === undefined || raw === '') {
      out[name] = rule.default;
      continue;
    }
    out[name] = ruledInteger(variable, raw, rule);
  }
  return out as ServerLimits;
}

/** Grammar-constrained decoding: on/off and the soft limits of unbounded JSON strings and arrays. */
export interface DecodingSettings {
  readonly constrained: boolean;
  /** Most characters of a JSON string whose schema sets no maxLength (0 = no limit). */
  readonly maxString: number;
  /** Most items of a JSON array whose schema sets no maxItems (0 = no limit). */
  readonly maxItems: number;
}

/**
 * On, 128 characters and 16 items: the soft limits bound the loops of a model forced to stay
 * inside a value (see grammar/json-schema.ts).
 */
export const DEFAULT_DECODING_SETTINGS: DecodingSettings = { constrained: true, maxString: 128, maxItems: 16 };

function loadDecodingSettings(env: Env): DecodingSettings {
  const raw = env.MAYA_CONSTRAINED_DECODING;
  if (raw !== undefined && raw !== '' && raw !== '0' && raw !== '1') {
    throw new SettingsError('MAYA_CONSTRAINED_DECODING', `MAYA_CONSTRAINED_DECODING=${raw}: must be 0 or 1`);
  }
  const count = (variable: string, fallback: number) => {
    const value = rawValue(env, variable);
    return value === undefined ? fallback : ruledInteger(variable, value, { allowZero: true });
  };
  return {
    constrained: raw !== '0',
    maxString: count('MAYA_GRAMMAR_MAX_STRING', DEFAULT_DECODING_SETTINGS.maxString),
    maxItems: count('MAYA_GRAMMAR_MAX_ITEMS', DEFAULT_DECODING_SETTINGS.maxItems),
  };
}

/** pino's levels, lowest first, plus `silent`. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

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
  const chatTemplate =
    env.MAYA_CHAT_TEMPLATE !== undefined && env.MAYA_CHAT_TEMPLATE !== '' ? env.MAYA_CHAT_TEMPLATE : undefined;
  const logLevel = env.MAYA_LOG_LEVEL !== undefined && env.MAYA_LOG_LEVEL !== '' ? env.MAYA_LOG_LEVEL : 'info';
  if (!LOG_LEVELS.includes(logLevel as LogLevel)) {
    throw new SettingsError('MAYA_LOG_LEVEL', `MAYA_LOG_LEVEL=${logLevel}: must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const storeUrl = loadStoreUrl(env.MAYA_STORE_URL);
  const waitRaw = env.MAYA_STORE_WAIT_REPLICAS;
  const storeWaitReplicas =
    waitRaw === undefined || waitRaw === ''
      ? Number(storeUrl !== undefined && parseStoreUrl(storeUrl)?.kind === 'sentinel')
      : ruledInteger('MAYA_STORE_WAIT_REPLICAS', waitRaw, { allowZero: true });
  const weightDtype = loadWeightDtype(env.MAYA_WEIGHT_DTYPE);
  const engine = loadEngineSettings(env);
  return {
    host: env.MAYA_HOST !== undefined && env.MAYA_HOST !== '' ? env.MAYA_HOST : '127.0.0.1',
    port,
    model: model !== undefined && model !== '' ? model : undefined,
    apiKeys: [...new Set([...splitList(env.MAYA_API_KEYS), ...extraApiKeys.filter((key) => key !== '')])],
    corsOrigins: origins.length > 0 ? origins : undefined,
    maxBodyBytes,
    ...(dialect !== undefined ? { dialect } : {}),
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    limits: loadServerLimits(env),
    logLevel: logLevel as LogLevel,
    decoding: loadDecodingSettings(env),
    ...(storeUrl !== undefined ? { storeUrl } : {}),
    ...(storeWaitReplicas > 0 ? { storeWaitReplicas } : {}),
    ...optInsField(env),
    images: loadImageSettings(env),
    ...(weightDtype !== undefined ? { weightDtype } : {}),
    ...(Object.keys(engine).length > 0 ? { engine } : {}),
    ...(loadWebSetting(env) ? {} : { web: false }),
  };
}

/** MAYA_STORE_URL: unset or empty = in memory; otherwise a Redis or Redis Sentinel URL (store-url.ts). */
function loadStoreUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  if (parseStoreUrl(raw) === undefined) throw new SettingsError('MAYA_STORE_URL', STORE_URL_RULE);
  return raw.trim();
}

/**
 * Opt-in features beyond the spec's Limits, for real clients (issue 21). Off by default, so the
 * default server answers as the spec says (400). Read from MAYA_GLM_RESPONSES_* (legacy STRATA_
 * spellings too, MAYA_ wins), like the integer settings.
 */
export interface ResponsesOptIns {
  /** ITEM_REFERENCES=on: `item_reference` input items resolve to the caller's stored items. */
  readonly itemReferences: boolean;
  /** ENCRYPTED_REASONING=on: include `reasoning.encrypted_content`, encrypted reasoning input, `reasoning.summary`. */
  readonly encryptedReasoning: boolean;
  /** MCP=on: `{"type":"mcp"}` tools name MAYA_MCP_CONFIG servers, with OpenAI's mcp_* items and events. */
  readonly mcp?: boolean;
  /** REASONING_KEY: the 32-byte AES-256-GCM key; undefined = a random key made at start-up. Never logged. */
  readonly reasoningKey?: Uint8Array;
}

function responsesValue(env: Env, name: string): [variable: string, raw: string | undefined] {
  const mayaValue = env[MAYA_PREFIX + name];
  if (mayaValue !== undefined && mayaValue !== '') return [MAYA_PREFIX + name, mayaValue];
  return [LEGACY_PREFIX + name, env[LEGACY_PREFIX + name] === '' ? undefined : env[LEGACY_PREFIX + name]];
}

function onOff(env: Env, name: string): boolean {
  const [variable, raw] = responsesValue(env, name);
  if (raw === undefined) return false;
  const text = raw.trim().toLowerCase();
  if (text !== 'on' && text !== 'off') throw new SettingsError(variable, `${variable}=${raw}: must be on or off`);
  return text === 'on';
}

/** A 32-byte key as 64 hex digits or base64 (44 characters); the message never echoes the value. */
function reasoningKey(env: Env): Uint8Array | undefined {
  const [variable, raw] = responsesValue(env, 'REASONING_KEY');
  if (raw === undefined) return undefined;
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text)
    ? Buffer.from(text, 'hex')
    : /^[A-Za-z0-9+/]{43}=$/.test(text)
      ? Buffer.from(text, 'base64')
      : undefined;
  if (key?.length !== 32)
    throw new SettingsError(
      variable,
      `${variable}: must be 32 bytes as 64 hex digits or base64 (the value is not shown)`,
    );
  return new Uint8Array(key);
}

/** Resolves the opt-ins; SettingsError names the variable. */
export function loadResponsesOptIns(env: Env): ResponsesOptIns {
  const key = reasoningKey(env);
  return {
    itemReferences: onOff(env, 'ITEM_REFERENCES'),
    encryptedReasoning: onOff(env, 'ENCRYPTED_REASONING'),
    ...(onOff(env, 'MCP') ? { mcp: true } : {}),
    ...(key !== undefined ? { reasoningKey: key } : {}),
  };
}

/** `{optIns}` when any opt-in is set, else nothing (the default server settings stay as they were). */
function optInsField(env: Env): { optIns?: ResponsesOptIns } {
  const optIns = loadResponsesOptIns(env);
  return optIns.itemReferences || optIns.encryptedReasoning || optIns.mcp || optIns.reasoningKey ? { optIns } : {};
}

/** Every variable the loaders above read (legacy STRATA_GLM_RESPONSES_* spellings aside), as the README lists them. */
export const SETTING_NAMES: readonly string[] = [
  'MAYA_MODEL',
  'MAYA_HOST',
  'MAYA_PORT',
  'MAYA_API_KEYS',
  'MAYA_CORS_ORIGINS',
  'MAYA_MAX_BODY_BYTES',
  'MAYA_LOG_LEVEL',
  'MAYA_STORE_URL',
  'MAYA_STORE_WAIT_REPLICAS',
  'MAYA_DIALECT',
  'MAYA_CHAT_TEMPLATE',
  ...Object.keys(SERVER_LIMITS).map((name) => `MAYA_${name}`),
  'MAYA_CONSTRAINED_DECODING',
  'MAYA_GRAMMAR_MAX_STRING',
  'MAYA_GRAMMAR_MAX_ITEMS',
  'MAYA_IMAGE_URL_ALLOW',
  ...Object.keys(IMAGE_LIMITS).map((name) => `MAYA_IMAGE_${name}`),
  'MAYA_WEIGHT_DTYPE',
  ...ENGINE_SETTING_NAMES,
  'MAYA_WEB',
  ...MCP_SETTING_NAMES,
  ...[...Object.keys(RESPONSES_SETTINGS), 'ITEM_REFERENCES', 'ENCRYPTED_REASONING', 'MCP', 'REASONING_KEY'].map(
    (name) => MAYA_PREFIX + name,
  ),
];
