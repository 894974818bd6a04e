/**
 * The rules every setting loader in config/ applies to a raw value: the SettingsError that names
 * the variable (the CLI prints it and exits 2), integers under a rule, fixed words, lists.
 */

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

/** The variables a loader reads: the real environment merged with a --config file's env block. */
export type Env = Readonly<Record<string, string | undefined>>;

export interface IntegerRule {
  allowZero?: boolean;
  max?: number;
  min?: number;
}

/** Decimal digits only: no sign, no exponent, no fraction, no surrounding text. */
export function parseInteger(variable: string, raw: string, rule: string): number {
  const text = raw.trim();
  if (!/^\d+$/.test(text)) throw new SettingsError(variable, `${variable}=${JSON.stringify(raw)}: must be ${rule}`);
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new SettingsError(variable, `${variable}=${JSON.stringify(raw)}: must be ${rule} (too large)`);
  return value;
}

function ruleText(rule: IntegerRule): string {
  let text = rule.allowZero ? 'an integer >= 0' : 'a positive integer';
  if (rule.min !== undefined) text += ` >= ${rule.min}`;
  if (rule.max !== undefined) text += ` <= ${rule.max}`;
  return text;
}

/** An integer setting's value under its rule (zero, min, max); SettingsError names the variable. */
export function ruledInteger(variable: string, raw: string, rule: IntegerRule): number {
  const text = ruleText(rule);
  const value = parseInteger(variable, raw, text);
  const isOutside =
    (value === 0 && !rule.allowZero) ||
    (rule.min !== undefined && value < rule.min) ||
    (rule.max !== undefined && value > rule.max);
  if (isOutside) throw new SettingsError(variable, `${variable}=${raw}: must be ${text}`);
  return value;
}

/** `env[variable]` unless unset or empty. */
export function rawValue(env: Env, variable: string): string | undefined {
  const raw = env[variable];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** One of `words` (after trimming); undefined when unset or empty. */
export function oneOf<const W extends string>(env: Env, variable: string, words: readonly W[]): W | undefined {
  const raw = rawValue(env, variable);
  if (raw === undefined) return undefined;
  const value = raw.trim();
  if (!words.includes(value as W))
    throw new SettingsError(variable, `${variable}=${raw}: must be one of ${words.join(', ')}`);
  return value as W;
}

/** Comma-separated items, trimmed, empty ones dropped. */
export function splitList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}
