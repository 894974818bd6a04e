/**
 * The chaos run's report: requests sent and answers by status (per phase and kind), violations by
 * kind (the run fails on any), the fault windows, and latency of successful generation requests
 * (json, stream, continue): the run without faults, the chaos phase outside fault windows, and
 * inside them.
 */
import type { Answer, Ledger, Sample, ViolationKind } from './chaos-client.ts';
import type { FaultWindow } from './faults.ts';
import { LEASE_BOUND_MS, type VerifyFigures } from './verify.ts';

export interface Latency {
  count: number;
  p50_ms: number;
  p99_ms: number;
}

export interface ChaosReport {
  settings: Record<string, unknown>;
  requests: number;
  answers: Record<string, number>;
  answersByPhase: Record<string, Record<string, number>>;
  answersByKind: Record<string, Record<string, number>>;
  errorCodes: Record<string, number>;
  violations: Record<ViolationKind, number>;
  violationDetails: string[];
  faults: { name: string; detail: string; start_s: number; recovered_s: number; exitCode?: number | null }[];
  /**
   * Per kind of fault: the requests that overlapped its windows and their answers (with the error
   * code of failed ones), and how long after the fault's start the last failed one ended.
   */
  perFault: Record<
    string,
    { windows: number; requests: number; answers: Record<string, number>; failureSpan_s: number[] }
  >;
  latency: { baseline: Latency; chaosOutsideFaults: Latency; chaosInsideFaults: Latency };
  verify: VerifyFigures;
  isPass: boolean;
}

const GENERATION = new Set(['json', 'stream', 'continue']);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function latency(samples: Sample[]): Latency {
  const times = samples.map((s) => s.end - s.start).sort((a, b) => a - b);
  return {
    count: times.length,
    p50_ms: Math.round(percentile(times, 0.5)),
    p99_ms: Math.round(percentile(times, 0.99)),
  };
}

function tally(samples: Sample[], key: (s: Sample) => string = (s) => String(s.answer)): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of samples) out[key(sample)] = (out[key(sample)] ?? 0) + 1;
  return out;
}

/** Not answered as asked: an HTTP error, a connection error, or an error event in a stream (a client's own cancel is no failure). */
const isFailed = (s: Sample) => s.answer !== 200 || (s.code !== undefined && s.code !== 'response_cancelled');
const answerWithCode = (s: Sample) =>
  isFailed(s) && s.code !== undefined ? `${s.answer} ${s.code}` : String(s.answer);

const overlaps = (sample: Sample, window: FaultWindow) => sample.start < window.end && sample.end > window.start;

export function buildReport(
  ledger: Ledger,
  windows: FaultWindow[],
  figures: VerifyFigures,
  settings: Record<string, unknown>,
  origin: number,
): ChaosReport {
  const traffic = ledger.samples.filter((s) => s.phase !== 'verify');
  const answerName = (answer: Answer) => String(answer);
  const byKind: Record<string, Record<string, number>> = {};
  for (const sample of traffic) {
    byKind[sample.kind] ??= {};
    byKind[sample.kind]![answerName(sample.answer)] = (byKind[sample.kind]![answerName(sample.answer)] ?? 0) + 1;
  }
  const perFault: ChaosReport['perFault'] = {};
  for (const window of windows) {
    const inside = traffic.filter((s) => s.phase === 'chaos' && overlaps(s, window));
    const entry = (perFault[window.name] ??= { windows: 0, requests: 0, answers: {}, failureSpan_s: [] });
    entry.windows++;
    entry.requests += inside.length;
    const failed = inside.filter(isFailed);
    const span = failed.length === 0 ? 0 : Math.max(...failed.map((s) => s.end)) - window.start;
    entry.failureSpan_s.push(Math.round(span / 100) / 10);
    for (const [answer, count] of Object.entries(tally(inside, answerWithCode)))
      entry.answers[answer] = (entry.answers[answer] ?? 0) + count;
  }
  const ok = (s: Sample) => GENERATION.has(s.kind) && s.answer === 200 && s.code === undefined;
  const chaos = traffic.filter((s) => s.phase === 'chaos' && ok(s));
  const isInside = (s: Sample) => windows.some((w) => overlaps(s, w));
  const violations = { lost: 0, truncated: 0, wrong_data: 0, http_500: 0, task_not_terminal: 0, task_lease: 0 };
  for (const violation of ledger.violations) violations[violation.kind]++;
  const sigtermExits = windows.filter((w) => w.name === 'sigterm' && w.exitCode !== 0);
  return {
    settings,
    requests: traffic.length,
    answers: tally(traffic),
    answersByPhase: {
      baseline: tally(traffic.filter((s) => s.phase === 'baseline')),
      chaos: tally(traffic.filter((s) => s.phase === 'chaos')),
    },
    answersByKind: byKind,
    errorCodes: tally(
      traffic.filter((s) => s.code !== undefined),
      (s) => `${s.answer} ${s.code}`,
    ),
    violations,
    violationDetails: ledger.violations.slice(0, 50).map((v) => `${v.kind}: ${v.detail}`),
    faults: windows.map((w) => ({
      name: w.name,
      detail: w.detail,
      start_s: Math.round((w.start - origin) / 100) / 10,
      recovered_s: Math.round((w.recovered - w.start) / 100) / 10,
      ...(w.exitCode !== undefined ? { exitCode: w.exitCode } : {}),
    })),
    perFault,
    latency: {
      baseline: latency(traffic.filter((s) => s.phase === 'baseline' && ok(s))),
      chaosOutsideFaults: latency(chaos.filter((s) => !isInside(s))),
      chaosInsideFaults: latency(chaos.filter(isInside)),
    },
    verify: figures,
    isPass: ledger.violations.length === 0 && sigtermExits.length === 0 && ledger.stored.size > 0,
  };
}

export function printReport(report: ChaosReport, write: (line: string) => void): void {
  write(`requests: ${report.requests}; answers: ${JSON.stringify(report.answers)}`);
  write(
    `  baseline: ${JSON.stringify(report.answersByPhase.baseline)}; chaos: ${JSON.stringify(report.answersByPhase.chaos)}`,
  );
  for (const [kind, answers] of Object.entries(report.answersByKind)) write(`  ${kind}: ${JSON.stringify(answers)}`);
  write(`error codes: ${JSON.stringify(report.errorCodes)}`);
  for (const fault of report.faults)
    write(`fault at ${fault.start_s} s: ${fault.name} (${fault.detail}), whole again after ${fault.recovered_s} s`);
  for (const [name, entry] of Object.entries(report.perFault))
    write(
      `  during ${entry.windows} × ${name}: ${entry.requests} requests, ${JSON.stringify(entry.answers)}; last failure ends [${entry.failureSpan_s.join(', ')}] s after the fault`,
    );
  const v = report.verify;
  write(
    `stored responses acknowledged: ${v.storedChecked}, each asked on ${v.replicasAsked} replicas, lost or changed: ${v.storedLost}; completed answers rerun: ${v.rerunsCompared}`,
  );
  write(
    `tasks: ${v.tasks} ${JSON.stringify(v.tasksByStatus)}; of killed/stopped replicas: ${v.orphanedTasks}, slowest to terminal ${v.slowestOrphanMs} ms (bound ${LEASE_BOUND_MS} ms); failed for a lease while their replica ran: ${v.falseOrphans}`,
  );
  write(`task failures: ${JSON.stringify(v.failures)}`);
  const { baseline, chaosOutsideFaults: outside, chaosInsideFaults: inside } = report.latency;
  write(
    `latency (ok json/stream/continue): no faults p50 ${baseline.p50_ms} p99 ${baseline.p99_ms} ms (${baseline.count}); chaos outside faults p50 ${outside.p50_ms} p99 ${outside.p99_ms} ms (${outside.count}); inside p50 ${inside.p50_ms} p99 ${inside.p99_ms} ms (${inside.count})`,
  );
  write(`violations: ${JSON.stringify(report.violations)}`);
  for (const detail of report.violationDetails) write(`  ${detail}`);
  write(report.isPass ? 'chaos: PASS' : 'chaos: FAIL');
}
