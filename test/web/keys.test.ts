/**
 * API keys, in Debian's Chromium against `maya serve` with MAYA_API_KEYS: the page's files load
 * without a key and hold no data; the page asks for a key, shows the API's own 401 for a wrong
 * one, keeps the right one in session storage only and sends it with every API call.
 */
import { describe, expect, it } from 'vitest';
import { requestedUrls, sendMessage, waitForAnswers, withMayaAndChromium } from './browser.ts';
import { contrastProblems } from './accessibility.ts';

const KEY = 'sk-maya-web-right-key';

const web = withMayaAndChromium({ MAYA_API_KEYS: `sk-other,${KEY}` });

describe('with MAYA_API_KEYS', () => {
  it('the static files need no key and hold no data', async () => {
    const { page, requests } = await web.browsing.open();
    const answers: { path: string; status: number; authorization?: string; body: string }[] = [];
    // Each answer is read while the page is open: the reads are awaited before the checks (a read
    // still pending when the page closed was an unhandled rejection).
    const reads: Promise<void>[] = [];
    page.on('response', (response) => {
      const path = new URL(response.url()).pathname;
      if (path === '/' || path.startsWith('/assets/'))
        reads.push(
          (async () => {
            answers.push({
              path,
              status: response.status(),
              authorization: (await response.request().allHeaders()).authorization,
              body: await response.text(),
            });
          })(),
        );
    });
    await page.goto(`${web.maya.origin}/`);
    await page.getByLabel('API key').waitFor();
    await page.waitForLoadState('networkidle');
    await Promise.all(reads);
    expect(
      requestedUrls(requests, web.maya.origin).filter((p) => p === '/' || p.startsWith('/assets/')).length,
    ).toBeGreaterThanOrEqual(3);
    expect(answers.every((a) => a.status === 200 && a.authorization === undefined)).toBe(true);
    for (const { path, body } of answers) {
      expect(body, path).not.toContain('maya-demo');
      expect(body, path).not.toContain(KEY);
    }
    await page.close();
  });

  it('a wrong key shows the API 401 as the API gives it; the right one works and goes with every call', async () => {
    const { context, page, requests } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    const field = page.getByLabel('API key');
    await field.fill('sk-wrong');
    await field.press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const direct = await fetch(`${web.maya.origin}/v1/status`, { headers: { authorization: 'Bearer sk-wrong' } });
    const { error } = (await direct.json()) as { error: { message: string; type: string; code: string } };
    expect(direct.status).toBe(401);
    expect(await alert.locator('.error-message').textContent()).toBe(error.message);
    expect(await alert.locator('.error-facts').textContent()).toBe(`HTTP 401 · ${error.type} · code ${error.code}`);
    expect(await contrastProblems(page)).toEqual([]);
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Continue' }).click();
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 1);
    expect(await page.locator('.message.assistant .status').textContent()).toMatch(/^\d+ tokens$/);
    await page.getByRole('tab', { name: 'Monitor' }).click();
    await page.getByRole('region', { name: 'Decode' }).waitFor();
    const api = requests.filter((r) => new URL(r.url()).pathname.startsWith('/v1/'));
    const headers = await Promise.all(
      api.map(async (r) => [new URL(r.url()).pathname, (await r.allHeaders()).authorization]),
    );
    const afterKey = headers.slice(headers.findIndex(([, auth]) => auth === `Bearer ${KEY}`));
    expect(afterKey.length).toBeGreaterThanOrEqual(3);
    expect(
      afterKey.every(([, auth]) => auth === `Bearer ${KEY}`),
      JSON.stringify(afterKey),
    ).toBe(true);
    expect(afterKey.map(([p]) => p)).toEqual(expect.arrayContaining(['/v1/status', '/v1/responses']));
    // Session storage only: not in local storage, and a new session (another context) asks again.
    const stores = await page.evaluate(() => ({
      session: { ...sessionStorage },
      local: JSON.stringify({ ...localStorage }),
    }));
    expect(Object.values(stores.session)).toContain(KEY);
    expect(stores.local).not.toContain(KEY);
    await context.close();
    const fresh = await web.browsing.open();
    await fresh.page.goto(`${web.maya.origin}/`);
    await fresh.page.getByLabel('API key').waitFor();
    expect(await fresh.page.getByRole('alert').count()).toBe(0);
    await fresh.page.close();
  });
});
