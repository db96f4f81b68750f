"""Rung 4: the same DDP training, launched by torchrun instead of mp.spawn: one script for one machine, many
machines, and restarts after a failure.

Launch:
    torchrun --standalone --nproc_per_node=2 scripts/4_ddp_torchrun.py --batch-size 16
    TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 torchrun --standalone --nproc_per_node=2 --max-restarts=3 \
        scripts/4_ddp_torchrun.py --resume auto          # restartable (the variable: guides/fault-tolerance.md)
    torchrun --nnodes=2 --node-rank=0 --nproc_per_node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \
        scripts/4_ddp_torchrun.py                        # on every machine, each with its own --node-rank
    make ddp-2gpu     (CPU: make ddp-cpu)

Next: 5_ddp_amp.py (guides/step-3-4.md explains every changed line).
"""
import contextlib
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from common import checkpoint, cli, data, metrics, models, preemption, schedule


@record  # torchrun's failure summary then shows this worker's error, not "error_file: <N/A>"
def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    accum = args.gradient_accumulation_steps  # micro-batches per optimizer step (1: no accumulation)
    local_rank = int(os.environ["LOCAL_RANK"])  # set by torchrun: this process's device on this machine
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)  # before init: NCCL binds this process to its own GPU
    dist.init_process_group(timeout=args.dist_timeout)  # nccl/gloo; rank, world size and address from torchrun
    rank, world_size, is_main = dist.get_rank(), dist.get_world_size(), dist.get_rank() == 0  # rank 0 writes
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    sampler = torch.utils.data.DistributedSampler(train_ds, seed=args.seed, drop_last=True)  # each rank its share
    train_loader = data.loader(train_ds, args.batch_size * accum, sampler=sampler, drop_last=True,
                               num_workers=args.num_workers, device=device)  # a new seeded order every epoch
    eval_ds = eval_ds.shard(num_shards=world_size, index=rank, contiguous=True)  # each rank its own slice
    eval_loader = data.loader(eval_ds, args.batch_size, num_workers=args.num_workers, device=device)
    batch_size = args.batch_size * accum * world_size  # the global batch: every rank's together

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd, args.sync_bn).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model = torch.nn.parallel.DistributedDataParallel(model)  # all-reduces (averages) the gradients in backward
    raw_model = model.module  # the model inside: its state_dict() has no "module." prefix, so save this one
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:  # torchrun restarted the job after a failure:
        args.resume = "auto"  # every worker continues from the newest checkpoint
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.lr_lambda(args, len(train_loader)))
    epoch, step, position = checkpoint.resume(args.resume, args.output_dir, raw_model, optimizer, is_main,
                                              scheduler=scheduler)
    epoch, batch_in_epoch = data.start_at(train_loader, epoch, position)  # resuming: the next unseen batch
    if is_main:
        print(f"{Path(__file__).stem}: {info.name}, {len(train_ds)} train samples, {device}, batch {batch_size}")

    def evaluate():  # accuracy and mean loss over the eval set, every sample counted exactly once
        model.eval()
        results = []
        with torch.no_grad():
            for batch in eval_loader:
                inputs, targets = batch["inputs"].to(device), batch["labels"].to(device)
                logits = model(inputs)
                batch_results = (logits.argmax(dim=1), targets, F.cross_entropy(logits, targets, reduction="none"))
                results.append(batch_results)
        preds, labels, losses = (torch.cat(r) for r in zip(*results))
        dist.all_gather_object(gathered := [None] * world_size, (preds.cpu(), labels.cpu(), losses.cpu()))
        preds, labels, losses = (torch.cat(parts) for parts in zip(*gathered))  # every rank's slice, in order
        model.train()
        return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())

    # -- loop --------------------------------------------------------------------------------------------
    train_seconds, samples_seen, train_loss, history = 0.0, 0, float("nan"), []
    preempted, stopping = preemption.Preemption(), False  # SIGTERM or Ctrl-C: finish the step, checkpoint, exit
    tracker = metrics.Tracker(args, batch_size)  # writes on the main process only
    while epoch < args.epochs and step < args.max_steps and not stopping:
        sampler.set_epoch(epoch)  # the epoch's shuffled order, the same on every rank
        loss_sum, loss_steps = torch.zeros((), device=device), 0
        epoch_start = time.perf_counter()
        for batch in tqdm(train_loader, desc=f"epoch {epoch}", initial=batch_in_epoch, leave=False,
                          disable=not (is_main and sys.stderr.isatty())):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0  # this batch's mean loss: its parts' losses / accum, summed on the device
            for micro, (micro_inputs, micro_targets) in enumerate(zip(inputs.chunk(accum), targets.chunk(accum)), 1):
                with model.no_sync() if micro < accum else contextlib.nullcontext():  # all-reduce on the last only
                    loss = F.cross_entropy(model(micro_inputs), micro_targets)  # DDP reads no_sync in forward
                (loss / accum).backward()  # .grad sums the parts: the whole batch's mean gradient
                step_loss += loss.detach() / accum
            optimizer.step()
            step += 1
            tracker.log(step, step_loss, optimizer, model)  # --report-to tensorboard: loss, lr, grad norm
            scheduler.step()  # the learning rate of the next step
            loss_sum += step_loss  # summed on the device: no host sync (.item()) per step
            loss_steps += 1
            batch_in_epoch += 1
            stopping = preempted.stop_now(step)  # every 10 steps: did any process get SIGTERM or Ctrl-C?
            if step >= args.max_steps or stopping:
                break
        dist.all_reduce(loss_sum)  # the loss over the global batch, not rank 0's share alone
        train_loss = (loss_sum / max(loss_steps, 1) / world_size).item()
        metrics.check_finite(train_loss, step)  # NaN or inf: stop here, before this epoch's checkpoint
        epoch_seconds = time.perf_counter() - epoch_start  # after .item(): the device has finished the epoch
        train_seconds, samples_seen = train_seconds + epoch_seconds, samples_seen + loss_steps * batch_size
        history.append({"step": step, "train_loss": train_loss,
                        "samples_per_second": loss_steps * batch_size / epoch_seconds})
        if batch_in_epoch == len(train_loader):  # a whole epoch: the next one starts at its first batch
            epoch, batch_in_epoch = epoch + 1, 0
        if is_main:
            checkpoint.save(args.output_dir, raw_model, optimizer, step, epoch, batch_in_epoch * batch_size,
                            args.keep, scheduler=scheduler)
            print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        dist.barrier()  # no rank runs ahead (or exits, or resumes) before rank 0's checkpoint is on disk

    # -- save --------------------------------------------------------------------------------------------
    results = None if stopping else evaluate()  # on a signal, exit before eval
    dist.destroy_process_group()  # the last collective is behind us: from here on, rank 0 alone reports
    if not is_main:
        sys.exit(preempted.exit_code if stopping else 0)
    if stopping:
        print(f"stopped by {preempted.signal_name} at step {step}, checkpoint saved: rerun with --resume auto")
        sys.exit(preempted.exit_code)
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", raw_model)
    metrics.write_json(Path(args.output_dir) / "metrics.json", {
        **results, "rung": Path(__file__).stem, "task": info.name, "device": str(device), "epochs": epoch,
        "model": models.name(model), "global_batch_size": batch_size, "steps": step,
        "train_loss": train_loss, "history": history, "wall_seconds": time.perf_counter() - wall_start,
        "mixed_precision": args.mixed_precision, "gradient_accumulation_steps": accum, "lr_schedule": args.lr_schedule,
        **metrics.memory(model, optimizer),  # bytes per process: parameters, gradients, optimizer state
        "world_size": world_size, "per_device_batch_size": args.batch_size,
        **metrics.throughput(samples_seen, train_seconds, info, checkpoint.unwrap(model), device, world_size)})
    print(f"done: eval accuracy {results['eval_accuracy']:.4f}, eval loss {results['eval_loss']:.4f}, "
          f"{step} steps -> {args.output_dir}/model.safetensors")


if __name__ == "__main__":
    cli.run(main, __doc__)
