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
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadEngineSettings } from '../config/engine-settings.ts';
import { clientSmoke, report, ROOT, runClient, type ProxiedRequest } from './client-smoke.ts';

const CODEX = process.env.CODEX_BIN ?? path.join(ROOT, 'node_modules/.bin/codex');

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

const record = (request: ProxiedRequest): Seen => ({
  method: request.method,
  path: request.url,
  status: request.status,
  store: request.body.store,
  stream: request.body.stream,
  reasoning: request.body.reasoning,
  include: request.body.include,
  encryptedInputs: countEncrypted(request.body.input),
  encryptedOutputs: 0,
});

function answered(entry: Seen, text: string): void {
  const done = text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.includes('"response.output_item.done"'))
    .map((line) => (JSON.parse(line.slice(6)) as { item: unknown }).item);
  entry.encryptedOutputs = countEncrypted(done);
}

/** `codex exec` (`args` after its options: a prompt, or `resume --last PROMPT` for a second turn). */
const runCodex = (home: string, work: string, args: string[]) =>
  runClient(CODEX, ['exec', '--skip-git-repo-check', '-C', work, ...args], {
    env: { ...process.env, CODEX_HOME: home },
  });

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

await clientSmoke({
  tag: 'codex-smoke',
  bin: CODEX,
  missing: `no Codex binary at ${CODEX}; run \`npm install --no-save @openai/codex@0.171.0\` or set CODEX_BIN`,
  name: 'codex',
  server: {
    engine: loadEngineSettings(process.env),
    // What README "Codex CLI" asks of the server for thinking on (Codex replays reasoning encrypted).
    optIns: { itemReferences: false, encryptedReasoning: true },
  },
  record,
  answered,
  run: async ({ proxyUrl, home, work, seen }) => {
    const template = readFileSync(path.join(ROOT, 'scripts/codex/config.toml'), 'utf8');
    writeFileSync(
      path.join(home, 'config.toml'),
      template
        .replaceAll('{{BASE_URL}}', `${proxyUrl}/v1`)
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
    report('codex-smoke', problems, output, [
      'ok (codex exec completed a turn against Maya with thinking on, store:false and encrypted reasoning)',
    ]);
  },
});
