/**
 * JobEventBuffer: one background task's published stream events, kept as a sliding window of at
 * most EVENT_COUNT events and EVENT_BYTES serialised bytes, plus the readers that replay and
 * follow it. When the window slides past a reader's cursor the reader is told (`gone`), never
 * silently moved forward; a single event larger than the whole window is refused (`append`
 * returns false) so the task can fail explicitly.
 *
 * Byte figures are the UTF-8 length of each event's JSON (what one SSE `data:` line carries).
 */

export interface JobEvent {
  readonly type: string;
  readonly sequence_number: number;
  readonly [field: string]: unknown;
}

interface Entry {
  event: JobEvent;
  bytes: number;
}

export function eventBytes(event: object): number {
  return Buffer.byteLength(JSON.stringify(event));
}

export class JobEventBuffer {
  private readonly entries: Entry[] = [];
  private head = 0;
  private waiters = new Set<() => void>();
  /** Serialised bytes of the retained events. */
  bytes = 0;
  /** sequence_number of the newest appended event; -1 before the first. */
  lastSequence = -1;
  /** sequence_number of the newest event dropped from the window; -1 when none was. */
  droppedThrough = -1;
  /** No event will follow (the task reached its terminal state). */
  isClosed = false;
  /** Called with each event once it is retained (a shared-record mirror sets it). */
  onAppend: ((event: JobEvent, bytes: number) => void) | undefined;

  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
  ) {}

  get count(): number {
    return this.entries.length - this.head;
  }

  /** Appends a numbered event; false (nothing stored) when it alone exceeds maxBytes. */
  append(event: JobEvent): boolean {
    const bytes = eventBytes(event);
    if (bytes > this.maxBytes) return false;
    if (this.isClosed) throw new Error('JobEventBuffer: append after close');
    if (event.sequence_number <= this.lastSequence) throw new Error('JobEventBuffer: sequence numbers must increase');
    this.entries.push({ event, bytes });
    this.bytes += bytes;
    this.lastSequence = event.sequence_number;
    while (this.count > this.maxCount || this.bytes > this.maxBytes) this.dropOldest();
    this.onAppend?.(event, bytes);
    this.wake();
    return true;
  }

  /** The retained events, oldest first. */
  retained(): JobEvent[] {
    return this.entries.slice(this.head).map((entry) => entry.event);
  }

  close(): void {
    this.isClosed = true;
    this.wake();
  }

  /**
   * The events after `after`, then each new one as it is appended, until the buffer closes or
   * `signal` aborts. Throws `onGone()`'s error when the window slides past the cursor.
   */
  async *read(after: number, onGone: () => Error, signal?: AbortSignal): AsyncGenerator<JobEvent, void, void> {
    let cursor = after;
    while (!signal?.aborted) {
      if (cursor < this.droppedThrough) throw onGone();
      const next = this.firstAfter(cursor);
      if (next !== undefined) {
        cursor = next.sequence_number;
        yield next;
        continue;
      }
      if (this.isClosed) return;
      await this.changed(signal);
    }
  }

  private firstAfter(cursor: number): JobEvent | undefined {
    let low = this.head;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.entries[mid]!.event.sequence_number <= cursor) low = mid + 1;
      else high = mid;
    }
    return this.entries[low]?.event;
  }

  private dropOldest(): void {
    const entry = this.entries[this.head]!;
    this.bytes -= entry.bytes;
    this.droppedThrough = entry.event.sequence_number;
    this.entries[this.head] = undefined as never;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }

  private changed(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const waiter of waiters) waiter();
  }
}
