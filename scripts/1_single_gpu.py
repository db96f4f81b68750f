"""Rung 1: the plain training script you already have. One process, one device (GPU, else CPU).

Launch:
    python scripts/1_single_gpu.py                    # digits (8x8 images), small CNN, 10 epochs
    python scripts/1_single_gpu.py --task cancer      # tabular data, MLP
    python scripts/1_single_gpu.py --resume auto      # continue from the newest checkpoint
    make single-gpu ARGS="--epochs 3"

Next: 2_data_parallel.py (guides/step-1-2.md explains every changed line).
"""

from pathlib import Path

import torch
import torch.nn.functional as F

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


def main(args):
    # -- setup -------------------------------------------------------------------------------------
    accum = args.gradient_accumulation_steps  # micro-batches per optimizer step
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32  # --tf32: faster fp32 matmuls on recent GPUs
    torch.manual_seed(args.seed)  # the same initial weights in every rung

    # -- data --------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    train_loader = data.loader(
        train_ds,
        args.batch_size,
        shuffle=True,  # a new seeded order every epoch
        seed=args.seed,
        drop_last=True,
        accum=accum,  # an epoch is a whole number of optimizer steps
        num_workers=args.num_workers,
        device=device,
    )
    eval_loader = data.loader(eval_ds, args.batch_size, device=device)
    batch_size = args.batch_size * accum  # one optimizer step's samples

    # -- model -------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    lr_lambda = schedule.lr_lambda(args, steps_per_epoch=len(train_loader) // accum)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps
    start_epoch, step, done = checkpoint.resume(args, model, optimizer, scheduler, train_loader)
    meter = progress.Meter(args, info, batch_size, step, done)  # position, samples/s, history
    log = progress.Log(args, meter, model)  # progress bar, --log-every lines, --report-to events
    best = best_model.Best(args.output_dir, args.lineage, step > 0)  # <output-dir>/best
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
                log.step(step, loss_sum, optimizer)
            if meter.eval_due(step):  # each epoch's last step, or every --eval-every steps
                results = log.evaluated(step, evaluate())  # the history, --report-to
                if best.improves(results):  # the lowest eval loss so far
                    best.save(step, results, model)
            if step >= args.max_steps or preempted.stop_now(step):
                break
        train_loss = meter.end_epoch(step, loss_sum)  # the mean; stops on NaN or inf
        checkpoint.save(args, model, optimizer, scheduler, step, *meter.position)
        print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f}")
        preempted.exit_if_stopped(step)  # SIGTERM or Ctrl-C: the checkpoint is written, exit now
        if step >= args.max_steps:
            break

    # -- save --------------------------------------------------------------------------------------
    results = evaluate()
    checkpoint.save_model(Path(args.output_dir) / "model.safetensors", model)
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
    entry.run(main, __doc__)
