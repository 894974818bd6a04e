"""Writes scripts/demo-model/eval-cases.json: truly held-out Responses API requests for `npm run eval:demo`,
and test/demo-model/fixtures/split.json, which test/demo-model/heldout.test.ts uses to check the split.

Held out by name and by phrasing, not only by seed: every tool name, parameter name, JSON field name
and memory label in these cases is drawn from pools.py's HELD side (a hash of the name's words; data.py
only ever uses TRAIN names), and every request is worded with pools.py's HELD_* templates (training
uses the TRAIN_* ones, a different list). Values are drawn afresh (pools.draw_value: the pools'
names, words, codes, numbers, dates and multi-word strings, and the fourth edition's random families:
letters, pseudo-words, codes, numbers, dates, e-mail addresses, paths, URLs), and a fifth of the
string values from pools.HELD_FAMILIES (version numbers, dotted identifiers), which no training
generator writes.

Behaviours (--per-kind each, thinking on for half):
- tool: 1-4 generated tools declared (distractors often share the verb or the noun), tool_choice auto;
  expects one call to the right tool with exactly the arguments the request gives.
- json: text.format json_schema (strict) with the user's field names; expects the given values.
- memory: a labelled value told in the first turn, 0-2 unrelated turns, then asked back (full history).
- tool_result: the call already made and its function_call_output in the input; expects an answer
  that contains every value of the result.
- chat: no tools declared: small talk or a tool-like request; expects a completed text answer and no
  tool call (no `undeclared_tool` failure).
- edit (--edits cases): a text of ~150-1400 tokens and a HELD_EDIT request to return it with one value
  changed; expects exactly the changed text.

Usage: python3 make_eval_cases.py [--seed 2020] [--per-kind 100] [--out FILE] [--fixture FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))


def flat_tool(t: dict[str, Any]) -> dict[str, Any]:
    fn = t['function']
    out = {'type': 'function', 'name': fn['name'], 'parameters': fn['parameters'], 'strict': False}
    if 'description' in fn:
        out['description'] = fn['description']
    return out


def thinking_field(thinking: bool) -> dict[str, Any]:
    return {} if thinking else {'reasoning': {'effort': 'none'}}


def tool_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.tool_call_case(rng, 'held')
    name, args = c['call']
    req = {
        'input': c['request'],
        'tools': [flat_tool(t) for t in c['tools']],
        'tool_choice': 'auto',
        **thinking_field(thinking),
    }
    return {
        'kind': 'tool',
        'thinking': thinking,
        'request': req,
        'names': c['names'],
        'expect': {'calls': [{'name': name, 'arguments': args}]},
    }


def json_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.json_case(rng, 'held')
    req = {
        'input': c['request'],
        'text': {'format': {'type': 'json_schema', 'name': 'record', 'strict': True, 'schema': c['schema']}},
        **thinking_field(thinking),
    }
    return {'kind': 'json', 'thinking': thinking, 'request': req, 'names': c['names'], 'expect': {'value': c['value']}}


def memory_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.memory_case(rng, 'held')
    between = rng.sample(pools.HELD_CHAT, rng.choice([0, 1, 1, 2]))
    return {
        'kind': 'memory',
        'thinking': thinking,
        'turns': [c['tell'], *between, c['ask']],
        'request': thinking_field(thinking),
        'names': c['names'],
        'expect': {'value': c['value']},
    }


def tool_result_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.tool_result_case(rng, 'held')
    name, args = c['call']
    items = [
        {'role': 'user', 'content': c['request']},
        {'type': 'function_call', 'call_id': 'call_1', 'name': name, 'arguments': json.dumps(args, ensure_ascii=False)},
        {'type': 'function_call_output', 'call_id': 'call_1', 'output': c['result']},
    ]
    req = {'input': items, 'tools': [flat_tool(t) for t in c['tools']], **thinking_field(thinking)}
    return {
        'kind': 'tool_result',
        'thinking': thinking,
        'request': req,
        'names': c['names'],
        'expect': {'values': c['result_values']},
    }


def chat_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.chat_case(rng, 'held')
    return {
        'kind': 'chat',
        'thinking': thinking,
        'request': {'input': c['request'], **thinking_field(thinking)},
        'names': c['names'],
        'expect': {},
    }


def edit_case(rng: random.Random, thinking: bool) -> dict[str, Any]:
    c = pools.edit_case(rng, 'held')
    return {
        'kind': 'edit',
        'thinking': thinking,
        'request': {'input': c['request'], 'max_output_tokens': 3000, **thinking_field(thinking)},
        'names': [],
        'expect': {'answer': c['answer'], 'old': c['old'], 'new': c['new']},
    }


def schema_names(schema: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in schema.get('properties', {}).items():
        out.append(k)
        out += schema_names(v)
    return out


def training_sample(n: int, seed: int, n_dotted: int) -> dict[str, Any]:
    """The names and templates that n of data.py's conversations use (training's draw), and every
    dotted piece of the text of n_dotted of them (a run of non-space characters with a dot between two letters or
    digits): held-out value families are dotted, and heldout.test.ts checks that none of these is one."""
    import re
    import data  # (needs jinja2)

    rng = random.Random(seed)
    names: set[str] = set()
    templates: set[str] = set()
    dotted: set[str] = set()
    tpl = data.make_template()
    for i in range(n_dotted):
        s = data.gen_sample(rng)
        for text, _ in data.segments(tpl, s):
            dotted.update(m.group(0) for m in re.finditer(r'\S*[A-Za-z0-9]\.[A-Za-z0-9]\S*', text))
        if i >= n:
            continue
        for t in s.tools or []:
            names.add(t['function']['name'])
            names.update(t['function']['parameters']['properties'])
        names.update(s.meta.get('names', []))
        for m in s.messages:
            if m['role'] == 'system' and data.JSON_SCHEMA_INSTRUCTION in m['content']:
                names.update(schema_names(json.loads(m['content'].split(data.JSON_SCHEMA_INSTRUCTION, 1)[1])))
            if m['role'] == 'tool' and m['content'].startswith('{'):
                names.update(json.loads(m['content']))
        templates.update(json.dumps(t, ensure_ascii=False) for _, t in s.meta.get('templates', []))
    return {
        'samples': n,
        'dotted_samples': n_dotted,
        'seed': seed,
        'names': sorted(names),
        'templates': sorted(templates),
        'dotted': sorted(dotted),
    }


def fresh_templates() -> dict[str, list[Any]]:
    """The phrasings of every fresh set (fresh_sets.py), by template family."""
    from fresh_sets import SETS

    out: dict[str, list[Any]] = {}
    for sets in SETS.values():
        for family, ts in sets['templates'].items():
            out.setdefault(family, []).extend(ts)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=2020)
    ap.add_argument('--per-kind', type=int, default=100)
    ap.add_argument('--edits', type=int, default=20, help='edit cases (long outputs; fewer than --per-kind)')
    ap.add_argument('--out', default=os.path.join(HERE, 'eval-cases.json'))
    ap.add_argument(
        '--fixture',
        default=os.path.join(REPO, 'test', 'demo-model', 'fixtures', 'split.json'),
        help="the split's check data for test/demo-model/heldout.test.ts ('' = don't write)",
    )
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases: list[dict[str, Any]] = []
    for make in (tool_case, json_case, memory_case, tool_result_case, chat_case):
        for i in range(args.per_kind):
            cases.append(make(rng, i % 2 == 0))
    for i in range(args.edits):
        cases.append(edit_case(rng, i % 2 == 0))
    for i, c in enumerate(cases):
        c['id'] = f'{c["kind"]}-{i}'
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump(
            {'seed': args.seed, 'split': 'held-out names (pools.split_of) and HELD_* phrasings', 'cases': cases},
            f,
            ensure_ascii=False,
            indent=None,
            separators=(',', ':'),
        )
        f.write('\n')
    print(f'wrote {len(cases)} cases to {args.out}')
    if args.fixture:
        fixture = {
            'reserved_train': sorted(pools.RESERVED_TRAIN),
            'templates': {
                family: {
                    'train': [json.dumps(t, ensure_ascii=False) for t in train],
                    'held': [json.dumps(t, ensure_ascii=False) for t in held],
                }
                for family, (train, held) in pools.TEMPLATES.items()
            },
            'fresh': {
                family: [json.dumps(t, ensure_ascii=False) for t in ts] for family, ts in fresh_templates().items()
            },
            'held_family_patterns': pools.HELD_FAMILY_PATTERNS,
            'training': training_sample(500, 99, 3000),
        }
        with open(args.fixture, 'w', encoding='utf-8') as f:
            json.dump(fixture, f, ensure_ascii=False, indent=0)
            f.write('\n')
        print(f'wrote {args.fixture}')


if __name__ == '__main__':
    main()
