/**
 * The `maya` command (bin/maya.js runs it under Node through tsx; `bun cli/maya.ts` also works).
 *   maya serve [--model DIR|FILE.gguf] [--chat-template FILE] [--host H] [--port P] [--config FILE] [--api-key K]...
 *   maya generate ...        (cli/generate.ts)
 *   maya perplexity ...      (cli/perplexity.ts)
 * Precedence for every setting: command-line flag > real environment > the --config file's
 * `env` block > default. A bad setting prints its rule and exits 2; a model that fails to load
 * exits 1; SIGINT/SIGTERM shut down cleanly and exit 0.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configEnv } from '../config/config-file.ts';
import {
  loadResponsesSettings,
  loadServerSettings,
  SettingsError,
  type Env,
  type ResponsesSettings,
  type ServerSettings,
} from '../config/settings.ts';
import { settingsInEffect } from '../config/settings-in-effect.ts';
import { loadMcpSettings, type McpSettings } from '../config/mcp-settings.ts';
import { createLogger, type Logger } from '../handlers/logger.ts';
import type { LoadProgress, ModelRuntime } from '../runtime/model-runtime.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';
import { runGenerate } from './generate.ts';
import { runPerplexity } from './perplexity.ts';
import { startService, type RunningService } from './serve.ts';
import { StoreConnectError } from '../store/redis/redis-connection.ts';

export const DEFAULT_MODEL_DIR = fileURLToPath(new URL('../models/maya-demo', import.meta.url));

const USAGE = `Usage:
  maya serve [--model DIR|FILE.gguf] [--chat-template FILE] [--host H] [--port P] [--config FILE] [--api-key K]...
  maya generate ...
  maya perplexity ...

serve options (flag > environment > config file > default):
  --model DIR      Hugging Face model directory, or a GGUF file (MAYA_MODEL; default models/maya-demo)
  --chat-template FILE  Jinja chat template replacing the model's (MAYA_CHAT_TEMPLATE; a GGUF file without one needs it)
  --host H         listen address (MAYA_HOST; default 127.0.0.1)
  --port P         listen port (MAYA_PORT; default 8080; 0 = any free port)
  --config FILE    JSON file {"env": {...}} (the environment wins over it)
  --api-key K      accepted API key, repeatable (added to MAYA_API_KEYS)
`;

export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve(rest);
  if (command === 'generate') {
    return runGenerate(rest);
  }
  if (command === 'perplexity') return runPerplexity(rest);
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  process.stderr.write(`maya: unknown command '${command}'\n${USAGE}`);
  return 2;
}

export interface ServeFlags {
  model?: string;
  'chat-template'?: string;
  host?: string;
  port?: string;
  config?: string;
  'api-key'?: string[];
  help?: boolean;
}

/** The page's address in a browser: a wildcard listen address is reached through loopback. */
function pageAddress(origin: string): string {
  return origin.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
}

/** serve's flags, or the exit code of a usage error (printed with the usage). */
function parseServeFlags(argv: string[]): ServeFlags | number {
  try {
    return parseArgs({
      args: argv,
      options: {
        model: { type: 'string' },
        'chat-template': { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        config: { type: 'string' },
        'api-key': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    process.stderr.write(`maya: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
}

/**
 * The settings of `maya serve`, each taken from its flag, else the real environment, else the
 * --config file's env block, else its default. Throws SettingsError naming a bad value.
 */
/** `{mcp}` when MAYA_MCP_CONFIG names servers, else nothing. */
function mcpField(env: Env): { mcp?: McpSettings } {
  const mcp = loadMcpSettings(env);
  return mcp ? { mcp } : {};
}

export function loadServeSettings(
  flags: ServeFlags,
  processEnv: Env,
): { settings: ResponsesSettings; server: ServerSettings } {
  const env = configEnv(flags.config, processEnv);
  if (flags.host !== undefined) env.MAYA_HOST = flags.host;
  if (flags.port !== undefined) env.MAYA_PORT = flags.port;
  if (flags.model !== undefined) env.MAYA_MODEL = flags.model;
  if (flags['chat-template'] !== undefined) env.MAYA_CHAT_TEMPLATE = flags['chat-template'];
  const apiKeys = flags['api-key'] ?? [];
  return {
    settings: loadResponsesSettings(env),
    server: { ...loadServerSettings(env, apiKeys), ...mcpField(env), inEffect: settingsInEffect(env, apiKeys) },
  };
}

/** Loading progress: a line redrawn in place on a terminal, else one log line per stage. */
function progressPrinter(logger: Logger): (p: LoadProgress) => void {
  const isTty = process.stderr.isTTY === true;
  let lastStage = '';
  return ({ stage, fraction }) => {
    const percent = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
    if (isTty) process.stderr.write(`\r\x1b[Kmaya: loading ${stage} ${percent}%`);
    else if (stage !== lastStage) logger.info(`loading ${stage}`);
    lastStage = stage;
  };
}

async function serve(argv: string[]): Promise<number> {
  const flags = parseServeFlags(argv);
  if (typeof flags === 'number') return flags;
  if (flags.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let loaded;
  try {
    loaded = loadServeSettings(flags, process.env);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`maya: ${err.message}\n`);
    return 2;
  }
  const logger = createLogger(loaded.server.logLevel ?? 'info');
  const modelDir = resolve(loaded.server.model ?? DEFAULT_MODEL_DIR);
  const started = Date.now();
  const service = await startListening(loaded, modelDir, logger);
  if (typeof service === 'number') return service;
  const stopping = { signals: 0 };
  const stopped = stopOnSignals(service, logger, stopping);
  return serveUntilStopped(service, stopped, stopping, { modelDir, started, logger });
}

/** The service listening (the model loads behind it), or exit 1 when it cannot start. */
async function startListening(
  { settings, server }: { settings: ResponsesSettings; server: ServerSettings },
  modelDir: string,
  logger: Logger,
): Promise<RunningService | number> {
  try {
    return await startService({
      settings,
      server,
      modelDir,
      loadRuntime: loadModelRuntime,
      onProgress: progressPrinter(logger),
      onListening: (origin) => {
        logger.info(`listening on ${origin} (auth ${server.apiKeys.length > 0 ? 'on' : 'off'}); loading ${modelDir}`);
        if (server.web !== false) logger.info(`web page at ${pageAddress(origin)}/`);
      },
      logger,
    });
  } catch (err) {
    if (err instanceof StoreConnectError) logger.error(err.message);
    else logger.error(`cannot listen on ${server.host}:${server.port}: ${(err as Error).message}`);
    return 1;
  }
}

/** Resolves with the exit code once SIGINT/SIGTERM stopped the service (a second signal exits 1 at once). */
function stopOnSignals(service: RunningService, logger: Logger, stopping: { signals: number }): Promise<number> {
  return new Promise<number>((done) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (++stopping.signals > 1) process.exit(1);
      if (process.stderr.isTTY) process.stderr.write('\n');
      logger.info(`${signal}, shutting down`);
      service.stop().then(
        () => done(0),
        (err: unknown) => {
          logger.error(`shutdown: ${(err as Error).message}`);
          done(1);
        },
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/**
 * Waits for the model, then for a signal. A signal during loading ends the wait: the process exits
 * without finishing the load. A model that fails to load stops the service with exit 1.
 */
async function serveUntilStopped(
  service: RunningService,
  stopped: Promise<number>,
  stopping: { signals: number },
  { modelDir, started, logger }: { modelDir: string; started: number; logger: Logger },
): Promise<number> {
  let runtime: ModelRuntime | undefined;
  try {
    runtime = await Promise.race([service.loaded, stopped.then(() => undefined)]);
  } catch (err) {
    if (stopping.signals > 0) return stopped;
    if (process.stderr.isTTY) process.stderr.write('\n');
    logger.error(`cannot load the model from ${modelDir}: ${(err as Error).message}`);
    await service.stop();
    return 1;
  }
  if (runtime === undefined) return stopped;
  if (process.stderr.isTTY) process.stderr.write('\n');
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  logger.info(`model ${runtime.id} ready in ${seconds} s (context ${runtime.contextLength})`);
  return stopped;
}

const isEntry = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isEntry) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`maya: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
