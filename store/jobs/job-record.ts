/**
 * One background task's record: its Response, the history it continues (for previous_response_id
 * during retention), its event buffer and sequencer, and the worker-side state the job manager
 * drives. The run closure (which pins the plan and the runtime) is dropped once the task ends,
 * so a retained record holds only what retrieval, replay and continuation need.
 */
import { EventSequencer, type StreamEvent, type UnnumberedEvent } from '../../contract/stream-events.ts';
import type { ResponseFailure as ResponseError, ResponseObject, ResponseStatus } from '../../contract/types.ts';
import { JobEventBuffer } from './job-event-buffer.ts';
import type { StoredItem } from '../responses/response-store.ts';

/** What the worker hands to a task's run. */
export interface JobRunHooks {
  /** Aborted by cancel, the deadline, shutdown or an oversized event. */
  signal: AbortSignal;
  /** Numbers the run's events after the admission events (pass it to runResponse). */
  sequencer: EventSequencer;
  /** Saves the final response before its terminal event (pass it as runResponse's beforeTerminal). */
  beforeTerminal(final: ResponseObject): Promise<void>;
}

export interface JobSpec {
  /** The Response the run fills in; status 'queued' at admission. */
  response: ResponseObject;
  /** The history the response continues (previous items, then this turn's input items). */
  historyItems: readonly StoredItem[];
  /** The generation: runResponse(runtime, plan, response, {signal, beforeTerminal}, sequencer). */
  run(hooks: JobRunHooks): AsyncGenerator<StreamEvent, ResponseObject, void>;
  /** Stores the final response (completed or incomplete). */
  save?(final: ResponseObject): Promise<void>;
  /** Frees request-owned resources (the continued history's assembly bytes); called once. */
  release?(): void;
}

export type StopReason = 'cancel' | 'deadline' | 'shutdown';

/**
 * Numbers one task's events. Admission publishes `response.created` itself (status queued), so
 * the run's own `response.created` is marked already published (sequence_number -1) and the
 * worker drops it: a reader sees exactly one created event, and no number is skipped.
 */
export class JobSequencer extends EventSequencer {
  private nextNumber = 0;

  override number(event: UnnumberedEvent): StreamEvent {
    if (event.type === 'response.created' && this.nextNumber > 0) return { ...event, sequence_number: -1 };
    return { ...event, sequence_number: this.nextNumber++ };
  }

  override get count(): number {
    return this.nextNumber;
  }
}

export class JobRecord {
  state: 'queued' | 'running' | 'done' = 'queued';
  status: ResponseStatus = 'queued';
  readonly id: string;
  readonly response: ResponseObject;
  readonly historyItems: readonly StoredItem[];
  /** The task's closures; undefined once it ended (released with the worker's resources). */
  spec: JobSpec | undefined;
  readonly controller = new AbortController();
  readonly sequencer = new JobSequencer();
  stopReason: StopReason | undefined;
  failure: ResponseError | undefined;
  startedAt = 0;
  finishedAt = 0;
  cancelDeadline: () => void = () => {};
  /** Resolves when the task reached its terminal state (resources released). */
  readonly settled: Promise<void>;
  settle: () => void = () => {};

  constructor(
    readonly scope: string,
    spec: JobSpec,
    readonly events: JobEventBuffer,
    readonly admittedAt: number,
  ) {
    this.id = spec.response.id;
    this.response = spec.response;
    this.historyItems = spec.historyItems;
    this.spec = spec;
    this.settled = new Promise((resolve) => (this.settle = resolve));
  }

  /** The task reached its terminal state (its resources are released). */
  get isDone(): boolean {
    return this.state === 'done';
  }

  /** The Response as callers see it: the record's status, never the run's transient one. */
  snapshot(): ResponseObject {
    return { ...structuredClone(this.response), status: this.status };
  }

  /** Ends the record's task-owned part: releases request resources and drops the closures. */
  releaseSpec(): void {
    this.spec?.release?.();
    this.spec = undefined;
  }
}
