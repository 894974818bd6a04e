/**
 * The Redis ResponseStore (MAYA_STORE_URL=redis://…): the same contract as the in-memory store,
 * shared by every replica that points at the same Redis and key prefix. Each operation is one Lua
 * script (redis-store-scripts.ts), so TTL sweeps, LRU, the entry/byte limits, owner quotas and
 * block reference counts are applied atomically across replicas. Items are content-addressed
 * blocks per credential scope (SHA-256 of the item JSON), referenced from flat spines exactly as
 * in item-blocks.ts, with the same byte accounting.
 *
 * Per replica: the ASSEMBLY_BYTES budget (request-owned histories live in this process) and the
 * hit/miss/write/rejection/eviction/expiry counters (each replica counts what it did). Shared:
 * entries, bytes and blocks in stats().
 *
 * Redis unreachable or too slow → StoreError `store_unavailable` (503, Retry-After: 1); a script
 * either ran whole or not at all, so nothing is half-written. With `durable`, a write is reported
 * done only once the configured number of Redis replicas hold it (see README, Shared store).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import { serialiseItem, type SerialisedItem } from './item-blocks.ts';
import type { CacheSettings } from './memory-response-store.ts';
import { type CacheOperation, ResponseCacheMetrics } from './response-cache-metrics.ts';
import {
  type AssemblyReservation,
  type InputItemPage,
  type ItemListing,
  type ListInputItemsOptions,
  pageItems,
  type ResponseCacheStats,
  type ResponseStore,
  AssemblyBudget,
  StoreError,
  type StoredHistory,
  type StoredItem,
  type StoredResponse,
  type StoredResponseInput,
} from './response-store.ts';
import { RESPONSE_STORE_SCRIPTS } from './redis-store-scripts.ts';
import { defineScripts, storeFailure, waitForReplicas } from '../redis/redis-connection.ts';

export interface RedisResponseStoreOptions {
  /** A connected client (createRedisClient + openRedis); the store never closes it. */
  client: Redis;
  settings: CacheSettings;
  /** Key prefix shared by the replicas of one service; default `maya:`. */
  prefix?: string;
  registry?: Registry;
  /** Milliseconds clock; default Redis's own clock (the same for every replica). */
  now?: () => number;
  /**
   * MAYA_STORE_WAIT_REPLICAS > 0: writes (put, delete) run on this connection of their own and
   * count as done only once that many Redis replicas acknowledged them (waitForReplicas).
   */
  durable?: { client: Redis; replicas: number };
}

type ScriptName = keyof typeof RESPONSE_STORE_SCRIPTS;
type Reply = (string | number | Reply)[];
type ScriptClient = Redis & Record<ScriptName, (...args: (string | number)[]) => Promise<Reply>>;

export const DEFAULT_STORE_PREFIX = 'maya:';

export class RedisResponseStore implements ResponseStore {
  private readonly client: ScriptClient;
  private readonly durable: { client: ScriptClient; replicas: number } | undefined;
  private readonly settings: CacheSettings;
  private readonly prefix: string;
  private readonly now: () => number;
  private readonly metrics: ResponseCacheMetrics;
  private readonly assembly: AssemblyBudget;
  /** The last figures read from Redis, shown by stats() while it is unreachable. */
  private lastShared = { entries: 0, bytes: 0, blocks: 0 };

  constructor(options: RedisResponseStoreOptions) {
    this.client = options.client as ScriptClient;
    this.settings = options.settings;
    this.prefix = options.prefix ?? DEFAULT_STORE_PREFIX;
    this.now = options.now ?? (() => -1);
    this.metrics = new ResponseCacheMetrics(options.registry);
    this.assembly = new AssemblyBudget(
      options.settings.ASSEMBLY_BYTES,
      () => this.metrics.reject('assembly_busy'),
      () => this.publish(),
    );
    this.durable = options.durable && {
      client: options.durable.client as ScriptClient,
      replicas: options.durable.replicas,
    };
    defineScripts([this.client, this.durable?.client], RESPONSE_STORE_SCRIPTS);
  }

  async put(scope: string, record: StoredResponseInput): Promise<void> {
    return this.timed('put', async () => {
      const { response, previous } = record;
      const inputs = serialiseAll(record.inputItems, 'input');
      const outputs = serialiseAll(response.output, 'output');
      const meta = JSON.stringify({ ...response, output: [] });
      let reply = await this.runPut(scope, response.id, meta, previous?.responseId, undefined, inputs, outputs);
      // The continued response expired or was evicted/deleted during generation: its history
      // comes from the request's own copy, so nothing is dropped.
      if (reply[0] === 'replay')
        reply = await this.runPut(
          scope,
          response.id,
          meta,
          previous!.responseId,
          serialiseAll(previous!.items, 'previous_response_id'),
          inputs,
          outputs,
        );
      this.countSweep(reply[1]);
      const [status] = reply;
      if (status === 'ok') {
        this.countEvictions(reply[2]);
        this.metrics.write();
        return;
      }
      if (status === 'duplicate') {
        this.metrics.reject('duplicate_item');
        throw new StoreError('duplicate_item', `Duplicate item found with id ${String(reply[2])}.`, 'input');
      }
      this.countEvictions(reply[2]);
      this.metrics.reject('snapshot_too_large');
      const [expanded, limit] = [Number(reply[3]), Number(reply[4])];
      throw new StoreError(
        'snapshot_too_large',
        limit < 0
          ? 'The conversation snapshot does not fit in the response store.'
          : `The conversation snapshot is ${expanded} bytes serialised; the response store holds at most ${limit} bytes per snapshot.`,
      );
    });
  }

  async get(scope: string, id: string): Promise<StoredResponse | undefined> {
    return this.timed('get', async () => {
      const reply = await this.read(scope, id, ['get']);
      if (!reply) return undefined;
      const response = JSON.parse(String(reply[2])) as { output: StoredItem[] } & StoredResponse;
      for (const json of reply[3] as string[]) response.output.push(JSON.parse(json));
      return response;
    });
  }

  async delete(scope: string, id: string): Promise<boolean> {
    return this.timed('delete', async () => {
      const reply = await this.write('mayaStoreDelete', scope, id);
      this.countSweep(reply[1]);
      return reply[0] === 1;
    });
  }

  async listInputItems(
    scope: string,
    id: string,
    options: ListInputItemsOptions = {},
  ): Promise<InputItemPage | undefined> {
    return this.timed('list_input_items', async () => {
      const { order = 'desc', limit = 20, after } = options;
      const reply = await this.read(scope, id, [
        'list',
        order,
        Number.isFinite(limit) ? limit : 20,
        after === undefined ? '0' : '1',
        after ?? '',
      ]);
      if (!reply) return undefined;
      const [count, cursor, first] = [Number(reply[2]), Number(reply[3]), Number(reply[4])];
      const window = reply[5] as string[];
      // The script fetched exactly the page's slots; pageItems validates and shapes it.
      const listing: ItemListing = {
        count,
        indexOf: () => (cursor === -2 ? undefined : cursor),
        at: (slot) => JSON.parse(window[slot - first]!) as StoredItem,
      };
      return pageItems(listing, options);
    });
  }

  async history(scope: string, id: string): Promise<StoredHistory | undefined> {
    return this.timed('history', async () => {
      const reply = await this.read(scope, id, ['history']);
      if (!reply) return undefined;
      const reservation = this.reserveAssembly(Number(reply[2]));
      const items = (reply[3] as string[]).map((json) => JSON.parse(json) as StoredItem);
      return { responseId: id, items, bytes: reservation.bytes, release: reservation.release };
    });
  }

  reserveAssembly(bytes: number): AssemblyReservation {
    return this.assembly.reserve(bytes);
  }

  /** Shared figures from Redis; the last known ones while Redis cannot be reached. */
  async stats(): Promise<ResponseCacheStats> {
    try {
      const reply = (await this.call('mayaStoreStats')).map(Number);
      this.countSweep(reply[0]);
      const [, entries = 0, blockBytes = 0, meta = 0, refs = 0, blocks = 0] = reply;
      this.lastShared = { entries, bytes: blockBytes + meta + refs * 8 + entries * 16, blocks };
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
    }
    this.publish();
    const { hits, misses, writes, rejections, evictions, expirations } = this.metrics;
    return {
      ...this.lastShared,
      hits,
      misses,
      writes,
      rejections,
      evictions,
      expirations,
      assembly_bytes: this.assembly.bytes,
      max_entries: this.settings.CACHE_ENTRIES,
      max_bytes: this.settings.CACHE_BYTES,
      ttl_s: this.settings.CACHE_TTL_S,
    };
  }

  private runPut(
    scope: string,
    id: string,
    meta: string,
    previousId: string | undefined,
    replayed: SerialisedItem[] | undefined,
    inputs: SerialisedItem[],
    outputs: SerialisedItem[],
  ): Promise<Reply> {
    const { ENTRY_BYTES, CACHE_BYTES, OWNER_BYTES, CACHE_ENTRIES, OWNER_ENTRIES, CACHE_TTL_S } = this.settings;
    const inputSide = [...(replayed ?? []), ...inputs];
    const items: (string | number)[] = [];
    for (const item of [...inputSide, ...outputs]) items.push(digestOf(item.json), item.bytes, item.id, item.json);
    return this.write(
      'mayaStorePut',
      scope,
      id,
      meta,
      Buffer.byteLength(meta, 'utf8'),
      previousId ?? '',
      replayed ? '1' : '0',
      CACHE_TTL_S * 1000,
      ENTRY_BYTES,
      CACHE_BYTES,
      OWNER_BYTES,
      CACHE_ENTRIES,
      OWNER_ENTRIES,
      inputSide.length,
      outputs.length,
      ...items,
    );
  }

  /** One lookup script (a hit refreshes LRU order); undefined on a miss. */
  private async read(scope: string, id: string, mode: (string | number)[]): Promise<Reply | undefined> {
    const reply = await this.call('mayaStoreRead', scope, id, ...mode);
    this.countSweep(reply[1]);
    const isHit = reply[0] === 'hit';
    this.metrics.lookup(isHit);
    return isHit ? reply : undefined;
  }

  private async call(script: ScriptName, ...args: (string | number)[]): Promise<Reply> {
    return this.callOn(this.client, script, ...args);
  }

  /** A writing script: on the write connection, then confirmed by the replicas, when configured. */
  private async write(script: ScriptName, ...args: (string | number)[]): Promise<Reply> {
    if (!this.durable) return this.call(script, ...args);
    const reply = await this.callOn(this.durable.client, script, ...args);
    await waitForReplicas(this.durable.client, this.durable.replicas);
    return reply;
  }

  private async callOn(client: ScriptClient, script: ScriptName, ...args: (string | number)[]): Promise<Reply> {
    try {
      return await client[script](this.prefix, this.now(), ...args);
    } catch (error) {
      throw storeFailure(error);
    }
  }

  private countSweep(expired: unknown): void {
    for (let n = Number(expired); n > 0; n--) this.metrics.expire();
  }

  private countEvictions(evicted: unknown): void {
    for (let n = Number(evicted); n > 0; n--) this.metrics.evict();
  }

  private async timed<T>(op: CacheOperation, run: () => Promise<T>): Promise<T> {
    const done = this.metrics.time(op);
    try {
      return await run();
    } finally {
      done();
      this.publish();
    }
  }

  private publish(): void {
    this.metrics.occupancy(this.lastShared.entries, this.lastShared.bytes, this.assembly.bytes);
  }
}

function digestOf(json: string): string {
  return createHash('sha256').update(json, 'utf8').digest('hex');
}

function serialiseAll(items: readonly StoredItem[], param: string): SerialisedItem[] {
  return items.map((item, index) => {
    if (typeof item !== 'object' || item === null || typeof item.id !== 'string' || item.id === '') {
      throw new StoreError('invalid_item', `Item ${index} of ${param} has no id to store it under.`, param);
    }
    return serialiseItem(item);
  });
}
