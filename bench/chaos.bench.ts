/**
 * `npm run bench:chaos -- [--short] [--duration-s S] [--baseline-s S] [--workers N]
 *   [--wait-replicas N] [--redis-replicas N] [--seed N] [--out FILE]`: Maya in production shape under faults, on loopback.
 *
 * The bed (test/helpers/replica-bed.ts): three `maya serve` replicas on the demo model behind
 * haproxy (round robin, /health checks), a Redis primary and replica (--redis-replicas) with three Sentinels,
 * MAYA_STORE_URL=redis+sentinel://…, one shared reasoning key. Phases:
 *   baseline  mixed traffic (bench/chaos/traffic.ts) for --baseline-s without faults;
 *   chaos     the same traffic while bench/chaos/faults.ts kills -9 and restarts a replica, forces
 *             a Sentinel failover, SIGTERMs and restarts another replica and pauses the Redis
 *             primary, in a cycle for at least --duration-s (and one whole cycle);
 *   verify    bench/chaos/verify.ts: nothing acknowledged as stored lost or changed on any
 *             replica, no completed answer truncated (greedy rerun), every task terminal, tasks of
 *             killed replicas terminal within the lease.
 *   baseline  again after the chaos phase (not with --short): the run without faults brackets the
 *             faulted one, so a machine whose load drifts does not pass for a fault's cost.
 * The report (bench/chaos/report.ts) is printed and, with --out, written as JSON; the exit code is 1
 * when any check fails (a 500 included). --short (.ci/run) is one fault cycle after 10 s of
 * baseline, about a minute and a half. Load is a few closed-loop workers: the checks are about
 * correctness; latency is reported, not asserted.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startReplicaBed } from '../test/helpers/replica-bed.ts';
import { ChaosClient, Ledger, now } from './chaos/chaos-client.ts';
import { runFaults } from './chaos/faults.ts';
import { buildReport, printReport } from './chaos/report.ts';
import { PROMPTS, Traffic } from './chaos/traffic.ts';
import { verify } from './chaos/verify.ts';
import { mulberry32 } from '../test/helpers/mulberry32.ts';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    'duration-s': { type: 'string' },
    'baseline-s': { type: 'string' },
    workers: { type: 'string', default: '3' },
    'wait-replicas': { type: 'string' },
    'redis-replicas': { type: 'string', default: '1' },
    seed: { type: 'string' },
    out: { type: 'string' },
  },
});
const DURATION_S = Number(values['duration-s'] ?? (values.short ? 0 : 240));
const BASELINE_S = Number(values['baseline-s'] ?? (values.short ? 10 : 60));
const WORKERS = Number(values.workers);
/** undefined = Maya's default with Sentinel (1). */
const WAIT_REPLICAS = values['wait-replicas'];
const SEED = Number(values.seed ?? Date.now() % 1_000_000);
const KEY = 'chaos-key';

const log = (line: string) => process.stderr.write(`chaos: ${line}\n`);
const settings = {
  duration_s: DURATION_S,
  baseline_s: BASELINE_S,
  workers: WORKERS,
  wait_replicas: WAIT_REPLICAS ?? 'default (1)',
  seed: SEED,
  replicas: 3,
  redis_replicas: Number(values['redis-replicas']),
};
log(`settings ${JSON.stringify(settings)}`);
const rng = mulberry32(SEED);
const bed = await startReplicaBed({
  apiKeys: [KEY],
  redisReplicas: settings.redis_replicas,
  env: {
    ...(WAIT_REPLICAS !== undefined ? { MAYA_STORE_WAIT_REPLICAS: WAIT_REPLICAS } : {}),
    // Room for every response of the run: an eviction would read as a lost response.
    MAYA_GLM_RESPONSES_CACHE_ENTRIES: '100000',
    MAYA_GLM_RESPONSES_CACHE_BYTES: String(512 * 1024 * 1024),
    MAYA_GLM_RESPONSES_JOB_ENTRIES: '512',
    MAYA_GLM_RESPONSES_JOB_OWNER_ENTRIES: '64',
    MAYA_GLM_RESPONSES_ENCRYPTED_REASONING: 'on',
    MAYA_GLM_RESPONSES_REASONING_KEY: randomBytes(32).toString('hex'),
  },
});
log(`bed up: haproxy ${bed.origin}, ${bed.storeUrl}, logs in ${bed.dir}`);
const origin = now();
const ledger = new Ledger();
const client = new ChaosClient(bed.origin, KEY);
const traffic = new Traffic(client, ledger, rng, true);
let exitCode = 1;
try {
  let isStopped = false;
  const poller = traffic.pollTasks(() => isStopped);
  const runWorkers = () => Array.from({ length: WORKERS }, () => traffic.worker(() => isStopped));

  // Warm-up, not counted: every prompt once on every replica (round robin), so the baseline's first
  // requests do not pay for cold caches.
  for (const prompt of PROMPTS.flatMap((p) => bed.replicas.map(() => p)))
    await client.json('POST', '/responses', {
      model: 'maya-demo',
      input: prompt,
      store: false,
      temperature: 0,
      max_output_tokens: 16,
    });
  ledger.phase = 'baseline';
  let workers = runWorkers();
  await new Promise((resolve) => setTimeout(resolve, BASELINE_S * 1000));
  isStopped = true;
  await Promise.all([...workers, poller]);
  log(`baseline: ${ledger.samples.length} requests`);

  isStopped = false;
  ledger.phase = 'chaos';
  const chaosStart = Date.now();
  const chaosPoller = traffic.pollTasks(() => isStopped);
  workers = runWorkers();
  const windows = await runFaults(bed, traffic, rng, () => Date.now() - chaosStart >= DURATION_S * 1000, log);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  isStopped = true;
  await Promise.all(workers);
  log(`chaos: ${ledger.samples.filter((s) => s.phase === 'chaos').length} requests`);

  await chaosPoller;
  await bed.settled();
  if (!values.short) {
    isStopped = false;
    ledger.phase = 'baseline';
    workers = runWorkers();
    const after = traffic.pollTasks(() => isStopped);
    await new Promise((resolve) => setTimeout(resolve, BASELINE_S * 1000));
    isStopped = true;
    await Promise.all([...workers, after]);
  }
  ledger.phase = 'verify';
  const figures = await verify(bed, client, traffic, ledger, windows);
  const report = buildReport(ledger, windows, figures, settings, origin);
  printReport(report, (line) => process.stdout.write(`${line}\n`));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  exitCode = report.isPass ? 0 : 1;
} finally {
  await bed.stop();
}
process.exit(exitCode);
