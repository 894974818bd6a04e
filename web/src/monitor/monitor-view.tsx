/**
 * The Monitor tab: the server live, one sample a second from /v1/status and /metrics/prometheus
 * while the tab is shown, each number with a chart of its last five minutes. Sections a later server adds to the status
 * (speculative decoding, ...) get a card of their own when they appear.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, getText, type ApiErrorInfo } from '../api.ts';
import { ErrorBox } from '../error-box.tsx';
import { formatBytes, formatCount, formatMs, formatRate } from '../format.ts';
import { extraSections, type MayaStatus } from '../status.ts';
import { StatusSection } from '../status-section.tsx';
import { Chart, type Series } from './chart.tsx';
import { parsePrometheus } from './prometheus.ts';
import { gauge, intervalMean, latest, pushSample, rate, type Sample } from './samples.ts';

const TTFT = 'maya:time_to_first_token_seconds';

/** Samples once a second while `isActive` (the tab is shown); the history stays when it is hidden. */
function usePolling(isActive: boolean): { history: Sample[]; error: ApiErrorInfo | undefined } {
  const [history, setHistory] = useState<Sample[]>([]);
  const [error, setError] = useState<ApiErrorInfo | undefined>();
  useEffect(() => {
    if (!isActive) return;
    let isLive = true;
    const poll = async () => {
      try {
        const [status, text] = await Promise.all([getJson<MayaStatus>('/v1/status'), getText('/metrics/prometheus')]);
        if (!isLive) return;
        setHistory((h) => pushSample(h, { t: performance.now() / 1000, status, metrics: parsePrometheus(text) }));
        setError(undefined);
      } catch (e) {
        if (isLive) setError(e instanceof ApiError ? e.info : { message: (e as Error).message });
      }
    };
    void poll();
    const timer = window.setInterval(() => void poll(), 1000);
    return () => {
      isLive = false;
      window.clearInterval(timer);
    };
  }, [isActive]);
  return { history, error };
}

interface CardProps {
  id: string;
  title: string;
  value: string;
  unit?: string;
  detail: string;
  series: Series[];
  format: (n: number) => string;
}

function MetricCard({ id, title, value, unit, detail, series, format }: CardProps): JSX.Element {
  return (
    <section class="metric-card" aria-labelledby={`metric-${id}`}>
      <h3 id={`metric-${id}`}>{title}</h3>
      <p class="metric-value">
        <span class="metric-number">{value}</span>
        {unit ? <span class="metric-unit"> {unit}</span> : null}
      </p>
      <p class="metric-detail">{detail}</p>
      <Chart
        series={series}
        label={`${title} over the last minutes: ${value}${unit ? ` ${unit}` : ''} now`}
        format={format}
      />
    </section>
  );
}

export function MonitorView({ isActive }: { isActive: boolean }): JSX.Element {
  const { history, error } = usePolling(isActive);
  const now = history.at(-1);
  if (!now) return error ? <ErrorBox error={error} /> : <p class="centered muted">Reading the server…</p>;
  const e = (s: Sample) => s.status.engine;
  const m = (name: string) => (s: Sample) => s.metrics.get(name);
  const engine = now.status.engine;
  const cache = now.status.responses_cache;
  const jobs = now.status.responses_jobs;
  const decode = rate(history, (s) => e(s).decode_tokens);
  const prefill = rate(history, (s) => e(s).prefill_tokens);
  const cached = rate(history, (s) => e(s).cached_tokens);
  const ttft = intervalMean(history, `${TTFT}_sum`, `${TTFT}_count`);
  const ttftCount = now.metrics.get(`${TTFT}_count`) ?? 0;
  const ttftAll = ttftCount > 0 ? (now.metrics.get(`${TTFT}_sum`) ?? 0) / ttftCount : undefined;
  const used = (s: Sample) => e(s).blocks_total - e(s).blocks_free;
  const promptTokens = engine.cached_tokens + engine.prefill_tokens;
  const rss = now.metrics.get('process_resident_memory_bytes');
  const lag = now.metrics.get('nodejs_eventloop_lag_p99_seconds') ?? now.metrics.get('nodejs_eventloop_lag_seconds');
  const cards: CardProps[] = [
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
  return (
    <div class="monitor">
      {error ? <ErrorBox error={error} /> : null}
      <div class="metric-grid">
        {cards.map((card) => (
          <MetricCard key={card.id} {...card} />
        ))}
        {extraSections(now.status).map(([name, section]) => (
          <div key={name} class="metric-card">
            <StatusSection name={name} section={section} />
          </div>
        ))}
      </div>
    </div>
  );
}
