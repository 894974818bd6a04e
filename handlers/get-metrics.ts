/** getMetrics (GET /metrics/prometheus): the app's registry in the Prometheus text format. */
import type { Handler } from './app-deps.ts';

export const getMetrics: Handler = async (ctx, deps) => {
  ctx.set('Cache-Control', 'no-store');
  ctx.type = deps.registry.contentType;
  ctx.body = await deps.registry.metrics();
};
