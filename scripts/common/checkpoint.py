"""Checkpoints that load in every rung, at every world size, and never execute code.

Layout of one checkpoint, `<output-dir>/checkpoints/step-00000440/`:
    model.safetensors      the bare model's weights (no `module.` / `_orig_mod.` prefixes)
    optimizer.safetensors  the optimizer's tensors; its hyper-parameters and scalars as JSON metadata
    state.json             step, epoch, position in the epoch (in samples), grad-scaler state, sha256 of both files
Only safetensors and JSON are read back: no pickle, no `torch.load`, so a checkpoint from an untrusted source
cannot run code. A checkpoint is written into a temporary directory, fsync'ed, and renamed into place; a crash or
SIGTERM at any moment leaves either the old set of checkpoints or the old set plus the new one, never a
half-written one that `--resume auto` could pick. state.json is written last and lists the files' hashes, so a
truncated or corrupted file is caught before a single weight is loaded.

What is not saved: random number generator states. The training loops draw no random numbers (no dropout, and
each epoch's order is a function of seed + epoch), so there is nothing to restore.
"""
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from common import UsageError

FORMAT = "ddp-ladder-checkpoint/2"  # /2: the position in the epoch is in samples, not batches
OLD_FORMAT = "ddp-ladder-checkpoint/1"
STEP_DIR = re.compile(r"^step-(\d+)$")


class CheckpointError(UsageError):
    """A checkpoint that cannot be used: missing, corrupt, truncated, or written for another model."""


def unwrap(model):
    """The bare model inside DataParallel / DistributedDataParallel (`.module`), torch.compile (`_orig_mod`),
    and any stack of them, so that saved keys never depend on how the model was wrapped."""
    while True:
        if isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), torch.nn.Module):
            model = model._orig_mod
        else:
            return model


def bare_key(key):
    """A tensor's name without the wrappers' prefixes (DDP / DataParallel `module.`, torch.compile `_orig_mod.`)."""
    for prefix in ("module.", "_orig_mod."):
        while key.startswith(prefix):
            key = key[len(prefix):]
    return key


def _cpu_tensors(state):
    """CPU, contiguous, unshared copies as safetensors needs them (tied weights share storage)."""
    out, seen = {}, set()
    for key, value in state.items():
        value = value.detach().to("cpu").contiguous()
        if value.data_ptr() in seen and value.numel():
            value = value.clone()
        seen.add(value.data_ptr())
        out[key] = value
    return out


def _why(error):
    """One line saying why a write failed: the OS's words, or the first line of safetensors'."""
    text = getattr(error, "strerror", None) or str(error).strip() or type(error).__name__
    return text.splitlines()[0][:160]


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _device(device):
    """safetensors takes "cpu" or "cuda:N"; accelerate's CPU device prints as "cpu:0"."""
    device = torch.device(device)
    return "cpu" if device.type == "cpu" else str(device)


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_tensors(model):
    """The bare model's tensors; `model` may also be a state dict already gathered (FSDP's full state dict)."""
    state = model if isinstance(model, dict) else unwrap(model).state_dict()
    return _cpu_tensors({bare_key(k): v for k, v in state.items()})


def _by_index(sd):
    """An optimizer state dict keyed by parameter index, as torch.optim writes it. The state-dict API of
    torch.distributed.checkpoint keys it by parameter name instead: the names' order in param_groups is the
    parameters' order, so a name becomes its position, and the file is the same whoever wrote it."""
    order = [p for group in sd["param_groups"] for p in group["params"]]
    if all(isinstance(p, int) for p in order):
        return sd
    index = {name: i for i, name in enumerate(order)}
    groups = [{**group, "params": [index[p] for p in group["params"]]} for group in sd["param_groups"]]
    return {"state": {index[name]: value for name, value in sd["state"].items()}, "param_groups": groups}


def _optimizer_tensors(optimizer):
    sd = _by_index(optimizer if isinstance(optimizer, dict) else optimizer.state_dict())
    tensors, scalars = {}, {}
    for index, state in sd["state"].items():
        for name, value in state.items():
            if torch.is_tensor(value):
                tensors[f"state.{index}.{name}"] = value
            else:
                scalars[f"{index}.{name}"] = value
    metadata = {"param_groups": json.dumps(sd["param_groups"]), "scalars": json.dumps(scalars)}
    return _cpu_tensors(tensors), metadata


def save(output_dir, model, optimizer, step, epoch, samples_in_epoch, keep=3, scaler=None, scheduler=None):
    """Write checkpoint `step` atomically and keep the newest `keep`. Call on the main process only. `model` and
    `optimizer` are the objects, or their full state dicts (gathered by every rank first, as FSDP needs). The
    fp16 GradScaler's and the LR scheduler's state dicts (numbers only) go into state.json.
    `samples_in_epoch` is the position in epoch `epoch`'s sample order: steps x global batch, so that a run at
    another batch size or world size can continue from it (data.start_at)."""
    root = Path(output_dir) / "checkpoints"
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob(".tmp-*"):  # left by a save that was killed; never a valid checkpoint
            shutil.rmtree(stale, ignore_errors=True)
        tmp.mkdir()
        save_file(model_tensors(model), tmp / "model.safetensors", metadata={"format": FORMAT})
        tensors, metadata = _optimizer_tensors(optimizer)
        save_file(tensors, tmp / "optimizer.safetensors", metadata=metadata)
        files = {name: _sha256(tmp / name) for name in ("model.safetensors", "optimizer.safetensors")}
        state = {"format": FORMAT, "step": step, "epoch": epoch, "samples_in_epoch": samples_in_epoch,
                 "scaler": scaler.state_dict() if scaler is not None and scaler.is_enabled() else None,
                 "scheduler": scheduler.state_dict() if scheduler is not None else None, "sha256": files}
        (tmp / "state.json").write_text(json.dumps(state, indent=2) + "\n")
        for name in (*files, "state.json"):
            _fsync(tmp / name)
        _fsync(tmp)
    except (OSError, SafetensorError) as e:  # a full disk (safetensors raises its own error), a quota, a file
        shutil.rmtree(tmp, ignore_errors=True)  # where the directory should be: the checkpoints there are intact
        raise CheckpointError(f"could not write checkpoint {str(final)!r} ({_why(e)}): free space in "
                              f"--output-dir or point it elsewhere; the earlier checkpoints are intact") from None
    old = None
    if final.exists():  # the same step saved again (a resumed run): move the old one aside first
        old = root / f".tmp-old-{final.name}-{os.getpid()}"
        os.rename(final, old)
    os.rename(tmp, final)  # the commit point
    _fsync(root)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    for stale in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)
    return final


def list_checkpoints(output_dir):
    """Checkpoint directories in `output_dir`, oldest first (by step). Temporary directories never appear."""
    root = Path(output_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := STEP_DIR.match(p.name)) and p.is_dir()]
    return [p for _, p in sorted(found)]


def _valid_state(state):
    """state.json's fields, checked for type before anything trusts them (a hand-edited or foreign file)."""
    if not isinstance(state, dict):
        raise ValueError(f"a JSON {type(state).__name__}, not an object")
    if state.get("format") == OLD_FORMAT and state.get("batch_in_epoch") == 0:  # an epoch boundary: the same
        state = {**state, "format": FORMAT, "samples_in_epoch": 0}
    if state.get("format") != FORMAT:
        raise ValueError(f"format {state.get('format')!r}, expected {FORMAT!r}" + (
            " (a mid-epoch checkpoint of an older version: resume from one taken at the end of an epoch)"
            if state.get("format") == OLD_FORMAT else ""))
    for key in ("step", "epoch", "samples_in_epoch"):
        if not isinstance(state.get(key), int) or isinstance(state.get(key), bool) or state[key] < 0:
            raise ValueError(f"{key!r} is {state.get(key)!r}, not a whole number")
    hashes = state.get("sha256")
    if not isinstance(hashes, dict) or set(hashes) != {"model.safetensors", "optimizer.safetensors"} or not all(
            isinstance(v, str) for v in hashes.values()):
        raise ValueError("'sha256' does not list the two files' hashes")
    return state


def _read(path, device):
    """Read and verify a checkpoint directory; returns (state, model tensors, optimizer tensors, metadata)."""
    path = Path(path)
    if path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} is a file: a ddp-ladder checkpoint is a directory "
                              f"(<output-dir>/checkpoints/step-N) of safetensors and JSON; pickle and torch.save "
                              f"files are never loaded, they can run code")
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist: pass a checkpoint directory "
                              f"(<output-dir>/checkpoints/step-N), --resume auto, or --resume none")
    if (path / "checkpoints").is_dir() and not (path / "state.json").exists():
        raise CheckpointError(f"{str(path)!r} is an output dir, not a checkpoint: pass --resume auto --output-dir "
                              f"{str(path)!r} (its newest valid checkpoint), or one of its checkpoints/step-N")
    try:
        state = _valid_state(json.loads((path / "state.json").read_text()))
    except (OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint {str(path)!r} has no valid state.json ({e}): it is incomplete or "
                              f"not a ddp-ladder checkpoint; delete it or resume from another") from None
    for name, digest in state["sha256"].items():
        file = path / name
        if not file.is_file() or _sha256(file) != digest:
            problem = "is missing" if not file.is_file() else "does not match its sha256 (corrupt or truncated)"
            raise CheckpointError(f"checkpoint file {str(file)!r} {problem}: delete {str(path)!r} or resume "
                                  f"from another checkpoint")
    try:
        model_sd = load_file(path / "model.safetensors", device=_device(device))
        opt_sd = load_file(path / "optimizer.safetensors", device=_device(device))
        with safe_open(path / "optimizer.safetensors", framework="pt") as f:
            metadata = f.metadata() or {}
    except Exception as e:  # safetensors raises several types for a file that is not safetensors
        raise CheckpointError(f"checkpoint {str(path)!r} is not valid safetensors ({e}): delete it or resume "
                              f"from another checkpoint") from None
    return state, model_sd, opt_sd, metadata


def _check_fits(path, model, tensors):
    expected = {k: tuple(v.shape) for k, v in unwrap(model).state_dict().items()}
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    missing = sorted(set(expected) - set(got))
    unexpected = sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    if missing or unexpected or wrong:
        details = "; ".join(part for part in (
            f"missing {', '.join(missing[:3])}" if missing else "",
            f"unexpected {', '.join(unexpected[:3])}" if unexpected else "",
            f"shape of {wrong[0]} is {got[wrong[0]]}, model has {expected[wrong[0]]}" if wrong else "") if part)
        raise CheckpointError(f"checkpoint {str(path)!r} was written for another model ({details}): use the "
                              f"--task/--model/--dataset it was trained with, or --resume none")


def load(path, model, optimizer=None, device="cpu", scaler=None, load_state=None, scheduler=None):
    """Load a checkpoint into `model` (wrapped or not) and `optimizer`, onto `device`. Everything is verified
    before anything is changed: on a CheckpointError the model and optimizer are untouched. `load_state(model_sd,
    optimizer_sd)`, if given, loads the two full state dicts instead (FSDP: each rank keeps its shard); the
    optimizer's then comes keyed by parameter name, as torch.distributed.checkpoint's set_* functions take it."""
    state, model_sd, opt_sd, metadata = _read(path, device)
    _check_fits(path, model, model_sd)
    if optimizer is not None:
        groups = json.loads(metadata.get("param_groups", "[]"))
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in optimizer.param_groups]:
            raise CheckpointError(f"checkpoint {str(path)!r} holds the state of another optimizer: "
                                  f"resume with the same model and optimizer, or --resume none")
        for saved, current in zip(groups, optimizer.param_groups):  # JSON has no tuples (AdamW's betas)
            saved.update({k: tuple(v) for k, v in saved.items() if isinstance(current.get(k), tuple)})
    per_param = {}
    for key, value in opt_sd.items():
        _, index, name = key.split(".", 2)
        per_param.setdefault(int(index), {})[name] = value
    for key, value in json.loads(metadata.get("scalars", "{}")).items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    wanted = [{k: v for k, v in g.items() if k != "params"} for g in getattr(optimizer, "param_groups", [])]
    if load_state is not None:
        names = [name for name, _ in unwrap(model).named_parameters()]  # the optimizer's order: model.parameters()
        load_state(model_sd, {"state": {names[i]: value for i, value in per_param.items()},
                              "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in groups]})
    else:
        unwrap(model).load_state_dict(model_sd)
        if optimizer is not None:
            optimizer.load_state_dict({"state": per_param, "param_groups": groups})
    if optimizer is not None:
        state["flags_kept"] = _keep_flags(optimizer, wanted, scheduler is not None)
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    if scheduler is not None:
        _restore_schedule(scheduler, optimizer, state)
    return state


def _restore_schedule(scheduler, optimizer, state):
    """Put a LambdaLR back at the checkpoint's step. Its learning rates are recomputed from the closed form
    (--lr x factor(step)), so a changed --lr on resume applies from the next step, as _keep_flags says."""
    saved = state.get("scheduler")  # LambdaLR's state_dict(): its step is all that the closed form needs
    step = saved["last_epoch"] if isinstance(saved, dict) and type(saved.get("last_epoch")) is int else state["step"]
    scheduler.last_epoch, scheduler._step_count = step, step + 1  # no scheduler saved: the optimizer's step
    scheduler.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
    for group, base, factor in zip(optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


def _keep_flags(optimizer, wanted, scheduled=False):
    """This run's hyper-parameters (--lr, --momentum, ...) win over the checkpoint's: load_state_dict brought back
    the old ones with the momentum buffers. Returns what was put back, for the resume message. Under a scheduler
    the current "lr" is the schedule's, so its base ("initial_lr", which the scheduler set from --lr) is compared."""
    kept = []
    for group, mine in zip(optimizer.param_groups, wanted):
        for key, value in mine.items():
            if scheduled and key == "lr":
                continue
            if key == "initial_lr" and key not in group:  # a checkpoint written without a scheduler
                group[key] = value
            if key in group and group[key] != value and isinstance(value, (int, float)):
                name = "lr" if key == "initial_lr" else key
                kept.append(f"{name} {value:g} (the checkpoint had {group[key]:g})")
                group[key] = value
    return sorted(set(kept))


def resume(resume_from, output_dir, model, optimizer, is_main=True, scaler=None, log=print, device=None,
           load_state=None, scheduler=None):
    """Apply --resume (onto `device`, by default the one the model's parameters are on): "none" starts fresh
    (the main process removes old checkpoints in `output_dir`, so they cannot be mistaken for this run's),
    "auto" loads the newest valid checkpoint there (falling back past corrupt ones, and saying so), anything else
    is a checkpoint directory to load.
    Returns (epoch, step, samples_in_epoch) to continue from (data.start_at turns the samples into batches)."""
    device = device or next(unwrap(model).parameters()).device
    if resume_from == "none":
        if is_main:
            for old in list_checkpoints(output_dir):
                shutil.rmtree(old, ignore_errors=True)
        return 0, 0, 0
    if resume_from == "auto":
        candidates = list_checkpoints(output_dir)[::-1]
        if not candidates:
            return 0, 0, 0
        problems = []
        for path in candidates:
            try:
                state = load(path, model, optimizer, device, scaler, load_state, scheduler)
            except CheckpointError as e:
                problems.append(str(e))
                if is_main:
                    log(f"warning: skipping {e}")
                continue
            if is_main:
                log(f"resuming from {path} (epoch {state['epoch']}, step {state['step']})" + _kept(state))
            return state["epoch"], state["step"], state["samples_in_epoch"]
        raise CheckpointError(f"no usable checkpoint in {str(output_dir)!r} (newest: {problems[0]})")
    state = load(resume_from, model, optimizer, device, scaler, load_state, scheduler)
    if is_main:
        log(f"resuming from {resume_from} (epoch {state['epoch']}, step {state['step']})" + _kept(state))
    return state["epoch"], state["step"], state["samples_in_epoch"]


def _kept(state):
    return f"; this run's flags kept: {', '.join(state['flags_kept'])}" if state.get("flags_kept") else ""


def save_model(path, model):
    """Write the bare model's weights to `path` (e.g. <output-dir>/model.safetensors) atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        save_file(model_tensors(model), tmp, metadata={"format": FORMAT})
        _fsync(tmp)
        os.replace(tmp, path)
    except (OSError, SafetensorError) as e:
        tmp.unlink(missing_ok=True)
        raise CheckpointError(f"could not write {str(path)!r} ({_why(e)}): free space or pass another "
                              f"--output-dir; the last checkpoint holds the same weights") from None


def load_model(path, model, device="cpu"):
    """Load weights written by `save_model` (or a checkpoint's model.safetensors) into `model`."""
    try:
        tensors = load_file(path, device=_device(device))
    except Exception as e:  # safetensors raises several types for a file that is not safetensors
        raise CheckpointError(f"{str(path)!r} is not a readable safetensors file ({e})") from None
    _check_fits(path, model, tensors)
    unwrap(model).load_state_dict(tensors)
    return model
