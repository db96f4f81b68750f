"""Evaluation metrics through Hugging Face `evaluate`, offline; what a run measures (the Recorder); metrics.json.

The metric modules ship in `metrics_modules/<name>/` and are loaded by path, so nothing asks the Hub (which is
what `evaluate.load("accuracy")` does, and what fails on a machine without internet).
"""

import atexit
import json
import os
import sys
import time
from pathlib import Path

# evaluate ignores HF_HUB_OFFLINE; this keeps it off the network
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

MODULES = Path(__file__).resolve().parent / "metrics_modules"
_loaded = {}


def load(name="accuracy"):
    """The shipped `evaluate` module `name`, loaded once per process."""
    if name not in _loaded:
        import evaluate

        # no cache files to share
        _loaded[name] = evaluate.load(str(MODULES / name), keep_in_memory=True)
    return _loaded[name]


def classification(predictions, references, losses):
    """Accuracy (through `evaluate`) and mean loss over ALL eval samples. The rung hands in every sample exactly
    once: a duplicated or dropped sample would move both numbers."""
    # sequences: every token
    result = load("accuracy").compute(
        predictions=predictions.flatten().tolist(), references=references.flatten().tolist()
    )
    return {
        "eval_accuracy": float(result["accuracy"]),
        "eval_loss": float(losses.double().mean()),
        "eval_samples": len(references),
    }


# Dense bf16 tensor-core peaks (FLOP/s, no sparsity) from the vendors' data sheets, looked up by device name;
# the first match wins, so the specific names come first.
PEAK_BF16 = (
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),
    ("H200", 989e12),
    ("GH200", 989e12),
    ("B200", 2250e12),
    ("A100", 312e12),
    ("L40S", 362e12),
    ("L40", 181e12),
    ("L4", 121e12),
    ("A10G", 70e12),
    ("A10", 125e12),
    ("RTX 4090", 165e12),
    ("RTX 3090", 71e12),
)


def device_peak(device):
    """The device's dense bf16 peak in FLOP/s and its name; (None, name) for a CPU or a GPU not in the table."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None, "cpu"
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_BF16 if key in name), None), name


def throughput(samples, seconds, info, model, device, world_size=1):
    """samples/s over `seconds` of training; for sequences also tokens/s, and on a known GPU the model FLOPs
    utilisation (MFU): the share of the devices' bf16 peak that the training FLOPs (model.flops_per_token)
    reach, over `world_size` devices."""
    samples_per_second = samples / seconds if seconds else 0.0
    out = {"samples_per_second": samples_per_second}
    if info.kind == "text":
        out["tokens_per_second"] = samples_per_second * info.input_shape[0]
        peak, name = device_peak(device)
        if peak and hasattr(model, "flops_per_token"):
            out["mfu"] = out["tokens_per_second"] * model.flops_per_token() / (peak * world_size)
            out["device_name"] = name
    return out


def check_finite(train_loss, step):
    """Stop (one line, exit 2) when the epoch's mean training loss is NaN or infinite: called before the epoch's
    checkpoint, so the last good checkpoint stays the newest and `--resume auto` starts from it."""
    import math

    from common import UsageError

    if not math.isfinite(train_loss):
        raise UsageError(
            f"the training loss became {train_loss} by step {step}: the usual causes are a learning "
            f"rate too high for the model (lower --lr), or NaN/inf in the data; the last good "
            f"checkpoint is kept, and --resume auto continues from it"
        )


def memory(model, optimizer):
    """Bytes this process holds for the parameters, their gradients and the optimizer's state: the whole of each
    under DDP, this process's shard of each under FSDP (a DTensor's local part), so two runs compare per rank."""

    def nbytes(tensors):
        local = (t.to_local() if hasattr(t, "to_local") else t for t in tensors if t is not None)
        return sum(t.numel() * t.element_size() for t in local)

    params = list(model.parameters())
    state = [v for s in optimizer.state.values() for v in s.values() if hasattr(v, "numel")]
    return {
        "param_bytes": nbytes(params),
        "grad_bytes": nbytes(p for p in params if p.requires_grad),
        "optimizer_bytes": nbytes(state),
    }


def write_json(path, values):
    """Write `values` as JSON atomically: readers see the old file or the new one, never half of one."""
    from common import atomic
    from common.errors import UsageError

    try:
        atomic.write_text(path, json.dumps(values, indent=2, sort_keys=True) + "\n")
    except OSError as e:
        raise UsageError(
            f"could not write {str(path)!r} ({e.strerror or e}): free space or pass another "
            f"--output-dir; the model and the last checkpoint are written"
        ) from None


def _main_process():
    import torch.distributed as dist

    return not dist.is_initialized() or dist.get_rank() == 0


class Recorder:
    """Everything a run measures besides its loss, behind one object so that each rung spends one line on each
    use: the progress bar (`progress`), per-step scalars for --report-to (`log`), per-epoch samples/s and loss
    (`epoch`), and metrics.json's wall time, memory and throughput (`summary`). Only the main process prints
    or writes; the timing brackets the training steps alone (not eval, not checkpoints)."""

    def __init__(self, args, info, batch_size):
        import torch.distributed as dist

        self.args, self.info, self.batch_size = args, info, batch_size
        self.world_size = dist.get_world_size() if dist.is_initialized() else 1
        self.wall_start, self.train_seconds, self.samples, self.history = (
            time.perf_counter(),
            0.0,
            0,
            [],
        )
        self.epoch_start, self.steps_at_start, self.step = None, 0, 0
        self.tracker = Tracker(args, batch_size)

    def progress(self, loader, epoch, done=0):
        """`loader` with a progress bar on a terminal (main process), timed from its first batch."""
        from tqdm import tqdm

        self.epoch_start, self.steps_at_start, self.last_sum = time.perf_counter(), self.step, 0.0
        show = _main_process() and sys.stderr.isatty()
        return tqdm(loader, desc=f"epoch {epoch}", initial=done, leave=False, disable=not show)

    def log(self, step, loss_sum, optimizer, model):
        """After optimizer step `step`, with the pass's loss sum so far: --report-to's scalars (the step's loss,
        lr, grad norm, samples/s). Without --report-to it costs one attribute read: no host sync per step."""
        self.step = step
        if self.tracker.enabled:
            loss, self.last_sum = loss_sum - self.last_sum, loss_sum.clone()
            self.tracker.log(step, loss, optimizer, model)

    def epoch(self, step, loss_sum):
        """The end of a pass over the loader (or of the part that ran), with the loss summed over its steps:
        records its samples/s and returns its mean loss. A NaN or infinite loss stops the run here (one line),
        before the epoch's checkpoint, so the last good checkpoint stays the newest."""
        self.step = step
        seconds, steps = time.perf_counter() - self.epoch_start, step - self.steps_at_start
        train_loss = (
            loss_sum / max(steps, 1)
        ).item()  # after .item(): the device has finished the epoch
        seconds = time.perf_counter() - self.epoch_start
        check_finite(train_loss, step)
        self.train_seconds, self.samples = (
            self.train_seconds + seconds,
            self.samples + steps * self.batch_size,
        )
        self.history.append(
            {
                "step": step,
                "train_loss": train_loss,
                "samples_per_second": steps * self.batch_size / seconds if seconds else 0.0,
            }
        )
        return train_loss

    def summary(self, model, optimizer, device):
        """metrics.json's measured part."""
        out = {
            "history": self.history,
            "wall_seconds": time.perf_counter() - self.wall_start,
            "global_batch_size": self.batch_size,
            "gradient_accumulation_steps": self.args.gradient_accumulation_steps,
            "lr_schedule": self.args.lr_schedule,
            "mixed_precision": self.args.mixed_precision,
            "world_size": self.world_size,
            "per_device_batch_size": self.args.batch_size,
        }
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
    by the main process to <output-dir>/runs with torch.utils.tensorboard (the writer accelerate's TensorBoardTracker
    uses). --report-to none: log() returns at once, so the default run pays nothing (no host sync per step).

    The one place in common/ that asks torch.distributed anything (besides preemption): which rank this is, so that
    the same line in every rung writes once. The gradient norm is computed on every rank, because under FSDP it is
    a collective (each rank holds a shard of the gradients)."""

    def __init__(self, args, batch_size):
        self.enabled, self.batch_size, self.writer = (
            args.report_to == "tensorboard",
            batch_size,
            None,
        )
        self.logdir, self.last = Path(args.output_dir) / "runs", None

    def log(self, step, loss, optimizer, model):
        # first: the default run pays one attribute read per step, nothing else
        if not self.enabled:
            return
        import time

        import torch

        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads) if grads else torch.zeros(())
        # FSDP: every rank's shard
        norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm
        if not _main_process():
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(self.logdir)
            # flushes the last events on any exit, a signal's included
            atexit.register(self.writer.close)
        now = time.perf_counter()
        values = {
            "train/loss": float(loss),
            "train/lr": optimizer.param_groups[0]["lr"],
            "train/grad_norm": float(norm),
        }
        if self.last is not None:
            values["train/samples_per_second"] = self.batch_size / (now - self.last)
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)
        self.last = now
