/**
 * The real service (startService) on 127.0.0.1 at a free port, as tests, benches and client smoke
 * scripts start it: the default Responses settings, no logging, and loopbackServer() settings
 * with the caller's overrides.
 */
import { startService, type LoadModelRuntime, type RunningService } from '../../cli/serve.ts';
import { DEFAULT_RESPONSES_SETTINGS, type ServerSettings } from '../../config/settings.ts';
import { silentLogger } from '../../handlers/app-deps.ts';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import { loopbackServer } from './loopback.ts';

export interface LoopbackServiceOptions {
  modelDir: string;
  /** On top of loopbackServer(). */
  server?: Partial<ServerSettings>;
  /** Default loadModelRuntime (the real engine). */
  loadRuntime?: LoadModelRuntime;
}

/** startService on loopback; the caller awaits `loaded` and stops it. */
export function startLoopbackService(options: LoopbackServiceOptions): Promise<RunningService> {
  return startService({
    settings: DEFAULT_RESPONSES_SETTINGS,
    server: loopbackServer(options.server),
    modelDir: options.modelDir,
    loadRuntime: options.loadRuntime ?? loadModelRuntime,
    logger: silentLogger,
  });
}
