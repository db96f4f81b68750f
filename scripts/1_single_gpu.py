"""Rung 1: the plain training script you already have. One process, one device (the GPU, else the CPU).

Launch:
    python scripts/1_single_gpu.py                    # digits (8x8 images), small CNN, 10 epochs
    python scripts/1_single_gpu.py --task cancer      # tabular data, MLP
    python scripts/1_single_gpu.py --resume auto      # continue from the newest checkpoint in --output-dir
    make single-gpu ARGS="--epochs 3"

Next: 2_data_parallel.py (guides/step-1-2.md explains every changed line).
"""
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from common import checkpoint, cli, data, metrics, models, preemption, schedule


def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    accum = args.gradient_accumulation_steps  # micro-batches per optimizer step (1: no accumulation)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    train_loader = data.loader(train_ds, args.batch_size * accum, shuffle=True, seed=args.seed, drop_last=True,
                               num_workers=args.num_workers, device=device)  # a new seeded order every epoch
    eval_loader = data.loader(eval_ds, args.batch_size, num_workers=args.num_workers, device=device)
    batch_size = args.batch_size * accum  # one optimizer step's samples

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd, args.sync_bn).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.lr_lambda(args, len(train_loader)))
    epoch, step, position = checkpoint.resume(args.resume, args.output_dir, model, optimizer,
                                              scheduler=scheduler)
    epoch, batch_in_epoch = data.start_at(train_loader, epoch, position)  # resuming: the next unseen batch
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
                          disable=not sys.stderr.isatty()):
            inputs = batch["inputs"].to(device, non_blocking=True)
            targets = batch["labels"].to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0  # this batch's mean loss: its parts' losses / accum, summed on the device
            for micro_inputs, micro_targets in zip(inputs.chunk(accum), targets.chunk(accum)):  # accum passes
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
        train_loss = (loss_sum / max(loss_steps, 1)).item()
        metrics.check_finite(train_loss, step)  # NaN or inf: stop here, before this epoch's checkpoint
        epoch_seconds = time.perf_counter() - epoch_start  # after .item(): the device has finished the epoch
        train_seconds, samples_seen = train_seconds + epoch_seconds, samples_seen + loss_steps * batch_size
        history.append({"step": step, "train_loss": train_loss,
                        "samples_per_second": loss_steps * batch_size / epoch_seconds})
        if batch_in_epoch == len(train_loader):  # a whole epoch: the next one starts at its first batch
            epoch, batch_in_epoch = epoch + 1, 0
        checkpoint.save(args.output_dir, model, optimizer, step, epoch, batch_in_epoch * batch_size,
                        args.keep, scheduler=scheduler)
        print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")

    # -- save --------------------------------------------------------------------------------------------
    results = None if stopping else evaluate()  # on a signal, exit before eval
    if stopping:
        print(f"stopped by {preempted.signal_name} at step {step}, checkpoint saved: rerun with --resume auto")
        sys.exit(preempted.exit_code)
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model)
    metrics.write_json(Path(args.output_dir) / "metrics.json", {
        **results, "rung": Path(__file__).stem, "task": info.name, "device": str(device), "epochs": epoch,
        "model": models.name(model), "global_batch_size": batch_size, "steps": step,
        "train_loss": train_loss, "history": history, "wall_seconds": time.perf_counter() - wall_start,
        "mixed_precision": args.mixed_precision, "gradient_accumulation_steps": accum, "lr_schedule": args.lr_schedule,
        **metrics.memory(model, optimizer),  # bytes per process: parameters, gradients, optimizer state
        **metrics.throughput(samples_seen, train_seconds, info, checkpoint.unwrap(model), device)})
    print(f"done: eval accuracy {results['eval_accuracy']:.4f}, eval loss {results['eval_loss']:.4f}, "
          f"{step} steps -> {args.output_dir}/model.safetensors")


if __name__ == "__main__":
    cli.run(main, __doc__)
