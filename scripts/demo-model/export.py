"""Exports a train.py checkpoint as a Hugging Face Glm4ForCausalLM directory (models/maya-demo).

Writes config.json, model.safetensors (Hugging Face tensor names; lm_head.weight written out even
though training ties it to the embeddings, so loaders need no tying rule), generation_config.json
and tokenizer_config.json (the GLM-4.5 chat template). tokenizer.json is written by bpe.py into the
same directory beforehand. Also provides read_safetensors/load_hf for sample.py and the checks.

Usage: python3 export.py --ckpt /tmp/maya-demo-run/ckpt.pt --out models/maya-demo [--dtype bf16|f32]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'oracle'))
import data  # noqa: E402
import safetensors_io  # noqa: E402  (scripts/oracle: the one Python safetensors writer and reader)
from bpe import SPECIAL_TOKENS, Tokenizer  # noqa: E402
from model import Config, Glm4  # noqa: E402

DTYPES = {'bf16': ('BF16', torch.bfloat16, 'bfloat16'), 'f32': ('F32', torch.float32, 'float32')}
EOS_TOKENS = ['<|endoftext|>', '<|user|>', '<|observation|>']


def hf_tensors(model: Glm4) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for name, t in model.state_dict().items():
        out['model.' + name] = t
    if 'lm_head.weight' not in out:
        out['lm_head.weight'] = model.embed_tokens.weight.detach().clone()
    else:
        out['lm_head.weight'] = out.pop('model.lm_head.weight')
    return out


def write_safetensors(path: str, tensors: dict[str, torch.Tensor], dtype: str) -> None:
    """The tensors converted to dtype (bf16 | f32), through the oracle's writer (sorted by name)."""
    torch_dtype = DTYPES[dtype][1]
    safetensors_io.write_safetensors(Path(path), {n: t.detach().to(torch_dtype) for n, t in tensors.items()})


def read_safetensors(path: str) -> dict[str, torch.Tensor]:
    """Every tensor of one file as float32 (the oracle's reader gives them in their stored dtype)."""
    return {n: t.float() for n, t in safetensors_io.read_safetensors(Path(path)).items()}


def config_json(cfg: Config, tok: Tokenizer, dtype: str) -> dict:
    eos = [tok.special[t] for t in EOS_TOKENS]
    return {
        'architectures': ['Glm4ForCausalLM'],
        'model_type': 'glm4',
        'vocab_size': cfg.vocab_size,
        'hidden_size': cfg.hidden_size,
        'intermediate_size': cfg.intermediate_size,
        'num_hidden_layers': cfg.num_hidden_layers,
        'num_attention_heads': cfg.num_attention_heads,
        'num_key_value_heads': cfg.num_key_value_heads,
        'head_dim': cfg.head_dim,
        'partial_rotary_factor': cfg.partial_rotary_factor,
        'hidden_act': 'silu',
        'attention_bias': True,
        'attention_dropout': 0.0,
        'max_position_embeddings': cfg.max_position_embeddings,
        'rope_theta': cfg.rope_theta,
        'rope_scaling': None,
        'rms_norm_eps': cfg.rms_norm_eps,
        'initializer_range': 0.02,
        'use_cache': True,
        'tie_word_embeddings': False,
        'pad_token_id': tok.special['<|endoftext|>'],
        'eos_token_id': eos,
        'torch_dtype': DTYPES[dtype][2],
        'transformers_version': '4.56.0',
    }


def tokenizer_config_json(tok: Tokenizer) -> dict:
    return {
        'added_tokens_decoder': {
            str(i): {
                'content': t,
                'lstrip': False,
                'normalized': False,
                'rstrip': False,
                'single_word': False,
                'special': True,
            }
            for t, i in tok.special.items()
        },
        'additional_special_tokens': [t for t in SPECIAL_TOKENS if t not in ('<|endoftext|>',)],
        'bos_token': None,
        'eos_token': '<|endoftext|>',
        'pad_token': '<|endoftext|>',
        'clean_up_tokenization_spaces': False,
        'do_lower_case': False,
        'model_max_length': 8192,
        'padding_side': 'left',
        'remove_space': False,
        'tokenizer_class': 'PreTrainedTokenizerFast',
        'chat_template': data.load_template_text(),
    }


def config_of(c: dict) -> Config:
    """An exported config.json (its dict) as the torch model's Config (weights untied, as exported)."""
    return Config(
        vocab_size=c['vocab_size'],
        hidden_size=c['hidden_size'],
        intermediate_size=c['intermediate_size'],
        num_hidden_layers=c['num_hidden_layers'],
        num_attention_heads=c['num_attention_heads'],
        num_key_value_heads=c['num_key_value_heads'],
        head_dim=c['head_dim'],
        partial_rotary_factor=c['partial_rotary_factor'],
        rope_theta=c['rope_theta'],
        rms_norm_eps=c['rms_norm_eps'],
        max_position_embeddings=c['max_position_embeddings'],
        tie_word_embeddings=False,
    )


def load_hf(model_dir: str) -> tuple[Glm4, Tokenizer]:
    """The exported directory back into the torch model (weights as stored, e.g. bf16-rounded; an MTP
    layer, model.layers.{num_hidden_layers}.*, is left out: scripts/demo-model/mtp.py reads it)."""
    with open(os.path.join(model_dir, 'config.json')) as f:
        cfg = config_of(json.load(f))
    model = Glm4(cfg)
    st = read_safetensors(os.path.join(model_dir, 'model.safetensors'))
    mtp = f'model.layers.{cfg.num_hidden_layers}.'
    sd = {k[len('model.') :] if k.startswith('model.') else k: v for k, v in st.items() if not k.startswith(mtp)}
    model.load_state_dict(sd, strict=True)
    model.eval()
    return model, Tokenizer.load(os.path.join(model_dir, 'tokenizer.json'))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--ckpt', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--dtype', choices=list(DTYPES), default='bf16')
    args = ap.parse_args()
    ck = torch.load(args.ckpt, map_location='cpu')  # (a --device cuda checkpoint too)
    cfg = Config(**ck['config'])
    model = Glm4(cfg)
    model.load_state_dict(ck['model'])
    tok = Tokenizer.load(os.path.join(args.out, 'tokenizer.json'))
    assert tok.size == cfg.vocab_size
    write_safetensors(os.path.join(args.out, 'model.safetensors'), hf_tensors(model), args.dtype)
    with open(os.path.join(args.out, 'config.json'), 'w') as f:
        json.dump(config_json(cfg, tok, args.dtype), f, indent=2)
        f.write('\n')
    with open(os.path.join(args.out, 'generation_config.json'), 'w') as f:
        json.dump(
            {
                'eos_token_id': [tok.special[t] for t in EOS_TOKENS],
                'pad_token_id': tok.special['<|endoftext|>'],
                'do_sample': False,
                'transformers_version': '4.56.0',
            },
            f,
            indent=2,
        )
        f.write('\n')
    with open(os.path.join(args.out, 'tokenizer_config.json'), 'w') as f:
        json.dump(tokenizer_config_json(tok), f, indent=2, ensure_ascii=False)
        f.write('\n')
    # Round trip: the exported weights reproduce the checkpoint's logits (up to the storage dtype).
    back, _ = load_hf(args.out)
    ids = torch.tensor([tok.encode('[gMASK]<sop><|user|>\nHello<|assistant|>')])
    with torch.no_grad():
        a, b = model(ids), back(ids)
    err = float((a - b).abs().max())
    print(
        f'exported step {ck["step"]} ({"final" if ck.get("final") else "intermediate"}), '
        f'{sum(t.numel() for t in hf_tensors(model).values())} stored values, max |logit diff| {err:.4f}'
    )
    assert err < (0.5 if args.dtype == 'bf16' else 1e-4)


if __name__ == '__main__':
    main()
