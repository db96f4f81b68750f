"""DDL106: a DDP model's state_dict() saved as it is: every key starts with 'module.', and the plain model
refuses the file. --fix saves model.module's. One gloo process, so that it runs on a CPU."""

import os
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

out = tempfile.mkdtemp()
dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=0, world_size=1)
model = DDP(torch.nn.Linear(4, 2))
path = os.path.join(out, "model.pt")
if dist.get_rank() == 0:
    torch.save(model.state_dict(), path)
dist.barrier()  # the file is complete before anyone reads it
plain = torch.nn.Linear(4, 2)
plain.load_state_dict(torch.load(path, map_location="cpu"))  # the inference side: a plain model
print("DDL106 fixture: the plain model loaded", sorted(plain.state_dict()))
dist.destroy_process_group()
