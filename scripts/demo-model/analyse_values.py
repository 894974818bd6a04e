"""Reads an evaluation's per-case results (scripts/eval-demo.ts --out) beside its cases and says where
argument and JSON values go wrong: per value, not per case.

Every value a tool case (right tool and argument names) or a JSON case (valid against the schema)
was asked to copy is scored right or wrong, and grouped by
- family: what the value looks like (a word from a training pool, an invented syllable word, a code,
  a number, a date, an e-mail address, a multi-word string, a boolean, a list, ...);
- its tokens: how many the tokenizer splits it into;
- its place: the first, a middle or the last argument mention of the request;
- its order: name first ("whose {p} is {v}") or value first ("{v} as the value of {p}");
- its rarest token: how often the value's least frequent token occurs in --train-sample training
  conversations of data.py's mixture (a token seen a few times is barely trained);
and every wrong value by where it came from: another value of the same request (swapped), words of
the request that are not a value (a parameter name, a connective), a value from a training pool
that the request does not contain (memorised), a part or a misspelling of the right value, or
something else.

Usage: python3 analyse_values.py [--cases eval-cases.json] [--results eval-results.json] [--show N]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pools  # noqa: E402
from bpe import Tokenizer  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
POOL_WORDS = {
    w.lower()
    for w in pools.FIRST_NAMES
    + pools.LAST_NAMES
    + pools.CITIES
    + pools.COUNTRIES
    + pools.LANGUAGES
    + pools.COLOURS
    + pools.MONTHS
    + pools.COMMON_WORDS
}
POOL_PHRASES = set()
for _w in pools.FIRST_NAMES:
    for _l in pools.LAST_NAMES:
        POOL_PHRASES.add(f'{_w} {_l}'.lower())


def family(v: Any) -> str:
    if isinstance(v, bool):
        return 'boolean'
    if isinstance(v, int):
        return 'integer'
    if isinstance(v, float):
        return 'decimal'
    if isinstance(v, list):
        return 'list'
    if isinstance(v, dict):
        return 'object'
    s = str(v)
    if re.fullmatch(r'\d{4}-\d\d-\d\d|\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{1,2}( \d{4})?|\d\d/\d\d/\d{4}', s):
        return 'date'
    if re.fullmatch(r'\d{1,2}:\d\d(:\d\d| [ap]m)?', s):
        return 'time'
    if '@' in s:
        return 'e-mail'
    if re.fullmatch(r'v?\d+\.\d+\.\d+', s):
        return 'version'
    if re.fullmatch(r'[A-Za-z]+\.[A-Za-z]+\.[A-Za-z]+', s):
        return 'dotted'
    if s.startswith('https://'):
        return 'url'
    if '/' in s:
        return 'path'
    if re.search(r'\d', s) or re.fullmatch(r'[A-Z0-9-]{2,}', s):
        return 'code'
    if ' ' in s:
        return (
            'pool phrase'
            if s.lower() in POOL_PHRASES or all(w in POOL_WORDS for w in s.lower().split())
            else 'multi-word'
        )
    return 'pool word' if s.lower() in POOL_WORDS else 'invented word'


def source(want: Any, got: Any, request: str, others: list[Any]) -> str:
    """Where a wrong value came from."""
    if got is None:
        return 'left out'
    g, w = json.dumps(got, ensure_ascii=False).strip('"'), json.dumps(want, ensure_ascii=False).strip('"')
    if any(got == o for o in others):
        return 'another value of the request'
    if isinstance(got, bool) or isinstance(want, bool):
        return 'boolean flipped'
    if isinstance(got, (int, float)) and str(got) in request:
        return 'a number of the request'
    if isinstance(got, str) and got and (got in w or w in got):
        return 'part of the value, or more'
    if isinstance(got, str) and got and got in request:
        return 'other words of the request'
    if isinstance(got, str) and (got.lower() in POOL_WORDS or got.lower() in POOL_PHRASES):
        return 'a training pool word not in the request'
    if isinstance(got, (str, int, float)) and _close(g, w):
        return 'misspelt'
    return 'other'


def _close(a: str, b: str) -> bool:
    """Edit distance at most a third of the longer one."""
    m, n = len(a), len(b)
    d = list(range(n + 1))
    for i in range(1, m + 1):
        prev, d[0] = d[0], i
        for j in range(1, n + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[n] <= max(m, n) / 3


def mentions(request: str, pairs: list[tuple[str, Any]]) -> dict[str, tuple[int, str]]:
    """For each (name, value): (rank of its mention in the request, 'name first' or 'value first')."""
    found: list[tuple[int, str, str]] = []
    for name, v in pairs:
        words = ' '.join(pools.split_words(name))
        if isinstance(v, bool):
            at = request.find(words)
            found.append((at, name, 'boolean'))
            continue
        sv = pools.say(v) if not isinstance(v, list) else pools.say(v[0]) if v else ''
        at_v = request.find(sv) if sv else -1
        at_p = request.find(words)
        order = 'value first' if 0 <= at_v < at_p else 'name first'
        found.append((min(x for x in (at_v, at_p) if x >= 0) if max(at_v, at_p) >= 0 else 10**6, name, order))
    found.sort()
    out: dict[str, tuple[int, str]] = {}
    for rank, (_, name, order) in enumerate(found):
        out[name] = (rank, order)
    return out


def message_text(output: list[dict[str, Any]]) -> str:
    return ''.join(p.get('text', '') for it in output if it.get('type') == 'message' for p in it.get('content', []))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--cases', default=os.path.join(HERE, 'eval-cases.json'))
    ap.add_argument('--results', default=os.path.join(HERE, 'eval-results.json'))
    ap.add_argument('--tokenizer', default=os.path.join(REPO, 'models', 'maya-demo', 'tokenizer.json'))
    ap.add_argument('--show', type=int, default=0, help='print the first N wrong values')
    ap.add_argument(
        '--train-sample',
        type=int,
        default=1000,
        help='training conversations whose token counts rate a value\'s rarest token (0: skip)',
    )
    ap.add_argument('--mix', default='default', help="data.py mixture of that sample (the third edition's: v3)")
    args = ap.parse_args()
    tok = Tokenizer.load(args.tokenizer)
    counts: dict[int, int] = defaultdict(int)
    if args.train_sample:
        import random
        import data

        rng, tpl = random.Random(5), data.make_template()
        for _ in range(args.train_sample):
            for text, _ in data.segments(tpl, data.gen_sample(rng, mix=args.mix)):
                for i in tok.encode(text):
                    counts[i] += 1
    cases = {c['id']: c for c in json.load(open(args.cases, encoding='utf-8'))['cases']}
    results = json.load(open(args.results, encoding='utf-8'))['results']
    groups: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    sources: dict[str, int] = defaultdict(int)
    shown = 0
    for r in results:
        c = cases.get(r['id'])
        if c is None or c['kind'] not in ('tool', 'json') or not r.get('pass'):
            continue
        request = c['request']['input'] if isinstance(c['request']['input'], str) else ''
        if c['kind'] == 'tool':
            want = c['expect']['calls'][0]['arguments']
            call = next(o for o in r['output'] if o['type'] == 'function_call')
            got = json.loads(call['arguments'])
        else:
            want = c['expect']['value']
            got = json.loads(message_text(r['output']))
        pairs = list(want.items())
        where = mentions(request, pairs)
        n = len(pairs)
        for name, v in pairs:
            ok = got.get(name) == v
            rank, order = where[name]
            place = 'only' if n == 1 else 'first' if rank == 0 else 'last' if rank == n - 1 else 'middle'
            say = pools.say(v) if not isinstance(v, (list, dict)) else json.dumps(v, ensure_ascii=False)
            ids = tok.encode(say)
            ntok = len(ids)
            rarest = min(counts[i] for i in ids) if counts and ids else -1
            rare = (
                'n/a'
                if rarest < 0
                else '< 20'
                if rarest < 20
                else '20-199'
                if rarest < 200
                else '200-1999'
                if rarest < 2000
                else '2000+'
            )
            fam = family(v)
            for g, key in (
                ('family', fam),
                ('place', place),
                ('order', order if fam != 'boolean' else 'boolean'),
                ('tokens', '1-2' if ntok <= 2 else '3-4' if ntok <= 4 else '5-8' if ntok <= 8 else '9+'),
                ('rarest token', rare),
                ('kind', c['kind']),
            ):
                groups[g][key][0] += ok
                groups[g][key][1] += 1
            if not ok:
                src = source(v, got.get(name), request, [x for k, x in pairs if k != name])
                sources[src] += 1
                if shown < args.show:
                    shown += 1
                    print(f'{c["id"]} {name}: {v!r} -> {got.get(name)!r} [{src}]')
    for g, rows in groups.items():
        print(f'\n| by {g} | right | of |\n| --- | --- | --- |')
        for key, (ok, total) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
            print(f'| {key} | {100 * ok / total:.0f}% ({ok}) | {total} |')
    total = sum(sources.values())
    print('\n| a wrong value is | share | count |\n| --- | --- | --- |')
    for k, v in sorted(sources.items(), key=lambda kv: -kv[1]):
        print(f'| {k} | {100 * v / total:.0f}% | {v} |')


if __name__ == '__main__':
    main()
