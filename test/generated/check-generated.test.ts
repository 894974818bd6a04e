/**
 * gen:check on a temporary copy of openapi/ and generated/: clean when in sync; names the file
 * when the yaml changes, when a generated file is edited, when a banner's sha256 is stale, and
 * when generated/ holds a file no generator writes; the CLI exits non-zero on drift.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkGenerated } from '../../scripts/check-generated.ts';
import { ROOT } from './contract-schemas.ts';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'maya-gen-test-'));
  await cp(path.join(ROOT, 'openapi'), path.join(root, 'openapi'), { recursive: true });
  await cp(path.join(ROOT, 'generated'), path.join(root, 'generated'), { recursive: true });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function edit(file: string, change: (text: string) => string): Promise<void> {
  const full = path.join(root, file);
  await writeFile(full, change(await readFile(full, 'utf8')));
}

describe('checkGenerated', () => {
  it('is clean on the checked-in files', async () => {
    expect(await checkGenerated(root)).toEqual([]);
  });

  it('names every generated file when the yaml changes', async () => {
    await edit('openapi/openapi.yaml', (t) => t.replace('summary: Lists the loaded model.', 'summary: Lists the served model.'));
    const problems = await checkGenerated(root);
    for (const file of ['generated/openapi.d.ts', 'generated/operations.ts', 'generated/openapi-document.ts']) {
      expect(problems.some((p) => p.startsWith(`${file}: banner sha256`)), file).toBe(true);
      expect(problems.some((p) => p.startsWith(`${file}: differs`)), file).toBe(true);
    }
  });

  it('names a hand-edited generated file', async () => {
    await edit('generated/operations.ts', (t) => t.replace("koaPath: '/v1/models'", "koaPath: '/v1/model'"));
    expect(await checkGenerated(root)).toEqual(['generated/operations.ts: differs from a fresh generation (run npm run gen)']);
  });

  it('fails on a banner whose sha256 differs from the yaml', async () => {
    await edit('generated/openapi.d.ts', (t) => t.replace(/sha256 [0-9a-f]{64}/, `sha256 ${'0'.repeat(64)}`));
    const problems = await checkGenerated(root);
    expect(problems[0]).toMatch(/^generated\/openapi\.d\.ts: banner sha256 0{64} differs from openapi\/openapi\.yaml/);
  });

  it('fails on a missing generated file and on a stray one', async () => {
    await rm(path.join(root, 'generated/openapi-document.ts'));
    await writeFile(path.join(root, 'generated/extra.ts'), 'export {};\n');
    expect(await checkGenerated(root)).toEqual([
      'generated/openapi-document.ts: missing (run npm run gen)',
      'generated/extra.ts: not written by any generator',
    ]);
  });

  it('exits non-zero from the command line and names the file', async () => {
    await edit('generated/operations.ts', (t) => t + '// edited\n');
    const tsx = path.join(ROOT, 'node_modules/.bin/tsx');
    const run = promisify(execFile)(tsx, [path.join(ROOT, 'scripts/check-generated.ts'), '--root', root], { cwd: ROOT });
    await expect(run).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('generated/operations.ts: differs') });
  });
});
