/** Loopback addresses for tests: a free port on 127.0.0.1, and server settings that bind one. */
import { createServer } from 'node:net';
import { DEFAULT_MAX_BODY_BYTES, type ServerSettings } from '../../config/settings.ts';

/** A port that was free a moment ago on 127.0.0.1 (for a child process or server told to bind it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** 127.0.0.1, any free port, no API keys, loopback CORS, the default body limit; then `overrides`. */
export function loopbackServer(overrides: Partial<ServerSettings> = {}): ServerSettings {
  return {
    host: '127.0.0.1',
    port: 0,
    model: undefined,
    apiKeys: [],
    corsOrigins: undefined,
    maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
    ...overrides,
  };
}
