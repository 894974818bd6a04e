/**
 * The `maya` command (bin/maya.js runs it under Node through tsx; `bun cli/maya.ts` also works).
 *   maya serve [--model DIR] [--host H] [--port P] [--config FILE] [--api-key K]...
 *   maya generate ...        (cli/generate.ts)
 * Precedence for every setting: command-line flag > real environment > the --config file's
 * `env` block > default. A bad setting prints its rule and exits 2; a model that fails to load
 * exits 1; SIGINT/SIGTERM shut down cleanly and exit 0.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mergeEnv, readConfigFile } from '../config/config-file.ts';
import { loadResponsesSettings, loadServerSettings, SettingsError } from '../config/settings.ts';
import { loadMcpSettings } from '../config/mcp-settings.ts';
import type { LoadProgress } from '../runtime/model-runtime.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';
import { runGenerate } from './generate.ts';
import { startService } from './serve.ts';
import { StoreConnectError } from '../store/redis/redis-connection.ts';

export const DEFAULT_MODEL_DIR = fileURLToPath(new URL('../models/maya-demo', import.meta.url));

const USAGE = `Usage:
  maya serve [--model DIR] [--host H] [--port P] [--config FILE] [--api-key K]...
  maya generate ...

serve options (flag > environment > config file > default):
  --model DIR      Hugging Face model directory (MAYA_MODEL; default models/maya-demo)
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
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  process.stderr.write(`maya: unknown command '${command}'\n${USAGE}`);
  return 2;
}

function progressPrinter(): (p: LoadProgress) => void {
  const isTty = process.stderr.isTTY === true;
  let lastStage = '';
  return ({ stage, fraction }) => {
    const percent = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
    if (isTty) {
      process.stderr.write(`\r\x1b[Kmaya: loading ${stage} ${percent}%`);
    } else if (stage !== lastStage) {
      process.stderr.write(`maya: loading ${stage}\n`);
    }
    lastStage = stage;
  };
}

async function serve(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        model: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        config: { type: 'string' },
        'api-key': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`maya: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let settings, server;
  try {
    const env = mergeEnv(values.config === undefined ? {} : readConfigFile(values.config), process.env);
    if (values.host !== undefined) env.MAYA_HOST = values.host;
    if (values.port !== undefined) env.MAYA_PORT = values.port;
    if (values.model !== undefined) env.MAYA_MODEL = values.model;
    settings = loadResponsesSettings(env);
    const mcp = loadMcpSettings(env);
    server = { ...loadServerSettings(env, values['api-key'] ?? []), ...(mcp ? { mcp } : {}) };
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`maya: ${err.message}\n`);
    return 2;
  }
  const modelDir = resolve(server.model ?? DEFAULT_MODEL_DIR);
  const started = Date.now();
  let service;
  try {
    service = await startService({
      settings,
      server,
      modelDir,
      loadRuntime: loadModelRuntime,
      onProgress: progressPrinter(),
      onListening: (origin) =>
        process.stderr.write(
          `maya: listening on ${origin} (auth ${server.apiKeys.length > 0 ? 'on' : 'off'}); loading ${modelDir}\n`,
        ),
    });
  } catch (err) {
    if (err instanceof StoreConnectError) {
      process.stderr.write(`maya: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`maya: cannot listen on ${server.host}:${server.port}: ${(err as Error).message}\n`);
    return 1;
  }
  let signals = 0;
  const stopped = new Promise<number>((done) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (++signals > 1) process.exit(1);
      process.stderr.write(`\nmaya: ${signal}, shutting down\n`);
      service.stop().then(
        () => done(0),
        (err: unknown) => {
          process.stderr.write(`maya: shutdown: ${(err as Error).message}\n`);
          done(1);
        },
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  try {
    // A signal during loading ends the wait: the process exits without finishing the load.
    const runtime = await Promise.race([service.loaded, stopped.then(() => undefined)]);
    if (runtime === undefined) return stopped;
    if (process.stderr.isTTY) process.stderr.write('\n');
    process.stderr.write(
      `maya: model ${runtime.id} ready in ${((Date.now() - started) / 1000).toFixed(1)} s (context ${runtime.contextLength})\n`,
    );
  } catch (err) {
    if (signals > 0) return stopped;
    process.stderr.write(`\nmaya: cannot load the model from ${modelDir}: ${(err as Error).message}\n`);
    await service.stop();
    return 1;
  }
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
