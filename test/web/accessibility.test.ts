/**
 * Accessibility basics in Debian's Chromium against `maya serve` on the demo model: every control
 * has a name in Chromium's accessibility tree, the page works from the keyboard alone (with a
 * visible focus indicator), and every text meets WCAG AA contrast in the light and dark schemes,
 * on each tab, with the chat showing reasoning, a tool call, JSON output and an API error.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { sendMessage, waitForAnswers, withMayaAndChromium } from './browser.ts';
import { contrastProblems, controls } from './accessibility.ts';

const web = withMayaAndChromium();

/** Chat: reasoning (opened) and a tool call awaiting its result; checks the controls and contrast. */
async function checkChat(page: Page): Promise<void> {
  await page.goto(`${web.maya.origin}/`);
  await sendMessage(page, 'Hello');
  await waitForAnswers(page, 1);
  await page.locator('details.reasoning summary').first().click();
  await page.getByLabel('Function tools', { exact: true }).check();
  await sendMessage(page, "What's the weather in Paris?");
  await waitForAnswers(page, 2);
  await page.getByLabel('Result of get_weather').waitFor();
  const chat = await controls(page);
  expect(unnamed(chat), 'unnamed controls on Chat').toEqual([]);
  expect(chat).toEqual(
    expect.arrayContaining([
      { role: 'tab', name: 'Chat' },
      { role: 'textbox', name: 'Message' },
      { role: 'button', name: 'New chat' },
      { role: 'button', name: 'Rename Hello' },
      { role: 'button', name: 'Delete Hello' },
      { role: 'combobox', name: 'Reasoning effort' },
      { role: 'spinbutton', name: 'Max output tokens' },
      { role: 'checkbox', name: 'Function tools' },
      { role: 'textbox', name: 'Function tools (JSON array)' },
      { role: 'textbox', name: 'Result of get_weather' },
    ]),
  );
  expect(await contrastProblems(page), 'contrast on Chat').toEqual([]);
  // A new conversation with JSON output (a code block) and an API error.
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByLabel('Function tools', { exact: true }).uncheck();
  await page.getByLabel('JSON schema output').check();
  await sendMessage(page, 'Create a record with name Alice and age 30.');
  await waitForAnswers(page, 1);
  await page.getByLabel('JSON schema output').uncheck();
  await page.getByLabel('Function tools', { exact: true }).check();
  await page.getByLabel('Function tools (JSON array)').fill('[{"type": "web_search"}]');
  await sendMessage(page, 'Hello');
  await waitForAnswers(page, 2);
  await page.getByRole('alert').first().waitFor();
  const later = await controls(page);
  expect(unnamed(later), 'unnamed controls on Chat').toEqual([]);
  expect(later).toEqual(expect.arrayContaining([{ role: 'button', name: 'Copy json' }]));
  expect(await contrastProblems(page), 'contrast on Chat').toEqual([]);
}

const unnamed = (list: { role: string; name: string }[]) => list.filter((c) => c.name === '');

async function checkMonitorAndAbout(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Monitor' }).click();
  await page.getByRole('region', { name: 'Decode' }).waitFor();
  await page.waitForTimeout(2500);
  expect(unnamed(await controls(page)), 'unnamed controls on Monitor').toEqual([]);
  expect(await page.getByRole('img', { name: /^Decode over the last minutes: / }).count()).toBe(1);
  expect(await contrastProblems(page), 'contrast on Monitor').toEqual([]);
  await page.getByRole('tab', { name: 'About' }).click();
  await page.getByRole('region', { name: 'Model' }).waitFor();
  const about = await controls(page);
  expect(unnamed(about), 'unnamed controls on About').toEqual([]);
  expect(about).toEqual(expect.arrayContaining([{ role: 'button', name: 'Copy the curl snippet' }]));
  expect(await contrastProblems(page), 'contrast on About').toEqual([]);
}

describe('accessibility', () => {
  it('light scheme: named controls and readable contrast on every tab', async () => {
    const { page } = await web.browsing.open({ colorScheme: 'light' });
    await checkChat(page);
    await checkMonitorAndAbout(page);
    await page.close();
  }, 120_000);

  it('dark scheme: named controls and readable contrast on every tab', async () => {
    const { page } = await web.browsing.open({ colorScheme: 'dark' });
    await page.goto(`${web.maya.origin}/`);
    expect(await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe(
      'rgb(17, 18, 24)',
    );
    await checkChat(page);
    await checkMonitorAndAbout(page);
    await page.close();
  }, 120_000);

  it('the checks can fail: a faint text and a button without a name are found', async () => {
    const { page } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    await page.getByLabel('Message', { exact: true }).waitFor();
    expect(await contrastProblems(page)).toEqual([]);
    await page.evaluate(() => {
      const faint = document.createElement('p');
      faint.textContent = 'faint words';
      faint.style.color = '#b0b0b0'; // 2.1:1 on white
      const bare = document.createElement('button');
      bare.append(document.createElement('span'));
      document.querySelector('.thread')!.append(faint, bare);
    });
    expect(await contrastProblems(page)).toEqual([expect.stringMatching(/^2\.\d\d: "faint words"/)]);
    expect((await controls(page)).filter((c) => c.name === '')).toEqual([{ role: 'button', name: '' }]);
    await page.close();
  });

  it('works from the keyboard alone, with a visible focus indicator', async () => {
    const { page } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    await page.getByLabel('Message', { exact: true }).waitFor();
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement;
        const style = getComputedStyle(el);
        return {
          label: el.getAttribute('aria-label') ?? el.id ?? '',
          text: el.textContent?.trim() ?? '',
          role: el.getAttribute('role') ?? el.tagName.toLowerCase(),
          isOutlined: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
        };
      });
    // The first stop is the selected tab; arrows move between tabs and show their panels.
    await page.keyboard.press('Tab');
    expect(await focused()).toMatchObject({ role: 'tab', text: 'Chat', isOutlined: true });
    await page.keyboard.press('ArrowRight');
    expect(await focused()).toMatchObject({ role: 'tab', text: 'Monitor' });
    await page.getByRole('region', { name: 'Decode' }).waitFor();
    await page.keyboard.press('End');
    expect(await focused()).toMatchObject({ role: 'tab', text: 'About' });
    await page.getByRole('region', { name: 'Model' }).waitFor();
    await page.keyboard.press('Home');
    expect(await page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected')).toBe('true');
    // Tab on to the message box, every stop visibly focused, and chat.
    const stops: string[] = [];
    for (let i = 0; i < 15 && (await focused()).label !== 'message'; i++) {
      await page.keyboard.press('Tab');
      const now = await focused();
      expect(now.isOutlined, `focus indicator on ${now.text || now.label}`).toBe(true);
      stops.push(now.text || now.label);
    }
    expect(stops.at(-1)).toBe('message');
    await page.keyboard.type('Hello');
    await page.keyboard.press('Enter');
    await waitForAnswers(page, 1);
    // Shift+Tab back to the answer's reasoning, and open it with Enter.
    for (let i = 0; i < 10 && (await page.evaluate(() => document.activeElement?.tagName)) !== 'SUMMARY'; i++)
      await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    expect(await page.locator('details.reasoning').getAttribute('open')).toBe('');
    // Options from the keyboard: the effort select takes arrow keys.
    await page.getByLabel('Reasoning effort').focus();
    await page.keyboard.press('ArrowDown');
    expect(await page.getByLabel('Reasoning effort').inputValue()).toBe('high');
    await page.close();
  }, 120_000);
});
