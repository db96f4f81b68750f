"""What a run records about itself besides its loss: the Recorder (progress bar or --log-every lines, position in
the epoch, evaluation every epoch or --eval-every steps with the best model, samples/s per epoch, wall time, and
metrics.json's measured part), with --report-to's events (common/tracking.py). One object, so that each rung
spends one line on each use."""

import sys
import time

from common.metrics import check_finite, memory, throughput
from common.tracking import Best, Tracker, global_mean, log_line
from common.tracking import main_process as _main_process

_KEPT = []  # every Recorder, and through it the run's model, until the process leaves (see Recorder.log)


class Recorder:
    """Everything a run measures besides its loss, behind one object so that a rung spends one line on each
    use: the progress bar and the position in the epoch (`progress`, `position`), per-step scalars for
    --report-to, --log-every's lines and the evaluations (`log`), per-epoch samples/s and mean loss (`epoch`),
    and metrics.json's wall time, memory and throughput (`summary`). Only the main process prints or
    writes. The timing brackets the training steps alone (not eval, not checkpoints). `step` and `done`:
    where a resumed run starts, in optimizer steps in all and in its first epoch."""

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
        self.tracker, self.best, self.per_epoch = Tracker(args, batch_size), Best(args, step > 0), 0
        self.evaluations, self.total = {}, None
        _KEPT.append(self)

    def progress(self, loader, epoch):
        """`loader`'s batches, with a progress bar on a terminal (main process), timed from the first."""
        from tqdm import tqdm

        accum = self.args.gradient_accumulation_steps
        self.per_epoch = len(loader) // accum  # optimizer steps in a whole epoch
        if self.total is None:  # the run's length, for --log-every's time left
            self.total = min(self.args.max_steps, self.args.epochs * self.per_epoch)
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

    def log(self, step, loss_sum, optimizer, model, evaluate=None):
        """After optimizer step `step`, with the pass's loss sum so far: --report-to's scalars (the step's
        loss, lr, grad norm, samples/s); --log-every's line when the log is not a terminal; and `evaluate()`
        when due (each epoch's last step, or every --eval-every steps), recorded in the history, TensorBoard
        and the best model. Every rank calls it (the global loss and the evaluation are collectives); without
        --report-to and between lines and evaluations it costs a few integer tests: no host sync."""
        self.step, args = step, self.args
        # Keep the (DDP/FSDP) model alive past main()'s return, until errors.leave's os._exit: freed with
        # main's frame, its Reducer's ProcessGroupGloo destructor can hang joining a gloo thread that waits
        # for the GIL (after "done:", a launch test timed out; py-spy showed the same hang in the peers).
        self.model = model
        if self.tracker.enabled:
            loss, self.last_sum = loss_sum - self.last_sum, loss_sum.clone()
            self.tracker.log(step, loss, optimizer, model)
        if args.log_every and step % args.log_every == 0 and not sys.stderr.isatty():
            self._print_line(step, loss_sum, optimizer)
        in_epoch = self.skipped + step - self.steps_at_start
        due = step % args.eval_every == 0 if args.eval_every else in_epoch == self.per_epoch
        if evaluate is not None and due:
            started = time.perf_counter()
            results = evaluate()
            self.evaluations[step] = {k: results[k] for k in ("eval_loss", "eval_accuracy")}
            self.tracker.evaluated(step, results)
            self.best.consider(step, self.evaluations[step], model)
            self.epoch_start += time.perf_counter() - started  # the timing brackets training alone

    def _print_line(self, step, loss_sum, optimizer):
        loss = float(global_mean(loss_sum)) / max(1, step - self.steps_at_start)  # every rank
        seconds = time.perf_counter() - self.epoch_start
        done = step - self.steps_at_start
        rate = done * self.batch_size / seconds if seconds else float("nan")
        left = (self.total - step) * seconds / done if done else float("nan")
        if _main_process():
            lr = optimizer.param_groups[0]["lr"]
            print(log_line(step, self.total, self.current, loss, lr, rate, left), flush=True)

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
        self.history += [{"step": s, **e} for s, e in sorted(self.evaluations.items()) if s < step]
        entry = {"step": step, "train_loss": self.train_loss, "samples_per_second": per_second}
        self.history.append({**entry, **self.evaluations.get(step, {})})
        self.evaluations = {}
        return self.train_loss

    def summary(self, model, optimizer, device):
        """metrics.json's measured part (and the end of --report-to's events, written to disk now)."""
        args = self.args
        self.history += [{"step": s, **e} for s, e in sorted(self.evaluations.items())]
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
        best = {"best_eval_loss": self.best.loss, "train_loss": self.train_loss}
        hparams = {k: getattr(args, k) for k in flags}
        self.tracker.hparams({**hparams, "world_size": self.world_size}, best)
        self.tracker.close()
        out = {
            "best_eval_loss": self.best.loss,
            "epochs": self.position[0]
            if self.epoch_start
            else args.epochs,  # else: resumed finished
            "train_loss": self.train_loss,
            "history": self.history,
            "wall_seconds": time.perf_counter() - self.wall_start,
            "global_batch_size": self.batch_size,
            "gradient_accumulation_steps": args.gradient_accumulation_steps,
            "lr_schedule": args.lr_schedule,
            "mixed_precision": precision_that_ran(args),
        }
        from common.process import NOTES

        if NOTES:
            out["launch_notes"] = NOTES
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
