/**
 * What a background task's record answers, whichever copy is read: this process's JobRecord
 * (job-manager.ts) or the copy shared through Redis (redis-job-mirror.ts). One place for the
 * rules and their messages: DELETE of an active task (409), previous_response_id of an active,
 * failed or cancelled one (409 / 400) with its history reserved from ASSEMBLY_BYTES, the
 * input-item listing, and a stream's cursor (400 past the newest event, 410 behind the window).
 */
import { type ApiError, badRequest, conflict, gone } from '../../contract/errors.ts';
import type { ResponseStatus, ServerOutputItem } from '../../contract/types.ts';
import {
  pageItems,
  type InputItemPage,
  type ListInputItemsOptions,
  type ResponseStore,
  type StoredHistory,
  type StoredItem,
} from '../responses/response-store.ts';
import { eventBytes } from './job-event-buffer.ts';

/** The part of a task record these rules read. */
export interface TaskState {
  readonly id: string;
  /** The record's status (queued, in_progress, then the terminal one). */
  readonly status: ResponseStatus | string;
  /** The task reached its terminal state. */
  readonly isDone: boolean;
}

/** DELETE: 409 while the task is active. */
export function checkRemovable(task: TaskState): void {
  if (task.isDone) return;
  throw conflict(
    `Response '${task.id}' is still ${task.status}; cancel it before deleting it.`,
    'response_in_progress',
  );
}

/**
 * previous_response_id of a task: its input history (`readHistory`, read only once the task may
 * be continued) then its output, with the bytes reserved from the store's ASSEMBLY_BYTES budget
 * until release. 409 while the task is active, 400 for a failed or cancelled one; undefined when
 * the history is gone.
 */
export async function continuationHistory(
  task: TaskState & { readonly output: readonly ServerOutputItem[] },
  store: Pick<ResponseStore, 'reserveAssembly'>,
  readHistory: () => readonly StoredItem[] | undefined | Promise<readonly StoredItem[] | undefined>,
): Promise<StoredHistory | undefined> {
  const { id, status } = task;
  if (!task.isDone) {
    throw conflict(
      `Response '${id}' is still ${status}; it can be continued once it has finished.`,
      'response_in_progress',
      'previous_response_id',
    );
  }
  if (status === 'cancelled' || status === 'failed') {
    throw badRequest(
      'previous_response_id',
      `Response '${id}' ${status === 'failed' ? 'failed' : 'was cancelled'} and cannot be continued.`,
      'invalid_previous_response',
    );
  }
  const history = await readHistory();
  if (!history) return undefined;
  const items: StoredItem[] = [...history, ...task.output];
  const bytes = eventBytes(items);
  const reservation = store.reserveAssembly(bytes);
  return { responseId: id, items, bytes, release: () => reservation.release() };
}

/** input_items of a task: its input history (not its output), paged like the store's listing. */
export function pageHistory(items: readonly StoredItem[], options: ListInputItemsOptions): InputItemPage {
  return pageItems(
    {
      count: items.length,
      indexOf: (itemId) => {
        const index = items.findIndex((item) => item.id === itemId);
        return index < 0 ? undefined : index;
      },
      at: (index) => items[index]!,
    },
    options,
  );
}

/** The retained event window of a task: the newest event and the newest one dropped (-1: none). */
export interface EventWindow {
  readonly last: number;
  readonly dropped: number;
}

/**
 * Checks a stream's cursor (`after` = starting_after, -1 for a full replay) against the window:
 * 400 for a cursor past the newest event, 410 for one behind the window. Returns the 410 to raise
 * when the window later slides past the reader (given the newest dropped number then).
 */
export function checkCursor(id: string, after: number, window: EventWindow): (dropped: number) => ApiError {
  if (after > window.last) {
    throw badRequest(
      'starting_after',
      `starting_after=${after} is after the newest event of response '${id}' (sequence number ${window.last}).`,
      'invalid_cursor',
    );
  }
  const behind = (dropped: number) =>
    gone(
      `Events of response '${id}' up to sequence number ${dropped} are no longer retained (EVENT_COUNT/EVENT_BYTES); the snapshot is still retrievable without stream=true.`,
      'events_expired',
      'starting_after',
    );
  if (after < window.dropped) throw behind(window.dropped);
  return behind;
}
