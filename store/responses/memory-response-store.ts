/**
 * The in-memory ResponseStore: one process, lost on restart. Items live in per-scope
 * content-addressed blocks (item-blocks.ts); a snapshot is a prefix of a shared spine of block
 * references, so a chain of N turns stores each item once and N small snapshot records.
 *
 * Byte accounting (CACHE_BYTES, OWNER_BYTES, stats().bytes), all serialised UTF-8 JSON:
 *   unique block bytes + response metadata bytes (the Response JSON with `output: []`)
 *   + REF_BYTES per spine slot + SNAPSHOT_REF_BYTES per stored response.
 * Expanded snapshot size (ENTRY_BYTES; also the ASSEMBLY_BYTES charge of history(), without
 * metadata): every history item and output item serialised, plus metadata.
 * Lookups counted as hits/misses: get, listInputItems, history.
 */
import type { Registry } from 'prom-client';
import type { ResponsesSettings } from '../../config/settings.ts';
import { BlockTable, REF_BYTES, type SerialisedItem, Spine, serialiseItem } from './item-blocks.ts';
import { type CacheOperation, ResponseCacheMetrics } from './response-cache-metrics.ts';
import {
  type AssemblyReservation,
  type InputItemPage,
  type ListInputItemsOptions,
  type ResponseCacheStats,
  type ResponseStore,
  StoreError,
  type ItemListing,
  pageItems,
  type StoredHistory,
  type StoredItem,
  type StoredResponse,
  type StoredResponseInput,
} from './response-store.ts';

/** Accounted size of one stored response's own record (spine pointer, input end, end). */
export const SNAPSHOT_REF_BYTES = 16;

export type CacheSettings = Pick<
  ResponsesSettings,
  'CACHE_ENTRIES' | 'CACHE_BYTES' | 'CACHE_TTL_S' | 'ENTRY_BYTES' | 'OWNER_ENTRIES' | 'OWNER_BYTES' | 'ASSEMBLY_BYTES'
>;

export interface MemoryResponseStoreOptions {
  settings: CacheSettings;
  /** Where the maya:responses_cache_* series are registered; none when omitted. */
  registry?: Registry;
  /** Milliseconds clock; tests inject one. Default Date.now. */
  now?: () => number;
}

interface Snapshot {
  readonly id: string;
  readonly scope: Scope;
  /** The Response JSON with `output: []`. */
  readonly meta: string;
  readonly metaBytes: number;
  /** Input history = spine[0, inputEnd); output = spine[inputEnd, end). */
  readonly spine: Spine<Snapshot>;
  readonly inputEnd: number;
  readonly end: number;
  readonly expiresAt: number;
}

class Scope {
  readonly blocks = new BlockTable();
  readonly snapshots = new Map<string, Snapshot>();
  /** Least recently used first. */
  readonly lru = new Set<Snapshot>();
  entries = 0;
  metaBytes = 0;
  refSlots = 0;

  constructor(readonly name: string) {}

  get bytes(): number {
    return this.blocks.bytes + this.metaBytes + this.refSlots * REF_BYTES + this.entries * SNAPSHOT_REF_BYTES;
  }
}

export class MemoryResponseStore implements ResponseStore {
  private readonly settings: CacheSettings;
  private readonly now: () => number;
  private readonly metrics: ResponseCacheMetrics;
  private readonly scopes = new Map<string, Scope>();
  /** Every snapshot, least recently used first. */
  private readonly lru = new Set<Snapshot>();
  /** Every snapshot in put order, which is expiry order (the TTL is fixed). */
  private readonly expiry = new Set<Snapshot>();
  private totalBytes = 0;
  private assemblyBytes = 0;

  constructor(options: MemoryResponseStoreOptions) {
    this.settings = options.settings;
    this.now = options.now ?? Date.now;
    this.metrics = new ResponseCacheMetrics(options.registry);
  }

  async put(scope: string, record: StoredResponseInput): Promise<void> {
    this.timed('put', () => this.putNow(scope, record));
  }

  async get(scope: string, id: string): Promise<StoredResponse | undefined> {
    return this.timed('get', () => {
      const snapshot = this.lookup(scope, id);
      return snapshot && responseOf(snapshot);
    });
  }

  async delete(scope: string, id: string): Promise<boolean> {
    return this.timed('delete', () => {
      this.sweep();
      const snapshot = this.scopes.get(scope)?.snapshots.get(id);
      if (snapshot) this.remove(snapshot);
      return snapshot !== undefined;
    });
  }

  async listInputItems(
    scope: string,
    id: string,
    options: ListInputItemsOptions = {},
  ): Promise<InputItemPage | undefined> {
    return this.timed('list_input_items', () => {
      const snapshot = this.lookup(scope, id);
      return snapshot && pageOf(snapshot, options);
    });
  }

  async history(scope: string, id: string): Promise<StoredHistory | undefined> {
    return this.timed('history', () => {
      const snapshot = this.lookup(scope, id);
      if (!snapshot) return undefined;
      const reservation = this.reserveAssembly(snapshot.spine.bytesBefore(snapshot.end));
      const items: StoredItem[] = [];
      for (let slot = 0; slot < snapshot.end; slot++) items.push(JSON.parse(snapshot.spine.at(slot).json));
      return { responseId: id, items, bytes: reservation.bytes, release: reservation.release };
    });
  }

  reserveAssembly(bytes: number): AssemblyReservation {
    if (this.assemblyBytes + bytes > this.settings.ASSEMBLY_BYTES) {
      this.metrics.reject('assembly_busy');
      throw new StoreError(
        'assembly_busy',
        'Too many conversation histories are being assembled at once; retry shortly.',
      );
    }
    this.assemblyBytes += bytes;
    this.publish();
    let isHeld = true;
    const release = () => {
      if (!isHeld) return;
      isHeld = false;
      this.assemblyBytes -= bytes;
      this.publish();
    };
    return { bytes, release };
  }

  async stats(): Promise<ResponseCacheStats> {
    this.sweep();
    this.publish();
    let blocks = 0;
    for (const scope of this.scopes.values()) blocks += scope.blocks.size;
    const { hits, misses, writes, rejections, evictions, expirations } = this.metrics;
    return {
      entries: this.lru.size,
      bytes: this.totalBytes,
      blocks,
      hits,
      misses,
      writes,
      rejections,
      evictions,
      expirations,
      assembly_bytes: this.assemblyBytes,
      max_entries: this.settings.CACHE_ENTRIES,
      max_bytes: this.settings.CACHE_BYTES,
      ttl_s: this.settings.CACHE_TTL_S,
    };
  }

  private putNow(scopeName: string, record: StoredResponseInput): void {
    this.sweep();
    const { response, previous } = record;
    const inputs = serialiseAll(record.inputItems, 'input');
    const outputs = serialiseAll(response.output, 'output');
    const meta = JSON.stringify({ ...response, output: [] });
    const metaBytes = Buffer.byteLength(meta, 'utf8');
    const base = previous && this.scopes.get(scopeName)?.snapshots.get(previous.responseId);
    // The continued response may have expired or been evicted/deleted during generation: its
    // history then comes from the request's own copy, so nothing is dropped.
    const replayed = previous && !base ? serialiseAll(previous.items, 'previous_response_id') : [];
    const baseBytes = base ? base.spine.bytesBefore(base.end) : sumBytes(replayed);
    this.checkSize(baseBytes + sumBytes(inputs) + sumBytes(outputs) + metaBytes);
    const added = [...replayed, ...inputs, ...outputs];
    this.checkUnique(added, base);
    const scope = this.scopes.get(scopeName) ?? new Scope(scopeName);
    this.scopes.set(scopeName, scope);
    const before = scope.bytes;
    const spine = this.baseSpine(scope, base);
    for (const item of [...replayed, ...inputs]) this.append(scope, spine, item);
    const inputEnd = spine.length;
    for (const item of outputs) this.append(scope, spine, item);
    const snapshot: Snapshot = {
      id: response.id,
      scope,
      meta,
      metaBytes,
      spine,
      inputEnd,
      end: spine.length,
      expiresAt: this.now() + this.settings.CACHE_TTL_S * 1000,
    };
    const replaced = scope.snapshots.get(snapshot.id);
    spine.users.add(snapshot);
    scope.snapshots.set(snapshot.id, snapshot);
    scope.lru.add(snapshot);
    scope.entries++;
    scope.metaBytes += metaBytes;
    this.lru.add(snapshot);
    this.expiry.add(snapshot);
    this.totalBytes += scope.bytes - before;
    if (replaced) this.remove(replaced);
    this.metrics.write();
    this.enforceLimits(snapshot);
  }

  /** The spine the new snapshot extends: the base's own when the base is its tip. */
  private baseSpine(scope: Scope, base: Snapshot | undefined): Spine<Snapshot> {
    if (!base) return new Spine<Snapshot>();
    if (base.spine.length === base.end) return base.spine;
    scope.refSlots += base.end;
    return base.spine.copyPrefix(base.end, scope.blocks);
  }

  private append(scope: Scope, spine: Spine<Snapshot>, item: SerialisedItem): void {
    spine.append(scope.blocks.acquire(item));
    scope.refSlots++;
  }

  private checkSize(expandedBytes: number): void {
    const { ENTRY_BYTES, CACHE_BYTES, OWNER_BYTES } = this.settings;
    const limit = Math.min(ENTRY_BYTES, CACHE_BYTES, OWNER_BYTES > 0 ? OWNER_BYTES : Infinity);
    if (expandedBytes <= limit) return;
    this.metrics.reject('snapshot_too_large');
    throw new StoreError(
      'snapshot_too_large',
      `The conversation snapshot is ${expandedBytes} bytes serialised; the response store holds at most ${limit} bytes per snapshot.`,
    );
  }

  private checkUnique(added: readonly SerialisedItem[], base: Snapshot | undefined): void {
    const seen = new Set<string>();
    for (const item of added) {
      if (seen.has(item.id) || (base && base.spine.slotOf(item.id, base.end) !== undefined)) {
        this.metrics.reject('duplicate_item');
        throw new StoreError('duplicate_item', `Duplicate item found with id ${item.id}.`, 'input');
      }
      seen.add(item.id);
    }
  }

  /** Evicts least recently used responses (never `fresh`) until every bound holds again. */
  private enforceLimits(fresh: Snapshot): void {
    const { OWNER_ENTRIES, OWNER_BYTES, CACHE_ENTRIES, CACHE_BYTES } = this.settings;
    const scope = fresh.scope;
    const isOwnerOver = () =>
      (OWNER_ENTRIES > 0 && scope.entries > OWNER_ENTRIES) || (OWNER_BYTES > 0 && scope.bytes > OWNER_BYTES);
    const isGlobalOver = () => this.lru.size > CACHE_ENTRIES || this.totalBytes > CACHE_BYTES;
    this.evictWhile(isOwnerOver, scope.lru, fresh);
    this.evictWhile(isGlobalOver, this.lru, fresh);
    if (!isOwnerOver() && !isGlobalOver()) return;
    this.remove(fresh);
    this.metrics.reject('snapshot_too_large');
    throw new StoreError('snapshot_too_large', 'The conversation snapshot does not fit in the response store.');
  }

  private evictWhile(isOver: () => boolean, lru: Set<Snapshot>, fresh: Snapshot): void {
    while (isOver()) {
      const victim = firstOther(lru, fresh);
      if (!victim) return;
      this.remove(victim);
      this.metrics.evict();
    }
  }

  /** A live snapshot of `scope`, counted as a hit or miss; a hit becomes most recently used. */
  private lookup(scopeName: string, id: string): Snapshot | undefined {
    this.sweep();
    const scope = this.scopes.get(scopeName);
    const snapshot = scope?.snapshots.get(id);
    this.metrics.lookup(snapshot !== undefined);
    if (!scope || !snapshot) return undefined;
    scope.lru.delete(snapshot);
    scope.lru.add(snapshot);
    this.lru.delete(snapshot);
    this.lru.add(snapshot);
    return snapshot;
  }

  /** Discards expired snapshots, oldest first. */
  private sweep(): void {
    const now = this.now();
    for (const snapshot of this.expiry) {
      if (snapshot.expiresAt > now) break;
      this.remove(snapshot);
      this.metrics.expire();
    }
  }

  private remove(snapshot: Snapshot): void {
    const { scope, spine } = snapshot;
    const before = scope.bytes;
    if (scope.snapshots.get(snapshot.id) === snapshot) scope.snapshots.delete(snapshot.id);
    scope.lru.delete(snapshot);
    scope.entries--;
    scope.metaBytes -= snapshot.metaBytes;
    this.lru.delete(snapshot);
    this.expiry.delete(snapshot);
    spine.users.delete(snapshot);
    // Invariant: a spine's length is its users' largest end, so only the tip user frees slots.
    if (snapshot.end === spine.length) {
      let keep = 0;
      for (const user of spine.users) keep = Math.max(keep, user.end);
      scope.refSlots -= spine.truncate(keep, scope.blocks);
    }
    this.totalBytes += scope.bytes - before;
    if (scope.entries === 0) this.scopes.delete(scope.name);
  }

  private timed<T>(op: CacheOperation, run: () => T): T {
    const done = this.metrics.time(op);
    try {
      return run();
    } finally {
      done();
      this.publish();
    }
  }

  private publish(): void {
    this.metrics.occupancy(this.lru.size, this.totalBytes, this.assemblyBytes);
  }
}

function serialiseAll(items: readonly StoredItem[], param: string): SerialisedItem[] {
  return items.map((item, index) => {
    if (typeof item !== 'object' || item === null || typeof item.id !== 'string' || item.id === '') {
      throw new StoreError('invalid_item', `Item ${index} of ${param} has no id to store it under.`, param);
    }
    return serialiseItem(item);
  });
}

function sumBytes(items: readonly SerialisedItem[]): number {
  let bytes = 0;
  for (const item of items) bytes += item.bytes;
  return bytes;
}

function firstOther(snapshots: Set<Snapshot>, except: Snapshot): Snapshot | undefined {
  for (const snapshot of snapshots) if (snapshot !== except) return snapshot;
  return undefined;
}

function responseOf(snapshot: Snapshot): StoredResponse {
  const response = JSON.parse(snapshot.meta) as { output: StoredItem[] } & StoredResponse;
  for (let slot = snapshot.inputEnd; slot < snapshot.end; slot++)
    response.output.push(JSON.parse(snapshot.spine.at(slot).json));
  return response;
}

function pageOf(snapshot: Snapshot, options: ListInputItemsOptions): InputItemPage {
  const count = snapshot.inputEnd;
  const listing: ItemListing = {
    count,
    indexOf: (id) => snapshot.spine.slotOf(id, count),
    at: (slot) => JSON.parse(snapshot.spine.at(slot).json) as StoredItem,
  };
  return pageItems(listing, options);
}
