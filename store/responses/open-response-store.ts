/**
 * Picks the response store backend at start-up: MAYA_STORE_URL unset → the in-memory store (one
 * process); `redis://…` / `rediss://…` / `redis+sentinel://…` → the Redis store shared by every
 * replica on that Redis (with MAYA_STORE_WAIT_REPLICAS, on a second connection for its writes).
 * Also what a shared backend has to share besides records: the credential-scope secret (so one
 * API key maps to the same scope on every replica), and the backend's name and health for
 * /v1/status (`responses_store`) and metrics (`maya:responses_store_info{backend}`,
 * `maya:responses_store_up`; per replica, no URL, credential or content in them).
 */
import { randomBytes } from 'node:crypto';
import { Gauge, type Registry } from 'prom-client';
import type { ResponsesSettings } from '../../config/settings.ts';
import { createRedisClient, isRedisReady, openRedis, redactUrl, StoreConnectError } from '../redis/redis-connection.ts';
import { MemoryResponseStore } from './memory-response-store.ts';
import { DEFAULT_STORE_PREFIX, RedisResponseStore } from './redis-response-store.ts';
import type { ResponseStore } from './response-store.ts';
import type { JobManager } from '../jobs/job-manager.ts';
import { RedisJobMirror } from '../jobs/redis-job-mirror.ts';

export type StoreBackendName = 'memory' | 'redis';

export interface ResponseStoreBackend {
  readonly name: StoreBackendName;
  readonly store: ResponseStore;
  /** The secret credential scopes are keyed with; undefined = a per-process one is fine. */
  readonly scopeSecret?: Buffer;
  /** Shares `jobs`' task records with the other replicas (started); absent for memory. */
  shareJobs?(jobs: JobManager, onError?: (error: unknown) => void): Promise<RedisJobMirror>;
  /** The `responses_store` section of /v1/status. */
  status(): Record<string, unknown>;
  /** Closes the connection (after the job manager stopped); idempotent. */
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  settings: ResponsesSettings;
  /** MAYA_STORE_URL; undefined = in memory. */
  storeUrl?: string;
  registry?: Registry;
  /** Key prefix in Redis (tests); default `maya:`. */
  prefix?: string;
  /** MAYA_STORE_WAIT_REPLICAS: replicas that must acknowledge each stored response; 0/undefined = none. */
  waitReplicas?: number;
}

/** Opens the configured backend; a Redis that cannot be reached throws StoreConnectError. */
export async function openResponseStore(options: OpenStoreOptions): Promise<ResponseStoreBackend> {
  const { settings, storeUrl, registry } = options;
  if (storeUrl === undefined) {
    registerBackendMetrics(registry, 'memory', () => true);
    return {
      name: 'memory',
      store: new MemoryResponseStore({ settings, registry }),
      status: () => ({ backend: 'memory', healthy: true }),
      close: async () => {},
    };
  }
  const client = createRedisClient(storeUrl);
  await openRedis(client, storeUrl);
  const waitReplicas = options.waitReplicas ?? 0;
  const writer = waitReplicas > 0 ? client.duplicate() : undefined;
  if (writer) {
    try {
      await openRedis(writer, storeUrl);
    } catch (error) {
      client.disconnect();
      throw error;
    }
  }
  const prefix = options.prefix ?? DEFAULT_STORE_PREFIX;
  let scopeSecret: Buffer;
  try {
    // The first replica picks the secret; every later one reads the same (SET NX, then GET).
    await client.set(`${prefix}scope-secret`, randomBytes(32).toString('hex'), 'NX');
    scopeSecret = Buffer.from((await client.get(`${prefix}scope-secret`)) ?? '', 'hex');
  } catch (error) {
    client.disconnect();
    writer?.disconnect();
    throw new StoreConnectError(
      `cannot read the shared scope secret from ${redactUrl(storeUrl)} (MAYA_STORE_URL): ${(error as Error).message}`,
    );
  }
  // A Redis that restarted empty gets this replica's secret back, so replicas started later agree.
  client.on('ready', () => void client.set(`${prefix}scope-secret`, scopeSecret.toString('hex'), 'NX').catch(() => {}));
  registerBackendMetrics(registry, 'redis', () => isRedisReady(client));
  let isClosed = false;
  const durable = writer ? { durable: { client: writer, replicas: waitReplicas } } : {};
  const store = new RedisResponseStore({ client, settings, registry, prefix, ...durable });
  return {
    name: 'redis',
    store,
    scopeSecret,
    shareJobs: async (jobs, onError) => {
      const mirror = new RedisJobMirror({ client, prefix, jobs, settings, store, onError, ...durable });
      try {
        await mirror.start();
      } catch (error) {
        client.disconnect();
        writer?.disconnect();
        throw new StoreConnectError(
          `cannot take a replica lease at ${redactUrl(storeUrl)} (MAYA_STORE_URL): ${(error as Error).message}`,
        );
      }
      return mirror;
    },
    status: () => ({
      backend: 'redis',
      healthy: isRedisReady(client),
      url: redactUrl(storeUrl),
      connection: client.status,
    }),
    close: async () => {
      if (isClosed) return;
      isClosed = true;
      await Promise.all([client, writer].map((each) => each?.quit().catch(() => each.disconnect())));
    },
  };
}

function registerBackendMetrics(registry: Registry | undefined, backend: StoreBackendName, isUp: () => boolean): void {
  if (!registry) return;
  const registers = [registry];
  new Gauge({
    name: 'maya:responses_store_info',
    help: 'The response store backend in use (value 1)',
    labelNames: ['backend'],
    registers,
  }).set({ backend }, 1);
  new Gauge({
    name: 'maya:responses_store_up',
    help: '1 while the response store answers (always for memory), 0 while a shared store is unreachable',
    registers,
    collect() {
      this.set(isUp() ? 1 : 0);
    },
  });
}
