"""Rung 7: rung 4 with the model sharded by FSDP2 (fully_shard) instead of replicated by DDP: each
process holds its shard of the parameters, gradients and optimizer state, and gathers a layer's
full weights only to use them.

Launch:
    torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py --batch-size 16
    torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py --mixed-precision bf16
    make fsdp-2gpu     (CPU: make fsdp-cpu)

A step beside the ladder, from rung 4 (guides/step-4-7.md explains every changed line).
"""

import os
from pathlib import Path

import torch
import torch.nn.functional as F

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from common import (
    best_model,
    checkpoint,
    data,
    entry,
    metrics,
    models,
    preemption,
    progress,
    schedule,
)


@record  # torchrun's failure summary then shows this worker's error, not "error_file: <N/A>"
def main(args):
    # -- setup -------------------------------------------------------------------------------------
    accum = args.gradient_accumulation_steps  # micro-batches per optimizer step
    local_rank = int(os.environ["LOCAL_RANK"])  # set by torchrun: this process's GPU here
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)  # before init: NCCL binds this process to its own GPU
    dist.init_process_group(timeout=args.dist_timeout)  # rank, world size and address from torchrun
    world_size = dist.get_world_size()
    is_main = dist.get_rank() == 0  # rank 0 alone writes files and prints
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32  # --tf32: faster fp32 matmuls on recent GPUs
    torch.manual_seed(args.seed)  # the same initial weights in every rung

    # -- data --------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    sampler = torch.utils.data.DistributedSampler(train_ds, seed=args.seed, drop_last=True)
    train_loader = data.loader(
        train_ds,
        args.batch_size,
        sampler=sampler,  # this rank's share of every batch, in a new seeded order every epoch
        drop_last=True,
        accum=accum,  # an epoch is a whole number of optimizer steps
        num_workers=args.num_workers,
        device=device,
    )
    # rank 0's slice is the largest: its batch count is the number of eval forwards every rank runs
    eval_batches = len(data.loader(data.shard(eval_ds, world_size, 0), args.batch_size))
    eval_ds = data.shard(eval_ds, world_size, dist.get_rank())  # each rank a slice
    eval_loader = data.loader(eval_ds, args.batch_size, device=device)
    batch_size = args.batch_size * accum * world_size  # one optimizer step's samples, every rank's

    # -- model -------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    mixed = MixedPrecisionPolicy(param_dtype=args.amp_dtype, reduce_dtype=torch.float32)
    for block in models.blocks(model):  # one unit per block: full weights only while in use
        fully_shard(block, mp_policy=mixed, reshard_after_forward=True)  # False: more memory
    fully_shard(model, mp_policy=mixed)  # the root: what is left (embeddings, head, norms)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)  # shards
    lr_lambda = schedule.lr_lambda(args, steps_per_epoch=len(train_loader) // accum)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    raw_model = model  # fully_shard works in place: no wrapper, the same state_dict() keys
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:  # torchrun restarted the job:
        args.resume = "auto"  # every worker continues from the newest checkpoint
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps
    start_epoch, step, done = checkpoint.resume(args, raw_model, optimizer, scheduler, train_loader)
    meter = progress.Meter(args, info, batch_size, step, done)  # position, samples/s, history
    log = progress.Log(args, meter, model, show=is_main)  # rank 0 alone shows a bar, lines, events
    best = best_model.Best(args.output_dir, args.lineage, step > 0)  # <output-dir>/best
    if is_main:
        print(f"{info.name}: {len(train_ds)} train samples, {device}, global batch {batch_size}")

    def evaluate():  # accuracy and mean loss over the eval set, every sample counted exactly once
        model.eval()
        results = []
        with torch.no_grad():
            for batch in eval_loader:
                inputs, targets = batch["inputs"].to(device), batch["labels"].to(device)
                logits = model(inputs)
                predicted = logits.argmax(dim=1)
                losses = F.cross_entropy(logits, targets, reduction="none")
                results.append((predicted, targets, losses))
            # a forward gathers the shards: a rank with a batch fewer runs one more, or rank 0 waits
            for _ in range(eval_batches - len(eval_loader)):
                model(inputs[:1])  # one sample, its output dropped: every sample still counted once
        preds, labels, losses = (torch.cat(parts) for parts in zip(*results))
        gathered = [None] * world_size  # every rank's slice, in rank order
        dist.all_gather_object(gathered, (preds.cpu(), labels.cpu(), losses.cpu()))
        preds, labels, losses = (torch.cat(parts) for parts in zip(*gathered))
        model.train()
        return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())

    # -- loop --------------------------------------------------------------------------------------
    preempted = preemption.Preemption()  # SIGTERM or Ctrl-C: finish the step, checkpoint, exit
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)  # the epoch's shuffled order, the same on every rank
        loss_sum = torch.zeros((), device=device)  # summed on the device: no host sync per step
        for micro, batch in enumerate(log.bar(train_loader, epoch), 1):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            model.set_requires_gradient_sync(micro % accum == 0)  # reduce-scatter once a step
            loss = F.cross_entropy(model(inputs), targets)
            (loss / accum).backward()  # .grad sums the micro-batches': the step's mean gradient
            loss_sum += loss.detach() / accum
            if micro % accum:
                continue  # more micro-batches before this optimizer step
            optimizer.step()
            scheduler.step()  # the learning rate of the next step
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if log.due(step):  # a --log-every line or --report-to's scalars after this step
                dist.all_reduce(loss_sum)  # every rank, at the same step: the global batch's loss
                loss_sum /= world_size  # the mean over ranks, now the same on every rank
                log.step(step, loss_sum, optimizer)
            if meter.eval_due(step):  # each epoch's last step, or every --eval-every steps
                results = log.evaluated(step, evaluate())  # the history, --report-to
                if best.improves(results):  # the same on every rank (the results are gathered)
                    model_state = checkpoint.gather(raw_model)[0]  # every rank joins the gather
                    if is_main:
                        best.save(step, results, model_state)
            if step % preemption.CHECK_EVERY == 0:  # the same steps on every rank: a collective
                flag = torch.tensor(int(preempted.received), device=device)  # 1: this rank got it
                dist.all_reduce(flag)  # the sum: > 0 when any rank got SIGTERM or Ctrl-C
                preempted.agree(flag.item() > 0)  # every rank stops at this step, or none does
            if step >= args.max_steps or preempted.stop_now(step):
                break
        dist.all_reduce(loss_sum)  # the loss over the global batch, not this rank's share alone
        loss_sum /= world_size  # the mean over ranks
        train_loss = meter.end_epoch(step, loss_sum)  # the mean; stops on NaN or inf
        model_state, optim_state = checkpoint.gather(raw_model, optimizer)  # every rank joins
        if is_main:
            checkpoint.save(args, model_state, optim_state, scheduler, step, *meter.position)
            print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        dist.barrier()  # no rank runs ahead (or exits, or resumes) before the checkpoint is on disk
        preempted.exit_if_stopped(step, is_main)  # the checkpoint is written: exit, rank 0 says so
        if step >= args.max_steps:
            break

    # -- save --------------------------------------------------------------------------------------
    results = evaluate()
    model_state = checkpoint.gather(raw_model)[0]  # the final weights, gathered by every rank
    dist.destroy_process_group()  # the last collective: from here on, rank 0 alone reports
    if not is_main:
        return
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model_state)
    metrics.write_json(
        Path(args.output_dir) / "metrics.json",
        {
            **results,
            "rung": Path(__file__).stem,
            "task": info.name,
            "model": models.name(model),
            "device": str(device),
            "steps": step,
            "best_eval_loss": best.loss,
            **meter.summary(model, optimizer, device),
        },
    )
    log.close(best.loss)  # --report-to: the run's flags beside its final metrics
    print(f"done: eval accuracy {results['eval_accuracy']:.4f}, {step} steps -> {args.output_dir}")


if __name__ == "__main__":
    entry.run(main, __doc__, uses=("mixed_precision", "dist_timeout"))
