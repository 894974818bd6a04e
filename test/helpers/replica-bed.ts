/**
 * A production-shaped test bed on loopback, started and stopped by the caller: N `maya serve`
 * replicas (separate processes, demo model) behind Debian's haproxy (round robin, health checks on
 * /health), sharing a Redis primary with one replica (or more), watched by three Redis Sentinels; the
 * replicas reach Redis through MAYA_STORE_URL=redis+sentinel://… (bench/chaos.bench.ts and
 * test/e2e/redis-sentinel.test.ts use it). Also the faults: kill or signal a replica, restart it,
 * force a Sentinel failover, pause the Redis primary.
 *
 * haproxy settings (the README's deployment recipe is this file's HAPROXY_CONFIG): health checks
 * every 500 ms (down after 2 failures, up after 2 successes), a request whose connection to a
 * replica fails is sent to another one (`retry-on conn-failure empty-response`, `option
 * redispatch`), and each answer names its replica (`x-maya-replica`). Sentinel settings:
 * SENTINEL_CONFIG. Nothing persists (no RDB, no AOF); every process is killed when the caller's
 * process exits. Missing haproxy/redis-sentinel → the start fails naming scripts/provision-test.sh.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { freePort } from './loopback.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/maya.js');
export const MASTER_NAME = 'maya';
/** Sentinel: a primary silent this long is subjectively down (then a quorum of 2 fails it over). */
export const DOWN_AFTER_MS = 2_000;

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface BedOptions {
  replicas?: number;
  /** Redis replicas of the primary (default 1). */
  redisReplicas?: number;
  /** Extra environment of every replica (e.g. MAYA_STORE_WAIT_REPLICAS). */
  env?: Record<string, string>;
  apiKeys?: string[];
  /** Where logs and configs go; default a fresh temporary folder, removed by stop() when it made it. */
  dir?: string;
}

export interface BedReplica {
  readonly name: string;
  readonly port: number;
  readonly origin: string;
  /** The running process, or undefined while it is down. */
  child: ChildProcess | undefined;
}

export interface RedisNode {
  readonly port: number;
  readonly child: ChildProcess;
}

export interface ReplicaBed {
  /** haproxy's address: what clients use. */
  readonly origin: string;
  readonly replicas: BedReplica[];
  readonly redis: RedisNode[];
  readonly sentinels: RedisNode[];
  readonly storeUrl: string;
  readonly dir: string;
  /** Starts (or restarts) replica `index` and resolves once its /health is 200. */
  startReplica(index: number): Promise<void>;
  /** Sends `signal` to replica `index`; resolves once the process exited. */
  signalReplica(index: number, signal: NodeJS.Signals): Promise<{ code: number | null; signal: string | null }>;
  /** The Redis node Sentinel names as primary now. */
  primary(): Promise<RedisNode>;
  /** SENTINEL FAILOVER; resolves with the new primary once it is writable and its replica in sync. */
  failover(): Promise<RedisNode>;
  /** Waits until haproxy routes to every running replica (each answered once through it). */
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const HAPROXY_CONFIG = (port: number, replicas: BedReplica[]) => `global
  maxconn 512
defaults
  mode http
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  timeout http-request 10s
  retries 2
  option redispatch
  retry-on conn-failure empty-response
  option http-buffer-request
frontend maya
  bind 127.0.0.1:${port}
  default_backend replicas
backend replicas
  balance roundrobin
  option httpchk GET /health
  http-check expect status 200
  default-server inter 500ms fastinter 250ms fall 2 rise 2
  http-response set-header x-maya-replica %[srv_name]
${replicas.map((replica) => `  server ${replica.name} 127.0.0.1:${replica.port} check`).join('\n')}
`;

const SENTINEL_CONFIG = (port: number, primaryPort: number, dir: string) => `port ${port}
bind 127.0.0.1
dir ${dir}
sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primaryPort} 2
sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MS}
sentinel failover-timeout ${MASTER_NAME} 10000
sentinel parallel-syncs ${MASTER_NAME} 1
`;

const REDIS_ARGS = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'];

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function requireTools(): void {
  const missing = ['haproxy', 'redis-server', 'redis-sentinel'].filter(
    (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
  );
  if (missing.length > 0)
    throw new Error(
      `the replica test bed needs ${missing.join(', ')}: run bash scripts/provision-test.sh haproxy redis-sentinel`,
    );
}

function launch(command: string, args: string[], log: string, env?: NodeJS.ProcessEnv): ChildProcess {
  const fd = openSync(log, 'a');
  const child = spawn(command, args, { stdio: ['ignore', fd, fd], env: env ?? process.env });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  throw new Error(`test bed: ${what} not within ${timeoutMs} ms`);
}

/** A short-lived connection for one admin command (no retries, quick timeouts). */
async function admin<T>(port: number, run: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    commandTimeout: 1_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await run(client);
  } finally {
    client.disconnect();
  }
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

async function startRedis(dir: string, replicaOf?: number): Promise<RedisNode> {
  const port = await freePort();
  const args = ['--port', String(port), ...REDIS_ARGS, '--dir', dir];
  if (replicaOf !== undefined) args.push('--replicaof', '127.0.0.1', String(replicaOf));
  const child = launch('redis-server', args, path.join(dir, `redis-${port}.log`));
  await waitFor(`redis-server on ${port}`, () => admin(port, async (c) => (await c.ping()) === 'PONG'), 10_000);
  return { port, child };
}

async function startSentinel(dir: string, primaryPort: number): Promise<RedisNode> {
  const port = await freePort();
  const config = path.join(dir, `sentinel-${port}.conf`);
  writeFileSync(config, SENTINEL_CONFIG(port, primaryPort, dir));
  const child = launch('redis-sentinel', [config], path.join(dir, `sentinel-${port}.log`));
  await waitFor(`redis-sentinel on ${port}`, () => admin(port, async (c) => (await c.ping()) === 'PONG'), 10_000);
  return { port, child };
}

async function replicationInfo(port: number): Promise<Record<string, string>> {
  const text = await admin(port, (c) => c.info('replication'));
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':'))
      .map((line) => line.split(':', 2) as [string, string]),
  );
}

export async function startReplicaBed(options: BedOptions = {}): Promise<ReplicaBed> {
  requireTools();
  const ownsDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'maya-bed-'));
  mkdirSync(dir, { recursive: true });
  const primaryNode = await startRedis(dir);
  const redis = [primaryNode];
  for (let n = 0; n < (options.redisReplicas ?? 1); n++) redis.push(await startRedis(dir, primaryNode.port));
  for (const node of redis.slice(1)) {
    await waitFor(
      'Redis replica in sync',
      async () => (await replicationInfo(node.port)).master_link_status === 'up',
      10_000,
    );
  }
  const sentinels: RedisNode[] = [];
  for (let n = 0; n < 3; n++) sentinels.push(await startSentinel(dir, primaryNode.port));
  // Each Sentinel must know the replica and the other Sentinels before a failover can be agreed.
  await waitFor(
    'Sentinels see the replica and each other',
    async () => {
      for (const sentinel of sentinels) {
        const master = (await admin(sentinel.port, (c) => c.call('SENTINEL', 'MASTER', MASTER_NAME))) as string[];
        const fields = Object.fromEntries(master.flatMap((v, i) => (i % 2 === 0 ? [[v, master[i + 1]]] : [])));
        if (Number(fields['num-slaves']) < redis.length - 1 || Number(fields['num-other-sentinels']) < 2) return false;
      }
      return true;
    },
    20_000,
  );
  const storeUrl = `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${MASTER_NAME}`;
  const replicas: BedReplica[] = [];
  for (let n = 0; n < (options.replicas ?? 3); n++) {
    const port = await freePort();
    replicas.push({ name: `r${n + 1}`, port, origin: `http://127.0.0.1:${port}`, child: undefined });
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MAYA_STORE_URL: storeUrl,
    MAYA_API_KEYS: (options.apiKeys ?? []).join(','),
    MAYA_LOG_LEVEL: 'warn',
    ...options.env,
  };

  const startReplica = async (index: number) => {
    const replica = replicas[index]!;
    if (replica.child && replica.child.exitCode === null && replica.child.signalCode === null)
      throw new Error(`replica ${replica.name} is still running`);
    const child = launch(
      process.execPath,
      [BIN, 'serve', '--port', String(replica.port)],
      path.join(dir, `${replica.name}.log`),
      env,
    );
    replica.child = child;
    await waitFor(
      `${replica.name} /health 200`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${replica.name} exited (${child.exitCode}); see ${dir}`);
        return (await fetch(`${replica.origin}/health`)).status === 200;
      },
      120_000,
    );
  };
  await Promise.all(replicas.map((_, index) => startReplica(index)));

  const lbPort = await freePort();
  const haproxyConfig = path.join(dir, 'haproxy.cfg');
  writeFileSync(haproxyConfig, HAPROXY_CONFIG(lbPort, replicas));
  const haproxy = launch('haproxy', ['-db', '-f', haproxyConfig], path.join(dir, 'haproxy.log'));
  const origin = `http://127.0.0.1:${lbPort}`;

  const primary = async (): Promise<RedisNode> => {
    for (const sentinel of sentinels) {
      const addr = await admin(sentinel.port, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)).catch(
        () => undefined,
      );
      const node = redis.find((each) => each.port === Number((addr as string[] | undefined)?.[1]));
      if (node) return node;
    }
    throw new Error('test bed: no Sentinel names a primary');
  };

  const settled = async (timeoutMs = 30_000) => {
    const running = replicas.filter((r) => r.child && r.child.exitCode === null && r.child.signalCode === null);
    const seen = new Set<string>();
    await waitFor(
      `haproxy routing to ${running.map((r) => r.name).join(', ')}`,
      async () => {
        const response = await fetch(`${origin}/health`);
        const name = response.headers.get('x-maya-replica');
        if (response.status === 200 && name) seen.add(name);
        return running.every((r) => seen.has(r.name));
      },
      timeoutMs,
    );
  };
  await settled(30_000);

  return {
    origin,
    replicas,
    redis,
    sentinels,
    storeUrl,
    dir,
    startReplica,
    signalReplica: async (index, signal) => {
      const child = replicas[index]!.child;
      if (!child) throw new Error(`replica ${replicas[index]!.name} is not running`);
      child.kill(signal);
      const result = await exited(child);
      replicas[index]!.child = undefined;
      return result;
    },
    primary,
    failover: async () => {
      const before = await primary();
      await admin(sentinels[0]!.port, (c) => c.call('SENTINEL', 'FAILOVER', MASTER_NAME));
      let after = before;
      await waitFor(
        'Sentinel failover to the replica',
        async () => {
          after = await primary();
          if (after === before) return false;
          const [role, old] = await Promise.all([replicationInfo(after.port), replicationInfo(before.port)]);
          return role.role === 'master' && old.role === 'slave' && old.master_link_status === 'up';
        },
        30_000,
      );
      return after;
    },
    settled,
    stop: async () => {
      const all = [
        haproxy,
        ...replicas.map((r) => r.child),
        ...sentinels.map((s) => s.child),
        ...redis.map((r) => r.child),
      ];
      for (const child of all) {
        if (child && child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
          await exited(child);
        }
      }
      if (ownsDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
