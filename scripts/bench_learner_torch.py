#!/usr/bin/env python3
"""PyTorch peer of the ARMAC learner benchmark (`armac::bench::learner::bench_train_steps`).

Same feed-forward network as `src/nn/armac.rs` with the same sizes (encoder
`(Linear(hidden) -> DoubleReLU) x layers`; three heads `B(s) -> Linear(A)`; the global critic
`a0 = nA(s0) + nB(s1)`, `a1 = nB(s0) + nA(s1)`, `B(concat(a0, a1)) -> q0, q1`), the same loss
structure (weighted critic MSE at the taken action, masked per-row MSE of both regret heads,
cross-entropy of the masked average-policy softmax), Adam with beta1 = 0, beta2 = 0.999,
eps = 1e-8, on the CPU with 2 threads by default, or on a GPU with `--device cuda` (the batch
lives on the device; the losses are read back once, after the timed steps, as the Rust bench
reads its loss sums once per block).

Prints one JSON object: {"steps_per_second": ..., ...}.

On a shared 2-core machine, run with OMP_WAIT_POLICY=PASSIVE (or --threads 1): with OpenMP's
default busy-waiting and other processes on the cores, 2 threads measured 5-10x slower than 1.

Usage: python3 scripts/bench_learner_torch.py [--batch 2048] [--steps 30] [--input 30]
       [--actions 3] [--hidden 128] [--layers 2] [--head-hidden 128] [--threads 2]
       [--device cpu|cuda]
"""

import argparse
import json
import time

import torch
from torch import nn
import torch.nn.functional as F

ILLEGAL_LOGIT = -1.0e9


def double_relu(x):
    return torch.cat([F.relu(x), F.relu(-x)], dim=-1)


class Block(nn.Module):
    """Appendix F's B(x): h1 = L1(x); h3 = h1 + L2(DoubleReLU(h1)); DoubleReLU(h3)."""

    def __init__(self, d_in, hidden):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(2 * hidden, hidden)

    def forward(self, x):
        h1 = self.l1(x)
        return double_relu(h1 + self.l2(double_relu(h1)))


class Head(nn.Module):
    def __init__(self, rep, hidden, actions):
        super().__init__()
        self.block = Block(rep, hidden)
        self.out = nn.Linear(2 * hidden, actions)

    def forward(self, s):
        return self.out(self.block(s))


class ArmacNet(nn.Module):
    def __init__(self, input_size, actions, hidden, layers, head_hidden):
        super().__init__()
        dims = [input_size] + [2 * hidden] * (layers - 1)
        self.encoder = nn.ModuleList(nn.Linear(d, hidden) for d in dims)
        rep = 2 * hidden
        self.immediate_regret = Head(rep, head_hidden, actions)
        self.mean_regret = Head(rep, head_hidden, actions)
        self.avg_policy = Head(rep, head_hidden, actions)
        self.critic_a = nn.Linear(rep, head_hidden)
        self.critic_b = nn.Linear(rep, head_hidden)
        self.critic_block = Block(2 * head_hidden, head_hidden)
        self.critic_q0 = nn.Linear(2 * head_hidden, actions)
        self.critic_q1 = nn.Linear(2 * head_hidden, actions)

    def encode(self, x):
        for layer in self.encoder:
            x = double_relu(layer(x))
        return x

    def forward(self, own, both0, both1, legal):
        b = own.shape[0]
        s = self.encode(torch.cat([own, both0, both1], 0))
        own_s, s0, s1 = s[:b], s[b : 2 * b], s[2 * b :]
        mean_regret = self.mean_regret(own_s) * legal
        immediate = self.immediate_regret(own_s) * legal
        logits = self.avg_policy(own_s) * legal + (legal - 1.0) * (-ILLEGAL_LOGIT)
        both = torch.cat([s0, s1], 0)
        na, nb = self.critic_a(both), self.critic_b(both)
        a0 = na[:b] + nb[b:]
        a1 = nb[:b] + na[b:]
        h = self.critic_block(torch.cat([a0, a1], 1))
        return self.critic_q0(h) * legal, self.critic_q1(h) * legal, mean_regret, immediate, logits


def synthetic_batch(rows, input_size, actions, gen):
    legal = (torch.rand(rows, actions, generator=gen) > 0.25).float()
    none = legal.sum(1) == 0
    legal[none, 0] = 1.0
    probs = legal / legal.sum(1, keepdim=True)
    action = torch.multinomial(probs, 1, generator=gen).squeeze(1)
    policy_target = F.one_hot(torch.multinomial(probs, 1, generator=gen).squeeze(1), actions).float()
    own = torch.rand(rows, input_size, generator=gen) * 2 - 1
    other = torch.rand(rows, input_size, generator=gen) * 2 - 1
    return {
        "own": own,
        "both0": own,
        "both1": other,
        "legal": legal,
        "action": action,
        "critic_target": torch.rand(rows, 2, generator=gen) * 2 - 1,
        "critic_weight": torch.ones(rows),
        "regret_target": torch.rand(rows, actions, generator=gen) * 2 - 1,
        "regret_weight": torch.ones(rows),
        "immediate_target": torch.rand(rows, actions, generator=gen) * 2 - 1,
        "immediate_weight": torch.ones(rows),
        "policy_target": policy_target,
        "policy_weight": torch.ones(rows),
    }


def normalise(w):
    s = w.sum()
    return w / s if s > 0 else torch.zeros_like(w)


def train_step(net, optim, t):
    # Per-row weights prepared outside autograd, as the Rust learner does on the host.
    legal = t["legal"]
    n_legal = legal.sum(1).clamp(min=1.0)
    q0, q1, w, imm, logits = net(t["own"], t["both0"], t["both1"], legal)
    onehot = F.one_hot(t["action"], legal.shape[1]).float()
    q0a = (q0 * onehot).sum(1)
    q1a = (q1 * onehot).sum(1)
    cw = 0.5 * normalise(t["critic_weight"])
    critic = (((q0a - t["critic_target"][:, 0]) ** 2 + (q1a - t["critic_target"][:, 1]) ** 2) * cw).sum()
    rw = (normalise(t["regret_weight"]) / n_legal).unsqueeze(1)
    mean_regret = (((w - t["regret_target"] * legal) ** 2) * rw).sum()
    iw = (normalise(t["immediate_weight"]) / n_legal).unsqueeze(1)
    immediate = (((imm - t["immediate_target"] * legal) ** 2) * iw).sum()
    pw = normalise(t["policy_weight"]).unsqueeze(1)
    policy = -(F.log_softmax(logits, 1) * (t["policy_target"] * legal) * pw).sum()
    total = critic + mean_regret + immediate + policy
    optim.zero_grad(set_to_none=True)
    total.backward()
    optim.step()
    # The losses stay on the device; the caller reads them once, after the timed steps.
    return torch.stack([critic, mean_regret, immediate, policy]).detach()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--input", type=int, default=30)
    ap.add_argument("--actions", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--head-hidden", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for a GPU peer")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    gen = torch.Generator().manual_seed(2)
    dev = torch.device(args.device)
    net = ArmacNet(args.input, args.actions, args.hidden, args.layers, args.head_hidden).to(dev)
    optim = torch.optim.Adam(net.parameters(), lr=args.lr, betas=(0.0, 0.999), eps=1e-8)
    batch = {k: v.to(dev) for k, v in synthetic_batch(args.batch, args.input, args.actions, gen).items()}
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(2):
        train_step(net, optim, batch)
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        losses = train_step(net, optim, batch)
    losses = losses.tolist()
    sync()
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "steps_per_second": args.steps / elapsed,
                "rows_per_second": args.steps * args.batch / elapsed,
                "batch": args.batch,
                "hidden": args.hidden,
                "input": args.input,
                "steps": args.steps,
                "threads": args.threads,
                "device": args.device,
                "torch": torch.__version__,
                "last_losses": losses,
            }
        )
    )


if __name__ == "__main__":
    main()
