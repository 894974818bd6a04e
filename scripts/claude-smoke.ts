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
import path from 'node:path';
import { clientSmoke, report, ROOT, runClient, type ProxiedRequest } from './client-smoke.ts';

const CLAUDE = process.env.CLAUDE_BIN ?? path.join(ROOT, 'node_modules/.bin/claude');
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

const record = (request: ProxiedRequest): Seen => ({
  method: request.method,
  path: request.url.split('?')[0]!,
  status: request.status,
  stream: request.body.stream,
  thinking: request.body.thinking,
  signedThinkingIn: countSigned(request.body.messages),
  signaturesOut: 0,
  stopReason: undefined,
});

function answered(entry: Seen, text: string): void {
  entry.signaturesOut = text.split('"type":"signature_delta"').length - 1;
  entry.stopReason = /"stop_reason":"(\w+)"/.exec(text.slice(text.lastIndexOf('message_delta')))?.[1];
}

/** `claude -p` in `work` with `home` as HOME (`args` after its options: a prompt, or `--continue PROMPT`). */
const runClaude = (home: string, work: string, baseUrl: string, args: string[]) =>
  runClient(
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
    },
  );

await clientSmoke({
  tag: 'claude-smoke',
  bin: CLAUDE,
  missing: `no Claude Code binary at ${CLAUDE}; run \`npm install --no-save @anthropic-ai/claude-code@2.1.328\` or set CLAUDE_BIN`,
  name: 'claude',
  // Signed thinking blocks (README "Claude Code"): the second turn replays them by signature.
  server: { apiKeys: [KEY], optIns: { itemReferences: false, encryptedReasoning: true } },
  record,
  answered,
  run: async ({ proxyUrl, home, work, seen }) => {
    const first = await runClaude(home, work, proxyUrl, ['Hello']);
    const second = first.code === 0 ? await runClaude(home, work, proxyUrl, ['--continue', 'Thanks']) : first;
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
    report('claude-smoke', problems, output, [
      `answers: ${JSON.stringify(first.output.trim())}, ${JSON.stringify(second.output.trim())}`,
      'ok (claude -p completed two turns against Maya over /v1/messages, thinking signed and replayed)',
    ]);
  },
});
