"""DDL102 in its other shape: the names imported from torch.cuda.amp. --fix rewrites the import and the calls."""

import torch
from torch.cuda.amp import GradScaler, autocast

model = torch.nn.Linear(4, 2)
scaler = GradScaler(enabled=False)  # off: this runs on a CPU
with autocast(enabled=False):
    loss = model(torch.ones(3, 4)).sum()
scaler.scale(loss).backward()
print("DDL102 (import) fixture ran, scale", scaler.get_scale())
