import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { fixtureDir } from './engine-helpers.ts';
import { greedyIds } from './greedy-script.ts';

const run = promisify(execFile);

describe('the same generation under Bun (bun:ffi) and Node (koffi)', () => {
  it.each(['glm4-bf16', 'qwen3-f16'])('%s: identical greedy ids', async (name) => {
    const prompt = [5, 17, 99, 3, 42, 8];
    const fromNode = await greedyIds(fixtureDir(name), prompt, 12);
    const { stdout } = await run('./node_modules/.bin/bun', [
      'test/engine/greedy-script.ts',
      fixtureDir(name),
      prompt.join(','),
      '12',
    ]);
    const fromBun = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { runtime: string; ids: number[] };
    expect(fromBun.runtime).toBe('bun');
    expect(fromNode).toHaveLength(12);
    expect(fromBun.ids).toEqual(fromNode);
  });

  it('identical sampled ids for the same temperature and 64-bit seed', async () => {
    const dir = fixtureDir('llama-f32');
    const prompt = [9, 8, 7, 6];
    const seed = 2 ** 40 + 12345; // above 32 bits: checks the uint64 argument in both bindings
    const fromNode = await greedyIds(dir, prompt, 16, 1.5, seed);
    const otherSeed = await greedyIds(dir, prompt, 16, 1.5, seed - 2 ** 32); // same low 32 bits
    expect(otherSeed).not.toEqual(fromNode);
    const { stdout } = await run('./node_modules/.bin/bun', [
      'test/engine/greedy-script.ts',
      dir,
      prompt.join(','),
      '16',
      '1.5',
      String(seed),
    ]);
    expect((JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { ids: number[] }).ids).toEqual(fromNode);
  });

  it('identical top-k sampled ids; top_k reaches the library in both bindings', async () => {
    const dir = fixtureDir('llama-f32');
    const prompt = [9, 8, 7, 6];
    const seed = 77;
    const fromNode = await greedyIds(dir, prompt, 16, 1.5, seed, 2);
    expect(fromNode).not.toEqual(await greedyIds(dir, prompt, 16, 1.5, seed)); // top_k 2 changes the draws
    const bun = async (topK: number) => {
      const args = ['test/engine/greedy-script.ts', dir, prompt.join(','), '16', '1.5', String(seed), String(topK)];
      const { stdout } = await run('./node_modules/.bin/bun', args);
      return (JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { ids: number[] }).ids;
    };
    expect(await bun(2)).toEqual(fromNode);
    expect(await bun(1)).toEqual(await greedyIds(dir, prompt, 16)); // top_k 1 is greedy
  });
});
