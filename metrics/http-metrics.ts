/**
 * The per-app Prometheus registry and the HTTP metrics: default process metrics, the generation
 * metrics (generation-metrics.ts), `maya:http_requests_total{operation,status}` and
 * `maya:http_request_duration_seconds{operation}`.
 * Labels are operationIds and status codes only: never keys, scopes, ids or request content.
 * The store and job manager register their maya:responses_cache_* / maya:responses_jobs_*
 * metrics on the same registry (AppDeps.registry).
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { generationMetrics } from './generation-metrics.ts';

export function createRegistry(): Registry {
  const registry = new Registry();
  try {
    collectDefaultMetrics({ register: registry });
  } catch {
    // A runtime without some process probe (e.g. event-loop delay under Bun) still serves the rest.
  }
  generationMetrics(registry); // its series exist (at zero) before the first run
  return registry;
}

export interface HttpMetrics {
  /** Records one finished request; `operation` is the operationId or 'unmatched'. */
  observe(operation: string, status: number, seconds: number): void;
}

export function createHttpMetrics(registry: Registry): HttpMetrics {
  const requests = new Counter({
    name: 'maya:http_requests_total',
    help: 'HTTP requests by operationId and status code.',
    labelNames: ['operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'maya:http_request_duration_seconds',
    help: 'Time to the end of the handler by operationId (streams: until the body is handed to Koa).',
    labelNames: ['operation'] as const,
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    registers: [registry],
  });
  return {
    observe(operation, status, seconds) {
      requests.inc({ operation, status: String(status) });
      duration.observe({ operation }, seconds);
    },
  };
}
