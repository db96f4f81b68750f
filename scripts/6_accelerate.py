"""Rung 6: rung 5 on Hugging Face Accelerate: one Accelerator object replaces the DDP and AMP plumbing.

`accelerate launch` starts the processes (torchrun underneath) from a saved config; in the script:
  - Accelerator() joins the process group and says who this process is (process_index, num_processes,
    is_main_process) and which device it owns (accelerator.device);
  - accelerator.prepare(model, optimizer, eval_loader) wraps the model in DDP, the optimizer for mixed precision
    (it keeps the GradScaler when fp16), and shards the eval loader; the training loader keeps rung 5's
    DistributedSampler, so the global batches, and the final weights, are rung 1's;
  - accelerator.autocast() and accelerator.backward(loss) instead of torch.autocast and scaler.scale(...);
  - accelerator.gather_for_metrics instead of the hand-written gather: it drops the samples that even batches
    repeated, so every eval sample counts once;
  - main_process_first(), reduce(), wait_for_everyone() and end_training() instead of the barriers,
    all_reduce and destroy_process_group.
Mixed precision comes from the config (mixed_precision: no / bf16 / fp16), not from a flag.
On CPU, accelerate needs the Accelerator built with cpu=True under a MULTI_GPU config to give real gloo ranks
(a MULTI_CPU config runs ONE process; a plain Accelerator() runs N independent trainings), so this script asks
for cpu=True when there is no GPU and refuses to train when it did not get the processes the launch asked for.

Launch:
    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml scripts/6_accelerate.py --batch-size 16
    accelerate launch --config_file accelerate_configs/2gpu_bf16.yaml scripts/6_accelerate.py
    make accelerate-2gpu     (CPU: make accelerate-cpu)

Writes <output-dir>/model.safetensors and <output-dir>/metrics.json (default output dir: out/6_accelerate).
"""
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, InitProcessGroupKwargs
from torch import nn
from torch.utils.data.distributed import DistributedSampler

from common import UsageError, checkpoint, cli, data, metrics, models, preemption


def any_rank(flag, accelerator):
    """True on every rank if `flag` is True on any rank. All ranks must leave the training loop at the same
    step: a rank that stops alone leaves the others waiting forever in DDP's next gradient all-reduce."""
    flag = torch.tensor(int(flag), device=accelerator.device)
    return bool(accelerator.reduce(flag, "sum"))  # accelerator.set_trigger/check_trigger do the same


def evaluate(model, loader, device, accelerator):
    """Accuracy and mean loss over the eval samples, each counted exactly once."""
    model.eval()
    results = []
    with torch.no_grad():
        for batch in loader:
            inputs, targets = batch["inputs"].to(device), batch["labels"].to(device)
            with accelerator.autocast():
                logits = model(inputs)
            logits = logits.float()  # argmax and the loss in fp32
            batch_results = (logits.argmax(dim=1), targets, F.cross_entropy(logits, targets, reduction="none"))
            batch_results = accelerator.gather_for_metrics(batch_results)  # drops what even batches repeated
            results.append(batch_results)
    preds, labels, losses = (torch.cat(r) for r in zip(*results))
    model.train()
    return metrics.classification(preds.cpu(), labels.cpu(), losses.cpu())


def main(args):
    wall_start = time.perf_counter()

    # -- setup -------------------------------------------------------------------------------------------
    if "WORLD_SIZE" in os.environ and "RANK" not in os.environ:
        raise UsageError("WORLD_SIZE is set but RANK is not: launch with accelerate launch --config_file "
                         "accelerate_configs/cpu_2proc.yaml scripts/6_accelerate.py, or unset WORLD_SIZE")
    if not torch.cuda.is_available():
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", 1))))
    accelerator = Accelerator(cpu=not torch.cuda.is_available(),  # cpu=True: real gloo ranks on a CPU
                              kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=args.dist_timeout)),
                                               DistributedDataParallelKwargs(gradient_as_bucket_view=True)])
    rank, world_size = accelerator.process_index, accelerator.num_processes
    is_main = accelerator.is_main_process  # one process prints and writes files
    device = accelerator.device
    asked = os.environ.get("WORLD_SIZE")  # set by accelerate launch's torchrun; a MULTI_CPU launch sets none
    if (asked is None and "MASTER_PORT" in os.environ) or (asked is not None and int(asked) != world_size):
        raise UsageError(f"the launch asked for {asked or 'several'} processes but the Accelerator sees {world_size}"
                         f": use a MULTI_GPU config (with use_cpu: true on CPU), not MULTI_CPU")
    if is_main and device.type == "cpu" and accelerator.mixed_precision == "fp16":
        print("mixed_precision fp16 on CPU: accelerate runs it in fp32 (no autocast, no scaler); use bf16")
    torch.manual_seed(args.seed)  # the same initial weights in every rung
    if is_main:
        cli.check_writable(args.output_dir)

    # -- data --------------------------------------------------------------------------------------------
    with accelerator.main_process_first():  # rank 0 builds the dataset cache first; the others then load it
        train_ds, eval_ds, info = data.build(args)
    # each rank its share of each batch; rank and world size given: one process (1gpu.yaml) has no process group
    sampler = DistributedSampler(train_ds, num_replicas=world_size, rank=rank, seed=args.seed, drop_last=True)
    train_loader = data.loader(train_ds, args.batch_size, sampler, drop_last=True, num_workers=args.num_workers,
                               device=device)
    # the whole eval set: prepare() shards it
    eval_loader = data.loader(eval_ds, args.batch_size, num_workers=args.num_workers, device=device)
    global_batch = args.batch_size * world_size

    # -- model -------------------------------------------------------------------------------------------
    model = models.build(info, args.model, args.n_layer, args.n_head, args.n_embd).to(device)
    if args.sync_bn and torch.cuda.is_available():
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)  # batch statistics over the global batch
    elif args.sync_bn and is_main:
        print("--sync-bn: PyTorch's SyncBatchNorm only works on GPUs; training with per-process BatchNorm")
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    model, optimizer, eval_loader = accelerator.prepare(model, optimizer, eval_loader)  # DDP, AMP, sharding
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) > 0:
        args.resume = "auto"  # torchrun restarted us after a failure: continue from the newest checkpoint
    elif is_main and os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0") != "0" and \
            os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # pytorch issue 135712
        print("warning: restarts may fail or hang (over gloo: 5 times in 8 here) while workers share torchrun's "
              "rendezvous store: on one machine, launch with PET_STANDALONE=1 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1")
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
            with accelerator.autocast():
                loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad(set_to_none=True)
            accelerator.backward(loss)  # instead of loss.backward(); scales the loss when fp16
            optimizer.step()  # the prepared optimizer unscales, and skips the step if a gradient overflowed
            loss_sum += loss.detach()  # summed on the device: no host sync (.item()) per step
            loss_steps += 1
            step += 1
            batch_in_epoch += 1
            stopping = step % preemption.CHECK_EVERY == 0 and any_rank(preempted.requested, accelerator)
            if step >= args.max_steps or stopping:
                break
        loss_sum = accelerator.reduce(loss_sum, "mean")  # the loss over the global batch, not rank 0's alone
        train_loss = (loss_sum / max(loss_steps, 1)).item()
        epoch_seconds = time.perf_counter() - epoch_start  # after .item(): the device has finished the epoch
        train_seconds, samples_seen = train_seconds + epoch_seconds, samples_seen + loss_steps * global_batch
        history.append({"step": step, "train_loss": train_loss,
                        "samples_per_second": loss_steps * global_batch / epoch_seconds})
        if batch_in_epoch == len(train_loader):  # a whole epoch: the next one starts at its first batch
            epoch, batch_in_epoch = epoch + 1, 0
        if not stopping:  # on SIGTERM the checkpoint comes first: eval could outlast the grace period
            results = evaluate(model, eval_loader, device, accelerator)
            if is_main:
                print(f"epoch {epoch:3d} | step {step:6d} | train loss {train_loss:.4f} | "
                      f"eval loss {results['eval_loss']:.4f} | eval accuracy {results['eval_accuracy']:.4f}")
        if is_main:  # keep_torch_compile=False: the default re-points a compiled model at the bare one, past DDP
            checkpoint.save(args.output_dir, accelerator.unwrap_model(model, keep_torch_compile=False), optimizer,
                            step, epoch, batch_in_epoch, keep=args.keep)
        accelerator.wait_for_everyone()  # no rank runs ahead (or exits, or resumes) before the checkpoint is on disk

    # -- save --------------------------------------------------------------------------------------------
    if stopping:  # SIGTERM: the checkpoint is on disk; exit with the code of a terminated process
        if is_main:
            print(f"stopped by SIGTERM at step {step}, checkpoint saved: rerun with --resume auto to continue")
        accelerator.end_training()
        sys.exit(preemption.EXIT_CODE)
    if results is None:  # resumed a run that had already finished: nothing to train, still report
        results = evaluate(model, eval_loader, device, accelerator)
    if is_main:
        checkpoint.save_model(Path(args.output_dir) / "model.safetensors",
                              accelerator.unwrap_model(model, keep_torch_compile=False))
        metrics.write_json(Path(args.output_dir) / "metrics.json", {
            **results, "rung": Path(__file__).stem, "task": info.name, "device": str(device),
            "model": type(checkpoint.unwrap(model)).__name__, "world_size": world_size,
            "global_batch_size": global_batch,
            "mixed_precision": accelerator.mixed_precision,
            "per_device_batch_size": args.batch_size, "epochs": epoch, "steps": step, "train_loss": train_loss,
            **metrics.throughput(samples_seen / train_seconds if train_seconds else 0.0, info,
                                 checkpoint.unwrap(model), world_size, device),  # tokens/s, MFU for gpt
            "history": history, "wall_seconds": time.perf_counter() - wall_start})
        print(f"done: eval accuracy {results['eval_accuracy']:.4f}, train loss {train_loss:.4f}, "
              f"{step} steps -> {args.output_dir}/model.safetensors")
    accelerator.end_training()


if __name__ == "__main__":
    cli.run(main, __doc__)
