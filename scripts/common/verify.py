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
STATE_ITEMS = {  # the per-parameter state of the optimizers torch ships, as a checkpoint may hold it
    "SGD": {"momentum_buffer"},
    "Adam": {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    "AdamW": {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
}


class CheckpointError(UsageError):
    """A checkpoint that cannot be used: missing, corrupt, truncated, or written for another model."""


def inner(optimizer):
    return getattr(optimizer, "optimizer", optimizer)  # accelerate's AcceleratedOptimizer holds it


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
            f"start afresh with --overwrite)"
        )
    for key in ("step", "epoch", "samples_in_epoch"):
        if type(state.get(key)) is not int or state[key] < 0:
            raise ValueError(f"{key!r} is {state.get(key)!r}, not a whole number")
    scaler, scheduler = state.get("scaler"), state.get("scheduler")
    if scaler is not None and not (
        isinstance(scaler, dict)
        and all(type(scaler.get(k)) in (int, float) for k in ("scale", "growth_factor"))
        and scaler["scale"] > 0
    ):
        raise ValueError(f"'scaler' is {str(scaler)[:40]!r}, not a GradScaler's state")
    if scheduler is not None and not (
        isinstance(scheduler, dict) and scheduler.get("last_epoch") == state["step"]
    ):
        raise ValueError(f"the LR scheduler's step is not the checkpoint's step {state['step']}")
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
            f"(<output-dir>/checkpoints/step-N), --resume auto, or start afresh with --overwrite"
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
        try:
            digest_ok = file.is_file() and sha256(file) == digest
        except OSError as e:  # removed while read: another run's rotation
            raise CheckpointError(
                f"checkpoint {str(path)!r} could not be read ({why(e)}): another run may have "
                f"removed it; resume from a checkpoint no running job rotates away"
            ) from None
        if not digest_ok:
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


def names(model, of=lambda value: tuple(value.shape)):
    """The model's parameter and buffer names as a checkpoint keys them: without the prefixes that wrappers
    add to the module tree (DDP's `module.`, torch.compile's `_orig_mod.`), as the state-dict API does; each
    with its shape (or what `of` takes from the tensor)."""
    strip = ("module.", "_orig_mod.")
    out = {}
    for key, value in model.state_dict().items():
        while key.startswith(strip):
            key = key.split(".", 1)[1]
        out[key] = of(value)
    return out


def check_fits(path, model, tensors):
    expected = names(model)
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    missing, unexpected = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    dtypes = names(model, of=lambda value: value.dtype)  # never cast a weight silently
    cast = sorted(k for k in set(dtypes) & set(got) if tensors[k].dtype != dtypes[k])
    if missing or unexpected or wrong or cast:
        details = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing[:3])}" if missing else "",
                f"unexpected {', '.join(unexpected[:3])}" if unexpected else "",
                f"shape of {wrong[0]} is {got[wrong[0]]}, model has {expected[wrong[0]]}"
                if wrong
                else "",
                f"{cast[0]} is {tensors[cast[0]].dtype}, model has {dtypes[cast[0]]}"
                if cast
                else "",
            )
            if part
        )
        raise CheckpointError(
            f"checkpoint {str(path)!r} was written for another model ({details}): use the "
            f"--task/--model/--dataset it was trained with, or start afresh with --overwrite"
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
        f"resume with the same --model and optimizer, or start afresh with --overwrite"
    )
    ok = (
        isinstance(groups, list)
        and len(groups) == len(inner(optimizer).param_groups)
        and all(isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups)
    )
    if not ok or sorted(p for g in groups for p in g["params"]) != sorted(shapes):
        raise another
    state, known = {}, STATE_ITEMS.get(type(inner(optimizer)).__name__)
    for key, value in tensors.items():
        name, _, item = key[len("state.") :].rpartition(".")
        shape = () if item == "step" else shapes.get(name)  # a step count is a scalar tensor
        if name not in shapes or tuple(value.shape) != shape or not value.is_floating_point():
            raise another
        state.setdefault(name, {})[item] = value
    for key, value in values.items():
        name, _, item = key.rpartition(".")
        if name not in shapes or type(value) not in (int, float, bool, type(None)):
            raise another
        state.setdefault(name, {})[item] = value
    items = {frozenset(s) for s in state.values()}
    if len(items) > 1 or (known is not None and items and not items.pop() <= known):
        raise another  # every parameter has the same state, of the names this optimizer uses
    return {"state": state, "param_groups": groups}


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
