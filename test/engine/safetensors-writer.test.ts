import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../scripts/safetensors-writer.ts';

const tmp = mkdtempSync(join(tmpdir(), 'maya-st-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('writeSafetensors', () => {
  it('writes the length-prefixed, 8-byte padded header and the tensors in order, streamed in chunks', async () => {
    const path = join(tmp, 'a.safetensors');
    const f32 = new Float32Array([1.5, -2, 3, 0.25, 8, -1]);
    const bf16 = new Uint16Array([0x3f80, 0xc000]);
    const f8 = new Uint8Array([0x38, 0xb8, 0x40]);
    const data = new Map<string, Uint8Array[]>([
      ['w', [new Uint8Array(f32.buffer, 0, 8), new Uint8Array(f32.buffer, 8, 16)]],
      ['b', [new Uint8Array(bf16.buffer)]],
      ['q', [f8]],
    ]);
    const bytes = await writeSafetensors(
      path,
      [
        { name: 'w', dtype: 'F32', shape: [2, 3] },
        { name: 'b', dtype: 'BF16', shape: [2] },
        { name: 'q', dtype: 'F8_E4M3', shape: [3] },
      ],
      (t) => data.get(t.name) ?? [],
    );
    expect(bytes).toBe(24 + 4 + 3);
    const file = readFileSync(path);
    const n = Number(file.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    const header = JSON.parse(file.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>;
    expect(header).toEqual({
      __metadata__: { format: 'pt' },
      w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
      b: { dtype: 'BF16', shape: [2], data_offsets: [24, 28] },
      q: { dtype: 'F8_E4M3', shape: [3], data_offsets: [28, 31] },
    });
    const body = file.subarray(8 + n);
    expect(body.length).toBe(31);
    expect([...new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + 24))]).toEqual([...f32]);
    expect([...body.subarray(24, 28)]).toEqual([0x80, 0x3f, 0x00, 0xc0]);
    expect([...body.subarray(28)]).toEqual([...f8]);
  });

  it('refuses a tensor whose chunks do not add up to its header size, and a name given twice', async () => {
    await expect(
      writeSafetensors(join(tmp, 'b.safetensors'), [{ name: 'w', dtype: 'F32', shape: [4] }], () => [
        new Uint8Array(12),
      ]),
    ).rejects.toThrow('tensor w got 12 bytes, its header says 16');
    const t = { name: 'w', dtype: 'BF16' as const, shape: [1] };
    await expect(writeSafetensors(join(tmp, 'c.safetensors'), [t, t], () => [new Uint8Array(2)])).rejects.toThrow(
      'tensor w given twice',
    );
  });
});
