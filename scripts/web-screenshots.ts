/**
 * Takes the README's screenshots of the web page (docs/web-chat.png, docs/web-monitor.png,
 * docs/web-about.png): `maya serve` on the demo model, Debian's Chromium through the test
 * harness (test/web/browser.ts), a short conversation with a tool call, then each tab.
 * Usage: npm run web:screenshots [-- --out DIR]   (needs web/dist built and Chromium provisioned)
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launchChromium, startMaya } from '../test/web/browser.ts';
import { ROOT } from '../test/e2e/start-demo-service.ts';

const { values } = parseArgs({ options: { out: { type: 'string' } } });
const out = path.resolve(values.out ?? path.join(ROOT, 'docs'));
mkdirSync(out, { recursive: true });

const maya = await startMaya();
const browsing = await launchChromium();
try {
  const { page } = await browsing.open();
  await page.setViewportSize({ width: 1360, height: 860 });
  await page.goto(`${maya.origin}/#chat`);
  const message = page.getByLabel('Message', { exact: true });
  await message.fill('Hello');
  await message.press('Enter');
  await page
    .getByText(/\d+ tokens$/)
    .first()
    .waitFor();
  await page.getByLabel('Function tools').check();
  await message.fill("What's the weather in Paris?");
  await message.press('Enter');
  await page.getByLabel('Result of get_weather').waitFor();
  await page.getByLabel('Result of get_weather').fill('{"city": "Paris", "temperature": 21, "condition": "sunny"}');
  await page.getByRole('button', { name: 'Send result' }).click();
  await page
    .locator('.message.assistant')
    .nth(2)
    .getByText(/\d+ tokens$/)
    .waitFor();
  await page.screenshot({ path: path.join(out, 'web-chat.png') });
  await page.getByRole('tab', { name: 'Monitor' }).click();
  await page.waitForTimeout(6000);
  await page.screenshot({ path: path.join(out, 'web-monitor.png') });
  await page.getByRole('tab', { name: 'About' }).click();
  await page.getByRole('button', { name: 'OpenAI SDK (Node)' }).click();
  await page.screenshot({ path: path.join(out, 'web-about.png'), fullPage: true });
  process.stdout.write(`web-screenshots: wrote ${out}/web-{chat,monitor,about}.png\n`);
} finally {
  await browsing.close();
  await maya.stop();
}
