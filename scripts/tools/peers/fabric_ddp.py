"""A peer for `make bench ARGS="--sections peers"`: the same training written with Lightning Fabric, the closest
peer to Accelerate (Fabric sets up the processes, the device, DDP and the loaders; the loop stays yours).

    torchrun --standalone --nproc_per_node=2 scripts/tools/peers/fabric_ddp.py --task digits --batch-size 16

lightning-fabric is a test/bench requirement (tests/requirements.txt), never one of the rungs'. Same model,
data, seed and batches as the rungs; like the minimal loop it has no eval, checkpoints or stop flag, so it shows
what Fabric's own wrapping costs. It writes model.safetensors and a metrics.json with samples/s per epoch.
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from lightning_fabric import Fabric

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from common import checkpoint, data, flags, metrics, models  # noqa: E402


def main():
    args = flags.parse(__doc__)
    # processes and ranks from torchrun's environment
    fabric = Fabric(
        accelerator="cuda" if torch.cuda.is_available() else "cpu",
        strategy="ddp",
        devices=int(os.environ.get("LOCAL_WORLD_SIZE", 1)),
        precision="32-true",
    )
    fabric.launch()
    torch.manual_seed(args.seed)
    train_ds, _, info = data.build(args)
    sampler = torch.utils.data.DistributedSampler(
        train_ds,
        num_replicas=fabric.world_size,
        rank=fabric.global_rank,
        seed=args.seed,
        drop_last=True,
    )
    loader = data.loader(
        train_ds, args.batch_size, sampler=sampler, drop_last=True, device=fabric.device
    )
    # the rungs' sampler: the same batches
    loader = fabric.setup_dataloaders(loader, use_distributed_sampler=False)
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model, optimizer = fabric.setup(model, optimizer)
    history = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        for batch in loader:
            loss = F.cross_entropy(model(batch["inputs"]), batch["labels"])
            optimizer.zero_grad(set_to_none=True)
            fabric.backward(loss)
            optimizer.step()
        loss.item()  # the device has finished the epoch
        seconds = time.perf_counter() - start
        history.append(
            {"samples_per_second": len(loader) * args.batch_size * fabric.world_size / seconds}
        )
    if fabric.global_rank == 0:
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model.module)
        metrics.write_json(
            Path(args.output_dir) / "metrics.json",
            {
                "history": history,
                "world_size": fabric.world_size,
                "steps": len(loader) * args.epochs,
            },
        )
    fabric.barrier()
    # The run is done and written: leave now, inside main. Returning would free the DDP model with this frame,
    # and its Reducer's ProcessGroupGloo destructor can hang joining a gloo thread that waits for the GIL
    # (py-spy: the main thread idle on the `main()` line; 1 run in 8 here, twice in one bench run).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
