"""A peer for `make bench ARGS="--sections peers"`: the minimal DDP loop of a tutorial (pytorch/examples'
ddp-tutorial-series kind): DistributedSampler, DDP, SGD, and nothing else: no eval, no checkpoints, no stop flag,
no loss all-reduce, no progress bar. What rung 4 costs on top of this is the price of those extras.

    torchrun --standalone --nproc_per_node=2 scripts/tools/peers/minimal_ddp.py --task digits --batch-size 16

Same model, data, seed and batches as the rungs (common/: the ladder's data loader, so the peers compare training
loops, not input pipelines); it writes model.safetensors and a metrics.json with samples/s per epoch.
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from common import checkpoint, data, flags, metrics, models  # noqa: E402


def main():
    args = flags.parse(__doc__)
    dist.init_process_group()  # nccl for CUDA, gloo for CPU tensors
    rank, world_size = dist.get_rank(), dist.get_world_size()
    device = torch.device(
        f"cuda:{os.environ['LOCAL_RANK']}" if torch.cuda.is_available() else "cpu"
    )
    torch.manual_seed(args.seed)
    train_ds, _, info = data.build(args)
    sampler = torch.utils.data.DistributedSampler(train_ds, seed=args.seed, drop_last=True)
    loader = data.loader(train_ds, args.batch_size, sampler=sampler, drop_last=True, device=device)
    model = torch.nn.parallel.DistributedDataParallel(
        models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    history = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        for batch in loader:
            loss = F.cross_entropy(model(batch["inputs"].to(device)), batch["labels"].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        loss.item()  # the device has finished the epoch
        seconds = time.perf_counter() - start
        history.append({"samples_per_second": len(loader) * args.batch_size * world_size / seconds})
    if rank == 0:
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model.module)
        metrics.write_json(
            Path(args.output_dir) / "metrics.json",
            {"history": history, "world_size": world_size, "steps": len(loader) * args.epochs},
        )
    dist.destroy_process_group()
    # The run is done and written: leave now, inside main. Returning would free the DDP model with this frame,
    # and its Reducer's ProcessGroupGloo destructor can hang joining a gloo thread that waits for the GIL
    # (py-spy: the main thread idle on the `main()` line; 1 run in 8 here, twice in one bench run).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
