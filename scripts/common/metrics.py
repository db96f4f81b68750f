"""Evaluation metrics through Hugging Face `evaluate`, offline; throughput, memory; metrics.json.

The metric modules ship in `metrics_modules/<name>/` and are loaded by path, so nothing asks the Hub (which is
what `evaluate.load("accuracy")` does, and what fails on a machine without internet; loaded by path with the Hub
unreachable and no offline variable set, it takes 0.07 s). `evaluate` itself (~1.2 s to import) is imported at
the first evaluation, not at start-up.
"""

import json
from pathlib import Path

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
