/**
 * `npm run bench:load -- [--streams N] [--json N] [--soak-s S]`: load and soak on the real server
 * (`node bin/maya.js serve` on the demo model as its own process, loopback; the server's RSS, heap
 * and event-loop lag are read from its /metrics/prometheus, whose lag histogram restarts at every
 * scrape). Not in CI; figures go in notes.
 *  (a) burst: N concurrent SSE streams and N concurrent JSON requests (default 200 + 200); every
 *      stream's sequence numbers are checked (0, 1, 2, … with no gap or repeat, one terminal
 *      event): throughput, p50/p99 latency, time to first byte, lost events, RSS before/peak/after;
 *  (b) large inputs: 3 bodies of 8 MiB (refused from their size) and 3 of 135 KB (tokenised by
 *      the prompt workers) at once, with /health polled meanwhile: the server's lag p99;
 *  (c) soak: a mixed closed loop (stream, JSON, stored continuation, background + retrieve) for S
 *      seconds (default 600) with RSS and heap sampled every 5 s, reported as a least-squares
 *      slope per minute after a warm-up minute, plus event-loop lag p99 over the whole run.
 * Every loop is bounded in count and time and stops by itself.
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { freePort } from '../test/helpers/loopback.ts';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '200' },
    json: { type: 'string', default: '200' },
    'soak-s': { type: 'string', default: '600' },
  },
});
const STREAMS = Number(values.streams);
const JSONS = Number(values.json);
const SOAK_S = Number(values['soak-s']);
const PROMPTS = [
  'Hello',
  'What is 2+2?',
  'Tell me about the weather in Paris.',
  'Remember the value 73',
  'Write a short poem about the sea.',
];

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
};
const mib = (bytes: number) => (bytes / 1048576).toFixed(0);

const port = await freePort();
const child = spawn(process.execPath, ['bin/maya.js', 'serve', '--port', String(port)], {
  env: {
    ...process.env,
    MAYA_LOG_LEVEL: 'silent',
    MAYA_MAX_CONNECTIONS: '2048',
    MAYA_GLM_RESPONSES_JOB_ENTRIES: '256',
    MAYA_GLM_RESPONSES_JOB_OWNER_ENTRIES: '64',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const exited = new Promise((resolve) => child.once('exit', resolve));
const base = `http://127.0.0.1:${port}`;
await waitForHealth();

/** Resolves once /health answers 200 (the log is silent here, so stderr has no ready line). */
async function waitForHealth(): Promise<void> {
  let isExited = false;
  void exited.then(() => (isExited = true));
  for (;;) {
    if (isExited) throw new Error('maya serve exited before it was ready');
    const status = await fetch(`${base}/health`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The server's own figures from its Prometheus metrics (lag histogram since the last scrape). */
async function serverMetrics(): Promise<{ rss: number; heap: number; lagP99Ms: number; lagMaxMs: number }> {
  const text = await (await fetch(`${base}/metrics/prometheus`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    rss: value('process_resident_memory_bytes'),
    heap: value('nodejs_heap_size_used_bytes'),
    lagP99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMaxMs: value('nodejs_eventloop_lag_max_seconds') * 1000,
  };
}
// Scraped every 200 ms: each scrape's lag histogram covers the window since the previous one, so a
// phase's lag is the worst window's p99 (and the worst single delay).
let peakRss = 0;
let window = { p99: 0, max: 0 };
const sampler = setInterval(
  () =>
    void serverMetrics().then(
      (m) => {
        peakRss = Math.max(peakRss, m.rss);
        window = { p99: Math.max(window.p99, m.lagP99Ms || 0), max: Math.max(window.max, m.lagMaxMs || 0) };
      },
      () => {},
    ),
  200,
);
/** The worst lag window since the last call. */
function phaseLag(): { p99: number; max: number } {
  const seen = window;
  window = { p99: 0, max: 0 };
  return seen;
}

interface Outcome {
  ok: boolean;
  ttfbMs: number;
  totalMs: number;
  lost: number;
  events: number;
}

async function streamOne(prompt: string): Promise<Outcome> {
  const started = performance.now();
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: prompt, stream: true, max_output_tokens: 128 }),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let ttfb = NaN;
  let buffer = '';
  const sequence: number[] = [];
  let terminal = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    if (Number.isNaN(ttfb)) ttfb = performance.now() - started;
    buffer += decoder.decode(chunk.value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = frame.split('\n').find((line) => line.startsWith('data: '));
      if (!data || data === 'data: [DONE]') continue;
      const event = JSON.parse(data.slice(6)) as { type: string; sequence_number: number };
      sequence.push(event.sequence_number);
      if (/^response\.(completed|incomplete|failed)$/.test(event.type) || event.type === 'error') terminal++;
    }
  }
  const lost = sequence.reduce((gaps, n, i) => gaps + (n === i ? 0 : 1), 0) + (terminal === 1 ? 0 : 1);
  return {
    ok: res.status === 200 && lost === 0,
    ttfbMs: ttfb,
    totalMs: performance.now() - started,
    lost,
    events: sequence.length,
  };
}

async function jsonOne(prompt: string, extra: Record<string, unknown> = {}): Promise<Outcome & { id?: string }> {
  const started = performance.now();
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: prompt, max_output_tokens: 128, ...extra }),
  });
  const ttfb = performance.now() - started;
  const body = (await res.json()) as { id?: string; status?: string };
  return {
    ok: res.status === 200 && body.status !== 'failed',
    ttfbMs: ttfb,
    totalMs: performance.now() - started,
    lost: 0,
    events: 0,
    id: body.id,
  };
}

// (a) burst
const before = await serverMetrics();
phaseLag();
const rssBefore = before.rss;
const burstStarted = performance.now();
const outcomes = await Promise.all([
  ...Array.from({ length: STREAMS }, (_, i) => streamOne(PROMPTS[i % PROMPTS.length]!)),
  ...Array.from({ length: JSONS }, (_, i) => jsonOne(PROMPTS[i % PROMPTS.length]!)),
]);
const burstS = (performance.now() - burstStarted) / 1000;
const streams = outcomes.slice(0, STREAMS);
const jsons = outcomes.slice(STREAMS);
const burstMetrics = await serverMetrics();
const burstLag = phaseLag();
const rssAfter = burstMetrics.rss;
process.stdout.write(
  `burst: ${STREAMS} SSE + ${JSONS} JSON concurrent in ${burstS.toFixed(1)} s = ${((STREAMS + JSONS) / burstS).toFixed(1)} req/s\n` +
    `  SSE: ok ${streams.filter((o) => o.ok).length}/${STREAMS}, lost events ${streams.reduce((n, o) => n + o.lost, 0)} of ${streams.reduce((n, o) => n + o.events, 0)}, ` +
    `TTFB p50 ${percentile(
      streams.map((o) => o.ttfbMs),
      0.5,
    ).toFixed(0)} ms p99 ${percentile(
      streams.map((o) => o.ttfbMs),
      0.99,
    ).toFixed(0)} ms, ` +
    `total p50 ${percentile(
      streams.map((o) => o.totalMs),
      0.5,
    ).toFixed(0)} ms p99 ${percentile(
      streams.map((o) => o.totalMs),
      0.99,
    ).toFixed(0)} ms\n` +
    `  JSON: ok ${jsons.filter((o) => o.ok).length}/${JSONS}, latency p50 ${percentile(
      jsons.map((o) => o.totalMs),
      0.5,
    ).toFixed(0)} ms p99 ${percentile(
      jsons.map((o) => o.totalMs),
      0.99,
    ).toFixed(0)} ms\n` +
    `  server RSS before ${mib(rssBefore)} MiB, peak ${mib(peakRss)} MiB, after ${mib(rssAfter)} MiB; server event-loop lag p99 ${burstLag.p99.toFixed(1)} ms (max ${burstLag.max.toFixed(0)} ms)\n`,
);

// (b) large inputs (the /health timings include this client's own event loop, busy sending 24 MiB)
phaseLag();
const huge = JSON.stringify({ input: 'word '.repeat((8 * 1024 * 1024) / 5) });
const large = JSON.stringify({ input: 'The quick brown fox jumps over the lazy dog. '.repeat(3000) });
const healthMs: number[] = [];
let largeDone = false;
const probe = (async () => {
  while (!largeDone) {
    const t0 = performance.now();
    await fetch(`${base}/health`);
    healthMs.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
})();
const largeStarted = performance.now();
const largeAnswers = await Promise.all(
  [huge, huge, huge, large, large, large].map(async (body) => {
    const res = await fetch(`${base}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return `${res.status} ${((await res.json()) as { error?: { code: string } }).error?.code ?? ''}`;
  }),
);
largeDone = true;
await probe;
await new Promise((resolve) => setTimeout(resolve, 300));
const largeLag = phaseLag();
process.stdout.write(
  `large inputs: 3 x 8 MiB + 3 x 135 KB in ${((performance.now() - largeStarted) / 1000).toFixed(2)} s → ${[...new Set(largeAnswers)].join(', ')}; ` +
    `/health ${healthMs.length} polls, p50 ${percentile(healthMs, 0.5).toFixed(1)} ms p99 ${percentile(healthMs, 0.99).toFixed(1)} ms; ` +
    `server event-loop lag p99 ${largeLag.p99.toFixed(1)} ms (max ${largeLag.max.toFixed(0)} ms)\n`,
);

// (b) soak
if (SOAK_S > 0) {
  phaseLag();
  const samples: Array<{ t: number; rss: number; heap: number }> = [];
  const soakStarted = performance.now();
  const memory = setInterval(() => {
    void serverMetrics().then(
      (m) => samples.push({ t: (performance.now() - soakStarted) / 60000, rss: m.rss, heap: m.heap }),
      () => {},
    );
  }, 5000);
  let requests = 0;
  let failures = 0;
  const worker = async (index: number) => {
    while (performance.now() - soakStarted < SOAK_S * 1000) {
      const prompt = PROMPTS[(requests + index) % PROMPTS.length]!;
      const kind = requests++ % 4;
      let ok = true;
      if (kind === 0) ok = (await streamOne(prompt)).ok;
      else if (kind === 1) ok = (await jsonOne(prompt)).ok;
      else if (kind === 2) {
        const first = await jsonOne(prompt, { store: true });
        ok = first.ok && (await jsonOne('And then?', { store: true, previous_response_id: first.id })).ok;
      } else {
        const job = await jsonOne(prompt, { store: true, background: true });
        for (let i = 0; i < 100 && job.id; i++) {
          const got = (await (await fetch(`${base}/v1/responses/${job.id}`)).json()) as { status: string };
          if (!['queued', 'in_progress'].includes(got.status)) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      if (!ok) failures++;
    }
  };
  await Promise.all(Array.from({ length: 16 }, (_, i) => worker(i)));
  clearInterval(memory);
  const after = samples.filter((s) => s.t >= 1);
  const slope = (key: 'rss' | 'heap') => {
    const n = after.length;
    if (n < 2) return NaN;
    const mx = after.reduce((a, s) => a + s.t, 0) / n;
    const my = after.reduce((a, s) => a + s[key], 0) / n;
    const num = after.reduce((a, s) => a + (s.t - mx) * (s[key] - my), 0);
    const den = after.reduce((a, s) => a + (s.t - mx) ** 2, 0);
    return num / den;
  };
  process.stdout.write(
    `soak: ${SOAK_S} s, ${requests} requests (${(requests / SOAK_S).toFixed(1)}/s), ${failures} failed; ` +
      `RSS ${mib(samples[0]?.rss ?? 0)} → ${mib(samples.at(-1)?.rss ?? 0)} MiB, slope after 1 min ${(slope('rss') / 1024).toFixed(0)} KiB/min, ` +
      `heap slope ${(slope('heap') / 1024).toFixed(0)} KiB/min; server event-loop lag p99 (worst 200 ms window) ${phaseLag().p99.toFixed(1)} ms\n`,
  );
}
clearInterval(sampler);
child.kill('SIGTERM');
await exited;
process.exit(0);
