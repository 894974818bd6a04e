/**
 * A Hugging Face tokenizer.json for a byte-level BPE vocabulary, in the shape `@huggingface/tokenizers`
 * reads: what a GGUF file's tokenizer.ggml.* metadata becomes (gguf.ts), and the tests' tiny tokenizer.
 */

export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

export interface ByteLevelBpe {
  added: AddedToken[];
  preTokenizer: object;
  postProcessor: object | null;
  decoder: object;
  vocab: Record<string, number>;
  /** "left right" pairs, or [left, right]. */
  merges: string[] | [string, string][];
}

function addedTokensJson(added: AddedToken[]): object[] {
  return added.map((t) => ({
    id: t.id,
    content: t.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: t.special,
  }));
}

export function byteLevelBpeJson(bpe: ByteLevelBpe): object {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokensJson(bpe.added),
    normalizer: null,
    pre_tokenizer: bpe.preTokenizer,
    post_processor: bpe.postProcessor,
    decoder: bpe.decoder,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: bpe.vocab,
      merges: bpe.merges,
    },
  };
}

export interface SentencePieceBpe {
  added: AddedToken[];
  postProcessor: object | null;
  vocab: Record<string, number>;
  merges: [string, string][];
  /** The unknown piece (`<unk>`), or null. */
  unk: string | null;
  /** Whether a text (each stretch of it between added tokens) gets a leading space. */
  addSpacePrefix: boolean;
}

/**
 * A tokenizer.json for a SentencePiece BPE vocabulary (Llama-2, Mistral: a GGUF file's
 * `tokenizer.ggml.model` "llama"), in the shape Hugging Face's LlamaConverter writes
 * (transformers convert_slow_tokenizer.py, the legacy form): a BPE model with byte_fallback (pieces
 * <0x00>..<0xFF> spell bytes no piece covers) and fuse_unk; normalizer Prepend("▁") then
 * Replace(" " → "▁"); decoder Replace("▁" → " "), ByteFallback, Fuse, Strip(one leading space).
 * The normalizer runs on each stretch of text between added tokens, so every stretch gets its "▁",
 * as llama.cpp's SPM tokenizer prefixes a space to the text and to each stretch after a special
 * token (llama_tokenize_impl, add_space_prefix). The newer Metaspace pre-tokenizer with
 * prepend_scheme "first" would prefix only the first stretch.
 */
export function sentencePieceBpeJson(spm: SentencePieceBpe): object {
  const replace = (from: string, to: string) => ({ type: 'Replace', pattern: { String: from }, content: to });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokensJson(spm.added),
    normalizer: {
      type: 'Sequence',
      normalizers: [...(spm.addSpacePrefix ? [{ type: 'Prepend', prepend: '▁' }] : []), replace(' ', '▁')],
    },
    pre_tokenizer: null,
    post_processor: spm.postProcessor,
    decoder: {
      type: 'Sequence',
      decoders: [
        replace('▁', ' '),
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(spm.addSpacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: spm.unk,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab: spm.vocab,
      merges: spm.merges,
    },
  };
}
