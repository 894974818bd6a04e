/**
 * config/ is the one reader of settings: no production file outside config/ and cli/ reads
 * process.env (or Bun.env, import.meta.env), and the C/C++/CUDA engine calls no getenv. Test
 * harnesses are excepted: test/, bench/, scripts/, engine-cuda/test/ and vitest.config.ts; so are
 * build output (web/dist) and the web page's example client code, which it shows as text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const SKIPPED_DIRS = new Set(['node_modules', 'build', 'dist', 'test', 'bench', 'scripts', 'models']);
const HARNESS_FILES = new Set(['vitest.config.ts']);
/** Text, not reads: the About page's snippets of a client program that takes its key from its own environment. */
const EXAMPLE_FILES = new Set(['web/src/about/snippets.ts']);

function files(dir: string, exts: RegExp): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name) && !entry.name.startsWith('.')) out.push(...files(path, exts));
    } else if (exts.test(entry.name)) {
      out.push(relative(ROOT, path));
    }
  }
  return out;
}

/** Lines of `file` that match `pattern`, as "file:line: text". */
function hits(file: string, pattern: RegExp): string[] {
  return readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .flatMap((line, i) => (pattern.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

const ENV_READ = /\bprocess\s*(\.\s*env\b|\[\s*['"`]env['"`]\s*\])|\bBun\.env\b|\bimport\.meta\.env\b/;

describe('settings readers', () => {
  it('no production TypeScript/JavaScript outside config/ and cli/ reads the environment', () => {
    const sources = files(ROOT, /\.(tsx?|js|mjs|cjs)$/).filter(
      (file) => !/^(config|cli)\//.test(file) && !HARNESS_FILES.has(file) && !EXAMPLE_FILES.has(file),
    );
    expect(sources.length).toBeGreaterThan(50);
    expect(sources).toContain('runtime/load-model-runtime.ts');
    expect(sources.flatMap((file) => hits(file, ENV_READ))).toEqual([]);
  });

  it('the engine library calls no getenv (its settings arrive as ENG_PARAM_*)', () => {
    const sources = files(join(ROOT, 'engine-cuda/src'), /\.(c|cc|cpp|h|hpp|cu|cuh)$/);
    expect(sources).toContain('engine-cuda/src/kernels_scalar.cpp');
    expect(sources).toContain('engine-cuda/src/cuda/cuda_backend.cu');
    expect(sources.flatMap((file) => hits(file, /\b(secure_)?getenv\s*\(|\benviron\b/))).toEqual([]);
  });

  it('the scan sees a read where there is one', () => {
    expect(ENV_READ.test('const x = process.env.MAYA_PORT;')).toBe(true);
    expect(ENV_READ.test("const x = process['env'];")).toBe(true);
    expect(ENV_READ.test('const processEnv: Env = {};')).toBe(false);
  });
});
