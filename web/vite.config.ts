/**
 * Builds the web page (web/index.html → web/dist) for Koa to serve (handlers/web-page.ts):
 * content-hashed files under dist/assets, no inline script or style, nothing inlined as data:
 * URLs, no source maps. Preact's JSX through Vite's own transform (no plugin).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
