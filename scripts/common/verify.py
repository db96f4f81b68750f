"""Reading a checkpoint back: everything in it is checked before anything trusts it (a hand-edited, truncated
or foreign checkpoint is one line, and the model and optimizer stay untouched), then this run's
hyper-parameters and LR schedule are put back in place. common/checkpoint.py writes and restores through it.
"""

import hashlib
import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from common.errors import UsageError

FORMAT = "ddp-ladder-checkpoint/3"  # /3: the optimizer's state keyed by parameter name


FILES = ("model.safetensors", "optimizer.safetensors")


class CheckpointError(UsageError):
    """A checkpoint that cannot be used: missing, corrupt, truncated, or written for another model."""


def inner(optimizer):
    # accelerate's AcceleratedOptimizer holds the real one
    return getattr(optimizer, "optimizer", optimizer)


def bare(model):
    # DDP and torch.compile the state-dict API handles itself
    while isinstance(model, torch.nn.DataParallel):
        model = model.module
    return model


def sharded(model):
    return any(hasattr(p, "full_tensor") for p in model.parameters())  # FSDP2's DTensor parameters


def why(error):
    text = getattr(error, "strerror", None) or str(error).strip() or type(error).__name__
    return text.splitlines()[0][:160]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def valid_state(state):
    """state.json's fields, checked for type before anything trusts them (a hand-edited or foreign file)."""
    if not isinstance(state, dict):
        raise ValueError(f"a JSON {type(state).__name__}, not an object")
    if state.get("format") != FORMAT:
        raise ValueError(
            f"format {state.get('format')!r}, expected {FORMAT!r} (an older version's checkpoint: "
            f"start again with --resume none)"
        )
    for key in ("step", "epoch", "samples_in_epoch"):
        if type(state.get(key)) is not int or state[key] < 0:
            raise ValueError(f"{key!r} is {state.get(key)!r}, not a whole number")
    hashes = state.get("sha256")
    if (
        not isinstance(hashes, dict)
        or set(hashes) != set(FILES)
        or not all(isinstance(v, str) for v in hashes.values())
    ):
        raise ValueError("'sha256' does not list the two files' hashes")
    return state


def read(path):
    """Read and verify a checkpoint directory: (state, model tensors, optimizer tensors, optimizer metadata)."""
    path = Path(path)
    if path.is_file():
        raise CheckpointError(
            f"checkpoint {str(path)!r} is a file: a ddp-ladder checkpoint is a directory "
            f"(<output-dir>/checkpoints/step-N) of safetensors and JSON; pickle and torch.save "
            f"files are never loaded, they can run code"
        )
    if not path.is_dir():
        raise CheckpointError(
            f"checkpoint {str(path)!r} does not exist: pass a checkpoint directory "
            f"(<output-dir>/checkpoints/step-N), --resume auto, or --resume none"
        )
    if (path / "checkpoints").is_dir() and not (path / "state.json").exists():
        raise CheckpointError(
            f"{str(path)!r} is an output dir, not a checkpoint: pass --resume auto --output-dir "
            f"{str(path)!r} (its newest valid checkpoint), or one of its checkpoints/step-N"
        )
    try:
        state = valid_state(json.loads((path / "state.json").read_text()))
    except (OSError, ValueError) as e:
        raise CheckpointError(
            f"checkpoint {str(path)!r} has no valid state.json ({e}): it is incomplete or "
            f"not a ddp-ladder checkpoint; delete it or resume from another"
        ) from None
    for name, digest in state["sha256"].items():
        file = path / name
        if not file.is_file() or sha256(file) != digest:
            problem = (
                "is missing"
                if not file.is_file()
                else "does not match its sha256 (corrupt or truncated)"
            )
            raise CheckpointError(
                f"checkpoint file {str(file)!r} {problem}: delete {str(path)!r} or resume "
                f"from another checkpoint"
            )
    try:
        model_sd, optimizer_sd = load_file(path / FILES[0]), load_file(path / FILES[1])
        with safe_open(path / FILES[1], framework="pt") as f:
            metadata = f.metadata() or {}
        groups, values = json.loads(metadata["param_groups"]), json.loads(metadata["values"])
    except Exception as e:  # safetensors raises several types for a file that is not safetensors
        raise CheckpointError(
            f"checkpoint {str(path)!r} is not a valid ddp-ladder checkpoint ({why(e)}): "
            f"delete it or resume from another"
        ) from None
    return state, model_sd, optimizer_sd, groups, values


def names(model):
    """The model's parameter and buffer names as a checkpoint keys them: without the prefixes that wrappers
    add to the module tree (DDP's `module.`, torch.compile's `_orig_mod.`), as the state-dict API does."""
    strip = ("module.", "_orig_mod.")
    out = {}
    for key, value in model.state_dict().items():
        while key.startswith(strip):
            key = key.split(".", 1)[1]
        out[key] = tuple(value.shape)
    return out


def check_fits(path, model, tensors):
    expected = names(model)
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    missing, unexpected = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    if missing or unexpected or wrong:
        details = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing[:3])}" if missing else "",
                f"unexpected {', '.join(unexpected[:3])}" if unexpected else "",
                f"shape of {wrong[0]} is {got[wrong[0]]}, model has {expected[wrong[0]]}"
                if wrong
                else "",
            )
            if part
        )
        raise CheckpointError(
            f"checkpoint {str(path)!r} was written for another model ({details}): use the "
            f"--task/--model/--dataset it was trained with, or --resume none"
        )


def _parameter_names(model):
    return {
        name.replace("_orig_mod.", "").replace("module.", "")
        for name, _ in model.named_parameters()
    }


def optimizer_state(path, model, optimizer, tensors, groups, values):
    """The optimizer state dict keyed by parameter name, as set_optimizer_state_dict takes it, checked against
    this run's model and optimizer first."""
    shapes = {
        name: shape for name, shape in names(model).items() if name in _parameter_names(model)
    }
    another = CheckpointError(
        f"checkpoint {str(path)!r} holds the state of another optimizer or model: "
        f"resume with the same --model and optimizer, or --resume none"
    )
    ok = (
        isinstance(groups, list)
        and len(groups) == len(inner(optimizer).param_groups)
        and all(isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups)
    )
    if not ok or sorted(p for g in groups for p in g["params"]) != sorted(shapes):
        raise another
    state = {}
    for key, value in tensors.items():
        name, _, item = key[len("state.") :].rpartition(".")
        if name not in shapes or tuple(value.shape) not in (shapes[name], ()):
            raise another
        state.setdefault(name, {})[item] = value
    for key, value in values.items():
        name, _, item = key.rpartition(".")
        if name not in shapes:
            raise another
        state.setdefault(name, {})[item] = value
    return {"state": state, "param_groups": groups}


def restore_schedule(scheduler, optimizer, state):
    """Put a LambdaLR back at the checkpoint's step, through its own load_state_dict; the rates are then
    recomputed from the closed form (--lr x factor(step)), so a changed --lr applies from the next step."""
    # accelerate's AcceleratedScheduler holds it
    scheduler = getattr(scheduler, "scheduler", scheduler)
    saved = state.get("scheduler")
    step = saved.get("last_epoch") if isinstance(saved, dict) else None
    # no scheduler saved: the optimizer's step
    step = step if type(step) is int and step >= 0 else state["step"]
    base = [group["initial_lr"] for group in optimizer.param_groups]
    for group, lr, factor in zip(optimizer.param_groups, base, scheduler.lr_lambdas):
        group["lr"] = lr * factor(step)
    lrs = [group["lr"] for group in optimizer.param_groups]
    saved = {"last_epoch": step, "_step_count": step + 1, "base_lrs": base, "_last_lr": lrs}
    scheduler.load_state_dict({**scheduler.state_dict(), **saved})


def keep_flags(optimizer, wanted, scheduled=False):
    """This run's hyper-parameters win over the checkpoint's, which set_optimizer_state_dict brought back with
    the momentum buffers. Under a scheduler the current "lr" is the schedule's, so its base ("initial_lr", set
    from --lr) is compared."""
    kept = []
    for group, mine in zip(optimizer.param_groups, wanted):
        for key, value in mine.items():
            if scheduled and key == "lr":
                continue
            if key == "initial_lr" and key not in group:  # a checkpoint written without a scheduler
                group[key] = value
            if isinstance(value, tuple):  # AdamW's betas: JSON gave them back as a list
                group[key] = value
            if key in group and group[key] != value and isinstance(value, (int, float)):
                name = "lr" if key == "initial_lr" else key
                kept.append(f"{name} {value:g} (the checkpoint had {group[key]:g})")
                group[key] = value
    return sorted(set(kept))
