/**
 * A real Redis for the Redis store tests. `sharedRedisUrl()` answers MAYA_TEST_REDIS_URL when set
 * (.ci/run starts one redis-server for the whole suite) and otherwise starts a private
 * `redis-server` from PATH (`npm test` installs it first: scripts/provision-test.sh).
 * `startRedisServer()` always starts a private one (tests that stop and restart Redis). No Redis →
 * the test FAILS with a message saying what to install: the Redis tests are never skipped.
 *
 * Servers run on a free loopback port with no persistence (no RDB, no AOF) and are killed by
 * stop() or when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { freePort } from './loopback.ts';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL: like a crash, nothing flushed). */
  stop(): Promise<void>;
  /** Starts a fresh, empty server on the same port. */
  restart(): Promise<void>;
}

const NO_REDIS =
  'The Redis store tests need redis-server on PATH: `npm test` installs it first (bash scripts/provision-test.sh, which runs or prints the apt-get command), or set MAYA_TEST_REDIS_URL=redis://host:port to a Redis the tests may write to.';
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function spawnRedis(port: number): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server on port ${port} did not start within 10 s:\n${output}`));
    }, 10_000);
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Error(error.code === 'ENOENT' ? NO_REDIS : `${NO_REDIS}\n(${error.message})`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      children.delete(child);
      reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`));
    });
    // --loglevel warning prints nothing once ready, so readiness is a successful connect.
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    children.add(child);
    const probe = () => {
      const socket = new Socket();
      socket.once('connect', () => {
        socket.end();
        clearTimeout(timer);
        resolve(child);
      });
      socket.once('error', () => setTimeout(probe, 50));
      socket.connect(port, '127.0.0.1');
    };
    probe();
  });
}

/** A private redis-server from PATH on a free loopback port. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  let child = await spawnRedis(port);
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: kill,
    restart: async () => {
      await kill();
      child = await spawnRedis(port);
    },
  };
}

/** MAYA_TEST_REDIS_URL, or a private server started for this test file. */
export async function sharedRedisUrl(): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = process.env.MAYA_TEST_REDIS_URL;
  if (url !== undefined && url !== '') return { url, stop: async () => {} };
  const server = await startRedisServer();
  return { url: server.url, stop: server.stop };
}

/** A key prefix no other test uses, so tests sharing one Redis never see each other's keys. */
export function uniquePrefix(label: string): string {
  return `maya-test:${label}:${randomBytes(6).toString('hex')}:`;
}
