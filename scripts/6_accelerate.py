"""Rung 6: rung 5 on Hugging Face Accelerate: one Accelerator object replaces the DDP and AMP plumbing.

Launch:
    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml scripts/6_accelerate.py --batch-size 16
    accelerate launch --config_file accelerate_configs/2gpu_bf16.yaml scripts/6_accelerate.py
    python scripts/6_accelerate.py                    # one process, as rung 1
    make accelerate-2gpu     (CPU: make accelerate-cpu)

The end of the ladder (guides/step-5-6.md explains every changed line; guides/next-steps.md: FSDP and beyond).
"""
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from accelerate import Accelerator
from torch.distributed.elastic.multiprocessing.errors import record

from common import checkpoint, cli, data, metrics, models, preemption, schedule


@record  # torchrun's failure summary then shows this worker's error, not "error_file: <N/A>"
def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    accum = args.gradient_accumulation_steps  # micro-batches per optimizer step (1: no accumulation)
    accelerator = Accelerator(gradient_accumulation_steps=accum)  # mixed precision from the launch's config
    world_size, is_main, device = accelerator.num_processes, accelerator.is_main_process, accelerator.device
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    train_loader = data.loader(train_ds, args.batch_size * accum, shuffle=True, seed=args.seed, drop_last=True,
                               num_workers=args.num_workers, device=device)  # a new seeded order every epoch
    eval_loader = data.loader(eval_ds, args.batch_size, num_workers=args.num_workers, device=device)
    batch_size = args.batch_size * accum * world_size  # the global batch: every rank's together

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd, args.sync_bn).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
    raw_model = accelerator.unwrap_model(model, keep_torch_compile=False)  # without DDP's "module." prefix
    scaler = accelerator.scaler  # fp16: the GradScaler that prepare() made (None otherwise), for the checkpoint
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:  # torchrun restarted the job after a failure:
        args.resume = "auto"  # every worker continues from the newest checkpoint
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.lr_lambda(args, len(train_loader)))
    epoch, step, position = checkpoint.resume(args.resume, args.output_dir, raw_model, optimizer, is_main, scaler,
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
                results.append(accelerator.gather_for_metrics(batch_results))  # drops what prepare() repeated
        preds, labels, losses = (torch.cat(r) for r in zip(*results))
        model.train()
        return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())

    # -- loop --------------------------------------------------------------------------------------------
    train_seconds, samples_seen, train_loss, history = 0.0, 0, float("nan"), []
    preempted, stopping = preemption.Preemption(), False  # SIGTERM or Ctrl-C: finish the step, checkpoint, exit
    tracker = metrics.Tracker(args, batch_size)  # writes on the main process only
    while epoch < args.epochs and step < args.max_steps and not stopping:
        loss_sum, loss_steps = torch.zeros((), device=device), 0
        epoch_start = time.perf_counter()
        for batch in tqdm(train_loader, desc=f"epoch {epoch}", initial=batch_in_epoch, leave=False,
                          disable=not (is_main and sys.stderr.isatty())):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0  # this batch's mean loss: its parts' losses / accum, summed on the device
            for micro, (micro_inputs, micro_targets) in enumerate(zip(inputs.chunk(accum), targets.chunk(accum)), 1):
                with accelerator.accumulate(model), accelerator.autocast():  # no_sync() but on the last; AMP
                    loss = F.cross_entropy(model(micro_inputs), micro_targets)  # DDP reads no_sync in forward
                accelerator.backward(loss)  # instead of scaler.scale(loss / accum).backward(): both in one call
                step_loss += loss.detach() / accum
            optimizer.step()  # the prepared optimizer unscales, and skips a step whose gradients overflowed
            step += 1
            tracker.log(step, step_loss, optimizer, model)  # --report-to tensorboard: loss, lr, grad norm
            scheduler.step()  # the learning rate of the next step
            loss_sum += step_loss  # summed on the device: no host sync (.item()) per step
            loss_steps += 1
            batch_in_epoch += 1
            stopping = preempted.stop_now(step)  # every 10 steps: did any process get SIGTERM or Ctrl-C?
            if step >= args.max_steps or stopping:
                break
        loss_sum = accelerator.reduce(loss_sum, "sum")  # the loss over the global batch, not rank 0's share alone
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
                            args.keep, scheduler=scheduler, scaler=scaler)
            print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        accelerator.wait_for_everyone()  # no rank runs ahead (or exits, or resumes) before the checkpoint is on disk

    # -- save --------------------------------------------------------------------------------------------
    results = None if stopping else evaluate()  # on a signal, exit before eval
    accelerator.end_training()  # the last collective is behind us: from here on, rank 0 alone reports
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
