/**
 * Pictures in the Chat tab, in Debian's Chromium against `maya serve` on the glm4v-tiny fixture (a
 * checkpoint with a vision encoder): /v1/status says vision, so the page offers the picture
 * button; the chosen PNG goes out as an input_image data URL and the server answers from it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GLM4V_TINY, responseRequests, sendMessage, waitForAnswers, withMayaAndChromium } from './browser.ts';

const PNG = path.join(GLM4V_TINY, '../glm4v-tiny-image.png');

const web = withMayaAndChromium({}, ['--model', GLM4V_TINY]);

describe('Chat on a vision model', () => {
  it('attaches a picture, sends it as an input_image, and the model answers from it', async () => {
    const { page, requests } = await web.browsing.open();
    await page.goto(`${web.maya.origin}/`);
    const attach = page.getByRole('button', { name: 'Attach picture' });
    await attach.waitFor();
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), attach.click()]);
    await chooser.setFiles(PNG);
    const preview = page
      .getByRole('list', { name: 'Attached pictures' })
      .getByRole('img', { name: 'glm4v-tiny-image.png' });
    await preview.waitFor();
    await sendMessage(page, 'What is in this image?');
    await waitForAnswers(page, 1);
    const status = await page.locator('.message.assistant .status').textContent();
    expect(status).toMatch(/^\d+ tokens$/);
    const [body] = responseRequests(requests);
    const dataUrl = `data:image/png;base64,${readFileSync(PNG).toString('base64')}`;
    expect(body!.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_image', image_url: dataUrl },
          { type: 'input_text', text: 'What is in this image?' },
        ],
      },
    ]);
    // The server stored the turn with the picture, which took prompt tokens of its own.
    const id = (await page.locator('.message.assistant').getAttribute('data-response-id'))!;
    const items = (await (await fetch(`${web.maya.origin}/v1/responses/${id}/input_items`)).json()) as {
      data: { content: { type: string }[] }[];
    };
    expect(items.data[0]!.content.map((part) => part.type)).toEqual(['input_image', 'input_text']);
    const stored = (await (await fetch(`${web.maya.origin}/v1/responses/${id}`)).json()) as {
      usage: { input_tokens: number };
    };
    const plain = await fetch(`${web.maya.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'What is in this image?', max_output_tokens: 16 }),
    });
    const textOnly = (await plain.json()) as { usage: { input_tokens: number } };
    expect(plain.status, JSON.stringify(textOnly)).toBe(200);
    expect(stored.usage.input_tokens).toBeGreaterThan(textOnly.usage.input_tokens);
    const shown = page.locator('.message.user img.thumbnail');
    expect(await shown.getAttribute('src')).toBe(dataUrl);
    expect(await page.getByRole('list', { name: 'Attached pictures' }).count()).toBe(0);
    await page.close();
  });
});
