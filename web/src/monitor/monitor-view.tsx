/**
 * The Monitor tab: the server live, one sample a second from /v1/status and /metrics/prometheus
 * while the tab is shown, each number (metric-cards.ts) with a chart of its last minutes.
 * Sections a later server adds to the status (speculative decoding, ...) get a card of their own.
 */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, getJson, getText, type ApiErrorInfo } from '../api.ts';
import { ErrorBox } from '../error-box.tsx';
import { extraSections, type MayaStatus } from '../status.ts';
import { StatusSection } from '../status-section.tsx';
import { Chart } from './chart.tsx';
import { metricCards, type MetricCardData } from './metric-cards.ts';
import { parsePrometheus } from './prometheus.ts';
import { pushSample, type Sample } from './samples.ts';

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

function MetricCard({ id, title, value, unit, detail, series, format }: MetricCardData): JSX.Element {
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
  const cards = metricCards(history);
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
