/**
 * The Monitor's history: one sample a second of /v1/status and the Prometheus metrics, the last
 * five minutes kept, and the series drawn from them. Rates (tokens/s) and the time to first token
 * come from the change of the server's cumulative counters between two samples.
 */
import type { MayaStatus } from '../status.ts';

export const WINDOW_SECONDS = 300;

export interface Sample {
  /** Seconds (performance.now() / 1000). */
  t: number;
  status: MayaStatus;
  metrics: Map<string, number>;
}

export interface Point {
  t: number;
  value: number | undefined;
}

export function pushSample(history: Sample[], sample: Sample): Sample[] {
  const kept = history.filter((s) => s.t > sample.t - WINDOW_SECONDS);
  return [...kept, sample];
}

type Reading = (s: Sample) => number | undefined;

/** A gauge: its value at each sample. */
export function gauge(history: Sample[], read: Reading): Point[] {
  return history.map((s) => ({ t: s.t, value: read(s) }));
}

/** A counter's rate per second between consecutive samples. */
export function rate(history: Sample[], read: Reading): Point[] {
  return history.slice(1).map((s, i) => {
    const before = read(history[i]!);
    const now = read(s);
    const dt = s.t - history[i]!.t;
    return {
      t: s.t,
      value: before === undefined || now === undefined || dt <= 0 ? undefined : Math.max(0, (now - before) / dt),
    };
  });
}

/** Mean of a histogram between consecutive samples: Δsum / Δcount (undefined where nothing was observed). */
export function intervalMean(history: Sample[], sum: string, count: string): Point[] {
  return history.slice(1).map((s, i) => {
    const prev = history[i]!;
    const dCount = (s.metrics.get(count) ?? 0) - (prev.metrics.get(count) ?? 0);
    const dSum = (s.metrics.get(sum) ?? 0) - (prev.metrics.get(sum) ?? 0);
    return { t: s.t, value: dCount > 0 ? dSum / dCount : undefined };
  });
}

/** The latest defined value of a series. */
export function latest(points: Point[]): number | undefined {
  for (let i = points.length - 1; i >= 0; i--) if (points[i]!.value !== undefined) return points[i]!.value;
  return undefined;
}
