"""DDL118: accelerator.gather() in an evaluation counts the samples prepare() repeated to even the last batch;
--fix calls gather_for_metrics(). One CPU process here: the same code, the same fix, at any world size."""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator(cpu=True)
model = torch.nn.Linear(4, 3)
test_loader = DataLoader(
    TensorDataset(torch.randn(389, 4), torch.randint(0, 3, (389,))), batch_size=32
)
model, test_loader = accelerator.prepare(model, test_loader)


def evaluate():
    correct = total = 0
    for x, y in test_loader:
        with torch.no_grad():
            pred = model(x).argmax(-1)
        pred, y = accelerator.gather((pred, y))  # every process's predictions
        correct += (pred == y).sum().item()
        total += len(y)
    return correct, total


correct, total = evaluate()
accelerator.print("DDL118 fixture evaluated", total, "samples")
