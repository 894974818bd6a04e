/**
 * One Redis connection for the shared store (MAYA_STORE_URL=redis://… or redis+sentinel://…):
 * opening it at start-up (a failure is a StoreConnectError with a clear message, and the CLI
 * exits), health for /v1/status and metrics, and the one translation of client failures into the
 * store's refusal.
 *
 * Failure rule: the client never queues commands while disconnected (enableOfflineQueue: false)
 * and a command waits at most COMMAND_TIMEOUT_MS, so a request that needs the store fails fast
 * with StoreError `store_unavailable` (503, Retry-After: 1) instead of hanging; the client keeps
 * reconnecting in the background and the next request after Redis returns succeeds.
 *
 * Sentinel (ioredis's own support): the client asks the Sentinels for the primary of the master
 * group, checks the node it reached really is a primary (INFO role), and reconnects through the
 * Sentinels when one of them announces a failover (+switch-master) or when the node it is on
 * answers READONLY (it was demoted to a replica); commands in that gap fail fast as above.
 */
import { Redis, ReplyError, type RedisOptions } from 'ioredis';
import { parseStoreUrl } from '../../config/store-url.ts';
import { StoreError } from '../responses/response-store.ts';

/** How long one store command may take before the request gets 503. */
export const COMMAND_TIMEOUT_MS = 2_000;
/** How long start-up waits for the first connection. */
export const CONNECT_TIMEOUT_MS = 3_000;
/** Upper bound of the reconnect back-off (a returning Redis is noticed within this). */
export const MAX_RECONNECT_DELAY_MS = 1_000;

/** Redis could not be reached at start-up; `maya serve` prints the message and exits 1. */
export class StoreConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreConnectError';
  }
}

/** How long one Sentinel may take to name the primary before the next Sentinel is asked. */
export const SENTINEL_COMMAND_TIMEOUT_MS = 500;

/**
 * The URL without its user name, password or query (which may hold the Sentinels' password), for
 * messages and /v1/status. Everything up to the last `@` is credentials, even unescaped `/` or `@`.
 */
export function redactUrl(url: string): string {
  const scheme = /^[a-z+]+:\/\//.exec(url.trim())?.[0];
  if (scheme === undefined) return 'redis://(unparsable url)';
  const rest = url.trim().slice(scheme.length).split('?')[0]!;
  const hostAndPath = rest.slice(rest.lastIndexOf('@') + 1);
  return `${scheme}${hostAndPath.replace(/\/$/, '')}`;
}

/** A client for `url` (either MAYA_STORE_URL form) that is not connected yet (call openRedis). */
export function createRedisClient(url: string): Redis {
  const target = parseStoreUrl(url);
  if (!target) throw new StoreConnectError(`MAYA_STORE_URL is not a Redis URL: ${redactUrl(url)}`);
  const backoff = (times: number) => Math.min(50 * 2 ** Math.min(times, 5), MAX_RECONNECT_DELAY_MS);
  const common: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: backoff,
    // A node that answers READONLY was demoted: drop the connection and find the primary again
    // (the command itself fails: it is not resent).
    reconnectOnError: (error) => (/READONLY/.test(error.message) ? 1 : false),
  };
  if (target.kind === 'redis') return new Redis(target.url, common);
  return new Redis({
    ...common,
    sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
    name: target.name,
    role: 'master',
    db: target.db,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.sentinelPassword !== undefined ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(target.tls ? { tls: {} } : {}),
    sentinelRetryStrategy: backoff,
    sentinelCommandTimeout: SENTINEL_COMMAND_TIMEOUT_MS,
    failoverDetector: true,
  });
}

/**
 * Connects and checks the server answers PING within CONNECT_TIMEOUT_MS; otherwise disconnects
 * and throws StoreConnectError naming the (redacted) URL and the cause.
 */
export async function openRedis(client: Redis, url: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
  });
  // Connection errors are reported through the promises below; without a listener ioredis would
  // also print every reconnect attempt's error.
  client.on('error', () => {});
  try {
    await Promise.race([client.connect().then(() => client.ping()), timeout]);
  } catch (error) {
    client.disconnect();
    throw new StoreConnectError(
      `cannot reach the response store at ${redactUrl(url)} (MAYA_STORE_URL): ${(error as Error).message}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How long a write waits for MAYA_STORE_WAIT_REPLICAS replicas to acknowledge it (Redis WAIT)
 * before it is refused: replication on one network is a few milliseconds; a replica that is
 * missing (resyncing after a failover) costs each write this long, and a 503.
 */
export const STORE_WAIT_MS = 500;

/** Defines each Lua script of `scripts` (name → source, keys passed as arguments) on each client that lacks it. */
export function defineScripts(
  clients: ReadonlyArray<Redis | undefined>,
  scripts: Readonly<Record<string, string>>,
): void {
  for (const client of clients) {
    for (const [name, lua] of Object.entries(scripts)) {
      if (client && typeof (client as unknown as Record<string, unknown>)[name] !== 'function')
        client.defineCommand(name, { numberOfKeys: 0, lua });
    }
  }
}

/**
 * Waits until `replicas` replicas hold every write this connection made (Redis WAIT); fewer
 * within STORE_WAIT_MS → StoreError `store_unavailable`: the write may survive on the primary
 * alone, so it is not reported as stored. WAIT blocks its connection, so callers give it a
 * connection of its own (the store's write connection), never the one leases are renewed on.
 */
export async function waitForReplicas(client: Redis, replicas: number): Promise<void> {
  let acknowledged: number;
  try {
    acknowledged = await client.wait(replicas, STORE_WAIT_MS);
  } catch (error) {
    throw storeFailure(error);
  }
  if (acknowledged < replicas) {
    throw new StoreError(
      'store_unavailable',
      'The response store could not confirm the write on its replicas; retry shortly.',
    );
  }
}

/** True while commands can be sent. */
export function isRedisReady(client: Redis): boolean {
  return client.status === 'ready';
}

/**
 * A failed Redis call as the error to raise: a lost or slow connection (or a Redis that is
 * loading, read-only or out of memory) is the store being unavailable (503, Retry-After);
 * anything else (a script bug) is rethrown as it is, a 500.
 */
export function storeFailure(error: unknown): Error {
  if (error instanceof StoreError) return error;
  const message = (error as Error)?.message ?? String(error);
  const isReply = error instanceof (ReplyError as new () => Error);
  // A script run on a node that was just demoted reports READONLY inside its error text.
  if (!isReply || /^(LOADING|BUSY|READONLY|MASTERDOWN|OOM|NOSCRIPT|NOREPLICAS|TRYAGAIN)|READONLY/.test(message)) {
    return new StoreError('store_unavailable', 'The response store is unavailable; retry shortly.');
  }
  return error as Error;
}
