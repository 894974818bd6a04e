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

export function byteLevelBpeJson(bpe: ByteLevelBpe): object {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: bpe.added.map((t) => ({
      id: t.id,
      content: t.content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: t.special,
    })),
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
