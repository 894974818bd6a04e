"""Trains the demo model on data.py's conversations and saves checkpoints. The loss is on what the
model generates, plus --prompt-loss times a next-token loss on the prompt's tokens.

A step trains on the conversations that fill --batch rows of --seq tokens, packed in order (so
every step mixes all kinds of conversation), but it computes them as micro-batches: each
conversation in a row of its own, grouped with others of similar length. Attention then costs each
conversation its own length squared instead of a whole row's; the loss and its gradient are the
packed rows' (checked: relative gradient difference 2e-7) at 0.8 s a step instead of 1.0 (vocab
4096; 0.64-0.66 s with 1024). Sorting *all* conversations into batches by length trains on
twice the tokens per second but learned no copying at all (a trial, commit 2321b00: at step 2450
tool calls 2.5%, memory 0%); there a batch holds mostly one kind of conversation, the likely cause
(not isolated). AdamW, linear warm-up then cosine decay to 10%. With --steps the run is seeded and
reproducible; with --minutes the schedule follows wall-clock progress instead (the run ends when
the time is up), which fits a shared machine but is not bit-reproducible.
The first --first-steps steps train on --first-mix (plain echo by default): a model this small
learns to copy from its prompt within a few hundred steps of echo practice, but not in well over a
thousand steps of the main mixture, where copying is a small part of the loss. The prompt loss
(0.2 by default) speeds the same skill up: with it, a 5,150-step run called tools right 60% of the
time at step 3400, a run without it 32.5%. The gain needs the prompt's special tokens (role and
template markup) in that loss: a trial with --prompt-loss-text-only was no better at step 2000 than
no prompt loss at all (tool calls 5%, against 22.5% with the full prompt loss).
A checkpoint (model + config + step) is written to --out/ckpt.pt every --save-every steps and at the end.
--init-from DIR warm-starts from an exported checkpoint of the same shape (the second edition started
from the first's weights); --device cuda runs on a GPU (written without one at hand: untested).

Usage (the first edition): nice -n 5 python3 train.py --tokenizer models/maya-demo/tokenizer.json \
    --out /tmp/run --seq 768 --batch 4 --steps 7800 --prompt-loss 0.2 --mix v1
(the second edition, warm-started: --init-from models/maya-demo --seq 1024 --batch 3 --minutes 93
--lr 1e-3 --warmup 50 --first-steps 0; models/maya-demo/README.md)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

# OpenMP's default spin-waiting wastes most of the time on a shared, oversubscribed machine.
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
from bpe import Tokenizer  # noqa: E402
from model import Config, Glm4  # noqa: E402


def encode_sample(tok: Tokenizer, tpl, s: data.Sample) -> tuple[list[int], list[bool]]:
    ids: list[int] = []
    mask: list[bool] = []
    for text, trained in data.segments(tpl, s):
        piece = tok.encode(text)
        ids += piece
        mask += [trained] * len(piece)
    return ids, mask


class Packer:
    """Endless stream of seeded conversations, taken a step (--batch packed rows) at a time."""

    def __init__(self, tok: Tokenizer, seed: int, seq: int, mix: str = 'default'):
        self.tok, self.seq, self.mix = tok, seq, mix
        self.rng = random.Random(seed)
        self.tpl = data.make_template()
        self.pending: tuple[list[int], list[bool]] | None = None
        self.pad = tok.special['<|endoftext|>']
        self.samples = 0

    def _next(self) -> tuple[list[int], list[bool]]:
        while True:
            ids, mask = encode_sample(self.tok, self.tpl, data.gen_sample(self.rng, mix=self.mix))
            self.samples += 1
            if len(ids) <= self.seq + 1:
                return ids, mask

    def convs(self, rows: int) -> list[tuple[list[int], list[bool]]]:
        """The conversations that fill `rows` rows of --seq tokens, packed in order (a conversation
        that doesn't fit a row's remaining space starts the next row)."""
        out: list[tuple[list[int], list[bool]]] = []
        for _ in range(rows):
            used = 0
            while True:
                s = self.pending or self._next()
                self.pending = None
                if len(s[0]) - 1 > self.seq - used:
                    if used:
                        self.pending = s
                        break
                    s = (s[0][: self.seq + 1], s[1][: self.seq + 1])
                out.append(s)
                used += len(s[0]) - 1
        return out


def micro_batches(
    convs: list[tuple[list[int], list[bool]]], pad: int, slots: int
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """A step's conversations, longest first, each its own row, in blocks of similar length (none
    shorter than 0.8 of the block's longest) of at most `slots` token slots (conversations x longest):
    (ids, targets where the model generates, prompt targets) per block."""
    groups: list[list[tuple[list[int], list[bool]]]] = [[]]
    for s in sorted(convs, key=lambda c: len(c[0]), reverse=True):
        g = groups[-1]
        if g and ((len(g) + 1) * (len(g[0][0]) - 1) > slots or len(s[0]) < 0.8 * len(g[0][0])):
            groups.append([])
        groups[-1].append(s)
    out = []
    for g in groups:
        t = len(g[0][0]) - 1
        ids, tgt, ptgt = [], [], []
        for x, m in g:
            n = t - (len(x) - 1)
            ids.append(x[:-1] + [pad] * n)
            tgt.append([y if mm else -100 for y, mm in zip(x[1:], m[1:])] + [-100] * n)
            ptgt.append([-100 if mm else y for y, mm in zip(x[1:], m[1:])] + [-100] * n)
        out.append((torch.tensor(ids), torch.tensor(tgt), torch.tensor(ptgt)))
    return out


def grow_layers(model: Glm4, sd: dict[str, torch.Tensor]) -> None:
    """Loads a checkpoint (its layer count read from its tensor names) into a model k times as deep: old layer i becomes
    layer k*i, and the k-1 layers after it are new, randomly initialised except that both their
    post-norms (post_self_attn_layernorm, post_mlp_layernorm) have weight 0. A GLM-4 layer adds
    post_norm(sublayer(x)) to the residual stream, so a new layer adds exactly 0 and the grown model's
    logits equal the checkpoint's; the post-norm weights get gradients at once (their input is the
    normalised, nonzero sublayer output) and open the new layers up from the first step. (Zeroing
    o_proj / down_proj instead would put a 0 through an RMSNorm, whose gradient there is 1/sqrt(eps).)"""
    n = model.cfg.num_hidden_layers
    old_layers = 1 + max(int(name.split('.')[1]) for name in sd if name.startswith('layers.'))
    if n % old_layers:
        raise SystemExit(f'--grow-layers {n} is not a multiple of the checkpoint\'s {old_layers} layers')
    k = n // old_layers
    own = model.state_dict()
    for name, v in sd.items():
        if name.startswith('layers.'):
            _, i, rest = name.split('.', 2)
            name = f'layers.{int(i) * k}.{rest}'
        if own[name].shape != v.shape:
            raise SystemExit(f'--init-from: {name} has shape {tuple(v.shape)}, the model {tuple(own[name].shape)}')
        own[name] = v
    for i in range(n):
        if i % k:
            own[f'layers.{i}.post_self_attn_layernorm.weight'].zero_()
            own[f'layers.{i}.post_mlp_layernorm.weight'].zero_()
    model.load_state_dict(own, strict=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--tokenizer', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--seed', type=int, default=1234)
    ap.add_argument('--steps', type=int, default=1000)
    ap.add_argument('--minutes', type=float, default=0.0, help='wall-clock schedule (overrides --steps)')
    ap.add_argument(
        '--cpu-minutes',
        type=float,
        default=0.0,
        help='CPU-time cap: the run ends when the process has used this much user+sys time (all threads, '
        'start-up included); the schedule follows whichever of the caps is nearer',
    )
    ap.add_argument(
        '--deadline',
        type=float,
        default=0.0,
        help='wall-clock end (Unix time): the run saves and ends before a step that would pass it',
    )
    ap.add_argument('--batch', type=int, default=6)
    ap.add_argument('--seq', type=int, default=512)
    ap.add_argument(
        '--slots',
        type=int,
        default=3072,
        help='token slots per micro-batch (a step\'s conversations are split by length)',
    )
    ap.add_argument('--lr', type=float, default=2e-3)
    ap.add_argument('--warmup', type=int, default=20)
    ap.add_argument('--hidden', type=int, default=256)
    ap.add_argument('--layers', type=int, default=4)
    ap.add_argument('--intermediate', type=int, default=512)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--kv-heads', type=int, default=2)
    ap.add_argument('--head-dim', type=int, default=64)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--save-every', type=int, default=25)
    ap.add_argument('--resume', action='store_true')
    ap.add_argument(
        '--init-from',
        default='',
        help='warm start: an exported model directory (config.json + model.safetensors) of the same '
        'shape; its weights replace the random initialisation (the optimizer starts fresh)',
    )
    ap.add_argument(
        '--grow-layers',
        type=int,
        default=0,
        help='with --init-from: a deeper model (a multiple of the checkpoint\'s layer count) whose old '
        'layers keep their weights and order, each followed by new ones that start as the identity '
        '(post-norm weights 0), so the grown model computes exactly what the checkpoint did',
    )
    ap.add_argument('--device', default='cpu', help="torch device: cpu (default) or cuda (untested: no GPU here)")
    ap.add_argument('--mix', choices=list(data.MIXES), default='default', help='data mixture (data.py MIXES)')
    ap.add_argument(
        '--first-mix',
        choices=list(data.MIXES),
        default='echo',
        help='mixture of the first --first-steps steps (copying practice before the main mixture)',
    )
    ap.add_argument('--first-steps', type=int, default=400)
    ap.add_argument(
        '--prompt-loss',
        type=float,
        default=0.2,
        help='weight of a next-token loss on prompt tokens too (0: only what the model generates)',
    )
    ap.add_argument(
        '--prompt-loss-text-only',
        action='store_true',
        help='leave special tokens (role and template markup) out of the prompt loss '
        '(a trial with it lost the prompt loss\'s gain; see the docstring)',
    )
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    tok = Tokenizer.load(args.tokenizer)
    cfg = Config(
        vocab_size=tok.size,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.grow_layers or args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.head_dim,
    )
    model = Glm4(cfg)
    if args.init_from:
        from export import read_safetensors

        st = read_safetensors(os.path.join(args.init_from, 'model.safetensors'))
        sd = {k[len('model.') :] if k.startswith('model.') else k: v for k, v in st.items()}
        head = sd.pop('lm_head.weight')
        if not torch.equal(head, sd['embed_tokens.weight']):
            raise SystemExit('--init-from: lm_head differs from the embeddings (training ties them)')
        if args.grow_layers:
            grow_layers(model, sd)
        else:
            model.load_state_dict(sd, strict=True)
    dev = torch.device(args.device)
    model.to(dev)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{'params': decay, 'weight_decay': 0.05}, {'params': no_decay, 'weight_decay': 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    packer = Packer(tok, args.seed, args.seq, args.mix)
    specials = torch.tensor(sorted(tok.special.values()), device=args.device)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, 'ckpt.pt')
    step, elapsed0, cpu0 = 0, 0.0, 0.0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location=dev)
        model.load_state_dict(ck['model'])
        opt.load_state_dict(ck['opt'])
        step, elapsed0, cpu0 = ck['step'], ck.get('elapsed', 0.0), ck.get('cpu', 0.0)
        packer.rng.setstate(ck['rng'])
    print(json.dumps({'params': model.n_params(), 'config': cfg.to_dict(), 'args': vars(args)}), flush=True)

    def save(final: bool) -> None:
        torch.save(
            {
                'model': model.state_dict(),
                'opt': opt.state_dict(),
                'config': cfg.to_dict(),
                'step': step,
                'elapsed': elapsed0 + time.time() - t0,
                'cpu': cpu0 + time.process_time(),
                'rng': packer.rng.getstate(),
                'final': final,
                'args': vars(args),
            },
            ckpt_path + '.tmp',
        )
        os.replace(ckpt_path + '.tmp', ckpt_path)

    t0 = time.time()
    step0 = step
    ema = None
    tokens = 0
    last_step = 0.0
    while True:
        now = time.time()
        elapsed = elapsed0 + now - t0
        cpu = cpu0 + time.process_time()
        caps = [step / args.steps] if args.minutes <= 0 else []
        if args.minutes > 0:
            caps.append(elapsed / (args.minutes * 60))
        if args.cpu_minutes > 0:
            caps.append(cpu / (args.cpu_minutes * 60))
        if args.deadline > 0:
            # from the run's start (a --resume continues the first process's schedule)
            start = t0 - elapsed0
            caps.append((now - start) / max(1e-9, args.deadline - start))
        progress = max(caps)
        # a step like the last one must end before the deadline (and the save after it)
        if progress >= 1.0 or (args.deadline > 0 and now + 1.5 * last_step + 5 >= args.deadline):
            break
        step_t0 = now
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        for g in opt.param_groups:
            g['lr'] = lr
        packer.mix = args.first_mix if step < args.first_steps else args.mix
        mbs = micro_batches(packer.convs(args.batch), packer.pad, args.slots)
        model.train()
        opt.zero_grad(set_to_none=True)
        # The loss of the whole step: mean over generated tokens, plus --prompt-loss times the prompt
        # tokens' loss summed and scaled per generated token. Gradients add up over the micro-batches.
        trained = max(1, sum(int((tgt != -100).sum()) for _, tgt, _ in mbs))
        loss = 0.0
        for ids, tgt, ptgt in mbs:
            ids, tgt, ptgt = ids.to(dev), tgt.to(dev), ptgt.to(dev)
            sel = tgt.view(-1) != -100  # logits only where there is loss (saves most of the lm_head)
            hid = model.hidden(ids).view(-1, cfg.hidden_size)
            part = F.cross_entropy(model.logits(hid[sel]), tgt.view(-1)[sel], reduction='sum')
            if args.prompt_loss > 0:
                psel = ptgt.view(-1) != -100
                if args.prompt_loss_text_only:
                    psel &= ~torch.isin(ptgt.view(-1), specials)
                part = part + args.prompt_loss * F.cross_entropy(
                    model.logits(hid[psel]), ptgt.view(-1)[psel], reduction='sum'
                )
            (part / trained).backward()
            loss += float(part) / trained
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += trained
        ema = float(loss) if ema is None else 0.95 * ema + 0.05 * float(loss)
        last_step = time.time() - step_t0
        if step % 10 == 0 or step == 1:
            dt = time.time() - t0
            print(
                f'step {step} loss {float(loss):.4f} ema {ema:.4f} lr {lr:.2e} samples {packer.samples} '
                f'trained_tokens {tokens} elapsed {elapsed0 + dt:.0f}s cpu {cpu0 + time.process_time():.0f}s '
                f'rows/s {(step - step0) * args.batch / max(dt, 1e-9):.2f}',
                flush=True,
            )
        if step % args.save_every == 0:
            save(False)
    save(True)
    print(
        f'done step {step} elapsed {elapsed0 + time.time() - t0:.0f}s cpu {cpu0 + time.process_time():.0f}s '
        f'samples {packer.samples}',
        flush=True,
    )


if __name__ == '__main__':
    main()
