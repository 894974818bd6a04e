/**
 * The Monitor's cards from its samples: each card's current value, a detail line and the series
 * its chart draws. Rates and the time to first token come from the change of cumulative counters
 * between samples (samples.ts).
 */
import { formatBytes, formatCount, formatMs, formatRate } from '../format.ts';
import type { Series } from './chart.tsx';
import { gauge, intervalMean, latest, rate, type Sample } from './samples.ts';

const TTFT = 'maya:time_to_first_token_seconds';

export interface MetricCardData {
  id: string;
  title: string;
  value: string;
  unit?: string;
  detail: string;
  series: Series[];
  format: (n: number) => string;
}

/** The cards for a non-empty history (its last sample is now). */
export function metricCards(history: Sample[]): MetricCardData[] {
  return [...engineCards(history), ...serverCards(history)];
}

function engineCards(history: Sample[]): MetricCardData[] {
  const now = history.at(-1)!;
  const e = (s: Sample) => s.status.engine;
  const engine = now.status.engine;
  const decode = rate(history, (s) => e(s).decode_tokens);
  const prefill = rate(history, (s) => e(s).prefill_tokens);
  const cached = rate(history, (s) => e(s).cached_tokens);
  const ttft = intervalMean(history, `${TTFT}_sum`, `${TTFT}_count`);
  const ttftCount = now.metrics.get(`${TTFT}_count`) ?? 0;
  const ttftAll = ttftCount > 0 ? (now.metrics.get(`${TTFT}_sum`) ?? 0) / ttftCount : undefined;
  const used = (s: Sample) => e(s).blocks_total - e(s).blocks_free;
  const promptTokens = engine.cached_tokens + engine.prefill_tokens;
  return [
    {
      id: 'decode',
      title: 'Decode',
      value: formatRate(latest(decode)),
      unit: 'tokens/s',
      detail: `${formatCount(engine.decode_tokens)} tokens generated in all`,
      series: [{ name: 'decode', points: decode, tone: 1 }],
      format: formatRate,
    },
    {
      id: 'prefill',
      title: 'Prefill',
      value: formatRate(latest(prefill)),
      unit: 'tokens/s',
      detail: `${formatCount(engine.prefill_tokens)} prompt tokens computed in all`,
      series: [{ name: 'prefill', points: prefill, tone: 1 }],
      format: formatRate,
    },
    {
      id: 'ttft',
      title: 'Time to first token',
      value: formatMs(latest(ttft)),
      detail: `mean ${formatMs(ttftAll)} over ${formatCount(ttftCount)} runs`,
      series: [{ name: 'ttft', points: ttft, tone: 1 }],
      format: formatMs,
    },
    {
      id: 'sequences',
      title: 'Sequences',
      value: `${formatCount(engine.seqs_running)} running`,
      detail: `${formatCount(engine.seqs_waiting)} queued · ${formatCount(engine.preemptions)} preempted in all`,
      series: [
        { name: 'running', points: gauge(history, (s) => e(s).seqs_running), tone: 1 },
        { name: 'queued', points: gauge(history, (s) => e(s).seqs_waiting), tone: 2 },
      ],
      format: formatCount,
    },
    {
      id: 'kv',
      title: 'KV cache',
      value: `${formatCount(used(now))} / ${formatCount(engine.blocks_total)}`,
      unit: 'blocks used',
      detail: `${formatCount(engine.blocks_cached)} blocks hold reusable prefixes`,
      series: [{ name: 'used', points: gauge(history, used), tone: 1 }],
      format: formatCount,
    },
    {
      id: 'prefix',
      title: 'Prefix-cache hits',
      value: promptTokens > 0 ? `${formatRate((100 * engine.cached_tokens) / promptTokens)} %` : '–',
      unit: 'of prompt tokens',
      detail: `${formatCount(engine.cached_tokens)} prompt tokens reused in all`,
      series: [{ name: 'reused', points: cached, tone: 1 }],
      format: formatRate,
    },
  ];
}

function serverCards(history: Sample[]): MetricCardData[] {
  const now = history.at(-1)!;
  const m = (name: string) => (s: Sample) => s.metrics.get(name);
  const cache = now.status.responses_cache;
  const jobs = now.status.responses_jobs;
  const rss = now.metrics.get('process_resident_memory_bytes');
  const lag = now.metrics.get('nodejs_eventloop_lag_p99_seconds') ?? now.metrics.get('nodejs_eventloop_lag_seconds');
  return [
    {
      id: 'store',
      title: 'Response store',
      value: formatCount(cache.entries),
      unit: 'entries',
      detail: `${formatBytes(cache.bytes)} · ${formatCount(cache.evictions)} evictions · ${formatCount(cache.hits)} hits`,
      series: [{ name: 'entries', points: gauge(history, (s) => s.status.responses_cache.entries), tone: 1 }],
      format: formatCount,
    },
    {
      id: 'tasks',
      title: 'Background tasks',
      value: `${formatCount(jobs.running)} running`,
      detail: `${formatCount(jobs.queued)} queued · ${formatCount(jobs.records)} records · ${formatCount(jobs.cancellations)} cancelled`,
      series: [
        { name: 'running', points: gauge(history, (s) => s.status.responses_jobs.running), tone: 1 },
        { name: 'queued', points: gauge(history, (s) => s.status.responses_jobs.queued), tone: 2 },
      ],
      format: formatCount,
    },
    {
      id: 'rss',
      title: 'Memory (RSS)',
      value: formatBytes(rss),
      detail: 'resident memory of the server process',
      series: [{ name: 'rss', points: gauge(history, m('process_resident_memory_bytes')), tone: 1 }],
      format: formatBytes,
    },
    {
      id: 'lag',
      title: 'Event-loop lag',
      value: formatMs(lag),
      detail: 'p99 delay of the server’s event loop',
      series: [{ name: 'lag', points: gauge(history, m('nodejs_eventloop_lag_p99_seconds')), tone: 1 }],
      format: formatMs,
    },
  ];
}
