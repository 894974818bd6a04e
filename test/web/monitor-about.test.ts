/**
 * The Monitor and About tabs in Debian's Chromium against `maya serve` on the demo model (with
 * encrypted reasoning on and a reasoning key, and two engine settings that leave this CPU run as
 * it is, so About has settings to show and a secret to hide):
 * the Monitor's numbers move after a request; About shows the model, the engine, the version and
 * the settings; its client snippets are the README's tested settings with this server's address
 * and model filled in, copy as shown, and run against this server.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { ROOT } from '../e2e/start-demo-service.ts';
import { launchChromium, startMaya, type Browsing, type Maya } from './browser.ts';

const run = promisify(execFile);
const REASONING_KEY = '5e'.repeat(32);
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const CLIENTS = README.slice(README.indexOf('## Clients'), README.indexOf('## Module map'));
const README_BASE = 'http://127.0.0.1:8080/v1';

let maya: Maya;
let browsing: Browsing;
let scratch: string;
beforeAll(async () => {
  [maya, browsing] = await Promise.all([
    startMaya({
      MAYA_GLM_RESPONSES_ENCRYPTED_REASONING: 'on',
      MAYA_GLM_RESPONSES_REASONING_KEY: REASONING_KEY,
      MAYA_ENGINE_BACKEND: 'cpu',
      MAYA_CUDA_TC_MIN_TOKENS: '64',
    }),
    launchChromium(),
  ]);
  // The snippets run from a scratch folder that sees the project's packages.
  scratch = mkdtempSync(path.join(tmpdir(), 'maya-snippets-'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(scratch, 'node_modules'));
}, 120_000);
afterAll(async () => {
  await browsing?.close();
  await maya?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The number in the text of the Monitor card `title` that `pattern` picks out. */
async function cardNumber(page: Page, title: string, pattern: RegExp): Promise<number> {
  const text = (await page.getByRole('region', { name: title }).textContent()) ?? '';
  const match = pattern.exec(text);
  if (!match) throw new Error(`${title}: no ${pattern} in ${JSON.stringify(text)}`);
  return Number(match[1]!.replaceAll(',', ''));
}

describe('Monitor', () => {
  it('its numbers move after a request, within seconds and without a reload', async () => {
    const { page } = await browsing.open();
    await page.goto(`${maya.origin}/#monitor`);
    await page.getByRole('region', { name: 'Decode' }).waitFor();
    const decoded = await cardNumber(page, 'Decode', /([\d,]+) tokens generated in all/);
    const entries = await cardNumber(page, 'Response store', /^Response store([\d,]+)/);
    const runs = await cardNumber(page, 'Time to first token', /over ([\d,]+) runs/);
    const res = await fetch(`${maya.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', store: true }),
    });
    const { usage } = (await res.json()) as { usage: { output_tokens: number } };
    await expect
      .poll(() => cardNumber(page, 'Decode', /([\d,]+) tokens generated in all/), { timeout: 10_000 })
      .toBeGreaterThanOrEqual(decoded + usage.output_tokens - 1); // the first token comes from the prefill step
    await expect.poll(() => cardNumber(page, 'Response store', /^Response store([\d,]+)/)).toBe(entries + 1);
    await expect.poll(() => cardNumber(page, 'Time to first token', /over ([\d,]+) runs/)).toBe(runs + 1);
    expect(await page.getByRole('region', { name: 'Time to first token' }).textContent()).toMatch(
      /mean [\d.,]+ m?s over/,
    );
    // The decode chart drew the burst: some point of its line is above the baseline (y = 70 of 72).
    const line = page.getByRole('region', { name: 'Decode' }).locator('path.chart-line');
    const heights = async () =>
      [...((await line.getAttribute('d')) ?? '').matchAll(/,([\d.]+)/g)].map((m) => Number(m[1]));
    await expect.poll(async () => Math.min(...(await heights()))).toBeLessThan(70);
    expect(await cardNumber(page, 'Memory (RSS)', /^Memory \(RSS\)([\d.,]+) MiB/)).toBeGreaterThan(10);
    expect(await page.getByRole('region', { name: 'Event-loop lag' }).textContent()).toMatch(/[\d.]+ m?s/);
    await page.close();
  });
});

describe('sections a later server adds', () => {
  it('a /v1/status section the page does not know (speculative decoding, MCP) appears on the Monitor and beside the chat', async () => {
    // The page is what is tested here: the server's real status, with two sections added in transit.
    const { page } = await browsing.open();
    await page.route('**/v1/status', async (route) => {
      const response = await route.fetch();
      const status = (await response.json()) as Record<string, unknown>;
      const extended = {
        ...status,
        speculative: { draft_tokens: 120, accepted_tokens: 87, acceptance_rate: 0.725 },
        mcp: { servers: [{ name: 'files', tools: 3 }] },
      };
      await route.fulfill({ response, json: extended });
    });
    await page.goto(`${maya.origin}/#monitor`);
    const card = page.getByRole('region', { name: 'Speculative' });
    await card.waitFor();
    expect(await card.textContent()).toBe('SpeculativeDraft tokens120Accepted tokens87Acceptance rate0.725');
    await page.getByRole('tab', { name: 'Chat' }).click();
    expect(
      await page
        .getByRole('complementary', { name: 'Request options' })
        .getByRole('region', { name: 'MCP' })
        .textContent(),
    ).toBe('MCPServersfiles');
    await page.close();
  });
});

describe('About', () => {
  it('shows the model, the engine, the version and the non-default settings, secrets hidden', async () => {
    const { page } = await browsing.open();
    await page.goto(`${maya.origin}/#about`);
    const fact = async (section: string, term: string) =>
      (
        await page
          .getByRole('region', { name: section })
          .locator('div', { has: page.getByText(term, { exact: true }) })
          .locator('dd')
          .first()
          .textContent()
      )?.trim();
    await page.getByRole('region', { name: 'Model' }).waitFor();
    const status = (await (await fetch(`${maya.origin}/v1/status`)).json()) as {
      engine: { parameters: number; simd: string; threads: number };
    };
    expect(await fact('Model', 'Model')).toBe('maya-demo');
    expect(await fact('Model', 'Architecture')).toBe('glm4');
    expect(await fact('Model', 'Dialect')).toBe('glm45');
    expect(await fact('Model', 'Context')).toBe('8,192 tokens');
    expect(await fact('Model', 'Vision')).toBe('no');
    expect(await fact('Model', 'Parameters')).toContain(status.engine.parameters.toLocaleString('en-US'));
    expect(await fact('Engine', 'Backend')).toBe('cpu');
    expect(await fact('Engine', 'SIMD path')).toBe(status.engine.simd);
    expect(await fact('Engine', 'Threads')).toBe(String(status.engine.threads));
    expect(await fact('Engine', 'Weight dtype')).toBe('bf16');
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await fact('Server', 'Version')).toBe(version);
    expect(await fact('Server', 'MAYA_GLM_RESPONSES_ENCRYPTED_REASONING')).toBe('on');
    expect(await fact('Server', 'MAYA_GLM_RESPONSES_REASONING_KEY')).toBe('(hidden)');
    // The engine's settings (config/engine-settings.ts) are listed too; a count named ..._TOKENS is no secret.
    expect(await fact('Server', 'MAYA_ENGINE_BACKEND')).toBe('cpu');
    expect(await fact('Server', 'MAYA_CUDA_TC_MIN_TOKENS')).toBe('64');
    expect(await page.content()).not.toContain(REASONING_KEY);
    await page.close();
  });

  it("the client snippets are the README's tested settings with this address and model, copy as shown, and run", async () => {
    const { page } = await browsing.open();
    await page.goto(`${maya.origin}/#about`);
    const base = `${maya.origin}/v1`;
    const snippet = async (client: string) => {
      await page.getByRole('group', { name: 'Client' }).getByRole('button', { name: client }).click();
      const code = (await page.locator('[data-snippet]').textContent())!;
      await page.getByRole('button', { name: `Copy the ${client} snippet` }).click();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code);
      return code;
    };
    // Each client's settings as the README's Clients table gives them, found there verbatim.
    const settings: Record<string, string[]> = {
      'OpenAI SDK (Node)': ["new OpenAI({ baseURL: 'http://127.0.0.1:8080/v1', apiKey })", 'store: true'],
      'Vercel AI SDK': [
        "createOpenAI({ baseURL: 'http://127.0.0.1:8080/v1', apiKey })",
        "openai('maya-demo')",
        'providerOptions: { openai: { store: false } }',
      ],
      'LangChain.js': [
        "new ChatOpenAI({ model: 'maya-demo', apiKey, configuration: { baseURL: 'http://127.0.0.1:8080/v1' } })",
      ],
      'OpenAI Agents SDK': [
        "setDefaultOpenAIClient(new OpenAI({ baseURL: 'http://127.0.0.1:8080/v1', apiKey }))",
        "setOpenAIAPI('responses')",
        'setTracingDisabled(true)',
        'modelSettings: { store: true }',
      ],
    };
    for (const [client, needed] of Object.entries(settings)) {
      const code = await snippet(client);
      for (const setting of needed) {
        expect(CLIENTS, `README Clients section: ${setting}`).toContain(setting);
        expect(code, `${client}: ${setting}`).toContain(setting.replaceAll(README_BASE, base));
      }
      const file = path.join(scratch, `${client.replace(/\W+/g, '-')}.mjs`);
      writeFileSync(file, code);
      const { stdout } = await run(process.execPath, [file], {
        cwd: scratch,
        timeout: 90_000,
        env: { ...process.env, MAYA_API_KEY: '' },
      });
      expect(stdout.trim().length, `${client} printed an answer`).toBeGreaterThan(0);
      if (client === 'OpenAI SDK (Node)') expect(stdout).toContain('73');
    }
    // curl: the README's request, on this server.
    const curl = await snippet('curl');
    expect(curl).toContain(`curl ${maya.origin}/v1/responses -H 'Content-Type: application/json'`);
    const { stdout } = await run('bash', ['-c', curl], { timeout: 60_000 });
    expect(stdout).toContain('event: response.completed');
    // Codex: the README's config block, setting for setting, with this server's /v1 and model.
    const settingsOf = (toml: string) =>
      toml
        .split('\n')
        .map((line) => line.replace(/#.*$/, '').replace(/\s+/g, ' ').trim())
        .filter((line) => line !== '');
    const readmeToml = /```toml\n([\s\S]*?)```/.exec(CLIENTS)![1]!;
    expect(settingsOf(await snippet('Codex CLI ($CODEX_HOME/config.toml)'))).toEqual(
      settingsOf(readmeToml.replaceAll(README_BASE, base)),
    );
    await page.close();
  }, 240_000);
});
