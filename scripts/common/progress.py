"""What a run measures and shows about itself besides the training itself, in two objects of one job each:

Meter: where the run is and how fast it goes. The position in the epoch (for the checkpoint a resume continues
    from), when an evaluation is due (each epoch's last step, or every --eval-every steps), samples/s of the
    training steps alone (not eval, not checkpoints), the history of epochs and evaluations, and metrics.json's
    measured part. It prints nothing and writes nothing.
Log: what the user sees. A progress bar on a terminal, --log-every's lines for a log that is not one (a batch
    job's), and --report-to tensorboard's events (common/tracking.py). `show` says whether this process prints
    and writes: the rung passes it (rank 0's alone from rung 3 on).

Neither knows about ranks or runs a collective: the rung hands them values it has already reduced over the
processes. `Log.due` depends on the step and the flags alone, never on the terminal, so a rung that reduces the
loss when it is due takes that collective on every process at the same step."""

import math
import sys
import time
from datetime import timedelta
from pathlib import Path

from common.errors import hold
from common.metrics import check_finite, memory, throughput
from common.tracking import Board


class Meter:
    """`batch_size`: one optimizer step's samples, every process's (the global batch). `step` and `done`: where
    a resumed run starts, in optimizer steps in all and in its first epoch."""

    def __init__(self, args, info, batch_size, step=0, done=0):
        self.args, self.info, self.batch_size = args, info, batch_size
        self.accum, self.eval_every = args.gradient_accumulation_steps, args.eval_every
        # the processes the global batch is made of: 1 for rungs 1-2, the world size from rung 3 on
        self.world_size = max(1, batch_size // (args.batch_size * self.accum))
        self.wall_start, self.train_seconds, self.samples, self.history = (
            time.perf_counter(),
            0,
            0,
            [],
        )
        self.epoch_start, self.steps_at_start, self.step, self.done = None, step, step, done
        self.current, self.finished, self.skipped, self.per_epoch = 0, False, 0, 0
        self.train_loss, self.evaluations, self.total, self.eval_started = float("nan"), {}, None, 0

    def epoch(self, loader, epoch):
        """`loader`'s batches for epoch `epoch`, timed from the first; the epoch counts as whole once the loop
        has taken them all (a loop that breaks out never gets there)."""
        self.per_epoch = len(loader) // self.accum  # optimizer steps in a whole epoch
        if self.total is None:  # the run's length, for --log-every's time left
            self.total = min(self.args.max_steps, self.args.epochs * self.per_epoch)
        self.current, self.finished, self.skipped, self.done = epoch, False, self.done, 0
        self.epoch_start, self.steps_at_start = time.perf_counter(), self.step
        yield from loader
        self.finished = True

    @property
    def position(self):
        """(epoch, samples into it) where a resumed run continues: the next epoch after a whole one."""
        if self.finished:
            return self.current + 1, 0
        return self.current, (self.skipped + self.step - self.steps_at_start) * self.batch_size

    def eval_due(self, step):
        """After optimizer step `step`: whether to evaluate now (each epoch's last step, or every --eval-every
        steps). The same answer on every process: it depends on the step alone."""
        self.step = step
        in_epoch = self.skipped + step - self.steps_at_start
        due = step % self.eval_every == 0 if self.eval_every else in_epoch == self.per_epoch
        due = (
            due or step == self.total
        )  # the run's last step: its final model is always offered to best/
        if due:
            self.eval_started = time.perf_counter()
        return due

    def evaluated(self, step, results):
        """Record an evaluation in the history; its time is left out of the epoch's samples/s."""
        self.evaluations[step] = {k: results[k] for k in ("eval_loss", "eval_accuracy")}
        if self.eval_started:
            self.epoch_start += time.perf_counter() - self.eval_started
            self.eval_started = 0
        return results

    def seconds(self):
        return time.perf_counter() - self.epoch_start

    def end_epoch(self, step, loss_sum):
        """The end of a pass over the loader (or of the part that ran), with the loss summed over its steps:
        records its samples/s and returns its mean loss. A NaN or infinite loss stops the run here (one line),
        before the epoch's checkpoint, so the last good checkpoint stays the newest."""
        self.step = step
        steps = step - self.steps_at_start
        self.train_loss = (loss_sum / max(steps, 1)).item()  # after .item(): the device is done
        seconds = self.seconds()
        check_finite(self.train_loss, step)
        self.train_seconds += seconds
        self.samples += steps * self.batch_size
        per_second = steps * self.batch_size / seconds if seconds else 0.0
        self.history += [{"step": s, **e} for s, e in sorted(self.evaluations.items()) if s < step]
        entry = {"step": step, "train_loss": self.train_loss, "samples_per_second": per_second}
        self.history.append({**entry, **self.evaluations.get(step, {})})
        self.evaluations = {}
        return self.train_loss

    def summary(self, model, optimizer, device):
        """metrics.json's measured part."""
        self.history += [{"step": s, **e} for s, e in sorted(self.evaluations.items())]
        self.evaluations = {}
        finished = self.epoch_start is None  # a resumed run that had finished: no epoch ran
        out = {
            "epochs": self.args.epochs if finished else self.position[0],
            "train_loss": self.train_loss,
            "history": self.history,
            "wall_seconds": time.perf_counter() - self.wall_start,
            "global_batch_size": self.batch_size,
            "gradient_accumulation_steps": self.accum,
            "lr_schedule": self.args.lr_schedule,
            "mixed_precision": precision_that_ran(self.args),
        }
        from common.process import NOTES

        if NOTES:
            out["launch_notes"] = NOTES
        if self.world_size > 1:  # rung 3 on: how the global batch is made
            out.update(world_size=self.world_size, per_device_batch_size=self.args.batch_size)
        bare = model.module if hasattr(model, "module") else model
        return {
            **out,
            **memory(model, optimizer),
            **throughput(
                self.samples, self.train_seconds, self.info, bare, device, self.world_size
            ),
        }


class Log:
    """The progress bar (on a terminal), --log-every's lines (on a log that is not a terminal) and --report-to's
    events, for the process that prints and writes (`show`); the others call the same methods, which then
    print and write nothing."""

    def __init__(self, args, meter, model, show=True):
        self.meter, self.show, self.args, self.model = meter, show, args, model
        hold(model)  # kept until the process leaves: errors.hold says why
        self.log_every, self.last_sum = args.log_every, 0.0
        run = getattr(args, "lineage", None) or "run"
        tensorboard = show and args.report_to == "tensorboard"
        self.board = Board(tensorboard, Path(args.output_dir) / "runs" / run, meter.batch_size)

    def bar(self, loader, epoch):
        """`loader`'s batches through the Meter, with a progress bar on a terminal; the events written so far
        are flushed when the epoch's loop ends, before its checkpoint (a signal's exit skips the writer's own
        flush at exit)."""
        from tqdm import tqdm

        batches = self.meter.epoch(loader, epoch)
        initial = self.meter.done * self.meter.accum
        disable = not (self.show and sys.stderr.isatty())
        self.last_sum = 0.0
        try:
            yield from tqdm(
                batches,
                f"epoch {epoch}",
                len(loader),
                initial=initial,
                leave=False,
                disable=disable,
            )
        finally:
            self.board.flush()

    def due(self, step):
        """Whether this step's loss is read (a --log-every line, or --report-to's scalars): on every process
        alike, whatever its terminal, so that a rung can take a collective under it."""
        every = self.log_every and step % self.log_every == 0
        return self.args.report_to == "tensorboard" or bool(every)

    def step(self, step, loss_sum, optimizer):
        """After optimizer step `step`, with the epoch's loss sum so far (the global batch's: the rung reduced
        it): --report-to's scalars (the step's loss, lr, grad norm, samples/s) and --log-every's line."""
        if not self.show:
            return
        if self.board.enabled:
            self.board.step(step, loss_sum - self.last_sum, optimizer, self.model)
            self.last_sum = loss_sum.clone()
        if self.log_every and step % self.log_every == 0 and not sys.stderr.isatty():
            meter, seconds = self.meter, self.meter.seconds()
            done = step - meter.steps_at_start
            loss = float(loss_sum) / max(1, done)
            rate = done * meter.batch_size / seconds if seconds else float("nan")
            left = (meter.total - step) * seconds / done if done else float("nan")
            lr = optimizer.param_groups[0]["lr"]
            print(log_line(step, meter.total, meter.current, loss, lr, rate, left), flush=True)

    def evaluated(self, step, results):
        """An evaluation's results into the history (the Meter) and --report-to's eval scalars."""
        if self.board.enabled:
            self.board.evaluated(step, results)
        return self.meter.evaluated(step, results)

    def close(self, best_loss):
        """--report-to: the run's hyper-parameters beside its final metrics, and the events on disk."""
        if not self.board.enabled:
            return
        flags = (
            "task",
            "model",
            "lr",
            "lr_schedule",
            "warmup_steps",
            "epochs",
            "batch_size",
            "seed",
        )
        hparams = {k: getattr(self.args, k) for k in flags}
        results = {"best_eval_loss": best_loss, "train_loss": self.meter.train_loss}
        self.board.hparams({**hparams, "world_size": self.meter.world_size}, results)
        self.board.close()


def log_line(step, total, epoch, loss, lr, samples_per_second, seconds_left):
    """--log-every's line, for a log that is not a terminal (a batch job's), as imagenet's --print-freq."""
    left = str(timedelta(seconds=round(seconds_left))) if math.isfinite(seconds_left) else "?"
    return (
        f"step {step:6d}/{total} | epoch {epoch:3d} | loss {loss:.4f} | lr {lr:.4g} | "
        f"{samples_per_second:.0f} samples/s | {left} left"
    )


def precision_that_ran(args):
    """The autocast dtype this run trained with. Rung 6 takes it from its launch (ACCELERATE_MIXED_PRECISION),
    and accelerate turns fp16 off on a CPU (no autocast, no scaler: the loss is bit-identical to fp32's)."""
    import os

    import torch

    asked = os.environ.get("ACCELERATE_MIXED_PRECISION", args.mixed_precision)
    if (
        asked == "fp16"
        and "ACCELERATE_MIXED_PRECISION" in os.environ
        and not torch.cuda.is_available()
    ):
        return "no (fp16 asked: accelerate trains fp32 on a CPU)"
    return asked
