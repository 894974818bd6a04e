/** listModels (GET /v1/models): the one loaded model, OpenAI's list shape. */
import type { Handler } from './app-deps.ts';
import { modelObject } from './retrieve-model.ts';
import { requireRuntime } from '../responses/service.ts';

export const listModels: Handler = async (ctx, deps) => {
  ctx.body = { object: 'list', data: [modelObject(requireRuntime(deps))] };
};
