"""Writes scripts/demo-model/eval-cases.json: held-out Responses API requests for `npm run eval:demo`.

The cases come from data.py's generators with a seed training never uses (training: 1234, the
tokenizer corpus: 7), rewritten as Responses requests: system turns become `instructions`, the
JSON instruction is left to the server (text.format json_schema), tools are flat function tools,
thinking off is `reasoning.effort: "none"`. Each case carries what a correct answer contains.

Usage: python3 make_eval_cases.py [--seed 777] [--per-kind 100] [--out FILE]
(a wider check: --seed 4242 --per-kind 250 --out /tmp/wide.json, then
`npm run eval:demo -- --cases /tmp/wide.json`)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402


def flat_tool(t: dict[str, Any]) -> dict[str, Any]:
    fn = t['function']
    out = {'type': 'function', 'name': fn['name'], 'parameters': fn['parameters'], 'strict': False}
    if 'description' in fn:
        out['description'] = fn['description']
    return out


def thinking_field(thinking: bool) -> dict[str, Any]:
    return {} if thinking else {'reasoning': {'effort': 'none'}}


def instructions_of(msgs: list[dict[str, Any]]) -> dict[str, Any]:
    sys_texts = [m['content'] for m in msgs if m['role'] == 'system']
    return {'instructions': '\n\n'.join(sys_texts)} if sys_texts else {}


def tool_case(rng: random.Random) -> dict[str, Any]:
    s = data.gen_tools(rng, rng.random() < 0.5)
    user = next(m['content'] for m in s.messages if m['role'] == 'user')
    req = {'input': user, 'tools': [flat_tool(t) for t in s.tools or []], 'tool_choice': 'auto',
           **instructions_of(s.messages), **thinking_field(s.thinking)}
    return {'kind': 'tool', 'thinking': s.thinking, 'request': req,
            'expect': {'calls': [{'name': n, 'arguments': a} for n, a in s.meta['calls']]}}


def json_case(rng: random.Random) -> dict[str, Any]:
    thinking = rng.random() < 0.5
    msgs, answer, _ = data.gen_json(rng)
    schema = json.loads(next(m['content'] for m in msgs if data.JSON_SCHEMA_INSTRUCTION in m['content'])
                        .split(data.JSON_SCHEMA_INSTRUCTION, 1)[1])
    others = [m for m in msgs if m['role'] == 'system' and data.JSON_SCHEMA_INSTRUCTION not in m['content']]
    extra = [m['content'].split('\n\n' + data.JSON_SCHEMA_INSTRUCTION)[0] for m in msgs
             if m['role'] == 'system' and '\n\n' + data.JSON_SCHEMA_INSTRUCTION in m['content']]
    instr = '\n\n'.join([m['content'] for m in others] + extra)
    user = next(m['content'] for m in msgs if m['role'] == 'user')
    req = {'input': user, 'text': {'format': {'type': 'json_schema', 'name': 'record', 'strict': True, 'schema': schema}},
           **({'instructions': instr} if instr else {}), **thinking_field(thinking)}
    return {'kind': 'json', 'thinking': thinking, 'request': req, 'expect': {'value': json.loads(answer)}}


def memory_case(rng: random.Random) -> dict[str, Any]:
    thinking = rng.random() < 0.5
    turns, question, _, reasoning = data.gen_memory(rng)
    # gen_memory's reasoning is 'The user asked me to remember V earlier. The answer is V.'
    question_value = reasoning.rsplit('The answer is ', 1)[1][:-1]
    return {'kind': 'memory', 'thinking': thinking, 'turns': [u for u, _ in turns] + [question],
            'request': thinking_field(thinking), 'expect': {'value': question_value}}


def reasoning_case(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(['greeting', 'fact', 'arith', 'instruction'])
    s = data.gen_sample(rng, kind)
    user = [m['content'] for m in s.messages if m['role'] == 'user'][-1]
    return {'kind': 'reasoning', 'thinking': True, 'request': {'input': user, **instructions_of(s.messages)},
            'expect': {'answer': s.messages[-1]['content']}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=777)
    ap.add_argument('--per-kind', type=int, default=100)
    ap.add_argument('--out', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'eval-cases.json'))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases: list[dict[str, Any]] = []
    for make in (tool_case, json_case, memory_case, reasoning_case):
        for _ in range(args.per_kind):
            cases.append(make(rng))
    for i, c in enumerate(cases):
        c['id'] = f'{c["kind"]}-{i}'
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump({'seed': args.seed, 'json_instruction': data.JSON_SCHEMA_INSTRUCTION, 'cases': cases}, f,
                  ensure_ascii=False, indent=1)
        f.write('\n')
    print(f'wrote {len(cases)} cases to {args.out}')


if __name__ == '__main__':
    main()
