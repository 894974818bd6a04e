/**
 * HTTP test helpers: an in-process Maya app with a stub model runtime (FakeEngine), a memory
 * store and a fresh registry, driven through supertest on app.callback() (no ports); and
 * listenTestApp() for client tests (the openai SDK) on 127.0.0.1:0. Others import these.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import type Koa from 'koa';
import supertest from 'supertest';
import { createRegistry } from '../../metrics/http-metrics.ts';
import { createApp, type AppOptions } from '../../handlers/app.ts';
import { silentLogger, type AppDeps, type RequestState } from '../../handlers/app-deps.ts';
import { DEFAULT_RESPONSES_SETTINGS, type ResponsesSettings, type ServerSettings } from '../../config/settings.ts';
import { FakeEngine } from './fake-engine.ts';
import { loopbackServer } from './loopback.ts';
import { MemoryResponseStore } from '../../store/responses/memory-response-store.ts';
import type { ModelRuntime } from '../../runtime/model-runtime.ts';

/** A loaded-model handle over FakeEngine; tokenizer and dialect only where a test passes them. */
export function stubRuntime(overrides: Partial<ModelRuntime> = {}): ModelRuntime {
  const engine = overrides.engine ?? new FakeEngine();
  return {
    id: 'maya-test',
    dir: '/models/maya-test',
    contextLength: engine.info.contextLength,
    dialectName: 'glm45',
    createdAt: 1_700_000_000,
    engine,
    close: async () => engine.close(),
    ...overrides,
  } as ModelRuntime;
}

export interface TestAppOptions extends AppOptions {
  server?: Partial<ServerSettings>;
  settings?: Partial<ResponsesSettings>;
  /** The loaded model; null = still loading. Default stubRuntime(). */
  runtime?: ModelRuntime | null;
  deps?: Partial<AppDeps>;
}

export interface TestApp {
  app: Koa<RequestState>;
  deps: AppDeps;
  /** supertest bound to app.callback() (in-process, no port). */
  request: ReturnType<typeof supertest>;
  /** Finishes (or undoes) "loading": what the CLI does when the model is ready. */
  setRuntime(runtime: ModelRuntime | undefined): void;
}

export function createTestDeps(options: TestAppOptions = {}): {
  deps: AppDeps;
  setRuntime(runtime: ModelRuntime | undefined): void;
} {
  let runtime: ModelRuntime | undefined = options.runtime === null ? undefined : (options.runtime ?? stubRuntime());
  const settings = { ...DEFAULT_RESPONSES_SETTINGS, ...options.settings };
  const registry = options.deps?.registry ?? createRegistry();
  const deps: AppDeps = {
    settings,
    server: loopbackServer(options.server),
    registry,
    getRuntime: () => runtime,
    store: new MemoryResponseStore({ settings, registry }),
    statusProviders: {},
    logger: silentLogger,
    ...options.deps,
  };
  return { deps, setRuntime: (next) => void (runtime = next) };
}

export function createTestApp(options: TestAppOptions = {}): TestApp {
  const { deps, setRuntime } = createTestDeps(options);
  const app = createApp(deps, options);
  return { app, deps, request: supertest(app.callback()), setRuntime };
}

export interface ListeningApp extends TestApp {
  /** e.g. http://127.0.0.1:41234 (no /v1). */
  origin: string;
  server: Server;
  close(): Promise<void>;
}

/** The app on a real loopback socket (127.0.0.1, free port), for HTTP clients such as the SDK. */
export async function listenTestApp(options: TestAppOptions = {}): Promise<ListeningApp> {
  const testApp = createTestApp(options);
  const server = createServer(testApp.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...testApp,
    origin: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
