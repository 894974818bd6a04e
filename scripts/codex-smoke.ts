/**
 * Codex CLI against Maya: starts Maya on the demo model (real engine) with encrypted reasoning on
 * (MAYA_GLM_RESPONSES_ENCRYPTED_REASONING) on a loopback port behind a recording proxy, writes a
 * CODEX_HOME from scripts/codex/config.toml (thinking on), runs `codex exec "Hello"` and checks
 * that the turn completed (exit 0) over POST /v1/responses with `store:false`, a streamed 200,
 * reasoning asked for with include `reasoning.encrypted_content`, and reasoning items that came
 * back with `encrypted_content`; then `codex exec resume --last` for a second turn, which must
 * replay that reasoning by its `encrypted_content` and succeed. Not part of `npm test`: the Codex npm package carries a ~424 MB
 * binary, so it is not a devDependency. Run:
 *
 *   npm install --no-save @openai/codex@0.171.0 && npm run clients:codex
 *   CODEX_BIN=/path/to/codex npm run clients:codex
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService } from '../cli/serve.ts';
import { loadEngineSettings } from '../config/engine-settings.ts';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_RESPONSES_SETTINGS } from '../config/settings.ts';
import { silentLogger } from '../handlers/app-deps.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CODEX = process.env.CODEX_BIN ?? path.join(ROOT, 'node_modules/.bin/codex');
const TIMEOUT_MS = 180_000;

interface Seen {
  method: string;
  path: string;
  status: number;
  store: unknown;
  stream: unknown;
  reasoning: unknown;
  include: unknown;
  /** Input reasoning items replayed by their encrypted_content. */
  encryptedInputs: number;
  /** Reasoning items in the answer (output_item.done) carrying encrypted_content. */
  encryptedOutputs: number;
}

const countEncrypted = (items: unknown): number =>
  Array.isArray(items)
    ? items.filter(
        (item) =>
          (item as Record<string, unknown>)?.type === 'reasoning' &&
          typeof (item as Record<string, unknown>).encrypted_content === 'string',
      ).length
    : 0;

/** A loopback proxy to `target` that records each request's method, path, status, store, stream, reasoning and encrypted reasoning in and out. */
async function recordingProxy(target: string, seen: Seen[]): Promise<{ url: string; close(): void }> {
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
        const entry: Seen = {
          method: req.method ?? '',
          path: req.url ?? '',
          status: answer.statusCode ?? 0,
          store: parsed.store,
          stream: parsed.stream,
          reasoning: parsed.reasoning,
          include: parsed.include,
          encryptedInputs: countEncrypted(parsed.input),
          encryptedOutputs: 0,
        };
        seen.push(entry);
        let text = '';
        answer.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        answer.on('end', () => {
          const done = text
            .split('\n')
            .filter((line) => line.startsWith('data: ') && line.includes('"response.output_item.done"'))
            .map((line) => (JSON.parse(line.slice(6)) as { item: unknown }).item);
          entry.encryptedOutputs = countEncrypted(done);
        });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** `codex exec` (`args` after its options: a prompt, or `resume --last PROMPT` for a second turn). */
function runCodex(home: string, work: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(CODEX, ['exec', '--skip-git-repo-check', '-C', work, ...args], {
      env: { ...process.env, CODEX_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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

/** Reasoning asked for (effort other than none) together with include reasoning.encrypted_content. */
function thinks(t: Seen): boolean {
  const effort = (t.reasoning as { effort?: unknown } | undefined)?.effort;
  return (
    typeof effort === 'string' &&
    effort !== 'none' &&
    Array.isArray(t.include) &&
    t.include.includes('reasoning.encrypted_content')
  );
}

if (!existsSync(CODEX)) {
  console.error(
    `codex-smoke: no Codex binary at ${CODEX}; run \`npm install --no-save @openai/codex@0.171.0\` or set CODEX_BIN`,
  );
  process.exit(2);
}
const service = await startService({
  settings: DEFAULT_RESPONSES_SETTINGS,
  server: {
    host: '127.0.0.1',
    port: 0,
    model: undefined,
    apiKeys: [],
    corsOrigins: undefined,
    maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
    engine: loadEngineSettings(process.env),
    // What README "Codex CLI" asks of the server for thinking on (Codex replays reasoning encrypted).
    optIns: { itemReferences: false, encryptedReasoning: true },
  },
  modelDir: path.join(ROOT, 'models/maya-demo'),
  loadRuntime: loadModelRuntime,
  logger: silentLogger,
});
await service.loaded;
const seen: Seen[] = [];
const proxy = await recordingProxy(service.origin, seen);
// Fixed paths: the working directory is part of Codex's prompt, and the demo model is greedy.
const home = path.join(tmpdir(), 'maya-codex-home');
const work = path.join(tmpdir(), 'maya-codex-work');
for (const dir of [home, work]) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
}
try {
  const template = readFileSync(path.join(ROOT, 'scripts/codex/config.toml'), 'utf8');
  writeFileSync(
    path.join(home, 'config.toml'),
    template
      .replaceAll('{{BASE_URL}}', `${proxy.url}/v1`)
      .replaceAll('{{INSTRUCTIONS}}', path.join(ROOT, 'scripts/codex/instructions.md')),
  );
  // Two turns: the second resumes the session, so Codex replays the first turn's reasoning item
  // by its encrypted_content (store:false), which Maya must decrypt for the turn to succeed.
  const first = await runCodex(home, work, ['Hello']);
  const second = first.code === 0 ? await runCodex(home, work, ['resume', '--last', 'Thanks']) : first;
  const code = second.code;
  const output = first.output + second.output;
  const turns = seen.filter((s) => s.method === 'POST' && s.path === '/v1/responses');
  const problems = [
    ...(code === 0 ? [] : [`codex exited ${code}`]),
    ...(turns.length > 0 ? [] : ['codex sent no POST /v1/responses']),
    ...turns.filter((t) => t.status !== 200).map((t) => `POST /v1/responses answered ${t.status}`),
    ...turns
      .filter((t) => t.store !== false || t.stream !== true)
      .map((t) => `a request had store=${String(t.store)} stream=${String(t.stream)}`),
    ...turns
      .filter((t) => !thinks(t))
      .map(
        (t) =>
          `a request did not ask for reasoning with encrypted content: reasoning=${JSON.stringify(t.reasoning)} include=${JSON.stringify(t.include)}`,
      ),
    ...(turns.some((t) => t.encryptedOutputs > 0) ? [] : ['no reasoning item came back with encrypted_content']),
    ...(turns.some((t) => t.encryptedInputs > 0) ? [] : ['the second turn replayed no encrypted reasoning']),
  ];
  console.log(
    `codex-smoke: ${turns.length} POST /v1/responses (${turns.map((t) => t.status).join(', ')}), exit ${code}; ` +
      `reasoning ${JSON.stringify(turns[0]?.reasoning)}, encrypted reasoning items out ${turns.map((t) => t.encryptedOutputs).join(', ')}, replayed in ${turns.map((t) => t.encryptedInputs).join(', ')}`,
  );
  if (problems.length > 0) {
    console.error(`codex-smoke FAILED: ${problems.join('; ')}\n${output.slice(-4000)}`);
    process.exitCode = 1;
  } else {
    console.log(
      'codex-smoke: ok (codex exec completed a turn against Maya with thinking on, store:false and encrypted reasoning)',
    );
  }
} finally {
  proxy.close();
  await service.stop();
  rmSync(home, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
