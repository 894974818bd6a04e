/**
 * The loaded model or a 503: every endpoint that needs the model answers `model_loading` (with
 * Retry-After) until the CLI has finished loading it.
 */
import type { AppDeps } from './app-deps.ts';
import { unavailable } from '../contract/errors.ts';
import type { ModelRuntime } from '../runtime/model-runtime.ts';

export function requireRuntime(deps: AppDeps): ModelRuntime {
  const runtime = deps.getRuntime();
  if (runtime === undefined) throw unavailable('The model is still loading; retry shortly.', 'model_loading', 5);
  return runtime;
}
