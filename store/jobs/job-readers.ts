/**
 * JobReaders: admission of background stream readers, at most STREAM_READERS at once and
 * STREAM_OWNER_READERS per credential scope. A lease is held for the whole SSE connection and
 * released exactly once when it ends (finished, failed or disconnected); releasing never touches
 * the task being read.
 */
import { type ApiError, tooManyRequests } from '../../contract/errors.ts';

export interface ReaderLease {
  /** Frees the slot; idempotent. */
  release(): void;
}

export type ReaderRejection = 'readers' | 'owner_readers';

/** The 429 past a reader limit; `where` says what the limit counts (', all replicas'). */
export function readersRefusal(reason: ReaderRejection, limit: number, where = ''): ApiError {
  return reason === 'readers'
    ? tooManyRequests(`Too many background stream readers (${limit}${where}); retry later.`, 'too_many_readers', 1)
    : tooManyRequests(
        `Too many background stream readers for this API key (${limit}${where}); close one first.`,
        'too_many_readers',
        1,
      );
}

export class JobReaders {
  private readonly byScope = new Map<string, number>();
  /** Readers connected now. */
  count = 0;

  constructor(
    readonly maxReaders: number,
    readonly maxOwnerReaders: number,
    private readonly onReject: (reason: ReaderRejection) => void = () => {},
  ) {}

  /** A slot for one reader in `scope`, or a 429 ApiError past either limit. */
  acquire(scope: string): ReaderLease {
    const owned = this.byScope.get(scope) ?? 0;
    if (this.count >= this.maxReaders) {
      this.onReject('readers');
      throw readersRefusal('readers', this.maxReaders);
    }
    if (owned >= this.maxOwnerReaders) {
      this.onReject('owner_readers');
      throw readersRefusal('owner_readers', this.maxOwnerReaders);
    }
    this.count++;
    this.byScope.set(scope, owned + 1);
    let isReleased = false;
    return {
      release: () => {
        if (isReleased) return;
        isReleased = true;
        this.count--;
        const left = (this.byScope.get(scope) ?? 1) - 1;
        if (left === 0) this.byScope.delete(scope);
        else this.byScope.set(scope, left);
      },
    };
  }
}
