"""Writes test/demo-model/fixtures/tokenizer-cases.json: texts and the ids this project's Python BPE
gives them, so the Node test can check that @huggingface/tokenizers encodes identically.

Usage: python3 make_fixtures.py (after bpe.py has written models/maya-demo/tokenizer.json).
"""
from __future__ import annotations

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
from bpe import Tokenizer  # noqa: E402

REPO = data.REPO
EXTRA = [
    'Hello',
    'Remember the value 73',
    'What value did I give you?',
    '  leading and trailing  ',
    'tabs\tand\nnew\n\nlines\r\n',
    "it's we'll they've I'M",
    'ünïcödé 北京 Москва ½ ² 😀 café',
    '12345 + 678 = 13023',
    'snake_case_name and CamelCase',
    '{"a": [1, 2.5, true, null]}',
    '<think>inline</think> and </tool_call> and /nothink inside text',
    '',
]


def main() -> None:
    tok = Tokenizer.load(os.path.join(REPO, 'models', 'maya-demo', 'tokenizer.json'))
    tpl = data.make_template()
    rng = random.Random(99)
    texts = [
        ''.join(t for t, _ in data.segments(tpl, data.gen_sample(rng, k)))
        for k in ['tools', 'json', 'memory', 'forced', 'greeting', 'instruction', 'tools', 'arith']
    ]
    cases = [{'text': t, 'ids': tok.encode(t)} for t in texts + EXTRA]
    out = os.path.join(REPO, 'test', 'demo-model', 'fixtures', 'tokenizer-cases.json')
    with open(out, 'w', encoding='utf-8') as f:
        json.dump({'special': tok.special, 'cases': cases}, f, ensure_ascii=False)
        f.write('\n')
    print(f'wrote {len(cases)} cases to {out}')


if __name__ == '__main__':
    main()
