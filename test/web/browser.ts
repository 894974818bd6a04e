/**
 * The web page's test harness: a real `maya serve` (bin/maya.js, spawned as a user runs it) on a
 * free loopback port, and Debian's Chromium driven by playwright-core (never a browser download of
 * its own), launched headless with a fresh profile and the flags that keep it off the network.
 * Every request the page makes is recorded. `npm run web:build` must have built web/dist
 * (`npm test` does); scripts/provision-test.sh installs Chromium.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core';
import { ROOT, waitForReady } from '../e2e/start-demo-service.ts';
import { freePort } from '../helpers/loopback.ts';

export const CHROMIUM = process.env.MAYA_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const GLM4V_TINY = path.join(ROOT, 'test/fixtures/engine/glm4v-tiny');

export interface Maya {
  origin: string;
  /** What the server printed on stderr up to now. */
  output(): string;
  stop(): Promise<void>;
}

/** `node bin/maya.js serve --port P` with `env` added; resolves once the model is ready. */
export async function startMaya(env: Record<string, string> = {}, args: string[] = []): Promise<Maya> {
  if (!existsSync(path.join(ROOT, 'web/dist/index.html')))
    throw new Error('web/dist is not built: run npm run web:build (npm test builds it)');
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['bin/maya.js', 'serve', '--port', String(port), ...args], {
    cwd: ROOT,
    // info: the start-up lines (waitForReady reads 'model … ready', the page's address) go through the one logger.
    env: { ...process.env, MAYA_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitForReady(child.stderr!, exited);
  return {
    origin: `http://127.0.0.1:${port}`,
    output: () => text,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface Browsing {
  browser: Browser;
  /** Opens a fresh context (its own storage) and a page in it, recording its requests. */
  open(options?: {
    colorScheme?: 'light' | 'dark';
  }): Promise<{ context: BrowserContext; page: Page; requests: Request[] }>;
  close(): Promise<void>;
}

/**
 * Debian's Chromium, headless. playwright-core starts it with a fresh --user-data-dir of its own
 * (a new temporary profile, removed when the browser closes; it refuses one passed in `args`).
 */
export async function launchChromium(): Promise<Browsing> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: run bash scripts/provision-test.sh (or set MAYA_TEST_CHROMIUM)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    open: async (options = {}) => {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        colorScheme: options.colorScheme ?? 'light',
        permissions: ['clipboard-read', 'clipboard-write'],
      });
      const page = await context.newPage();
      const requests: Request[] = [];
      page.on('request', (request) => requests.push(request));
      return { context, page, requests };
    },
    close: () => browser.close(),
  };
}

/** The JSON bodies of the page's POST /v1/responses requests, in order. */
export function responseRequests(requests: Request[]): Record<string, unknown>[] {
  return requests
    .filter((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/v1/responses')
    .map((r) => r.postDataJSON() as Record<string, unknown>);
}

/** Types `text` into the message box and sends it with Enter. */
export async function sendMessage(page: Page, text: string): Promise<void> {
  const box = page.getByLabel('Message', { exact: true });
  await box.fill(text);
  await box.press('Enter');
}

/** Waits until the thread holds `count` answers and the last one has finished streaming. */
export async function waitForAnswers(page: Page, count: number): Promise<void> {
  await page.waitForFunction((n) => {
    const answers = document.querySelectorAll('.message.assistant');
    return answers.length === n && !answers[n - 1]!.hasAttribute('aria-busy');
  }, count);
}

/** The page's own URL paths (and any request that left the origin, in full). */
export function requestedUrls(requests: Request[], origin: string): string[] {
  return requests.map((r) => (r.url().startsWith(`${origin}/`) ? new URL(r.url()).pathname : r.url()));
}

/**
 * A test file's Maya (startMaya with these settings) and Chromium, started together before its
 * tests and closed after them. Read `web.maya` and `web.browsing` inside tests (they are set in
 * beforeAll).
 */
export function withMayaAndChromium(
  env: Record<string, string> = {},
  args: string[] = [],
): { maya: Maya; browsing: Browsing } {
  const web = {} as { maya: Maya; browsing: Browsing };
  beforeAll(async () => {
    [web.maya, web.browsing] = await Promise.all([startMaya(env, args), launchChromium()]);
  }, 120_000);
  afterAll(async () => {
    await web.browsing?.close();
    await web.maya?.stop();
  });
  return web;
}
