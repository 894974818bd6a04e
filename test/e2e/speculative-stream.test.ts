/**
 * Speculative decoding through the API: the same streamed /v1/responses request to the demo model
 * with MAYA_SPECULATIVE=off and =ngram emits the same events with the same deltas (ids and times
 * aside), the same usage, while the speculating server verified drafts (its /v1/status and
 * /metrics/prometheus say how many were accepted).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSse } from '../helpers/sse.ts';
import { startDemoService, type DemoService } from './start-demo-service.ts';

let off: DemoService;
let on: DemoService;

beforeAll(async () => {
  off = await startDemoService([], { engine: { speculative: 'off' } });
  on = await startDemoService([], { engine: { speculative: 'ngram' } });
}, 120_000);
afterAll(async () => {
  await off?.stop();
  await on?.stop();
});

/** Ids become their order of first appearance, times a constant: what is left must match exactly. */
function normalise(events: unknown[]): unknown[] {
  const ids = new Map<string, string>();
  const walk = (v: unknown, key?: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'string' && (key === 'id' || key?.endsWith('_id'))) {
      if (!ids.has(v)) ids.set(v, `id#${ids.size}`);
      return ids.get(v);
    }
    if (typeof v === 'number' && key?.endsWith('_at')) return 'time';
    return v;
  };
  return events.map((e) => walk(e));
}

async function stream(service: DemoService, input: string): Promise<unknown[]> {
  const res = await fetch(`${service.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'maya-demo', input, stream: true, store: false, max_output_tokens: 160 }),
  });
  expect(res.status).toBe(200);
  return parseSse(await res.text()).map((e) => ({ event: e.event, data: e.json ?? e.data }));
}

async function engineStatus(service: DemoService): Promise<Record<string, unknown>> {
  const res = await fetch(`${service.origin}/v1/status`);
  return ((await res.json()) as { engine: Record<string, unknown> }).engine;
}

const INPUTS = [
  'Repeat this sentence exactly: "Avalon trades wool with Brightwater every 4 days, and Brightwater sends grain to ' +
    'Avalon every 6 days." Then repeat it once more.',
  'Return this text with Avalon changed to Westport: Avalon is a city by the sea. Avalon trades wool with Duskmoor.',
  'Hello',
];

describe('a streamed response under speculative decoding', () => {
  it('emits the same events and deltas as without it, and the server verified drafts', async () => {
    const before = await engineStatus(on);
    for (const input of INPUTS) {
      const [a, b] = [await stream(off, input), await stream(on, input)];
      const deltas = a.filter((e) => (e as { event?: string }).event === 'response.output_text.delta');
      expect(deltas.length).toBeGreaterThan(0);
      expect(normalise(b)).toEqual(normalise(a));
    }
    const after = await engineStatus(on);
    expect(after.speculative).toBe('ngram');
    expect((await engineStatus(off)).speculative).toBe('off');
    expect(Number(after.draft_tokens) - Number(before.draft_tokens)).toBeGreaterThan(0);
    expect(Number(after.draft_accepted) - Number(before.draft_accepted)).toBeGreaterThan(0);
    expect(after.mtp_drafts).toBe(0); // prompt lookup's drafts are not the MTP layer's
    // tokens per pass above one: decode_tokens counts tokens, decode_passes the passes that made them
    expect(Number(after.decode_tokens)).toBeGreaterThan(Number(after.decode_passes));
    expect(after.tokens_per_pass).toBe(Number(after.decode_tokens) / Number(after.decode_passes));
    expect(Number(after.tokens_per_pass)).toBeGreaterThan(1);
    expect((await engineStatus(off)).tokens_per_pass).toBe(1); // no drafts: one token per pass
    const metrics = await (await fetch(`${on.origin}/metrics/prometheus`)).text();
    expect(metrics).toMatch(/^maya:engine_draft_accepted [1-9]\d*$/m);
    expect(metrics).toMatch(/^maya:engine_tokens_per_pass 1\.\d+$/m);
  }, 120_000);
});
