"""Builds test/fixtures/gguf/llama-spm-F32.gguf: a tiny random `llama` model whose tokenizer is a
SentencePiece BPE vocabulary (`tokenizer.ggml.model` "llama"), laid out as llama.cpp's converter
writes Llama-2's: <unk> (type 2), <s> and </s> (type 3, control), the 256 byte pieces <0x00>..<0xFF>
(type 6), then the learned pieces (type 1) with scores 0, -1, -2, ... in merge order, then the single
characters with the lowest scores (SentencePiece lists characters after the merged pieces).

    /usr/bin/python3 scripts/gguf/make_spm_fixture.py [--out test/fixtures/gguf/llama-spm-F32.gguf]

The vocabulary is learned here by a plain BPE over CORPUS (most frequent adjacent pair first, ties
by the pair's text; digits never merge, as SentencePiece's split_digits does), so its pieces are
real merge chains. Deterministic: a rerun writes an identical file.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

import gguf_io as G

ROOT = Path(__file__).resolve().parents[2]
SPACE = "\u2581"  # SentencePiece's meta symbol for a space

CORPUS = """
The quick brown fox jumps over the lazy dog. The dog sleeps in the sun, and the fox runs into the
forest. Hello world! Hello there, how are you? I am fine, thank you. This is a test of the tokenizer
that reads the vocabulary from the file. We meet at the café at 10 o'clock; the coffee costs 3 euros.
Tokens, tokens and more tokens: the model reads them one by one, then writes the answer.
"""

N_MERGES = 140
EMBD, HEADS, KV_HEADS, FF, LAYERS = 64, 4, 2, 128, 1


def learn(corpus: str) -> tuple[list[str], list[str]]:
    """(merged pieces in merge order, characters by first appearance)."""
    words = Counter(SPACE + w for w in corpus.split())
    chars: list[str] = []
    for w in words:
        for c in w:
            if c not in chars:
                chars.append(c)
    seqs = {w: list(w) for w in words}
    pieces: list[str] = []
    for _ in range(N_MERGES):
        pairs: Counter[tuple[str, str]] = Counter()
        for w, n in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                if not (any(c.isdigit() for c in a + b)):
                    pairs[(a, b)] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merged = best[0] + best[1]
        if merged not in pieces:
            pieces.append(merged)
        for w in words:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    for d in "0123456789":
        if d not in chars:
            chars.append(d)
    return pieces, [c for c in chars if c not in pieces]


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    pieces, chars = learn(CORPUS)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    scores = [0.0] * len(tokens)
    types = [2, 3, 3] + [6] * 256
    for i, p in enumerate(pieces + chars):
        tokens.append(p)
        scores.append(-float(i))
        types.append(1)
    assert len(set(tokens)) == len(tokens)
    return tokens, scores, types


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "test/fixtures/gguf/llama-spm-F32.gguf")
    args = ap.parse_args()
    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    head_dim = EMBD // HEADS
    rng = np.random.default_rng(34)

    def f32(name: str, *ne: int, scale: float = 0.2) -> G.Tensor:
        data = (rng.standard_normal(list(reversed(ne))) * scale).astype(np.float32)
        return G.Tensor(name, G.TYPE_ID["F32"], list(ne), data.tobytes())

    def ones(name: str, n: int) -> G.Tensor:
        return G.Tensor(name, G.TYPE_ID["F32"], [n], np.ones(n, dtype=np.float32).tobytes())

    g = G.GGUFFile()
    kv = g.kv
    kv["general.architecture"] = G.string("llama")
    kv["general.name"] = G.string("llama-spm")
    kv["llama.block_count"] = G.u32(LAYERS)
    kv["llama.context_length"] = G.u32(512)
    kv["llama.embedding_length"] = G.u32(EMBD)
    kv["llama.feed_forward_length"] = G.u32(FF)
    kv["llama.attention.head_count"] = G.u32(HEADS)
    kv["llama.attention.head_count_kv"] = G.u32(KV_HEADS)
    kv["llama.rope.freq_base"] = G.f32(10000.0)
    kv["llama.attention.layer_norm_rms_epsilon"] = G.f32(1e-5)
    kv["llama.rope.dimension_count"] = G.u32(head_dim)
    kv["llama.vocab_size"] = G.u32(n_vocab)
    kv["general.file_type"] = G.u32(0)
    kv["tokenizer.ggml.model"] = G.string("llama")
    kv["tokenizer.ggml.tokens"] = G.str_array(tokens)
    kv["tokenizer.ggml.scores"] = G.KV(G.ARRAY, scores, G.FLOAT32)
    kv["tokenizer.ggml.token_type"] = G.i32_array(types)
    kv["tokenizer.ggml.bos_token_id"] = G.u32(1)
    kv["tokenizer.ggml.eos_token_id"] = G.u32(2)
    kv["tokenizer.ggml.unknown_token_id"] = G.u32(0)
    kv["tokenizer.ggml.add_bos_token"] = G.boolean(True)
    kv["tokenizer.ggml.add_eos_token"] = G.boolean(False)
    kv["tokenizer.chat_template"] = G.string(
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
        "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
        "{{ message['content'] + eos_token }}{% endif %}{% endfor %}"
    )
    g.tensors.append(f32("token_embd.weight", EMBD, n_vocab, scale=1.0))
    for i in range(LAYERS):
        g.tensors += [
            ones(f"blk.{i}.attn_norm.weight", EMBD),
            f32(f"blk.{i}.attn_q.weight", EMBD, EMBD),
            f32(f"blk.{i}.attn_k.weight", EMBD, KV_HEADS * head_dim),
            f32(f"blk.{i}.attn_v.weight", EMBD, KV_HEADS * head_dim),
            f32(f"blk.{i}.attn_output.weight", EMBD, EMBD),
            ones(f"blk.{i}.ffn_norm.weight", EMBD),
            f32(f"blk.{i}.ffn_gate.weight", EMBD, FF),
            f32(f"blk.{i}.ffn_up.weight", EMBD, FF),
            f32(f"blk.{i}.ffn_down.weight", FF, EMBD),
        ]
    g.tensors += [ones("output_norm.weight", EMBD), f32("output.weight", EMBD, n_vocab)]
    n = G.write(args.out, g)
    print(f"{args.out}: {n} bytes, {n_vocab} tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
