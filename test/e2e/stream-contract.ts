/**
 * The wire checks every Responses SSE stream in the handler and end-to-end tests goes through:
 * framing (`event: T\ndata: {json}\n\n` with T === data.type, `: keep-alive` comments only
 * between frames, `data: [DONE]` last), every event valid against its own event schema and the
 * ResponseStreamEvent union of openapi/openapi.yaml (ajv 2020, strict, discriminator on), and
 * the pairing/ordering rules of test/responses/stream-rules.ts. Chat completion chunk streams get
 * the same framing and schema check.
 */
import { schemaValidator, errorsOf, loadDocument } from '../generated/contract-schemas.ts';
import { streamViolations } from '../responses/stream-rules.ts';

export type WireEvent = { type: string; sequence_number: number } & Record<string, unknown>;

export interface CheckedStream {
  events: WireEvent[];
  /** Number of `: keep-alive` comment blocks seen. */
  keepAlives: number;
  /** Every problem found; empty for a conforming stream. */
  problems: string[];
}

let mapping: Record<string, string> | undefined;
function eventSchemaName(type: string): string | undefined {
  mapping ??= (
    loadDocument().components.schemas.ResponseStreamEvent as { discriminator: { mapping: Record<string, string> } }
  ).discriminator.mapping;
  return mapping[type]?.split('/').pop();
}

/** Splits raw SSE text into blocks and checks the frame shape; `data` blocks are returned parsed. */
function frames(
  text: string,
  problems: string[],
): { blocks: Array<{ event?: string; data: string }>; keepAlives: number } {
  const blocks: Array<{ event?: string; data: string }> = [];
  let keepAlives = 0;
  if (!text.endsWith('\n\n')) problems.push('stream does not end with a blank line');
  const raw = text.split('\n\n');
  raw.pop();
  for (const block of raw) {
    if (block.startsWith(':')) {
      if (block.includes('\n')) problems.push(`comment block spans lines: ${JSON.stringify(block)}`);
      keepAlives++;
      continue;
    }
    const lines = block.split('\n');
    const match = /^event: (\S+)$/.exec(lines[0] ?? '');
    if (match && lines.length === 2 && lines[1]!.startsWith('data: '))
      blocks.push({ event: match[1], data: lines[1]!.slice(6) });
    else if (lines.length === 1 && lines[0]!.startsWith('data: ')) blocks.push({ data: lines[0]!.slice(6) });
    else problems.push(`malformed frame: ${JSON.stringify(block.slice(0, 120))}`);
  }
  return { blocks, keepAlives };
}

/** Checks a whole Responses SSE body (as received). */
export function checkResponseStream(text: string): CheckedStream {
  const problems: string[] = [];
  const { blocks, keepAlives } = frames(text, problems);
  const last = blocks.at(-1);
  if (!last || last.data !== '[DONE]' || last.event !== undefined)
    problems.push('the last frame is not `data: [DONE]`');
  const events: WireEvent[] = [];
  const union = schemaValidator('ResponseStreamEvent');
  blocks.slice(0, last?.data === '[DONE]' ? -1 : undefined).forEach((block, index) => {
    if (block.event === undefined) return void problems.push(`frame ${index} has no event: line`);
    let event: WireEvent;
    try {
      event = JSON.parse(block.data) as WireEvent;
    } catch {
      return void problems.push(`frame ${index} data is not JSON`);
    }
    if (event.type !== block.event) problems.push(`frame ${index}: event ${block.event} != data.type ${event.type}`);
    const data: unknown = event;
    if (!union(data)) problems.push(`frame ${index} (${event.type}) fails ResponseStreamEvent: ${errorsOf(union)}`);
    const name = eventSchemaName(event.type);
    if (!name) problems.push(`frame ${index}: ${event.type} is not a contract event type`);
    else {
      const own = schemaValidator(name);
      if (!own(data)) problems.push(`frame ${index} (${event.type}) fails ${name}: ${errorsOf(own)}`);
    }
    events.push(event);
  });
  problems.push(...streamViolations(events));
  return { events, keepAlives, problems };
}

/** Checks a chat completion SSE body: `data:` frames only, each a valid chunk, `[DONE]` last. */
export function checkChatStream(text: string): { chunks: Array<Record<string, unknown>>; problems: string[] } {
  const problems: string[] = [];
  const { blocks } = frames(text, problems);
  const last = blocks.at(-1);
  if (!last || last.data !== '[DONE]') problems.push('the last frame is not `data: [DONE]`');
  const validate = schemaValidator('CreateChatCompletionStreamResponse');
  const chunks: Array<Record<string, unknown>> = [];
  for (const [index, block] of blocks.slice(0, -1).entries()) {
    if (block.event !== undefined) problems.push(`chunk ${index} has an event: line`);
    const chunk = JSON.parse(block.data) as Record<string, unknown>;
    if (!('error' in chunk) && !validate(chunk))
      problems.push(`chunk ${index} fails CreateChatCompletionStreamResponse: ${errorsOf(validate)}`);
    chunks.push(chunk);
  }
  return { chunks, problems };
}

/** Validates a body against components.schemas[name]; returns the ajv error text or ''. */
export function schemaProblems(name: string, body: unknown): string {
  const validate = schemaValidator(name);
  return validate(body) ? '' : errorsOf(validate);
}
