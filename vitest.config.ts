import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The unit tests run the engine on the CPU even where a GPU is present (where auto would pick
    // cuda, whose results differ in the last bits); the CUDA backend's checks are npm run test:gpu.
    env: { MAYA_ENGINE_BACKEND: process.env.MAYA_ENGINE_BACKEND ?? 'cpu' },
  },
});
