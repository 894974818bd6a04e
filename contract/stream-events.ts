/**
 * Stream events on the wire: an event is its `type` plus its fields, and `sequence_number` is
 * assigned here, from 0, strictly increasing, per response. The only place numbers are assigned,
 * so buffered (validate-before-publish) events are numbered when they are released, never when
 * they are produced. Foreground runs and background tasks share this rule.
 */

/** A stream event before numbering: `type` plus its fields. */
export type UnnumberedEvent = { type: string } & Record<string, unknown>;

export type StreamEvent = UnnumberedEvent & { sequence_number: number };

export class EventSequencer {
  private next = 0;

  number(event: UnnumberedEvent): StreamEvent {
    return { ...event, sequence_number: this.next++ };
  }

  get count(): number {
    return this.next;
  }
}

/**
 * Runs an event generator to its end, handing each event to `onEvent`, and resolves to what the
 * generator returns (the final Response). The one run-to-end loop: foreground JSON responses,
 * Chat Completions and background workers all drain their runs through it.
 */
export async function drainEvents<E, R>(events: AsyncGenerator<E, R, void>, onEvent?: (event: E) => void): Promise<R> {
  let step = await events.next();
  while (!step.done) {
    onEvent?.(step.value);
    step = await events.next();
  }
  return step.value;
}
