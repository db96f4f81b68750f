"""Rung 4: the same DDP training, launched by torchrun instead of mp.spawn.

Rung 3 minus the launching: torchrun starts the processes and hands each one its identity in the environment
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so init_process_group("env://")
needs no arguments and the one script runs on one node, on many nodes, and again after a failure:
  - no --local_rank argument (torch.distributed.launch's old way): LOCAL_RANK comes from the environment;
  - torchrun --max-restarts=N restarts every worker when one dies; a restarted run (TORCHELASTIC_RESTART_COUNT
    > 0) resumes from its newest valid checkpoint, as --resume auto does.

Launch:
    torchrun --standalone --nproc_per_node=2 scripts/4_ddp_torchrun.py --batch-size 16
    TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 torchrun --standalone --nproc_per_node=2 --max-restarts=3 \
        scripts/4_ddp_torchrun.py --resume auto          # restartable (the variable: see guides)
    torchrun --nnodes=2 --node-rank=0 --nproc_per_node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \
        scripts/4_ddp_torchrun.py                        # on every node, with its own --node-rank
    make ddp-2gpu     (CPU: make ddp-cpu)

Writes <output-dir>/model.safetensors and <output-dir>/metrics.json (default output dir: out/4_ddp_torchrun).
Next rung: 5_ddp_amp.py.
"""
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

from common import UsageError, checkpoint, cli, data, metrics, models, preemption


def all_gather_uneven(tensor):
    """Concatenate every rank's tensor in rank order. dist.all_gather needs equal sizes and the eval shards may
    differ by one sample, so pad to the largest shard, gather, then cut each rank's padding off again."""
    size = torch.tensor([tensor.shape[0]], device=tensor.device)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    padded = tensor.new_zeros((int(max(sizes)), *tensor.shape[1:]))
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.zeros_like(padded) for _ in sizes]
    dist.all_gather(gathered, padded)
    return torch.cat([g[: int(n)] for g, n in zip(gathered, sizes)])


def any_rank(flag, device):
    """True on every rank if `flag` is True on any rank. All ranks must leave the training loop at the same
    step: a rank that stops alone leaves the others waiting forever in DDP's next gradient all-reduce."""
    flag = torch.tensor(int(flag), device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag)


def evaluate(model, loader, device):
    """Accuracy and mean loss over the eval samples, each counted exactly once."""
    model.eval()
    results = []
    with torch.no_grad():
        for batch in loader:
            inputs, targets = batch["inputs"].to(device), batch["labels"].to(device)
            logits = model(inputs)
            batch_results = (logits.argmax(dim=1), targets, F.cross_entropy(logits, targets, reduction="none"))
            results.append(batch_results)
    preds, labels, losses = (torch.cat(r) for r in zip(*results))
    preds, labels, losses = (all_gather_uneven(t) for t in (preds, labels, losses))  # every sample, once
    model.train()
    return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())


def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    if "LOCAL_RANK" not in os.environ or "RANK" not in os.environ:
        raise UsageError("RANK/LOCAL_RANK not set: launch with torchrun --standalone --nproc_per_node=2 "
                         "scripts/4_ddp_torchrun.py (or run scripts/3_ddp_spawn.py)")
    local_rank = int(os.environ["LOCAL_RANK"])  # this process's device on this node; RANK is its global index
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)  # before init: NCCL binds this process to its own GPU
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["LOCAL_WORLD_SIZE"])))
    dist.init_process_group(backend, timeout=timedelta(seconds=args.dist_timeout))  # env://, from torchrun
    rank, world_size = dist.get_rank(), dist.get_world_size()
    is_main = rank == 0  # one process prints and writes files
    device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    if is_main:
        cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    if not is_main:
        dist.barrier()  # rank 0 builds the dataset cache first; the others then load it
    train_ds, eval_ds, info = data.build(args)
    if is_main:
        dist.barrier()
    sampler = DistributedSampler(train_ds, seed=args.seed, drop_last=True)  # each rank its share of each batch
    train_loader = data.loader(train_ds, args.batch_size, sampler, drop_last=True, num_workers=args.num_workers,
                               device=device)
    eval_shard = eval_ds.shard(num_shards=world_size, index=rank, contiguous=True)  # no padding, no duplicates
    eval_loader = data.loader(eval_shard, args.batch_size, num_workers=args.num_workers, device=device)
    global_batch = args.batch_size * world_size

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    if args.sync_bn and torch.cuda.is_available():
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # batch statistics over the global batch
    elif args.sync_bn and is_main:
        print("--sync-bn: PyTorch's SyncBatchNorm only works on GPUs; training with per-process BatchNorm")
    model = DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None,
                gradient_as_bucket_view=True)  # gradients live in the all-reduce buckets: no copy in and out
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:
        args.resume = "auto"  # torchrun restarted us after a failure: continue from the newest checkpoint
    elif is_main and os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0") != "0" and \
            os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # pytorch issue 135712
        print("warning: restarts may fail or hang (over gloo: 5 times in 8 here) while workers share torchrun's "
              "rendezvous store: set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in the launcher's environment")
    epoch, step, batch_in_epoch = checkpoint.resume(args.resume, args.output_dir, model, optimizer, device,
                                                    is_main)
    data.skip_batches(train_loader, batch_in_epoch)  # resuming mid-epoch: continue at the next batch
    if is_main:
        print(f"{Path(__file__).stem}: {info.name} ({len(train_ds)} train / {len(eval_ds)} eval), "
              f"{type(checkpoint.unwrap(model)).__name__}, device {device}, world size {world_size}, "
              f"global batch {global_batch}")

    # -- loop --------------------------------------------------------------------------------------------
    train_seconds, samples_seen, train_loss, results = 0.0, 0, float("nan"), None
    history = []  # per epoch: train loss and samples/s, in metrics.json (make bench plots the loss curves)
    preempted, stopping = preemption.Preemption(), False  # SIGTERM: finish the step, checkpoint, exit
    while epoch < args.epochs and step < args.max_steps and not stopping:
        sampler.set_epoch(epoch)
        loss_sum, loss_steps = torch.zeros((), device=device), 0
        epoch_start = time.perf_counter()
        for batch in tqdm(train_loader, desc=f"epoch {epoch}", initial=batch_in_epoch, leave=False,
                          disable=not (is_main and sys.stderr.isatty())):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()  # summed on the device: no host sync (.item()) per step
            loss_steps += 1
            step += 1
            batch_in_epoch += 1
            stopping = step % preemption.CHECK_EVERY == 0 and any_rank(preempted.requested, device)
            if step >= args.max_steps or stopping:
                break
        dist.all_reduce(loss_sum)  # the loss over the global batch, not rank 0's share alone
        train_loss = (loss_sum / max(loss_steps, 1) / world_size).item()
        epoch_seconds = time.perf_counter() - epoch_start  # after .item(): the device has finished the epoch
        train_seconds, samples_seen = train_seconds + epoch_seconds, samples_seen + loss_steps * global_batch
        history.append({"step": step, "train_loss": train_loss,
                        "samples_per_second": loss_steps * global_batch / epoch_seconds})
        if batch_in_epoch == len(train_loader):  # a whole epoch: the next one starts at its first batch
            epoch, batch_in_epoch = epoch + 1, 0
        if not stopping:  # on SIGTERM the checkpoint comes first: eval could outlast the grace period
            results = evaluate(model, eval_loader, device)
            if is_main:
                print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f} | "
                      f"eval loss {results['eval_loss']:.4f} | eval accuracy {results['eval_accuracy']:.4f}")
        if is_main:
            checkpoint.save(args.output_dir, model, optimizer, step, epoch, batch_in_epoch, keep=args.keep)
        dist.barrier()  # no rank runs ahead (or exits, or resumes) before rank 0's checkpoint is on disk

    # -- save --------------------------------------------------------------------------------------------
    if stopping:  # SIGTERM: the checkpoint is on disk; exit with the code of a terminated process
        if is_main:
            print(f"stopped by SIGTERM at step {step}, checkpoint saved: rerun with --resume auto to continue")
        dist.destroy_process_group()
        sys.exit(preemption.EXIT_CODE)
    if results is None:  # resumed a run that had already finished: nothing to train, still report
        results = evaluate(model, eval_loader, device)
    if is_main:
        checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model)
        metrics.write_json(Path(args.output_dir) / "metrics.json", {
            **results, "rung": Path(__file__).stem, "task": info.name, "device": str(device),
            "model": type(checkpoint.unwrap(model)).__name__, "world_size": world_size,
            "global_batch_size": global_batch,
            "per_device_batch_size": args.batch_size, "epochs": epoch, "steps": step, "train_loss": train_loss,
            **metrics.throughput(samples_seen / train_seconds if train_seconds else 0.0, info,
                                 checkpoint.unwrap(model), world_size, device),  # tokens/s, MFU for gpt
            "history": history, "wall_seconds": time.perf_counter() - wall_start})
        print(f"done: eval accuracy {results['eval_accuracy']:.4f}, train loss {train_loss:.4f}, "
              f"{step} steps -> {args.output_dir}/model.safetensors")
    dist.destroy_process_group()


if __name__ == "__main__":
    cli.run(main, __doc__)
