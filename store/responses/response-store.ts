/**
 * The response store contract: stored responses with their expanded input history, per
 * credential scope, bounded by the MAYA_GLM_RESPONSES_CACHE_* settings. The handlers, the
 * generation pipeline and the job manager depend on this interface only; the in-memory
 * implementation is memory-response-store.ts, and test/store/responses/store.contract.ts is the suite any
 * other backend must pass.
 *
 * Contract (every method takes the caller's credential `scope` first; a record is visible only
 * in the scope that put it, so other-scope ids behave exactly like unknown ids):
 *
 * - `put(scope, {response, inputItems, previous})` saves a final response. Its input history is
 *   `previous.items` (the continued response's input items followed by its output items, as
 *   `history()` returned them) followed by `inputItems` (this turn's new input items); its
 *   output items are `response.output`. Every item needs a string `id`, unique within the
 *   history (the caller assigns ids to new input items; a duplicate → StoreError
 *   `duplicate_item`, 400, so callers should reject duplicates before generating). When the
 *   continued response is still stored, the new snapshot reuses its stored item references and
 *   only the new items are serialised; otherwise `previous.items` are stored again (content
 *   already present is shared, not copied). An id already stored in the scope is replaced.
 *   Expiry: CACHE_TTL_S seconds after put (the completion time), never refreshed.
 * - `get(scope, id)` → the saved Response (wire form, `output` included), or undefined when
 *   unknown, expired, evicted, deleted or other-scope. A read refreshes LRU order, not TTL.
 * - `delete(scope, id)` → true when a stored response was removed. Descendants keep their
 *   whole history: items are shared, reference-counted blocks.
 * - `listInputItems(scope, id, {order, limit, after})` → one page of the response's input
 *   history (excluding its own output) in `order`; `after` is an item id of that listing and
 *   the page starts strictly after it in the requested order. An id not in the listing →
 *   StoreError `unknown_cursor` (400, param `after`): a client's cursor is never silently
 *   reinterpreted; `limit` outside 1..100 → `invalid_page` (400, param `limit`). Cost is
 *   O(limit), independent of history length.
 * - `history(scope, id)` → the items to continue from (input items then output items, in
 *   order) as a StoredHistory whose `bytes` are reserved from the ASSEMBLY_BYTES budget until
 *   `release()`; pressure → StoreError `assembly_busy` (503). undefined when not found.
 * - `reserveAssembly(bytes)` → the same budget for other request-owned histories (job records,
 *   store:false continuations); throws `assembly_busy`.
 * - `stats()` → the `responses_cache` section of /v1/status (expired entries discarded first).
 *
 * Bounds: ENTRY_BYTES caps one expanded snapshot (every history item + output item + response
 * metadata, serialised), as do CACHE_BYTES and OWNER_BYTES (a snapshot that could not fit even
 * alone) → StoreError `snapshot_too_large` (413). Otherwise capacity pressure (CACHE_ENTRIES,
 * CACHE_BYTES, OWNER_ENTRIES, OWNER_BYTES; owner quotas 0 = off) evicts least recently used
 * responses: the owner's own for owner quotas, any scope's for global limits. Every operation
 * first discards expired entries. Byte figures count serialised UTF-8 JSON (see
 * memory-response-store.ts for the exact accounting).
 */

import { ApiError } from '../../contract/errors.ts';

/** A wire-form item (ItemResource / OutputItem): snake_case JSON with a stable id. */
export interface StoredItem {
  readonly id: string;
  readonly type: string;
  readonly [field: string]: unknown;
}

/** A wire-form Response object; `output` holds its output items. */
export interface StoredResponse {
  readonly id: string;
  readonly object: 'response';
  readonly output: readonly StoredItem[];
  readonly [field: string]: unknown;
}

/** Request-owned expanded history, counted against ASSEMBLY_BYTES until released. */
export interface StoredHistory extends AssemblyReservation {
  /** The response these items continue from. */
  readonly responseId: string;
  /** Input history then output items of `responseId`, in conversation order. */
  readonly items: readonly StoredItem[];
}

export interface AssemblyReservation {
  /** Serialised bytes held against ASSEMBLY_BYTES. */
  readonly bytes: number;
  /** Returns the bytes to the budget; idempotent. */
  release(): void;
}

export interface StoredResponseInput {
  /** The final Response (completed or incomplete), wire form. */
  readonly response: StoredResponse;
  /** This turn's new input items, in order, each with its id assigned. */
  readonly inputItems: readonly StoredItem[];
  /** The continued response's history, when the request had previous_response_id. */
  readonly previous?: Pick<StoredHistory, 'responseId' | 'items'>;
}

export interface ListInputItemsOptions {
  /** Default 'desc'. */
  readonly order?: 'asc' | 'desc';
  /** 1..100, default 20. */
  readonly limit?: number;
  /** Item id of the listing; the page starts strictly after it. */
  readonly after?: string;
}

/** The ResponseItemList wire object. first_id/last_id are null only for an empty page. */
export interface InputItemPage {
  readonly object: 'list';
  readonly data: StoredItem[];
  readonly has_more: boolean;
  readonly first_id: string | null;
  readonly last_id: string | null;
}

/** A listing to page through: `count` items, found by position or by id. */
export interface ItemListing {
  readonly count: number;
  /** Position of the item with this id, or undefined when it is not in the listing. */
  indexOf(id: string): number | undefined;
  at(index: number): StoredItem;
}

/**
 * One page of input items: `order` asc|desc (default desc), `limit` 1..100 (default 20), `after`
 * an item id of the listing (the page starts strictly after it in `order`). Cost O(limit) plus
 * one `indexOf`. StoreError `invalid_page` (param `limit`) or `unknown_cursor` (param `after`):
 * a client's cursor is never silently reinterpreted. The store and the job manager both page here.
 */
export function pageItems(listing: ItemListing, options: ListInputItemsOptions): InputItemPage {
  const { order = 'desc', limit = 20, after } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new StoreError('invalid_page', `limit must be an integer from 1 to 100; got ${limit}.`, 'limit');
  }
  const count = listing.count;
  const step = order === 'asc' ? 1 : -1;
  let index = order === 'asc' ? 0 : count - 1;
  if (after !== undefined) {
    const cursor = listing.indexOf(after);
    if (cursor === undefined) {
      throw new StoreError('unknown_cursor', `No input item with id '${after}' in this response.`, 'after');
    }
    index = cursor + step;
  }
  const data: StoredItem[] = [];
  for (; index >= 0 && index < count && data.length < limit; index += step) data.push(listing.at(index));
  return {
    object: 'list',
    data,
    has_more: index >= 0 && index < count,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
  };
}

/** The `responses_cache` section of /v1/status. Counters are totals since start-up. */
export interface ResponseCacheStats {
  entries: number;
  bytes: number;
  blocks: number;
  hits: number;
  misses: number;
  writes: number;
  rejections: number;
  evictions: number;
  expirations: number;
  assembly_bytes: number;
  max_entries: number;
  max_bytes: number;
  ttl_s: number;
}

export interface ResponseStore {
  put(scope: string, record: StoredResponseInput): Promise<void>;
  get(scope: string, id: string): Promise<StoredResponse | undefined>;
  delete(scope: string, id: string): Promise<boolean>;
  listInputItems(scope: string, id: string, options?: ListInputItemsOptions): Promise<InputItemPage | undefined>;
  history(scope: string, id: string): Promise<StoredHistory | undefined>;
  reserveAssembly(bytes: number): AssemblyReservation;
  stats(): Promise<ResponseCacheStats>;
}

export type StoreErrorCode =
  'snapshot_too_large' | 'assembly_busy' | 'duplicate_item' | 'invalid_item' | 'unknown_cursor' | 'invalid_page';

const STORE_ERROR_STATUS: Record<StoreErrorCode, number> = {
  snapshot_too_large: 413,
  assembly_busy: 503,
  duplicate_item: 400,
  invalid_item: 400,
  unknown_cursor: 400,
  invalid_page: 400,
};

/**
 * A store refusal, raised as the ground-floor ApiError: `status` is the HTTP status (400, 413,
 * or 503 with Retry-After: 1 for assembly pressure) and `param` the request field to blame (null
 * when none, and for 5xx). Handlers and the job manager let it through as it is.
 */
export class StoreError extends ApiError {
  declare readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, param: string | null = null) {
    const status = STORE_ERROR_STATUS[code];
    const isServer = status >= 500;
    super(
      status,
      message,
      isServer ? 'server_error' : 'invalid_request_error',
      code,
      isServer ? null : param,
      isServer ? { 'retry-after': '1' } : {},
    );
    this.name = 'StoreError';
  }
}
