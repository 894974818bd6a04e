/** listModels (GET /v1/models): the one loaded model, OpenAI's list shape. */
import type { Handler } from './app-deps.ts';
import { requireRuntime } from '../responses/service.ts';

export const listModels: Handler = async (ctx, deps) => {
  const runtime = requireRuntime(deps);
  ctx.body = {
    object: 'list',
    data: [{ id: runtime.id, object: 'model', created: runtime.createdAt, owned_by: 'maya' }],
  };
};
