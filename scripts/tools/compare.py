"""Compare two trainings' weights: did a migration (or a rung) end where the original ends?

    python scripts/tools/compare.py out/guide/1 out/guide/3                   # two runs of the ladder: within 1e-5
    python scripts/tools/compare.py out/guide/4 out/guide/5 --tolerance 0.05  # bf16 vs fp32
    python scripts/tools/compare.py plain.pt ddp.pt                           # your own script's weight files

Each side is a run's --output-dir (its model.safetensors and metrics.json), a .safetensors file, or a file that
torch.save wrote with a state_dict (loaded with weights_only=True: a file that would need to unpickle code is
refused, never run). DDP's `module.` and torch.compile's `_orig_mod.` prefixes are stripped, so a wrapped and a
bare model compare. Prints max |w_a - w_b| and the tensor where it is largest, and for runs of the ladder their
eval accuracy, steps and global batch. Exit code 0 when the weights agree within --tolerance (and, for runs,
the step counts and global batches match), 1 when they do not, 2 when a side cannot be read.
"""

import argparse
import json
import re
import sys
from pathlib import Path

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


def compare(a, b):
    """(max |a - b|, the tensor where it is largest); ValueError when the two hold different tensors."""
    if a.keys() != b.keys():
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        raise ValueError(
            f"the two hold different tensors (only in the first: {only_a[:3]}, only in the second: "
            f"{only_b[:3]}): they are not the same model"
        )
    worst, where = 0.0, None
    for key in a:
        if a[key].shape != b[key].shape:
            raise ValueError(
                f"{key} has shape {tuple(a[key].shape)} in one and {tuple(b[key].shape)} in the other"
            )
        diff = (a[key].double() - b[key].double()).abs().max().item() if a[key].numel() else 0.0
        if where is None or diff > worst:
            worst, where = diff, key
    return worst, where


def main():
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
    args = p.parse_args()
    try:
        (wa, ma), (wb, mb) = load_weights(args.a), load_weights(args.b)
        diff, where = compare(wa, wb)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    same = diff <= args.tolerance
    for out, m in ((args.a, ma), (args.b, mb)):
        if m:
            print(
                f"{out:<24} {m['rung']:<18} world size {m.get('world_size', 1)}  global batch "
                f"{m['global_batch_size']:>3}  steps {m['steps']:>4}  eval accuracy {m['eval_accuracy']:.4f}  "
                f"({m['eval_samples']} samples)"
            )
    if ma and mb:
        same = (
            same
            and ma["steps"] == mb["steps"]
            and ma["global_batch_size"] == mb["global_batch_size"]
        )
    print(
        f"max |w_a - w_b| = {diff:.3g} (largest in {where}): {'the same' if same else 'DIFFERENT'} "
        f"within {args.tolerance:g}"
    )
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
