"""What a run records about itself besides its loss: the Recorder (progress bar, position in the epoch,
samples/s per epoch, wall time, and metrics.json's measured part) and the Tracker behind --report-to
tensorboard. One object, so that each rung spends one line on each use."""

import atexit
import sys
import time
from pathlib import Path

from common.metrics import check_finite, memory, throughput


def _main_process():
    import torch.distributed as dist

    return not dist.is_initialized() or dist.get_rank() == 0


class Recorder:
    """Everything a run measures besides its loss, behind one object so that a rung spends one line on each
    use: the progress bar and the position in the epoch (`progress`, `position`), per-step scalars for
    --report-to (`log`), per-epoch samples/s and mean loss (`epoch`), and metrics.json's wall time, memory
    and throughput (`summary`). Only the main process prints or writes. The timing brackets the training
    steps alone (not eval, not checkpoints). `step` and `done`: where a resumed run starts, in optimizer
    steps in all and in its first epoch."""

    def __init__(self, args, info, batch_size, step=0, done=0):
        import torch.distributed as dist

        self.args, self.info, self.batch_size, self.done = args, info, batch_size, done
        self.distributed = dist.is_initialized()
        self.world_size = dist.get_world_size() if self.distributed else 1
        self.wall_start, self.train_seconds, self.samples, self.history = (
            time.perf_counter(),
            0.0,
            0,
            [],
        )
        self.epoch_start, self.steps_at_start, self.step, self.last_sum = None, step, step, 0.0
        self.current, self.finished, self.skipped, self.train_loss = 0, False, 0, float("nan")
        self.tracker = Tracker(args, batch_size)

    def progress(self, loader, epoch):
        """`loader`'s batches, with a progress bar on a terminal (main process), timed from the first."""
        from tqdm import tqdm

        accum = self.args.gradient_accumulation_steps
        self.current, self.finished, self.skipped, self.done = epoch, False, self.done, 0
        self.epoch_start, self.steps_at_start, self.last_sum = time.perf_counter(), self.step, 0.0
        show = _main_process() and sys.stderr.isatty()
        bar = tqdm(
            loader, f"epoch {epoch}", initial=self.skipped * accum, leave=False, disable=not show
        )
        yield from bar
        self.finished = True  # the whole epoch ran (a loop that breaks out never gets here)

    @property
    def position(self):
        """(epoch, samples into it) where a resumed run continues: the next epoch after a whole one."""
        if self.finished:
            return self.current + 1, 0
        return self.current, (self.skipped + self.step - self.steps_at_start) * self.batch_size

    def log(self, step, loss_sum, optimizer, model):
        """After optimizer step `step`, with the pass's loss sum so far: --report-to's scalars (the step's
        loss, lr, grad norm, samples/s). Without --report-to it costs an attribute read: no host sync."""
        self.step = step
        if self.tracker.enabled:
            loss, self.last_sum = loss_sum - self.last_sum, loss_sum.clone()
            self.tracker.log(step, loss, optimizer, model)

    def epoch(self, step, loss_sum):
        """The end of a pass over the loader (or of the part that ran), with the loss summed over its steps:
        records its samples/s and returns its mean loss. A NaN or infinite loss stops the run here (one line),
        before the epoch's checkpoint, so the last good checkpoint stays the newest."""
        self.step = step
        steps = step - self.steps_at_start
        self.train_loss = (loss_sum / max(steps, 1)).item()  # after .item(): the device is done
        seconds = time.perf_counter() - self.epoch_start
        check_finite(self.train_loss, step)
        self.train_seconds, self.samples = (
            self.train_seconds + seconds,
            self.samples + steps * self.batch_size,
        )
        per_second = steps * self.batch_size / seconds if seconds else 0.0
        self.history.append(
            {"step": step, "train_loss": self.train_loss, "samples_per_second": per_second}
        )
        return self.train_loss

    def summary(self, model, optimizer, device):
        """metrics.json's measured part (and the end of --report-to's events, written to disk now)."""
        self.tracker.close()
        args = self.args
        out = {
            "epochs": self.position[0]
            if self.epoch_start
            else args.epochs,  # else: resumed finished
            "train_loss": self.train_loss,
            "history": self.history,
            "wall_seconds": time.perf_counter() - self.wall_start,
            "global_batch_size": self.batch_size,
            "gradient_accumulation_steps": args.gradient_accumulation_steps,
            "lr_schedule": args.lr_schedule,
            "mixed_precision": args.mixed_precision,
        }
        if self.distributed:  # rung 3 on: how the global batch is made
            out.update(world_size=self.world_size, per_device_batch_size=args.batch_size)
        bare = model.module if hasattr(model, "module") else model
        return {
            **out,
            **memory(model, optimizer),
            **throughput(
                self.samples, self.train_seconds, self.info, bare, device, self.world_size
            ),
        }


class Tracker:
    """--report-to tensorboard: per optimizer step, the loss, learning rate, gradient norm and samples/s, written
    by the main process to <output-dir>/runs with torch.utils.tensorboard (the writer accelerate's
    TensorBoardTracker uses). --report-to none: log() returns at once, so the default run pays nothing.

    The gradient norm is taken just before each optimizer step, by a step pre-hook (torch's public
    `register_step_pre_hook`, installed at the first log: from step 2 on), since the loop zeroes the gradients
    right after the step; after GradScaler's unscale, so it is the true gradients' norm. It is computed on every
    rank, because under FSDP it is a collective (each rank holds a shard of the gradients)."""

    def __init__(self, args, batch_size):
        self.enabled, self.batch_size, self.writer = (
            args.report_to == "tensorboard",
            batch_size,
            None,
        )
        self.logdir, self.last, self.hook, self.norm = (
            Path(args.output_dir) / "runs",
            None,
            None,
            None,
        )

    def _take_norm(self, model):
        import torch

        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads) if grads else torch.zeros(())
        self.norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm  # FSDP: all shards

    def close(self):
        if self.writer is not None:
            self.writer.close()

    def log(self, step, loss, optimizer, model):
        if (
            not self.enabled
        ):  # first: the default run pays one attribute read per step, nothing else
            return
        if self.hook is None:  # accelerate's AcceleratedOptimizer holds the torch optimizer
            inner = getattr(optimizer, "optimizer", optimizer)
            self.hook = inner.register_step_pre_hook(lambda *_: self._take_norm(model))
        import torch.distributed as dist

        if dist.is_initialized():  # the global batch's loss, not this rank's share: a collective
            loss = loss.clone()
            dist.all_reduce(loss)
            loss /= dist.get_world_size()
        if not _main_process():
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(self.logdir)
            atexit.register(
                self.writer.close
            )  # flushes the last events on any exit, a signal's too
        now = time.perf_counter()
        values = {
            "train/loss": float(loss),
            # after the scheduler's step, as accelerate's and transformers' loops log it: the next step's
            "train/lr": optimizer.param_groups[0]["lr"],
        }
        if self.norm is not None:
            values["train/grad_norm"] = float(self.norm)
        if self.last is not None:
            values["train/samples_per_second"] = self.batch_size / (now - self.last)
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)
        self.last = now
