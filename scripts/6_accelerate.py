"""Rung 6: rung 5 on Hugging Face Accelerate: one Accelerator replaces the DDP and AMP plumbing.

Launch:
    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml scripts/6_accelerate.py \
        --batch-size 16
    accelerate launch --config_file accelerate_configs/2gpu_bf16.yaml scripts/6_accelerate.py
    python scripts/6_accelerate.py                    # one process, as rung 1
    make accelerate-2gpu     (CPU: make accelerate-cpu)

The end of the ladder (guides/step-5-6.md explains every changed line; guides/next-steps.md: FSDP
and beyond).
"""

import os
from pathlib import Path

import torch
import torch.nn.functional as F

from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, InitProcessGroupKwargs
from torch.distributed.elastic.multiprocessing.errors import record

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
    accelerator = Accelerator(  # the processes and the mixed precision come from the launch
        cpu=not torch.cuda.is_available(),  # a CPU: gloo ranks (use_cpu alone trains N copies)
        gradient_accumulation_steps=accum,
        dataloader_config=DataLoaderConfiguration(split_batches=True),  # batches are global
        kwargs_handlers=[InitProcessGroupKwargs(timeout=args.dist_timeout)],
    )
    world_size = accelerator.num_processes
    is_main = accelerator.is_main_process
    device = accelerator.device
    torch.backends.cuda.matmul.allow_tf32 = args.tf32  # --tf32: faster fp32 matmuls on recent GPUs
    torch.manual_seed(args.seed)  # the same initial weights in every rung

    # -- data --------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    train_loader = data.loader(
        train_ds,
        args.batch_size * world_size,  # prepare() cuts every batch into one slice per process
        shuffle=True,  # a new seeded order every epoch
        seed=args.seed,
        drop_last=True,
        accum=accum,  # an epoch is a whole number of optimizer steps
        num_workers=args.num_workers,
        device=device,
    )
    eval_loader = data.loader(eval_ds, args.batch_size * world_size, device=device)
    batch_size = args.batch_size * accum * world_size  # one optimizer step's samples, every rank's

    # -- model -------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    lr_lambda = schedule.lr_lambda(args, steps_per_epoch=len(train_loader) // accum)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    if args.sync_bn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)  # BN over the global batch
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)  # DDP, AMP
    train_loader, eval_loader = accelerator.prepare(train_loader, eval_loader)  # one slice each
    raw_model = accelerator.unwrap_model(model)  # the model inside DDP
    scaler = accelerator.scaler  # fp16: prepare()'s GradScaler (else None), for checkpoints
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:  # torchrun restarted the job:
        args.resume = "auto"  # every worker continues from the newest checkpoint
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps
    start_epoch, step, done = checkpoint.resume(
        args, raw_model, optimizer, scheduler, train_loader, scaler
    )
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
                results.append(accelerator.gather_for_metrics((predicted, targets, losses)))
        preds, labels, losses = (torch.cat(parts) for parts in zip(*results))
        model.train()
        return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())

    # -- loop --------------------------------------------------------------------------------------
    preempted = preemption.Preemption()  # SIGTERM or Ctrl-C: finish the step, checkpoint, exit
    for epoch in range(start_epoch, args.epochs):
        loss_sum = torch.zeros((), device=device)  # summed on the device: no host sync per step
        for micro, batch in enumerate(log.bar(train_loader, epoch), 1):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            with accelerator.accumulate(model):  # no_sync() but on a step's last micro-batch
                loss = F.cross_entropy(model(inputs), targets)
                accelerator.backward(loss)  # divides by accum, and scales an fp16 loss
                optimizer.step()  # these three act on a step's last micro-batch only
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.detach() / accum
            if not accelerator.sync_gradients:
                continue  # more micro-batches before this optimizer step
            step += 1
            if log.due(step):  # a --log-every line or --report-to's scalars after this step
                loss_sum = accelerator.reduce(loss_sum, "sum")  # every rank, at the same step
                loss_sum /= world_size  # the mean over ranks, now the same on every rank
                log.step(step, loss_sum, optimizer)
            if meter.eval_due(step):  # each epoch's last step, or every --eval-every steps
                results = log.evaluated(step, evaluate())  # the history, --report-to
                if best.improves(results) and is_main:  # the same on every rank; rank 0 writes
                    best.save(step, results, model)
            if step % preemption.CHECK_EVERY == 0:  # the same steps on every rank: a collective
                flag = torch.tensor(int(preempted.received), device=device)  # 1: this rank got it
                flag = accelerator.reduce(flag, "sum")  # > 0 when any rank got SIGTERM or Ctrl-C
                preempted.agree(flag.item() > 0)  # every rank stops at this step, or none does
            if step >= args.max_steps or preempted.stop_now(step):
                break
        loss_sum = accelerator.reduce(loss_sum, "sum")  # the global batch's, not this rank's share
        loss_sum /= world_size  # the mean over ranks
        train_loss = meter.end_epoch(step, loss_sum)  # the mean; stops on NaN or inf
        if is_main:
            checkpoint.save(args, raw_model, optimizer, scheduler, step, *meter.position, scaler)
            print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        accelerator.wait_for_everyone()  # no rank runs ahead before the checkpoint is on disk
        preempted.exit_if_stopped(step, is_main)  # the checkpoint is written: exit, rank 0 says so
        if step >= args.max_steps:
            break

    # -- save --------------------------------------------------------------------------------------
    results = evaluate()
    accelerator.end_training()  # the last collective: from here on, rank 0 alone reports
    if not is_main:
        return
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", raw_model)
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
    entry.run(main, __doc__, uses=("sync_bn", "dist_timeout"))
