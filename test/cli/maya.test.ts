/** The CLI as a process (node + tsx): usage and settings errors exit non-zero with a clear line. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));

function maya(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('maya CLI', () => {
  it('--help prints the usage and exits 0', () => {
    const run = maya(['--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('maya serve [--model DIR|FILE.gguf] [--chat-template FILE]');
    // generate and perplexity take a GGUF file as serve does
    expect(maya(['generate', '--help']).stdout).toContain('maya generate --model DIR|FILE.gguf (');
    expect(maya(['perplexity', '--help']).stdout).toContain('maya perplexity --model DIR|FILE.gguf (');
  });

  it('a later part of a split GGUF set is refused with the name of the first file, exit 1', () => {
    const part = fileURLToPath(new URL('../fixtures/gguf/glm4-F16-00002-of-00003.gguf', import.meta.url));
    const run = maya(['perplexity', '--model', part, '--ids', part]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('part 2 of 3 of a split GGUF set: open its first file (glm4-F16-00001-of-00003.gguf)');
  });

  it('a bad setting names the variable and the rule, exit 2', () => {
    const run = maya(['serve', '--port', '0'], { MAYA_GLM_RESPONSES_JOB_ENTRIES: '5000' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('MAYA_GLM_RESPONSES_JOB_ENTRIES=5000: must be a positive integer <= 4096');
  });

  it('an unknown option or command exits 2', () => {
    expect(maya(['serve', '--nope']).status).toBe(2);
    expect(maya(['fly']).status).toBe(2);
  });
});
