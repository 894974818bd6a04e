/**
 * Fails (exit 1, naming each file) when generated/ drifts from openapi/openapi.yaml: it renders
 * every generated file into a temporary directory, compares each with the checked-in copy, and
 * checks that every file's banner names its generator and the yaml's current sha256. Also
 * fails on a file in generated/ that no generator writes.
 *
 * Usage: tsx scripts/check-generated.ts [--root DIR]   (DIR defaults to the repository root)
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DOCUMENT_FILE, OPERATIONS_FILE, renderDocument, renderOperations } from './gen-operations.ts';
import { BANNER_RE, TYPES_FILE, readSpec, renderTypes, rootFromArgs, specSha256 } from './gen-types.ts';

/** Each generated file with its generator and a renderer from the yaml text. */
const GENERATED: readonly { file: string; generator: string; render: (spec: string) => string | Promise<string> }[] = [
  { file: TYPES_FILE, generator: 'scripts/gen-types.ts', render: renderTypes },
  { file: OPERATIONS_FILE, generator: 'scripts/gen-operations.ts', render: renderOperations },
  { file: DOCUMENT_FILE, generator: 'scripts/gen-operations.ts', render: renderDocument },
];

async function readIfPresent(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

function bannerProblem(text: string, generator: string, sha256: string): string | null {
  const match = BANNER_RE.exec(text.slice(0, text.indexOf('\n')));
  if (!match) return 'missing or malformed banner';
  if (match[1] !== generator) return `banner names ${match[1]}, expected ${generator}`;
  if (match[2] !== sha256) return `banner sha256 ${match[2]} differs from openapi/openapi.yaml (${sha256})`;
  return null;
}

/** Returns one message per problem; empty when generated/ is up to date. */
export async function checkGenerated(root: string): Promise<string[]> {
  const spec = await readSpec(root);
  const sha256 = specSha256(spec);
  const temp = await mkdtemp(path.join(os.tmpdir(), 'maya-gen-check-'));
  const problems: string[] = [];
  try {
    for (const { file, generator, render } of GENERATED) {
      const fresh = await render(spec);
      const freshPath = path.join(temp, path.basename(file));
      await writeFile(freshPath, fresh);
      const current = await readIfPresent(path.join(root, file));
      if (current === null) {
        problems.push(`${file}: missing (run npm run gen)`);
        continue;
      }
      const banner = bannerProblem(current, generator, sha256);
      if (banner) problems.push(`${file}: ${banner}`);
      if (current !== (await readFile(freshPath, 'utf8')))
        problems.push(`${file}: differs from a fresh generation (run npm run gen)`);
    }
    const known = new Set(GENERATED.map((g) => path.basename(g.file)));
    const present = await readdir(path.join(root, 'generated')).catch(() => [] as string[]);
    for (const name of present.sort()) {
      if (!known.has(name)) problems.push(`generated/${name}: not written by any generator`);
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  return problems;
}

async function main(): Promise<void> {
  const problems = await checkGenerated(rootFromArgs(process.argv.slice(2)));
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`gen:check: ${problems.length} problem(s); generated/ is out of date with openapi/openapi.yaml`);
    process.exitCode = 1;
  } else {
    console.log('gen:check: generated/ matches openapi/openapi.yaml');
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
