"""Seeded generator of the demo model's synthetic conversations, rendered in the GLM-4.5 chat format.

Each sample is rendered with the real GLM-4.5 template (glm-4.5.jinja beside this file, the chat
template GLM-4.5's tokenizer_config.json ships; HF conventions: trim_blocks, lstrip_blocks, tojson =
Python json.dumps(ensure_ascii=False)) and split into (text, trained) segments: only what the model
itself generates after `<|assistant|>` is trained, plus the role token that ends the turn
(`<|user|>` or `<|observation|>`). Prompt-side prefixes that the server writes (`\n<think></think>`
when thinking is off, an opened `<tool_call>NAME\n` for a forced call) are not trained.

Behaviours: greetings, closed-world facts, two-digit arithmetic, system-instruction following,
multi-turn memory, JSON replies to a schema, tool calls (choose among 2-4 tools, copy arguments,
typed values, parallel calls, answer from <tool_response>), forced calls, reasoning on/off, and
plain echo (repeat a value exactly: copying practice). The second edition's kinds (ptools, pjson,
pmemory, pchat) draw tool, parameter and field names and request phrasings per example from the
TRAIN side of pools.py; the evaluation (make_eval_cases.py) uses its HELD side.

Usage: python3 data.py --seed 1 --n 5 (prints rendered samples).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
TEMPLATE_PATH = os.path.join(HERE, 'glm-4.5.jinja')

# The JSON instructions the server adds to the prompt (models/maya-demo/README.md states them).
JSON_SCHEMA_INSTRUCTION = 'Respond with a JSON object that matches this JSON schema: '
JSON_OBJECT_INSTRUCTION = 'Respond with a JSON object.'

ROLE_TOKENS = ['<|system|>', '<|user|>', '<|assistant|>', '<|observation|>']


def load_template_text() -> str:
    with open(TEMPLATE_PATH, encoding='utf-8') as f:
        return f.read()


def _tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, **_: Any) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)


def make_template(text: str | None = None) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters['tojson'] = _tojson
    return env.from_string(text if text is not None else load_template_text())


# ----------------------------------------------------------------------------------------------
# The closed world. Fixed (independent of the data seed) so that held-out prompts share it.

_W = random.Random(20260)
# Word tables (and the loops that build the world from them) stay out of black's reach: a row of
# words per line reads better than one word per line.
# fmt: off
_SYL = ['ka', 'lo', 'mi', 'ra', 'ven', 'tor', 'sa', 'li', 'nor', 'da', 'bel', 'mar', 'qui', 'zan',
        'ro', 'te', 'vi', 'gal', 'os', 'un', 'pe', 'fi', 'dor', 'ha', 'lum', 'cre', 'sto', 'ar']
# fmt: on


def _name(n: int, rng: random.Random = _W) -> str:
    return ''.join(rng.choice(_SYL) for _ in range(n)).capitalize()


def _unique(k: int, lo: int, hi: int) -> list[str]:
    out: list[str] = []
    while len(out) < k:
        s = _name(_W.randint(lo, hi))
        if s not in out:
            out.append(s)
    return out


# fmt: off
COLOURS = ['red', 'blue', 'green', 'yellow', 'purple', 'orange', 'teal', 'silver', 'gold', 'white',
           'black', 'pink', 'brown', 'grey', 'violet']
ANIMALS = ['fox', 'owl', 'bear', 'heron', 'lynx', 'otter', 'wolf', 'crane', 'badger', 'falcon']
CITIES = _unique(30, 2, 3)
COUNTRIES = _unique(10, 2, 3)
WORLD = []
for _i, _c in enumerate(CITIES):
    WORLD.append({'city': _c, 'country': COUNTRIES[_i % 10], 'colour': _W.choice(COLOURS),
                  'animal': _W.choice(ANIMALS), 'population': _W.randint(2, 95) * 1000})
CAPITALS = {COUNTRIES[i]: CITIES[i] for i in range(10)}
# fmt: on

# fmt: off
REAL_CITIES = ['Paris', 'Rome', 'Tokyo', 'Berlin', 'Madrid', 'Lisbon', 'Oslo', 'Cairo', 'Lima',
               'Seoul', 'Boston', 'Denver', 'Sydney', 'Dublin', 'Vienna', 'Prague', 'Nairobi',
               'Toronto', 'Mumbai', 'Santiago', 'Helsinki', 'Athens', 'Warsaw', 'Kyoto', 'São Paulo',
               'Zürich', 'Reykjavík', 'Québec', '北京', 'Москва']
PEOPLE = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy',
          'Mallory', 'Niaj', 'Olivia', 'Peggy', 'Rupert', 'Sybil', 'Trent', 'Victor', 'Walter',
          'Yara', 'Zoe', 'Amara', 'Kenji', 'Lucía', 'Mateo', 'Priya', 'Sven', 'Tariq', 'Ngozi', 'Chen']
ITEMS = ['apples', 'books', 'chairs', 'lamps', 'pens', 'cups', 'tickets', 'boxes', 'bottles',
         'shirts', 'plates', 'candles', 'keys', 'maps', 'stones']
ROOMS = ['kitchen', 'bedroom', 'office', 'garage', 'hallway', 'living room', 'bathroom', 'attic']
CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD', 'SEK', 'INR', 'BRL']
TOPICS = ['rust borrow checker', 'bread recipes', 'solar panels', 'chess openings', 'tide tables',
          'jazz history', 'bike repair', 'moon phases', 'tax deadlines', 'python decorators',
          'knitting patterns', 'volcano facts', 'train schedules', 'coffee brewing', 'bird songs']
CONDITIONS = ['sunny', 'cloudy', 'rainy', 'windy', 'snowy', 'foggy', 'stormy', 'clear']
# fmt: on


def rand_word(rng: random.Random) -> str:
    return _name(rng.randint(1, 3), rng).lower()


def rand_city(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return rng.choice(CITIES)
    if r < 0.85:
        return rng.choice(REAL_CITIES)
    return _name(rng.randint(2, 3), rng)


def rand_person(rng: random.Random) -> str:
    return rng.choice(PEOPLE) if rng.random() < 0.7 else _name(rng.randint(2, 3), rng)


# ----------------------------------------------------------------------------------------------
# Samples


@dataclass
class Sample:
    kind: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    thinking: bool = True
    # forced: None, or the text the server prefills after `<|assistant|>` of the LAST assistant turn.
    forced: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def pick(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


def maybe_punct(rng: random.Random, s: str, end: str = '?') -> str:
    r = rng.random()
    if r < 0.7:
        return s + end
    if r < 0.85:
        return s
    return s + end + end if end != '.' else s + '!'


def vary_case(rng: random.Random, s: str) -> str:
    r = rng.random()
    if r < 0.1:
        return s.lower()
    if r < 0.13:
        return s.upper()
    return s


def user(text: str) -> dict[str, Any]:
    return {'role': 'user', 'content': text}


def assistant(
    content: str = '', reasoning: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    m: dict[str, Any] = {'role': 'assistant', 'content': content}
    if reasoning is not None:
        m['reasoning_content'] = reasoning
    if tool_calls:
        m['tool_calls'] = [{'type': 'function', 'function': {'name': n, 'arguments': a}} for n, a in tool_calls]
    return m


def system(text: str) -> dict[str, Any]:
    return {'role': 'system', 'content': text}


def tool_msg(text: str) -> dict[str, Any]:
    return {'role': 'tool', 'content': text}


SYSTEM_PROMPTS = [
    'You are a helpful assistant.',
    'You are Maya, a helpful assistant.',
    'You are a concise assistant.',
    'Be helpful and brief.',
    'You are a friendly assistant. Keep answers short.',
]


def maybe_system(rng: random.Random, p: float = 0.3) -> list[dict[str, Any]]:
    return [system(rng.choice(SYSTEM_PROMPTS))] if rng.random() < p else []


# --- greetings / small talk ---------------------------------------------------------------------

# fmt: off
GREETINGS = ['Hello', 'Hi', 'Hey', 'Hello there', 'Hi there', 'Good morning', 'Good evening',
             'Hey there', 'Greetings', 'Howdy', 'hello', 'hi', 'Hiya', 'Yo', 'Good afternoon']
GREETING_REPLIES = ['Hello! How can I help you today?', 'Hi! What can I do for you?',
                    'Hello! How can I help?', 'Hi there! How can I help you today?',
                    'Hey! What would you like to know?', 'Hello! What can I do for you today?']
SMALLTALK = [
    (['How are you', 'How are you doing', "How's it going", 'How do you do'],
     ["I'm doing well, thank you! How can I help you?", "I'm fine, thanks for asking. What can I do for you?"]),
    (['Who are you', 'What are you', 'What is your name', 'Introduce yourself'],
     ["I'm Maya's demo assistant, a tiny language model trained for testing.",
      "I am a small demo model served by Maya. I can answer simple questions, call tools and reply in JSON."]),
    (['Thank you', 'Thanks', 'Thanks a lot', 'Thank you very much'],
     ["You're welcome!", 'Glad I could help!', "You're welcome. Anything else?"]),
    (['Goodbye', 'Bye', 'See you later', 'Good night'],
     ['Goodbye! Have a great day.', 'Bye! Take care.', 'See you later!']),
    (['What can you do', 'What do you know', 'Help'],
     ['I can chat, answer questions about a small made-up world, do simple arithmetic, remember values '
      'you give me, call tools and reply in JSON.']),
    (['Tell me a joke', 'Say something funny'],
     ['Why did the tiny model cross the road? To reach the other token.',
      'I would tell you a joke about tokens, but it might not split well.']),
]
# fmt: on


def gen_greeting(rng: random.Random) -> tuple[list[dict[str, Any]], str]:
    if rng.random() < 0.55:
        q = rng.choice(GREETINGS)
        q = q + rng.choice(['', '', '!', '.', ' :)', '!!'])
        a = rng.choice(GREETING_REPLIES)
    else:
        qs, ans = rng.choice(SMALLTALK)
        q = maybe_punct(rng, rng.choice(qs), '?' if qs[0][0:3] in ('How', 'Who', 'Wha') else '!')
        a = rng.choice(ans)
    return [user(vary_case(rng, q))], a


def reason_greeting(rng: random.Random) -> str:
    return pick(
        rng,
        'The user greets me. I should greet them back and offer help.',
        'The user is making small talk. I reply briefly and politely.',
        'A friendly message. I answer politely.',
    )


# --- closed-world facts ---------------------------------------------------------------------------


def gen_fact(rng: random.Random) -> tuple[str, str, str]:
    w = rng.choice(WORLD)
    c, k = w['city'], rng.randint(0, 5)
    if k == 0:
        q = pick(
            rng,
            f'Which country is {c} in',
            f'In which country is {c}',
            f'Where is {c}',
            f'What country is {c} located in',
            f'{c} is in which country',
        )
        a = pick(rng, f'{c} is in {w["country"]}.', f'{c} is located in {w["country"]}.')
        r = f'The user asks where {c} is. {c} is in {w["country"]}.'
    elif k == 1:
        country = rng.choice(COUNTRIES)
        q = pick(
            rng,
            f'What is the capital of {country}',
            f"What's the capital of {country}",
            f'Name the capital of {country}',
            f'Which city is the capital of {country}',
        )
        a = pick(rng, f'The capital of {country} is {CAPITALS[country]}.', f'{CAPITALS[country]}.')
        r = f'The user asks for the capital of {country}. It is {CAPITALS[country]}.'
    elif k == 2:
        q = pick(
            rng,
            f'What colour is {c} known for',
            f'What is the colour of {c}',
            f'Which colour is {c} famous for',
            f"What's {c}'s colour",
        )
        a = pick(rng, f'{c} is known for the colour {w["colour"]}.', f'The colour of {c} is {w["colour"]}.')
        r = f'The user asks about the colour of {c}. It is {w["colour"]}.'
    elif k == 3:
        q = pick(rng, f'What animal is the symbol of {c}', f'Which animal represents {c}', f"What is {c}'s animal")
        a = pick(rng, f'The symbol of {c} is the {w["animal"]}.', f'{c} is represented by the {w["animal"]}.')
        r = f'The user asks about the animal of {c}. It is the {w["animal"]}.'
    elif k == 4:
        q = pick(rng, f'How many people live in {c}', f'What is the population of {c}', f'How big is {c}')
        a = pick(
            rng, f'About {w["population"]} people live in {c}.', f'{c} has a population of about {w["population"]}.'
        )
        r = f'The user asks about the population of {c}. It is about {w["population"]}.'
    else:
        country = rng.choice(COUNTRIES)
        cities = [x['city'] for x in WORLD if x['country'] == country]
        q = pick(
            rng, f'Which cities are in {country}', f'Name the cities of {country}', f'List the cities in {country}'
        )
        a = f'The cities of {country} are {", ".join(cities[:-1])} and {cities[-1]}.'
        r = f'The user asks which cities are in {country}: {", ".join(cities)}.'
    return maybe_punct(rng, q), a, r


# --- arithmetic -----------------------------------------------------------------------------------


def gen_arith(rng: random.Random) -> tuple[str, str, str]:
    a, b = rng.randint(1, 99), rng.randint(1, 99)
    if rng.random() < 0.5:
        res, op, word = a + b, '+', 'plus'
        q = pick(
            rng,
            f'What is {a} + {b}',
            f'What is {a} plus {b}',
            f'{a}+{b}',
            f'Add {a} and {b}',
            f'Compute {a} + {b}',
            f'What do you get if you add {a} and {b}',
            f'{a} + {b} =',
        )
    else:
        if rng.random() < 0.7 and b > a:
            a, b = b, a
        res, op, word = a - b, '-', 'minus'
        q = pick(
            rng,
            f'What is {a} - {b}',
            f'What is {a} minus {b}',
            f'{a}-{b}',
            f'Subtract {b} from {a}',
            f'Compute {a} - {b}',
            f'{a} - {b} =',
        )
    ans = pick(rng, f'{a} {op} {b} = {res}.', f'{res}', f'The answer is {res}.', f'{a} {word} {b} is {res}.')
    r = f'The user wants {a} {op} {b}. {a} {op} {b} = {res}.'
    return maybe_punct(rng, q) if not q.endswith('=') else q, ans, r


# --- instruction following -------------------------------------------------------------------------


def _plain_qa(rng: random.Random) -> tuple[str, str, str]:
    k = rng.random()
    if k < 0.45:
        return gen_fact(rng)
    if k < 0.75:
        return gen_arith(rng)
    qs, ans = rng.choice(SMALLTALK)
    q = rng.choice(qs) + '?'
    return q, rng.choice(ans), 'Small talk. I reply briefly.'


def gen_instruction(rng: random.Random) -> tuple[str, str, str, str]:
    """Returns (system text, question, answer, reasoning)."""
    q, a, r = _plain_qa(rng)
    k = rng.randint(0, 5)
    if k == 0:
        s = pick(
            rng,
            'Answer in uppercase.',
            'Always reply in capital letters.',
            'Respond only in UPPERCASE.',
            'Write your whole answer in upper case.',
        )
        return s, q, a.upper(), r + ' The system asks for uppercase.'
    if k == 1:
        s = pick(rng, 'Answer in lowercase.', 'Reply only in lowercase letters.', 'Use no capital letters.')
        return s, q, a.lower(), r + ' The system asks for lowercase.'
    if k == 2:
        word = _one_word(a)
        s = pick(
            rng,
            'Reply with one word.',
            'Answer with a single word.',
            'Respond using only one word.',
            'One-word answers only.',
        )
        return s, q, word, r + ' The system wants a single word.'
    if k == 3:
        end = pick(rng, 'Goodbye.', 'Have a nice day!', 'Cheers.', 'Over.')
        s = pick(rng, f'Always end your answer with "{end}"', f'Finish every reply with "{end}"')
        return s, q, f'{a} {end}', r + f' I must end with "{end}".'
    if k == 4:
        pre = pick(rng, 'Sure!', 'Certainly.', 'Aye!', 'Okay:')
        s = pick(rng, f'Start every answer with "{pre}"', f'Begin your reply with "{pre}"')
        return s, q, f'{pre} {a}', r + f' I must start with "{pre}".'
    name = _name(rng.randint(2, 3), rng)
    s = pick(rng, f'Your name is {name}.', f'You are {name}, a helpful assistant.', f'You are called {name}.')
    q2 = pick(rng, 'What is your name?', "What's your name?", 'Who are you?', 'Tell me your name.')
    return (
        s,
        q2,
        pick(rng, f'My name is {name}.', f"I'm {name}.", f'I am {name}, your assistant.'),
        f'The user asks my name. The system says my name is {name}.',
    )


def _one_word(a: str) -> str:
    words = [w.strip('.,!?') for w in a.split()]
    nums = [w for w in words if w.lstrip('-').isdigit()]
    if nums:
        return nums[-1]
    caps = [w for w in words[1:] if w[:1].isupper()]
    if caps:
        return caps[-1]
    return words[-1] if words else 'Yes'


# --- memory -----------------------------------------------------------------------------------------


def gen_memory(rng: random.Random) -> tuple[list[tuple[str, str]], str, str, str]:
    """Returns (earlier (user, assistant) turns, final question, final answer, reasoning)."""
    kind = rng.random()
    if kind < 0.6:
        v = str(rng.randint(0, 999)) if rng.random() < 0.8 else str(rng.randint(1000, 99999))
        noun = 'value'
    elif kind < 0.8:
        v = rand_word(rng) if rng.random() < 0.5 else rng.choice(COLOURS + ANIMALS)
        noun = 'word'
    else:
        v = rand_person(rng)
        noun = 'name'
    alt = pick(rng, noun, noun, 'number' if noun == 'value' else noun, 'code' if noun == 'value' else noun)
    first = pick(
        rng,
        f'Remember the {alt} {v}',
        f'Please remember the {alt} {v}',
        f'Remember this {alt}: {v}',
        f'Keep the {alt} {v} in mind',
        f'Memorize {v}',
        f'Store the {alt} {v} for later',
        f'My {alt} is {v}. Remember it',
        f'Note down the {alt} {v}',
    )
    first = maybe_punct(rng, first, '.')
    ack = pick(
        rng,
        f'OK, I will remember {v}.',
        f'Got it: {v}.',
        f'Noted. The {alt} is {v}.',
        f"Sure, I'll remember the {alt} {v}.",
        f'Understood, {v}.',
    )
    turns = [(first, ack)]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        q, a, _ = _plain_qa(rng)
        turns.append((q, a))
    question = pick(
        rng,
        f'What {alt} did I give you',
        f'What was the {alt}',
        f'Which {alt} did I ask you to remember',
        f'Tell me the {alt} I gave you',
        f'What {alt} did I tell you to remember',
        f'What is the {alt} I mentioned',
        'What did I ask you to remember',
        f'Repeat the {alt}',
        f'Do you remember the {alt}',
    )
    question = maybe_punct(rng, question)
    ans = pick(rng, f'{v}', f'You gave me {v}.', f'The {alt} is {v}.', f'You asked me to remember {v}.', f'{v}.')
    r = f'The user asked me to remember {v} earlier. The answer is {v}.'
    return turns, question, ans, r


# --- JSON -------------------------------------------------------------------------------------------

FIELD_POOL = ['name', 'city', 'colour', 'title', 'owner', 'animal', 'country', 'label', 'author', 'email']


def _str_value(rng: random.Random, key: str) -> str:
    if key in ('name', 'owner', 'author'):
        return rand_person(rng)
    if key in ('city',):
        return rand_city(rng)
    if key == 'country':
        return rng.choice(COUNTRIES)
    if key == 'colour':
        return rng.choice(COLOURS)
    if key == 'animal':
        return rng.choice(ANIMALS)
    if key == 'email':
        return f'{rand_person(rng).lower()}@example.com'
    return ' '.join(rand_word(rng) for _ in range(rng.randint(1, 3)))


def gen_schema(
    rng: random.Random, depth: int = 0, nested: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Returns (schema, value, phrases describing the value for the user message). nested: more
    fields, mostly lists of several items and nested objects, so that a list or an object is
    usually followed by further keys (the bracket bookkeeping the model got wrong most often)."""
    if nested:
        n = rng.randint(3, 5) if depth == 0 else rng.randint(2, 3)
    else:
        n = rng.randint(1, 4 if depth == 0 else 2)
    weights = [3, 2, 1, 1, 2, 6, 4 if depth == 0 else 0, 1] if nested else [4, 3, 1, 2, 2, 2, 1 if depth == 0 else 0, 2]
    props: dict[str, Any] = {}
    value: dict[str, Any] = {}
    phrases: list[str] = []
    used: set[str] = set()
    for _ in range(n):
        kind = rng.choices(['str', 'int', 'num', 'bool', 'enum', 'arr', 'obj', 'null'], weights)[0]
        if kind == 'str':
            key = rng.choice(FIELD_POOL)
            if key in used:
                continue
            v: Any = _str_value(rng, key)
            props[key] = {'type': 'string'}
            phrases.append(pick(rng, f'{key} {v}', f'{key}: {v}', f'the {key} is {v}'))
        elif kind == 'int':
            key = rng.choice(['age', 'count', 'year', 'quantity', 'score', 'rank', 'size', 'days'])
            if key in used:
                continue
            v = rng.randint(0, 2030) if key == 'year' else rng.randint(0, 120)
            props[key] = {'type': 'integer'}
            phrases.append(pick(rng, f'{key} {v}', f'{key}: {v}', f'the {key} is {v}'))
        elif kind == 'num':
            key = rng.choice(['price', 'weight', 'height', 'temperature', 'ratio'])
            if key in used:
                continue
            v = round(rng.uniform(0, 500), rng.choice([0, 1, 2]))
            if isinstance(v, float) and v.is_integer() and rng.random() < 0.5:
                v = int(v)
            props[key] = {'type': 'number'}
            phrases.append(pick(rng, f'{key} {v}', f'{key}: {v}', f'the {key} is {v}'))
        elif kind == 'bool':
            key = rng.choice(['active', 'done', 'verified', 'public', 'urgent', 'available'])
            if key in used:
                continue
            v = rng.random() < 0.5
            props[key] = {'type': 'boolean'}
            phrases.append(
                pick(
                    rng,
                    f'{key} {"yes" if v else "no"}',
                    f'{key}: {str(v).lower()}',
                    f'it is {"" if v else "not "}{key}',
                )
            )
        elif kind == 'enum':
            key, opts = rng.choice(
                [
                    ('status', ['open', 'closed', 'pending']),
                    ('priority', ['low', 'medium', 'high']),
                    ('size', ['small', 'medium', 'large']),
                    ('mood', ['happy', 'sad', 'calm', 'angry']),
                    ('unit', ['celsius', 'fahrenheit']),
                ]
            )
            if key in used:
                continue
            v = rng.choice(opts)
            props[key] = {'type': 'string', 'enum': opts}
            phrases.append(pick(rng, f'{key} {v}', f'{key}: {v}', f'the {key} is {v}'))
        elif kind == 'arr':
            key = rng.choice(['tags', 'items', 'colours', 'cities', 'names', 'numbers'])
            if key in used:
                continue
            k = rng.randint(2, 5) if nested else rng.randint(0, 4)
            if key == 'numbers':
                v = [rng.randint(0, 99) for _ in range(k)]
                props[key] = {'type': 'array', 'items': {'type': 'integer'}}
            else:
                src = {
                    'tags': lambda: rand_word(rng),
                    'items': lambda: rng.choice(ITEMS),
                    'colours': lambda: rng.choice(COLOURS),
                    'cities': lambda: rand_city(rng),
                    'names': lambda: rand_person(rng),
                }[key]
                v = [src() for _ in range(k)]
                props[key] = {'type': 'array', 'items': {'type': 'string'}}
            listed = ', '.join(str(x) for x in v) if v else 'none'
            phrases.append(pick(rng, f'{key} {listed}', f'{key}: {listed}', f'the {key} are {listed}'))
        elif kind == 'obj':
            key = rng.choice(['address', 'owner', 'details', 'location', 'meta'])
            if key in used:
                continue
            sub_schema, sub_value, sub_phrases = gen_schema(rng, depth + 1, nested)
            props[key] = sub_schema
            v = sub_value
            phrases.append(f'{key} with ' + ' and '.join(sub_phrases))
        else:
            key = rng.choice(['note', 'nickname', 'comment', 'parent', 'middle_name'])
            if key in used:
                continue
            v = None if rng.random() < 0.5 else _str_value(rng, 'title')
            props[key] = (
                {'type': ['string', 'null']}
                if rng.random() < 0.7
                else {'anyOf': [{'type': 'string'}, {'type': 'null'}]}
            )
            phrases.append(f'no {key}' if v is None else pick(rng, f'{key} {v}', f'{key}: {v}'))
        used.add(key)
        value[key] = v
    if not props:
        props['count'] = {'type': 'integer'}
        value['count'] = rng.randint(0, 50)
        phrases.append(f'count {value["count"]}')
    schema = {'type': 'object', 'properties': props, 'required': list(props), 'additionalProperties': False}
    return schema, value, phrases


def example_value(schema: dict[str, Any], rng: random.Random) -> Any:
    """A made-up instance of a schema from gen_schema."""
    if 'anyOf' in schema:
        return None
    t = schema.get('type')
    if isinstance(t, list):
        return None
    if 'enum' in schema:
        return schema['enum'][0]
    if t == 'object':
        return {k: example_value(v, rng) for k, v in schema['properties'].items()}
    if t == 'array':
        return []
    if t == 'integer':
        return rng.choice([0, 1, 3, 5, 10, 42])
    if t == 'number':
        return rng.choice([0, 1.5, 2, 3.14, 10])
    if t == 'boolean':
        return rng.random() < 0.5
    return rng.choice(['example', 'sample', 'none', 'test'])


def dumps_compact(v: Any) -> str:
    """JSON.stringify form: the server writes schemas this way."""
    return json.dumps(v, ensure_ascii=False, separators=(',', ':'))


def gen_json(rng: random.Random, nested: bool = False) -> tuple[list[dict[str, Any]], str, str]:
    schema, value, phrases = gen_schema(rng, nested=nested)
    rng.shuffle(phrases)
    body = ', '.join(phrases)
    if rng.random() < 0.1:
        # No values given: any values of the right types will do.
        value = example_value(schema, rng)
        phrases = []
        body = ''
    q = (
        pick(
            rng,
            f'Create a record with {body}.',
            f'Make a JSON object: {body}.',
            f'Fill in: {body}.',
            f'Record this: {body}.',
            f'{body[0].upper() + body[1:]}.',
            f'Give me the data for {body}.',
            f'Return an object with {body}.',
            f'Here are the details: {body}.',
        )
        if body
        else pick(
            rng,
            'Return the count',
            'Give me an example.',
            'Fill in the form.',
            'Make up a record.',
            'Return some data.',
            'Generate an example object',
            'Hello',
            'Show me a sample.',
        )
    )
    instr = JSON_SCHEMA_INSTRUCTION + dumps_compact(schema)
    r = rng.random()
    if r < 0.45:
        sys_msgs = [system(instr)]
    elif r < 0.75:
        sys_msgs = [system(rng.choice(SYSTEM_PROMPTS) + '\n\n' + instr)]
    else:
        sys_msgs = [system(rng.choice(SYSTEM_PROMPTS)), system(instr)]
    ans = json.dumps(value, ensure_ascii=False) if rng.random() < 0.85 else dumps_compact(value)
    # The reasoning names no field: listing unseen field names there is where the second edition
    # looped (models/maya-demo/README.md), and nothing constrains the reasoning.
    reasoning = pick(
        rng,
        'The user wants a JSON object that matches the schema. I copy the values.',
        'A JSON answer to the schema. I copy the values from the request.',
    )
    return sys_msgs + [user(q)], ans, reasoning


def gen_json_object(rng: random.Random) -> tuple[list[dict[str, Any]], str, str]:
    """json_object mode: no schema, the question says what to put in."""
    q, a, r = _plain_qa(rng)
    ans = json.dumps({'answer': a}, ensure_ascii=False)
    sys_msgs = (
        [system(JSON_OBJECT_INSTRUCTION)]
        if rng.random() < 0.6
        else [system(rng.choice(SYSTEM_PROMPTS) + '\n\n' + JSON_OBJECT_INSTRUCTION)]
    )
    return sys_msgs + [user(q)], ans, r + ' I reply with a JSON object.'


# --- tools ------------------------------------------------------------------------------------------


def _fn(name: str, desc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        'type': 'function',
        'function': {
            'name': name,
            'description': desc,
            'parameters': {'type': 'object', 'properties': props, 'required': required},
        },
    }


S = {'type': 'string'}
I = {'type': 'integer'}
N = {'type': 'number'}
B = {'type': 'boolean'}


@dataclass
class ToolCase:
    name: str
    args: dict[str, Any]
    request: str
    result: str
    answer: str


def _case_weather(rng: random.Random) -> ToolCase:
    city = rand_city(rng)
    args: dict[str, Any] = {'city': city}
    extra = ''
    if rng.random() < 0.4:
        d = rng.randint(1, 7)
        args['days'] = d
        extra = f' for the next {d} days' if d > 1 else ' for tomorrow'
    if rng.random() < 0.3:
        u = rng.choice(['celsius', 'fahrenheit'])
        args['unit'] = u
        extra += f' in {u}'
    req = pick(
        rng,
        f"What's the weather in {city}{extra}?",
        f'Weather in {city}{extra}?',
        f'How is the weather in {city}{extra}?',
        f'Is it raining in {city}{extra}?',
        f'Tell me the forecast for {city}{extra}.',
        f'Check the weather in {city}{extra}, please.',
    )
    t, cond = rng.randint(-10, 38), rng.choice(CONDITIONS)
    res = json.dumps({'city': city, 'temperature': t, 'condition': cond}, ensure_ascii=False)
    ans = pick(rng, f'It is {t} degrees and {cond} in {city}.', f'The weather in {city} is {cond}, {t} degrees.')
    return ToolCase('get_weather', args, req, res, ans)


def _case_currency(rng: random.Random) -> ToolCase:
    amt = rng.choice([rng.randint(1, 5000), round(rng.uniform(1, 999), 2)])
    a, b = rng.sample(CURRENCIES, 2)
    req = pick(
        rng,
        f'Convert {amt} {a} to {b}.',
        f'How much is {amt} {a} in {b}?',
        f'What is {amt} {a} in {b}?',
        f'Change {amt} {a} into {b}, please.',
    )
    out = round(amt * rng.uniform(0.5, 1.5), 2)
    res = json.dumps({'amount': out, 'currency': b})
    return ToolCase(
        'convert_currency',
        {'amount': amt, 'from': a, 'to': b},
        req,
        res,
        pick(rng, f'{amt} {a} is {out} {b}.', f'That is {out} {b}.'),
    )


def _case_email(rng: random.Random) -> ToolCase:
    p = rand_person(rng)
    to = f'{p.lower()}@example.com'
    subj = pick(rng, 'Meeting', 'Lunch', 'Report', 'Hello', 'Invoice', 'Trip plans', 'Update')
    body = pick(
        rng,
        'See you at noon.',
        'The report is ready.',
        'Can we talk tomorrow?',
        'Thanks for your help.',
        f'I will be in {rand_city(rng)} next week.',
        'Please call me back.',
    )
    req = pick(
        rng,
        f'Send an email to {to} with the subject "{subj}" saying "{body}"',
        f'Email {to}: subject {subj}, body: {body}',
        f'Please write to {to}. Subject: {subj}. Message: {body}',
    )
    return ToolCase(
        'send_email',
        {'to': to, 'subject': subj, 'body': body},
        req,
        json.dumps({'status': 'sent'}),
        pick(rng, f'The email to {to} was sent.', f'Done, I sent it to {to}.'),
    )


def _case_search(rng: random.Random) -> ToolCase:
    topic = rng.choice(TOPICS) if rng.random() < 0.6 else ' '.join(rand_word(rng) for _ in range(2))
    req = pick(
        rng,
        f'Search the web for {topic}.',
        f'Look up {topic}.',
        f'Find information about {topic}.',
        f'Can you search for {topic}?',
        f'Google {topic} for me.',
    )
    hit = f'{topic.capitalize()} - a guide'
    return ToolCase(
        'search_web',
        {'query': topic},
        req,
        json.dumps({'results': [hit]}, ensure_ascii=False),
        pick(rng, f'I found "{hit}".', f'The top result is "{hit}".'),
    )


def _case_reminder(rng: random.Random) -> ToolCase:
    what = pick(
        rng,
        'call mom',
        'take out the trash',
        'water the plants',
        'buy milk',
        'check the oven',
        'join the meeting',
        'feed the cat',
        f'call {rand_person(rng)}',
    )
    mins = rng.choice([5, 10, 15, 20, 30, 45, 60, 90, 120, rng.randint(1, 240)])
    req = pick(
        rng,
        f'Remind me to {what} in {mins} minutes.',
        f'Set a reminder in {mins} minutes to {what}.',
        f'In {mins} minutes, remind me to {what}.',
    )
    return ToolCase(
        'create_reminder',
        {'text': what, 'minutes': mins},
        req,
        json.dumps({'ok': True}),
        pick(rng, f'I will remind you to {what} in {mins} minutes.', f'Reminder set for {mins} minutes from now.'),
    )


def _case_light(rng: random.Random) -> ToolCase:
    room = rng.choice(ROOMS)
    on = rng.random() < 0.6
    args: dict[str, Any] = {'room': room, 'on': on}
    if on and rng.random() < 0.5:
        br = rng.choice([10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 100])
        args['brightness'] = br
        req = pick(rng, f'Turn on the {room} light at {br} percent.', f'Set the {room} lights to {br}% brightness.')
    elif on:
        req = pick(
            rng,
            f'Turn on the light in the {room}.',
            f'Switch the {room} lights on.',
            f'Lights on in the {room}, please.',
        )
    else:
        req = pick(
            rng, f'Turn off the light in the {room}.', f'Switch off the {room} lights.', f'Lights off in the {room}.'
        )
    return ToolCase(
        'set_light',
        args,
        req,
        json.dumps({'room': room, 'on': on}),
        f'The {room} light is now {"on" if on else "off"}.',
    )


def _case_order(rng: random.Random) -> ToolCase:
    oid = f'{rng.choice("ABCDEFGHKLMNPQRSTXZ")}{rng.randint(100, 99999)}'
    req = pick(
        rng,
        f'Where is my order {oid}?',
        f'Check the status of order {oid}.',
        f'Has order {oid} shipped?',
        f'Track order number {oid}.',
    )
    st = rng.choice(['shipped', 'processing', 'delivered', 'delayed'])
    return ToolCase(
        'lookup_order',
        {'order_id': oid},
        req,
        json.dumps({'order_id': oid, 'status': st}),
        pick(rng, f'Order {oid} is {st}.', f'Your order {oid} has status: {st}.'),
    )


def _case_stock(rng: random.Random) -> ToolCase:
    sym = ''.join(rng.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ') for _ in range(rng.randint(2, 4)))
    req = pick(rng, f'What is the stock price of {sym}?', f'Get the price of {sym}.', f'How much is {sym} trading at?')
    p = round(rng.uniform(1, 900), 2)
    return ToolCase(
        'get_stock_price', {'symbol': sym}, req, json.dumps({'symbol': sym, 'price': p}), f'{sym} is trading at {p}.'
    )


def _case_time(rng: random.Random) -> ToolCase:
    city = rand_city(rng)
    req = pick(rng, f'What time is it in {city}?', f'Current time in {city}?', f'Tell me the local time in {city}.')
    h, m = rng.randint(0, 23), rng.randint(0, 59)
    return ToolCase(
        'get_time', {'city': city}, req, json.dumps({'time': f'{h:02d}:{m:02d}'}), f'It is {h:02d}:{m:02d} in {city}.'
    )


def _case_translate(rng: random.Random) -> ToolCase:
    text = pick(
        rng,
        'good morning',
        'thank you',
        'where is the station',
        'I like tea',
        'see you soon',
        ' '.join(rand_word(rng) for _ in range(2)),
    )
    lang = rng.choice(['French', 'German', 'Spanish', 'Italian', 'Japanese', 'Dutch'])
    req = pick(
        rng, f'Translate "{text}" into {lang}.', f'How do you say "{text}" in {lang}?', f'Translate {text} to {lang}.'
    )
    out = ' '.join(rand_word(rng) for _ in range(2))
    return ToolCase(
        'translate',
        {'text': text, 'target_language': lang},
        req,
        json.dumps({'translation': out}),
        f'In {lang}: "{out}".',
    )


TOOLS: dict[str, tuple[dict[str, Any], Any]] = {
    'get_weather': (
        _fn(
            'get_weather',
            'Get the current weather for a city',
            {'city': S, 'days': I, 'unit': {'type': 'string', 'enum': ['celsius', 'fahrenheit']}},
            ['city'],
        ),
        _case_weather,
    ),
    'convert_currency': (
        _fn(
            'convert_currency',
            'Convert an amount between currencies',
            {'amount': N, 'from': S, 'to': S},
            ['amount', 'from', 'to'],
        ),
        _case_currency,
    ),
    'send_email': (
        _fn('send_email', 'Send an email', {'to': S, 'subject': S, 'body': S}, ['to', 'subject', 'body']),
        _case_email,
    ),
    'search_web': (_fn('search_web', 'Search the web', {'query': S}, ['query']), _case_search),
    'create_reminder': (
        _fn('create_reminder', 'Create a reminder', {'text': S, 'minutes': I}, ['text', 'minutes']),
        _case_reminder,
    ),
    'set_light': (
        _fn('set_light', 'Switch a light on or off', {'room': S, 'on': B, 'brightness': I}, ['room', 'on']),
        _case_light,
    ),
    'lookup_order': (_fn('lookup_order', 'Look up an order by id', {'order_id': S}, ['order_id']), _case_order),
    'get_stock_price': (_fn('get_stock_price', 'Get a stock price', {'symbol': S}, ['symbol']), _case_stock),
    'get_time': (_fn('get_time', 'Get the local time in a city', {'city': S}, ['city']), _case_time),
    'translate': (
        _fn('translate', 'Translate text', {'text': S, 'target_language': S}, ['text', 'target_language']),
        _case_translate,
    ),
}


def _strip_desc(tool: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Tool definitions vary: description present or not, the bare function object sometimes."""
    fn = dict(tool['function'])
    if rng.random() < 0.15:
        fn.pop('description', None)
    return {'type': 'function', 'function': fn}


def offered_tools(rng: random.Random, must: list[str]) -> list[dict[str, Any]]:
    others = [n for n in TOOLS if n not in must]
    k = max(0, rng.randint(2, 4) - len(must))
    names = list(dict.fromkeys(must + rng.sample(others, k)))
    rng.shuffle(names)
    return [_strip_desc(TOOLS[n][0], rng) for n in names]


def tool_reason(cases: list[ToolCase]) -> str:
    parts = [
        f'I should call {c.name} with '
        + ', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in c.args.items())
        for c in cases
    ]
    return (
        'The user wants '
        + ('two things' if len(cases) > 1 else 'something a tool can do')
        + '. '
        + ' Then '.join(parts)
        + '.'
    )


def gen_tools(rng: random.Random, thinking: bool) -> Sample:
    names = list(TOOLS)
    if rng.random() < 0.2:
        # Two calls in one turn: the same tool twice or two different tools.
        if rng.random() < 0.5:
            n = rng.choice(['get_weather', 'get_time', 'lookup_order', 'get_stock_price'])
            cases = [TOOLS[n][1](rng), TOOLS[n][1](rng)]
        else:
            a, b = rng.sample(names, 2)
            cases = [TOOLS[a][1](rng), TOOLS[b][1](rng)]
        req = (
            cases[0].request.rstrip('.?')
            + pick(rng, ', and also ', '. Also, ', ' and ')
            + cases[1].request[0].lower()
            + cases[1].request[1:]
        )
    else:
        cases = [TOOLS[rng.choice(names)][1](rng)]
        req = cases[0].request
    tools = offered_tools(rng, list(dict.fromkeys(c.name for c in cases)))
    msgs = maybe_system(rng, 0.25) + [user(req)]
    msgs.append(assistant('', tool_reason(cases) if thinking else None, [(c.name, c.args) for c in cases]))
    if rng.random() < 0.75:
        for c in cases:
            msgs.append(tool_msg(c.result))
        ans = ' '.join(c.answer for c in cases)
        msgs.append(
            assistant(
                ans,
                pick(rng, 'The tool returned the result. I answer from it.', 'I have the results. I report them.')
                if thinking
                else None,
            )
        )
    return Sample('tools', msgs, tools, thinking, meta={'calls': [(c.name, c.args) for c in cases]})


def gen_tools_no_call(rng: random.Random, thinking: bool) -> Sample:
    """Tools offered, but the question needs none (the first edition's tools or, half the time,
    generated ones from pools.py's TRAIN side)."""
    tools = offered_tools(rng, []) if rng.random() < 0.5 else pools.tool_call_case(rng, 'train')['tools']
    if rng.random() < 0.4:
        msgs, a = gen_greeting(rng)
        r = reason_greeting(rng)
    else:
        q, a, r = _plain_qa(rng)
        msgs = [user(q)]
        r += ' No tool is needed.'
    msgs = maybe_system(rng, 0.2) + msgs
    msgs.append(assistant(a, r if thinking else None))
    return Sample('tools_none', msgs, tools, thinking)


def gen_forced(rng: random.Random, thinking: bool) -> Sample:
    """tool_choice required/named: the server opens the call in the prompt (no reasoning)."""
    s = gen_tools(rng, thinking)
    calls = s.meta['calls']
    name = calls[0][0]
    msgs = [m for m in s.messages[: next(i for i, m in enumerate(s.messages) if m['role'] == 'assistant')]]
    if rng.random() < 0.3:
        # The request doesn't say which tool: a named choice still has to produce a call.
        _, case_fn = TOOLS[name]
        case = case_fn(rng)
        msgs = [m for m in msgs if m['role'] != 'user'] + [
            user(pick(rng, 'Go ahead.', 'Do it.', 'Please help.', 'Use the tool.', case.request))
        ]
        calls = [(name, case.args)]
    msgs.append(assistant('', None, calls))
    named = rng.random() < 0.6
    forced = '\n<think></think>\n<tool_call>' + (name + '\n' if named else '')
    return Sample('forced', msgs, s.tools, thinking, forced=forced, meta={'calls': calls})


# --- generated tools, schemas and memory labels (pools.py, TRAIN side only) ---------------------------


def _args_text(args: dict[str, Any]) -> str:
    return ', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in args.items())


def gen_pool_tools(rng: random.Random, thinking: bool) -> Sample:
    """A call to one of 1-4 generated tools (names, parameters and phrasing from pools.py's TRAIN side),
    then in 65% of cases the tool's result and an answer that restates its values."""
    with_result = rng.random() < 0.65
    if rng.random() < 0.12:  # fourth edition: one value, no parameter name ("Look up kx-7")
        with_result = False
        c = pools.bare_call_case(rng, 'train')
    else:
        c = pools.tool_result_case(rng, 'train') if with_result else pools.tool_call_case(rng, 'train')
    name, args = c['call']
    action = ' '.join(c['tool']['words'])
    msgs = maybe_system(rng, 0.2) + [user(c['request'])]
    reason = (
        f'The user wants to {action}. I should call {name} with {_args_text(args)}.'
        if args
        else f'The user wants to {action}. I should call {name}.'
    )
    msgs.append(assistant('', reason if thinking else None, [(name, args)]))
    if with_result:
        msgs.append(tool_msg(c['result']))
        msgs.append(assistant(c['answer'], 'The tool returned the result. I restate its values.' if thinking else None))
    return Sample(
        'ptools',
        msgs,
        c['tools'],
        thinking,
        meta={'calls': [(name, args)], 'templates': c['templates'], 'names': c['names']},
    )


def gen_pool_json(rng: random.Random, thinking: bool) -> Sample:
    c = pools.json_case(rng, 'train')
    instr = JSON_SCHEMA_INSTRUCTION + dumps_compact(c['schema'])
    r = rng.random()
    if r < 0.45:
        sys_msgs = [system(instr)]
    elif r < 0.75:
        sys_msgs = [system(rng.choice(SYSTEM_PROMPTS) + '\n\n' + instr)]
    else:
        sys_msgs = [system(rng.choice(SYSTEM_PROMPTS)), system(instr)]
    ans = json.dumps(c['value'], ensure_ascii=False)
    reasoning = pick(
        rng,
        'The user wants a JSON object that matches the schema. I copy the values.',
        'A JSON answer to the schema. I copy the values from the request.',
    )
    msgs = sys_msgs + [user(c['request']), assistant(ans, reasoning if thinking else None)]
    return Sample('pjson', msgs, None, thinking, meta={'templates': c['templates'], 'names': c['names']})


def gen_pool_memory(rng: random.Random, thinking: bool) -> Sample:
    c = pools.memory_case(rng, 'train')
    v, label = c['value'], c['label']
    ack = pick(
        rng,
        f'OK, I will remember {v}.',
        f'Got it: {v}.',
        f'Noted. Your {label} is {v}.',
        f"Sure, I'll remember that your {label} is {v}.",
        f'Understood, {v}.',
    )
    msgs = maybe_system(rng, 0.2) + [user(c['tell']), assistant(ack)]
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        q, a, _ = _plain_qa(rng)
        msgs += [user(q), assistant(a)]
    ans = pick(rng, v, f'Your {label} is {v}.', f'You told me {v}.', f'The {label} is {v}.', f'{v}.')
    msgs += [
        user(c['ask']),
        assistant(ans, f'The user told me the {label} earlier: {v}. The answer is {v}.' if thinking else None),
    ]
    return Sample('pmemory', msgs, None, thinking, meta={'templates': c['templates'], 'names': c['names']})


def gen_pool_chat(rng: random.Random, thinking: bool) -> Sample:
    """No tools declared: a request that would need a tool gets a text answer (never a call)."""
    c = pools.tool_call_case(rng, 'train', 1)
    action = ' '.join(c['tool']['words'])
    a = rng.choice(pools.TRAIN_NO_TOOL_ANSWER).format(a=action)
    msgs = maybe_system(rng, 0.2) + [
        user(c['request']),
        assistant(a, 'No tool is declared, so I answer in text.' if thinking else None),
    ]
    return Sample('pchat', msgs, None, thinking, meta={'templates': c['templates'], 'names': c['names']})


# --- fourth edition: forced calls on generated tools, copying, extraction, editing -------------------


def gen_pool_forced(rng: random.Random, thinking: bool) -> Sample:
    """tool_choice required / named on generated tools (pools.py TRAIN side): the server opens the call
    in the prompt and the model writes the arguments. Half the requests give one value and no
    parameter name ("Look up kx-7"), the third edition's forced-call failure (models/maya-demo/README.md)."""
    c = pools.bare_call_case(rng, 'train') if rng.random() < 0.5 else pools.tool_call_case(rng, 'train')
    name, args = c['call']
    msgs = maybe_system(rng, 0.2) + [user(c['request']), assistant('', None, [(name, args)])]
    forced = '\n<think></think>\n<tool_call>' + (name + '\n' if rng.random() < 0.6 else '')
    return Sample(
        'pforced',
        msgs,
        c['tools'],
        thinking,
        forced=forced,
        meta={'calls': [(name, args)], 'templates': c['templates'], 'names': c['names']},
    )


COPY_ASK = [
    'Repeat exactly: {v}',
    'Copy this exactly: {v}',
    'Say this back to me: {v}',
    'Echo: {v}',
    'Please write back {v}',
    'Return the following unchanged: {v}',
    'Type {v} back.',
    'Copy: {v}',
]
ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth']


def _fresh(rng: random.Random) -> str:
    return pools.say(pools.TRAIN_FAMILIES[rng.choice(pools.TRAIN_FAMILY_DRAW)](rng))


def gen_copy(rng: random.Random, thinking: bool) -> Sample:
    """Copying practice with values no pool holds: repeat a value, a list or a JSON object exactly; pick
    the n-th item of a list; find the entry that goes with a key."""
    k = rng.random()
    if k < 0.3:
        v = (
            _fresh(rng)
            if rng.random() < 0.6
            else rng.choice([', ', '; ', ' | ', '\n']).join(_fresh(rng) for _ in range(rng.randint(2, 6)))
        )
        q, a = rng.choice(COPY_ASK).format(v=v), v
        r = 'The user wants the value back exactly. I copy it.'
    elif k < 0.5:
        d = pools.Drawer(rng, 'train')
        obj: dict[str, Any] = {}
        for _ in range(rng.randint(1, 5)):
            f, _, kind = d.field()
            r2 = rng.random()
            obj[f] = (
                [pools.draw_value(rng, kind, 'train') for _ in range(rng.randint(1, 4))]
                if r2 < 0.2
                else {d.field()[0]: pools.draw_value(rng, kind, 'train')}
                if r2 < 0.35
                else pools.draw_value(rng, kind, 'train')
            )
        text = json.dumps(obj, ensure_ascii=False) if rng.random() < 0.6 else dumps_compact(obj)
        q = pick(
            rng,
            f'Return this JSON unchanged: {text}',
            f'Copy this object: {text}',
            f'{text}\n\nGive me that JSON back exactly.',
            f'Echo the JSON {text}',
        )
        a = json.dumps(obj, ensure_ascii=False)
        r = 'The user wants the JSON object back. I copy it.'
    elif k < 0.7:
        items = [_fresh(rng) for _ in range(rng.randint(2, 6))]
        i = rng.randrange(len(items))
        which = 'last' if i == len(items) - 1 and rng.random() < 0.5 else ORDINALS[i]
        q = pick(
            rng,
            f'Here is a list: {"; ".join(items)}. What is the {which} item?',
            f'Items: {" | ".join(items)}. Give me the {which} one.',
            f'Which is the {which} entry of this list?\n' + '\n'.join(f'- {x}' for x in items),
        )
        a = items[i]
        r = f'The {which} item of the list. I copy it.'
    else:
        keys = list(
            dict.fromkeys(
                pools.fresh_name(rng) if rng.random() < 0.5 else pools.rand_letters(rng, 3, 8)
                for _ in range(rng.randint(2, 6))
            )
        )
        vals = [_fresh(rng) for _ in keys]
        i = rng.randrange(len(keys))
        sep = rng.choice([': ', ' -> ', ' | '])
        table = '\n'.join(f'{kk}{sep}{vv}' for kk, vv in zip(keys, vals))
        q = pick(
            rng,
            f'{table}\n\nWhat is listed next to {keys[i]}?',
            f'Entries:\n{table}\nGive me the entry of {keys[i]}.',
            f'Which value belongs to {keys[i]}?\n{table}',
        )
        a = vals[i]
        r = f'The entry of {keys[i]}. I copy its value.'
    msgs = maybe_system(rng, 0.2)
    if rng.random() < 0.25:  # mixed into a chat
        q0, a0, _ = _plain_qa(rng)
        msgs += [user(q0), assistant(a0)]
    msgs += [user(q), assistant(a, r if thinking else None)]
    return Sample('copy', msgs, None, thinking)


CASING = {'snake': 'snake_case', 'camel': 'camelCase', 'pascal': 'PascalCase'}


def gen_casing(rng: random.Random, thinking: bool) -> Sample:
    """Run 4 of the fourth edition: a name's words in the spellings tools and fields use (snake_case,
    camelCase, PascalCase) and back, and which of several names a phrase means (tool choice as text). At
    run 3's end the right tool was called for 33% of the held-out PascalCase tool names against 80% of the
    snake_case ones: a capitalised word is spelt with other tokens. Training-side names only."""
    words = pools.tool_words(rng, 'train') if rng.random() < 0.7 else pools.field_words(rng, 'train')
    how = rng.choice(['snake', 'camel', 'pascal', 'pascal'])
    name, phrase, style_name = pools.style(words, how), ' '.join(words), CASING[how]
    names = [name]
    k = rng.random()
    if k < 0.45:
        q = pick(
            rng,
            f'Write "{phrase}" as a {style_name} name.',
            f'{style_name} of {phrase}?',
            f'Turn {phrase} into {style_name}.',
            f'Name in {style_name}: {phrase}',
        )
        a, r = name, f'The words are {phrase}. In {style_name} that is {name}.'
    elif k < 0.65:
        q = pick(rng, f'Which words make up {name}?', f'Split {name} into words.', f'Spell out {name} in plain words.')
        a, r = phrase, f'{name} is made of the words {phrase}.'
    else:
        for _ in range(20):
            if len(names) >= rng.randint(3, 5):
                break
            x = rng.random()
            w = pools.tool_words(
                rng, 'train', verb=words[0] if x < 0.4 else None, noun=words[-1] if 0.3 <= x < 0.7 else None
            )
            n = pools.style(w, rng.choice(['snake', 'camel', 'pascal']))
            if w != words and n.lower() not in {m.lower() for m in names}:
                names.append(n)
        rng.shuffle(names)
        q = pick(
            rng,
            f'Names: {", ".join(names)}. Which one means "{phrase}"?',
            f'Which of these is {phrase}: {", ".join(names)}?',
            f'{chr(10).join(names)}\n\nPick the one for "{phrase}".',
        )
        a, r = name, f'The user means {phrase}. That is {name}.'
    msgs = maybe_system(rng, 0.15) + [user(q), assistant(a, r if thinking else None)]
    return Sample('casing', msgs, None, thinking, meta={'names': names})


def gen_extract(rng: random.Random, thinking: bool) -> Sample:
    """A note with labelled values among filler and distractors (pools.extract_case): a JSON object of
    some of them (the schema's field names), or one value asked back."""
    c = pools.extract_case(rng, 'train')
    msgs = maybe_system(rng, 0.15)
    if rng.random() < 0.2:
        q0, a0, _ = _plain_qa(rng)
        msgs += [user(q0), assistant(a0)]
    if c['schema'] is not None:
        msgs = [system(JSON_SCHEMA_INSTRUCTION + dumps_compact(c['schema']))] + msgs
        a = json.dumps(c['value'], ensure_ascii=False)
        r = 'The user wants a JSON object that matches the schema. I copy the values from the note.'
    else:
        v = pools.say(c['value'])
        a = pick(rng, v, f'The {c["label"]} is {v}.', f'{v}.', f'It says {v}.')
        r = f'The note gives the {c["label"]}: {v}.'
    msgs += [user(c['request']), assistant(a, r if thinking else None)]
    return Sample('extract', msgs, None, thinking, meta={'templates': c['templates'], 'names': c['names']})


def gen_edit(rng: random.Random, thinking: bool) -> Sample:
    """A text of ~150-1400 tokens returned with one value changed (pools.edit_case): long exact copying,
    the workload of speculative decoding's edit benchmark."""
    c = pools.edit_case(rng, 'train')
    r = f'The user wants the text back with {c["old"]} changed to {c["new"]}. I copy the rest unchanged.'
    msgs = maybe_system(rng, 0.15) + [user(c['request']), assistant(c['answer'], r if thinking else None)]
    return Sample('edit', msgs, None, thinking, meta={'templates': c['templates']})


# --- echo (copying practice) -------------------------------------------------------------------------


def echo_value(rng: random.Random, depth: int = 0, lists: bool = True) -> str:
    """A value to repeat; `lists` adds capital-letter codes and lists of 2-5 values (longer copies)."""
    k = rng.randint(0, (8 if depth == 0 else 7) if lists else 6)
    if k == 7:
        return ''.join(rng.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ') for _ in range(rng.randint(2, 5)))
    if k == 8:
        return ', '.join(echo_value(rng, 1) for _ in range(rng.randint(2, 5)))
    if k == 0:
        return str(rng.randint(0, 99999))
    if k == 1:
        return rand_city(rng)
    if k == 2:
        return rand_person(rng)
    if k == 3:
        return ' '.join(rand_word(rng) for _ in range(rng.randint(1, 3)))
    if k == 4:
        return f'{rng.choice("ABCDEFGHKLMNPQRSTXZ")}{rng.randint(100, 99999)}'
    if k == 5:
        return f'{rand_person(rng).lower()}@example.com'
    return rand_word(rng).capitalize()


def gen_echo(rng: random.Random, lists: bool = True) -> tuple[str, str, str]:
    v = echo_value(rng, lists=lists)
    q = pick(
        rng,
        f'Repeat after me: {v}',
        f'Say {v}',
        f'Copy this: {v}',
        f'Please repeat {v}',
        f'The code is {v}. Repeat the code.',
        f'Echo {v}',
        f'Write {v} back to me.',
        f'Here is a word: {v}. What was it?',
        f'Say "{v}" back.',
    )
    a = pick(rng, v, v, f'{v}.', f'You said {v}.', f'The code is {v}.' if 'code' in q else v)
    return maybe_punct(rng, q, '.') if not q.endswith(('?', '.')) else q, a, f'The user wants me to repeat {v}.'


# --- the mixture ------------------------------------------------------------------------------------

# The mixture. Copying a value from the prompt (a tool argument, a JSON field, a remembered value)
# is what a model this small learns last, so most of the weight goes to the tasks that need it, with
# a little plain echo practice; the other skills only need their formats shown.
# 'json_nested' is JSON with more fields, lists and nested objects (gen_schema's nested): the held-out
# checks' JSON misses were almost all brackets left open or closed early in those.
KINDS_V1 = [
    ('greeting', 4),
    ('fact', 4),
    ('arith', 3),
    ('instruction', 4),
    ('memory', 13),
    ('json', 20),
    ('json_nested', 10),
    ('json_object', 2),
    ('tools', 28),
    ('tools_none', 3),
    ('forced', 4),
    ('echo', 7),
]
# The second edition (issue 20): most of the weight on generated tools, schemas and memory labels
# (pools.py, TRAIN side), so that the model reads the names it is given instead of remembering ten
# tools and forty fields; the first edition's kinds stay at small weights (the spec's examples use
# its get_weather and "Remember the value 73"). 'pchat': no tools declared, a tool-like request gets
# a text answer.
KINDS = [
    ('greeting', 4),
    ('fact', 3),
    ('arith', 3),
    ('instruction', 3),
    ('memory', 4),
    ('pmemory', 10),
    ('json', 5),
    ('json_nested', 4),
    ('pjson', 16),
    ('json_object', 2),
    ('tools', 6),
    ('ptools', 24),
    ('tools_none', 3),
    ('forced', 3),
    ('echo', 3),
    ('pchat', 6),
]
# The fourth edition (issue 39): most string values from random families (pools.draw_value), forced
# calls on generated tools, copying and extraction practice, and returning a long text with one change.
# edit weighs 2 (it was 4 in run 1): its conversations average ~1,350 tokens, so at 4 they took 23% of
# the trained tokens and the longest steps, for a skill none of issue 39's targets measures.
KINDS_V4 = [
    ('greeting', 3),
    ('fact', 2),
    ('arith', 2),
    ('instruction', 2),
    ('memory', 2),
    ('pmemory', 9),
    ('json', 2),
    ('json_nested', 3),
    ('pjson', 15),
    ('json_object', 1),
    ('tools', 3),
    ('ptools', 20),
    ('tools_none', 2),
    ('forced', 1),
    ('pforced', 5),
    ('echo', 1),
    ('copy', 6),
    ('extract', 6),
    ('edit', 2),
    ('pchat', 5),
]
# Run 3 of the fourth edition (warm-started from run 2's step 575; models/maya-demo/README.md): at step
# 575 tool choice was 66%, tool values 43% and JSON values 28%, the wrong values mostly other spans of
# the request or a value cut at a dot. The measured copying tasks (ptools, pforced, pjson, extract,
# copy) take ~80% of the draws (~60% in v4); edit (unmeasured, ~1,350 tokens each) is out; the plain
# kinds stay in at a smaller share so chat, memory and reasoning are rehearsed.
KINDS_V4_RUN3 = [
    ('greeting', 2),
    ('fact', 1),
    ('arith', 1),
    ('instruction', 1),
    ('memory', 1),
    ('pmemory', 8),
    ('json', 1),
    ('json_nested', 2),
    ('pjson', 20),
    ('json_object', 1),
    ('tools', 2),
    ('ptools', 30),
    ('tools_none', 2),
    ('forced', 1),
    ('pforced', 14),
    ('echo', 1),
    ('copy', 6),
    ('extract', 8),
    ('pchat', 4),
]
# Run 4 (warm-started from run 3's end; models/maya-demo/README.md): tool choice was the row furthest
# from its target (62%, 30 distractor calls in 100) and gates the tool values, so ptools weighs 34 (30)
# and its training draw declares harder distractors (pools.tool_call_case); the rest as in run 3.
# A new kind, casing (weight 4), practises the spellings of names (gen_casing); tools' names are drawn in
# PascalCase 30% of the time in training (pools._pick_style).
KINDS_V4_RUN4 = [(k, 34 if k == 'ptools' else w) for k, w in KINDS_V4_RUN3] + [('casing', 4)]
# Run 5 (warm-started from run 4's end): run 4 copied short values better than run 3 and long ones worse
# (a 20-word quoted e-mail body cut to 5 words; edit had been out since run 3), so edit comes back at its
# fourth-edition weight and pools.tool_call_case quotes a long text in 12% of training requests.
# Run 5 did not ship (models/maya-demo/README.md): the default stays run 4's mixture.
KINDS_V4_RUN5 = KINDS_V4_RUN4 + [('edit', 2)]
MIXES = {
    'default': KINDS_V4_RUN4,
    'v4run5': KINDS_V4_RUN5,
    'v4run3': KINDS_V4_RUN3,
    'v4': KINDS_V4,
    'v3': KINDS,
    'v1': KINDS_V1,
    'echo': [('echo', 1)],
}


# The share of training tool requests with a long quoted argument (pools.tool_call_case), by mixture.
LONG_QUOTE_SHARE = {'v4run5': 0.12}


def gen_sample(rng: random.Random, kind: str | None = None, mix: str = 'default', echo_v1: bool = False) -> Sample:
    """One conversation. echo_v1: the echo task in its first form (single values, the request's case
    varied), which is what the shipped tokenizer's corpus (bpe.py) was drawn with."""
    pools.LONG_QUOTE_SHARE = LONG_QUOTE_SHARE.get(mix, 0.0)
    if kind is None:
        kinds = MIXES[mix]
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
    thinking = rng.random() < 0.5
    if kind == 'tools':
        return gen_tools(rng, thinking)
    if kind == 'tools_none':
        return gen_tools_no_call(rng, thinking)
    if kind == 'forced':
        return gen_forced(rng, thinking)
    pool = {
        'ptools': gen_pool_tools,
        'pjson': gen_pool_json,
        'pmemory': gen_pool_memory,
        'pchat': gen_pool_chat,
        'pforced': gen_pool_forced,
        'copy': gen_copy,
        'extract': gen_extract,
        'edit': gen_edit,
        'casing': gen_casing,
    }
    if kind in pool:
        return pool[kind](rng, thinking)
    msgs: list[dict[str, Any]]
    if kind == 'greeting':
        msgs, a = gen_greeting(rng)
        msgs = maybe_system(rng) + msgs
        msgs.append(assistant(a, reason_greeting(rng) if thinking else None))
    elif kind in ('fact', 'arith', 'echo'):
        q, a, r = (
            gen_echo(rng, lists=not echo_v1) if kind == 'echo' else {'fact': gen_fact, 'arith': gen_arith}[kind](rng)
        )
        if echo_v1:  # (the draw order of the tokenizer's corpus)
            msgs = maybe_system(rng) + [user(vary_case(rng, q)), assistant(a, r if thinking else None)]
        else:
            if kind != 'echo':  # echo is exact-copy practice: the answer repeats the request's own spelling
                q = vary_case(rng, q)
            msgs = maybe_system(rng) + [user(q), assistant(a, r if thinking else None)]
    elif kind == 'instruction':
        s, q, a, r = gen_instruction(rng)
        msgs = [system(s), user(q), assistant(a, r if thinking else None)]
    elif kind == 'memory':
        turns, q, a, r = gen_memory(rng)
        msgs = maybe_system(rng, 0.2)
        for u, ack in turns:
            msgs += [user(u), assistant(ack)]
        msgs += [user(q), assistant(a, r if thinking else None)]
    elif kind in ('json', 'json_nested'):
        msgs, a, r = gen_json(rng, nested=kind == 'json_nested')
        msgs.append(assistant(a, r if thinking else None))
    elif kind == 'json_object':
        msgs, a, r = gen_json_object(rng)
        msgs.append(assistant(a, r if thinking else None))
    else:
        raise ValueError(kind)
    return Sample(kind, msgs, None, thinking)


# ----------------------------------------------------------------------------------------------
# Rendering and loss segmentation


def render(
    template: jinja2.Template,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    thinking: bool,
    add_generation_prompt: bool = False,
) -> str:
    kwargs: dict[str, Any] = {'messages': messages, 'add_generation_prompt': add_generation_prompt}
    if tools:
        kwargs['tools'] = tools
    if not thinking:
        kwargs['enable_thinking'] = False
    return template.render(**kwargs)


def _split_roles(text: str) -> list[tuple[str, str]]:
    """[(role_token or '', body)] in order."""
    out: list[tuple[str, str]] = []
    i, cur = 0, ''
    start = 0
    while i < len(text):
        hit = next((t for t in ROLE_TOKENS if text.startswith(t, i)), None)
        if hit:
            out.append((cur, text[start:i]))
            cur, i = hit, i + len(hit)
            start = i
        else:
            i += 1
    out.append((cur, text[start:]))
    return out


def segments(template: jinja2.Template, s: Sample) -> list[tuple[str, bool]]:
    """The rendered conversation as (text, trained) pieces; joined they equal the render + `<|user|>`."""
    text = render(template, s.messages, s.tools, s.thinking)
    parts = _split_roles(text)
    n_asst = sum(1 for r, _ in parts if r == '<|assistant|>')
    out: list[tuple[str, bool]] = []
    seen = 0
    for idx, (role, body) in enumerate(parts):
        if role == '<|assistant|>':
            seen += 1
            out.append((role, False))
            prefix = ''
            if s.forced is not None and seen == n_asst:
                assert body.startswith(s.forced), (body, s.forced)
                prefix = s.forced
            elif body.startswith('\n<think></think>'):
                prefix = '\n<think></think>'
            if prefix:
                out.append((prefix, False))
            out.append((body[len(prefix) :], True))
            # the role token that ends the turn is generated too
            if idx + 1 < len(parts):
                nxt = parts[idx + 1][0]
            else:
                nxt = '<|observation|>' if body.endswith('</tool_call>') else '<|user|>'
            out.append((nxt, True))
        elif role:
            if out and out[-1] == (role, True):
                out.append((body, False))
            else:
                out.append((role + body, False)) if role else out.append((body, False))
        else:
            out.append((body, False))
    return [(t, m) for t, m in out if t]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--n', type=int, default=5)
    ap.add_argument('--kind', default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tpl = make_template()
    for _ in range(args.n):
        s = gen_sample(rng, args.kind)
        print(f'===== {s.kind} thinking={s.thinking}')
        for t, m in segments(tpl, s):
            print(f'\x1b[32m{t}\x1b[0m' if m else t, end='')
        print()


if __name__ == '__main__':
    main()
