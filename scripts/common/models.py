"""The models every rung trains. No dropout anywhere: with it, two runs could only agree in distribution, and
the parity proof needs them to agree to the float. No BatchNorm by default either: its statistics are taken
over each process's share of the batch, so DDP changes the math (`--model cnn-bn` shows by how much). And GELU,
not ReLU: one process at batch 32 and two at 16 compute the same gradients up to float rounding, and ReLU's kink
turns that rounding into different activation patterns, step after step. Measured on digits, 440 steps, the same
training split over 2 vs 1: ReLU MLP 7e-5, ReLU + GroupNorm CNN 0.12; GELU MLP 6e-7, GELU + GroupNorm CNN 7e-7."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from common import UsageError


class SmallCNN(nn.Module):
    """Two conv blocks, then a linear classifier. `norm="group"` (the default) normalises each sample on its
    own (GroupNorm), so the math does not depend on how the batch is split over processes and every fp32 rung
    ends on rung 1's weights. `norm="batch"` (--model cnn-bn) uses BatchNorm, whose statistics are taken over
    each process's share of the batch: the distributed rungs then drift from rung 1 unless the model is
    converted to SyncBatchNorm (--sync-bn, GPUs only). guides/dp-vs-ddp.md measures both."""

    def __init__(self, in_channels, num_classes, width=32, norm="group"):
        super().__init__()

        def norm_layer(channels):
            return nn.BatchNorm2d(channels) if norm == "batch" else nn.GroupNorm(8, channels)

        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            norm_layer(width),
            nn.GELU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False),
            norm_layer(2 * width),
            nn.GELU(),
            nn.AdaptiveAvgPool2d(4),  # any input size works; 8x8 digits and 32x32 folders alike
        )
        self.classifier = nn.Linear(2 * width * 16, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class MLP(nn.Module):
    """Flattens whatever it gets (tabular rows or images) and classifies it; no BatchNorm, no dropout."""

    def __init__(self, in_features, num_classes, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_features, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then an MLP, each added back to the residual stream."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)
        )

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
            for z in self.qkv(self.ln_1(x)).split(c, dim=2)
        )
        # flash / memory-efficient attention where the device has it; is_causal: each token sees its past only
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A small GPT in nanoGPT's shape: token and position embeddings, pre-norm blocks, a final LayerNorm, and an
    output head that shares the token embedding's weights (weight tying). No dropout, no BatchNorm.
    Returns logits as (batch, vocab, time): the layout F.cross_entropy takes for sequences, so every rung's
    `F.cross_entropy(model(inputs), targets)` and `logits.argmax(dim=1)` work unchanged."""

    def __init__(self, vocab_size, block_size, n_layer=2, n_head=4, n_embd=128):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.head.weight = self.tok.weight  # tied: one matrix embeds tokens and scores them
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)).transpose(1, 2)

    def flops_per_token(self):
        """Training FLOPs per token: 6 per weight (forward + backward) plus attention's 12 x layers x width x T
        (the estimate of the PaLM paper, as nanoGPT uses it). Position embeddings do no multiplies."""
        n = sum(p.numel() for p in self.parameters()) - self.pos.weight.numel()
        layers, width = len(self.blocks), self.tok.weight.shape[1]
        return 6 * n + 12 * layers * width * self.block_size


def name(model):
    """The model's class name through any wrapper: DDP / DataParallel / torch.compile (unwrapped), and FSDP2, which
    turns a GPT into an instance of a generated subclass `FSDPGPT` (the class it was built as comes next)."""
    wrappers = ("OptimizedModule", "DistributedDataParallel", "DataParallel")
    cls = type(next(m for m in model.modules() if type(m).__name__ not in wrappers))
    if cls.__name__.startswith("FSDP") and len(cls.__mro__) > 2:
        cls = cls.__mro__[2] if cls.__mro__[1].__name__ == "FSDPModule" else cls.__mro__[1]
    return cls.__name__


def blocks(model):
    """The submodules that FSDP shards one by one (scripts/7_fsdp.py): a GPT's transformer blocks, else every
    layer with weights of its own (Linear, Conv2d). What they leave (embeddings, norms, the tied head) stays
    with the root."""
    if isinstance(model, GPT):
        return list(model.blocks)
    return [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]


def build(info, name="auto", n_layer=2, n_head=4, n_embd=128):
    """The model for a dataset's Info: `cnn` (GroupNorm) for images, `cnn-bn` the same with BatchNorm, `mlp` for
    images or tables, `gpt` for text; the gpt's size comes from --n-layer/--n-head/--n-embd."""
    if name == "auto":
        name = {"image": "cnn", "text": "gpt"}.get(info.kind, "mlp")
    if (name == "gpt") != (info.kind == "text"):
        raise UsageError(
            f"--model {name} does not fit {info.name!r} ({info.kind} data): --model gpt is for "
            f"--task gpt, cnn, cnn-bn and mlp for the others (or --model auto)"
        )
    if name == "gpt":
        return GPT(info.num_classes, info.input_shape[0], n_layer, n_head, n_embd)
    if name in ("cnn", "cnn-bn"):
        if info.kind != "image":
            raise UsageError(
                f"--model {name} needs image data but {info.name!r} is tabular: use --model mlp"
            )
        return SmallCNN(
            info.input_shape[0], info.num_classes, norm="batch" if name == "cnn-bn" else "group"
        )
    return MLP(math.prod(info.input_shape), info.num_classes)
