/**
 * The streaming machinery every dialect parser shares: a marker scanner that holds back partial
 * markers, whitespace-trimmed reasoning/text channels, and the tool-call bookkeeping that turns a
 * dialect's state machine into ParserEvents (see dialect.ts for the event contract).
 *
 * A dialect parser subclasses StreamParser and implements `step(final)`: look at the unconsumed
 * text through `scanner.take(markers, final)`, act on what it returns, and report whether it
 * made progress. The text accumulates across pushes, so the result never depends on how the
 * output was chunked.
 */
import type { FinishReason } from '../engine-cuda/engine.ts';
import type { OutputParser, ParserErrorCode, ParserEvent, ToolSpec } from './dialect.ts';

export interface ScanResult {
  /** Text before the marker (or all text that cannot start a marker). */
  text: string;
  /** The marker found, or null when none completed yet. */
  marker: string | null;
}

/** Unconsumed output plus the hold-back rule: a suffix that could still grow into a marker stays. */
export class MarkerScanner {
  private buf = '';

  feed(chunk: string): void {
    this.buf += chunk;
  }

  get pending(): string {
    return this.buf;
  }

  /**
   * Consumes up to and including the earliest marker (the longest one on a tie). Without a
   * marker it consumes everything except a trailing proper prefix of some marker, or everything
   * when `final`. Returns null when nothing can be consumed yet.
   */
  take(markers: readonly string[], final: boolean): ScanResult | null {
    let at = -1;
    let found: string | null = null;
    for (const m of markers) {
      const i = this.buf.indexOf(m);
      if (i >= 0 && (at < 0 || i < at || (i === at && m.length > (found?.length ?? 0)))) {
        at = i;
        found = m;
      }
    }
    if (found !== null) {
      const text = this.buf.slice(0, at);
      this.buf = this.buf.slice(at + found.length);
      return { text, marker: found };
    }
    const keep = final ? 0 : heldBack(this.buf, markers);
    if (this.buf.length - keep === 0) return null;
    const text = this.buf.slice(0, this.buf.length - keep);
    this.buf = this.buf.slice(this.buf.length - keep);
    return { text, marker: null };
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of some marker. */
export function heldBack(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers) {
    const max = Math.min(m.length - 1, text.length);
    for (let k = max; k > best; k--) {
      if (text.endsWith(m.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/**
 * A text segment published with its surrounding whitespace trimmed, as the templates trim
 * history (`content.strip()`): leading whitespace is dropped, trailing whitespace is held until
 * more text follows and dropped when the segment closes.
 */
export class TrimmedChannel {
  private started = false;
  private pendingWs = '';

  write(s: string): string {
    if (!this.started) {
      s = s.replace(/^\s+/, '');
      if (s === '') return '';
      this.started = true;
    }
    s = this.pendingWs + s;
    const m = /\s+$/.exec(s);
    this.pendingWs = m ? m[0] : '';
    return m ? s.slice(0, m.index) : s;
  }

  close(): void {
    this.started = false;
    this.pendingWs = '';
  }
}

/** Writes a JSON arguments object incrementally; `text` is always the concatenated deltas. */
export class JsonArgsWriter {
  text = '';
  private count = 0;

  constructor(private readonly emit: (delta: string) => void) {}

  open(): void {
    this.out('{');
  }

  /** Starts a member; with `stringValue` the opening quote of the value is written too. */
  key(name: string, stringValue: boolean): void {
    this.out(`${this.count++ > 0 ? ',' : ''}${JSON.stringify(name)}:${stringValue ? '"' : ''}`);
  }

  stringChunk(s: string): void {
    if (s) this.out(JSON.stringify(s).slice(1, -1));
  }

  endString(): void {
    this.out('"');
  }

  value(v: unknown): void {
    this.out(JSON.stringify(v) ?? 'null');
  }

  close(): string {
    this.out('}');
    return this.text;
  }

  private out(delta: string): void {
    this.text += delta;
    this.emit(delta);
  }
}

export abstract class StreamParser implements OutputParser {
  protected readonly scanner = new MarkerScanner();
  protected readonly tools: ReadonlyMap<string, ToolSpec>;
  private out: ParserEvent[] = [];
  private stopped = false;
  private turnEnded = false;
  private readonly reasoning = new TrimmedChannel();
  private hasReasoning = false;
  private reasoningClosed = false;
  private readonly textChannel = new TrimmedChannel();
  private numCalls = 0;
  /** The open call: `index` is set once its name was published. */
  private call: { index: number | null } | null = null;

  constructor(tools: readonly ToolSpec[]) {
    this.tools = new Map(tools.map((t) => [t.name, t]));
  }

  push(chunk: string): ParserEvent[] {
    if (!this.stopped && !this.turnEnded) {
      this.scanner.feed(chunk);
      this.drive(false);
    }
    return this.drain();
  }

  end(reason: FinishReason): ParserEvent[] {
    if (!this.stopped) {
      if (!this.turnEnded) this.drive(true);
      this.finish(this.turnEnded ? 'stop' : reason);
      this.stopped = true;
    }
    return this.drain();
  }

  /** Consumes what it can of `scanner`; returns false when it needs more input. */
  protected abstract step(final: boolean): boolean;

  private drive(final: boolean): void {
    while (!this.stopped && !this.turnEnded && this.step(final));
  }

  private drain(): ParserEvent[] {
    const events = this.out;
    this.out = [];
    return events;
  }

  private finish(reason: FinishReason): void {
    if (this.call) {
      if (reason === 'stop') {
        this.fail('unfinished_tool_call', 'the turn ended inside an unfinished tool call');
      } else if (this.call.index !== null) {
        this.out.push({ type: 'tool_call_incomplete', index: this.call.index });
      }
      this.call = null;
      return;
    }
    this.closeReasoning();
    this.textChannel.close();
  }

  /** A stop marker: everything after it is ignored. */
  protected endTurn(): void {
    this.turnEnded = true;
  }

  protected emitReasoning(s: string): void {
    const text = this.reasoning.write(s);
    if (text === '') return;
    this.hasReasoning = true;
    this.out.push({ type: 'reasoning_delta', text });
  }

  protected closeReasoning(): void {
    if (this.hasReasoning && !this.reasoningClosed) {
      this.out.push({ type: 'reasoning_done' });
      this.reasoningClosed = true;
    }
    this.reasoning.close();
  }

  protected emitText(s: string): void {
    this.closeReasoning();
    const text = this.textChannel.write(s);
    if (text !== '') this.out.push({ type: 'text_delta', text });
  }

  /** Ends the current reasoning and text segments (trailing whitespace is dropped). */
  protected closeSegments(): void {
    this.closeReasoning();
    this.textChannel.close();
  }

  /** Enters a call whose name is not complete yet (nothing is published). */
  protected beginCall(): void {
    this.closeSegments();
    this.call = { index: null };
  }

  /** Publishes the call's name; on an undeclared name reports an error and stops parsing. */
  protected nameCall(name: string): boolean {
    if (this.stopped) return false;
    if (!this.call) this.beginCall();
    if (!this.tools.has(name)) {
      this.fail('undeclared_tool', `the model called an undeclared tool "${name}"`, name);
      return false;
    }
    const index = this.numCalls++;
    this.call = { index };
    this.out.push({ type: 'tool_call_start', index, name });
    return true;
  }

  protected argsDelta(delta: string): void {
    const index = this.call?.index;
    if (index !== null && index !== undefined && delta !== '') this.out.push({ type: 'tool_args_delta', index, delta });
  }

  protected finishCall(args: string): void {
    const index = this.call?.index;
    if (index !== null && index !== undefined) this.out.push({ type: 'tool_call_done', index, arguments: args });
    this.call = null;
  }

  protected toolSpec(name: string): ToolSpec | undefined {
    return this.tools.get(name);
  }

  /** Reports the first error only; parsing stops there. */
  protected fail(code: ParserErrorCode, message: string, name?: string): void {
    if (this.stopped) return;
    this.out.push(name === undefined ? { type: 'error', code, message } : { type: 'error', code, message, name });
    this.stopped = true;
  }
}
