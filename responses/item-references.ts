/**
 * Item references (opt-in MAYA_GLM_RESPONSES_ITEM_REFERENCES): an input item
 * `{"type":"item_reference","id":"…"}` (or OpenAI's short form `{"id":"…"}`) stands for an item of
 * one of the caller's stored responses: one of its output items, or one of its input items (the
 * ids the client sent, or the `msg_…`/`fc_…`/`fco_…`/`rs_…` ids Maya gave items sent without one,
 * as input_items lists them). The Vercel AI SDK replays multi-step tool loops this way when
 * `store` is on.
 *
 * The store is keyed by response id, so this process keeps an index from item id to the stored
 * responses that hold it (the newest few), written when a response is saved. The index is only a
 * hint: every reference is read back from the store in the caller's scope (`history`), so an
 * expired, evicted, deleted or other-key response resolves like an unknown id (404 naming it).
 * With a shared store (MAYA_STORE_URL) a reference resolves on the replica that saved the response.
 */
import { ApiError } from '../contract/errors.ts';
import type { ResponseStore, StoredItem } from '../store/responses/response-store.ts';

type RawItem = Record<string, unknown>;

/** Item ids kept in the index, over all scopes (oldest written first out). */
export const ITEM_INDEX_ENTRIES = 65536;
/** Stored responses remembered per item id (a continued history holds its items again). */
const RESPONSES_PER_ITEM = 4;

/** True for `{"type":"item_reference","id"}` and for an item with only an `id` (OpenAI's short form). */
export function isItemReference(item: RawItem): boolean {
  if (item.type === 'item_reference') return true;
  return (
    (item.type === undefined || item.type === null) &&
    typeof item.id === 'string' &&
    Object.keys(item).every((key) => key === 'id' || key === 'type')
  );
}

export class ItemIndex {
  /** `scope\0itemId` → response ids, newest first. Map order is write order (oldest first). */
  private readonly entries = new Map<string, string[]>();

  constructor(private readonly maxEntries = ITEM_INDEX_ENTRIES) {}

  /** Records that the stored response `responseId` holds `items` (its input and output items). */
  add(scope: string, responseId: string, items: readonly { id?: unknown }[]): void {
    for (const item of items) {
      if (typeof item.id !== 'string') continue;
      const key = `${scope}\0${item.id}`;
      const ids = [responseId, ...(this.entries.get(key) ?? []).filter((id) => id !== responseId)];
      this.entries.delete(key);
      this.entries.set(key, ids.slice(0, RESPONSES_PER_ITEM));
    }
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(key);
    }
  }

  responsesOf(scope: string, itemId: string): readonly string[] {
    return this.entries.get(`${scope}\0${itemId}`) ?? [];
  }
}

/**
 * `input` with every item reference replaced by the referenced stored item (a copy). An id that
 * no stored response of `scope` holds → 404 `not_found` naming it, param `input[i].id`.
 */
export async function resolveItemReferences(
  store: ResponseStore,
  index: ItemIndex,
  scope: string,
  input: RawItem[],
): Promise<RawItem[]> {
  if (!input.some(isItemReference)) return input;
  const found = new Map<string, StoredItem>();
  const read = new Set<string>();
  const resolved: RawItem[] = [];
  for (const [i, item] of input.entries()) {
    if (!isItemReference(item)) {
      resolved.push(item);
      continue;
    }
    const id = item.id as string;
    for (const responseId of index.responsesOf(scope, id)) {
      if (found.has(id) || read.has(responseId)) continue;
      read.add(responseId);
      await readItems(store, scope, responseId, found);
    }
    const target = found.get(id);
    if (target === undefined) throw unknownItem(id, `input[${i}].id`);
    resolved.push(structuredClone(target) as RawItem);
  }
  return resolved;
}

/** Every item of a stored response (its input history and output) into `found`, by id. */
async function readItems(
  store: ResponseStore,
  scope: string,
  responseId: string,
  found: Map<string, StoredItem>,
): Promise<void> {
  const history = await store.history(scope, responseId);
  if (!history) return;
  try {
    for (const item of history.items) if (!found.has(item.id)) found.set(item.id, item);
  } finally {
    history.release();
  }
}

/** 404 `not_found` in the shape of an unknown previous_response_id, saying where references point. */
function unknownItem(id: string, param: string): ApiError {
  return new ApiError(
    404,
    `No item found with id '${id}'. Item references name items of this API key's stored responses (created with \`store: true\`; Maya stores nothing by default); send the item itself otherwise.`,
    'invalid_request_error',
    'not_found',
    param,
  );
}
