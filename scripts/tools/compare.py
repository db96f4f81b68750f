"""Compare two trainings' weights: did a migration (or a rung) end where the original ends?

    python scripts/tools/compare.py out/guide/34-3 out/guide/34-4                   # two rungs: within 1e-5
    python scripts/tools/compare.py out/guide/45-4 out/guide/45-5 --tolerance 0.05  # bf16 vs fp32
    python scripts/tools/compare.py plain.pt ddp.pt                                 # your own script's files
    python scripts/tools/compare.py plain.pt ddp.pt --params-only                   # BatchNorm: weights alone

Each side is a run's --output-dir (its model.safetensors and metrics.json), a .safetensors file, or a file that
torch.save wrote with a state_dict (loaded with weights_only=True: a file that would need to unpickle code is
refused, never run). DDP's `module.` and torch.compile's `_orig_mod.` prefixes are stripped, so a wrapped and a
bare model compare.

Parameters and buffers are reported apart: a state dict does not say which is which, so BatchNorm's running
statistics (running_mean, running_var, num_batches_tracked) and integer tensors count as buffers, everything else
as parameters. Each gets its max |a - b| and its max relative difference (|a - b| / max(|a|, |b|), in the L2 norm
of each tensor), then come the tensors that differ most, by name, and a one-line verdict naming the kind of
difference: float rounding; a world-size/batch mismatch (the runs' steps or global batch differ, a BatchNorm's
num_batches_tracked differs, or most parameter tensors moved by a similar relative amount); BatchNorm
statistics (the buffers differ, relatively, at least as much as the parameters); or a real divergence (unrelated
weights, or a difference concentrated in some tensors). The verdict is a pointer, read from the weights alone. For runs
of the ladder it prints their eval accuracy, steps and global batch too.

Exit code 0 when the weights agree within --tolerance (parameters and buffers, or parameters alone with
--params-only; and, for runs, the step counts and global batches match), 1 when they do not, 2 when a side
cannot be read.
"""

import argparse
import json
import re
import sys
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors.torch import load_file

# what DDP / DataParallel and torch.compile put before a saved name
PREFIXES = ("module.", "_orig_mod.")


def bare_key(key):
    """A tensor's name without the wrappers' prefixes, so a DDP run's file compares with a plain one's."""
    while key.startswith(PREFIXES):
        key = key[len(next(p for p in PREFIXES if key.startswith(p))) :]
    return key


RUN_KEYS = ("rung", "global_batch_size", "steps", "eval_accuracy", "eval_samples")


def read_metrics(path):
    """A ladder run's metrics.json, checked for the fields compare prints; ValueError otherwise."""
    try:
        metrics = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{str(path)!r} is not readable JSON ({e})") from None
    missing = [k for k in RUN_KEYS if not isinstance(metrics, dict) or k not in metrics]
    if missing:
        raise ValueError(
            f"{str(path)!r} is not a ladder run's metrics (no {', '.join(missing)}): pass the "
            f"run's model.safetensors instead of its directory"
        )
    return metrics


def _torch_load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # weights_only refuses anything but tensors and plain containers
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # torch's message holds terminal escapes
        pickled = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
        if pickled:
            raise ValueError(
                f"{str(path)!r} pickles a {pickled.group(1)} object (torch.save(model) saves the "
                f"whole module), which cannot be loaded without running code from the file: save "
                f"model.state_dict() instead (under DDP: model.module.state_dict())"
            ) from None
        first = (text.strip().splitlines() or [type(e).__name__])[0]
        raise ValueError(
            f"{str(path)!r} is not a state_dict that loads with weights_only=True ({first[:160]})"
        ) from None


def load_weights(path):
    """(state dict with bare names, metrics dict or None) for a run directory or a weight file."""
    path = Path(path)
    metrics = None
    if path.is_dir():
        metrics_file = path / "metrics.json"
        metrics = read_metrics(metrics_file) if metrics_file.exists() else None
        path = path / "model.safetensors"
    if not path.is_file():
        raise ValueError(
            f"{str(path)!r} does not exist: pass a run's --output-dir or a weight file"
        )
    if path.suffix == ".safetensors":
        try:
            state = load_file(str(path))
        except Exception as e:  # safetensors raises several types for a damaged file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ValueError(
                f"{str(path)!r} is not a readable safetensors file ({first[:160]})"
            ) from None
    else:
        state = _torch_load(path)
        state = (
            state.get("model", state.get("state_dict", state)) if isinstance(state, dict) else state
        )
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and torch.is_tensor(v) for k, v in state.items()
    ):
        raise ValueError(f"{str(path)!r} holds no state_dict of named tensors")
    if not state:
        raise ValueError(f"{str(path)!r} holds an empty state_dict: there is nothing to compare")
    return {bare_key(k): v for k, v in state.items()}, metrics


# what BatchNorm keeps besides its weights: per process under DDP, unless converted to SyncBatchNorm
BN_BUFFERS = ("running_mean", "running_var", "num_batches_tracked")
UNIFORM = 0.05  # median / largest relative difference of the parameters: above it, all moved
UNRELATED = 0.5  # a median relative difference this large: weights that share nothing


def is_buffer(key, tensor):
    return key.rsplit(".", 1)[-1] in BN_BUFFERS or not tensor.is_floating_point()


class Row(NamedTuple):
    name: str
    kind: str  # "parameter" or "buffer"
    diff: float  # max |a - b|
    relative: float  # |a - b| / max(|a|, |b|), L2 norms over the tensor
    zero: bool  # all zeros on both sides: no relative difference to speak of


def compare(a, b):
    """One Row per tensor, largest |a - b| first; ValueError when the two hold different tensors."""
    if a.keys() != b.keys():
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        raise ValueError(
            f"the two hold different tensors (only in the first: {only_a[:3]}, only in the second: "
            f"{only_b[:3]}): they are not the same model"
        )
    rows = []
    for key in a:
        if a[key].shape != b[key].shape:
            raise ValueError(
                f"{key} has shape {tuple(a[key].shape)} in one and {tuple(b[key].shape)} in the other"
            )
        x, y = a[key].double(), b[key].double()
        diff = (x - y).abs().max().item() if x.numel() else 0.0
        scale = max(x.norm().item(), y.norm().item())
        relative = (x - y).norm().item() / scale if scale else 0.0
        kind = "buffer" if is_buffer(key, a[key]) else "parameter"
        rows.append(Row(key, kind, diff, relative, zero=not scale))
    return sorted(rows, key=lambda row: -row.diff)


def largest(rows, kind):
    """(max |a - b|, where, max relative difference) over the rows of one kind; None when there are none."""
    mine = [row for row in rows if row.kind == kind]
    return (mine[0].diff, mine[0].name, max(row.relative for row in mine)) if mine else None


def verdict(rows, ma, mb, tolerance, params_only):
    """One line naming the kind of difference."""
    if (
        ma
        and mb
        and (ma["steps"], ma["global_batch_size"]) != (mb["steps"], mb["global_batch_size"])
    ):
        return (
            f"world-size/batch mismatch: {ma['steps']} vs {mb['steps']} steps at global batch "
            f"{ma['global_batch_size']} vs {mb['global_batch_size']}: give the migrated run the plain "
            f"run's global batch (per-process batch x processes)"
        )
    params, buffers = largest(rows, "parameter"), largest(rows, "buffer")
    param_diff, param_relative = (params[0], params[2]) if params else (0.0, 0.0)
    counts = [row for row in rows if row.name.endswith(".num_batches_tracked") and row.diff]
    if counts and param_diff > tolerance:  # (with equal parameters, a BatchNorm that counted apart)
        return (
            f"world-size/batch mismatch: {counts[0].name} differs by {counts[0].diff:.0f}: the two took "
            f"a different number of steps (each BatchNorm counts its forward passes)"
        )
    if buffers and buffers[0] > tolerance and buffers[2] >= param_relative:
        within = "within" if param_diff <= tolerance else "beyond"
        return (
            f"BatchNorm statistics: buffers differ by {buffers[0]:.3g} (relative {buffers[2]:.2g}, in "
            f"{buffers[1]}), parameters by {param_diff:.3g} (relative {param_relative:.2g}), {within} "
            f"{tolerance:g}: per-process running statistics under DDP (SyncBatchNorm on GPUs); prove the "
            f"migration with BatchNorm frozen, or against a plain run that normalizes each process's "
            f"share apart (your-script.md item 19)"
        )
    if param_diff <= tolerance and (params_only or not buffers or buffers[0] <= tolerance):
        return (
            f"the same: every difference within {tolerance:g}, what rounding leaves (fp32 about 1e-6 "
            f"here; bf16 about 1e-3)"
        )
    statistics = [  # BatchNorm's running statistics that differ: per-process under DDP, every step
        row.name
        for row in rows
        if row.name.endswith((".running_mean", ".running_var")) and row.diff
    ]
    also = (
        f"; or BatchNorm, whose running statistics differ too ({statistics[0]}): under DDP each process "
        f"normalizes its own share, which moves every step (prove it with BatchNorm frozen: "
        f"your-script.md item 19)"
        if statistics and buffers[0] > tolerance
        else ""
    )
    moved = sorted(
        (row.relative, row.name) for row in rows if row.kind == "parameter" and not row.zero
    )
    if not moved:  # buffers only, and they differ
        return f"real divergence: the buffers differ by {buffers[0]:.3g} (in {buffers[1]})"
    (low, low_name), (middle, _), (high, high_name) = moved[0], moved[len(moved) // 2], moved[-1]
    if middle >= UNRELATED:
        return (
            f"real divergence: most parameter tensors differ by {middle:.2g} to {high:.2g} of their "
            f"size, as unrelated weights do: another seed for the initial weights, or another model"
        )
    if middle >= UNIFORM * high:
        return (
            f"world-size/batch mismatch (likely): most parameter tensors differ by a similar relative "
            f"amount ({middle:.2g} to {high:.2g}), as when every step differs: a global batch that "
            f"changed, a summed loss under DDP with SGD (each step 1/world-size), another data order, "
            f"or dropout or noise drawn differently{also}"
        )
    return (
        f"real divergence: concentrated in some tensors (relative {high:.2g} in {high_name}, "
        f"{low:.2g} in {low_name}): they trained differently from the rest (under Adam a summed loss "
        f"under DDP shows this way too: Adam undoes the 1/world-size scale except where gradients "
        f"are as small as its eps){also}"
    )


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "a", help="a run's --output-dir, a .safetensors file, or a torch.save'd state_dict"
    )
    p.add_argument("b", help="another one")
    p.add_argument(
        "--tolerance", type=float, default=1e-5, help="max |w_a - w_b| allowed (default 1e-5)"
    )
    p.add_argument(
        "--params-only",
        action="store_true",
        help="judge on the parameters alone, not BatchNorm's running statistics (still printed)",
    )
    p.add_argument("--top", type=int, default=5, help="how many tensors to list (default 5)")
    args = p.parse_args(argv)
    try:
        (wa, ma), (wb, mb) = load_weights(args.a), load_weights(args.b)
        rows = compare(wa, wb)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    for out, m in ((args.a, ma), (args.b, mb)):
        if m:
            print(
                f"{out:<24} {m['rung']:<18} world size {m.get('world_size', 1)}  global batch "
                f"{m['global_batch_size']:>3}  steps {m['steps']:>4}  eval accuracy {m['eval_accuracy']:.4f}  "
                f"({m['eval_samples']} samples)"
            )
    for kind in ("parameter", "buffer"):
        found = largest(rows, kind)
        count = sum(row.kind == kind for row in rows)
        print(
            f"{kind + 's:':<12} {count:>3} tensors, "
            + (
                f"max |a - b| = {found[0]:.3g} (in {found[1]}), max relative {found[2]:.3g}"
                if found
                else "none"
            )
        )
    print(f"top {min(args.top, len(rows))} tensors by |a - b|:")
    width = max((len(row.name) for row in rows[: args.top]), default=0)
    for name, kind, diff, relative, _ in rows[: args.top]:
        print(f"  {name:<{width}}  {kind:<9}  {diff:.3g}  relative {relative:.3g}")
    judged = [row for row in rows if row.kind == "parameter" or not args.params_only]
    diff, where = (judged[0].diff, judged[0].name) if judged else (0.0, None)
    same = diff <= args.tolerance
    if ma and mb:
        same = (
            same
            and ma["steps"] == mb["steps"]
            and ma["global_batch_size"] == mb["global_batch_size"]
        )
    print(
        f"max |w_a - w_b| = {diff:.3g} (largest in {where}{', parameters only' if args.params_only else ''}): "
        f"{'the same' if same else 'DIFFERENT'} within {args.tolerance:g}"
    )
    print(f"verdict: {verdict(rows, ma, mb, args.tolerance, args.params_only)}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
