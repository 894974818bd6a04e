#!/usr/bin/env node
// The `maya` launcher: runs cli/maya.ts in this process, through tsx's ESM loader under Node
// (Bun runs TypeScript natively). Signals reach the CLI directly.
if (!process.versions.bun) {
  const { register } = await import('tsx/esm/api');
  register();
}
const { main } = await import(new URL('../cli/maya.ts', import.meta.url).href);
process.exit(await main(process.argv.slice(2)));
