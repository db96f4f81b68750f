"""What a run reports while it trains, besides the progress bar: --report-to tensorboard's events (one directory per
run, train and eval scalars, the run's hyper-parameters), --log-every's lines for a batch job's log, and the best
model by eval loss (<output-dir>/best/). common/progress.py's Recorder drives them; the rungs never call this."""

import atexit
import json
import math
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist


def main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def global_mean(value):
    """`value` (a tensor on this rank) averaged over the ranks: the global batch's, not this rank's share. A
    collective under torch.distributed: every rank calls it at the same step."""
    value = value.detach().clone()
    if dist.is_initialized():
        dist.all_reduce(value)
        value /= dist.get_world_size()
    return value


class Tracker:
    """--report-to tensorboard: per optimizer step the loss, learning rate, gradient norm and samples/s; per
    evaluation the eval loss and accuracy; at the end the run's hyper-parameters beside its final metrics. The
    main process writes them to <output-dir>/runs/<run id> (torch.utils.tensorboard, the writer accelerate's
    TensorBoardTracker uses): one directory per run, continued by its resumes, so a new run never mixes with an
    old one's events. --report-to none: log() returns at once, so the default run pays nothing.

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
        run = getattr(args, "lineage", None) or "run"
        self.logdir, self.last, self.hook, self.norm = (
            Path(args.output_dir) / "runs" / run,
            None,
            None,
            None,
        )

    def _take_norm(self, model):
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads) if grads else torch.zeros(())
        self.norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm  # FSDP: all shards

    def _writer(self):
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(self.logdir)
            atexit.register(
                self.writer.close
            )  # flushes the last events on any exit, a signal's too
        return self.writer

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
        loss = global_mean(loss)  # every rank: a collective
        if not main_process():
            return
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
            self._writer().add_scalar(tag, value, step)
        self.last = now

    def evaluated(self, step, results):
        if self.enabled and main_process():
            self._writer().add_scalar("eval/loss", results["eval_loss"], step)
            self._writer().add_scalar("eval/accuracy", results["eval_accuracy"], step)

    def hparams(self, flags, results):
        """The run's hyper-parameters beside its final metrics (TensorBoard's HPARAMS tab), in its own
        directory rather than in a new one per call, as SummaryWriter.add_hparams would make."""
        if not (self.enabled and main_process()):
            return
        from torch.utils.tensorboard.summary import hparams

        metrics = {f"hparam/{k}": v for k, v in results.items() if isinstance(v, (int, float))}
        for summary in hparams(flags, metrics):
            self._writer().file_writer.add_summary(summary)
        for tag, value in metrics.items():
            self._writer().add_scalar(tag, value)


def log_line(step, total, epoch, loss, lr, samples_per_second, seconds_left):
    """--log-every's line, for a log that is not a terminal (a batch job's), as imagenet's --print-freq."""
    left = str(timedelta(seconds=round(seconds_left))) if math.isfinite(seconds_left) else "?"
    return (
        f"step {step:6d}/{total} | epoch {epoch:3d} | loss {loss:.4f} | lr {lr:.4g} | "
        f"{samples_per_second:.0f} samples/s | {left} left"
    )


class Best:
    """The best model by eval loss, in <output-dir>/best/ (model.safetensors and eval.json), as imagenet's
    model_best. The evaluation's results are the same on every rank (gathered), so every rank takes the same
    decision, and under FSDP every rank joins the gather. A resumed run continues its own lineage's best."""

    def __init__(self, args, resumed):
        self.dir, self.lineage, self.loss = (
            Path(args.output_dir) / "best",
            getattr(args, "lineage", None),
            None,
        )
        try:
            saved = json.loads((self.dir / "eval.json").read_text())
        except (OSError, ValueError):
            return
        ok = isinstance(saved, dict) and isinstance(saved.get("eval_loss"), (int, float))
        if resumed and ok and saved.get("run") == self.lineage:
            self.loss = saved["eval_loss"]

    def consider(self, step, results, model):
        loss = results["eval_loss"]
        if self.loss is not None and not loss < self.loss:
            return False
        from common import atomic, checkpoint, verify

        self.loss = loss
        if not (main_process() or verify.sharded(verify.bare(model))):
            return True  # DDP: rank 0 alone copies and writes the weights; FSDP: every rank joins the gather
        state = checkpoint.gather(model)[0]
        if main_process():
            record = {"step": step, "run": self.lineage, **results}

            def fill(tmp):
                checkpoint.save_model(tmp / "model.safetensors", state)
                (tmp / "eval.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")

            self.dir.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_dir(self.dir, fill)
        return True
