/**
 * What the real-client suites share: Maya on the demo model (the real engine, via
 * test/e2e/start-demo-service.ts) on a loopback port, and a fetch that records each request's
 * method, path, JSON body and status, so a test can assert what the unmodified client sent.
 */
import { startDemoService, type DemoService } from '../e2e/start-demo-service.ts';

export interface Maya {
  demo: DemoService;
  /** e.g. http://127.0.0.1:41234/v1: the base URL every client is given. */
  baseURL: string;
  /** The served model's ID (`maya-demo`). */
  model: string;
  stop(): Promise<void>;
}

/**
 * `options`: API keys (none = no authentication), and the opt-in settings (item references,
 * encrypted reasoning) and decoding, as `maya serve` would read them.
 */
export async function startMaya(
  options: { apiKeys?: string[] } & Parameters<typeof startDemoService>[1] = {},
): Promise<Maya> {
  const { apiKeys = [], ...rest } = options;
  const demo = await startDemoService(apiKeys, rest);
  return { demo, baseURL: `${demo.origin}/v1`, model: demo.runtime.id, stop: () => demo.stop() };
}

export interface RecordedRequest {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  status: number;
}

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A fetch for a client's `fetch` option that records every request it makes. */
export function recordingFetch(): { fetch: Fetch; requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const recording: Fetch = async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const response = await globalThis.fetch(input, init);
    const text = typeof init?.body === 'string' ? init.body : undefined;
    requests.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      body: text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>),
      status: response.status,
    });
    return response;
  };
  return { fetch: recording, requests };
}
