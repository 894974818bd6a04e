/** `maya serve` with MAYA_STORE_URL as a process: an unreachable Redis stops start-up with a clear line. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/loopback.ts';

const BIN = fileURLToPath(new URL('../../bin/maya.js', import.meta.url));

function maya(env: Record<string, string>) {
  const result = spawnSync(process.execPath, [BIN, 'serve', '--port', '0'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stderr: result.stderr };
}

describe('maya serve with MAYA_STORE_URL', () => {
  it('exits 1 naming the store (password redacted) when Redis cannot be reached, before listening', async () => {
    const port = await freePort();
    const run = maya({ MAYA_STORE_URL: `redis://:hunter2@127.0.0.1:${port}/0` });
    expect(run.status).toBe(1);
    // A line of the one logger (JSON off a terminal) at error level.
    expect(run.stderr).toContain(`cannot reach the response store at redis://127.0.0.1:${port}/0 (MAYA_STORE_URL)`);
    expect(run.stderr).toContain('"level":50');
    expect(run.stderr).not.toContain('hunter2');
    expect(run.stderr).not.toContain('listening on');
  });

  it('a malformed MAYA_STORE_URL is a settings error (exit 2)', () => {
    const run = maya({ MAYA_STORE_URL: 'localhost:6379' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('MAYA_STORE_URL: must be a redis://');
  });
});
