/**
 * One Redis connection for the shared store (MAYA_STORE_URL=redis://…): opening it at start-up
 * (a failure is a StoreConnectError with a clear message, and the CLI exits), health for
 * /v1/status and metrics, and the one translation of client failures into the store's refusal.
 *
 * Failure rule: the client never queues commands while disconnected (enableOfflineQueue: false)
 * and a command waits at most COMMAND_TIMEOUT_MS, so a request that needs the store fails fast
 * with StoreError `store_unavailable` (503, Retry-After: 1) instead of hanging; the client keeps
 * reconnecting in the background and the next request after Redis returns succeeds.
 */
import { Redis, ReplyError } from 'ioredis';
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

/** The URL without its password or user name, for messages and /v1/status. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return 'redis://(unparsable url)';
  }
}

/** A client for `url` that is not connected yet (call openRedis). */
export function createRedisClient(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), MAX_RECONNECT_DELAY_MS),
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
  if (!isReply || /^(LOADING|BUSY|READONLY|MASTERDOWN|OOM|NOSCRIPT)/.test(message)) {
    return new StoreError('store_unavailable', 'The response store is unavailable; retry shortly.');
  }
  return error as Error;
}
