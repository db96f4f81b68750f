"""The models every rung trains. No dropout anywhere: with it, two runs could only agree in distribution, and
the parity proof needs them to agree to the float."""
import math

import torch
from torch import nn

from common import UsageError


class SmallCNN(nn.Module):
    """Two conv blocks with BatchNorm, then a linear classifier. BatchNorm is what makes DDP interesting: each
    process normalises with its own batch's statistics unless the model is converted to SyncBatchNorm."""

    def __init__(self, in_channels, num_classes, width=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(),
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
            nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        return self.net(x)


def build(info, name="auto"):
    """The model for a dataset's Info: `cnn` for images, `mlp` for anything (the BN-free choice)."""
    if name == "auto":
        name = "cnn" if info.kind == "image" else "mlp"
    if name == "cnn":
        if info.kind != "image":
            raise UsageError(f"--model cnn needs image data but {info.name!r} is tabular: use --model mlp")
        return SmallCNN(info.input_shape[0], info.num_classes)
    return MLP(math.prod(info.input_shape), info.num_classes)
