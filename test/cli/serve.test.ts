import { afterEach, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../cli/serve.ts';
import { DEFAULT_RESPONSES_SETTINGS, loadServerSettings } from '../../config/settings.ts';
import { silentLogger } from '../../handlers/app-deps.ts';
import type { LoadProgress, ModelRuntime } from '../../runtime/model-runtime.ts';
import { stubRuntime } from '../helpers/test-app.ts';

let service: RunningService | undefined;
afterEach(async () => {
  await service?.stop();
  service = undefined;
});

function deferredLoader() {
  let resolve!: (runtime: ModelRuntime) => void;
  let reject!: (err: Error) => void;
  const progress: LoadProgress[] = [];
  const dirs: string[] = [];
  const promise = new Promise<ModelRuntime>((res, rej) => ((resolve = res), (reject = rej)));
  const load = async (dir: string, opts: { onProgress?: (p: LoadProgress) => void }) => {
    dirs.push(dir);
    opts.onProgress?.({ stage: 'weights', fraction: 0.5 });
    return promise;
  };
  return { load, resolve, reject, progress, dirs };
}

async function start(
  load: ReturnType<typeof deferredLoader>['load'],
  onProgress?: (p: LoadProgress) => void,
  onListening?: (origin: string) => void,
) {
  service = await startService({
    onListening,
    settings: DEFAULT_RESPONSES_SETTINGS,
    server: loadServerSettings({ MAYA_PORT: '0' }),
    modelDir: '/models/x',
    loadRuntime: load,
    onProgress,
    logger: silentLogger,
  });
  return service;
}

describe('startService', () => {
  it('listens at once: /health 503 while loading, 200 after; progress reported', async () => {
    const loader = deferredLoader();
    const seen: (LoadProgress | string)[] = [];
    const running = await start(
      loader.load,
      (p) => seen.push(p),
      (origin) => seen.push(origin),
    );
    expect(running.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(loader.dirs).toEqual(['/models/x']);
    expect(seen).toEqual([running.origin, { stage: 'weights', fraction: 0.5 }]);
    const before = await fetch(`${running.origin}/health`);
    expect(before.status).toBe(503);
    expect(await before.json()).toEqual({ status: 'loading' });
    loader.resolve(stubRuntime({ id: 'maya-demo' }));
    await running.loaded;
    const after = await fetch(`${running.origin}/health`);
    expect(after.status).toBe(200);
    const models = await (await fetch(`${running.origin}/v1/models`)).json();
    expect(models.data[0].id).toBe('maya-demo');
  });

  it('stop() closes the server, the job manager and the model', async () => {
    const loader = deferredLoader();
    const running = await start(loader.load);
    let isClosed = false;
    loader.resolve(stubRuntime({ close: async () => void (isClosed = true) }));
    await running.loaded;
    await running.stop();
    expect(isClosed).toBe(true);
    expect(running.server.listening).toBe(false);
    await expect(fetch(`${running.origin}/health`)).rejects.toThrow();
  });

  it('a failed load rejects `loaded` and leaves /health at 503', async () => {
    const loader = deferredLoader();
    const running = await start(loader.load);
    loader.reject(new Error('bad checkpoint'));
    await expect(running.loaded).rejects.toThrow('bad checkpoint');
    expect((await fetch(`${running.origin}/health`)).status).toBe(503);
  });
});
