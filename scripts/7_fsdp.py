"""Rung 7: rung 4 with the model sharded by FSDP2 (fully_shard) instead of replicated by DDP: each process holds
its shard of the parameters, gradients and optimizer state, and gathers a layer's full weights only to use them.

Launch:
    torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py --batch-size 16
    torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py --mixed-precision bf16   # bf16 compute, fp32 reduce
    make fsdp-2gpu     (CPU: make fsdp-cpu)

A step beside the ladder, from rung 4 (guides/step-4-7.md explains every changed line).
"""
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict, get_optimizer_state_dict,
                                                     set_model_state_dict, set_optimizer_state_dict)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from common import checkpoint, cli, data, metrics, models, preemption, schedule


def gather_state(model, optimizer=None):
    """The full (unsharded) model state, and the optimizer's if given, gathered by every process: rank 0 gets CPU
    tensors, the others empty dicts. Every rank must call it: rank 0 alone would wait for the others' shards."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options), (
        get_optimizer_state_dict(model, optimizer, options=options) if optimizer is not None else None)


def load_state(model, optimizer):
    """checkpoint.resume's loader under FSDP: every rank reads the full checkpoint and keeps its own shard."""
    options = StateDictOptions(full_state_dict=True)

    def load(model_state, optimizer_state):
        set_model_state_dict(model, model_state, options=options)
        set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)
    return load


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
    mixed = MixedPrecisionPolicy(param_dtype=args.amp_dtype,
                                 reduce_dtype=torch.float32)  # bf16 compute, gradients reduced in fp32
    for block in models.blocks(model):  # each block its own unit: its full weights exist only while it runs
        fully_shard(block, mp_policy=mixed, reshard_after_forward=True)  # False: faster backward, more memory
    fully_shard(model, mp_policy=mixed)  # the root: what is left (embeddings, head, norms)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)  # after: over the shards
    raw_model = model  # fully_shard changed the model in place (no wrapper): its state_dict() keys are unchanged
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:  # torchrun restarted the job after a failure:
        args.resume = "auto"  # every worker continues from the newest checkpoint
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.lr_lambda(args, len(train_loader)))
    epoch, step, position = checkpoint.resume(args.resume, args.output_dir, raw_model, optimizer, is_main,
                                              load_state=load_state(model, optimizer), scheduler=scheduler)
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
                model.set_requires_gradient_sync(micro == accum)  # reduce-scatter on the last micro-batch only
                loss = F.cross_entropy(model(micro_inputs), micro_targets)
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
        model_state, optimizer_state = gather_state(model, optimizer)  # every rank takes part
        if is_main:
            checkpoint.save(args.output_dir, model_state, optimizer_state, step, epoch, batch_in_epoch * batch_size,
                            args.keep, scheduler=scheduler)
            print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        dist.barrier()  # no rank runs ahead (or exits, or resumes) before rank 0's checkpoint is on disk

    # -- save --------------------------------------------------------------------------------------------
    results = None if stopping else evaluate()  # on a signal, exit before eval
    model_state = None if stopping else gather_state(model)[0]  # the final weights; on a signal, exit at once
    dist.destroy_process_group()  # the last collective is behind us: from here on, rank 0 alone reports
    if not is_main:
        sys.exit(preempted.exit_code if stopping else 0)
    if stopping:
        print(f"stopped by {preempted.signal_name} at step {step}, checkpoint saved: rerun with --resume auto")
        sys.exit(preempted.exit_code)
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model_state)
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
