#!/usr/bin/python3
"""PyTorch's training step on the models of examples/mlp, examples/gpt and examples/llama, for vs_pytorch.py.

    torch_step.py --model=mlp --batch=256 --in_features=1024 --hidden=1024 --layers=4 \
        --classes=10 --lr=0.1 [--dp=2] [--data=record --record_file=/tmp/mlp.records]
    torch_step.py --model=gpt --batch=8 --hidden=256 --heads=4 --layers=2 --seq=128 \
        --vocab=1024 --lr=3e-4 [--dp=2] [--iters=60 --warmup=10]
    torch_step.py --model=llama --batch=8 --hidden=256 --heads=4 --kv_heads=2 --layers=2 \
        --seq=128 --vocab=1024 --lr=3e-4
    torch_step.py --facts      # torch version, BLAS library and OpenBLAS core; no training
    torch_step.py --model=gpt ... --dp=3 --rank=R --master=10.232.0.1:29500
                               # one rank of DDP per host (bench/distributed: one per netns host)

Prints one JSON line: every step time and their median after warm-up (wall time from
one step's end to the next's, as `oneflow run` reports step_ms), the parameter count
and sizes, the forward compute ops of the autograd graph, the first and last losses, and
what PyTorch ran on (version, threads, OpenBLAS core).

The models are ours, layer for layer (examples/mlp/mlp_model.cc, examples/gpt/
gpt_model.cc); the optimizers are ours, with the same hyper-parameters; the data is made
the same way, inside the timed step. Each rank runs one thread (torch.set_num_threads(1);
the caller also sets OMP/MKL/OpenBLAS threads to 1 before torch is imported). dp=2 is
DistributedDataParallel over gloo with 2 processes on this machine, each with half of
the batch, as our dp=2 gives each device half of the logical batch. With --rank and
--master this process is that one rank of a dp-rank DistributedDataParallel whose rank 0
listens on --master (one process per host; bench/distributed/distributed_bench.sh runs one
in each emulated host); rank 0 prints the line.
"""

import argparse
import ctypes
import json
import math
import os
import re
import socket
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

# Labels depend on the first K features only (actors/behaviors/synthetic_data.h).
LABEL_FEATURES = 32


class Mlp(nn.Module):
    """examples/mlp: `layers` Linear layers (weight and bias), ReLU between them."""

    def __init__(self, in_features, hidden, classes, layers):
        super().__init__()
        widths = [in_features] + [hidden] * (layers - 1) + [classes]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        for linear in self.linears:
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x, labels):
        for i, linear in enumerate(self.linears):
            x = linear(x)
            if i + 1 < len(self.linears):
                x = F.relu(x)
        return F.cross_entropy(x, labels)  # ReduceMean(SparseSoftmaxCrossEntropy)


class Block(nn.Module):
    """A pre-LN block of examples/gpt: x + attn(ln1(x)), then x + proj(gelu(fc(ln2(x)))).

    No biases in the attention or MLP projections (ours has none); LayerNorm eps 1e-5;
    GELU the tanh approximation; attention scores scaled by 1/sqrt(head_dim), positions
    after the query set to -1e9 before the softmax (CausalMask), as CausalSelfAttention.
    """

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden, eps=1e-5)
        self.w_q = nn.Linear(hidden, hidden, bias=False)
        self.w_k = nn.Linear(hidden, hidden, bias=False)
        self.w_v = nn.Linear(hidden, hidden, bias=False)
        self.w_o = nn.Linear(hidden, hidden, bias=False)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, 4 * hidden, bias=False)
        self.proj = nn.Linear(4 * hidden, hidden, bias=False)

    def attention(self, x, mask):
        b, s, h = x.shape
        hd = h // self.heads

        def split(t):
            return t.view(b, s, self.heads, hd).transpose(1, 2)  # [b, nh, s, hd]

        q, k, v = split(self.w_q(x)), split(self.w_k(x)), split(self.w_v(x))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        probs = torch.softmax(scores.masked_fill(mask, -1e9), dim=-1)
        context = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.w_o(context)

    def forward(self, x, mask):
        x = x + self.attention(self.ln1(x), mask)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """examples/gpt with tied embeddings: wte [vocab, h] and wpe [seq, h] (normal 0.02),
    the blocks, ln_f, logits = ln_f(x) . wte^T, mean cross-entropy over b * s positions."""

    def __init__(self, vocab, seq, hidden, heads, layers):
        super().__init__()
        self.wte = nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        self.wpe = nn.Parameter(torch.randn(seq, hidden) * 0.02)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        for block in self.blocks:
            for linear in (block.w_q, block.w_k, block.w_v, block.w_o, block.fc, block.proj):
                nn.init.normal_(linear.weight, 0, 0.02)
        # A plain attribute, not a buffer: DDP broadcasts buffers at start, and gloo has no
        # bool broadcast ("Invalid scalar type").
        self.mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)

    def forward(self, tokens, targets):
        b, s = tokens.shape
        x = F.embedding(tokens, self.wte) + self.wpe
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.ln_f(x).reshape(b * s, -1) @ self.wte.t()
        return F.cross_entropy(logits, targets.reshape(b * s))


class RmsNorm(nn.Module):
    """rms_norm: x / sqrt(mean(x^2) + eps) * weight (weight ones), statistics in f32."""

    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, base):
    """rotary_embedding of x [b, heads, s, hd]: pairs (i, i + hd/2) turned by p * base^(-2i/hd)."""
    s, hd = x.shape[-2], x.shape[-1]
    half = hd // 2
    inverse_frequencies = base ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    theta = (torch.arange(s, dtype=torch.float64)[:, None] * inverse_frequencies[None, :])
    cos, sin = theta.cos().float(), theta.sin().float()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class LlamaBlock(nn.Module):
    """A block of examples/llama: x + wo(gqa(rope(q), rope(k), v)) of attention_norm(x), then
    x + w2(silu(w1(n)) * w3(n)) of n = ffn_norm(x). Query heads are grouped onto their kv
    head without repeating it, as GroupedQueryAttention does (oneflow_core/dsl/ops.h)."""

    def __init__(self, hidden, heads, kv_heads, ffn_hidden):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        hd = hidden // heads
        self.attention_norm = RmsNorm(hidden)
        self.wq = nn.Linear(hidden, heads * hd, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * hd, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * hd, bias=False)
        self.wo = nn.Linear(heads * hd, hidden, bias=False)
        self.ffn_norm = RmsNorm(hidden)
        self.w1 = nn.Linear(hidden, ffn_hidden, bias=False)
        self.w3 = nn.Linear(hidden, ffn_hidden, bias=False)
        self.w2 = nn.Linear(ffn_hidden, hidden, bias=False)

    def attention(self, x, mask):
        b, s, h = x.shape
        hd, group = h // self.heads, self.heads // self.kv_heads
        q = rotary(self.wq(x).view(b, s, self.heads, hd).transpose(1, 2), 10000.0)
        k = rotary(self.wk(x).view(b, s, self.kv_heads, hd).transpose(1, 2), 10000.0)
        v = self.wv(x).view(b, s, self.kv_heads, hd).transpose(1, 2)
        scores = (q.reshape(b, self.kv_heads, group * s, hd) @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        scores = scores.view(b, self.kv_heads, group, s, s).masked_fill(mask, -1e9)
        probs = torch.softmax(scores, dim=-1).view(b, self.kv_heads, group * s, s)
        context = (probs @ v).view(b, self.heads, s, hd).transpose(1, 2).reshape(b, s, h)
        return self.wo(context)

    def forward(self, x, mask):
        x = x + self.attention(self.attention_norm(x), mask)
        n = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(n)) * self.w3(n))


class Llama(nn.Module):
    """examples/llama: tok_embeddings [vocab, h], the blocks, norm, logits = norm(x) . output
    with an untied output [h, vocab] (all normal 0.02), mean cross-entropy over b * s."""

    def __init__(self, vocab, seq, hidden, heads, kv_heads, ffn_hidden, layers):
        super().__init__()
        self.tok_embeddings = nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        self.blocks = nn.ModuleList(LlamaBlock(hidden, heads, kv_heads, ffn_hidden) for _ in range(layers))
        self.norm = RmsNorm(hidden)
        self.output = nn.Parameter(torch.randn(hidden, vocab) * 0.02)
        for block in self.blocks:
            for linear in (block.wq, block.wk, block.wv, block.wo, block.w1, block.w3, block.w2):
                nn.init.normal_(linear.weight, 0, 0.02)
        self.mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)

    def forward(self, tokens, targets):
        b, s = tokens.shape
        x = F.embedding(tokens, self.tok_embeddings)
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.norm(x).reshape(b * s, -1) @ self.output
        return F.cross_entropy(logits, targets.reshape(b * s))


def llama_ffn_hidden(hidden, ffn_hidden):
    """LlamaConfig::FfnHidden: ffn_hidden, or 2/3 of 4 x hidden rounded up to 32."""
    return ffn_hidden or ((8 * hidden + 2) // 3 + 31) // 32 * 32


class SyntheticClassification:
    """x ~ N(0, 1) [rows, F]; labels = argmax over classes of x[:, :K] . T, T a fixed
    teacher [K, C] (K = min(F, 32)): the rule of FillClassificationLabels, made each step."""

    def __init__(self, seed, rank, rows, features, classes):
        self.rows, self.features = rows, features
        self.generator = torch.Generator().manual_seed(seed * 1000 + rank)
        teacher_generator = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(min(features, LABEL_FEATURES), classes, generator=teacher_generator)

    def __call__(self, iteration):
        x = torch.randn(self.rows, self.features, generator=self.generator)
        labels = (x[:, : self.teacher.shape[0]] @ self.teacher).argmax(dim=1)
        return x, labels


class RecordBatches:
    """The record file (actors/behaviors/synthetic_data.h): f32 records of F features then
    the label; sample b of iteration i reads record (i * B + b) mod records. Read whole at
    start (as our data source does), copied out row by row each step."""

    def __init__(self, path, features, batch, first_row, rows):
        values = np.fromfile(path, dtype="<f4")
        self.records = torch.from_numpy(values.reshape(-1, features + 1))
        self.features, self.batch = features, batch
        self.rows = torch.arange(first_row, first_row + rows)

    def __call__(self, iteration):
        index = (iteration * self.batch + self.rows) % self.records.shape[0]
        chosen = self.records.index_select(0, index)
        return chosen[:, : self.features], chosen[:, self.features].long()


class SyntheticTokens:
    """Windows of ids: a uniform first id per row, then +1 each (mod vocab); targets are
    the next id (FillSyntheticTokens)."""

    def __init__(self, seed, rank, rows, seq, vocab):
        self.rows, self.vocab = rows, vocab
        self.generator = torch.Generator().manual_seed(seed * 1000 + rank)
        self.positions = torch.arange(seq)

    def __call__(self, iteration):
        first = torch.randint(self.vocab, (self.rows, 1), generator=self.generator)
        tokens = (first + self.positions) % self.vocab
        return tokens, (tokens + 1) % self.vocab


def warmup_cosine(base_lr, warmup, total, min_lr):
    """Optimizer::WithWarmupCosine as a LambdaLR factor (oneflow_core/ops/learning_rate.cc)."""

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / (total - warmup)) if total > warmup else 1.0
        return (min_lr + (base_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))) / base_lr

    return factor


def build(args, rank):
    """The model, its optimizer and scheduler, and this rank's data, as examples/* build them."""
    torch.manual_seed(1)
    rows = args.batch // args.dp
    if args.model == "mlp":
        model = Mlp(args.in_features, args.hidden, args.classes, args.layers)
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        scheduler = None
        if args.data == "record":
            data = RecordBatches(args.record_file, args.in_features, args.batch, rank * rows, rows)
        else:
            data = SyntheticClassification(1, rank, rows, args.in_features, args.classes)
    else:
        if args.model == "llama":
            model = Llama(args.vocab, args.seq, args.hidden, args.heads, args.kv_heads,
                          llama_ffn_hidden(args.hidden, args.ffn_hidden), args.layers)
        else:
            model = Gpt(args.vocab, args.seq, args.hidden, args.heads, args.layers)
        # Optimizer::AdamW(lr) defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on
        # every variable; warmup 100 steps, cosine to 0.1 lr over 10000 (examples/gpt).
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                                      weight_decay=0.01)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, warmup_cosine(args.lr, 100, 10000, 0.1 * args.lr))
        data = SyntheticTokens(1, rank, rows, args.seq, args.vocab)
    return model, optimizer, scheduler, data


# PyTorch autograd nodes -> the op types of our plans they stand for (forward pass).
AUTOGRAD_KINDS = {
    "AddmmBackward0": "matmul", "MmBackward0": "matmul", "BmmBackward0": "matmul",
    "ReluBackward0": "relu", "GeluBackward0": "gelu", "NativeLayerNormBackward0": "layer_norm",
    "SoftmaxBackward0": "softmax", "EmbeddingBackward0": "embedding",
    "NllLossBackward0": "sparse_softmax_cross_entropy",
    "SiluBackward0": "silu", "RsqrtBackward0": "rms_norm",
}


def forward_structure(loss):
    """How many of each compute op the forward pass ran, from the autograd graph of `loss`."""
    counts, seen, stack = {}, set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        kind = AUTOGRAD_KINDS.get(type(node).__name__)
        if kind:
            counts[kind] = counts.get(kind, 0) + 1
        stack.extend(next_node for next_node, _ in node.next_functions)
    return dict(sorted(counts.items()))


def openblas_core():
    """The core of the OpenBLAS this process loaded (torch's BLAS on Debian), or None."""
    with open("/proc/self/maps") as maps:
        paths = sorted(set(re.findall(r"(/\S*libopenblas\S*\.so\S*)", maps.read())))
    for path in paths:
        try:
            library = ctypes.CDLL(path)
            library.openblas_get_corename.restype = ctypes.c_char_p
            return library.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return None


def train(rank, args, master):
    """One rank; `master` is rank 0's "address:port" for gloo's rendezvous."""
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    if args.dp > 1:
        dist.init_process_group("gloo", init_method=f"tcp://{master}", rank=rank, world_size=args.dp)
    model, optimizer, scheduler, data = build(args, rank)
    params = [p.numel() for p in model.parameters()]
    step_model = nn.parallel.DistributedDataParallel(model) if args.dp > 1 else model
    steps_ms, losses, structure = [], [], None
    last = time.perf_counter()
    for iteration in range(args.iters):
        inputs, labels = data(iteration)
        loss = step_model(inputs, labels)
        if structure is None:
            structure = forward_structure(loss)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
        now = time.perf_counter()
        steps_ms.append((now - last) * 1000)
        last = now
    if args.dp > 1:
        dist.barrier()
        dist.destroy_process_group()
    if rank != 0:
        return
    print(json.dumps({
        "median_step_ms": round(statistics.median(steps_ms[args.warmup:]), 3),
        "steps_ms": [round(t, 3) for t in steps_ms],
        "params": sum(params),
        "param_sizes": sorted(params),
        "forward_ops": structure,
        "first_loss": round(losses[0], 5),
        "last_loss": round(losses[-1], 5),
        "loss_of": "rank 0's half of the batch" if args.dp > 1 else "the batch",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "openblas_core": openblas_core(),
    }), flush=True)


def facts():
    """What PyTorch runs on: its version, its BLAS library and that library's core."""
    with open("/proc/self/maps") as maps:
        blas = set(re.findall(r"(/\S*lib(?:openblas|blas|mkl)\S*\.so\S*)", maps.read()))
    return {"torch": torch.__version__, "openblas_core": openblas_core(),
            "blas": " ".join(sorted(set(os.path.realpath(path) for path in blas)))}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", action="store_true", help="print facts() and exit")
    parser.add_argument("--model", choices=["mlp", "gpt", "llama"])
    parser.add_argument("--dp", type=int, default=1)
    parser.add_argument("--rank", type=int, default=-1,
                        help="with --master: run only this rank of --dp (one process per host)")
    parser.add_argument("--master", default="", help="rank 0's ADDRESS:PORT, with --rank")
    parser.add_argument("--data", choices=["synthetic", "record"], default="synthetic")
    parser.add_argument("--record_file", default="")
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--layers", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.0)
    parser.add_argument("--in_features", type=int, default=0, help="mlp")
    parser.add_argument("--classes", type=int, default=0, help="mlp")
    parser.add_argument("--heads", type=int, default=0, help="gpt")
    parser.add_argument("--seq", type=int, default=0, help="gpt")
    parser.add_argument("--vocab", type=int, default=0, help="gpt")
    parser.add_argument("--kv_heads", type=int, default=0, help="llama")
    parser.add_argument("--ffn_hidden", type=int, default=0, help="llama (0: Llama's rule)")
    args = parser.parse_args()
    if args.facts:
        print(json.dumps(facts()))
        return
    needed = ["batch", "layers", "hidden", "lr"] + (["in_features", "classes"] if args.model == "mlp" else
                                                    ["heads", "seq", "vocab"] + (["kv_heads"] if args.model == "llama" else []))
    missing = [name for name in needed if not getattr(args, name)] if args.model else ["model"]
    if missing:
        parser.error("missing: " + ", ".join("--" + name for name in missing))
    if args.batch % args.dp:
        parser.error(f"--batch={args.batch} is not divisible by --dp={args.dp}")
    if (args.rank >= 0) != bool(args.master):
        parser.error("--rank and --master go together")
    if args.master and not 0 <= args.rank < args.dp:
        parser.error(f"--rank={args.rank} is not in [0, --dp={args.dp})")
    if args.master:
        train(args.rank, args, args.master)
    elif args.dp == 1:
        train(0, args, "")
    else:
        mp.spawn(train, args=(args, f"127.0.0.1:{free_port()}"), nprocs=args.dp, join=True)


if __name__ == "__main__":
    main()
