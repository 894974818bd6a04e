/**
 * Streaming-parser test harness: feeds a model output split at every UTF-8 byte boundary (and
 * every pair of boundaries) through a fresh parser, decoding the byte chunks with a streaming
 * TextDecoder as a detokeniser would, and compares the merged events with the one-shot parse.
 */
import { expect } from 'vitest';
import type { FinishReason } from '../../engine-cuda/engine.ts';
import type { OutputParser, ParserEvent } from '../../dialects/dialect.ts';

export function feed(parser: OutputParser, chunks: readonly string[], reason: FinishReason = 'stop'): ParserEvent[] {
  const events: ParserEvent[] = [];
  for (const c of chunks) events.push(...parser.push(c));
  events.push(...parser.end(reason));
  return events;
}

/** Concatenates adjacent deltas of the same kind (and call index). */
export function merge(events: readonly ParserEvent[]): ParserEvent[] {
  const out: ParserEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (last && last.type === e.type) {
      if (e.type === 'text_delta' && last.type === 'text_delta') {
        last.text += e.text;
        continue;
      }
      if (e.type === 'reasoning_delta' && last.type === 'reasoning_delta') {
        last.text += e.text;
        continue;
      }
      if (e.type === 'tool_args_delta' && last.type === 'tool_args_delta' && last.index === e.index) {
        last.delta += e.delta;
        continue;
      }
    }
    out.push({ ...e });
  }
  return out;
}

/** The text split at UTF-8 byte offsets, decoded chunk by chunk with a streaming decoder. */
export function splitBytes(text: string, cuts: readonly number[]): string[] {
  const bytes = new TextEncoder().encode(text);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const chunks: string[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    chunks.push(decoder.decode(bytes.subarray(from, cut), { stream: true }));
    from = cut;
  }
  chunks.push(decoder.decode());
  return chunks;
}

export interface StreamCheck {
  makeParser: () => OutputParser;
  output: string;
  reason?: FinishReason;
  /** Characters that must never appear in a text/reasoning delta (marker material). */
  forbidden: readonly string[];
  /** Also try every pair of cut points (use for outputs up to ~120 bytes). */
  pairs?: boolean;
}

/** Checks chunking independence and hold-back; returns the one-shot events (merged). */
export function checkStreaming(check: StreamCheck): ParserEvent[] {
  const reason = check.reason ?? 'stop';
  const oneShot = feed(check.makeParser(), [check.output], reason);
  const expected = merge(oneShot);
  assertInvariants(oneShot, check.forbidden);
  const n = new TextEncoder().encode(check.output).length;
  const run = (cuts: number[]) => {
    const events = feed(check.makeParser(), splitBytes(check.output, cuts), reason);
    assertInvariants(events, check.forbidden);
    const got = merge(events);
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      expect({ cuts, got }).toEqual({ cuts, got: expected });
    }
  };
  for (let i = 1; i < n; i++) run([i]);
  if (check.pairs) for (let i = 1; i < n; i++) for (let j = i + 1; j < n; j++) run([i, j]);
  // one byte at a time, the worst case for hold-back
  run(Array.from({ length: Math.max(0, n - 1) }, (_, k) => k + 1));
  return expected;
}

export function assertInvariants(events: readonly ParserEvent[], forbidden: readonly string[]): void {
  const args = new Map<number, string>();
  for (const e of events) {
    if (e.type === 'text_delta' || e.type === 'reasoning_delta') {
      expect(e.text).not.toBe('');
      for (const f of forbidden) {
        if (e.text.includes(f))
          expect.fail(`delta ${JSON.stringify(e.text)} contains marker material ${JSON.stringify(f)}`);
      }
    }
    if (e.type === 'tool_args_delta') args.set(e.index, (args.get(e.index) ?? '') + e.delta);
    if (e.type === 'tool_call_done') expect(args.get(e.index) ?? '').toBe(e.arguments);
  }
}
