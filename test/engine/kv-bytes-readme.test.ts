/**
 * The README's KV-cache table (bytes per token by MAYA_KV_DTYPE) for the demo model is what the
 * engine reports: with speculation off or prompt lookup its 8 layers, by default (`auto`, which
 * drafts with the demo model's MTP layer) 9, the MTP layer's KV counted as one more layer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NativeEngine } from '../../engine-cuda/native-engine.ts';
import { TEST_ENGINE } from '../helpers/test-engine.ts';

const ROOT = join(import.meta.dirname, '../..');
const DEMO = join(ROOT, 'models/maya-demo');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The f32, f16 / bf16 and q8_0 cells of the README table row that starts with `label`. */
function readmeRow(label: string): number[] {
  const line = README.split('\n').find((l) => l.startsWith(`| ${label}`));
  expect(line, label).toBeDefined();
  return line!
    .split('|')
    .slice(2, 5)
    .map((cell) => Number(cell.trim().replaceAll(',', '')));
}

describe("README's KV bytes per token for the demo model", () => {
  it('match the engine with speculation off, prompt lookup and the default (MTP)', async () => {
    const rows = [
      ['maya-demo, `MAYA_SPECULATIVE=off` or `ngram`', ['off', 'ngram']],
      ['maya-demo by default (`auto`: MTP', ['auto', 'mtp']],
    ] as const;
    for (const [label, modes] of rows) {
      const [f32, f16, q8] = readmeRow(label);
      for (const speculative of modes) {
        for (const [kvDtype, want] of [
          ['f32', f32],
          ['f16', f16],
          ['bf16', f16],
          ['q8_0', q8],
        ] as const) {
          const engine = await NativeEngine.load(DEMO, { ...TEST_ENGINE, kvDtype, speculative });
          try {
            expect(engine.info.kvBytesPerToken, `${label} ${speculative} ${kvDtype}`).toBe(want);
          } finally {
            await engine.close();
          }
        }
      }
    }
  });
});
