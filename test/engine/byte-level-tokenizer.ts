/**
 * A tiny byte-level BPE tokenizer.json built in code for tests: the 256 byte symbols of GPT-2's
 * byte-to-unicode table (fact from openai/gpt-2 encoder.py `bytes_to_unicode`: printable Latin-1
 * bytes map to themselves, the other 68 bytes to U+0100 upward in byte order), a few merges
 * (so "hello" is one token and CJK '中' splits 2 + 1 bytes), and added tokens.
 */
import { byteLevelBpeJson } from '../../checkpoint/tokenizer-json.ts';

export function byteToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table: string[] = new Array(256);
  let next = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + next++);
  }
  return table;
}

export const ADDED_TOKENS = [
  { content: '<|user|>', special: true },
  { content: '<|assistant|>', special: true },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
  { content: '<|endoftext|>', special: true },
];

/** padTo: fill the vocabulary with `<extra_N>` tokens up to that many ids (to match a model's vocab). */
export function makeByteLevelTokenizer(padTo = 0): { tokenizerJson: object; tokenizerConfig: object } {
  const bytes = byteToUnicode();
  const vocab: Record<string, number> = {};
  bytes.forEach((ch, i) => (vocab[ch] = i));
  const merges = ['h e', 'l l', 'he ll', 'hell o', `${bytes[0x20]} w`, `${bytes[0xe4]} ${bytes[0xb8]}`];
  for (const m of merges) vocab[m.replace(' ', '')] = Object.keys(vocab).length;
  const base = Object.keys(vocab).length;
  const extra = Math.max(0, padTo - base - ADDED_TOKENS.length);
  for (let i = 0; i < extra; i++) vocab[`<extra_${i}>`] = base + ADDED_TOKENS.length + i;
  const added = ADDED_TOKENS.map((t, i) => ({ id: base + i, content: t.content, special: t.special }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    tokenizerJson: byteLevelBpeJson({
      added,
      preTokenizer: byteLevel,
      postProcessor: byteLevel,
      decoder: byteLevel,
      vocab,
      merges,
    }),
    tokenizerConfig: { eos_token: '<|endoftext|>', clean_up_tokenization_spaces: false },
  };
}
