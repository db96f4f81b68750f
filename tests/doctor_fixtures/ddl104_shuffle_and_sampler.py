"""DDL104: shuffle=True beside a sampler. DataLoader raises at once; --fix drops shuffle=True (the sampler
shuffles)."""

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

data = TensorDataset(torch.arange(8.0))
# rank 0 of 2, without a process group: the sampler needs neither
sampler = DistributedSampler(data, num_replicas=2, rank=0, seed=0)
loader = DataLoader(
    data,
    batch_size=2,
    shuffle=True,
    sampler=sampler,  # the sampler's permutation: seed + epoch
)
for epoch in range(2):
    sampler.set_epoch(epoch)
    print("DDL104 fixture, epoch", epoch, [x.tolist() for (x,) in loader])
