/**
 * `npm run fuzz -- [--count N] [--seed S]`: the spec-driven fuzz generators of
 * test/reliability/request-arbitraries.ts against a real `maya serve` on the demo model (loopback,
 * bounded: N requests, one at a time). Prints the status histogram and every problem (a 5xx, an
 * error body outside its operation's envelope: OpenAI's, or Anthropic's for the Messages API);
 * exits 1 on any problem or an unhealthy server after.
 */
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { startService } from '../cli/serve.ts';
import { DEFAULT_MODEL_DIR } from '../cli/maya.ts';
import { loadEngineSettings } from '../config/engine-settings.ts';
import { DEFAULT_RESPONSES_SETTINGS, loadServerSettings } from '../config/settings.ts';
import { silentLogger } from '../handlers/app-deps.ts';
import { loadModelRuntime } from '../runtime/load-model-runtime.ts';
import { anyRequest, answerProblems } from '../test/reliability/request-arbitraries.ts';

const { values } = parseArgs({
  options: { count: { type: 'string', default: '10000' }, seed: { type: 'string', default: '1' } },
});
const count = Number(values.count);
const service = await startService({
  settings: DEFAULT_RESPONSES_SETTINGS,
  server: {
    ...loadServerSettings({ MAYA_PORT: '0', MAYA_LOG_LEVEL: 'silent' }),
    engine: loadEngineSettings(process.env),
  },
  modelDir: DEFAULT_MODEL_DIR,
  loadRuntime: loadModelRuntime,
  logger: silentLogger,
});
await service.loaded;
const statuses = new Map<number, number>();
const problems: string[] = [];
const started = Date.now();
for (const req of fc.sample(anyRequest, { numRuns: count, seed: Number(values.seed) })) {
  const res = await fetch(service.origin + req.path, {
    method: req.method,
    headers: req.body === undefined ? {} : { 'content-type': 'application/json' },
    body: req.body,
  });
  const text = await res.text();
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  let body: unknown;
  try {
    body = res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  for (const problem of answerProblems(res.status, body, req.operation))
    problems.push(`${req.method} ${req.path}: ${problem}`);
}
const healthy = (await fetch(`${service.origin}/health`)).status === 200;
await service.stop();
const histogram = [...statuses]
  .sort(([a], [b]) => a - b)
  .map(([status, n]) => `${status}: ${n}`)
  .join(', ');
process.stdout.write(
  `fuzz: ${count} requests in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${values.seed}); ${histogram}\n`,
);
process.stdout.write(`fuzz: ${problems.length} problems; /health after: ${healthy ? 200 : 'failed'}\n`);
for (const problem of problems.slice(0, 20)) process.stdout.write(`  ${problem.slice(0, 300)}\n`);
process.exit(problems.length === 0 && healthy ? 0 : 1);
