/**
 * Prometheus series of the response cache (`maya:responses_cache_*`) plus the plain counters
 * behind /v1/status. Labels carry only operation names and rejection reasons: never a
 * credential, scope, response id or item content.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type CacheOperation = 'put' | 'get' | 'delete' | 'list_input_items' | 'history';
const REJECTION_REASONS = ['snapshot_too_large', 'assembly_busy', 'duplicate_item', 'invalid_item'] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

export class ResponseCacheMetrics {
  hits = 0;
  misses = 0;
  writes = 0;
  rejections = 0;
  evictions = 0;
  expirations = 0;

  private readonly series?: {
    entries: Gauge;
    bytes: Gauge;
    assemblyBytes: Gauge;
    hits: Counter;
    misses: Counter;
    writes: Counter;
    rejections: Counter<'reason'>;
    evictions: Counter;
    expirations: Counter;
    duration: Histogram<'op'>;
  };

  constructor(registry?: Registry) {
    if (!registry) return;
    const registers = [registry];
    const name = (suffix: string) => `maya:responses_cache_${suffix}`;
    this.series = {
      entries: new Gauge({ name: name('entries'), help: 'Stored responses', registers }),
      bytes: new Gauge({
        name: name('bytes'),
        help: 'Serialised unique item blocks plus metadata and reference bytes',
        registers,
      }),
      assemblyBytes: new Gauge({
        name: name('assembly_bytes'),
        help: 'Expanded history bytes held by in-flight requests',
        registers,
      }),
      hits: new Counter({ name: name('hits_total'), help: 'Lookups that found a stored response', registers }),
      misses: new Counter({
        name: name('misses_total'),
        help: 'Lookups of unknown, expired, evicted, deleted or other-key ids',
        registers,
      }),
      writes: new Counter({ name: name('writes_total'), help: 'Responses stored', registers }),
      rejections: new Counter({
        name: name('rejections_total'),
        help: 'Refused stores and assemblies',
        labelNames: ['reason'],
        registers,
      }),
      evictions: new Counter({
        name: name('evictions_total'),
        help: 'Responses evicted by capacity pressure',
        registers,
      }),
      expirations: new Counter({
        name: name('expirations_total'),
        help: 'Responses discarded after CACHE_TTL_S',
        registers,
      }),
      duration: new Histogram({
        name: name('operation_duration_seconds'),
        help: 'Store operation time',
        labelNames: ['op'],
        buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1],
        registers,
      }),
    };
    // Every reason is exported from the start (at 0), so rate() and alerts see the series.
    for (const reason of REJECTION_REASONS) this.series.rejections.inc({ reason }, 0);
  }

  lookup(found: boolean): void {
    if (found) {
      this.hits++;
      this.series?.hits.inc();
    } else {
      this.misses++;
      this.series?.misses.inc();
    }
  }

  write(): void {
    this.writes++;
    this.series?.writes.inc();
  }

  reject(reason: RejectionReason): void {
    this.rejections++;
    this.series?.rejections.inc({ reason });
  }

  evict(): void {
    this.evictions++;
    this.series?.evictions.inc();
  }

  expire(): void {
    this.expirations++;
    this.series?.expirations.inc();
  }

  occupancy(entries: number, bytes: number, assemblyBytes: number): void {
    this.series?.entries.set(entries);
    this.series?.bytes.set(bytes);
    this.series?.assemblyBytes.set(assemblyBytes);
  }

  /** Starts timing `op`; call the returned function when it ends. */
  time(op: CacheOperation): () => void {
    const end = this.series?.duration.startTimer({ op });
    return () => {
      end?.();
    };
  }
}
