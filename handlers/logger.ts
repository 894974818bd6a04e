/**
 * The one logger: start-up lines, warnings, errors and the access log all go through one pino
 * instance at MAYA_LOG_LEVEL (ServerSettings.logLevel). On stderr: human-readable lines
 * (pino-pretty) when stderr is a terminal, one JSON object per line otherwise. Fields never carry
 * an API key, request headers, prompts or outputs (a credential scope is a keyed hash, not a key).
 */
import { pino, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';
import type { LogLevel } from '../config/settings.ts';

/** Structured log lines. Never pass API keys or request content as fields. */
export interface Logger {
  /** Routine events an operator does not need by default (a client that went away mid-stream). */
  debug?(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Where a logger writes: stderr (JSON, or pretty on a terminal) unless given (tests pass a buffer). */
function stderrDestination(): DestinationStream {
  if (process.stderr.isTTY !== true) return pino.destination({ dest: 2, sync: true });
  return pretty({
    destination: 2,
    sync: true,
    colorize: true,
    messageKey: 'message',
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
}

/**
 * A logger at `level` writing `{level, time, message, ...fields}` lines (pino's numeric levels,
 * ISO time) to `destination`, default stderr.
 */
export function createLogger(level: LogLevel, destination: DestinationStream = stderrDestination()): Logger {
  const log = pino(
    { level, base: undefined, messageKey: 'message', timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
  return {
    debug: (message, fields) => log.debug(fields ?? {}, message),
    info: (message, fields) => log.info(fields ?? {}, message),
    warn: (message, fields) => log.warn(fields ?? {}, message),
    error: (message, fields) => log.error(fields ?? {}, message),
  };
}

export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
