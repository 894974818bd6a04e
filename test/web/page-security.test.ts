/**
 * The page's security in Debian's Chromium against `maya serve` on the demo model: the
 * Content-Security-Policy forbids inline script and the page itself has none; in a
 * whole session (chat with tools and a schema, Monitor, About, copying a snippet) every request
 * the page makes goes to this server; MAYA_WEB=off takes the page away (`/` answers 404 as before).
 */
import { describe, expect, it } from 'vitest';
import { requestedUrls, sendMessage, startMaya, waitForAnswers, withMayaAndChromium } from './browser.ts';

const web = withMayaAndChromium();

describe('Content-Security-Policy', () => {
  it('the page is served under a policy without inline script, and has none', async () => {
    const { page } = await web.browsing.open();
    const response = (await page.goto(`${web.maya.origin}/`))!;
    const csp = response.headers()['content-security-policy']!;
    const directives = Object.fromEntries(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['connect-src']).toEqual(["'self'"]);
    expect(directives['style-src']).toEqual(["'self'"]);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await response.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/assets\/[^"]+\.js"/);
      expect(body!.trim()).toBe('');
    }
    expect(html).not.toMatch(/\son[a-z]+=|<style|\sstyle=/i);
    await page.close();
  });

  it('Chromium enforces it: an injected inline script and an inline event handler do not run, and are reported', async () => {
    const { page } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    await page.getByLabel('Message', { exact: true }).waitFor();
    const result = await page.evaluate(async () => {
      const violations: string[] = [];
      document.addEventListener('securitypolicyviolation', (e) => violations.push(e.effectiveDirective));
      const script = document.createElement('script');
      script.textContent = 'window.inlineRan = true';
      document.body.append(script);
      const button = document.createElement('button');
      button.setAttribute('onclick', 'window.handlerRan = true');
      document.body.append(button);
      button.click();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const flags = window as unknown as { inlineRan?: boolean; handlerRan?: boolean };
      return { inlineRan: flags.inlineRan ?? false, handlerRan: flags.handlerRan ?? false, violations };
    });
    expect(result.inlineRan).toBe(false);
    expect(result.handlerRan).toBe(false);
    expect(result.violations.sort()).toEqual(['script-src-attr', 'script-src-elem']);
    await page.close();
  });
});

describe('requests', () => {
  it('in a whole session the page loads nothing from another host', async () => {
    const { page, requests } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    await page.getByLabel('Function tools', { exact: true }).check();
    await sendMessage(page, "What's the weather in Paris?");
    await waitForAnswers(page, 1);
    await page.getByLabel('Result of get_weather').fill('{"temperature": 21}');
    await page.getByRole('button', { name: 'Send result' }).click();
    await waitForAnswers(page, 2);
    await page.getByLabel('Function tools', { exact: true }).uncheck();
    await page.getByLabel('JSON schema output').check();
    await sendMessage(page, 'Create a record with name Alice and age 30.');
    await waitForAnswers(page, 3);
    await page.getByRole('tab', { name: 'Monitor' }).click();
    await page.getByRole('region', { name: 'Decode' }).waitFor();
    await page.waitForTimeout(2500);
    await page.getByRole('tab', { name: 'About' }).click();
    await page.getByRole('button', { name: 'Copy the curl snippet' }).click();
    await page.reload();
    await page.getByRole('region', { name: 'Model' }).waitFor();
    const urls = requestedUrls(requests, web.maya.origin);
    expect(
      urls.filter((url) => !url.startsWith('/')),
      'requests that left the server',
    ).toEqual([]);
    const kinds = new Set(urls.map((url) => url.replace(/\/assets\/.*/, '/assets/*').replace(/resp_\w+/, 'ID')));
    expect([...kinds].sort()).toEqual(['/', '/assets/*', '/metrics/prometheus', '/v1/responses', '/v1/status']);
    await page.close();
  });
});

describe('MAYA_WEB', () => {
  it('maya serve logs the page address; with MAYA_WEB=off it prints none and / answers 404 as before', async () => {
    expect(web.maya.output()).toContain(`"message":"web page at ${web.maya.origin}/"`);
    const off = await startMaya({ MAYA_WEB: 'off' });
    try {
      expect(off.output()).not.toContain('web page');
      const res = await fetch(`${off.origin}/`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-security-policy')).toBeNull();
      expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
      expect((await fetch(`${off.origin}/health`)).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});
