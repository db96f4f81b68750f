"""Checkpoints that load in every rung, at every world size, FSDP's included, and never execute code.

Layout of one checkpoint, `<output-dir>/checkpoints/step-00000440/`:
    model.safetensors      the model's weights by parameter name (no `module.` / `_orig_mod.` prefixes)
    optimizer.safetensors  the optimizer's tensors, keyed `state.<parameter name>.<name>`; its param_groups (by
                           parameter name) and non-tensor values as JSON metadata
    state.json             step, epoch, position in the epoch (in samples), LR-scheduler and grad-scaler state,
                           and the sha256 of both files, written last
Both state dicts come from torch.distributed.checkpoint.state_dict (get_model_state_dict /
get_optimizer_state_dict, keyed by parameter name, which is what makes a checkpoint independent of the wrapper
and the world size) and go back through set_model_state_dict / set_optimizer_state_dict, one path for every rung:
under FSDP the full state is gathered by every rank (`gather`) and each rank keeps its shard on load.
Why not torch.save or DCP's own files: those are pickle (torch.load runs code from an untrusted file unless
weights_only) or a directory per rank; safetensors + JSON cannot execute anything and load at any world size.
Writes go through common/atomic.py: a crash at any moment leaves the old checkpoints, or those plus the new one.
"""

import hashlib
import json
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from common import atomic
from common.errors import UsageError

FORMAT = "ddp-ladder-checkpoint/3"  # /3: the optimizer's state keyed by parameter name
FILES = ("model.safetensors", "optimizer.safetensors")


class CheckpointError(UsageError):
    """A checkpoint that cannot be used: missing, corrupt, truncated, or written for another model."""


def _inner(optimizer):
    # accelerate's AcceleratedOptimizer holds the real one
    return getattr(optimizer, "optimizer", optimizer)


def _bare(model):
    # DDP and torch.compile the state-dict API handles itself
    while isinstance(model, torch.nn.DataParallel):
        model = model.module
    return model


def _sharded(model):
    return any(hasattr(p, "full_tensor") for p in model.parameters())  # FSDP2's DTensor parameters


def gather(model, optimizer=None):
    """The full model state dict (and the optimizer's, if given) as CPU tensors. Under FSDP every rank must call
    it (each holds a shard) and rank 0 alone gets the tensors, the others empty dicts."""
    model = _bare(model)
    options = StateDictOptions(full_state_dict=_sharded(model), cpu_offload=True)
    model_sd = get_model_state_dict(model, options=options)
    if optimizer is None:
        return model_sd, None
    return model_sd, get_optimizer_state_dict(model, _inner(optimizer), options=options)


def _cpu(state):
    """CPU, contiguous, unshared copies, as safetensors needs them (tied weights share storage)."""
    out, seen = {}, set()
    for key, value in state.items():
        value = value.detach().to("cpu").contiguous()
        if value.data_ptr() in seen and value.numel():
            value = value.clone()
        seen.add(value.data_ptr())
        out[key] = value
    return out


def _optimizer_files(optimizer_sd):
    tensors, values = {}, {}
    for name, state in optimizer_sd["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                tensors[f"state.{name}.{key}"] = value
            else:
                values[f"{name}.{key}"] = value
    metadata = {
        "format": FORMAT,
        "param_groups": json.dumps(optimizer_sd["param_groups"]),
        "values": json.dumps(values),
    }
    return _cpu(tensors), metadata


def _why(error):
    text = getattr(error, "strerror", None) or str(error).strip() or type(error).__name__
    return text.splitlines()[0][:160]


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save(args, model, optimizer, scheduler, step, epoch, samples_in_epoch, scaler=None):
    """Write checkpoint `step` into --output-dir atomically and keep the newest --keep. Call on the main process
    (a collective under FSDP: there every rank gathers first and passes the state dicts). `model` and
    `optimizer` are the objects, or the state dicts that `gather` returned (FSDP: every rank gathers first).
    `samples_in_epoch` is the position in epoch `epoch`'s sample order, so that a run at another batch size or
    world size can continue from it (data.start_at)."""
    if isinstance(model, dict):
        model_sd, optimizer_sd = model, optimizer
    else:
        model_sd, optimizer_sd = gather(model, optimizer)
    root = Path(args.output_dir) / "checkpoints"
    final = root / f"step-{step:08d}"

    def fill(tmp):
        save_file(_cpu(model_sd), tmp / FILES[0], metadata={"format": FORMAT})
        tensors, metadata = _optimizer_files(optimizer_sd)
        save_file(tensors, tmp / FILES[1], metadata=metadata)
        state = {
            "format": FORMAT,
            "step": step,
            "epoch": epoch,
            "samples_in_epoch": samples_in_epoch,
            "scaler": scaler.state_dict() if scaler is not None and scaler.is_enabled() else None,
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            "sha256": {name: _sha256(tmp / name) for name in FILES},
        }
        (tmp / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    try:
        root.mkdir(parents=True, exist_ok=True)
        atomic.remove_stale(root)  # left by a save that was killed; never a valid checkpoint
        atomic.write_dir(final, fill)
    except (
        OSError,
        SafetensorError,
    ) as e:  # a full disk (safetensors raises its own error), a quota
        raise CheckpointError(
            f"could not write checkpoint {str(final)!r} ({_why(e)}): free space in "
            f"--output-dir or point it elsewhere; the earlier checkpoints are intact"
        ) from None
    for stale in list_checkpoints(args.output_dir)[: -args.keep]:
        shutil.rmtree(stale, ignore_errors=True)
    return final


def list_checkpoints(output_dir):
    """Checkpoint directories in `output_dir`, oldest first (by step). Temporary ones and symlinks never appear."""
    root = Path(output_dir) / "checkpoints"
    if not root.is_dir() or root.is_symlink():
        return []
    found = []
    for p in root.iterdir():
        if (
            p.name.startswith("step-")
            and p.name[5:].isdigit()
            and p.is_dir()
            and not p.is_symlink()
        ):
            found.append((int(p.name[5:]), p))
    return [p for _, p in sorted(found)]


def remove_all(output_dir):
    """A fresh run (--resume none): remove the checkpoints of an earlier run in this output dir."""
    for old in list_checkpoints(output_dir):
        shutil.rmtree(old, ignore_errors=True)


def _valid_state(state):
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


def _read(path):
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
        state = _valid_state(json.loads((path / "state.json").read_text()))
    except (OSError, ValueError) as e:
        raise CheckpointError(
            f"checkpoint {str(path)!r} has no valid state.json ({e}): it is incomplete or "
            f"not a ddp-ladder checkpoint; delete it or resume from another"
        ) from None
    for name, digest in state["sha256"].items():
        file = path / name
        if not file.is_file() or _sha256(file) != digest:
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
            f"checkpoint {str(path)!r} is not a valid ddp-ladder checkpoint ({_why(e)}): "
            f"delete it or resume from another"
        ) from None
    return state, model_sd, optimizer_sd, groups, values


def _check_fits(path, model, tensors):
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
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


def _optimizer_sd(path, model, optimizer, tensors, groups, values):
    """The optimizer state dict keyed by parameter name, as set_optimizer_state_dict takes it, checked against
    this run's model and optimizer first."""
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    another = CheckpointError(
        f"checkpoint {str(path)!r} holds the state of another optimizer or model: "
        f"resume with the same --model and optimizer, or --resume none"
    )
    ok = (
        isinstance(groups, list)
        and len(groups) == len(_inner(optimizer).param_groups)
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


def load(path, model, optimizer=None, scaler=None, scheduler=None):
    """Load a checkpoint into the bare `model` (DDP's `.module`, or the FSDP-sharded model itself) and
    `optimizer`. Everything is verified before anything changes: on a CheckpointError both are untouched. This
    run's hyper-parameters (--lr, --momentum) win over the checkpoint's; returns state.json's fields plus
    "flags_kept", what was put back, for the resume message."""
    model = _bare(model)
    state, model_sd, tensors, groups, values = _read(path)
    _check_fits(path, model, model_sd)
    # every rank reads the whole file; a sharded (FSDP) model keeps its own shard of it
    options = StateDictOptions(full_state_dict=_sharded(model))
    if optimizer is None:
        set_model_state_dict(model, model_sd, options=options)
        return state
    optimizer_sd = _optimizer_sd(path, model, optimizer, tensors, groups, values)
    wanted = [{k: v for k, v in g.items() if k != "params"} for g in _inner(optimizer).param_groups]
    set_model_state_dict(model, model_sd, options=options)
    set_optimizer_state_dict(model, _inner(optimizer), optimizer_sd, options=options)
    state["flags_kept"] = _keep_flags(_inner(optimizer), wanted, scheduler is not None)
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    if scheduler is not None:
        _restore_schedule(scheduler, _inner(optimizer), state)
    return state


def _restore_schedule(scheduler, optimizer, state):
    """Put a LambdaLR back at the checkpoint's step, through its own load_state_dict; the rates are then
    recomputed from the closed form (--lr x factor(step)), so a changed --lr applies from the next step."""
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


def _keep_flags(optimizer, wanted, scheduled=False):
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


def restore(resume_from, output_dir, model, optimizer, scaler=None, scheduler=None, log=print):
    """Apply --resume: "none" starts fresh (process.prepare removed the old checkpoints), "auto" loads the
    newest valid checkpoint in `output_dir` (falling back past corrupt ones, and saying so), anything else is a
    checkpoint directory. Returns (epoch, step, samples_in_epoch) to continue from."""
    main = not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0
    if resume_from == "none":
        return 0, 0, 0
    candidates = list_checkpoints(output_dir)[::-1] if resume_from == "auto" else [resume_from]
    problems = []
    for path in candidates:
        try:
            state = load(path, model, optimizer, scaler, scheduler)
        except CheckpointError as e:
            if resume_from != "auto":
                raise
            problems.append(str(e))
            if main:
                log(f"warning: skipping {e}")
            continue
        kept = state["flags_kept"]
        if main:
            log(
                f"resuming from {path} (epoch {state['epoch']}, step {state['step']})"
                + (f"; this run's flags kept: {', '.join(kept)}" if kept else "")
            )
        return state["epoch"], state["step"], state["samples_in_epoch"]
    if problems:
        raise CheckpointError(
            f"no usable checkpoint in {str(output_dir)!r} (newest: {problems[0]})"
        )
    return 0, 0, 0


def resume(args, model, optimizer, scheduler, train_loader, scaler=None):
    """--resume for a rung: `restore` into the bare `model` and the rest, then move the loader to the next
    unseen batch. Returns (epoch, step, optimizer steps already taken in that epoch)."""
    from common import data

    epoch, step, samples = restore(
        args.resume, args.output_dir, model, optimizer, scaler, scheduler
    )
    epoch, done = data.start_at(train_loader, epoch, samples)
    return epoch, step, done


def save_model(path, model):
    """Write the bare model's weights (or a gathered state dict) to `path` atomically."""
    state = model if isinstance(model, dict) else gather(model)[0]
    try:
        atomic.write_file(
            path, lambda tmp: save_file(_cpu(state), tmp, metadata={"format": FORMAT})
        )
    except (OSError, SafetensorError) as e:
        raise CheckpointError(
            f"could not write {str(path)!r} ({_why(e)}): free space or pass another "
            f"--output-dir; the last checkpoint holds the same weights"
        ) from None


def load_model(path, model):
    """Load weights written by `save_model` (or a checkpoint's model.safetensors) into the bare `model`."""
    try:
        tensors = load_file(path)
    except Exception as e:  # safetensors raises several types for a file that is not safetensors
        raise CheckpointError(
            f"{str(path)!r} is not a readable safetensors file ({_why(e)})"
        ) from None
    model = _bare(model)
    _check_fits(path, model, tensors)
    set_model_state_dict(model, tensors, options=StateDictOptions(full_state_dict=_sharded(model)))
    return model
