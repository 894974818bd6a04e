/**
 * The layer rules of .dependency-cruiser.cjs (the README's module map), checked with
 * dependency-cruiser: the production tree has no import cycle, no import from a lower layer to a
 * higher one, no import of generated/ outside contract/ and no import between the web page
 * (web/src) and the server's code, and the same rules do catch an upward import, a cycle, a
 * handler importing generated/ and the web page and the server importing each other in a scratch
 * tree.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const BIN = join(ROOT, 'node_modules/.bin/depcruise');
const FOLDERS = [
  'cli',
  'handlers',
  'responses',
  'store',
  'runtime',
  'mcp',
  'config',
  'dialects',
  'engine-cuda',
  'checkpoint',
  'contract',
  'metrics',
  'grammar',
  'web/src',
];

async function cruise(cwd: string, folders: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run(BIN, [...folders, '--config', join(ROOT, '.dependency-cruiser.cjs')], { cwd });
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, output: failed.stdout };
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'maya-layers-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(scratch, 'tree-'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true }, include: ['**/*.ts'] }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('layers', () => {
  it('the production tree has no cycle and no upward import', async () => {
    const result = await cruise(ROOT, FOLDERS);
    expect(result.output).toContain('no dependency violations found');
    expect(result.code).toBe(0);
  }, 60_000);

  it('an import from store/ up to handlers/ is refused', async () => {
    const dir = tree({
      'handlers/errors.ts': 'export const x = 1;\n',
      'store/store.ts': "import { x } from '../handlers/errors.ts';\nexport const y = x;\n",
    });
    const result = await cruise(dir, ['handlers', 'store']);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('layer-store');
  }, 60_000);

  it('only contract/ may import generated/', async () => {
    const dir = tree({
      'generated/operations.ts': 'export const operations = {};\n',
      'contract/operations.ts': "export { operations } from '../generated/operations.ts';\n",
      'handlers/app.ts': "import { operations } from '../generated/operations.ts';\nexport const app = operations;\n",
    });
    const result = await cruise(dir, ['handlers', 'contract']);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('generated-through-contract');
    expect(result.output).toContain('handlers/app.ts');
    expect(result.output).not.toContain('contract/operations.ts →');
  }, 60_000);

  it('the web page imports no server code, and no server code imports the web page', async () => {
    const dir = tree({
      'contract/types.ts': 'export const t = 1;\n',
      'web/src/api.ts': "import { t } from '../../contract/types.ts';\nexport const a = t;\n",
      'handlers/page.ts': "import { a } from '../web/src/api.ts';\nexport const p = a;\n",
    });
    const result = await cruise(dir, ['handlers', 'contract', 'web/src']);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('web-self-contained');
    expect(result.output).toContain('web/src/api.ts → contract/types.ts');
    expect(result.output).toContain('no-server-imports-web');
    expect(result.output).toContain('handlers/page.ts → web/src/api.ts');
  }, 60_000);

  it('a cycle inside one folder is refused', async () => {
    const dir = tree({
      'responses/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
      'responses/b.ts': "import { a } from './a.ts';\nexport const b = () => a;\n",
    });
    const result = await cruise(dir, ['responses']);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('no-circular');
  }, 60_000);
});
