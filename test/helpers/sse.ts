/**
 * SSE helpers for HTTP tests: `rawText` makes supertest hand back a text/event-stream body as a
 * string (`request.post(...).buffer(true).parse(rawText)`), and `parseSse` splits it into events
 * the way the openai SDK does (blank-line framing, `event:` / `data:` lines, `:` comments skipped).
 */
import type { Test } from 'supertest';

type Parser = Parameters<Test['parse']>[0];

export const rawText = ((
  res: NodeJS.ReadableStream & { setEncoding(e: string): void },
  done: (err: Error | null, body: string) => void,
) => {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (text += chunk));
  res.on('end', () => done(null, text));
  res.on('error', (err: Error) => done(err, text));
}) as unknown as Parser;

export interface SseEvent {
  event: string | undefined;
  /** The joined data lines; `[DONE]` is kept as is. */
  data: string;
  /** JSON.parse(data), or undefined for `[DONE]` / non-JSON. */
  json: unknown;
}

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.replace(/\r\n?/g, '\n').split('\n\n')) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0 && event === undefined) continue;
    const joined = data.join('\n');
    let json: unknown;
    try {
      json = joined === '[DONE]' ? undefined : JSON.parse(joined);
    } catch {
      json = undefined;
    }
    events.push({ event, data: joined, json });
  }
  return events;
}
