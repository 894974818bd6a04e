"""The fresh phrasing sets' phrasings (make_fresh_phrasing_cases.py writes the sets; make_eval_cases.py
records them in the split fixture): per output file its seed and, per template family, phrasings that
are neither TRAIN_* nor HELD_* ones (pools.py). Data only, so that both scripts can read it.
"""

SETS = {
    'eval-cases-fresh.json': {
        'seed': 3030,
        'templates': {
            'arg': [
                '{p} amounting to {v}',
                'the {p} would be {v}',
                'choosing {v} for the {p}',
                'put {v} down as the {p}',
                'with a {p} of exactly {v}',
                '{v} being what the {p} holds',
                'where {p} reads as {v}',
                'picking {v} as the {p}',
            ],
            'tool_request': [
                'Please go and {a} {args}.',
                'Could we {a}, {args}?',
                'Right, {a} {args}.',
                'I am asking you to {a} {args}.',
            ],
            'json_request': [
                'Structure this for me: {args}.',
                'Make an entry out of this - {args}.',
                'Encode the following: {args}.',
            ],
        },
    },
    'eval-cases-fresh4.json': {
        'seed': 4040,
        'templates': {
            'arg': [
                '{p} marked {v}',
                'the {p} listed as {v}',
                'let the {p} be {v}',
                'a {p} known as {v}',
                'the {p} matching {v}',
                '{v} serving as the {p}',
                '{v} labelled as the {p}',
                '{v}, entered as the {p}',
            ],
            'tool_request': [
                'Can I get you to {a} {args}?',
                'Your task: {a} {args}.',
                'If you can, {a} {args}.',
                'One thing to do: {a} {args}.',
            ],
            'json_request': [
                'Arrange this as JSON: {args}.',
                'Sort these into fields - {args}.',
                'Set these down in fields: {args}.',
            ],
        },
    },
    'eval-cases-fresh5.json': {
        'seed': 5050,
        'templates': {
            'arg': [
                '{p} stated as {v}',
                'the {p} specified as {v}',
                'a {p} called {v}',
                'the {p} spelled {v}',
                'assign {v} to the {p}',
                '{v} noted as the {p}',
                '{v} belonging to the {p}',
                '{v} tagged as the {p}',
            ],
            'tool_request': [
                'The job is to {a} {args}.',
                'Make sure to {a} {args}.',
                'On your list: {a} {args}.',
                'Be so good as to {a} {args}.',
            ],
            'json_request': [
                'Shape this into JSON: {args}.',
                'Map these onto the schema - {args}.',
                'Package up the following: {args}.',
            ],
        },
    },
}
