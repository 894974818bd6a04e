/**
 * `maya serve`: builds the service (settings, registry, store, job manager, app), listens at
 * once with /health answering 503 `loading`, loads the model with progress, then answers 200.
 * stop() (the CLI calls it on SIGINT/SIGTERM) stops accepting, shuts the job manager and the
 * model down, and closes the server. The model loader is injected so tests run without a model.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../handlers/app.ts';
import { stderrLogger, type AppDeps, type Logger } from '../handlers/app-deps.ts';
import { createRegistry } from '../metrics/http-metrics.ts';
import type { ResponsesSettings, ServerSettings } from '../config/settings.ts';
import { JobManager } from '../store/jobs/job-manager.ts';
import { MemoryResponseStore } from '../store/responses/memory-response-store.ts';
import type { LoadProgress, ModelRuntime } from '../runtime/model-runtime.ts';

export type LoadModelRuntime = (
  dir: string,
  opts: { onProgress?: (p: LoadProgress) => void; dialect?: string },
) => Promise<ModelRuntime>;

export interface ServeOptions {
  settings: ResponsesSettings;
  server: ServerSettings;
  modelDir: string;
  loadRuntime: LoadModelRuntime;
  onProgress?: (p: LoadProgress) => void;
  /** Called once the socket listens, before loading starts. */
  onListening?: (origin: string) => void;
  logger?: Logger;
}

export interface RunningService {
  deps: AppDeps;
  server: Server;
  /** e.g. http://127.0.0.1:8080 */
  origin: string;
  /** Resolves with the runtime once loaded; rejects when loading fails (the server stays up). */
  loaded: Promise<ModelRuntime>;
  /** Stop accepting, close jobs and the model, close the server (idempotent). */
  stop(): Promise<void>;
}

const CLOSE_GRACE_MS = 5_000;

export async function startService(options: ServeOptions): Promise<RunningService> {
  const { settings, server: serverSettings } = options;
  let runtime: ModelRuntime | undefined;
  const registry = createRegistry();
  const store = new MemoryResponseStore({ settings, registry });
  const jobs = new JobManager({ settings, store, registry });
  const deps: AppDeps = {
    settings,
    server: serverSettings,
    registry,
    getRuntime: () => runtime,
    store,
    jobs,
    statusProviders: {},
    logger: options.logger ?? stderrLogger,
    shutdown: async () => {
      await jobs.close();
      await runtime?.close();
    },
  };
  const app = createApp(deps);
  const server = createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(serverSettings.port, serverSettings.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const origin = `http://${host}:${address.port}`;
  options.onListening?.(origin);
  let isStopping = false;
  const loaded = options
    .loadRuntime(options.modelDir, { onProgress: options.onProgress, dialect: serverSettings.dialect })
    .then(async (loadedRuntime) => {
      if (isStopping) {
        await loadedRuntime.close();
        throw new Error('stopped while loading');
      }
      runtime = loadedRuntime;
      return loadedRuntime;
    });
  loaded.catch(() => {});
  let stopping: Promise<void> | undefined;
  const stop = () => {
    isStopping = true;
    stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await deps.shutdown?.();
      const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
      await closed;
      clearTimeout(timer);
    })();
    return stopping;
  };
  return { deps, server, origin, loaded, stop };
}
