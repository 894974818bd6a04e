/**
 * `npm start` prints the web page's address and serves the page. It delivers SIGTERM to the server
 * (a probe once found npm exiting while node kept serving, orphaned): the start script execs node,
 * so signalling npm stops the server, which exits cleanly and frees its port.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT, waitForReady } from '../e2e/start-demo-service.ts';
import { freePort } from '../helpers/loopback.ts';

describe('npm start', () => {
  it('SIGTERM to npm stops the server it started', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent', '--', '--port', String(port)], {
      cwd: ROOT,
      // info: the start-up lines (waitForReady reads 'model … ready') go through the one logger.
      env: { ...process.env, MAYA_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    const printed = await waitForReady(npm.stderr!, exited);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    // It logs the web page's address (a JSON line of the one logger), and the page is there.
    expect(printed).toContain(`"message":"web page at http://127.0.0.1:${port}/"`);
    expect((await fetch(`http://127.0.0.1:${port}/`)).headers.get('content-type')).toBe('text/html; charset=utf-8');
    npm.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Nothing answers on the port any more: the server went with npm, not orphaned behind it.
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  }, 120_000);
});
