/**
 * The `--config FILE` JSON file: `{ "env": { "NAME": "value", ... } }`. Its `env` block is merged
 * under the real environment: a variable set in the environment wins over the file (so a one-off
 * `MAYA_PORT=9000 maya serve --config x.json` does what it says). Numbers and booleans in the
 * block are accepted and turned into strings; anything else is a SettingsError.
 */
import { readFileSync } from 'node:fs';
import { SettingsError, type Env } from './settings.ts';

export function readConfigFile(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SettingsError(
      '--config',
      `--config ${path}: cannot read file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new SettingsError('--config', `--config ${path}: not valid JSON (${(err as Error).message})`);
  }
  return parseConfigObject(path, parsed);
}

export function parseConfigObject(path: string, parsed: unknown): Record<string, string> {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new SettingsError('--config', `--config ${path}: must be a JSON object like {"env": {...}}`);
  }
  const unknownKeys = Object.keys(parsed).filter((key) => key !== 'env');
  if (unknownKeys.length > 0)
    throw new SettingsError('--config', `--config ${path}: unknown key "${unknownKeys[0]}" (only "env" is read)`);
  const block = (parsed as { env?: unknown }).env;
  if (block === undefined) return {};
  if (block === null || typeof block !== 'object' || Array.isArray(block)) {
    throw new SettingsError('--config', `--config ${path}: "env" must be an object of strings`);
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(block)) {
    if (typeof value === 'string') out[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') out[name] = String(value);
    else throw new SettingsError(name, `--config ${path}: env.${name} must be a string or a number`);
  }
  return out;
}

/** The file's block under the real environment (environment wins). */
export function mergeEnv(
  fileEnv: Readonly<Record<string, string>>,
  processEnv: Env,
): Record<string, string | undefined> {
  return { ...fileEnv, ...Object.fromEntries(Object.entries(processEnv).filter(([, value]) => value !== undefined)) };
}

/** The variables a command reads: `--config FILE`'s env block (none without a path) under `processEnv`. */
export function configEnv(path: string | undefined, processEnv: Env): Record<string, string | undefined> {
  return mergeEnv(path === undefined ? {} : readConfigFile(path), processEnv);
}
