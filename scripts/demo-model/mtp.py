"""A multi-token-prediction (MTP) layer for the demo model, trained on the frozen model (issue 35, item 5).

The layer has the shape DeepSeek-V3 and GLM-4.5 publish (their `num_nextn_predict_layers` layers,
stored as `model.layers.{N}.*` after the N main layers; the layout as vLLM's deepseek_mtp.py reads
it): to draft token t+2 it takes the main model's hidden state at t before the final norm (what
Maya's engine passes, as llama.cpp's MTP path does: its `embd_nextn` rows) and the embedding of
token t+1,

    x = eh_proj(cat(enorm(embed(token[t+1])), hnorm(h[t])))      # 2C -> C, no bias
    x = decoder_layer(x)                                           # one layer of the model's own kind
    logits = lm_head(shared_head.norm(x))                          # the main model's head

with its own causal attention over the positions before (its own KV in the engine). Chained, the
layer's output x (before shared_head.norm) stands in for h at the next draft. The demo model is a
Glm4ForCausalLM, so the decoder layer is a GLM-4 layer with its four norms (model.Layer).
The embedding and the head are the main model's (no `embed_tokens`/`shared_head.head` of its own).

Training: the main model's weights are loaded from models/maya-demo and never change (the script
checks they are bit-identical afterwards); only the MTP layer learns, on data.py's default mixture
(the main model's own training distribution), cross-entropy on token t+2 where token t+2 is one the
model generates (assistant text), plus --prompt-loss times the same on prompt tokens. CPU time
(user + sys) is the budget: the run stops when --cpu-minutes of it are used.

Evaluation (--eval): the main model answers the held-out chat cases (eval-cases.json, kind 'chat')
greedily; on those answers the layer's greedy draft of token t+2 is compared with the main model's
greedy token t+2: the share that agrees is the acceptance of a one-token MTP draft.

Usage (threads 2, niced):
  nice -n 10 /usr/bin/python3 scripts/demo-model/mtp.py train --model models/maya-demo \
      --out scripts/demo-model/work/mtp --cpu-minutes 30
  /usr/bin/python3 scripts/demo-model/mtp.py eval --model models/maya-demo --ckpt scripts/demo-model/work/mtp/mtp.pt
  /usr/bin/python3 scripts/demo-model/mtp.py export --model models/maya-demo --ckpt scripts/demo-model/work/mtp/mtp.pt
  # the layer a model directory holds, as an mtp.pt for --warm-from (new main weights, same shape):
  /usr/bin/python3 scripts/demo-model/mtp.py extract --model models/maya-demo --out scripts/demo-model/work/mtp-old.pt
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
from export import config_of, read_safetensors  # noqa: E402  (also puts scripts/oracle on the path)
import safetensors_io  # noqa: E402  (scripts/oracle: the safetensors reader and writer)
from model import Config, Glm4, Layer, RMSNorm, rope_cos_sin  # noqa: E402
from train import Packer, micro_batches  # noqa: E402
from bpe import Tokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Mtp(nn.Module):
    """One MTP layer (see the module docstring); parameter names as stored under model.layers.{N}."""

    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        c = cfg.hidden_size
        self.enorm = RMSNorm(c, cfg.rms_norm_eps)
        self.hnorm = RMSNorm(c, cfg.rms_norm_eps)
        self.eh_proj = nn.Linear(2 * c, c, bias=False)
        self.layer = Layer(cfg)
        self.shared_head_norm = RMSNorm(c, cfg.rms_norm_eps)
        nn.init.normal_(self.eh_proj.weight, std=0.02)
        for m in self.layer.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, main: Glm4, h: torch.Tensor, next_ids: torch.Tensor) -> torch.Tensor:
        """h (B, T, C): the main model's hidden states (before its final norm) at 0..T-1; next_ids (B, T): the
        tokens at 1..T. Returns the layer's output x (B, T, C), before shared_head.norm."""
        b, t, _ = h.shape
        x = self.eh_proj(torch.cat((self.enorm(main.embed_tokens(next_ids)), self.hnorm(h)), dim=-1))
        cos, sin = rope_cos_sin(self.cfg, torch.arange(1, t + 1))
        kv, nh = self.cfg.num_key_value_heads, self.cfg.num_attention_heads
        causal = torch.full((t, t), float('-inf')).triu_(1)
        bias = causal.repeat(nh // kv, 1).expand(b * kv, (nh // kv) * t, t)
        return self.layer(x, cos, sin, bias)

    def logits(self, main: Glm4, x: torch.Tensor) -> torch.Tensor:
        return main.logits(self.shared_head_norm(x))

    def hf_tensors(self, index: int) -> dict[str, torch.Tensor]:
        p = f'model.layers.{index}.'
        out = {
            p + 'enorm.weight': self.enorm.weight,
            p + 'hnorm.weight': self.hnorm.weight,
            p + 'eh_proj.weight': self.eh_proj.weight,
            p + 'shared_head.norm.weight': self.shared_head_norm.weight,
        }
        for name, v in self.layer.state_dict().items():
            out[p + name] = v
        return {k: v.detach() for k, v in out.items()}


def load_main(model_dir: str) -> tuple[Glm4, Tokenizer, dict[str, torch.Tensor], dict]:
    """The demo model (its main layers only) and the stored tensors as read."""
    with open(os.path.join(model_dir, 'config.json')) as f:
        c = json.load(f)
    cfg = config_of(c)
    st = read_safetensors(os.path.join(model_dir, 'model.safetensors'))
    n = cfg.num_hidden_layers
    main_st = {k: v for k, v in st.items() if not k.startswith(f'model.layers.{n}.')}
    model = Glm4(cfg)
    model.load_state_dict({k[len('model.') :] if k.startswith('model.') else k: v.float() for k, v in main_st.items()})
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, Tokenizer.load(os.path.join(model_dir, 'tokenizer.json')), main_st, c


def train(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    main, tok, _, _ = load_main(args.model)
    cfg = main.cfg
    mtp = Mtp(cfg)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, 'mtp.pt')
    opt = torch.optim.AdamW(mtp.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.05)
    packer = Packer(tok, args.seed, args.seq, 'default')
    step, cpu0, wall0 = 0, 0.0, 0.0
    if args.warm_from:
        # Warm start: the layer's weights only (fresh optimizer); the CPU time already spent on them
        # carries over, as the budget counts every run.
        ck = torch.load(args.warm_from, map_location='cpu')
        mtp.load_state_dict(ck['mtp'])
        cpu0, wall0 = ck['cpu_seconds'], ck['wall_seconds']
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location='cpu')
        mtp.load_state_dict(ck['mtp'])
        opt.load_state_dict(ck['opt'])
        step, cpu0, wall0 = ck['step'], ck['cpu_seconds'], ck['wall_seconds']
        packer.rng.setstate(ck['rng'])
    c_start, w_start = cpu_seconds(), time.time()
    budget = args.cpu_minutes * 60
    ema = None

    def used() -> tuple[float, float]:
        return cpu0 + cpu_seconds() - c_start, wall0 + time.time() - w_start

    def save() -> None:
        cpu, wall = used()
        torch.save(
            {
                'mtp': mtp.state_dict(),
                'opt': opt.state_dict(),
                'step': step,
                'cpu_seconds': cpu,
                'wall_seconds': wall,
                'rng': packer.rng.getstate(),
                'args': vars(args),
            },
            ckpt_path + '.tmp',
        )
        os.replace(ckpt_path + '.tmp', ckpt_path)

    while True:
        cpu, wall = used()
        if cpu >= budget or (args.stop_at and time.time() >= args.stop_at):
            break
        progress = min(1.0, cpu / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        for g in opt.param_groups:
            g['lr'] = lr
        mbs = micro_batches(packer.convs(args.batch), packer.pad, args.slots)
        opt.zero_grad(set_to_none=True)
        # ids (B, T) and tgt (B, T) from the packer: tgt[t] = token t+1 where it is generated. The
        # layer at position t sees h[t] and token t+1 and predicts token t+2 = tgt[t+1].
        weights = []
        for ids, tgt, ptgt in mbs:
            weights.append(int((tgt[:, 1:] != -100).sum()))
        trained = max(1, sum(weights))
        loss = 0.0
        for ids, tgt, ptgt in mbs:
            with torch.no_grad():
                h = main.hidden(ids, final_norm=False)
            nxt = torch.where(tgt != -100, tgt, ptgt).clamp(min=0)  # token t+1 (pad where none)
            x = mtp(main, h[:, :-1], nxt[:, :-1])
            gen, prm = tgt[:, 1:].reshape(-1), ptgt[:, 1:].reshape(-1)
            flat = x.reshape(-1, cfg.hidden_size)
            sel = gen != -100
            part = F.cross_entropy(mtp.logits(main, flat[sel]), gen[sel], reduction='sum')
            if args.prompt_loss > 0:
                psel = prm != -100
                part = part + args.prompt_loss * F.cross_entropy(
                    mtp.logits(main, flat[psel]), prm[psel], reduction='sum'
                )
            (part / trained).backward()
            loss += float(part) / trained
        torch.nn.utils.clip_grad_norm_(mtp.parameters(), 1.0)
        opt.step()
        step += 1
        ema = loss if ema is None else 0.95 * ema + 0.05 * loss
        if step % 10 == 0 or step == 1:
            cpu, wall = used()
            print(f'step {step} loss {loss:.4f} ema {ema:.4f} lr {lr:.2e} cpu {cpu:.0f}s wall {wall:.0f}s', flush=True)
        if step % args.save_every == 0:
            save()
    save()
    cpu, wall = used()
    print(f'done step {step} cpu {cpu / 60:.1f} min wall {wall / 60:.1f} min', flush=True)


def chat_prompts(tok: Tokenizer) -> list[list[int]]:
    """The held-out chat cases' prompts as the server renders them (user turn, then the assistant
    role and, without thinking, the empty think block the server prefills)."""
    with open(os.path.join(HERE, 'eval-cases.json')) as f:
        cases = [c for c in json.load(f)['cases'] if c['kind'] == 'chat']
    tpl = data.make_template()
    out = []
    for c in cases:
        messages = [{'role': 'user', 'content': c['request']['input']}]
        out.append(tok.encode(data.render(tpl, messages, None, c['thinking'], add_generation_prompt=True)))
    return out


@torch.no_grad()
def evaluate(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    main, tok, _, _ = load_main(args.model)
    mtp = Mtp(main.cfg)
    mtp.load_state_dict(torch.load(args.ckpt, map_location='cpu')['mtp'])
    mtp.eval()
    stop = {tok.special[t] for t in ('<|user|>', '<|observation|>', '<|endoftext|>')}
    agree = total = 0
    agree2 = total2 = 0
    prompts = chat_prompts(tok)[: args.cases]
    for prompt in prompts:
        ids = list(prompt)
        for _ in range(args.max_new):
            nxt = int(main(torch.tensor([ids]))[0, -1].argmax())
            ids.append(nxt)
            if nxt in stop:
                break
        t = torch.tensor([ids])
        h = main.hidden(t, final_norm=False)  # (1, T, C)
        greedy = main.logits(main.norm(h))[0].argmax(-1)  # greedy[t] = the model's token t+1
        x = mtp(main, h[:, :-1], t[:, 1:])
        draft = mtp.logits(main, x)[0].argmax(-1)  # draft[t] = the layer's token t+2
        # A one-token draft made after the model produced token p (= ids[p]) at a generated
        # position: the layer sees h[p-1] and token p and drafts token p+1; the model's greedy
        # token p+1 is greedy[p].
        for p in range(len(prompt), len(ids) - 1):
            total += 1
            agree += int(draft[p - 1]) == int(greedy[p])
        # Chained second draft: the layer's own output x[p-1] stands in for h[p], with the first
        # draft as token p+1 (counted where the first draft was right).
        for p in range(len(prompt), len(ids) - 2):
            if int(draft[p - 1]) != int(greedy[p]):
                continue
            x2 = mtp(main, x[:, p - 1 : p], torch.tensor([[int(draft[p - 1])]]))
            total2 += 1
            agree2 += int(mtp.logits(main, x2)[0, 0].argmax()) == int(greedy[p + 1])
    print(
        json.dumps(
            {
                'cases': len(prompts),
                'drafted': total,
                'first_draft_acceptance': round(agree / max(1, total), 4),
                'second_draft_acceptance_given_first': round(agree2 / max(1, total2), 4),
            }
        )
    )


def export(args: argparse.Namespace) -> None:
    """Adds the layer to the model directory: model.safetensors keeps every main tensor's bytes and
    gains model.layers.{N}.*; config.json gains num_nextn_predict_layers = 1."""
    main, _, _, c = load_main(args.model)
    mtp = Mtp(main.cfg)
    mtp.load_state_dict(torch.load(args.ckpt, map_location='cpu')['mtp'])
    path = Path(args.model) / 'model.safetensors'
    n = c['num_hidden_layers']
    stored = {k: v for k, v in safetensors_io.read_safetensors(path).items() if not k.startswith(f'model.layers.{n}.')}
    dtype = torch.bfloat16 if c.get('torch_dtype', 'bfloat16') == 'bfloat16' else torch.float32
    extra = {k: v.to(dtype) for k, v in mtp.hf_tensors(n).items()}
    safetensors_io.write_safetensors(path, {**stored, **extra})
    c['num_nextn_predict_layers'] = 1
    with open(os.path.join(args.model, 'config.json'), 'w') as f:
        json.dump(c, f, indent=2)
        f.write('\n')
    back = safetensors_io.read_safetensors(path)
    same = all(back[k].dtype == v.dtype and torch.equal(back[k], v) for k, v in stored.items())
    assert same, 'a main tensor changed'
    print(f'exported {len(extra)} MTP tensors; {len(stored)} main tensors bit-identical')


def extract(args: argparse.Namespace) -> None:
    """The reverse of export: the MTP layer stored in a model directory (model.layers.{N}.*) as an mtp.pt
    that --warm-from takes. Its CPU and wall time are written as 0: the budget of the run that trained
    it is stated where that run is recorded (the model card), not carried into the new run's schedule."""
    with open(os.path.join(args.model, 'config.json')) as f:
        c = json.load(f)
    cfg = config_of(c)
    p = f'model.layers.{cfg.num_hidden_layers}.'
    st = {
        k[len(p) :]: v.float()
        for k, v in read_safetensors(os.path.join(args.model, 'model.safetensors')).items()
        if k.startswith(p)
    }
    if not st:
        raise SystemExit(f'{args.model} has no MTP layer ({p}*)')
    own = {'enorm.weight', 'hnorm.weight', 'eh_proj.weight'}  # the rest are the decoder layer's, and the head norm
    state = {k if k in own else 'layer.' + k: v for k, v in st.items() if k != 'shared_head.norm.weight'}
    state['shared_head_norm.weight'] = st['shared_head.norm.weight']
    mtp = Mtp(cfg)
    mtp.load_state_dict(state)  # strict: every tensor of the layer, no other
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save({'mtp': mtp.state_dict(), 'step': 0, 'cpu_seconds': 0.0, 'wall_seconds': 0.0}, args.out)
    print(f'extracted {len(st)} MTP tensors to {args.out}')


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    t = sub.add_parser('train')
    t.add_argument('--model', required=True)
    t.add_argument('--out', required=True)
    t.add_argument('--seed', type=int, default=4242)
    t.add_argument('--cpu-minutes', type=float, default=30.0)
    t.add_argument('--stop-at', type=float, default=0.0, help='unix time: save and stop then at the latest')
    t.add_argument('--batch', type=int, default=3)
    t.add_argument('--seq', type=int, default=1024)
    t.add_argument('--slots', type=int, default=3072)
    t.add_argument('--lr', type=float, default=2e-3)
    t.add_argument('--warmup', type=int, default=20)
    t.add_argument('--prompt-loss', type=float, default=0.2)
    t.add_argument('--threads', type=int, default=2)
    t.add_argument('--save-every', type=int, default=20)
    t.add_argument('--resume', action='store_true')
    t.add_argument('--warm-from', default='', help='an mtp.pt whose layer weights (and CPU time) start this run')
    e = sub.add_parser('eval')
    e.add_argument('--model', required=True)
    e.add_argument('--ckpt', required=True)
    e.add_argument('--cases', type=int, default=100)
    e.add_argument('--max-new', type=int, default=96)
    e.add_argument('--threads', type=int, default=2)
    x = sub.add_parser('export')
    x.add_argument('--model', required=True)
    x.add_argument('--ckpt', required=True)
    w = sub.add_parser('extract')
    w.add_argument('--model', required=True)
    w.add_argument('--out', required=True)
    args = ap.parse_args()
    {'train': train, 'eval': evaluate, 'export': export, 'extract': extract}[args.cmd](args)


if __name__ == '__main__':
    main()
