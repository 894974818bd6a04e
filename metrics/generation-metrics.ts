/**
 * Generation metrics: `maya:time_to_first_token_seconds`, from a run's sequence being handed to
 * the engine (its queue wait and prefill included) to its first generated token, for Responses,
 * Chat Completions and background tasks alike. One set per registry (each app has its own).
 * No labels: nothing about the caller or the request is recorded.
 */
import { Histogram, type Registry } from 'prom-client';

export interface GenerationMetrics {
  /** Records one run's time to its first token. */
  observeFirstToken(seconds: number): void;
}

const byRegistry = new WeakMap<Registry, GenerationMetrics>();

export function generationMetrics(registry: Registry): GenerationMetrics {
  let metrics = byRegistry.get(registry);
  if (metrics === undefined) {
    const firstToken = new Histogram({
      name: 'maya:time_to_first_token_seconds',
      help: 'Time from a sequence reaching the engine (queue wait and prefill included) to its first generated token.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    metrics = { observeFirstToken: (seconds) => firstToken.observe(seconds) };
    byRegistry.set(registry, metrics);
  }
  return metrics;
}
