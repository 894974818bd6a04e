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
import type Koa from 'koa';
import { createApp } from '../handlers/app.ts';
import type { AppDeps, RequestState } from '../handlers/app-deps.ts';
import { createLogger, type Logger } from '../handlers/logger.ts';
import { createRegistry } from '../metrics/http-metrics.ts';
import { engineOptions } from '../config/engine-settings.ts';
import {
  DEFAULT_SERVER_LIMITS,
  type ResponsesSettings,
  type ServerLimits,
  type ServerSettings,
} from '../config/settings.ts';
import type { NativeEngineOptions } from '../engine-cuda/native-engine.ts';
import { JobManager } from '../store/jobs/job-manager.ts';
import type { RedisJobMirror } from '../store/jobs/redis-job-mirror.ts';
import { McpServers } from '../mcp/mcp-servers.ts';
import { openResponseStore } from '../store/responses/open-response-store.ts';
import type { LoadProgress, ModelRuntime } from '../runtime/model-runtime.ts';

export type LoadModelRuntime = (
  dir: string,
  opts: {
    onProgress?: (p: LoadProgress) => void;
    dialect?: string;
    constrainedDecoding?: boolean;
    grammarLimits?: { maxStringLength: number; maxItems: number };
    /** How the engine is created (MAYA_WEIGHT_DTYPE, MAYA_ENGINE_*, MAYA_CUDA_*). */
    engine?: NativeEngineOptions;
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
  /** The one logger; default one at server.logLevel on stderr. */
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

/** What the service's parts share: the model once loaded, and whether stop() began. */
interface ServiceState {
  runtime: ModelRuntime | undefined;
  isStopping: boolean;
}

type StoreBackend = Awaited<ReturnType<typeof openResponseStore>>;

/** The response store, the job manager, (Redis) the shared task records and the operator's MCP servers. */
interface Stores {
  backend: StoreBackend;
  jobs: JobManager;
  sharedJobs: RedisJobMirror | undefined;
  mcp: McpServers | undefined;
}

export async function startService(options: ServeOptions): Promise<RunningService> {
  const { server: serverSettings } = options;
  const logger = options.logger ?? createLogger(serverSettings.logLevel ?? 'info');
  const limits = serverSettings.limits ?? DEFAULT_SERVER_LIMITS;
  const state: ServiceState = { runtime: undefined, isStopping: false };
  const registry = createRegistry();
  const stores = await openStores(options, registry, logger);
  const deps = appDeps(options, stores, registry, logger, state);
  const server = createHttpServer(createApp(deps), limits);
  const inflight = trackRequests(server);
  deps.shutdown = () => shutDown(stores, inflight, state, limits.SHUTDOWN_GRACE_S * 1000);
  const origin = await listen(server, serverSettings.port, serverSettings.host);
  options.onListening?.(origin);
  deps.isStopping = () => state.isStopping;
  const loaded = loadModel(options, state);
  return { deps, server, origin, loaded, stop: stopper(server, deps, state) };
}

/**
 * MAYA_STORE_URL=redis://… shares the store (and the background task records) between replicas;
 * an unreachable Redis throws StoreConnectError here, before the server listens.
 */
async function openStores(
  options: ServeOptions,
  registry: ReturnType<typeof createRegistry>,
  logger: Logger,
): Promise<Stores> {
  const { settings } = options;
  const backend = await openResponseStore({
    settings,
    storeUrl: options.server.storeUrl,
    waitReplicas: options.server.storeWaitReplicas,
    registry,
  });
  const jobs = new JobManager({ settings, store: backend.store, registry });
  const sharedJobs = await backend.shareJobs?.(jobs, (error) =>
    logger.warn('shared task record write failed', { error: (error as Error).message }),
  );
  const mcp = options.server.mcp ? new McpServers(options.server.mcp, logger) : undefined;
  mcp?.start();
  return { backend, jobs, sharedJobs, mcp };
}

function appDeps(
  options: ServeOptions,
  { backend, jobs, sharedJobs, mcp }: Stores,
  registry: ReturnType<typeof createRegistry>,
  logger: Logger,
  state: ServiceState,
): AppDeps {
  return {
    settings: options.settings,
    server: options.server,
    ...(mcp ? { mcp } : {}),
    registry,
    getRuntime: () => state.runtime,
    store: backend.store,
    jobs,
    ...(sharedJobs ? { sharedJobs } : {}),
    statusProviders: { responses_store: () => backend.status() },
    ...(backend.scopeSecret ? { scopeSecret: backend.scopeSecret } : {}),
    logger,
  };
}

/** The HTTP server with the socket limits (header/request/keep-alive timeouts, connections). */
function createHttpServer(app: Koa<RequestState>, limits: ServerLimits): Server {
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
  return server;
}

/** Listens; resolves with the origin, e.g. http://127.0.0.1:8080 (IPv6 hosts bracketed). */
async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}

/** The model loader's options from the server settings: dialect, decoding and the engine's settings. */
function loadOptions(options: ServeOptions): Parameters<LoadModelRuntime>[1] {
  const { server } = options;
  return {
    onProgress: options.onProgress,
    dialect: server.dialect,
    ...(server.chatTemplate !== undefined ? { chatTemplate: server.chatTemplate } : {}),
    engine: engineOptions(server.engine, server.weightDtype),
    ...(server.decoding
      ? {
          constrainedDecoding: server.decoding.constrained,
          grammarLimits: { maxStringLength: server.decoding.maxString, maxItems: server.decoding.maxItems },
        }
      : {}),
  };
}

/** Loads the model; it is served once loaded, or closed at once if stop() began meanwhile. */
function loadModel(options: ServeOptions, state: ServiceState): Promise<ModelRuntime> {
  const loaded = options.loadRuntime(options.modelDir, loadOptions(options)).then(async (runtime) => {
    if (state.isStopping) {
      await runtime.close();
      throw new Error('stopped while loading');
    }
    state.runtime = runtime;
    return runtime;
  });
  loaded.catch(() => {});
  return loaded;
}

/**
 * The shutdown the CLI runs on SIGINT/SIGTERM once the server stopped accepting: background tasks
 * are cancelled while foreground requests run on for the grace period, then the model closes, then
 * the stores. A task that does not release in time is reported (JobCleanupError) only after the
 * grace period has run out and the model has closed, which is what frees such a task.
 */
async function shutDown(
  { backend, jobs, sharedJobs, mcp }: Stores,
  inflight: { settled(ms: number): Promise<void> },
  state: ServiceState,
  graceMs: number,
): Promise<void> {
  try {
    const [cleanup] = await Promise.allSettled([jobs.close(), inflight.settled(graceMs)]);
    await state.runtime?.close();
    if (cleanup.status === 'rejected') throw cleanup.reason;
  } finally {
    await mcp?.close();
    await sharedJobs?.close();
    await backend.close();
  }
}

/** stop(): stop accepting, shut down, close the server (idempotent; connections cut after CLOSE_GRACE_MS). */
function stopper(server: Server, deps: AppDeps, state: ServiceState): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    state.isStopping = true;
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
