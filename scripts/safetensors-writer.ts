/**
 * safetensors-writer: the one safetensors writer of bench/ and scripts/ (the random checkpoints of
 * the benchmarks and the engine tests; the Python fixtures have scripts/oracle/safetensors_io.py).
 *
 * Layout (huggingface/safetensors docs, "Format"): an 8-byte little-endian header length, a JSON
 * header {"__metadata__": {"format": "pt"}, name: {dtype, shape, data_offsets: [begin, end]}} with
 * offsets relative to the data start, padded with spaces to a multiple of 8 bytes, then the raw
 * little-endian tensors in header order. Tensors are streamed chunk by chunk, so a checkpoint larger
 * than memory (the 18.7 GB GLM-4-9B-shaped bench model) costs no more than one chunk.
 */
import { open } from 'node:fs/promises';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'F8_E4M3';

export const DTYPE_BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2, F8_E4M3: 1 };

export interface TensorHeader {
  name: string;
  dtype: SafetensorsDtype;
  shape: readonly number[];
}

/** The bytes of one tensor, in chunks that add up to exactly numel x dtype size. */
export type TensorChunks = Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export const numelOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Bytes of one tensor's data. */
export const tensorBytes = (t: TensorHeader): number => numelOf(t.shape) * DTYPE_BYTES[t.dtype];

/** The header block: length prefix, then the JSON padded to a multiple of 8. */
function headerBytes(tensors: readonly TensorHeader[]): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    if (t.name in header) throw new Error(`safetensors: tensor ${t.name} given twice`);
    const bytes = tensorBytes(t);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(text.length));
  return Buffer.concat([prefix, Buffer.from(text)]);
}

/**
 * Writes the safetensors file at path: the header of `tensors` (in the order given), then the data
 * `chunks(t)` yields for each. Throws when a tensor's chunks do not add up to its size (the file is
 * then incomplete). Returns the data bytes (the header excluded).
 */
export async function writeSafetensors<T extends TensorHeader>(
  path: string,
  tensors: readonly T[],
  chunks: (t: T) => TensorChunks,
): Promise<number> {
  const file = await open(path, 'w');
  let total = 0;
  try {
    await file.write(headerBytes(tensors));
    for (const t of tensors) {
      let written = 0;
      for await (const chunk of chunks(t)) {
        await file.write(chunk);
        written += chunk.byteLength;
      }
      if (written !== tensorBytes(t))
        throw new Error(`safetensors: tensor ${t.name} got ${written} bytes, its header says ${tensorBytes(t)}`);
      total += written;
    }
  } finally {
    await file.close();
  }
  return total;
}
