/**
 * Numbers published stream events: `sequence_number` from 0, strictly increasing, per response.
 * The only place sequence numbers are assigned, so buffered (validate-before-publish) events are
 * numbered when they are released, never when they are produced.
 */
import type { UnnumberedEvent } from '../responses/output-assembler.ts';

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
