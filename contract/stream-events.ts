/**
 * Stream events on the wire: an event is its `type` plus its fields, and `sequence_number` is
 * assigned here, from 0, strictly increasing, per response. The only place numbers are assigned,
 * so buffered (validate-before-publish) events are numbered when they are released, never when
 * they are produced. Foreground runs and background tasks share this rule.
 */

/** A stream event before numbering: `type` plus its fields. */
export type UnnumberedEvent = { type: string } & Record<string, unknown>;

export type StreamEvent = UnnumberedEvent & { sequence_number: number };

/**
 * An event a run yields only for a translator that asked for it (run-response.ts RunHooks.reportProgress,
 * the tool loop's `maya.tool_limit`): `type` starts with `maya.`, `sequence_number` is -1, and it is
 * never published on a Responses stream. The translator turns it into its own wire form.
 */
export function internalEvent(type: `maya.${string}`, fields: Record<string, unknown>): StreamEvent {
  return { ...fields, type, sequence_number: -1 };
}

export function isInternalEvent(event: { type: string }): boolean {
  return event.type.startsWith('maya.');
}

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
 * Runs an event generator to its end, yielding `map(event)` for each event it maps (undefined:
 * nothing) and returning what the generator returns (the final Response). The one run-to-end
 * loop: foreground JSON responses and background workers drain their runs through it
 * (drainEvents), the Chat Completions translator relays a run as chunks through it.
 */
export async function* relayEvents<E, R, T>(
  events: AsyncGenerator<E, R, void>,
  map: (event: E) => T | undefined,
): AsyncGenerator<T, R, void> {
  let step = await events.next();
  while (!step.done) {
    const out = map(step.value);
    if (out !== undefined) yield out;
    step = await events.next();
  }
  return step.value;
}

/** Runs an event generator to its end through relayEvents, handing each event to `onEvent`. */
export async function drainEvents<E, R>(events: AsyncGenerator<E, R, void>, onEvent?: (event: E) => void): Promise<R> {
  // Nothing is mapped, so the relay's first step is its end.
  const end = await relayEvents<E, R, never>(events, (event) => void onEvent?.(event)).next();
  return end.value;
}
