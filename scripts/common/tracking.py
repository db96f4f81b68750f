"""--report-to tensorboard: the events of one run in <output-dir>/runs/<run id> (torch.utils.tensorboard, the
writer accelerate's TensorBoardTracker uses): per optimizer step the loss, learning rate, gradient norm and
samples/s; per evaluation the eval loss and accuracy; at the end the run's hyper-parameters beside its final
metrics. One directory per run, continued by its resumes, so a new run never mixes with an old one's events.
common/progress.py's Log drives it, in the process that writes (the rung says which); it knows nothing of ranks."""

import time
from pathlib import Path

import torch


class Board:
    """The events writer, opened at the first value. --report-to none: `enabled` is False and nothing is
    written, so the default run pays nothing.

    The gradient norm is taken just before each optimizer step, by a step pre-hook (torch's public
    `register_step_pre_hook`, installed at the first log: from step 2 on), since the loop zeroes the gradients
    right after the step; after GradScaler's unscale, so it is the true gradients' norm. Under FSDP each process
    holds a shard of the gradients, and their norm would be a collective: there it is not recorded."""

    def __init__(self, enabled, logdir, batch_size):
        self.enabled, self.logdir, self.batch_size = enabled, Path(logdir), batch_size
        self.writer, self.last, self.hook, self.norm = None, None, None, None

    def _take_norm(self, model):
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        sharded = any(
            hasattr(g, "full_tensor") for g in grads
        )  # FSDP's DTensors: a collective away
        self.norm = torch.nn.utils.get_total_norm(grads) if grads and not sharded else None

    def _writer(self):
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(self.logdir)
        return self.writer

    def flush(self):
        if self.writer is not None:
            self.writer.flush()

    def close(self):
        if self.writer is not None:
            self.writer.close()

    def step(self, step, loss, optimizer, model):
        """The step's loss (already the global batch's), the rate the next step trains with, the norm."""
        if self.hook is None:  # accelerate's AcceleratedOptimizer holds the torch optimizer
            inner = getattr(optimizer, "optimizer", optimizer)
            self.hook = inner.register_step_pre_hook(lambda *_: self._take_norm(model))
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
        self._writer().add_scalar("eval/loss", results["eval_loss"], step)
        self._writer().add_scalar("eval/accuracy", results["eval_accuracy"], step)

    def hparams(self, flags, results):
        """The run's hyper-parameters beside its final metrics (TensorBoard's HPARAMS tab), in its own
        directory rather than in a new one per call, as SummaryWriter.add_hparams would make."""
        from torch.utils.tensorboard.summary import hparams

        metrics = {f"hparam/{k}": v for k, v in results.items() if isinstance(v, (int, float))}
        for summary in hparams(flags, metrics):
            self._writer().file_writer.add_summary(summary)
        for tag, value in metrics.items():
            self._writer().add_scalar(tag, value)
