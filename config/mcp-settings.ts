/**
 * The MAYA_MCP_* settings: MAYA_MCP_CONFIG names a JSON file in the usual MCP client format,
 * `{"mcpServers": {NAME: {command, args?, env?, cwd?} | {url, headers?}}}` (each may add
 * `allowedTools` and `disabled`), read here once at start-up; MAYA_MCP_PERMISSION and the limits
 * beside it. Servers come from the operator only: no request can add one. A bad file or value is a
 * SettingsError naming the variable.
 */
import { readFileSync } from 'node:fs';
import { ruledInteger, SettingsError, type Env } from './setting-rules.ts';

/** One server of MAYA_MCP_CONFIG's `mcpServers`: a program Maya starts (stdio) or an address (Streamable HTTP). */
export type McpServerConfig = {
  /** The key in `mcpServers`: tools are offered as `<name>__<tool>`. */
  readonly name: string;
  /** Tools offered whatever their annotations under MAYA_MCP_PERMISSION=read. */
  readonly allowedTools: readonly string[];
} & (
  | {
      readonly transport: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      readonly env: Readonly<Record<string, string>>;
      readonly cwd?: string;
    }
  | { readonly transport: 'http'; readonly url: string; readonly headers: Readonly<Record<string, string>> }
);

/** The MAYA_MCP_* settings (config/mcp-settings.ts reads them). */
export interface McpSettings {
  readonly servers: readonly McpServerConfig[];
  /** MAYA_MCP_PERMISSION: `read` offers only tools marked readOnlyHint or named in allowedTools; `full` all. */
  readonly permission: 'read' | 'full';
  /** MAYA_MCP_MAX_ROUNDS: rounds of tool calls one request may run. */
  readonly maxRounds: number;
  /** MAYA_MCP_CALL_TIMEOUT_S, in milliseconds: one tool call's limit. */
  readonly callTimeoutMs: number;
  /** MAYA_MCP_RESULT_CHARS: most characters of one result the model reads (the rest is cut, and the cut marked). */
  readonly resultChars: number;
}

/** Integer limits (after MAYA_MCP_): rounds of tool calls, seconds per call, characters of a result. */
export const MCP_LIMITS = {
  MAX_ROUNDS: { default: 8 },
  CALL_TIMEOUT_S: { default: 60 },
  RESULT_CHARS: { default: 20_000 },
} as const;

/** Every variable this file reads, as the README's settings table lists them. */
export const MCP_SETTING_NAMES = [
  'MAYA_MCP_CONFIG',
  'MAYA_MCP_PERMISSION',
  ...Object.keys(MCP_LIMITS).map((name) => `MAYA_MCP_${name}`),
];

/** Server names: what a tool name may hold, without `__` (the separator of `<server>__<tool>`). */
const SERVER_NAME = /^(?!.*__)[A-Za-z0-9_-]{1,32}$/;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function fail(message: string): never {
  throw new SettingsError('MAYA_MCP_CONFIG', `MAYA_MCP_CONFIG: ${message}`);
}

function strings(value: unknown, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    fail(`${what} must be a list of strings`);
  return value as string[];
}

function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value) || Object.values(value).some((item) => typeof item !== 'string'))
    fail(`${what} must be an object of strings`);
  return value as Record<string, string>;
}

function serverConfig(name: string, entry: unknown): McpServerConfig {
  if (!SERVER_NAME.test(name)) fail(`server name ${JSON.stringify(name)} must be 1-32 of A-Z a-z 0-9 _ - without "__"`);
  if (!isObject(entry)) fail(`mcpServers.${name} must be an object with "command" or "url"`);
  const allowedTools = strings(entry.allowedTools, `mcpServers.${name}.allowedTools`);
  if (entry.url !== undefined) {
    if (entry.command !== undefined) fail(`mcpServers.${name} has both "command" and "url"; give one`);
    if (entry.type === 'sse') fail(`mcpServers.${name} uses the old SSE transport; Maya speaks Streamable HTTP`);
    let url: URL | undefined;
    try {
      url = new URL(String(entry.url));
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      fail(`mcpServers.${name}.url must be an http(s) URL`);
    const headers = stringMap(entry.headers, `mcpServers.${name}.headers`);
    return { name, allowedTools, transport: 'http', url: String(entry.url), headers };
  }
  if (typeof entry.command !== 'string' || entry.command.trim() === '')
    fail(`mcpServers.${name} needs "command" (a program to start) or "url"`);
  if (entry.cwd !== undefined && typeof entry.cwd !== 'string') fail(`mcpServers.${name}.cwd must be a string`);
  return {
    name,
    allowedTools,
    transport: 'stdio',
    command: entry.command,
    args: strings(entry.args, `mcpServers.${name}.args`),
    env: stringMap(entry.env, `mcpServers.${name}.env`),
    ...(typeof entry.cwd === 'string' ? { cwd: entry.cwd } : {}),
  };
}

/** The servers of a parsed MAYA_MCP_CONFIG file; `disabled: true` leaves one out. */
export function parseMcpServers(parsed: unknown): McpServerConfig[] {
  const block = isObject(parsed) ? parsed.mcpServers : undefined;
  if (!isObject(block)) fail('the file must be a JSON object like {"mcpServers": {"name": {...}}}');
  return Object.entries(block)
    .filter(([, entry]) => !(isObject(entry) && entry.disabled === true))
    .map(([name, entry]) => serverConfig(name, entry));
}

/** The MAYA_MCP_* settings, or undefined when MAYA_MCP_CONFIG is unset (no MCP servers). */
export function loadMcpSettings(
  env: Env,
  readFile: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): McpSettings | undefined {
  const path = env.MAYA_MCP_CONFIG?.trim();
  const permission = env.MAYA_MCP_PERMISSION?.trim() || 'read';
  if (permission !== 'read' && permission !== 'full')
    throw new SettingsError('MAYA_MCP_PERMISSION', `MAYA_MCP_PERMISSION=${permission}: must be read or full`);
  const limit = (name: keyof typeof MCP_LIMITS) => {
    const raw = env[`MAYA_MCP_${name}`];
    return raw === undefined || raw === '' ? MCP_LIMITS[name].default : ruledInteger(`MAYA_MCP_${name}`, raw, {});
  };
  const limits = {
    maxRounds: limit('MAX_ROUNDS'),
    callTimeoutMs: limit('CALL_TIMEOUT_S') * 1000,
    resultChars: limit('RESULT_CHARS'),
  };
  if (path === undefined || path === '') return undefined;
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    fail(`cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail(`${path} is not valid JSON (${(error as Error).message})`);
  }
  return { servers: parseMcpServers(parsed), permission, ...limits };
}
