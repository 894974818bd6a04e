/**
 * Constrained decoding through NativeEngine (worker thread, eng_seq_mask, the C sampler) on the
 * demo checkpoint: with a grammar that admits one sentence (or a choice of two), every sampling
 * mode — greedy, temperature, top-p, several seeds — produces exactly an admitted text and then a
 * stop token; without a vocabulary the same request runs unconstrained. Sequences with and
 * without a constraint share batches.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { alt, text } from '../../grammar/grammar.ts';
import type { Constraint } from '../../grammar/constraint.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

const DIR = join(import.meta.dirname, '../../models/maya-demo');
let engine: NativeEngine;
let bare: NativeEngine;
let tokenizer: Tokenizer;

beforeAll(async () => {
  tokenizer = await Tokenizer.fromDir(DIR);
  engine = await NativeEngine.load(DIR, TEST_ENGINE);
  engine.setVocabulary(tokenizer.vocabularyBytes());
  bare = await NativeEngine.load(DIR, TEST_ENGINE);
}, 60_000);
afterAll(async () => {
  await engine?.close();
  await bare?.close();
});

async function generate(
  target: NativeEngine,
  prompt: string,
  constraint: Constraint | undefined,
  sampling: { temperature: number; topP?: number; topK?: number; seed?: number },
) {
  const stopId = tokenizer.tokenId('<|user|>')!;
  const ids: number[] = [];
  const gen = target.generate({
    promptIds: tokenizer.encode(prompt),
    maxTokens: 40,
    stopIds: [stopId],
    ...sampling,
    ...(constraint ? { constraint } : {}),
  });
  let step = await gen.next();
  for (; !step.done; step = await gen.next()) if (step.value.type === 'token') ids.push(step.value.id);
  return {
    text: tokenizer.decode(ids.filter((id) => id !== stopId)),
    stopped: ids.at(-1) === stopId,
    reason: step.value.reason,
  };
}

const PROMPT = '[gMASK]<sop><|user|>\nHello<|assistant|>\n<think></think>\n';
const SAMPLINGS = [
  { temperature: 0 },
  { temperature: 1.5, seed: 1 },
  { temperature: 1.5, seed: 2 },
  { temperature: 1, topP: 0.5, seed: 3 },
  { temperature: 1.5, topK: 2, seed: 4 },
];

describe('NativeEngine with a constraint', () => {
  it('every sampling mode produces exactly an admitted text, then stops', async () => {
    const stopIds = [tokenizer.tokenId('<|user|>')!];
    const one: Constraint = { grammar: { rules: {}, root: text('Zorblat quux 42.') }, stopIds };
    const two: Constraint = { grammar: { rules: {}, root: alt(text('yes'), text('no, "never"')) }, stopIds };
    const results = await Promise.all(
      SAMPLINGS.flatMap((s) => [
        generate(engine, PROMPT, one, s),
        generate(engine, PROMPT, two, s),
        generate(engine, PROMPT, undefined, s),
      ]),
    );
    for (let i = 0; i < SAMPLINGS.length; i++) {
      const [a, b] = [results[3 * i]!, results[3 * i + 1]!];
      expect(a).toEqual({ text: 'Zorblat quux 42.', stopped: true, reason: 'stop' });
      expect(['yes', 'no, "never"']).toContain(b.text);
      expect(b.stopped).toBe(true);
    }
    expect(results[2]!.text).not.toBe('Zorblat quux 42.'); // the unconstrained neighbour in the batch is free
  }, 60_000);

  it('an engine without a vocabulary ignores the constraint', async () => {
    const constraint: Constraint = {
      grammar: { rules: {}, root: text('Zorblat quux 42.') },
      stopIds: [tokenizer.tokenId('<|user|>')!],
    };
    const constrained = await generate(bare, PROMPT, constraint, { temperature: 0 });
    const free = await generate(bare, PROMPT, undefined, { temperature: 0 });
    expect(constrained.text).toBe(free.text);
  }, 60_000);
});
