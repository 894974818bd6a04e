/**
 * scripts/provision-test.sh (the first step of `npm test`) as a new machine meets it: run with a
 * PATH that holds only stubs, so NEEDS's commands (redis-server, haproxy, redis-sentinel,
 * clang-format, black, flake8, chromium) are absent unless a case puts them there, `id` answers the case's user id, and `sudo` and `apt-get` record each call (apt-get
 * "installs" by placing a stub of each package's command on that PATH). Checked: nothing is
 * installed when both are present; root installs Debian's packages, only the missing ones; a user
 * with password-less sudo installs through it; any other user, a failed apt-get and a machine
 * without apt-get stop at once with the command to run; MAYA_TEST_CHROMIUM replaces Debian's
 * Chromium.
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
    '[[ $1 == install ]] && for p in "${@:2}"; do [[ $p == -* ]] || { printf "#!/bin/sh\\n" >"$STUB_BIN/$p"; /bin/chmod +x "$STUB_BIN/$p"; }; done',
    'exit 0',
  ].join('\n'),
  ...Object.fromEntries(
    ['redis-server', 'haproxy', 'redis-sentinel', 'clang-format', 'black', 'flake8', 'chromium'].map((c) => [c, '']),
  ),
};

interface Case {
  uid: number;
  /** Stubs on PATH (redis-server, chromium: already installed). */
  commands: string[];
  sudo?: 'yes' | 'no';
  apt?: 'ok' | 'fail';
  /** MAYA_TEST_CHROMIUM: 'stub' names an executable stub, 'missing' a path that is not there. */
  chromium?: 'stub' | 'missing';
}

function provision(c: Case) {
  const bin = mkdtempSync(join(scratch, 'bin-'));
  for (const name of c.commands) writeFileSync(join(bin, name), `#!${BASH}\n${STUBS[name]}\n`, { mode: 0o755 });
  const log = join(bin, 'calls.log');
  writeFileSync(log, '');
  const chromium = join(bin, 'other-chromium');
  if (c.chromium === 'stub') writeFileSync(chromium, `#!${BASH}\n`, { mode: 0o755 });
  const result = spawnSync(BASH, [SCRIPT], {
    encoding: 'utf8',
    env: {
      PATH: bin,
      STUB_BIN: bin,
      STUB_LOG: log,
      STUB_UID: String(c.uid),
      STUB_SUDO: c.sudo ?? 'no',
      STUB_APT: c.apt ?? 'ok',
      ...(c.chromium ? { MAYA_TEST_CHROMIUM: chromium } : {}),
    },
  });
  return {
    status: result.status,
    stderr: result.stderr,
    calls: readFileSync(log, 'utf8').split('\n').filter(Boolean),
    isInstalled: existsSync(join(bin, 'redis-server')),
    isChromiumInstalled: existsSync(join(bin, 'chromium')),
  };
}

const TOOLS = ['id', 'sudo', 'apt-get'];
/** NEEDS's commands (each its Debian package's name), in the script's order. */
const NEEDED = ['redis-server', 'haproxy', 'redis-sentinel', 'clang-format', 'black', 'flake8', 'chromium'];
const ALL = NEEDED.join(' ');
const allBut = (...absent: string[]) => NEEDED.filter((command) => !absent.includes(command));

describe('scripts/provision-test.sh', () => {
  it('does nothing when every needed command is on PATH', () => {
    const run = provision({ uid: 1000, commands: [...TOOLS, ...NEEDED] });
    expect(run.status).toBe(0);
    expect(run.calls).toEqual([]);
    expect(run.stderr).toBe('');
  });

  it("as root, installs Debian's packages when they are missing", () => {
    const run = provision({ uid: 0, commands: TOOLS });
    expect(run.status).toBe(0);
    expect(run.calls).toEqual(['apt-get update -qq', `apt-get install -y -qq ${ALL}`]);
    expect(run.isInstalled).toBe(true);
    expect(run.isChromiumInstalled).toBe(true);
    expect(run.stderr).toContain(`installed ${ALL}`);
  });

  it('as root, installs only what is missing', () => {
    const run = provision({ uid: 0, commands: [...TOOLS, ...allBut('redis-server')] });
    expect(run.status).toBe(0);
    expect(run.calls).toEqual(['apt-get update -qq', 'apt-get install -y -qq redis-server']);
    expect(run.isInstalled).toBe(true);
  });

  it('as a user with password-less sudo, installs through sudo -n', () => {
    const run = provision({ uid: 1000, commands: [...TOOLS, ...allBut('redis-server')], sudo: 'yes' });
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
      expect(run.stderr).toContain(`sudo apt-get update && sudo apt-get install -y ${ALL}`);
      expect(run.calls.filter((call) => !call.endsWith('--version'))).toEqual([]);
      expect(run.isInstalled).toBe(false);
      expect(run.isChromiumInstalled).toBe(false);
    }
  });

  it("stops with apt-get's error and the command when the install fails", () => {
    const run = provision({ uid: 0, commands: [...TOOLS, ...allBut('redis-server')], apt: 'fail' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('E: Unable to locate package redis-server');
    expect(run.stderr).toContain('apt-get update && apt-get install -y redis-server');
    expect(run.isInstalled).toBe(false);
  });

  it('stops, naming the packages, on a machine without apt-get', () => {
    const run = provision({ uid: 0, commands: ['id'] });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('no apt-get');
    expect(run.stderr).toContain(ALL);
  });

  it("MAYA_TEST_CHROMIUM names the browser instead of Debian's, and must be executable", () => {
    const other = provision({ uid: 0, commands: [...TOOLS, ...allBut('chromium')], chromium: 'stub' });
    expect(other.status).toBe(0);
    expect(other.calls).toEqual([]);
    const missing = provision({ uid: 0, commands: [...TOOLS, ...allBut('chromium')], chromium: 'missing' });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('MAYA_TEST_CHROMIUM=');
    expect(missing.stderr).toContain('is not an executable file');
    expect(missing.calls).toEqual([]);
    expect(missing.isChromiumInstalled).toBe(false);
  });
});
