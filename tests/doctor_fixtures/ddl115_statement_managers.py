"""DDL115: context managers called as statements. model.no_sync() and torch.autocast(...) on lines of their own
do nothing; --fix puts the code after them in a `with` block (an autocast stops before the backward)."""

import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", init_method=f"file://{tempfile.mkdtemp()}/s", rank=0, world_size=1)
model = DDP(torch.nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(4):
    x = torch.full((3, 4), float(i))
    if i % 2 == 0:
        # the first micro-batch of two: no all-reduce
        model.no_sync()
        model(x).sum().backward()
    else:
        torch.autocast("cpu", dtype=torch.bfloat16)
        loss = model(x).float().sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
print("DDL115 fixture trained:", model.module.weight.sum().item())
dist.destroy_process_group()
