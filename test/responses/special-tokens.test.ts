/**
 * Special tokens in generated output: a role or template token the model writes by mistake
 * (`<|assistant|>`, `[gMASK]`, `/nothink` in the demo tokenizer, where every added token is
 * special) is dropped from the text, while the dialect's own markers still reach its parser.
 * The real demo tokenizer and GLM-4.5 dialect over FakeEngine.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createGlmDialect } from '../../dialects/glm.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { ChatTemplate } from '../../checkpoint/chat-template.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import type { GenerationRuntime } from '../../runtime/generation-runtime.ts';
import { normaliseInput } from '../../responses/input-history.ts';
import { newResponseObject, type ResponseObject } from '../../responses/response-object.ts';
import { planResponse } from '../../responses/response-plan.ts';
import { runResponse } from '../../responses/run-response.ts';
import { pipelineTokenizer } from '../../runtime/load-model-runtime.ts';

const DIR = new URL('../../models/maya-demo/', import.meta.url);
const tokenizer = await Tokenizer.fromDir(DIR.pathname);
const config = JSON.parse(readFileSync(new URL('tokenizer_config.json', DIR), 'utf8')) as { chat_template: string };

async function generate(output: string, request: Record<string, unknown>) {
  const engine = new FakeEngine({ script: [{ tokens: tokenizer.encode(output) }], info: { contextLength: 8192 } });
  const runtime: GenerationRuntime = {
    id: 'demo',
    contextLength: 8192,
    engine,
    tokenizer: pipelineTokenizer(tokenizer),
    dialect: createGlmDialect('glm45', new ChatTemplate(config.chat_template)),
  };
  const plan = planResponse(runtime, request, normaliseInput(request.input as string), 0);
  const generator = runResponse(runtime, plan, newResponseObject(request, 'resp_test', runtime.id, 'in_progress'));
  let step = await generator.next();
  while (!step.done) step = await generator.next();
  return step.value as ResponseObject;
}

describe('special tokens in generated text', () => {
  it('drops role and template tokens from the answer and keeps the words around them', async () => {
    for (const token of ['<|assistant|>', '<|system|>', '[gMASK]', '<sop>', '/nothink'])
      expect(tokenizer.isSpecial(tokenizer.tokenId(token)!)).toBe(true);
    const response = await generate('\n<think></think>\nHello/nothink<|assistant|> there[gMASK]<sop>!<|user|>', {
      input: 'Hi',
      reasoning: { effort: 'none' },
    });
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    expect((response.output[0] as { content: Array<{ text: string }> }).content[0]!.text).toBe('Hello there!');
  });

  it('still reads the dialect markers, which are special tokens here too: reasoning and a tool call', async () => {
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const response = await generate(
      '\n<think>Weather<|assistant|> needed.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call><|observation|>',
      { input: 'Weather in Oslo?', tools },
    );
    expect(response.status).toBe('completed');
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    expect((response.output[0] as { content: Array<{ text: string }> }).content[0]!.text).toBe('Weather needed.');
    expect(response.output[1]).toMatchObject({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
  });
});
