/**
 * The one SSE writer: an async iterable of numbered stream events → `event:`/`data:` frames, each
 * written whole in one write, `: keep-alive` comments during silences, `data: [DONE]` at the end.
 * An error raised after the headers went out becomes a standard `error` event (its status can no
 * longer change). A closed connection aborts `onDisconnect` so the producer stops.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { MayaContext } from './app-deps.ts';
import { sseErrorEvent } from '../contract/errors.ts';

export interface SseEvent { type: string; sequence_number: number }

export interface SseOptions {
  /** Aborted when the client goes away before the stream ended. */
  onDisconnect?: AbortController;
  /** Silence after which a `: keep-alive` comment is written. */
  keepAliveMs?: number;
  /** A write that cannot drain within this time ends the stream (slow readers). */
  writeTimeoutMs?: number;
}

export function sseFrame(event: SseEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Resolves false when the socket closed or a write could not drain in time. */
async function write(res: ServerResponse, chunk: string, timeoutMs: number | undefined): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(chunk)) return true;
  const drained = once(res, 'drain').then(() => true, () => false);
  const closed = once(res, 'close').then(() => false, () => false);
  const timer = timeoutMs === undefined ? undefined : new Promise<boolean>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
  const ok = await Promise.race([drained, closed, ...(timer ? [timer] : [])]);
  if (!ok) res.destroy();
  return ok;
}

export async function streamSse(ctx: MayaContext, events: AsyncIterable<SseEvent>, options: SseOptions = {}): Promise<void> {
  const res = ctx.res;
  ctx.respond = false;
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();

  const onClose = () => { if (!res.writableFinished) options.onDisconnect?.abort(); };
  res.once('close', onClose);
  let lastWrite = Date.now();
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWrite >= keepAliveMs && !res.destroyed) {
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
  }, Math.max(10, Math.floor(keepAliveMs / 2)));
  keepAlive.unref();

  let nextSequence = 0;
  try {
    for await (const event of events) {
      nextSequence = event.sequence_number + 1;
      if (!(await write(res, sseFrame(event), options.writeTimeoutMs))) {
        options.onDisconnect?.abort();
        return;
      }
      lastWrite = Date.now();
    }
  } catch (error) {
    await write(res, sseFrame(sseErrorEvent(error, nextSequence)), options.writeTimeoutMs);
  } finally {
    clearInterval(keepAlive);
  }
  if (!res.destroyed) {
    await write(res, 'data: [DONE]\n\n', options.writeTimeoutMs);
    res.end();
  }
  res.off('close', onClose);
}
