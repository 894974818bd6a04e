"""Writes the fresh phrasing sets: held-out cases like make_eval_cases.py's (held-out names, the same
value draw), but worded with phrasings that are neither TRAIN_* nor HELD_* ones.

- eval-cases-fresh.json (seed 3030): the third edition's fresh set, written after the third edition
  was trained, without looking at any model's results on it. The third edition's TRAIN phrasings were
  written after reading which HELD_* phrasings failed, and some are close paraphrases of them; these
  are not.
- eval-cases-fresh4.json (seed 4040): the fourth edition's, written after its training phrasings
  (pools.py: the fourth edition's TRAIN_ARG, TRAIN_TOOL_REQUEST additions, TRAIN_BARE ...) and
  before its training, without looking at any model's results on it. Its connectives ("marked",
  "listed as", "let ... be", "known as", "matching", "serving as", "labelled as", "entered as") occur
  in no TRAIN, HELD or earlier fresh phrasing.

- eval-cases-fresh5.json (seed 5050): run 4 of the fourth edition's, written before run 4 (after its
  data change, which touches no phrasing), without looking at any model's results on it. Its
  connectives ("stated as", "assign ... to", "specified as", "noted as", "called", "belonging to",
  "spelled", "tagged as") and request openings occur in no TRAIN, HELD or earlier fresh phrasing.

Training never uses any of them (heldout.test.ts checks it against fixtures/split.json's `fresh`).

Usage: python3 make_fresh_phrasing_cases.py
       npm run eval:demo -- --cases scripts/demo-model/eval-cases-fresh4.json --kinds tool,json
       npm run eval:demo -- --cases scripts/demo-model/eval-cases-fresh5.json --kinds tool,json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fresh_sets import SETS  # noqa: E402


def main() -> None:
    import make_eval_cases
    import pools

    saved = dict(pools.TEMPLATES)
    for out, spec in SETS.items():
        for family, fresh in spec['templates'].items():
            train, held = saved[family]
            assert not set(fresh) & set(train), (out, family)
            assert not set(fresh) & set(held), (out, family)
            pools.TEMPLATES[family] = (train, fresh)
        sys.argv = [
            sys.argv[0],
            '--seed',
            str(spec['seed']),
            '--out',
            os.path.join(HERE, out),
            '--fixture',
            '',
            '--edits',
            '0',
        ]
        make_eval_cases.main()
        pools.TEMPLATES.update(saved)


if __name__ == '__main__':
    main()
