"""Byte-level BPE for the demo model: trainer, encoder/decoder, and the Hugging Face tokenizer.json writer.

Layout of the vocabulary: ids 0-255 are the 256 bytes (in byte order, spelled with the GPT-2
byte-to-unicode alphabet), then one id per learned merge, then the GLM special tokens as added
tokens. Pre-tokenization is a Llama-3 / GLM-4 style regex with single digits (so arithmetic sees
one token per digit) and one change: a word never takes the space or punctuation before it, so a
word has the same tokens wherever it stands (` Oslo`, `"Oslo`, `<arg_value>Oslo`). A tiny model
then copies a value from the prompt into a call or a JSON field token for token, which it learns
far sooner than the respelling that GPT-2-style ` Oslo` vs `"Oslo` tokens demand. Python's `re`
lacks \\p{L}/\\p{N}, so PRETOKENIZE_PY approximates the PRETOKENIZE_HF pattern written into
tokenizer.json (they differ only on letters-vs-numbers of rare Unicode categories such as
superscript digits).

The vocabulary is small (1024: 744 merges) on purpose. BPE learns the frequent merges first, and on
this synthetic corpus everything past the first ~750 merges is a piece of one random value (an
invented name, a stock symbol): of a 4096-token vocabulary, 3,511 tokens occurred fewer than 20
times in 2,000 training conversations, and every value the 4096-token model failed to copy in its
evaluation was spelt with them (`BDK` = `B` + `DK`, `DK` seen 0 times). A token that rare barely
gets trained, so the model writes a frequent one in its place. With 1024, `BDK` is `B` `D` `K`
and the same conversations take only 4% more tokens. The merges are the first 744 of the 4096
run's: BPE training is greedy, so a smaller vocabulary is a prefix of a larger one.

Usage: python3 bpe.py --samples 30000 --out models/maya-demo (trains on data.py).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections import Counter, defaultdict
from typing import Iterable

SPECIAL_TOKENS = [
    '<|endoftext|>',
    '[MASK]',
    '[gMASK]',
    '[sMASK]',
    '<sop>',
    '<eop>',
    '<|system|>',
    '<|user|>',
    '<|assistant|>',
    '<|observation|>',
    '<|begin_of_image|>',
    '<|end_of_image|>',
    '<|image|>',
    '<think>',
    '</think>',
    '<tool_call>',
    '</tool_call>',
    '<tool_response>',
    '</tool_response>',
    '<arg_key>',
    '</arg_key>',
    '<arg_value>',
    '</arg_value>',
    '/nothink',
]

PRETOKENIZE_HF = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|\p{L}+|\p{N}" r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
PRETOKENIZE_PY = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\W\d_]+|\d" r"| ?(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character table (the ByteLevel alphabet)."""
    keep = (
        list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    )
    table: dict[int, str] = {}
    extra = 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}
_SPECIAL_RE = re.compile('(' + '|'.join(re.escape(t) for t in sorted(SPECIAL_TOKENS, key=len, reverse=True)) + ')')


def pretokenize(text: str) -> list[str]:
    """Text without special tokens -> byte-level 'words' in the ByteLevel alphabet."""
    return [''.join(BYTE_TO_CHAR[b] for b in m.encode('utf-8')) for m in PRETOKENIZE_PY.findall(text)]


def split_special(text: str) -> list[str]:
    return [p for p in _SPECIAL_RE.split(text) if p]


def train(texts: Iterable[str], vocab_size: int) -> list[tuple[str, str]]:
    """Learns vocab_size - 256 - len(SPECIAL_TOKENS) merges. Deterministic (ties: the pair seen first;
    the corpus order is seeded)."""
    counts: Counter[str] = Counter()
    for text in texts:
        for part in split_special(text):
            if part in SPECIAL_TOKENS:
                continue
            counts.update(pretokenize(part))
    words = [list(w) for w in counts]
    freq = [counts[w] for w in counts]
    pairs: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += freq[i]
            where[(a, b)].add(i)
    n_merges = vocab_size - 256 - len(SPECIAL_TOKENS)
    merges: list[tuple[str, str]] = []
    while len(merges) < n_merges and pairs:
        best = max(pairs.items(), key=lambda kv: kv[1])[0]
        if pairs[best] < 2:
            break
        merges.append(best)
        a, b = best
        joined = a + b
        for i in list(where[best]):
            w = words[i]
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= freq[i]
                if pairs[(x, y)] <= 0:
                    del pairs[(x, y)]
                where[(x, y)].discard(i)
            out: list[str] = []
            j = 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(joined)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] += freq[i]
                where[(x, y)].add(i)
        where.pop(best, None)
        pairs.pop(best, None)
    return merges


class Tokenizer:
    def __init__(self, merges: list[tuple[str, str]]):
        self.merges = merges
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.vocab: dict[str, int] = {BYTE_TO_CHAR[b]: b for b in range(256)}
        for a, b in merges:
            self.vocab[a + b] = len(self.vocab)
        self.n_bpe = len(self.vocab)
        self.special: dict[str, int] = {}
        for t in SPECIAL_TOKENS:
            self.special[t] = len(self.vocab) + len(self.special)
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.id_to_token.update({i: t for t, i in self.special.items()})
        self._cache: dict[str, list[int]] = {}

    @property
    def size(self) -> int:
        return self.n_bpe + len(self.special)

    def _bpe(self, word: str) -> list[int]:
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        syms = list(word)
        while len(syms) > 1:
            best, best_rank = -1, None
            for i in range(len(syms) - 1):
                r = self.ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best < 0:
                break
            syms[best : best + 2] = [syms[best] + syms[best + 1]]
        ids = [self.vocab[s] for s in syms]
        if len(self._cache) < 200000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in split_special(text):
            if part in self.special:
                ids.append(self.special[part])
            else:
                for w in pretokenize(part):
                    ids.extend(self._bpe(w))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        out: list[str] = []
        buf = bytearray()
        for i in ids:
            t = self.id_to_token[i]
            if i in self.special.values():
                out.append(buf.decode('utf-8', errors='replace'))
                buf = bytearray()
                out.append(t)
            else:
                buf.extend(CHAR_TO_BYTE[c] for c in t)
        out.append(buf.decode('utf-8', errors='replace'))
        return ''.join(out)

    def to_hf_json(self) -> dict:
        return {
            'version': '1.0',
            'truncation': None,
            'padding': None,
            'added_tokens': [
                {
                    'id': i,
                    'content': t,
                    'single_word': False,
                    'lstrip': False,
                    'rstrip': False,
                    'normalized': False,
                    'special': True,
                }
                for t, i in self.special.items()
            ],
            'normalizer': None,
            'pre_tokenizer': {
                'type': 'Sequence',
                'pretokenizers': [
                    {'type': 'Split', 'pattern': {'Regex': PRETOKENIZE_HF}, 'behavior': 'Isolated', 'invert': False},
                    {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': False},
                ],
            },
            'post_processor': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': False, 'use_regex': True},
            'decoder': {'type': 'ByteLevel', 'add_prefix_space': True, 'trim_offsets': True, 'use_regex': True},
            'model': {
                'type': 'BPE',
                'dropout': None,
                'unk_token': None,
                'continuing_subword_prefix': None,
                'end_of_word_suffix': None,
                'fuse_unk': False,
                'byte_fallback': False,
                'ignore_merges': False,
                'vocab': self.vocab,
                'merges': [[a, b] for a, b in self.merges],
            },
        }

    def save(self, path: str) -> None:
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(self.to_hf_json(), f, ensure_ascii=False, indent=1)
            f.write('\n')

    @classmethod
    def load(cls, path: str) -> 'Tokenizer':
        with open(path, encoding='utf-8') as f:
            j = json.load(f)
        tok = cls([tuple(m) for m in j['model']['merges']])
        specials = {a['content']: a['id'] for a in j['added_tokens']}
        assert specials == tok.special, 'special tokens differ from SPECIAL_TOKENS'
        return tok


def corpus(n: int, seed: int) -> list[str]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import data

    tpl = data.make_template()
    rng = random.Random(seed)
    # The first edition's mixture (the shipped tokenizer predates the second edition's pools).
    return [''.join(t for t, _ in data.segments(tpl, data.gen_sample(rng, mix='v1', echo_v1=True))) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--vocab-size', type=int, default=1024)
    ap.add_argument('--samples', type=int, default=30000)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--out', required=True)
    args = ap.parse_args()
    texts = corpus(args.samples, args.seed)
    merges = train(texts, args.vocab_size)
    tok = Tokenizer(merges)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, 'tokenizer.json'))
    lens = [len(tok.encode(t)) for t in texts[:2000]]
    print(f'merges={len(merges)} vocab={tok.size} mean_tokens={sum(lens) / len(lens):.1f} max_tokens={max(lens)}')
    for t in texts[:200]:
        assert tok.decode(tok.encode(t)) == t


if __name__ == '__main__':
    main()
