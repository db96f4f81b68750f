"""Rung 1: a plain training loop on one device. Every later rung is this file plus the lines of one concept.

One process, one device (the GPU if there is one, else the CPU). Trains on the built-in `digits` task by
default, evaluates every epoch, writes a checkpoint every epoch, and resumes from one. SIGTERM (what Slurm and
Kubernetes send before they kill a job) makes it finish the step, write a checkpoint and exit with code 143.

Launch:
    python scripts/1_single_gpu.py                    # digits (8x8 images), small CNN, 10 epochs
    python scripts/1_single_gpu.py --task cancer      # tabular data, MLP
    python scripts/1_single_gpu.py --resume auto      # continue from the newest checkpoint in --output-dir
    make single-gpu ARGS="--epochs 3"

Writes <output-dir>/model.safetensors and <output-dir>/metrics.json (default output dir: out/1_single_gpu).
Next rung: 2_data_parallel.py.
"""
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from common import checkpoint, cli, data, metrics, models, preemption


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
    model.train()
    return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())


def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    # The neutral values of what the distributed rungs compute: this process is rank 0 of 1, the main one.
    rank, world_size, is_main = 0, 1, True
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    if is_main:
        cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    train_ds, eval_ds, info = data.build(args)
    sampler = data.ShardedSampler(train_ds, seed=args.seed)  # a new seeded order every epoch (seed + epoch)
    train_loader = data.loader(train_ds, args.batch_size, sampler, drop_last=True, num_workers=args.num_workers,
                               device=device)
    eval_shard = eval_ds.shard(num_shards=world_size, index=rank, contiguous=True)  # rung 1: the whole set
    eval_loader = data.loader(eval_shard, args.batch_size, num_workers=args.num_workers, device=device)
    global_batch = args.batch_size * world_size

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    if args.compile:
        model = torch.compile(model)  # fused kernels after a one-off compile in the first steps (make bench)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
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
            stopping = step % preemption.CHECK_EVERY == 0 and preempted.requested
            if step >= args.max_steps or stopping:
                break
        train_loss = (loss_sum / max(loss_steps, 1)).item()
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

    # -- save --------------------------------------------------------------------------------------------
    if stopping:  # SIGTERM: the checkpoint is on disk; exit with the code of a terminated process
        if is_main:
            print(f"stopped by SIGTERM at step {step}, checkpoint saved: rerun with --resume auto to continue")
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


if __name__ == "__main__":
    cli.run(main, __doc__)
