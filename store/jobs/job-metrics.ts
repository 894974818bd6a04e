/**
 * Prometheus series of the background job manager (`maya:responses_jobs_*`) plus the plain
 * counters behind the `/v1/status` `responses_jobs` section. Labels carry only rejection reasons
 * and terminal states: never a credential, scope, response id or prompt content.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type JobRejection =
  'shutting_down' | 'input_too_large' | 'owner_entries' | 'entries' | 'readers' | 'owner_readers';

/** Occupancy read at scrape time. */
export interface JobOccupancy {
  queued: number;
  running: number;
  records: number;
  eventBytes: number;
  readers: number;
}

const TIMING_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900];

export class JobMetrics {
  admissions = 0;
  cancellations = 0;
  deadlineFailures = 0;
  readonly rejections: Record<JobRejection, number> = {
    shutting_down: 0,
    input_too_large: 0,
    owner_entries: 0,
    entries: 0,
    readers: 0,
    owner_readers: 0,
  };

  private readonly series?: {
    admissions: Counter;
    rejections: Counter<'reason'>;
    cancellations: Counter;
    deadlineFailures: Counter;
    finished: Counter<'status'>;
    queueSeconds: Histogram;
    runSeconds: Histogram;
  };

  constructor(registry: Registry | undefined, occupancy: () => JobOccupancy) {
    if (!registry) return;
    const registers = [registry];
    const name = (suffix: string) => `maya:responses_jobs_${suffix}`;
    const gauge = (suffix: string, help: string, read: (o: JobOccupancy) => number) =>
      new Gauge({
        name: name(suffix),
        help,
        registers,
        collect() {
          this.set(read(occupancy()));
        },
      });
    gauge('queued', 'Background tasks waiting for a worker', (o) => o.queued);
    gauge('running', 'Background tasks owned by a worker', (o) => o.running);
    gauge('records', 'Active plus retained background records', (o) => o.records);
    gauge('event_bytes', 'Serialised bytes of retained background stream events', (o) => o.eventBytes);
    gauge('readers', 'Connected background stream readers', (o) => o.readers);
    this.series = {
      admissions: new Counter({ name: name('admissions_total'), help: 'Background tasks admitted', registers }),
      rejections: new Counter({
        name: name('rejections_total'),
        help: 'Refused task admissions and stream readers',
        labelNames: ['reason'],
        registers,
      }),
      cancellations: new Counter({
        name: name('cancellations_total'),
        help: 'Background tasks that ended cancelled',
        registers,
      }),
      deadlineFailures: new Counter({
        name: name('deadline_failures_total'),
        help: 'Background tasks failed by JOB_TIMEOUT_S',
        registers,
      }),
      finished: new Counter({
        name: name('finished_total'),
        help: 'Background tasks by terminal status',
        labelNames: ['status'],
        registers,
      }),
      queueSeconds: new Histogram({
        name: name('queue_seconds'),
        help: 'Admission to worker start',
        buckets: TIMING_BUCKETS,
        registers,
      }),
      runSeconds: new Histogram({
        name: name('run_seconds'),
        help: 'Admission to terminal state',
        buckets: TIMING_BUCKETS,
        registers,
      }),
    };
  }

  get rejectionCount(): number {
    return Object.values(this.rejections).reduce((sum, n) => sum + n, 0);
  }

  admit(): void {
    this.admissions++;
    this.series?.admissions.inc();
  }

  reject(reason: JobRejection): void {
    this.rejections[reason]++;
    this.series?.rejections.inc({ reason });
  }

  started(queueSeconds: number): void {
    this.series?.queueSeconds.observe(queueSeconds);
  }

  finished(status: string, totalSeconds: number, isDeadline: boolean): void {
    if (status === 'cancelled') {
      this.cancellations++;
      this.series?.cancellations.inc();
    }
    if (isDeadline) {
      this.deadlineFailures++;
      this.series?.deadlineFailures.inc();
    }
    this.series?.finished.inc({ status });
    this.series?.runSeconds.observe(totalSeconds);
  }
}
