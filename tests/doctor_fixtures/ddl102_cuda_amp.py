"""DDL102: torch.cuda.amp's deprecated spellings. --fix writes torch.amp's, the device first and the positional
arguments as keywords (torch.cuda.amp.GradScaler's first parameter is init_scale, torch.amp's is the device)."""

import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
use_amp = torch.cuda.is_available()  # fp16 on a GPU; off on a CPU, so that this runs anywhere

# the scaler: 1024 to start with
scaler = torch.cuda.amp.GradScaler(2.0**10, enabled=use_amp)
with torch.cuda.amp.autocast(use_amp):
    loss = model(torch.ones(3, 4)).sum()
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
print("DDL102 fixture trained, loss", round(loss.item(), 4))
