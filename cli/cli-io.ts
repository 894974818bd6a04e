/**
 * What the engine's one-shot CLIs (`maya generate`, `maya perplexity`) share: where they write (a test
 * passes its own), and the error a bad command line raises (exit 2 with the usage text).
 */

import { SettingsError } from '../config/settings.ts';

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

export const defaultIo: CliIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

export class UsageError extends Error {}

/**
 * Runs one command's body: its exit status; for a thrown error, the message on stderr after
 * `maya NAME:` (with the usage text for a bad command line) and exit 2 for a bad setting, a bad
 * command line or what `isUserError` names, else 1.
 */
export async function runCommand(
  name: string,
  usage: string,
  io: CliIo,
  body: () => Promise<number>,
  isUserError: (err: unknown) => boolean = () => false,
): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof SettingsError) {
      io.err(`maya ${name}: ${err.message}\n`);
      return 2;
    }
    const isUsage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    io.err(`maya ${name}: ${(err as Error).message}\n${isUsage ? usage : ''}`);
    return isUsage || isUserError(err) ? 2 : 1;
  }
}
