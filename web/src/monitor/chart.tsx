/**
 * A small time-series chart in plain SVG: the samples of the last five minutes (the span grows
 * with the history, from 30 s up to five minutes), one line per series (gaps where a value is
 * missing), the y range from 0 to the largest value, labelled for screen readers.
 */
import type { JSX } from 'preact';
import { WINDOW_SECONDS, type Point } from './samples.ts';

const W = 300;
const H = 72;

export interface Series {
  name: string;
  points: Point[];
  /** CSS class choosing the line colour (chart-line-1, chart-line-2). */
  tone: 1 | 2;
}

const MIN_SPAN_SECONDS = 30;

function spanLabel(seconds: number): string {
  return seconds >= 60 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds)} s`;
}

function path(points: Point[], now: number, span: number, top: number): string {
  let d = '';
  let isDrawing = false;
  for (const { t, value } of points) {
    if (value === undefined) {
      isDrawing = false;
      continue;
    }
    const x = W - ((now - t) / span) * W;
    const y = H - (value / top) * (H - 4) - 2;
    d += `${isDrawing ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`;
    isDrawing = true;
  }
  return d;
}

export function Chart({
  series,
  label,
  format,
}: {
  series: Series[];
  label: string;
  format: (n: number) => string;
}): JSX.Element {
  const all = series.flatMap((s) => s.points);
  const now = all.reduce((max, p) => Math.max(max, p.t), 0);
  const first = all.reduce((min, p) => Math.min(min, p.t), now);
  const span = Math.min(WINDOW_SECONDS, Math.max(MIN_SPAN_SECONDS, now - first));
  const top = Math.max(1e-9, ...all.map((p) => p.value ?? 0));
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={label}>
        <line x1="0" y1={H - 1} x2={W} y2={H - 1} class="chart-axis" />
        <line x1="0" y1="2" x2={W} y2="2" class="chart-grid" />
        {series.map((s) => (
          <path key={s.name} d={path(s.points, now, span, top)} class={`chart-line chart-line-${s.tone}`} />
        ))}
      </svg>
      {series.length > 1 ? (
        <p class="chart-legend">
          {series.map((s) => (
            <span key={s.name}>
              <span class={`swatch chart-swatch-${s.tone}`} aria-hidden="true" />
              {s.name}
            </span>
          ))}
        </p>
      ) : null}
      <figcaption class="chart-scale">
        <span>{spanLabel(span)} ago</span>
        <span>max {format(top <= 1e-9 ? 0 : top)}</span>
        <span>now</span>
      </figcaption>
    </figure>
  );
}
