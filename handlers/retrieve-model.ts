/**
 * retrieveModel (GET /v1/models/{model}): the loaded model by its ID, OpenAI's `Model` shape (the
 * SDK's `models.retrieve`). Any other ID is 404 `model_not_found` with `param: "model"`, as OpenAI
 * answers for a model that does not exist.
 */
import type { Handler } from './app-deps.ts';
import { ApiError } from '../contract/errors.ts';
import { requireRuntime } from '../responses/service.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';

/** The one `Model` object Maya serves (also the single entry of `GET /v1/models`). */
export function modelObject(runtime: ModelRuntime) {
  return { id: runtime.id, object: 'model' as const, created: runtime.createdAt, owned_by: 'maya' };
}

export const retrieveModel: Handler = async (ctx, deps) => {
  const runtime = requireRuntime(deps);
  const id = ctx.state.params.model as string;
  if (id !== runtime.id)
    throw new ApiError(
      404,
      `The model '${id}' does not exist; this server serves '${runtime.id}'.`,
      'invalid_request_error',
      'model_not_found',
      'model',
    );
  ctx.body = modelObject(runtime);
};
