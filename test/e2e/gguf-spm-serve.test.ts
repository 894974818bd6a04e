/**
 * `maya serve --model x.gguf` with a SentencePiece vocabulary (tokenizer.ggml.model "llama"):
 * test/fixtures/gguf/llama-spm-F32.gguf, a tiny random llama whose `[INST]` template selects the
 * plain dialect, answers /v1/responses, and the rendered prompt is tokenized as llama.cpp tokenizes
 * the same text (test/fixtures/gguf/llama-spm.tokens.json).
 */
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startDemoService, type DemoService } from './start-demo-service.ts';

const FIXTURES = path.join(ROOT, 'test/fixtures/gguf');
const FILE = path.join(FIXTURES, 'llama-spm-F32.gguf');
const expected = JSON.parse(readFileSync(path.join(FIXTURES, 'llama-spm.tokens.json'), 'utf8')) as {
  strings: Array<{ text: string; ids: number[]; ids_with_bos: number[] }>;
};

let demo: DemoService;
beforeAll(async () => {
  demo = await startDemoService([], { modelDir: FILE });
});
afterAll(async () => demo?.stop());

describe('maya serve on a GGUF file with a SentencePiece vocabulary', () => {
  it('/v1/status names the file and the plain dialect', async () => {
    const status = (await (await fetch(`${demo.origin}/v1/status`)).json()) as Record<string, unknown>;
    expect(status).toMatchObject({ model: 'llama-spm-F32', model_dialect: 'plain', engine: { architecture: 'llama' } });
  });

  it('answers /v1/responses; the prompt "<s>[INST] How are you? [/INST]" has llama.cpp’s token count', async () => {
    const row = expected.strings.find((r) => r.text === '[INST] How are you? [/INST]')!;
    const response = await demo.client.responses.create({
      model: 'llama-spm-F32',
      input: 'How are you?',
      max_output_tokens: 16,
      temperature: 0,
      store: false,
    });
    // a random model: it may end with </s> before the limit
    expect(['completed', 'incomplete']).toContain(response.status);
    expect(response.usage!.input_tokens).toBe(row.ids_with_bos.length);
    expect(response.usage!.output_tokens).toBeGreaterThan(0);
    expect(response.usage!.output_tokens).toBeLessThanOrEqual(16);
  });
});
