/**
 * scripts/provision-test.sh (the first step of `npm test`) as a new machine meets it: run with a
 * PATH that holds only stubs, so `redis-server` is absent unless a case puts it there, `id`
 * answers the case's user id, and `sudo` and `apt-get` record each call (apt-get "installs" by
 * placing a redis-server stub on that PATH). Checked: nothing is installed when redis-server is
 * present; root installs Debian's package; a user with password-less sudo installs through it;
 * any other user, a failed apt-get and a machine without apt-get stop at once with the command to
 * run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SCRIPT = join(import.meta.dirname, '../../scripts/provision-test.sh');
const BASH = execFileSync('bash', ['-c', 'command -v bash'], { encoding: 'utf8' }).trim();
const scratch = mkdtempSync(join(tmpdir(), 'maya-provision-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const STUBS: Record<string, string> = {
  id: 'echo "$STUB_UID"',
  sudo: [
    'echo "sudo $*" >>"$STUB_LOG"',
    '[[ $STUB_SUDO == yes ]] || { echo "sudo: a password is required" >&2; exit 1; }',
    '[[ $1 == -n ]] && shift',
    'exec "$@"',
  ].join('\n'),
  'apt-get': [
    'echo "apt-get $*" >>"$STUB_LOG"',
    '[[ $1 == --version ]] && exit 0',
    '[[ $STUB_APT == fail ]] && { echo "E: Unable to locate package redis-server" >&2; exit 100; }',
    'if [[ $1 == install ]]; then printf "#!/bin/sh\\n" >"$STUB_BIN/redis-server"; /bin/chmod +x "$STUB_BIN/redis-server"; fi',
  ].join('\n'),
  'redis-server': '',
};

interface Case {
  uid: number;
  /** Stubs on PATH (redis-server: already installed). */
  commands: string[];
  sudo?: 'yes' | 'no';
  apt?: 'ok' | 'fail';
}

function provision(c: Case) {
  const bin = mkdtempSync(join(scratch, 'bin-'));
  for (const name of c.commands) writeFileSync(join(bin, name), `#!${BASH}\n${STUBS[name]}\n`, { mode: 0o755 });
  const log = join(bin, 'calls.log');
  writeFileSync(log, '');
  const result = spawnSync(BASH, [SCRIPT], {
    encoding: 'utf8',
    env: {
      PATH: bin,
      STUB_BIN: bin,
      STUB_LOG: log,
      STUB_UID: String(c.uid),
      STUB_SUDO: c.sudo ?? 'no',
      STUB_APT: c.apt ?? 'ok',
    },
  });
  return {
    status: result.status,
    stderr: result.stderr,
    calls: readFileSync(log, 'utf8').split('\n').filter(Boolean),
    isInstalled: existsSync(join(bin, 'redis-server')),
  };
}

const TOOLS = ['id', 'sudo', 'apt-get'];

describe('scripts/provision-test.sh', () => {
  it('does nothing when redis-server is on PATH', () => {
    const run = provision({ uid: 1000, commands: [...TOOLS, 'redis-server'] });
    expect(run.status).toBe(0);
    expect(run.calls).toEqual([]);
    expect(run.stderr).toBe('');
  });

  it("as root, installs Debian's redis-server when it is missing", () => {
    const run = provision({ uid: 0, commands: TOOLS });
    expect(run.status).toBe(0);
    expect(run.calls).toEqual(['apt-get update -qq', 'apt-get install -y -qq redis-server']);
    expect(run.isInstalled).toBe(true);
    expect(run.stderr).toContain('installed redis-server');
  });

  it('as a user with password-less sudo, installs through sudo -n', () => {
    const run = provision({ uid: 1000, commands: TOOLS, sudo: 'yes' });
    expect(run.status).toBe(0);
    expect(run.calls.filter((call) => call.startsWith('sudo'))).toEqual([
      'sudo -n apt-get --version',
      'sudo -n apt-get update -qq',
      'sudo -n apt-get install -y -qq redis-server',
    ]);
    expect(run.calls).toContain('apt-get install -y -qq redis-server');
    expect(run.isInstalled).toBe(true);
  });

  it('as a user who may not install, stops at once with the command to run', () => {
    for (const commands of [TOOLS, ['id', 'apt-get']]) {
      const run = provision({ uid: 1000, commands, sudo: 'no' });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('sudo apt-get update && sudo apt-get install -y redis-server');
      expect(run.calls.filter((call) => !call.endsWith('--version'))).toEqual([]);
      expect(run.isInstalled).toBe(false);
    }
  });

  it("stops with apt-get's error and the command when the install fails", () => {
    const run = provision({ uid: 0, commands: TOOLS, apt: 'fail' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('E: Unable to locate package redis-server');
    expect(run.stderr).toContain('apt-get update && apt-get install -y redis-server');
    expect(run.isInstalled).toBe(false);
  });

  it('stops, naming the package, on a machine without apt-get', () => {
    const run = provision({ uid: 0, commands: ['id'] });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('no apt-get');
    expect(run.stderr).toContain('redis-server');
  });
});
