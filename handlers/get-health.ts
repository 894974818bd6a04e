/** getHealth (GET /health, no key): 200 `{status:"ok"}` once the model is loaded, 503 `{status:"loading"}` before. */
import type { Handler } from './app-deps.ts';

export const getHealth: Handler = async (ctx, deps) => {
  const isLoaded = deps.getRuntime() !== undefined;
  ctx.status = isLoaded ? 200 : 503;
  if (!isLoaded) ctx.set('Retry-After', '5');
  ctx.body = { status: isLoaded ? 'ok' : 'loading' };
};
