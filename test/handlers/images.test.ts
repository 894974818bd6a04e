/**
 * input_image over HTTP on the glm4v-tiny fixture's tokenizer, template and image processor with
 * FakeEngine: every image error code is a 400 in the OpenAI shape naming the part's image_url,
 * and no refused image reaches the engine (FakeEngine.calls stays empty); PNG, JPEG, WebP and
 * GIF are accepted; remote URLs are off by default and, when allowed, fetched from a local HTTP
 * server with the allow-list re-checked on each redirect and the size, time and redirect limits;
 * a text-only model keeps refusing images; /v1/status reports the vision path.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_SETTINGS, type ImageSettings } from '../../config/settings.ts';
import { createTestApp, stubRuntime } from '../helpers/test-app.ts';
import { fixtureDataUrl, fixturePng, visionFixtures, visionRuntime } from '../helpers/vision-runtime.ts';
import { scriptedRuntime } from '../responses/scripted-runtime.ts';

const text = (value: string) => ({ type: 'input_text', text: value });
const image = (url: string, extra: Record<string, unknown> = {}) => ({ type: 'input_image', image_url: url, ...extra });
const ask = (...content: unknown[]) => ({ model: 'glm4v-tiny', input: [{ role: 'user', content }] });
const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;

async function app(images: Partial<ImageSettings> = {}) {
  const runtime = await visionRuntime({ script: { tokens: [5, 6, 1007] } });
  const testApp = createTestApp({ runtime, server: { images: { ...DEFAULT_IMAGE_SETTINGS, ...images } } });
  return { ...testApp, engine: runtime.engine };
}

/** Sends `body`; expects the 400 with `code` naming `param`, and no engine work queued. */
async function refused(body: object, code: string, param: string, images: Partial<ImageSettings> = {}) {
  const { request, engine } = await app(images);
  const res = await request.post('/v1/responses').send(body);
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ type: 'invalid_request_error', code, param });
  expect(typeof res.body.error.message).toBe('string');
  expect(engine.calls).toHaveLength(0);
  return res.body.error.message as string;
}

const png = fixturePng(0);

describe('input_image errors: 400 before any engine work', () => {
  const param = 'input[0].content[1].image_url';

  it('invalid_image_url: not a URL, another scheme, a data: URL that is not base64', async () => {
    await refused(ask(text('x'), image('not a url')), 'invalid_image_url', param);
    await refused(ask(text('x'), image('ftp://example.com/a.png')), 'invalid_image_url', param);
    await refused(ask(text('x'), image('data:image/png,%89PNG')), 'invalid_image_url', param);
  });

  it('invalid_image_url: remote URLs are off unless MAYA_IMAGE_URL_ALLOW lists the host', async () => {
    const off = await refused(ask(text('x'), image('https://example.com/a.png')), 'invalid_image_url', param);
    expect(off).toContain('MAYA_IMAGE_URL_ALLOW');
    const other = await refused(ask(text('x'), image('https://example.com/a.png')), 'invalid_image_url', param, {
      urlAllow: ['images.example.org'],
    });
    expect(other).toContain('example.com');
  });

  it('invalid_base64_image', async () => {
    await refused(ask(text('x'), image('data:image/png;base64,iVBOR*w0K')), 'invalid_base64_image', param);
    await refused(ask(text('x'), image('data:image/png;base64,A')), 'invalid_base64_image', param);
  });

  it('empty_image_file', async () => {
    await refused(ask(text('x'), image('data:image/png;base64,')), 'empty_image_file', param);
  });

  it('image_too_large: encoded bytes over MAYA_IMAGE_MAX_BYTES, pixels over MAYA_IMAGE_MAX_PIXELS', async () => {
    const bytes = await refused(ask(text('x'), image(dataUrl(png))), 'image_too_large', param, {
      maxBytes: png.length - 1,
    });
    expect(bytes).toContain('MAYA_IMAGE_MAX_BYTES');
    const pixels = await refused(ask(text('x'), image(dataUrl(png))), 'image_too_large', param, {
      maxPixels: 140 * 112 - 1,
    });
    expect(pixels).toContain('140x112');
  });

  it('invalid_image_format: a declared media type or decoded bytes other than PNG, JPEG, WebP, GIF', async () => {
    await refused(ask(text('x'), image(dataUrl(png, 'image/svg+xml'))), 'invalid_image_format', param);
    const tiff = await sharp(png).tiff().toBuffer();
    await refused(ask(text('x'), image(dataUrl(tiff))), 'invalid_image_format', param);
  });

  it('invalid_image: bytes that are no image, a truncated PNG, an aspect ratio above 200', async () => {
    await refused(ask(text('x'), image(dataUrl(Buffer.from('this is not an image at all')))), 'invalid_image', param);
    await refused(ask(text('x'), image(dataUrl(png.subarray(0, 2000)))), 'invalid_image', param);
    const strip = await sharp({ create: { width: 6000, height: 28, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    const message = await refused(ask(text('x'), image(dataUrl(strip))), 'invalid_image', param);
    expect(message).toContain('aspect ratio');
  });

  it('too many images: MAYA_IMAGE_MAX_COUNT, naming the first image over it', async () => {
    const url = fixtureDataUrl(0);
    await refused(ask(image(url), image(url), image(url)), 'too_many_images', 'input[0].content[2].image_url', {
      maxCount: 2,
    });
  });

  it('names the image inside a function_call_output as input[i].output[j].image_url', async () => {
    const body = {
      model: 'glm4v-tiny',
      tools: [{ type: 'function', name: 'camera', parameters: { type: 'object', properties: {} } }],
      input: [
        { role: 'user', content: 'Take a photo.' },
        { type: 'function_call', call_id: 'c1', name: 'camera', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [text('Here:'), image('data:image/png;base64,')] },
      ],
    };
    await refused(body, 'empty_image_file', 'input[2].output[1].image_url');
  });

  it('images outside user messages and function outputs: 400 unsupported_content', async () => {
    const body = {
      model: 'glm4v-tiny',
      input: [
        { role: 'system', content: [image(fixtureDataUrl(0))] },
        { role: 'user', content: 'hi' },
      ],
    };
    const message = await refused(body, 'unsupported_content', 'input[0].content[0]');
    expect(message).toContain('user messages and function_call_output');
  });

  it("detail other than 'auto' and file_id images stay refused by the rejection table", async () => {
    await refused(ask(image(fixtureDataUrl(0), { detail: 'low' })), 'unsupported_value', 'input[0].content[0].detail');
    await refused(
      ask({ type: 'input_image', file_id: 'file_1' }),
      'unsupported_parameter',
      'input[0].content[0].file_id',
    );
  });
});

describe('input_image accepted', () => {
  it("a PNG data URL: 200, and the engine gets the reference's prompt ids and the image", async () => {
    const { request, engine } = await app();
    const res = await request
      .post('/v1/responses')
      .send(ask(image(fixtureDataUrl(0), { detail: 'auto' }), text('What is in this image?')));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(engine.calls).toHaveLength(1);
    expect(engine.calls[0]!.promptIds).toEqual(visionFixtures.prompts[0]!.ids);
    expect(engine.calls[0]!.images!.map((i) => i.grid)).toEqual([visionFixtures.images[0]!.grid_thw]);
    expect(res.body.usage.input_tokens).toBe(visionFixtures.prompts[0]!.ids.length);
  });

  it('the same request streamed (SSE): the engine gets the same prompt and image, the stream completes', async () => {
    const { request, engine } = await app();
    const res = await request
      .post('/v1/responses')
      .send({ ...ask(image(fixtureDataUrl(0)), text('What is in this image?')), stream: true });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    expect(res.text).toContain('event: response.completed');
    expect(engine.calls[0]!.promptIds).toEqual(visionFixtures.prompts[0]!.ids);
    expect(engine.calls[0]!.images).toHaveLength(1);
  });

  for (const format of ['jpeg', 'webp', 'gif'] as const) {
    it(`${format}: decoded (GIF: its first frame) to the same grid`, async () => {
      const bytes = await sharp(png)[format]().toBuffer();
      const { request, engine } = await app();
      const res = await request.post('/v1/responses').send(ask(image(dataUrl(bytes, `image/${format}`))));
      expect(res.status).toBe(200);
      expect(engine.calls[0]!.images![0]!.grid).toEqual(visionFixtures.images[0]!.grid_thw);
    });
  }

  it('an animated GIF gives its first frame', async () => {
    const red = { create: { width: 56, height: 56, channels: 3 as const, background: '#ff0000' } };
    const blue = { create: { width: 56, height: 56, channels: 3 as const, background: '#0000ff' } };
    const gif = await sharp([await sharp(red).png().toBuffer(), await sharp(blue).png().toBuffer()], {
      join: { animated: true },
    })
      .gif()
      .toBuffer();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const still = await sharp(red).gif().toBuffer();
    const { request, engine } = await app();
    await request.post('/v1/responses').send(ask(image(dataUrl(gif, 'image/gif'))));
    await request.post('/v1/responses').send(ask(image(dataUrl(still, 'image/gif'))));
    expect(engine.calls).toHaveLength(2);
    expect(engine.calls[0]!.images![0]!.hash).toBe(engine.calls[1]!.images![0]!.hash);
  });
});

describe('remote image URLs (local HTTP server)', () => {
  let server: Server;
  let origin = '';
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = req.url ?? '/';
      if (url === '/img.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (url.startsWith('/hop/')) {
        const left = Number(url.slice(5));
        return res.writeHead(302, { location: left === 0 ? '/img.png' : `/hop/${left - 1}` }).end();
      }
      if (url === '/elsewhere') return res.writeHead(302, { location: `http://localhost:${port}/img.png` }).end();
      if (url === '/big') {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(png);
        return res.end(png);
      }
      if (url === '/slow') return; // never answers
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    origin = `http://127.0.0.1:${port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const allow = () => ({ urlAllow: ['127.0.0.1'], fetchTimeoutMs: 300 });
  const param = 'input[0].content[0].image_url';

  it('an allowed host is fetched, through redirects up to MAYA_IMAGE_MAX_REDIRECTS', async () => {
    const { request, engine } = await app(allow());
    for (const path of ['/img.png', '/hop/2']) {
      const res = await request.post('/v1/responses').send(ask(image(`${origin}${path}`)));
      expect(res.status).toBe(200);
    }
    expect(engine.calls).toHaveLength(2);
    expect(engine.calls[1]!.promptIds).toEqual(engine.calls[0]!.promptIds);
    expect(engine.calls[1]!.images![0]!.hash).toBe(engine.calls[0]!.images![0]!.hash);
  });

  it('more redirects than allowed, or a redirect to a host not on the list: invalid_image_url', async () => {
    await refused(ask(image(`${origin}/hop/3`)), 'invalid_image_url', param, allow());
    const message = await refused(ask(image(`${origin}/elsewhere`)), 'invalid_image_url', param, allow());
    expect(message).toContain(`localhost:${port}`);
  });

  it('a body over MAYA_IMAGE_MAX_BYTES: image_too_large', async () => {
    await refused(ask(image(`${origin}/big`)), 'image_too_large', param, { ...allow(), maxBytes: png.length + 10 });
  });

  it('a 404 or no answer within MAYA_IMAGE_FETCH_TIMEOUT_MS: failed_to_download_image', async () => {
    await refused(ask(image(`${origin}/missing.png`)), 'failed_to_download_image', param, allow());
    const slow = await refused(ask(image(`${origin}/slow`)), 'failed_to_download_image', param, allow());
    expect(slow).toContain('300 ms');
  });
});

describe('models without a vision path, and /v1/status', () => {
  it('a text-only model refuses input_image with 400 unsupported_content', async () => {
    const base = scriptedRuntime([{ pieces: ['\n', 'hi'] }]);
    const { request } = createTestApp({ runtime: stubRuntime({ ...base }) });
    const res = await request.post('/v1/responses').send(ask(text('look'), image(fixtureDataUrl(0))));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unsupported_content', param: 'input[0].content[1]' });
    expect(res.body.error.message).toContain('vision encoder');
    expect(base.engine.calls).toHaveLength(0);
  });

  it('/v1/status engine.vision: true on the vision checkpoint, false on a text-only one', async () => {
    const { request } = await app();
    expect((await request.get('/v1/status')).body.engine.vision).toBe(true);
    const textOnly = createTestApp({ runtime: stubRuntime() });
    expect((await textOnly.request.get('/v1/status')).body.engine.vision).toBe(false);
  });
});
