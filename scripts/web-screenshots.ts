/**
 * Takes the README's screenshots of the web page (docs/web-chat.png, docs/web-monitor.png,
 * docs/web-about.png): `maya serve` on the demo model, Debian's Chromium through the test
 * harness (test/web/browser.ts); the Monitor during half a minute of requests, a short
 * conversation with a tool call, then About.
 * Usage: npm run web:screenshots [-- --out DIR] [-- --dark]   (needs web/dist built and Chromium provisioned)
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launchChromium, startMaya } from '../test/web/browser.ts';
import { ROOT } from '../test/e2e/start-demo-service.ts';

const { values } = parseArgs({ options: { out: { type: 'string' }, dark: { type: 'boolean' } } });
const out = path.resolve(values.out ?? path.join(ROOT, 'docs'));
mkdirSync(out, { recursive: true });

const maya = await startMaya();
const browsing = await launchChromium();
try {
  const { page } = await browsing.open({ colorScheme: values.dark ? 'dark' : 'light' });
  await page.setViewportSize({ width: 1360, height: 860 });
  // Monitor first: half a minute of traffic from a few clients, so its charts have a story.
  await page.goto(`${maya.origin}/#monitor`);
  await page.getByRole('region', { name: 'Decode' }).waitFor();
  const prompts = ['Hello', 'Remember the value 73', 'Create a record with name Alice and age 30.', 'Hi there'];
  const ask = (input: string) =>
    fetch(`${maya.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input, store: true }),
    }).then((res) => res.json());
  const until = Date.now() + 40_000;
  const traffic = Promise.all(
    [0, 1, 2].map(async (client) => {
      for (let i = client; Date.now() < until; i++) {
        await ask(prompts[i % prompts.length]!);
        await new Promise((resolve) => setTimeout(resolve, 400 + 300 * client));
      }
    }),
  );
  await page.waitForTimeout(35_000); // the picture is taken while the requests still come
  await page.screenshot({ path: path.join(out, 'web-monitor.png') });
  await traffic;
  // Chat: a greeting, then a tool call answered by hand.
  await page.getByRole('tab', { name: 'Chat' }).click();
  const message = page.getByLabel('Message', { exact: true });
  await message.fill('Hello');
  await message.press('Enter');
  await page
    .getByText(/\d+ tokens$/)
    .first()
    .waitFor();
  await page.getByLabel('Function tools', { exact: true }).check();
  await message.fill("What's the weather in Paris?");
  await message.press('Enter');
  await page.getByLabel('Result of get_weather').fill('{"city": "Paris", "temperature": 21, "condition": "sunny"}');
  await page.getByRole('button', { name: 'Send result' }).click();
  await page
    .locator('.message.assistant')
    .nth(2)
    .getByText(/\d+ tokens$/)
    .waitFor();
  await page.locator('details.reasoning summary').nth(1).click();
  await page.screenshot({ path: path.join(out, 'web-chat.png') });
  await page.setViewportSize({ width: 1360, height: 960 });
  await page.getByRole('tab', { name: 'About' }).click();
  await page.getByRole('button', { name: 'OpenAI SDK (Node)' }).click();
  await page.screenshot({ path: path.join(out, 'web-about.png') });
  process.stdout.write(`web-screenshots: wrote ${out}/web-{chat,monitor,about}.png\n`);
} finally {
  await browsing.close();
  await maya.stop();
}
