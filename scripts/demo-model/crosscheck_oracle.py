"""Cross-checks the exported demo model against the engine oracle's independent reference forward
(scripts/oracle/reference.py): both read models/maya-demo and must give the same logits.

Usage: python3 crosscheck_oracle.py [--model models/maya-demo]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'oracle'))
import data  # noqa: E402
from export import load_hf, read_safetensors  # noqa: E402
import reference  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', default=os.path.join(data.REPO, 'models', 'maya-demo'))
    args = ap.parse_args()
    model, tok = load_hf(args.model)
    with open(os.path.join(args.model, 'config.json')) as f:
        cfg = json.load(f)
    weights = read_safetensors(os.path.join(args.model, 'model.safetensors'))
    text = (
        '[gMASK]<sop><|system|>\nAnswer in uppercase.<|user|>\nRemember the value 73, then tell me '
        'the weather in Paris.<|assistant|>\n<think>'
    )
    ids = tok.encode(text)
    with torch.no_grad():
        mine = model(torch.tensor([ids]))[0]
    ref = reference.forward(cfg, weights, ids)
    err = float((mine - ref).abs().max())
    same = bool((mine.argmax(-1) == ref.argmax(-1)).all())
    print(f'{len(ids)} tokens: max |logit diff| {err:.2e}, same argmax at every position: {same}')
    assert err < 1e-3 and same


if __name__ == '__main__':
    main()
