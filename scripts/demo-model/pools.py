"""Generated name pools and request phrasings for the demo model, split into TRAIN and HELD-OUT.

The first model learnt ten fixed tools and ~40 field names by heart, and its "held-out" cases were
drawn from the same ones. Here every tool name, parameter name and JSON field name is composed per
example from word pools (domains: travel, commerce, office, home, health, finance, media, ...), in
snake_case, camelCase or PascalCase, and every request is worded by one of many natural-language
templates. Both are split in two:

- names: a name's split is a hash of its lower-case words (`split_of`), so its snake_case and
  camelCase spellings fall on the same side; about one name in five is HELD-OUT. Training
  (data.py) only ever declares TRAIN names; the evaluation (make_eval_cases.py) only HELD-OUT ones.
- phrasings: every template list below exists twice, TRAIN_* and HELD_*, with different wording;
  the evaluation words its requests only with HELD_* templates.

test/demo-model/heldout.test.ts checks that the two sides are disjoint and that a stream of
training conversations never contains a held-out name or template.

The gen_* functions return plain dicts (messages, tools, expected values) that data.py renders for
training and make_eval_cases.py turns into Responses API requests.
"""
from __future__ import annotations

import json
import random
import re
import zlib
from typing import Any, Callable

# ----------------------------------------------------------------------------------------------
# Words

# Word and phrasing tables stay out of black's reach: a row of words per line reads better than one
# word per line.
# fmt: off
VERBS = ['get', 'fetch', 'find', 'search', 'list', 'create', 'add', 'update', 'delete', 'remove', 'cancel',
         'book', 'reserve', 'schedule', 'send', 'check', 'track', 'convert', 'calculate', 'set', 'start',
         'stop', 'open', 'close', 'assign', 'approve', 'reject', 'submit', 'register', 'lookup', 'translate',
         'play', 'pause', 'order', 'rate', 'share', 'archive', 'restore', 'upload', 'download', 'sync',
         'notify', 'validate', 'estimate', 'compare', 'reset', 'renew', 'transfer', 'refund', 'invite',
         'rename', 'publish', 'count', 'print', 'scan', 'query', 'record', 'log', 'mark', 'move']
NOUNS = ['flight', 'hotel', 'room', 'trip', 'seat', 'ticket', 'train', 'car', 'booking', 'itinerary',
         'passport', 'order', 'invoice', 'payment', 'refund', 'product', 'cart', 'coupon', 'shipment',
         'package', 'delivery', 'customer', 'subscription', 'receipt', 'price', 'stock', 'meeting',
         'calendar', 'event', 'reminder', 'task', 'note', 'document', 'report', 'file', 'folder', 'email',
         'message', 'contact', 'team', 'project', 'issue', 'deadline', 'light', 'thermostat', 'alarm',
         'door', 'camera', 'plant', 'recipe', 'grocery', 'playlist', 'song', 'podcast', 'movie', 'timer',
         'appointment', 'patient', 'prescription', 'doctor', 'workout', 'meal', 'dose', 'account',
         'balance', 'transaction', 'budget', 'loan', 'currency', 'expense', 'weather', 'forecast',
         'temperature', 'user', 'profile', 'password', 'device', 'printer', 'server', 'backup', 'database',
         'table', 'restaurant', 'menu', 'review', 'course', 'lesson', 'student', 'grade', 'book', 'library',
         'parking', 'route', 'address', 'translation', 'album', 'photo', 'video', 'channel', 'comment',
         'post', 'survey', 'vote', 'warehouse', 'supplier', 'vehicle', 'driver', 'pet', 'vaccine', 'garden']
QUALIFIERS = ['user', 'daily', 'weekly', 'monthly', 'new', 'current', 'latest', 'public', 'shared', 'team',
              'customer', 'local', 'remote', 'pending', 'recent', 'default', 'guest', 'family', 'office',
              'home', 'travel', 'group', 'personal', 'draft', 'urgent', 'saved', 'favorite', 'annual']
ASPECTS = ['status', 'details', 'history', 'summary', 'info', 'count', 'list', 'settings', 'schedule',
           'total', 'level', 'owner', 'location', 'rating', 'price', 'size']

# Parameter / field names: [prefix] + base. The base decides the type and the kind of value.
PREFIXES = ['customer', 'order', 'user', 'guest', 'event', 'item', 'product', 'target', 'source', 'start',
            'end', 'max', 'min', 'new', 'home', 'billing', 'shipping', 'account', 'project', 'team', 'room',
            'flight', 'hotel', 'patient', 'owner', 'contact', 'return', 'departure', 'arrival', 'pickup',
            'delivery', 'invoice', 'ticket', 'task', 'meeting', 'book', 'song', 'vehicle', 'pet', 'course',
            'primary', 'backup', 'first', 'last', 'parent', 'child', 'main', 'extra', 'reply', 'review']
BASES: dict[str, str] = {
    # string kinds
    'name': 'person', 'id': 'code', 'code': 'code', 'reference': 'code', 'number': 'code', 'email': 'email',
    'city': 'city', 'country': 'country', 'title': 'phrase', 'note': 'phrase', 'description': 'phrase',
    'message': 'phrase', 'label': 'word', 'tag': 'word', 'category': 'word', 'language': 'language',
    'date': 'date', 'time': 'time', 'color': 'colour', 'colour': 'colour', 'username': 'handle',
    'query': 'phrase', 'topic': 'phrase', 'nickname': 'word', 'keyword': 'word', 'brand': 'word',
    'street': 'phrase', 'author': 'person', 'recipient': 'person', 'host': 'person', 'airport': 'code',
    # integers
    'count': 'int', 'quantity': 'int', 'limit': 'int', 'level': 'int', 'age': 'int', 'year': 'year',
    'minutes': 'int', 'days': 'int', 'seats': 'int', 'floor': 'int', 'nights': 'int', 'size': 'int',
    # numbers
    'amount': 'num', 'price': 'num', 'weight': 'num', 'ratio': 'num', 'rate': 'num', 'distance': 'num',
    'budget': 'num', 'score': 'num', 'latitude': 'num', 'height': 'num',
    # booleans
    'enabled': 'bool', 'confirmed': 'bool', 'urgent': 'bool', 'notify': 'bool', 'public': 'bool',
}
# Bases that stand alone as a name (without a prefix) read naturally.
ALONE = ['name', 'email', 'city', 'country', 'title', 'note', 'description', 'message', 'label', 'tag',
         'category', 'language', 'date', 'time', 'color', 'username', 'query', 'topic', 'nickname', 'keyword',
         'brand', 'author', 'recipient', 'count', 'quantity', 'limit', 'level', 'age', 'year', 'minutes',
         'days', 'seats', 'amount', 'price', 'weight', 'distance', 'budget', 'score', 'enabled', 'urgent']

FIRST_NAMES = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory',
               'Olivia', 'Peggy', 'Rupert', 'Sybil', 'Trent', 'Victor', 'Walter', 'Yara', 'Zoe', 'Amara',
               'Kenji', 'Lucía', 'Mateo', 'Priya', 'Sven', 'Tariq', 'Ngozi', 'Chen', 'Ines', 'Omar', 'Hana',
               'Leon', 'Mira', 'Nadia', 'Pablo', 'Rosa', 'Tomas', 'Uma', 'Wendy', 'Xavier', 'Yusuf', 'Zara']
LAST_NAMES = ['Smith', 'Garcia', 'Nakamura', 'Okafor', 'Novak', 'Rossi', 'Schmidt', 'Kowalski', 'Haddad',
              'Larsen', 'Moreau', 'Silva', 'Tanaka', 'Ivanova', 'Brennan', 'Costa', 'Dubois', 'Ahmed']
CITIES = ['Paris', 'Rome', 'Tokyo', 'Berlin', 'Madrid', 'Lisbon', 'Oslo', 'Cairo', 'Lima', 'Seoul', 'Boston',
          'Denver', 'Sydney', 'Dublin', 'Vienna', 'Prague', 'Nairobi', 'Toronto', 'Mumbai', 'Santiago',
          'Helsinki', 'Athens', 'Warsaw', 'Kyoto', 'São Paulo', 'Zürich', 'Reykjavík', 'New York',
          'Cape Town', 'Buenos Aires', 'Hanoi', 'Accra', 'Bergen', 'Porto', 'Quito', 'Perth', 'Austin']
COUNTRIES = ['France', 'Japan', 'Brazil', 'Kenya', 'Canada', 'Norway', 'Peru', 'India', 'Egypt', 'Chile',
             'Poland', 'Ireland', 'Mexico', 'Ghana', 'Vietnam', 'Portugal', 'Austria', 'Iceland']
LANGUAGES = ['French', 'German', 'Spanish', 'Italian', 'Japanese', 'Dutch', 'Polish', 'Swahili', 'Korean',
             'Portuguese', 'Greek', 'Hindi', 'Turkish', 'Finnish']
COLOURS = ['red', 'blue', 'green', 'yellow', 'purple', 'orange', 'teal', 'silver', 'gold', 'white', 'black',
           'pink', 'brown', 'grey', 'violet', 'navy', 'beige']
MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October',
          'November', 'December']
COMMON_WORDS = ['river', 'maple', 'copper', 'harbor', 'lantern', 'meadow', 'pepper', 'orbit', 'velvet',
                'granite', 'willow', 'ember', 'falcon', 'cobalt', 'saffron', 'thunder', 'pebble', 'canyon',
                'marble', 'juniper', 'quartz', 'tundra', 'almond', 'beacon', 'cedar', 'dune', 'fjord', 'glacier',
                'hazel', 'indigo', 'jasper', 'kettle', 'lagoon', 'mosaic', 'nectar', 'oasis', 'prairie',
                'quill', 'raven', 'sierra', 'tulip', 'umber', 'vortex', 'walnut', 'yonder', 'zephyr', 'blue',
                'garden', 'summer', 'winter', 'silver', 'rocket', 'paper', 'violin', 'island', 'forest']
_SYL = ['ka', 'lo', 'mi', 'ra', 'ven', 'tor', 'sa', 'li', 'nor', 'da', 'bel', 'mar', 'qui', 'zan', 'ro', 'te',
        'vi', 'gal', 'os', 'un', 'pe', 'fi', 'dor', 'ha', 'lum', 'cre', 'sto', 'ar', 'bo', 'ne', 'ju', 'ke']
# fmt: on


def split_of(words: list[str] | tuple[str, ...]) -> str:
    """'held' for about one name in five (a hash of the lower-case words), else 'train'; the first
    edition's names (RESERVED_TRAIN) are always 'train'."""
    key = '_'.join(w.lower() for w in words)
    if key in RESERVED_TRAIN:
        return 'train'
    return 'held' if zlib.crc32(key.encode()) % 5 == 0 else 'train'


# Every name the first edition's data (data.py's fixed tools, their results, its JSON fields) uses,
# which training still draws at small weight: always on the training side, never held out.
# fmt: off
RESERVED_TRAIN = {
    'get_weather', 'convert_currency', 'send_email', 'search_web', 'create_reminder', 'set_light', 'lookup_order',
    'get_stock_price', 'get_time', 'translate',
    'city', 'days', 'unit', 'amount', 'from', 'to', 'subject', 'body', 'query', 'text', 'minutes', 'room', 'on',
    'brightness', 'order_id', 'symbol', 'target_language', 'temperature', 'condition', 'currency', 'status',
    'results', 'ok', 'time', 'translation', 'price', 'answer',
    'name', 'colour', 'title', 'owner', 'animal', 'country', 'label', 'author', 'email', 'age', 'count', 'year',
    'quantity', 'score', 'rank', 'size', 'weight', 'height', 'ratio', 'active', 'done', 'verified', 'public',
    'urgent', 'available', 'priority', 'mood', 'tags', 'items', 'colours', 'cities', 'names', 'numbers',
    'address', 'details', 'location', 'meta', 'note', 'nickname', 'comment', 'parent', 'middle_name',
}
# fmt: on


def style(words: list[str], how: str) -> str:
    if how == 'snake':
        return '_'.join(words)
    if how == 'camel':
        return words[0] + ''.join(w.capitalize() for w in words[1:])
    return ''.join(w.capitalize() for w in words)


def _pick_style(rng: random.Random, split: str = 'held') -> str:
    r = rng.random()
    if split == 'train':
        # Run 4 of the fourth edition: at run 3's end the right tool was called for 80% of the held-out
        # snake_case tool names, 68% of camelCase and 33% of PascalCase ones (a capitalised word is other
        # tokens than the lower-case word the request says: `Backup` is B a ck up, `backup` back up).
        # Training names tools in PascalCase 30% of the time (10% before), camelCase 30%, snake_case 40%;
        # field names (never PascalCase) keep their 70/30 snake/camel draw. The evaluation's draw is unchanged.
        return 'snake' if r < 0.4 else 'camel' if r < 0.7 else 'pascal'
    return 'snake' if r < 0.6 else 'camel' if r < 0.9 else 'pascal'


def _draw(rng: random.Random, split: str, make: Callable[[], list[str]]) -> list[str]:
    for _ in range(1000):
        words = make()
        if split_of(words) != split:
            continue
        return words
    raise RuntimeError('no name drawn')


def tool_words(
    rng: random.Random, split: str, verb: str | None = None, noun: str | None = None, single: bool = False
) -> list[str]:
    def make() -> list[str]:
        v = verb or rng.choice(VERBS)
        if single:
            return [v]
        n = noun or rng.choice(NOUNS)
        r = rng.random()
        if r < 0.45:
            return [v, n]
        if r < 0.75:
            return [v, rng.choice(QUALIFIERS), n]
        return [v, n, rng.choice(ASPECTS)]

    return _draw(rng, split, make)


def field_words(rng: random.Random, split: str, kinds: set[str] | None = None) -> list[str]:
    bases = [b for b in BASES if kinds is None or BASES[b] in kinds]

    def make() -> list[str]:
        b = rng.choice(bases)
        if b in ALONE and rng.random() < 0.35:
            return [b]
        return [rng.choice(PREFIXES), b]

    return _draw(rng, split, make)


def all_names(split: str) -> set[str]:
    """Every tool and field name (in its three spellings) on one side of the split."""
    out: set[str] = set()
    combos: list[list[str]] = []
    for v in VERBS:
        for n in NOUNS:
            combos.append([v, n])
            combos += [[v, q, n] for q in QUALIFIERS]
            combos += [[v, n, a] for a in ASPECTS]
    for b in BASES:
        combos.append([b])
        combos += [[p, b] for p in PREFIXES]
    for w in combos:
        if split_of(w) == split:
            out.update(style(w, s) for s in ('snake', 'camel', 'pascal'))
    return out


# ----------------------------------------------------------------------------------------------
# Values copied from the request


def person(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return rng.choice(FIRST_NAMES)
    if r < 0.75:
        return f'{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}'
    return ''.join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).capitalize()


def word(rng: random.Random) -> str:
    return (
        rng.choice(COMMON_WORDS) if rng.random() < 0.6 else ''.join(rng.choice(_SYL) for _ in range(rng.randint(2, 3)))
    )


def code(rng: random.Random) -> str:
    letters = 'ABCDEFGHJKLMNPQRSTUVWXYZ'
    r = rng.random()
    if r < 0.3:
        return f'{"".join(rng.choice(letters) for _ in range(2))}-{rng.randint(100, 9999)}'
    if r < 0.55:
        return f'{rng.choice(letters)}{rng.randint(100, 99999)}'
    if r < 0.8:
        return ''.join(rng.choice(letters + '0123456789') for _ in range(rng.randint(4, 6)))
    return str(rng.randint(1000, 999999))


def phrase(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return ' '.join(word(rng) for _ in range(rng.randint(2, 3)))
    return rng.choice(
        [
            'quarterly sales review',
            'pick up the dry cleaning',
            'call back after lunch',
            'blue cotton shirt',
            'the north entrance',
            'weekend trip to the coast',
            'bring two copies',
            'late checkout please',
            'garden party planning',
            'broken kitchen tap',
            'vegan options only',
            'window seat if possible',
            'spring cleaning list',
            'budget for next year',
            'room with a view',
            'jazz night',
            'team lunch on Friday',
            'new office chairs',
            'dentist follow up',
            'old photo albums',
        ]
    )


def value_for(rng: random.Random, kind: str) -> Any:
    if kind == 'person':
        return person(rng)
    if kind == 'code':
        return code(rng)
    if kind == 'email':
        return f'{rng.choice(FIRST_NAMES).lower().replace("í", "i")}.{word(rng)}@example.com'
    if kind == 'city':
        return rng.choice(CITIES)
    if kind == 'country':
        return rng.choice(COUNTRIES)
    if kind == 'phrase':
        return phrase(rng)
    if kind == 'word':
        return word(rng)
    if kind == 'language':
        return rng.choice(LANGUAGES)
    if kind == 'date':
        return (
            f'2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'
            if rng.random() < 0.6
            else f'{rng.choice(MONTHS)} {rng.randint(1, 28)}'
        )
    if kind == 'time':
        return f'{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45, rng.randint(0, 59)]):02d}'
    if kind == 'colour':
        return rng.choice(COLOURS)
    if kind == 'handle':
        return f'{word(rng)}{rng.randint(1, 99)}'
    if kind == 'int':
        return rng.choice([rng.randint(1, 12), rng.randint(1, 100), rng.randint(100, 9999)])
    if kind == 'year':
        return rng.randint(1950, 2035)
    if kind == 'num':
        return round(rng.uniform(0.1, 999), rng.choice([1, 2, 2])) if rng.random() < 0.8 else rng.randint(1, 500)
    if kind == 'bool':
        return rng.random() < 0.5
    raise ValueError(kind)


# ----------------------------------------------------------------------------------------------
# Fourth edition: values the model cannot have memorised.
#
# The third edition drew every value from the pools above (43 first names, 18 last names, 37 cities,
# 56 words, a few code shapes). Asked "Look up alpha" with a forced lookup(name), it called
# lookup({"name": "Rosa"}): a `name` it had only ever seen filled with those 43 first names
# (models/maya-demo/README.md, "Fourth edition"). Here most string values are drawn from random
# families instead (letters, pseudo-words and multi-word names, codes, numbers, dates, times, e-mail
# addresses, paths, URLs), so the only way to get one right is to copy it. draw_value() mixes them
# with the old pools; training (split 'train') and the evaluation (split 'held') draw from the same
# families, and the evaluation also from HELD_FAMILIES, which training never produces
# (heldout.test.ts checks that no training text matches their patterns).

_LOWER = 'abcdefghijklmnopqrstuvwxyz'
_UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
_CONS = 'bcdfghjklmnprstvwxyz'
_VOW = 'aeiou'
TLDS = ['com', 'org', 'net', 'io', 'dev', 'co', 'info']
FILE_EXT = ['txt', 'csv', 'json', 'md', 'log', 'py', 'png', 'pdf', 'yaml', 'ts']
STRING_KINDS = {
    'person',
    'code',
    'email',
    'city',
    'country',
    'phrase',
    'word',
    'language',
    'date',
    'time',
    'colour',
    'handle',
}
FRESH_SHARE = 0.6  # of string values: from the random families (else the pools above)
FRESH_NUMBER_SHARE = 0.5  # of integers and decimals: any number of digits
HELD_FAMILY_SHARE = 0.2  # of string values in the evaluation: from HELD_FAMILIES


def rand_letters(rng: random.Random, lo: int = 3, hi: int = 9, alphabet: str = _LOWER) -> str:
    return ''.join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def pseudo_word(rng: random.Random, lo: int = 1, hi: int = 4) -> str:
    """Random syllables (consonant-vowel, consonant-vowel-consonant or vowel-consonant) of any letters:
    pronounceable, never from a list."""
    out = ''
    for _ in range(rng.randint(lo, hi)):
        r = rng.random()
        if r < 0.5:
            out += rng.choice(_CONS) + rng.choice(_VOW)
        elif r < 0.8:
            out += rng.choice(_CONS) + rng.choice(_VOW) + rng.choice(_CONS)
        else:
            out += rng.choice(_VOW) + rng.choice(_CONS)
    return out


def fresh_name(rng: random.Random) -> str:
    return ' '.join(pseudo_word(rng, 1, 3).capitalize() for _ in range(rng.choice([1, 1, 2, 2, 2, 3])))


def fresh_code(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.25:
        head = rand_letters(rng, 1, 4, _UPPER)
        return f'{head}{rng.choice(["-", "-", "_", "/", ""])}{rng.randint(0, 10 ** rng.randint(1, 6))}'
    if r < 0.45:
        return ''.join(rng.choice(_UPPER + '0123456789') for _ in range(rng.randint(3, 10)))
    if r < 0.6:
        return f'{rand_letters(rng, 1, 3)}{rng.randint(0, 99)}-{rand_letters(rng, 1, 3)}{rng.randint(0, 999)}'
    if r < 0.75:
        return '-'.join(str(rng.randint(0, 10 ** rng.randint(2, 4))) for _ in range(rng.randint(2, 3)))
    if r < 0.9:
        return ''.join(rng.choice(_LOWER + '0123456789') for _ in range(rng.randint(4, 12)))
    return (
        f'#{rng.randint(1, 99999)}'
        if rng.random() < 0.5
        else f'{rand_letters(rng, 2, 3, _UPPER)} {rng.randint(1, 9999)}'
    )


def fresh_int(rng: random.Random) -> int:
    return rng.randint(0, 10 ** rng.randint(1, 7))


def fresh_num(rng: random.Random) -> float:
    v = round(rng.uniform(0, 10 ** rng.randint(0, 5)), rng.randint(1, 3))
    if v == int(v):
        v += 0.5
    return -v if rng.random() < 0.1 else v


def fresh_date(rng: random.Random) -> str:
    y, m, d = rng.randint(1900, 2099), rng.randint(1, 12), rng.randint(1, 28)
    r = rng.random()
    if r < 0.35:
        return f'{y}-{m:02d}-{d:02d}'
    if r < 0.55:
        return f'{d} {MONTHS[m - 1]} {y}'
    if r < 0.7:
        return f'{MONTHS[m - 1]} {d} {y}'
    if r < 0.85:
        return f'{d:02d}/{m:02d}/{y}'
    return f'{MONTHS[m - 1][:3]} {d}'


def fresh_time(rng: random.Random) -> str:
    h, m = rng.randint(0, 23), rng.randint(0, 59)
    r = rng.random()
    if r < 0.5:
        return f'{h:02d}:{m:02d}'
    if r < 0.8:
        return f'{h % 12 or 12}:{m:02d} {"am" if h < 12 else "pm"}'
    return f'{h:02d}:{m:02d}:{rng.randint(0, 59):02d}'


def fresh_email(rng: random.Random) -> str:
    local = pseudo_word(rng, 1, 3)
    r = rng.random()
    if r < 0.3:
        local += rng.choice(['.', '_', '-']) + pseudo_word(rng, 1, 2)
    elif r < 0.5:
        local += str(rng.randint(1, 999))
    return f'{local}@{pseudo_word(rng, 1, 3)}.{rng.choice(TLDS)}'


def fresh_path(rng: random.Random) -> str:
    parts = [
        rng.choice([pseudo_word(rng, 1, 2), rand_letters(rng, 2, 6), rng.choice(COMMON_WORDS)])
        for _ in range(rng.randint(1, 4))
    ]
    name = parts[-1] + rng.choice(['', '_' + str(rng.randint(1, 99)), '-' + pseudo_word(rng, 1, 1)])
    if rng.random() < 0.7:
        name += '.' + rng.choice(FILE_EXT)
    parts[-1] = name
    r = rng.random()
    if r < 0.6:
        return '/' + '/'.join(parts)
    if r < 0.8:
        return '~/' + '/'.join(parts)
    return '/'.join(parts)


def fresh_url(rng: random.Random) -> str:
    path = '/'.join(pseudo_word(rng, 1, 2) for _ in range(rng.randint(0, 3)))
    return f'https://{pseudo_word(rng, 1, 3)}.{rng.choice(TLDS)}/{path}'


def fresh_words(rng: random.Random) -> str:
    return ' '.join(
        pseudo_word(rng, 1, 3) if rng.random() < 0.6 else rng.choice(COMMON_WORDS) for _ in range(rng.randint(2, 4))
    )


FRESH_FAMILIES: dict[str, Callable[[random.Random], Any]] = {
    'letters': lambda rng: rand_letters(rng, 2, 10),
    'capitalised': lambda rng: pseudo_word(rng, 1, 4).capitalize(),
    'upper': lambda rng: rand_letters(rng, 2, 6, _UPPER),
    'name': fresh_name,
    'words': fresh_words,
    'code': fresh_code,
    'digits': lambda rng: str(fresh_int(rng)),
    'date': fresh_date,
    'time': fresh_time,
    'email': fresh_email,
    'path': fresh_path,
    'url': fresh_url,
}
# The family that suits a kind of parameter (a `date` parameter usually gets a date, but any
# family may fill any string parameter: a user's values are whatever they are).
KIND_FAMILY = {
    'person': 'name',
    'code': 'code',
    'email': 'email',
    'city': 'capitalised',
    'country': 'capitalised',
    'phrase': 'words',
    'word': 'letters',
    'language': 'capitalised',
    'date': 'date',
    'time': 'time',
    'colour': 'letters',
    'handle': 'code',
}


def held_version(rng: random.Random) -> str:
    return f'{"v" if rng.random() < 0.5 else ""}{rng.randint(0, 12)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}'


def held_dotted(rng: random.Random) -> str:
    return f'{rng.choice(["org", "com", "net", "io"])}.{pseudo_word(rng, 1, 3)}.{pseudo_word(rng, 1, 3)}'


# Value families of the evaluation only: version numbers (v2.14.7) and dotted identifiers
# (org.kelvani.trosk). No training generator writes three dot-separated numbers or three
# dot-separated words; HELD_FAMILY_PATTERNS are what heldout.test.ts checks training text against.
HELD_FAMILIES: dict[str, Callable[[random.Random], str]] = {'version': held_version, 'dotted': held_dotted}
HELD_FAMILY_PATTERNS = {'version': r'v?\d+\.\d+\.\d+', 'dotted': r'[A-Za-z]+\.[A-Za-z]+\.[A-Za-z]+'}


def train_multi_dotted(rng: random.Random) -> str:
    """Training only (run 3 of the fourth edition): three or four dot-separated pieces of mixed shape
    (k3.tavo.9x, R2.77.ab4.c), so that training shows values that go on after a second dot. The
    held-out families are such values too, so every draw that matches HELD_FAMILY_PATTERNS (three
    letter-only or three number-only pieces in a row) is drawn again: heldout.test.ts still finds
    none of them in training text."""
    while True:
        pieces = []
        for _ in range(rng.randint(3, 4)):
            r = rng.random()
            if r < 0.35:
                pieces.append(pseudo_word(rng, 1, 2) if rng.random() < 0.7 else rand_letters(rng, 1, 3, _UPPER))
            elif r < 0.6:
                pieces.append(str(rng.randint(0, 10 ** rng.randint(1, 3))))
            else:
                a, b = rand_letters(rng, 1, 3), str(rng.randint(0, 99))
                pieces.append(a + b if rng.random() < 0.6 else b + a)
        v = '.'.join(pieces)
        if not any(re.search(pat, v) for pat in HELD_FAMILY_PATTERNS.values()):
            return v


# Training's draw (split 'train'): the random families and, three times as often as one of them,
# train_multi_dotted; strings from them TRAIN_FRESH_SHARE of the time. The evaluation's draw (split
# 'held') is unchanged, so eval-cases*.json are reproduced as they were written before training.
TRAIN_FAMILIES: dict[str, Callable[[random.Random], Any]] = {**FRESH_FAMILIES, 'multi_dotted': train_multi_dotted}
TRAIN_FAMILY_DRAW = list(FRESH_FAMILIES) + ['multi_dotted'] * 3
TRAIN_FRESH_SHARE = 0.8


def draw_value(rng: random.Random, kind: str, split: str) -> Any:
    """A value for a parameter of this kind: from the random families (FRESH_SHARE of strings,
    TRAIN_FRESH_SHARE in training), the old pools (value_for), or, in the evaluation only, a held-out family."""
    if kind in STRING_KINDS:
        if split == 'held' and rng.random() < HELD_FAMILY_SHARE:
            return rng.choice(list(HELD_FAMILIES.values()))(rng)
        if split == 'train':
            if rng.random() < TRAIN_FRESH_SHARE:
                fam = KIND_FAMILY[kind] if rng.random() < 0.5 else rng.choice(TRAIN_FAMILY_DRAW)
                return TRAIN_FAMILIES[fam](rng)
            return value_for(rng, kind)
        if rng.random() < FRESH_SHARE:
            fam = KIND_FAMILY[kind] if rng.random() < 0.5 else rng.choice(list(FRESH_FAMILIES))
            return FRESH_FAMILIES[fam](rng)
        return value_for(rng, kind)
    if kind == 'int' and rng.random() < FRESH_NUMBER_SHARE:
        return fresh_int(rng)
    if kind == 'num' and rng.random() < FRESH_NUMBER_SHARE:
        return fresh_num(rng)
    return value_for(rng, kind)


JSON_TYPE = {'int': 'integer', 'year': 'integer', 'num': 'number', 'bool': 'boolean'}


def schema_of(kind: str) -> dict[str, Any]:
    return {'type': JSON_TYPE.get(kind, 'string')}


# ----------------------------------------------------------------------------------------------
# Phrasings. {a}: the action ("book hotel room"); {args}: the joined argument mentions;
# {p}: a parameter's words ("guest name"); {v}: its value.

# fmt: off
TRAIN_TOOL_REQUEST = ['Please {a} {args}.', 'Can you {a} {args}?', 'I need to {a} {args}.', '{A} {args}, please.',
                      'Could you {a} for me {args}?', 'Help me {a} {args}.', "I'd like you to {a} {args}.",
                      'Go ahead and {a} {args}.', '{A} {args}.', 'Hey, {a} {args}.', 'Quick one: {a} {args}.',
                      'Use the tool to {a} {args}.', 'We should {a} {args}.', 'Would you please {a} {args}?']
HELD_TOOL_REQUEST = ['Kindly {a} {args}.', 'Time to {a}: {args}.', 'My request is to {a} {args}.',
                     "Let's {a} {args}.", 'I want you to {a} {args}.', 'Is it possible to {a} {args}?',
                     'Next step: {a} {args}.', 'Do me a favour and {a} {args}.']
TRAIN_ARG = ['with {p} {v}', 'with the {p} set to {v}', 'where the {p} is {v}', 'using {v} as the {p}',
             '{p} {v}', 'the {p} being {v}', 'and the {p} should be {v}', 'for {p} {v}', '{p}: {v}',
             'giving {v} as {p}']
HELD_ARG = ['{p} equal to {v}', 'making the {p} {v}', 'with {v} for the {p}', 'whose {p} is {v}',
            'the {p} = {v}', '{v} as the value of {p}']
HELD_BOOL = [('{p} enabled', '{p} disabled'), ('with {p} switched on', 'with {p} switched off')]
# fmt: on


def _train_phrasings() -> tuple[list[str], list[tuple[str, str]]]:
    """Third edition: more TRAIN argument phrasings, composed from a lead-in and a core. With the ten
    fixed TRAIN_ARG above, the second edition read values 76-92% right per argument where a held-out
    phrasing names the parameter first ("whose {p} is {v}") but 7-11% where the value comes first
    ("with {v} for the {p}", "{v} as the value of {p}"): it had seen two value-first phrasings
    (models/maya-demo/README.md). These cover both orders with many connectives. None of them uses a
    HELD_ARG / HELD_BOOL connective ("equal to", "=", "making", "whose", "value of", "for the",
    "enabled", "disabled", "switched"); the test (heldout.test.ts) checks that the lists share no
    template. They were written after reading the held-out failures, and a few are close paraphrases
    of held-out ones ("{p} equals {v}", "{v} for its {p}"); the card says so."""
    # fmt: off
    name_first = ['{p} is {v}', 'the {p} is {v}', '{p} of {v}', 'the {p} of {v}', '{p} set at {v}',
                  'the {p} as {v}', '{p} being {v}', '{p} to be {v}', 'the {p} to be {v}', '{p} at {v}',
                  '{p} -> {v}', 'the {p} should read {v}', '{p} reading {v}', 'the {p} changed to {v}',
                  '{p} fixed at {v}', 'the {p} now {v}', '{p} equals {v}', 'the {p} becomes {v}',
                  'the {p} given as {v}', '{p} (value: {v})', 'a {p} of {v}', 'its {p} {v}',
                  'the {p} will be {v}', '{p} must be {v}', 'the {p} reads {v}']
    value_first = ['{v} as {p}', '{v} as its {p}', '{v} is the {p}', '{v} being the {p}', '{v} to be the {p}',
                   '{v} in the {p} field', '{v} under {p}', '{v} into {p}', '{v} as my {p}', '{v} (the {p})',
                   '{v} which is the {p}', '{v} set as the {p}', '{v} in {p}', '{v} filling the {p}',
                   '{v} goes in {p}', '{v} as the new {p}', '{v} as our {p}', '{v} for its {p}',
                   '{v} as {p} please', '{v} is my {p}']
    leads = ['', 'with ', 'and ', 'using ', 'plus ', 'also ', 'setting ', 'taking ', 'having ']
    args = [lead + core for core in name_first + value_first for lead in leads]
    bools = [(f'{lead}{{p}} {on}', f'{lead}{{p}} {off}') for on, off in
             [('on', 'off'), ('active', 'inactive'), ('yes', 'no'), ('allowed', 'not allowed'),
              ('turned on', 'turned off'), ('activated', 'deactivated'), ('set', 'unset'), ('true', 'false'),
              ('required', 'not required'), ('wanted', 'not wanted')] for lead in ['', 'with ', 'and ']]
    bools += [(f'{verb} {{p}}', f'{neg} {{p}}') for verb, neg in
              [('turn on', 'turn off'), ('activate', 'deactivate'), ('allow', 'disallow'), ('use', 'skip'),
               ('with', 'without'), ('include', 'exclude')]]
    # fmt: on
    return args, bools


_ARGS, _BOOLS = _train_phrasings()
# fmt: off
TRAIN_ARG += [t for t in _ARGS if t not in TRAIN_ARG]
# Fourth edition: a few more shapes (a dash, a comma, "namely", "that is"), written before the
# fourth edition's fresh phrasing set (make_fresh_phrasing_cases.py FRESH2_*), which avoids them.
TRAIN_ARG += [lead + core for core in ['{p} - {v}', 'the {p}, namely {v}', '{p}, that is {v}', 'the {p} here is {v}',
                                       'the {p} is set to {v}', '{p} should say {v}', '{v} - the {p}',
                                       '{v}, that is the {p}', '{v} goes into the {p}', '{v} as {p} then']
              for lead in ['', 'with ', 'and ']]
TRAIN_BOOL = [('with {p} on', 'with {p} off'), ('{p} true', '{p} false'), ('set {p} to yes', 'set {p} to no')]
TRAIN_BOOL += [b for b in _BOOLS if b not in TRAIN_BOOL]

# Fourth edition: requests that give the arguments first, so that values stand anywhere in a request.
TRAIN_TOOL_REQUEST += ['With {args}, {a}.', '{Args} - please {a}.', 'Given {args}, {a} for me.',
                       'So: {args}. {A}.']
# The first sentence of a training request that gives each argument in a sentence of its own.
TRAIN_SPLIT_HEAD = ['Please {a}.', '{A}, please.', 'I need to {a}.', 'Can you {a}?', 'Help me {a}.', '{A} for me.']
# A request that gives one value and no parameter name (pools.bare_call_case; training only).
TRAIN_BARE = ['{A} {v}.', '{A} {v}', 'Please {a} {v}.', '{A} "{v}".', 'Can you {a} {v}?', '{A}: {v}',
              'I need to {a} {v}.', '{A} {v}, please.', 'Could you {a} {v}?', "{A} '{v}'.", 'Go {a} {v}.',
              'Help me {a} {v}.', '{v}: {a} it.', 'Hey, {a} {v}.']
# Training's JSON requests with each argument in a sentence of its own end with one of these.
TRAIN_JSON_TAIL = ['Make a JSON object of it.', 'Put that in a record.', 'Return it as an object.',
                   'Fill in the form with that.', 'Now the JSON, please.', 'Write it as data.']
TRAIN_JSON_REQUEST = ['Create a record: {args}.', 'Make a JSON object, {args}.', 'Fill in the form: {args}.',
                      'Record this: {args}.', 'Give me the data, {args}.', 'Return an object: {args}.',
                      'Here are the details: {args}.', 'Store an entry, {args}.', 'Build the object: {args}.',
                      'Write down a record: {args}.', 'Please prepare the data: {args}.', 'New entry: {args}.']
HELD_JSON_REQUEST = ['Log an item - {args}.', 'Turn this into structured data: {args}.',
                     'Capture the following: {args}.', 'Produce the structured result - {args}.',
                     'Format these facts: {args}.', 'Put together an entry - {args}.']

TRAIN_MEMORY_TELL = ['My {p} is {v}. Please remember it.', 'Remember that my {p} is {v}.',
                     'Keep this in mind: my {p} is {v}.', 'Note down my {p}: {v}.', 'The {p} is {v}, remember it.',
                     'Please remember the {p} {v}.', 'Store my {p} for later: {v}.', 'Remember the value {v}.',
                     'Remember this word: {v}.', 'Memorize {v} as my {p}.']
HELD_MEMORY_TELL = ["Don't forget my {p}, it is {v}.", 'For later: the {p} is {v}.',
                    'Hold on to this, my {p} is {v}.', 'I am telling you my {p} now: {v}. Keep it.',
                    'Save {v} as the {p}, please.']
# The same for telling a value to remember: the second edition answered 3 of 23 held-out memory cases
# told value first ("Save {v} as the {p}, please.") and 76 of 77 told name first; training had one
# value-first telling. (Added at step 600 of the third edition's run 2: models/maya-demo/README.md.)
TRAIN_MEMORY_TELL += [
    'Keep {v} as my {p}.', 'Please store {v} as the {p}.', 'Remember {v} as my {p}.', 'Note {v} as the {p}.',
    'The value {v} is my {p}, remember it.', 'Take {v} as my {p} and remember it.',
    'Write down {v} as my {p}.', 'Record {v} as the {p}, thanks.', 'Put down {v} under {p}.',
    'Please keep {v} in mind as my {p}.', 'Use {v} as my {p} from now on.', 'Log {v} as the {p}.',
    'Keep in mind that the {p} is {v}.', 'Please remember: my {p} is {v}.', 'Just so you know, my {p} is {v}.']
TRAIN_MEMORY_ASK = ['What is my {p}?', 'What {p} did I give you?', 'Tell me my {p}.', 'Which {p} did I mention?',
                    'Do you remember my {p}?', 'What was the {p}?', 'Repeat my {p}.', 'What did I ask you to remember?']
HELD_MEMORY_ASK = ['Remind me of my {p}.', 'Can you recall the {p} I told you?', 'What {p} did I say earlier?',
                   'I forgot my {p}. What was it?', 'Say the {p} I gave you.']

TRAIN_RESULT_ANSWER = ['The {p} is {v}.', 'Done. The {p} is {v}.', 'The result: {p} {v}.', 'I got {v} for the {p}.',
                       'It returned {v} as the {p}.', 'Here you go: the {p} is {v}.']
# (Answers are the model's words; the held-out side of a tool-result case is its tool, field names and request.)

TRAIN_CHAT = ['Hello', 'Hi there', 'Good morning', 'How are you?', 'Thanks!', 'What can you do?', 'Who are you?',
              'Tell me a joke.', 'Goodbye', 'What is 2+2?', 'What is 7 plus 5?', 'Is it a nice day?',
              'Can you help me?', 'What time is it?', 'Good night', 'Nice to meet you', 'What is your name?',
              'How does this work?', 'Are you a robot?', 'Say something nice.']
# (Training's plain chat is data.py's greetings, facts, arithmetic and small talk; HELD_CHAT is none of them.)
HELD_CHAT = ['Hey, how is it going?', 'Good evening to you!', 'What is 3+4?', 'How much is 12 minus 5?',
             'Thank you so much.', 'Can you tell me something interesting?', 'Who made you?',
             'Hello, anyone there?', 'What day is it today?', 'Cheers, that is all.', 'Could you add 9 and 9?',
             'Are you awake?', 'Please introduce yourself briefly.', 'I have a question about cooking.']
TRAIN_NO_TOOL_ANSWER = ["I can't {a} here: no tool for that is available in this conversation.",
                        'There is no tool to {a} right now, so I cannot do it.',
                        'Sorry, I have no tool to {a}.']

TEMPLATES = {
    'tool_request': (TRAIN_TOOL_REQUEST, HELD_TOOL_REQUEST), 'arg': (TRAIN_ARG, HELD_ARG),
    'bool': (TRAIN_BOOL, HELD_BOOL), 'json_request': (TRAIN_JSON_REQUEST, HELD_JSON_REQUEST),
    'memory_tell': (TRAIN_MEMORY_TELL, HELD_MEMORY_TELL), 'memory_ask': (TRAIN_MEMORY_ASK, HELD_MEMORY_ASK),
    'chat': (TRAIN_CHAT, HELD_CHAT), 'bare': (TRAIN_BARE, []), 'json_tail': (TRAIN_JSON_TAIL, []),
    'split_head': (TRAIN_SPLIT_HEAD, []),
}
# fmt: on


class Drawer:
    """Draws names and templates from one side of the split and records the templates used."""

    def __init__(self, rng: random.Random, split: str):
        assert split in ('train', 'held')
        self.rng, self.split = rng, split
        self.used: list[tuple[str, Any]] = []

    def template(self, family: str) -> Any:
        train, held = TEMPLATES[family]
        t = self.rng.choice(train if self.split == 'train' else held)
        self.used.append((family, t))
        return t

    def tool_name(
        self, verb: str | None = None, noun: str | None = None, single: bool = False
    ) -> tuple[str, list[str]]:
        w = tool_words(self.rng, self.split, verb, noun, single)
        return style(w, _pick_style(self.rng, self.split)), w

    def field(self, kinds: set[str] | None = None) -> tuple[str, list[str], str]:
        """(name, words, value kind)."""
        w = field_words(self.rng, self.split, kinds)
        how = _pick_style(self.rng, self.split)
        return style(w, 'snake' if how in ('pascal', 'snake') else how), w, BASES[w[-1]]


def say(v: Any) -> str:
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return str(v)


def mention(d: Drawer, words: list[str], kind: str, v: Any, quote: bool = False) -> str:
    p = ' '.join(words)
    if kind == 'bool':
        on, off = d.template('bool')
        return (on if v else off).format(p=p)
    return d.template('arg').format(p=p, v=f'"{say(v)}"' if quote and isinstance(v, str) else say(v))


def action_words(rng: random.Random, words: list[str]) -> str:
    """The tool's words as a request says them ("lookup contact" or "look up contact")."""
    return ' '.join(['look up' if w == 'lookup' and rng.random() < 0.5 else w for w in words])


def join_args(rng: random.Random, parts: list[str]) -> str:
    if len(parts) <= 1:
        return ''.join(parts)
    sep = rng.choice([', ', '; '])
    return sep.join(parts[:-1]) + rng.choice([' and ', sep])


def join_all(rng: random.Random, parts: list[str]) -> str:
    if len(parts) <= 1:
        return ''.join(parts)
    return ', '.join(parts[:-1]) + rng.choice([' and ', ', ']) + parts[-1]


def capital(s: str) -> str:
    return s[:1].upper() + s[1:]


# ----------------------------------------------------------------------------------------------
# Tools


def make_tool(
    d: Drawer, verb: str | None = None, noun: str | None = None, single: bool = False, n_params: int | None = None
) -> dict[str, Any]:
    """A declared tool: {'name', 'words', 'params': [(name, words, kind, required)], 'def'}. single: a
    one-word name (a verb: `find`, `lookup`)."""
    rng = d.rng
    name, words = d.tool_name(verb, noun, single)
    params: list[tuple[str, list[str], str, bool]] = []
    seen: set[str] = set()
    for i in range(n_params or rng.choice([1, 1, 2, 2, 2, 3, 3, 4])):
        pname, pw, kind = d.field()
        if pname in seen or ' '.join(pw) in {' '.join(x[1]) for x in params}:
            continue
        seen.add(pname)
        params.append((pname, pw, kind, i == 0 or rng.random() < 0.7))
    props: dict[str, Any] = {}
    for pname, pw, kind, _ in params:
        s = schema_of(kind)
        if rng.random() < 0.25:
            s = {**s, 'description': f'The {" ".join(pw)}'}
        props[pname] = s
    fn: dict[str, Any] = {'name': name}
    if rng.random() < 0.8:
        fn['description'] = capital(' '.join(words)) + rng.choice(['', '.', ' for the user'])
    fn['parameters'] = {'type': 'object', 'properties': props, 'required': [p[0] for p in params if p[3]]}
    return {'name': name, 'words': words, 'params': params, 'def': {'type': 'function', 'function': fn}}


def tool_call_case(rng: random.Random, split: str, n_tools: int | None = None) -> dict[str, Any]:
    """A request for one declared tool among 1-4 (distractors often share the verb or the noun).
    Returns {'tools': [defs], 'request', 'call': (name, args), 'tool', 'templates'}."""
    d = Drawer(rng, split)
    target = make_tool(d)
    tools = [target]
    # Run 4 of the fourth edition, training only (the evaluation's draw is unchanged): at run 3's end 30
    # of the 100 held-out tool cases called a declared distractor (12 sharing the verb, 8 the noun). So
    # training declares more tools (up to 5) and more distractors that share the verb, the noun or both,
    # which makes the choice turn on the request's other words.
    if split == 'train':
        n = n_tools or rng.choice([1, 2, 3, 3, 4, 4, 5, 5])
    else:
        n = n_tools or rng.choice([1, 2, 2, 3, 3, 4, 4])
    names = {target['name'].lower()}
    for _ in range(50):
        if len(tools) >= n:
            break
        r = rng.random()
        if split == 'train':
            verb = target['words'][0] if r < 0.35 or 0.65 <= r < 0.8 else None
            noun = target['words'][-1] if 0.35 <= r < 0.8 else None
        else:
            verb = target['words'][0] if r < 0.3 else None
            noun = target['words'][-1] if 0.3 <= r < 0.55 else None
        t = make_tool(d, verb, noun)
        if t['name'].lower() in names or t['words'] == target['words']:
            continue
        names.add(t['name'].lower())
        tools.append(t)
    rng.shuffle(tools)
    args: dict[str, Any] = {}
    parts: list[str] = []
    # Training only (the evaluation keeps the third edition's request shapes): values sometimes in
    # quotes, or each argument in a sentence of its own.
    quote = split == 'train' and rng.random() < 0.15
    # Run 5 (--mix v4run5, not shipped), training only: one string argument in LONG_QUOTE_SHARE of
    # requests is a quoted text of 1-3 sentences (a message body, a note), copied whole into the call.
    long_p = None
    if split == 'train' and LONG_QUOTE_SHARE > 0 and rng.random() < LONG_QUOTE_SHARE:
        strings = [p[0] for p in target['params'] if p[2] in STRING_KINDS]
        long_p = rng.choice(strings) if strings else None
    for pname, pw, kind, required in target['params']:
        if pname != long_p and not required and rng.random() < 0.4:
            continue
        v = long_quote(rng, split) if pname == long_p else draw_value(rng, kind, split)
        args[pname] = v
        parts.append(mention(d, pw, kind, v, quote or pname == long_p))
    rng.shuffle(parts)
    order = list(args)
    a = action_words(rng, target['words']) if split == 'train' else ' '.join(target['words'])
    if split == 'train' and rng.random() < 0.15:
        head = d.template('split_head').format(a=a, A=capital(a))
        req = head + ' ' + ' '.join(capital(x) + '.' for x in parts)
    else:
        joined = join_all(rng, parts)
        req = _tidy(d.template('tool_request').format(a=a, A=capital(a), args=joined, Args=capital(joined)))
    return {
        'tools': [t['def'] for t in tools],
        'request': req,
        'call': (target['name'], {k: args[k] for k in order}),
        'tool': target,
        'templates': d.used,
        'names': [t['name'] for t in tools] + [p[0] for t in tools for p in t['params']],
    }


# data.gen_sample sets it for its mixture (0 in the default, run 4's).
LONG_QUOTE_SHARE = 0.0


def long_quote(rng: random.Random, split: str) -> str:
    """1-3 TEXT_SENTENCES with random values, on one line: a long string argument."""
    import re as _re

    n = rng.randint(1, 3)
    return ' '.join(
        _re.sub(r'\{(\w)\}', lambda m: _slot(rng, m.group(1), split), rng.choice(TEXT_SENTENCES)) for _ in range(n)
    )


def _tidy(req: str) -> str:
    return (
        req.replace(' .', '.')
        .replace(' ?', '?')
        .replace(' ,', ',')
        .replace(':.', '.')
        .replace('  ', ' ')
        .replace(' and and ', ' and ')
    )


# Run 3 of the fourth edition: bare requests whose verb is not the tool's full name (at step 380 the
# model copied the verb into the value: "Resolve io.kappa.nimbus" -> "9olve io"). The forced-copy
# test's own verbs are not among these.
BARE_OTHER_VERBS = [
    'handle',
    'deal with',
    'take care of',
    'work on',
    'process',
    'go through',
    'sort out',
    'open',
    'fetch',
    'show me',
    'get',
    'use',
    'run',
    'pick',
    'try',
    'do the same for',
    'have a look at',
    'set up',
    'start with',
    'ask about',
]


def bare_call_case(rng: random.Random, split: str) -> dict[str, Any]:
    """A request that gives one value and no parameter name ("Look up alpha", "Find kx-7 for me"): the
    one declared parameter of the tool it names takes it. Training only (TRAIN_BARE); 1-3 tools are
    declared, the target often a one-word verb (`find`, `search`)."""
    d = Drawer(rng, split)
    target = make_tool(d, single=rng.random() < 0.4, n_params=1)
    while target['params'][0][2] == 'bool':
        target = make_tool(d, single=rng.random() < 0.4, n_params=1)
    tools = [target]
    names = {target['name'].lower()}
    for _ in range(20):
        if len(tools) >= rng.choice([1, 1, 2, 3]):
            break
        t = make_tool(d, single=rng.random() < 0.3)
        if t['name'].lower() not in names and t['words'][0] != target['words'][0]:
            names.add(t['name'].lower())
            tools.append(t)
    rng.shuffle(tools)
    pname, pw, kind, _ = target['params'][0]
    v = draw_value(rng, kind, split)
    a = action_words(rng, target['words'])
    r = rng.random()
    if r < 0.3:  # the tool's first word only ("Resolve kx-7" for resolve_host)
        a = action_words(rng, target['words'][:1])
    elif r < 0.45:  # a verb phrase the tool's name does not hold
        a = rng.choice(BARE_OTHER_VERBS)
    t = d.template('bare')
    req = t.format(a=a, A=capital(a), v=say(v))
    return {
        'tools': [x['def'] for x in tools],
        'request': req,
        'call': (target['name'], {pname: v}),
        'tool': target,
        'templates': d.used,
        'names': [x['name'] for x in tools] + [p[0] for x in tools for p in x['params']],
    }


def tool_result_case(rng: random.Random, split: str) -> dict[str, Any]:
    """tool_call_case, then the tool's result (1-2 fields) and an answer that restates it."""
    c = tool_call_case(rng, split)
    d = Drawer(rng, split)
    result: dict[str, Any] = {}
    for _ in range(rng.choice([1, 1, 2])):
        fname, fw, kind = d.field({'person', 'code', 'city', 'phrase', 'word', 'date', 'time', 'int', 'num', 'colour'})
        if fname not in result:
            result[fname] = draw_value(rng, kind, split)
    parts = [rng.choice(TRAIN_RESULT_ANSWER).format(p=' '.join(split_words(k)), v=say(v)) for k, v in result.items()]
    c['result'] = json.dumps(result, ensure_ascii=False)
    c['result_values'] = [say(v) for v in result.values()]
    c['answer'] = ' '.join(parts)
    c['names'] += list(result)
    c['templates'] += d.used
    return c


def split_words(name: str) -> list[str]:
    out: list[str] = []
    for part in name.split('_'):
        cur = ''
        for ch in part:
            if ch.isupper() and cur:
                out.append(cur.lower())
                cur = ch
            else:
                cur += ch
        if cur:
            out.append(cur.lower())
    return out


# ----------------------------------------------------------------------------------------------
# JSON to a user schema


def json_case(rng: random.Random, split: str) -> dict[str, Any]:
    """A schema of 1-5 fields with the user's field names (sometimes a list of strings or a nested
    object) and a request giving every value. Returns {'schema', 'value', 'request'}."""
    d = Drawer(rng, split)
    props: dict[str, Any] = {}
    value: dict[str, Any] = {}
    parts: list[str] = []
    names: list[str] = []
    train = split == 'train'
    # Training has more lists (of 1-5 items) and nested objects than the evaluation, which keeps the
    # third edition's shapes.
    p_list, p_obj = (0.22, 0.38) if train else (0.1, 0.18)
    for _ in range(rng.choice([1, 2, 2, 3, 3, 4, 5])):
        r = rng.random()
        if r < p_list:
            fname, fw, kind = d.field({'word', 'city', 'person', 'colour', 'code'})
            if fname in props:
                continue
            v: Any = [draw_value(rng, kind, split) for _ in range(rng.randint(1, 5 if train else 3))]
            props[fname] = {'type': 'array', 'items': {'type': 'string'}}
            parts.append(d.template('arg').format(p=' '.join(fw), v=join_all(rng, v)))
        elif r < p_obj:
            fname, fw, _ = d.field({'word', 'phrase', 'code', 'person'})
            if fname in props:
                continue
            sub_props: dict[str, Any] = {}
            v = {}
            sub_parts = []
            for _ in range(rng.randint(1, 2)):
                sname, sw, skind = d.field({'person', 'city', 'code', 'int', 'word', 'date'})
                if sname in sub_props:
                    continue
                sub_props[sname] = schema_of(skind)
                v[sname] = draw_value(rng, skind, split)
                sub_parts.append(f'{" ".join(sw)} {say(v[sname])}')
                names.append(sname)
            props[fname] = {
                'type': 'object',
                'properties': sub_props,
                'required': list(sub_props),
                'additionalProperties': False,
            }
            parts.append(f'{" ".join(fw)} with {" and ".join(sub_parts)}')
        else:
            fname, fw, kind = d.field()
            if fname in props:
                continue
            v = draw_value(rng, kind, split)
            s = schema_of(kind)
            if kind == 'colour' and rng.random() < 0.5:
                s = {'type': 'string', 'enum': sorted({v, *rng.sample(COLOURS, 2)})}
            props[fname] = s
            parts.append(mention(d, fw, kind, v))
        value[fname] = v
        names.append(fname)
    rng.shuffle(parts)
    schema = {'type': 'object', 'properties': props, 'required': list(props), 'additionalProperties': False}
    if train and rng.random() < 0.2:
        req = ' '.join(capital(x) + '.' for x in parts) + ' ' + d.template('json_tail')
    else:
        req = d.template('json_request').format(args=join_all(rng, parts))
        if train:  # "... and and W4N9Q" when a lead-in "and" follows join_all's " and " (the evaluation's text is kept)
            req = _tidy(req)
    return {'schema': schema, 'value': value, 'request': req, 'templates': d.used, 'names': names}


# ----------------------------------------------------------------------------------------------
# Memory of arbitrary values


def memory_case(rng: random.Random, split: str) -> dict[str, Any]:
    """Tell a value (name, word, code, decimal, number, multi-word), 0-2 unrelated turns, ask it back.
    Returns {'tell', 'ask', 'value', 'label'}."""
    d = Drawer(rng, split)
    fname, fw, kind = d.field(
        {'person', 'code', 'word', 'city', 'phrase', 'colour', 'int', 'num', 'date', 'time', 'handle', 'email'}
    )
    v = draw_value(rng, kind, split)
    label = ' '.join(fw)
    tell = d.template('memory_tell')
    ask = d.template('memory_ask')
    return {
        'tell': tell.format(p=label, v=say(v)),
        'ask': ask.format(p=label),
        'value': say(v),
        'label': label,
        'templates': d.used,
        'names': [fname],
    }


# ----------------------------------------------------------------------------------------------
# Plain chat without tools


def chat_case(rng: random.Random, split: str) -> dict[str, Any]:
    """A plain message with no tools declared: small talk, or a request that would need a tool.
    Returns {'request', 'action' (None for small talk)}."""
    d = Drawer(rng, split)
    if rng.random() < 0.5:
        return {'request': d.template('chat'), 'action': None, 'templates': d.used, 'names': []}
    c = tool_call_case(rng, split, 1)
    return {
        'request': c['request'],
        'action': ' '.join(c['tool']['words']),
        'templates': d.used + c['templates'],
        'names': [c['call'][0]] + list(c['call'][1]),
    }


# ----------------------------------------------------------------------------------------------
# Fourth edition: extraction from a passage, and returning a long text with one change


TRAIN_FILLER = [
    'Nothing else has changed.',
    'We talked about it yesterday.',
    'The rest can wait.',
    'Thanks for checking.',
    'It was a long week.',
    'Let me know if anything is missing.',
    'The team agreed on this.',
    'This replaces the earlier note.',
    'All of it is final.',
    'I checked it twice.',
    'More details will follow.',
    'It is not urgent.',
]
TRAIN_EXTRACT_JSON = [
    'Turn the note above into a JSON object.',
    'Fill in the form from this note.',
    'Make a record of the note.',
    'Extract the data from the text.',
    'Now the JSON, please.',
]
TRAIN_EXTRACT_ASK = [
    'What is the {p} in the note?',
    'Which {p} does the text give?',
    'Tell me the {p} from the note.',
    'What {p} is mentioned?',
    'From the text: the {p}?',
]


def extract_case(rng: random.Random, split: str) -> dict[str, Any]:
    """A short note that states 1-4 labelled values (arguments phrased as in requests) among filler
    and distractor values, then either a JSON schema for the values (their field names) or a question
    about one of them. Training only. Returns {'request', 'schema' or None, 'value' (the JSON object
    or the one value), 'label'}."""
    d = Drawer(rng, split)
    fields: list[tuple[str, list[str], str, Any]] = []
    seen: set[str] = set()
    for _ in range(rng.randint(1, 4) + rng.randint(0, 2)):
        fname, fw, kind = d.field()
        if fname in seen:
            continue
        seen.add(fname)
        fields.append((fname, fw, kind, draw_value(rng, kind, split)))
    n_asked = max(1, len(fields) - rng.randint(0, 2))
    asked = fields[:n_asked]
    sentences = [capital(mention(d, fw, kind, v, rng.random() < 0.1)) + '.' for _, fw, kind, v in fields]
    sentences += rng.sample(TRAIN_FILLER, rng.randint(0, 2))
    rng.shuffle(sentences)
    note = ' '.join(sentences)
    if rng.random() < 0.6:
        props = {f: schema_of(k) for f, _, k, _ in asked}
        schema = {'type': 'object', 'properties': props, 'required': list(props), 'additionalProperties': False}
        q = d.template('extract_json')
        return {
            'request': f'{note}\n\n{q}' if rng.random() < 0.7 else f'{q}\n\n{note}',
            'schema': schema,
            'value': {f: v for f, _, _, v in asked},
            'templates': d.used,
            'names': [f for f, _, _, _ in fields],
        }
    fname, fw, kind, v = rng.choice([f for f in asked if f[2] != 'bool'] or asked)
    label = ' '.join(fw)
    q = d.template('extract_ask').format(p=label)
    return {
        'request': f'{note}\n\n{q}',
        'schema': None,
        'value': v,
        'label': label,
        'templates': d.used,
        'names': [f for f, _, _, _ in fields],
    }


# Sentences for the edit task's texts. Slots: {N} a name, {P} a place, {c} a code, {d} a date, {t} a
# time, {e} an e-mail address, {f} a path, {n} a number, {x} a decimal, {w} a word, {W} a few words.
TEXT_SENTENCES = [
    '{N} moved to {P} in {y}.',
    'The file {f} was last changed on {d}.',
    'Order {c} ships to {N} at {t}.',
    'Write to {e} about the {w} report.',
    '{N} paid {x} for {n} boxes of {w}.',
    'The {w} key is kept in room {c}.',
    'On {d} the group met in {P} to talk about {W}.',
    'Ticket {c} was closed by {N}.',
    'The meeting starts at {t} and ends an hour later.',
    '{N} and {N} share the office near {P}.',
    'Send the draft to {e} before {d}.',
    'The backup lives at {f}.',
    'Room {c} holds {n} chairs.',
    'Last year the budget was {x}, this year it is {x}.',
    '{N} wrote a note: {W}.',
    'The code word is {w}.',
    'Trains to {P} leave every {n} minutes.',
    'Call {N} about the {W} at {t}.',
    'The total came to {x}.',
    'Please keep {f} safe.',
    'Our contact in {P} is {N} ({e}).',
    'The parcel {c} weighs {x} kilograms.',
    '{N} will visit {P} on {d}.',
    'The old password hint was {w}.',
    'A reminder for {N}: {W}.',
]
TRAIN_EDIT = [
    'Return this text with {old} changed to {new}:\n\n{text}',
    'Here is a text:\n\n{text}\n\nGive it back with {old} replaced by {new}.',
    'Change {old} to {new} in the following text and return the whole text.\n\n{text}',
    'Replace "{old}" with "{new}" and return the text:\n\n{text}',
    '{text}\n\nRewrite the text above with {new} instead of {old}. Keep everything else.',
    'Please swap {old} for {new} in this text and give me all of it back:\n\n{text}',
    '{text}\n\nReturn that text again, but with {new} where it says {old}.',
]
HELD_EDIT = [
    'Edit the text below so that {old} becomes {new}, and return it in full.\n\n{text}',
    '{text}\n\nCould you return this with {old} turned into {new}? Nothing else should change.',
    'Update this text by putting {new} in place of {old}; answer with the updated text only.\n\n{text}',
]
TEMPLATES['extract_json'] = (TRAIN_EXTRACT_JSON, [])
TEMPLATES['extract_ask'] = (TRAIN_EXTRACT_ASK, [])
TEMPLATES['edit'] = (TRAIN_EDIT, HELD_EDIT)


def _slot(rng: random.Random, key: str, split: str) -> str:
    if key == 'N':
        return fresh_name(rng) if rng.random() < 0.6 else person(rng)
    if key == 'P':
        return pseudo_word(rng, 2, 3).capitalize() if rng.random() < 0.6 else rng.choice(CITIES)
    if key == 'c':
        if split == 'held' and rng.random() < 0.15:
            return held_version(rng)
        return fresh_code(rng)
    if key == 'd':
        return fresh_date(rng)
    if key == 't':
        return fresh_time(rng)
    if key == 'e':
        return fresh_email(rng)
    if key == 'f':
        return fresh_path(rng)
    if key == 'n':
        return str(rng.randint(2, 999))
    if key == 'x':
        return f'{fresh_num(rng):.2f}'.lstrip('-')
    if key == 'y':
        return str(rng.randint(1900, 2099))
    if key == 'w':
        return pseudo_word(rng, 1, 3) if rng.random() < 0.6 else rng.choice(COMMON_WORDS)
    if key == 'W':
        return fresh_words(rng)
    raise ValueError(key)


def long_text(rng: random.Random, split: str, chars: int) -> tuple[str, list[str]]:
    """A text of about `chars` characters (prose paragraphs, a list, or key: value lines) made of
    TEXT_SENTENCES with random values; returns (text, the values put in)."""
    import re as _re

    values: list[str] = []
    shape = rng.choice(['prose', 'prose', 'list', 'lines'])
    out: list[str] = []
    size = 0
    if shape == 'prose' and rng.random() < 0.5:
        out.append('# ' + capital(fresh_words(rng)) + '\n\n')
    para = 0
    while size < chars:
        sent = rng.choice(TEXT_SENTENCES)

        def fill(m: Any) -> str:
            v = _slot(rng, m.group(1), split)
            values.append(v)
            return v

        text = _re.sub(r'\{(\w)\}', fill, sent)
        if shape == 'prose':
            para += 1
            piece = text + ('\n\n' if para % rng.randint(3, 6) == 0 else ' ')
        elif shape == 'list':
            piece = '- ' + text + '\n'
        else:
            piece = (
                f'{pseudo_word(rng, 1, 2)}_{rng.choice(["id", "path", "owner", "date", "note", "mail"])}: '
                f'{values[-1] if values else text}\n'
            )
        out.append(piece)
        size += len(piece)
    return ''.join(out).strip(), values


def edit_case(rng: random.Random, split: str, chars: int | None = None) -> dict[str, Any]:
    """A text (TEXT_SENTENCES, ~200-1800 characters: about 150-1400 tokens) and a request to return
    it with one value changed. Returns {'request', 'answer', 'old', 'new'}."""
    import re as _re

    d = Drawer(rng, split)
    n = chars or int(rng.choice([rng.uniform(200, 700), rng.uniform(500, 1200), rng.uniform(900, 1800)]))
    for _ in range(50):
        text, values = long_text(rng, split, n)
        once = [
            v for v in values if len(_re.findall(r'(?<![\w.@/-])' + _re.escape(v) + r'(?![\w@/-]|\.\w)', text)) == 1
        ]
        if once:
            break
    old = rng.choice(once)
    new = old
    while new == old or new in text:
        new = (
            _slot(rng, rng.choice('NPcdtefw'), split)
            if rng.random() < 0.5
            else draw_value(rng, rng.choice(['person', 'code', 'word', 'date']), split)
        )
        new = say(new)
    pat = _re.compile(r'(?<![\w.@/-])' + _re.escape(old) + r'(?![\w@/-]|\.\w)')
    answer = pat.sub(lambda _: new, text)
    req = d.template('edit').format(old=old, new=new, text=text)
    return {'request': req, 'answer': answer, 'old': old, 'new': new, 'templates': d.used, 'names': []}
