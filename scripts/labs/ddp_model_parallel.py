"""DDP over a model split across two devices per process: model parallelism inside, data parallelism across.

Each process owns two devices and puts the first half of the MLP on one, the second half on the other; DDP then
replicates that two-device process, all-reducing every gradient on the device its parameter lives on. Two rules
make it work: DDP gets no `device_ids` (the module spans devices, and DDP must not move it), and the inputs go to
the first device, the targets to the last. On a CPU both "devices" are the CPU; with 2 GPUs per process, process r
uses cuda:2r and cuda:2r+1 (with 1 GPU, both halves share it: the wiring runs, nothing is gained).

    torchrun --standalone --nproc_per_node=2 scripts/labs/ddp_model_parallel.py --task cancer --batch-size 16

The split changes where the weights live, not the arithmetic: the run ends on the weights of rung 4 (and rung 1)
trained on the same global batch; `python scripts/tools/compare.py` shows it. A side script, not a rung: no
checkpoints, no resume, no SIGTERM handling (see the rungs for those).
"""

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/, for common
from common import UsageError, checkpoint, data, entry, lock, metrics, models


class TwoDeviceMLP(nn.Module):
    """models.MLP with its layers [:cut] on dev0 and [cut:] on dev1; the same parameter names as the MLP, so its
    checkpoints load into the unsplit model."""

    def __init__(self, mlp, dev0, dev1, cut=3):
        super().__init__()
        self.net, self.dev0, self.dev1, self.cut = mlp.net, dev0, dev1, cut
        self.net[:cut].to(dev0)
        self.net[cut:].to(dev1)

    def forward(self, x):
        x = self.net[: self.cut](x.to(self.dev0))
        # activations cross devices here, gradients cross back
        return self.net[self.cut :](x.to(self.dev1))


def main(args):
    wall_start = time.perf_counter()
    if "LOCAL_RANK" not in os.environ:
        raise UsageError(
            "launch with torchrun --standalone --nproc_per_node=2 scripts/labs/ddp_model_parallel.py"
        )
    local_rank, gpus = int(os.environ["LOCAL_RANK"]), torch.cuda.device_count()
    if gpus:
        dev0 = f"cuda:{min(2 * local_rank, gpus - 1)}"
        dev1 = f"cuda:{min(2 * local_rank + 1, gpus - 1)}"
        torch.cuda.set_device(dev0)
    else:
        dev0 = dev1 = "cpu"
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["LOCAL_WORLD_SIZE"])))
    dist.init_process_group("nccl" if gpus else "gloo", timeout=args.dist_timeout)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    is_main = rank == 0
    torch.manual_seed(args.seed)  # the same initial weights as the rungs
    if is_main:
        lock.check_writable(args.output_dir)

    if not is_main:
        dist.barrier()
    train_ds, eval_ds, info = data.build(args)
    if is_main:
        dist.barrier()
    if args.model not in ("auto", "mlp") or info.kind == "text":
        raise UsageError("this script splits the MLP: use --model mlp (or auto on tabular data)")
    sampler = DistributedSampler(train_ds, seed=args.seed, drop_last=True)
    train_loader = data.loader(train_ds, args.batch_size, sampler=sampler, drop_last=True)
    # every rank evaluates the whole (small) set
    eval_loader = data.loader(eval_ds, args.batch_size)

    # no device_ids: the module spans two
    model = DDP(TwoDeviceMLP(models.build(info, "mlp"), dev0, dev1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    if is_main:
        print(
            f"ddp_model_parallel: {info.name}, world size {world_size}, each process on {dev0} + {dev1}, "
            f"global batch {args.batch_size * world_size}"
        )

    step, epoch, start = 0, 0, time.perf_counter()
    while epoch < args.epochs and step < args.max_steps:
        sampler.set_epoch(epoch)
        for batch in train_loader:
            # targets on the last device
            loss = F.cross_entropy(model(batch["inputs"]), batch["labels"].to(dev1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step >= args.max_steps:
                break
        epoch += 1
    train_seconds = time.perf_counter() - start

    model.eval()
    with torch.no_grad():
        outputs = [(model(b["inputs"]).cpu(), b["labels"]) for b in eval_loader]
    logits, labels = (torch.cat(x) for x in zip(*outputs))
    results = metrics.classification(
        logits.argmax(dim=1), labels, F.cross_entropy(logits, labels, reduction="none")
    )
    if is_main:
        checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model)
        metrics.write_json(
            Path(args.output_dir) / "metrics.json",
            {
                **results,
                "rung": "ddp_model_parallel",
                "task": info.name,
                "devices": [dev0, dev1],
                "world_size": world_size,
                "global_batch_size": args.batch_size * world_size,
                "steps": step,
                "epochs": epoch,
                "samples_per_second": step * args.batch_size * world_size / train_seconds,
                "wall_seconds": time.perf_counter() - wall_start,
            },
        )
        print(
            f"done: eval accuracy {results['eval_accuracy']:.4f}, {step} steps -> {args.output_dir}"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    entry.run(main, __doc__, uses=("dist_timeout",))
