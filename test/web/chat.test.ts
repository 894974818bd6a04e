/**
 * The Chat tab in Debian's Chromium against `maya serve` on the demo model: streamed answers with
 * their reasoning, multi-turn state through previous_response_id, Stop, tools answered with
 * function_call_output, json_schema, regenerate and edit, the conversation list, API errors as
 * the API gives them, and markdown that cannot inject markup.
 */
import { describe, expect, it } from 'vitest';
import type { Page, Request } from 'playwright-core';
import { responseRequests, sendMessage, waitForAnswers, withMayaAndChromium } from './browser.ts';

const web = withMayaAndChromium();

async function openChat(): Promise<{ page: Page; requests: Request[] }> {
  const { page, requests } = await web.browsing.open();
  await page.goto(`${web.maya.origin}/`);
  await page.getByLabel('Message', { exact: true }).waitFor();
  return { page, requests };
}

const answer = (page: Page, index: number) => page.locator('.message.assistant').nth(index);

/** The stored response the server keeps for `id` (GET /v1/responses/{id}). */
async function stored(
  id: string,
): Promise<{ output_text?: string; output: { type: string; content?: { text: string }[] }[] }> {
  const res = await fetch(`${web.maya.origin}/v1/responses/${id}`);
  expect(res.status).toBe(200);
  return res.json();
}

function textOf(response: Awaited<ReturnType<typeof stored>>): string {
  return response.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content ?? [])
    .map((part) => part.text)
    .join('');
}

describe('Chat', () => {
  it('"Hello": the answer streams in, with its reasoning in a block that is open while it streams', async () => {
    const { page, requests } = await openChat();
    // The stream reaches the page at 4 kB/s (about four seconds for this answer), so each event
    // lands apart from the next however busy the machine is and the page's rendering can be seen.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 4000,
      uploadThroughput: -1,
    });
    // Watch the thread from the first mutation on: each answer text and reasoning state seen.
    await page.evaluate(() => {
      const seen: { text: number; reasoning: number; reasoningOpen: boolean; busy: boolean }[] = [];
      (window as unknown as { seen: typeof seen }).seen = seen;
      new MutationObserver(() => {
        const message = document.querySelector('.message.assistant');
        if (!message) return;
        seen.push({
          text: message.querySelector('.markdown')?.textContent?.length ?? 0,
          reasoning: message.querySelector('.reasoning-text')?.textContent?.length ?? 0,
          reasoningOpen: message.querySelector('details.reasoning')?.hasAttribute('open') ?? false,
          busy: message.hasAttribute('aria-busy'),
        });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 1);
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    type Seen = { text: number; reasoning: number; reasoningOpen: boolean; busy: boolean };
    const seen = (await page.evaluate(() => (window as unknown as { seen: Seen[] }).seen)).filter((s) => s.busy);
    const reasoningSteps = new Set(seen.filter((s) => s.reasoning > 0 && s.text === 0).map((s) => s.reasoning));
    const textSteps = new Set(seen.filter((s) => s.text > 0).map((s) => s.text));
    expect(reasoningSteps.size, 'the reasoning grew in several steps while streaming').toBeGreaterThan(2);
    // The answer is a few tokens: seen at least once before the stream ended (on a loaded machine
    // the page may draw its deltas in one frame).
    expect(textSteps.size, 'the answer showed while still streaming').toBeGreaterThan(0);
    expect(
      seen.filter((s) => s.reasoning > 0 && s.text === 0).every((s) => s.reasoningOpen),
      'the reasoning block was open while the reasoning streamed',
    ).toBe(true);
    const [body] = responseRequests(requests);
    expect(body).toMatchObject({
      model: 'maya-demo',
      input: [{ role: 'user', content: 'Hello' }],
      stream: true,
      store: true,
      reasoning: { effort: 'medium' },
    });
    expect(body).not.toHaveProperty('previous_response_id');
    const first = answer(page, 0);
    const text = (await first.locator('.markdown').textContent())!.trim();
    expect(text.length).toBeGreaterThan(0);
    await expect.poll(() => first.locator('.status').textContent()).toMatch(/^\d+ tokens$/);
    // Finished: the block folds away, and opens on a click to show the reasoning.
    const reasoning = first.locator('details.reasoning');
    expect(await reasoning.getAttribute('open')).toBeNull();
    await reasoning.locator('summary').click();
    expect(await reasoning.getAttribute('open')).toBe('');
    expect((await reasoning.locator('.reasoning-text').textContent())!.trim().length).toBeGreaterThan(0);
    await page.close();
  });

  it('the reasoning effort selector drives the request: none turns the reasoning off', async () => {
    const { page, requests } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('Reasoning effort').selectOption('none');
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 1);
    expect(responseRequests(requests)[0]).toMatchObject({ reasoning: { effort: 'none' } });
    expect(await answer(page, 0).locator('details.reasoning').count()).toBe(0);
    expect((await answer(page, 0).locator('.markdown').textContent())!.trim().length).toBeGreaterThan(0);
    await page.getByLabel('Reasoning effort').selectOption('high');
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 2);
    expect(responseRequests(requests)[1]).toMatchObject({ reasoning: { effort: 'high' } });
    expect(await answer(page, 1).locator('details.reasoning').count()).toBe(1);
    await page.getByLabel('Reasoning effort').selectOption('medium');
    await page.close();
  });

  it('continues the conversation: the second request carries the first answer as previous_response_id', async () => {
    const { page, requests } = await openChat();
    const ids: string[] = [];
    page.on('response', async (response) => {
      if (new URL(response.url()).pathname !== '/v1/responses') return;
      const created = /"type":"response.created".*?"id":"(resp_[^"]+)"/.exec(await response.text());
      if (created) ids.push(created[1]!);
    });
    await page.getByRole('button', { name: 'New chat' }).click();
    await sendMessage(page, 'Remember the value 73');
    await waitForAnswers(page, 1);
    await sendMessage(page, 'What value did I give you?');
    await waitForAnswers(page, 2);
    const [first, second] = responseRequests(requests);
    expect(first).not.toHaveProperty('previous_response_id');
    await expect.poll(() => ids.length).toBe(2);
    expect(second).toMatchObject({
      store: true,
      previous_response_id: ids[0],
      input: [{ role: 'user', content: 'What value did I give you?' }],
    });
    // The server continued from the stored first turn: the model read the value back.
    expect(await answer(page, 1).locator('.markdown').textContent()).toContain('73');
    expect(textOf(await stored(ids[1]!))).toBe((await answer(page, 1).locator('.markdown').textContent())!);
    await page.close();
  });

  it('Stop aborts the stream mid-way: the answer stays cut short and says so', async () => {
    const { page, requests } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    // A slow line to the page (the server generates at its own speed) keeps the stream open long
    // enough to press Stop while it is still arriving.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 600,
      uploadThroughput: -1,
    });
    const failed: string[] = [];
    page.on('requestfailed', (request) =>
      failed.push(`${request.method()} ${new URL(request.url()).pathname} ${request.failure()?.errorText}`),
    );
    await sendMessage(page, 'Hello');
    await page.locator('.message.assistant details.reasoning').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await waitForAnswers(page, 1);
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    expect(await answer(page, 0).locator('.status').textContent()).toBe('Stopped');
    expect(failed).toEqual(['POST /v1/responses net::ERR_ABORTED']);
    // The page is ready for the next message, which starts afresh (nothing was stored to continue).
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).count()).toBe(1);
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 2);
    expect(responseRequests(requests)[1]).not.toHaveProperty('previous_response_id');
    expect(await answer(page, 1).locator('.status').textContent()).toMatch(/^\d+ tokens$/);
    await page.close();
  });

  it('tools: a declared function is called with its arguments, the typed result goes back as function_call_output, and the final text uses it', async () => {
    const { page, requests } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('Function tools', { exact: true }).check();
    const editor = page.getByLabel('Function tools (JSON array)');
    expect(JSON.parse(await editor.inputValue())).toMatchObject([{ type: 'function', name: 'get_weather' }]);
    await sendMessage(page, "What's the weather in Paris?");
    await waitForAnswers(page, 1);
    const call = page.getByRole('region', { name: 'Tool call get_weather' });
    expect(JSON.parse((await call.getByLabel('Arguments of get_weather').textContent())!)).toMatchObject({
      city: 'Paris',
    });
    await call.getByLabel('Result of get_weather').fill('{"city": "Paris", "temperature": 21, "condition": "sunny"}');
    await call.getByRole('button', { name: 'Send result' }).click();
    await waitForAnswers(page, 2);
    expect(await answer(page, 1).locator('.markdown').textContent()).toMatch(/21/);
    const [first, second] = responseRequests(requests);
    expect(first).toMatchObject({ tools: [{ type: 'function', name: 'get_weather' }] });
    const sent = (second!.input as { type: string; call_id: string; output: string }[])[0]!;
    expect(sent).toMatchObject({
      type: 'function_call_output',
      output: '{"city": "Paris", "temperature": 21, "condition": "sunny"}',
    });
    expect(sent.call_id).toMatch(/^call_/);
    expect(second!.previous_response_id).toMatch(/^resp_/);
    expect(await call.locator('.tool-result pre').textContent()).toContain('"temperature": 21');
    await page.getByLabel('Function tools', { exact: true }).uncheck();
    await page.close();
  });

  it('json_schema: the answer is valid JSON matching the schema, shown as JSON', async () => {
    const { page, requests } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('JSON schema output').check();
    await page.getByLabel('Schema name').fill('person');
    await sendMessage(page, 'Create a record with name Alice and age 30.');
    await waitForAnswers(page, 1);
    const shown = (await answer(page, 0).locator('.code-block code').textContent())!;
    const value = JSON.parse(shown) as { name: unknown; age: unknown };
    expect(typeof value.name).toBe('string');
    expect(Number.isInteger(value.age)).toBe(true);
    expect(Object.keys(value).sort()).toEqual(['age', 'name']);
    expect(responseRequests(requests)[0]).toMatchObject({
      text: { format: { type: 'json_schema', name: 'person', strict: true, schema: { required: ['name', 'age'] } } },
    });
    await page.getByLabel('JSON schema output').uncheck();
    await page.close();
  });

  it('regenerate resends the last request; edit replaces the last message and resends from the same point', async () => {
    const { page, requests } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    await sendMessage(page, 'Remember the value 41');
    await waitForAnswers(page, 1);
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 2);
    await answer(page, 1).getByRole('button', { name: 'Regenerate' }).click();
    await waitForAnswers(page, 2);
    let sent = responseRequests(requests);
    expect(sent).toHaveLength(3);
    expect(sent[2]!.input).toEqual(sent[1]!.input);
    expect(sent[2]!.previous_response_id).toBe(sent[1]!.previous_response_id);
    expect(await page.locator('.message').count()).toBe(4);
    // Edit the last message: it is replaced, and the new request continues from the same answer.
    await page.locator('.message.user').last().getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Edit message').fill('What value did I give you?');
    await page.getByRole('button', { name: 'Send edited message' }).click();
    await waitForAnswers(page, 2);
    sent = responseRequests(requests);
    expect(sent[3]).toMatchObject({ input: [{ role: 'user', content: 'What value did I give you?' }] });
    expect(sent[3]!.previous_response_id).toBe(sent[1]!.previous_response_id);
    expect(await page.locator('.message.user .bubble').allTextContents()).toEqual([
      'Remember the value 41',
      'What value did I give you?',
    ]);
    expect(await answer(page, 1).locator('.markdown').textContent()).toContain('41');
    await page.close();
  });

  it('conversations are kept in the browser: listed, renamed, deleted and started anew', async () => {
    const { page } = await openChat();
    const list = page.getByRole('navigation', { name: 'Conversations' });
    await page.getByRole('button', { name: 'New chat' }).click();
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 1);
    // The list re-renders after each action (and after a reload): each read waits for the state.
    const titles = async () => list.locator('.conversation-open').allTextContents();
    await expect.poll(async () => (await titles())[0]).toBe('Hello');
    const count = (await titles()).length;
    await list.getByRole('button', { name: 'Rename Hello' }).first().click();
    const name = list.getByLabel('Conversation name');
    await name.fill('Greetings');
    await name.press('Enter');
    await expect.poll(async () => (await titles())[0]).toBe('Greetings');
    await page.reload();
    await expect.poll(async () => (await titles())[0]).toBe('Greetings');
    await expect.poll(() => page.locator('.message.assistant').count()).toBe(1);
    await list.getByRole('button', { name: 'Delete Greetings' }).click();
    await expect.poll(titles).not.toContain('Greetings');
    expect(await titles()).toHaveLength(count - 1);
    await page.reload();
    await expect.poll(async () => (await titles()).length).toBe(count - 1);
    expect(await titles()).not.toContain('Greetings');
    await page.getByRole('button', { name: 'New chat' }).click();
    await expect.poll(() => page.locator('.message').count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Chat with maya-demo' }).count()).toBe(1);
    // The demo model has no vision path: no picture button.
    expect(await page.getByRole('button', { name: 'Attach picture' }).count()).toBe(0);
    await page.close();
  });

  it('an API error is shown as the API gives it: message, status, type, code and param', async () => {
    const { page } = await openChat();
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('Function tools', { exact: true }).check();
    const tools = '[{"type": "web_search"}]';
    await page.getByLabel('Function tools (JSON array)').fill(tools);
    await sendMessage(page, 'Hello');
    await waitForAnswers(page, 1);
    const direct = await fetch(`${web.maya.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello', tools: JSON.parse(tools), stream: true, store: true }),
    });
    const { error } = (await direct.json()) as {
      error: { message: string; type: string; code: string; param: string };
    };
    expect(direct.status).toBe(400);
    const box = answer(page, 0).getByRole('alert');
    expect(await box.locator('.error-message').textContent()).toBe(error.message);
    expect(await box.locator('.error-facts').textContent()).toBe(
      `HTTP 400 · ${error.type} · code ${error.code} · param ${error.param}`,
    );
    // Invalid JSON in an editor is caught before sending, beside the editor.
    await page.getByLabel('Function tools (JSON array)').fill('[{');
    expect(await page.getByLabel('Function tools (JSON array)').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Function tools', { exact: true }).uncheck();
    await page.close();
  });
});

describe('markdown from the model', () => {
  it('renders code blocks and formatting, and never turns model text into markup or remote loads', async () => {
    const { page, requests } = await openChat();
    const hostile = [
      '# Title',
      'Some **bold** and `code` and [a link](https://example.org/docs) and [bad](javascript:window.pwned=1).',
      '<img src="http://example.invalid/x.png" onerror="window.pwned=1">',
      '<script>window.pwned = 1</script>',
      '![remote](http://example.invalid/track.png)',
      '',
      '```js',
      'console.log("<b>not bold</b>");',
      '```',
    ].join('\n');
    const conversation = {
      id: 'conv_hostile',
      title: 'Hostile',
      updatedAt: Date.now() + 60_000,
      messages: [
        { kind: 'user', id: 'msg_u', text: 'Show me', images: [] },
        {
          kind: 'assistant',
          id: 'msg_a',
          reasoning: '<b>thinking</b>',
          text: hostile,
          calls: [],
          status: 'completed',
          request: { input: [] },
        },
      ],
    };
    await page.evaluate((c) => {
      localStorage.setItem('maya.conversations.v1', JSON.stringify([c]));
      localStorage.setItem('maya.currentConversation.v1', c.id);
    }, conversation);
    await page.reload();
    const md = answer(page, 0).locator('.markdown');
    await md.waitFor();
    expect(await md.locator('h3').textContent()).toBe('Title');
    expect(await md.locator('strong').textContent()).toBe('bold');
    expect(
      await md
        .locator('a')
        .evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('rel')])),
    ).toEqual([['a link', 'https://example.org/docs', 'noopener noreferrer nofollow']]);
    expect(await md.locator('img, script, b').count()).toBe(0);
    expect(await md.textContent()).toContain('<img src="http://example.invalid/x.png" onerror="window.pwned=1">');
    expect(await md.textContent()).toContain('<script>window.pwned = 1</script>');
    expect(await md.locator('.md-image').textContent()).toBe('[image: remote — http://example.invalid/track.png]');
    expect(await md.locator('.code-block .code-lang').textContent()).toBe('js');
    expect(await md.locator('.code-block code').textContent()).toBe('console.log("<b>not bold</b>");');
    expect(await answer(page, 0).locator('.reasoning-text').textContent()).toBe('<b>thinking</b>');
    await md.getByRole('link', { name: 'a link' }).hover();
    await md.getByText('bad').click();
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    expect(requests.map((r) => r.url()).filter((url) => !url.startsWith(web.maya.origin))).toEqual([]);
    await page.close();
  });
});
