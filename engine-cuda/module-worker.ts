/**
 * Starts a worker thread from a TypeScript module: directly under Bun or from built JS, and through
 * tsx's loader from TS sources under Node (Node cannot run .ts in a worker by itself). The engine's
 * FFI worker and the prompt workers of runtime/ both start this way.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const isBun = typeof process.versions.bun === 'string';

export function startModuleWorker(url: URL, workerData: unknown): Worker {
  if (isBun || !url.pathname.endsWith('.ts')) return new Worker(url, { workerData });
  // tsx's ESM API entry sits beside the CommonJS one that require.resolve finds.
  const tsxApi = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const code =
    `import(${JSON.stringify(tsxApi)}).then(({ tsImport }) => ` +
    `tsImport(${JSON.stringify(url.href)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(code, { eval: true, workerData });
}
