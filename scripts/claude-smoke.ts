/**
 * Claude Code against Maya: starts Maya on the demo model (real engine) with an API key and
 * encrypted reasoning on (MAYA_GLM_RESPONSES_ENCRYPTED_REASONING, which signs thinking blocks) on
 * a loopback port behind a recording proxy, points Claude Code at it with ANTHROPIC_BASE_URL and
 * ANTHROPIC_API_KEY (a fresh HOME, nothing non-essential: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC),
 * runs `claude -p "Hello"` and checks that the turn completed (exit 0, an answer printed) over
 * streamed POST /v1/messages answered 200, thinking asked for and answered with signed thinking
 * blocks; then `claude -p --continue "Thanks"` for a second turn, which must replay the first
 * turn's thinking block by its signature and succeed. Not part of `npm test`: the Claude Code npm
 * package carries a ~370 MB binary, so it is not a devDependency. Run:
 *
 *   npm install --no-save @anthropic-ai/claude-code@2.1.328 && npm run clients:claude
 *   CLAUDE_BIN=/path/to/claude npm run clients:claude
 *
 * Demo model only: its context is 8192 tokens, which Claude Code's default system prompt and
 * tool definitions exceed, so the run passes a one-line `--system-prompt` and `--tools ""`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startService } from '../cli/serve.ts';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_RESPONSES_SETTINGS } from '../config/settings.ts';
import { silentLogger } from '../handlers/app-deps.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLAUDE = process.env.CLAUDE_BIN ?? path.join(ROOT, 'node_modules/.bin/claude');
const TIMEOUT_MS = 180_000;
const KEY = 'sk-maya-claude-smoke';

interface Seen {
  method: string;
  path: string;
  status: number;
  stream: unknown;
  thinking: unknown;
  /** Thinking blocks the request replayed with a signature. */
  signedThinkingIn: number;
  /** signature_delta events in the answer. */
  signaturesOut: number;
  /** The answer's stop reason (message_delta). */
  stopReason: string | undefined;
}

const countSigned = (messages: unknown): number =>
  Array.isArray(messages)
    ? messages
        .flatMap((message) => {
          const content = (message as { content?: unknown }).content;
          return Array.isArray(content) ? (content as Array<Record<string, unknown>>) : [];
        })
        .filter((block) => block.type === 'thinking' && typeof block.signature === 'string' && block.signature !== '')
        .length
    : 0;

/** A loopback proxy to `target` that records each request and what its answer carried. */
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
          path: (req.url ?? '').split('?')[0]!,
          status: answer.statusCode ?? 0,
          stream: parsed.stream,
          thinking: parsed.thinking,
          signedThinkingIn: countSigned(parsed.messages),
          signaturesOut: 0,
          stopReason: undefined,
        };
        seen.push(entry);
        let text = '';
        answer.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        answer.on('end', () => {
          entry.signaturesOut = text.split('"type":"signature_delta"').length - 1;
          entry.stopReason = /"stop_reason":"(\w+)"/.exec(text.slice(text.lastIndexOf('message_delta')))?.[1];
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

/** `claude -p` in `work` with `home` as HOME (`args` after its options: a prompt, or `--continue PROMPT`). */
function runClaude(
  home: string,
  work: string,
  baseUrl: string,
  args: string[],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      CLAUDE,
      ['-p', '--model', 'maya-demo', '--tools', '', '--system-prompt', 'You are a helpful assistant.', ...args],
      {
        cwd: work,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          ANTHROPIC_BASE_URL: baseUrl,
          ANTHROPIC_API_KEY: KEY,
          // No telemetry, error reporting, auto-update or other calls beyond the API itself.
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
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

if (!existsSync(CLAUDE)) {
  console.error(
    `claude-smoke: no Claude Code binary at ${CLAUDE}; run \`npm install --no-save @anthropic-ai/claude-code@2.1.328\` or set CLAUDE_BIN`,
  );
  process.exit(2);
}
const service = await startService({
  settings: DEFAULT_RESPONSES_SETTINGS,
  server: {
    host: '127.0.0.1',
    port: 0,
    model: undefined,
    apiKeys: [KEY],
    corsOrigins: undefined,
    maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
    // Signed thinking blocks (README "Claude Code"): the second turn replays them by signature.
    optIns: { itemReferences: false, encryptedReasoning: true },
  },
  modelDir: path.join(ROOT, 'models/maya-demo'),
  loadRuntime: loadModelRuntime,
  logger: silentLogger,
});
await service.loaded;
const seen: Seen[] = [];
const proxy = await recordingProxy(service.origin, seen);
// Fixed paths: the working directory is part of Claude Code's prompt, and the demo model is greedy.
const home = path.join(tmpdir(), 'maya-claude-home');
const work = path.join(tmpdir(), 'maya-claude-work');
for (const dir of [home, work]) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
}
try {
  const first = await runClaude(home, work, proxy.url, ['Hello']);
  const second = first.code === 0 ? await runClaude(home, work, proxy.url, ['--continue', 'Thanks']) : first;
  const output = `${first.output}\n---\n${second.output}`;
  const turns = seen.filter((s) => s.method === 'POST' && s.path === '/v1/messages');
  const problems = [
    ...(first.code === 0 ? [] : [`claude -p exited ${first.code}`]),
    ...(second.code === 0 ? [] : [`claude -p --continue exited ${second.code}`]),
    ...(first.output.trim() !== '' ? [] : ['the first turn printed no answer']),
    ...(turns.length >= 2 ? [] : [`claude sent ${turns.length} POST /v1/messages, expected one per turn`]),
    ...turns.filter((t) => t.status !== 200).map((t) => `POST /v1/messages answered ${t.status}`),
    ...turns.filter((t) => t.stream !== true).map(() => 'a request was not streamed'),
    ...turns.filter((t) => t.thinking === undefined).map(() => 'a request did not ask for thinking'),
    ...(turns.some((t) => t.signaturesOut > 0) ? [] : ['no thinking block came back signed']),
    ...(turns.slice(1).some((t) => t.signedThinkingIn > 0) ? [] : ['the second turn replayed no signed thinking']),
    ...turns.filter((t) => t.stopReason === undefined).map(() => 'an answer ended without message_delta'),
  ];
  console.log(
    `claude-smoke: ${turns.length} POST /v1/messages (${turns.map((t) => t.status).join(', ')}), exits ${first.code}, ${second.code}; ` +
      `thinking ${JSON.stringify(turns[0]?.thinking)}, signatures out ${turns.map((t) => t.signaturesOut).join(', ')}, ` +
      `signed thinking replayed ${turns.map((t) => t.signedThinkingIn).join(', ')}, stop reasons ${turns.map((t) => t.stopReason).join(', ')}`,
  );
  if (problems.length > 0) {
    console.error(`claude-smoke FAILED: ${problems.join('; ')}\n${output.slice(-4000)}`);
    process.exitCode = 1;
  } else {
    console.log(
      `claude-smoke: answers: ${JSON.stringify(first.output.trim())}, ${JSON.stringify(second.output.trim())}`,
    );
    console.log(
      'claude-smoke: ok (claude -p completed two turns against Maya over /v1/messages, thinking signed and replayed)',
    );
  }
} finally {
  proxy.close();
  await service.stop();
  rmSync(home, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
