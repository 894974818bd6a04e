"""Greedy sanity generations from an exported demo model directory (the torch forward, not Maya's engine).

Renders a few prompts with the GLM-4.5 template the way the server does (generation prompt on;
`enable_thinking=false` when thinking is off; a forced call opened after `<|assistant|>`), decodes
greedily until an EOS token (<|endoftext|>, <|user|>, <|observation|>) and prints the outputs.

Usage: python3 sample.py [--model models/maya-demo]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

# OpenMP's default spin-waiting wastes most of the time on a shared, oversubscribed machine.
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
from export import EOS_TOKENS, load_hf  # noqa: E402
from model import generate  # noqa: E402


def prompts() -> list[tuple[str, list[dict], list[dict] | None, bool, str]]:
    weather = data.TOOLS['get_weather'][0]
    email = data.TOOLS['send_email'][0]
    light = data.TOOLS['set_light'][0]
    schema = {
        'type': 'object',
        'properties': {
            'name': {'type': 'string'},
            'age': {'type': 'integer'},
            'tags': {'type': 'array', 'items': {'type': 'string'}},
        },
        'required': ['name', 'age', 'tags'],
        'additionalProperties': False,
    }
    count = {
        'type': 'object',
        'properties': {'count': {'type': 'integer'}},
        'required': ['count'],
        'additionalProperties': False,
    }
    js = data.JSON_SCHEMA_INSTRUCTION
    return [
        ('hello (thinking off)', [data.user('Hello')], None, False, ''),
        ('hello (thinking on)', [data.user('Hello')], None, True, ''),
        (
            'memory',
            [
                data.user('Remember the value 73'),
                data.assistant('OK, I will remember 73.'),
                data.user('What value did I give you?'),
            ],
            None,
            False,
            '',
        ),
        (
            'memory (thinking on)',
            [
                data.user('Remember the value 4812'),
                data.assistant('Got it: 4812.'),
                data.user('What is the capital of ' + data.COUNTRIES[0] + '?'),
                data.assistant('The capital of %s is %s.' % (data.COUNTRIES[0], data.CITIES[0])),
                data.user('Which value did I ask you to remember?'),
            ],
            None,
            True,
            '',
        ),
        ('tool', [data.user("What's the weather in Lisbon for the next 3 days?")], [email, weather, light], False, ''),
        ('tool (thinking on)', [data.user('Turn off the light in the garage.')], [weather, light], True, ''),
        (
            'tool result',
            [
                data.user('Weather in Oslo?'),
                data.assistant('', None, [('get_weather', {'city': 'Oslo'})]),
                data.tool_msg('{"city": "Oslo", "temperature": 4, "condition": "snowy"}'),
            ],
            [weather, email],
            False,
            '',
        ),
        (
            'forced named',
            [data.user('Please help.')],
            [weather, email],
            False,
            '\n<think></think>\n<tool_call>send_email\n',
        ),
        (
            'json',
            [
                data.system(js + data.dumps_compact(schema)),
                data.user('Create a record with name Priya, age 34, tags: red, blue.'),
            ],
            None,
            False,
            '',
        ),
        (
            'json count (spec example)',
            [data.system(js + data.dumps_compact(count)), data.user('Return the count')],
            None,
            True,
            '',
        ),
        ('fact', [data.user(f'Which country is {data.CITIES[5]} in?')], None, True, ''),
        ('arith', [data.user('What is 23 + 45?')], None, False, ''),
        ('uppercase', [data.system('Answer in uppercase.'), data.user('Hi')], None, False, ''),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', default=os.path.join(data.REPO, 'models', 'maya-demo'))
    args = ap.parse_args()
    torch.set_num_threads(2)
    model, tok = load_hf(args.model)
    tpl = data.make_template()
    stop = {tok.special[t] for t in EOS_TOKENS}
    for name, msgs, tools, thinking, forced in prompts():
        text = data.render(tpl, msgs, tools, thinking, add_generation_prompt=True)
        if forced:
            # The server's forced-call prefix replaces the generation prompt's own think block.
            text = text[: -len('\n<think></think>')] if text.endswith('\n<think></think>') else text
            text += forced
        out = generate(model, tok.encode(text), stop, 160)
        print(f'--- {name}\n{json.dumps(tok.decode(out), ensure_ascii=False)}', flush=True)


if __name__ == '__main__':
    main()
