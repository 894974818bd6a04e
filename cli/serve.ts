/**
 * `maya serve`: builds the service (settings, registry, store, job manager, app), listens at
 * once with /health answering 503 `loading`, loads the model with progress, then answers 200.
 * The socket limits come from ServerSettings.limits (connections, header/request/keep-alive
 * timeouts). stop() (the CLI calls it on SIGINT/SIGTERM) stops accepting, cancels background
 * tasks (the spec's shutdown rule), lets foreground requests run on for SHUTDOWN_GRACE_S, then
 * closes the model: a generation still running then ends `failed` with `server_shutdown`, never
 * as a silent success. The model loader is injected so tests run without a model.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../handlers/app.ts';
import { stderrLogger, type AppDeps, type Logger } from '../handlers/app-deps.ts';
import { createRegistry } from '../metrics/http-metrics.ts';
import { DEFAULT_SERVER_LIMITS, type ResponsesSettings, type ServerSettings } from '../config/settings.ts';
import { JobManager } from '../store/jobs/job-manager.ts';
import { openResponseStore } from '../store/responses/open-response-store.ts';
import type { LoadProgress, ModelRuntime } from '../runtime/model-runtime.ts';

export type LoadModelRuntime = (
  dir: string,
  opts: {
    onProgress?: (p: LoadProgress) => void;
    dialect?: string;
    constrainedDecoding?: boolean;
    grammarLimits?: { maxStringLength: number; maxItems: number };
  },
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
  // MAYA_STORE_URL=redis://… shares the store between replicas; an unreachable Redis throws
  // StoreConnectError here, before the server listens.
  const backend = await openResponseStore({
    settings,
    storeUrl: serverSettings.storeUrl,
    waitReplicas: serverSettings.storeWaitReplicas,
    registry,
  });
  const store = backend.store;
  const jobs = new JobManager({ settings, store, registry });
  const logger = options.logger ?? stderrLogger;
  const sharedJobs = await backend.shareJobs?.(jobs, (error) =>
    logger.warn('shared task record write failed', { error: (error as Error).message }),
  );
  const deps: AppDeps = {
    settings,
    server: serverSettings,
    registry,
    getRuntime: () => runtime,
    store,
    jobs,
    ...(sharedJobs ? { sharedJobs } : {}),
    statusProviders: { responses_store: () => backend.status() },
    ...(backend.scopeSecret ? { scopeSecret: backend.scopeSecret } : {}),
    logger,
  };
  const limits = serverSettings.limits ?? DEFAULT_SERVER_LIMITS;
  const app = createApp(deps);
  const server = createServer(
    {
      headersTimeout: limits.HEADERS_TIMEOUT_S * 1000,
      requestTimeout: limits.REQUEST_TIMEOUT_S * 1000,
      keepAliveTimeout: limits.KEEPALIVE_TIMEOUT_S * 1000,
      // How often the header/request timeouts are checked (Node's default is 30 s).
      connectionsCheckingInterval: 1000,
    },
    app.callback(),
  );
  server.maxConnections = limits.MAX_CONNECTIONS;
  const inflight = trackRequests(server);
  deps.shutdown = async () => {
    try {
      // A task that does not release in time is reported (JobCleanupError) only after the grace
      // period has run out and the model has closed, which is what frees such a task.
      const [cleanup] = await Promise.allSettled([jobs.close(), inflight.settled(limits.SHUTDOWN_GRACE_S * 1000)]);
      await runtime?.close();
      if (cleanup.status === 'rejected') throw cleanup.reason;
    } finally {
      await sharedJobs?.close();
      await backend.close();
    }
  };
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
  deps.isStopping = () => isStopping;
  const loaded = options
    .loadRuntime(options.modelDir, {
      onProgress: options.onProgress,
      dialect: serverSettings.dialect,
      ...(serverSettings.weightDtype ? { weightDtype: serverSettings.weightDtype } : {}),
      ...(serverSettings.decoding
        ? {
            constrainedDecoding: serverSettings.decoding.constrained,
            grammarLimits: {
              maxStringLength: serverSettings.decoding.maxString,
              maxItems: serverSettings.decoding.maxItems,
            },
          }
        : {}),
    })
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

/** Counts requests whose response has not closed; settled(ms) waits until none is left, or ms. */
function trackRequests(server: Server): { settled(ms: number): Promise<void> } {
  let open = 0;
  let idle: (() => void) | undefined;
  server.on('request', (_req, res) => {
    open++;
    res.once('close', () => {
      open--;
      if (open === 0) idle?.();
    });
  });
  return {
    settled: (ms) =>
      new Promise<void>((resolve) => {
        if (open === 0) return resolve();
        const timer = setTimeout(resolve, ms);
        idle = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
}
