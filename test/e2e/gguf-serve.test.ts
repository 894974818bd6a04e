/**
 * `maya serve --model x.gguf` (issue 34): the demo model as llama.cpp's Q4_K_M GGUF file
 * (test/fixtures/gguf/maya-demo-Q4_K_M.gguf: 4-bit weights read in place by the engine, tokenizer and
 * chat template from the file's metadata) behind the real service answers /v1/responses as JSON and
 * as SSE, in the GLM dialect its tokenizer.chat_template selects; a GGUF file without a template is
 * refused with the --chat-template hint, and served once one is given.
 */
import path from 'node:path';
import { writeFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelRuntime } from '../../runtime/load-model-runtime.ts';
import { TEST_ENGINE_SETTINGS } from '../helpers/test-engine.ts';
import { engineOptions } from '../../config/engine-settings.ts';
import { checkResponseStream } from './stream-contract.ts';
import { ROOT, startDemoService, type DemoService } from './start-demo-service.ts';

const FILE = path.join(ROOT, 'test/fixtures/gguf/maya-demo-Q4_K_M.gguf');
const model = 'maya-demo-Q4_K_M';

let demo: DemoService;
beforeAll(async () => {
  demo = await startDemoService([], { modelDir: FILE });
});
afterAll(async () => demo?.stop());

describe('maya serve on a Q4_K_M GGUF file', () => {
  it('/v1/status names the file, the GLM dialect and the 4-bit weights', async () => {
    const status = (await (await fetch(`${demo.origin}/v1/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({
      model,
      model_dialect: 'glm45',
      engine: { architecture: 'glm4', weight_dtype: 'q4_k' },
    });
  });

  it('answers a JSON /v1/responses request with text', async () => {
    const response = await demo.client.responses.create({
      model,
      input: 'Hello',
      max_output_tokens: 64,
      temperature: 0,
      store: false,
    });
    expect(response.status).toBe('completed');
    expect(response.output_text.trim().length).toBeGreaterThan(0);
    expect(response.usage!.input_tokens).toBeGreaterThan(3);
  });

  it('streams SSE events that follow the contract', async () => {
    const res = await fetch(`${demo.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        input: 'Hello',
        stream: true,
        max_output_tokens: 256,
        temperature: 0,
        store: false,
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const { events, problems } = checkResponseStream(await res.text());
    expect(problems).toEqual([]);
    expect(events[0]!.type).toBe('response.created');
    const last = events.at(-1)!;
    expect(last.type, JSON.stringify(last).slice(0, 1500)).toBe('response.completed');
    expect(events.some((e) => e.type === 'response.output_text.delta')).toBe(true);
  });

  it('parses a forced tool call in the GLM syntax', async () => {
    const response = await demo.client.responses.create({
      model,
      input: 'Weather in Oslo?',
      max_output_tokens: 128,
      temperature: 0,
      store: false,
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          strict: true,
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
    });
    expect(response.status).toBe('completed');
    const call = response.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    expect(typeof JSON.parse((call as { arguments: string }).arguments).city).toBe('string');
  });
});

describe('a GGUF file without a chat template', () => {
  const qwen = path.join(ROOT, 'test/fixtures/gguf/qwen3-BF16.gguf');
  const engine = engineOptions(TEST_ENGINE_SETTINGS, undefined);

  it('is refused at load with the --chat-template hint', async () => {
    await expect(loadModelRuntime(qwen, { engine })).rejects.toThrow(/no chat template.*--chat-template FILE/);
  });

  it('loads with --chat-template FILE, which selects the dialect', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'maya-gguf-'));
    const template = path.join(dir, 'chat_template.jinja');
    // The demo checkpoint's GLM template (from its tokenizer_config.json).
    const config = JSON.parse(await readFile(path.join(ROOT, 'models/maya-demo/tokenizer_config.json'), 'utf8'));
    await writeFile(template, config.chat_template as string);
    const runtime = await loadModelRuntime(qwen, { engine, chatTemplate: template });
    try {
      expect(runtime.id).toBe('qwen3-BF16');
      expect(runtime.dialectName).toBe('glm45');
      expect(runtime.contextLength).toBeGreaterThan(0);
    } finally {
      await runtime.close();
    }
  });
});
