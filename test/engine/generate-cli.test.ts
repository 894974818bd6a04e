import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGenerate, topK, type GenerateTimings } from '../../cli/generate.ts';
import { Tokenizer } from '../../checkpoint/tokenizer.ts';
import { makeByteLevelTokenizer } from './byte-level-tokenizer.ts';
import { fixtureDir } from './engine-helpers.ts';

const tmp = mkdtempSync(join(tmpdir(), 'maya-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runGenerate(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

const llama = JSON.parse(readFileSync(join(fixtureDir('llama-f32'), 'fixtures.json'), 'utf8')) as {
  prompts: { ids: number[]; greedy: number[]; last_logits: number[] }[];
};

describe('maya generate', () => {
  it('--prompt-ids --json prints the greedy ids of the oracle fixture', async () => {
    const p = llama.prompts[0]!;
    const r = await cli([
      '--model',
      fixtureDir('llama-f32'),
      '--prompt-ids',
      p.ids.join(','),
      '--max-tokens',
      '20',
      '--stop-ids',
      'none',
      '--json',
    ]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out) as { ids: number[]; text: null; promptIds: number[]; finish: { reason: string } };
    expect(json.ids).toEqual(p.greedy);
    expect(json.promptIds).toEqual(p.ids);
    expect(json.text).toBeNull();
    expect(json.finish.reason).toBe('length');
    // In-process timings: the load, the prompt (request to first token) and the 19 later tokens.
    const t = (JSON.parse(r.out) as { timings: GenerateTimings }).timings;
    expect(t).toMatchObject({ promptTokens: p.ids.length, decodeTokens: 19 });
    for (const v of [t.loadMs, t.promptMs, t.promptTokensPerS, t.decodeMs, t.decodeTokensPerS ?? 0]) {
      expect(v).toBeGreaterThan(0);
    }
    expect(t.promptTokensPerS).toBeCloseTo((p.ids.length * 1000) / t.promptMs, 6);
    expect(t.decodeTokensPerS).toBeCloseTo((19 * 1000) / t.decodeMs, 6);
    expect(t.warmup).toBe(false);
  });

  it('--warmup runs an untimed generation first; the timed one is unchanged and nothing of it cached', async () => {
    // 40 tokens: two full 16-token blocks the prefix cache would serve, were the warm-up's prompt the same.
    const ids = llama.prompts
      .flatMap((q) => q.ids)
      .concat(llama.prompts.flatMap((q) => q.ids))
      .slice(0, 40);
    expect(ids.length).toBe(40);
    const argv = ['--model', fixtureDir('llama-f32'), '--prompt-ids', ids.join(','), '--max-tokens', '12'];
    const cold = JSON.parse((await cli([...argv, '--stop-ids', 'none', '--json'])).out) as { ids: number[] };
    const r = await cli([...argv, '--stop-ids', 'none', '--json', '--warmup']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out) as {
      ids: number[];
      finish: { usage: { inputTokens: number; cachedTokens: number } };
      timings: GenerateTimings;
    };
    expect(json.ids).toEqual(cold.ids);
    expect(json.finish.usage).toMatchObject({ inputTokens: 40, cachedTokens: 0 });
    expect(json.timings).toMatchObject({ promptTokens: 40, decodeTokens: 11, warmup: true });
    const text = await cli([...argv, '--warmup']);
    expect(text.code).toBe(0);
    expect(text.out).toContain('timings (warm): ');
  });

  it.each(['glm45-moe-bf16', 'glm45-moe-fp8', 'deepseek3-bf16', 'deepseek3-fp8'])(
    '--prompt-ids on the %s fixture prints its greedy ids',
    async (name) => {
      const fx = JSON.parse(readFileSync(join(fixtureDir(name), 'fixtures.json'), 'utf8')) as typeof llama;
      const p = fx.prompts[2]!;
      const r = await cli([
        '--model',
        fixtureDir(name),
        '--prompt-ids',
        p.ids.join(','),
        '--max-tokens',
        '20',
        '--stop-ids',
        'none',
        '--json',
      ]);
      expect(r.err).toBe('');
      expect((JSON.parse(r.out) as { ids: number[] }).ids).toEqual(p.greedy);
    },
  );

  it('--top-logits K prints the K largest logits of each step', async () => {
    const p = llama.prompts[1]!;
    const r = await cli([
      '--model',
      fixtureDir('llama-f32'),
      '--prompt-ids',
      p.ids.join(','),
      '--max-tokens',
      '3',
      '--top-logits',
      '4',
      '--stop-ids',
      'none',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out) as { steps: { id: number; top: { id: number; logit: number }[] }[] };
    expect(json.steps).toHaveLength(3);
    const golden = topK(Float32Array.from(p.last_logits), 4);
    expect(json.steps[0]!.top.map((t) => t.id)).toEqual(golden.map((t) => t.id));
    expect(json.steps[0]!.top[0]!.logit).toBeCloseTo(golden[0]!.logit, 3);
    expect(json.steps.map((s) => s.id)).toEqual(p.greedy.slice(0, 3));
    const text = await cli([
      '--model',
      fixtureDir('llama-f32'),
      '--prompt-ids',
      p.ids.join(','),
      '--max-tokens',
      '2',
      '--top-logits',
      '2',
    ]);
    expect(text.out).toMatch(/^step 0: \d+ {2}\[\d+:-?\d+\.\d{4}, \d+:-?\d+\.\d{4}\]$/m);
    expect(text.out).toContain(`ids (2): ${p.greedy.slice(0, 2).join(',')}`);
  });

  it('--prompt tokenises raw text with the model tokenizer and prints the decoded text', async () => {
    const dir = join(tmp, 'llama-with-tokenizer');
    cpSync(fixtureDir('llama-f32'), dir, { recursive: true });
    const { tokenizerJson, tokenizerConfig } = makeByteLevelTokenizer(512);
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
    const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    const r = await cli(['--model', dir, '--prompt', 'hello <|user|>', '--max-tokens', '6', '--json']);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out) as { ids: number[]; text: string; promptIds: number[] };
    expect(json.promptIds).toEqual(tokenizer.encode('hello <|user|>'));
    expect(json.text).toBe(tokenizer.decode(json.ids));
    expect(json.ids.length).toBeGreaterThan(0);
  });

  it('exits 2 with a clear message on bad usage and 1 when the model cannot load', async () => {
    const noPrompt = await cli(['--model', fixtureDir('llama-f32')]);
    expect(noPrompt.code).toBe(2);
    expect(noPrompt.err).toContain('exactly one of --prompt');
    const badIds = await cli(['--model', fixtureDir('llama-f32'), '--prompt-ids', '1,x']);
    expect(badIds.code).toBe(2);
    const noTokenizer = await cli(['--model', fixtureDir('llama-f32'), '--prompt', 'hi']);
    expect(noTokenizer.code).toBe(2);
    expect(noTokenizer.err).toContain('no tokenizer.json');
    const unknownFlag = await cli(['--model', 'x', '--bogus']);
    expect(unknownFlag.code).toBe(2);
    const missing = await cli(['--model', join(tmp, 'absent'), '--prompt-ids', '1']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('does not exist');
    const overflow = await cli(['--model', fixtureDir('llama-f32'), '--prompt-ids', '1,2', '--max-tokens', '5000']);
    expect(overflow.code).toBe(2);
    expect(overflow.err).toContain('exceeds the context');
  });

  it('topK orders by logit and breaks ties to the lower id', () => {
    expect(topK(Float32Array.from([1, 5, 3, 5, -1]), 3)).toEqual([
      { id: 1, logit: 5 },
      { id: 3, logit: 5 },
      { id: 2, logit: 3 },
    ]);
  });
});
