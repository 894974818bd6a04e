/**
 * What the coding-agent smoke runs (claude-smoke.ts, codex-smoke.ts) share: Maya on the demo model
 * (real engine) on a loopback port behind a recording proxy, fresh fixed HOME and working folders
 * for the agent, the agent's CLI run with a time limit, and the pass/fail report. Each script
 * brings what it records per request and what it checks.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerSettings } from '../config/settings.ts';
import { startLoopbackService } from '../test/helpers/loopback-service.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TIMEOUT_MS = 180_000;

/** One request through the proxy: its method, URL, parsed JSON body ({} if none) and answer status. */
export interface ProxiedRequest {
  method: string;
  url: string;
  status: number;
  body: Record<string, unknown>;
}

export interface SmokeOptions<T> {
  /** e.g. `claude-smoke`: the prefix of every line printed. */
  tag: string;
  /** The agent's binary, and how to get it when it is missing. */
  bin: string;
  missing: string;
  /** The folders' names: maya-${name}-home and maya-${name}-work under the temp folder. */
  name: string;
  /** Server settings on top of loopbackServer(). */
  server: Partial<ServerSettings>;
  /** The record kept of each request (at its answer's head)… */
  record(request: ProxiedRequest): T;
  /** …and what its whole answer body adds to that record. */
  answered(entry: T, text: string): void;
  /** The agent's turns; `seen` fills as the proxy forwards them. */
  run(context: { proxyUrl: string; home: string; work: string; seen: T[] }): Promise<void>;
}

/** A loopback proxy to `target` that keeps options.record() of each request, completed by options.answered(). */
async function recordingProxy<T>(
  target: string,
  seen: T[],
  options: Pick<SmokeOptions<T>, 'record' | 'answered'>,
): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(body.toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      const upstream = request(target + req.url, { method: req.method, headers: req.headers }, (answer) => {
        const entry = options.record({
          method: req.method ?? '',
          url: req.url ?? '',
          status: answer.statusCode ?? 0,
          body: parsed,
        });
        seen.push(entry);
        let text = '';
        answer.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        answer.on('end', () => options.answered(entry, text));
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** Runs `bin args` (stdout and stderr together), SIGTERM after the time limit. */
export function runClient(
  bin: string,
  args: string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Maya behind the proxy, the agent's folders fresh, options.run(); everything torn down after. */
export async function clientSmoke<T>(options: SmokeOptions<T>): Promise<void> {
  if (!existsSync(options.bin)) {
    console.error(`${options.tag}: ${options.missing}`);
    process.exit(2);
  }
  const service = await startLoopbackService({ server: options.server, modelDir: path.join(ROOT, 'models/maya-demo') });
  await service.loaded;
  const seen: T[] = [];
  const proxy = await recordingProxy(service.origin, seen, options);
  // Fixed paths: the working directory is part of the agent's prompt, and the demo model is greedy.
  const home = path.join(tmpdir(), `maya-${options.name}-home`);
  const work = path.join(tmpdir(), `maya-${options.name}-work`);
  for (const dir of [home, work]) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
  }
  try {
    await options.run({ proxyUrl: proxy.url, home, work, seen });
  } finally {
    proxy.close();
    await service.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

/** FAILED with the problems and the output's tail (exit code 1), or the `ok` lines. */
export function report(tag: string, problems: string[], output: string, ok: string[]): void {
  if (problems.length > 0) {
    console.error(`${tag} FAILED: ${problems.join('; ')}\n${output.slice(-4000)}`);
    process.exitCode = 1;
  } else {
    for (const line of ok) console.log(`${tag}: ${line}`);
  }
}
