/**
 * The one SSE writer, for every streaming endpoint: an async iterable → frames, each written whole
 * in one write, with backpressure (a write that cannot drain within `writeTimeoutMs` ends the
 * stream), a keep-alive frame during silences and an end frame. The format decides the frames:
 * Responses events as `event:`/`data:` (the default), Chat Completions chunks as `data:`, both
 * with `: keep-alive` comments and `data: [DONE]` at the end; Anthropic's Messages events as
 * `event:`/`data:` with `ping` events for keep-alive and no end frame. An error raised after the
 * headers went out becomes the format's error frame (the status can no longer change). A closed
 * connection aborts `onDisconnect` so the producer stops.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { MayaContext } from './app-deps.ts';
import { anthropicError, sseErrorEvent, toApiError } from '../contract/errors.ts';

export interface SseEvent {
  type: string;
  sequence_number: number;
}

/** How items become frames. */
export interface SseFormat<T> {
  frame(item: T): string;
  /** The frame for an error raised after `items` frames were written (the last one `last`). */
  error(error: unknown, last: T | undefined): string;
  /** Written during silences; default a `: keep-alive` comment. */
  keepAlive?: string;
  /** Written after the last frame; default `data: [DONE]`, '' for none. */
  end?: string;
}

/** Responses: `event: <type>` frames; an error is the standard `error` event, numbered next. */
export const responsesFormat: SseFormat<SseEvent> = {
  frame: (event) => sseFrame(event),
  error: (error, last) => sseFrame(sseErrorEvent(error, last === undefined ? 0 : last.sequence_number + 1)),
};

/** Chat Completions: `data:` chunks; an error is the error body as a data frame. */
export const chatFormat: SseFormat<object> = {
  frame: (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
  error: (error) => `data: ${JSON.stringify(toApiError(error).toJSON())}\n\n`,
};

/** Anthropic's Messages API: `event: <type>` frames, `ping` events as keep-alive, an `error` event in its envelope, no end frame. */
export const anthropicFormat: SseFormat<{ type: string }> = {
  frame: (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`,
  error: (error) => `event: error\ndata: ${JSON.stringify(anthropicError(error).body)}\n\n`,
  keepAlive: 'event: ping\ndata: {"type":"ping"}\n\n',
  end: '',
};

export interface SseOptions<T = SseEvent> {
  /** Frames; default responsesFormat. */
  format?: SseFormat<T>;
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
  const drained = once(res, 'drain').then(
    () => true,
    () => false,
  );
  const closed = once(res, 'close').then(
    () => false,
    () => false,
  );
  const timer =
    timeoutMs === undefined
      ? undefined
      : new Promise<boolean>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
  const ok = await Promise.race([drained, closed, ...(timer ? [timer] : [])]);
  if (!ok) res.destroy();
  return ok;
}

/**
 * An AbortController aborted when the client goes away before the response finished (the JSON
 * answers' disconnect rule; streamSse applies the same rule to `onDisconnect`).
 */
export function abortOnDisconnect(res: ServerResponse, controller = new AbortController()): AbortController {
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller;
}

export async function streamSse<T = SseEvent>(
  ctx: MayaContext,
  events: AsyncIterable<T>,
  options: SseOptions<T> = {},
): Promise<void> {
  const format = (options.format ?? responsesFormat) as SseFormat<T>;
  const res = ctx.res;
  ctx.respond = false;
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();

  if (options.onDisconnect) abortOnDisconnect(res, options.onDisconnect);
  let lastWrite = Date.now();
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const keepAlive = setInterval(
    () => {
      if (Date.now() - lastWrite >= keepAliveMs && !res.destroyed) {
        res.write(format.keepAlive ?? ': keep-alive\n\n');
        lastWrite = Date.now();
      }
    },
    Math.max(10, Math.floor(keepAliveMs / 2)),
  );
  keepAlive.unref();

  let last: T | undefined;
  try {
    for await (const event of events) {
      last = event;
      if (!(await write(res, format.frame(event), options.writeTimeoutMs))) {
        options.onDisconnect?.abort();
        return;
      }
      lastWrite = Date.now();
    }
  } catch (error) {
    await write(res, format.error(error, last), options.writeTimeoutMs);
  } finally {
    clearInterval(keepAlive);
  }
  if (!res.destroyed) {
    const end = format.end ?? 'data: [DONE]\n\n';
    if (end !== '') await write(res, end, options.writeTimeoutMs);
    res.end();
  }
}
