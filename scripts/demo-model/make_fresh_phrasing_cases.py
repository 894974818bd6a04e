"""Writes eval-cases-fresh.json: held-out cases like make_eval_cases.py's (held-out names), but worded
with a second set of held-out phrasings, written after the third edition was trained and without
looking at any model's results on them. The third edition's TRAIN phrasings were written after
reading which HELD_* phrasings failed, and some are close paraphrases of them; these are not.

Usage: python3 make_fresh_phrasing_cases.py
       npm run eval:demo -- --cases scripts/demo-model/eval-cases-fresh.json --kinds tool,json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_eval_cases  # noqa: E402
import pools  # noqa: E402

FRESH_ARG = [
    '{p} amounting to {v}',
    'the {p} would be {v}',
    'choosing {v} for the {p}',
    'put {v} down as the {p}',
    'with a {p} of exactly {v}',
    '{v} being what the {p} holds',
    'where {p} reads as {v}',
    'picking {v} as the {p}',
]
FRESH_TOOL_REQUEST = [
    'Please go and {a} {args}.',
    'Could we {a}, {args}?',
    'Right, {a} {args}.',
    'I am asking you to {a} {args}.',
]
FRESH_JSON_REQUEST = [
    'Structure this for me: {args}.',
    'Make an entry out of this - {args}.',
    'Encode the following: {args}.',
]


def main() -> None:
    for family, fresh in (
        ('arg', FRESH_ARG),
        ('tool_request', FRESH_TOOL_REQUEST),
        ('json_request', FRESH_JSON_REQUEST),
    ):
        train, _ = pools.TEMPLATES[family]
        assert not set(fresh) & set(train), family
        pools.TEMPLATES[family] = (train, fresh)
    sys.argv = [sys.argv[0], '--seed', '3030', '--out', os.path.join(HERE, 'eval-cases-fresh.json'), '--fixture', '']
    make_eval_cases.main()


if __name__ == '__main__':
    main()
