/**
 * Socket limits of `maya serve` (MAYA_MAX_CONNECTIONS, MAYA_HEADERS_TIMEOUT_S, a refused request
 * closes its socket): a probe once held sockets for minutes with slow headers and slow bodies
 * until file descriptors ran out and /health failed. Real sockets on loopback.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../cli/serve.ts';
import { DEFAULT_RESPONSES_SETTINGS, loadServerSettings } from '../../config/settings.ts';
import { silentLogger } from '../../handlers/app-deps.ts';
import { stubRuntime } from '../helpers/test-app.ts';

let service: RunningService | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await service?.stop();
  service = undefined;
});

async function serve(env: Record<string, string>): Promise<{ port: number; origin: string }> {
  service = await startService({
    settings: DEFAULT_RESPONSES_SETTINGS,
    server: loadServerSettings({ MAYA_PORT: '0', ...env }),
    modelDir: '/models/x',
    loadRuntime: async () => stubRuntime(),
    logger: silentLogger,
  });
  await service.loaded;
  return { port: Number(new URL(service.origin).port), origin: service.origin };
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** Resolves with what the server sent once it closes the socket (or rejects after ms). */
function closedBy(socket: Socket, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.once('close', () => resolve(text));
    setTimeout(() => reject(new Error(`socket still open after ${ms} ms`)), ms).unref();
  });
}

describe('socket limits', () => {
  it('a request refused before its body arrived (401) is answered with Connection: close and the socket closes', async () => {
    const { port } = await serve({ MAYA_API_KEYS: 'secret' });
    const socket = await open(port);
    socket.write(
      'POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"input":',
    );
    const answer = await closedBy(socket, 5000);
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
    expect(answer.toLowerCase()).toContain('connection: close');
  });

  it('slow headers are cut after MAYA_HEADERS_TIMEOUT_S', async () => {
    const { port } = await serve({ MAYA_HEADERS_TIMEOUT_S: '1', MAYA_REQUEST_TIMEOUT_S: '2' });
    const socket = await open(port);
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n');
    const answer = await closedBy(socket, 6000);
    expect(answer === '' || answer.startsWith('HTTP/1.1 408')).toBe(true);
  });

  it('sockets beyond MAYA_MAX_CONNECTIONS are closed on arrival, and /health answers once they go', async () => {
    const { port, origin } = await serve({ MAYA_MAX_CONNECTIONS: '3' });
    const held = await Promise.all([open(port), open(port), open(port)]);
    expect(held).toHaveLength(3);
    const extra = await open(port);
    await closedBy(extra, 3000);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await fetch(`${origin}/health`)).status).toBe(200);
  });
});
