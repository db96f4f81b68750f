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

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from common import UsageError, atomic, lineage, schedule, verify
from common.verify import FILES, FORMAT, CheckpointError  # noqa: F401  (checkpoint.CheckpointError)


def gather(model, optimizer=None):
    """The full model state dict (and the optimizer's, if given) as CPU tensors. Under FSDP every rank must call
    it (each holds a shard) and rank 0 alone gets the tensors, the others empty dicts."""
    model = verify.bare(model)
    options = StateDictOptions(full_state_dict=verify.sharded(model), cpu_offload=True)
    model_sd = get_model_state_dict(model, options=options)
    if optimizer is None:
        return model_sd, None
    return model_sd, get_optimizer_state_dict(model, verify.inner(optimizer), options=options)


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
    if getattr(args, "lineage", None) is None:
        args.lineage = lineage.new_id()

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
            "schedule": getattr(schedule.lambda_of(scheduler), "schedule", None),
            "run": args.lineage,
            "launch": lineage.launch_id(),
            "data": getattr(args, "data_sha256", None),
            "sha256": {name: verify.sha256(tmp / name) for name in FILES},
        }
        (tmp / "state.json").write_text(json.dumps(state, indent=2) + "\n")

    lineage.entries(args.output_dir)  # refuses a checkpoint tree that links elsewhere
    try:
        root.mkdir(parents=True, exist_ok=True)
        atomic.remove_stale(root)  # left by a save that was killed; never a valid checkpoint
        atomic.write_dir(final, fill)
    except (OSError, SafetensorError) as e:  # a full disk (safetensors: its own error), a quota
        raise CheckpointError(
            f"could not write checkpoint {str(final)!r} ({verify.why(e)}): free space in "
            f"--output-dir or point it elsewhere; the earlier checkpoints are intact"
        ) from None
    lineage.rotate(args.output_dir, args.lineage, step, args.keep)
    return final


def list_checkpoints(output_dir):
    """Checkpoint directories in `output_dir`, oldest first (by step); a symlink there is refused."""
    return [p for _, p in lineage.entries(output_dir)]


def load(path, model, optimizer=None, scaler=None, scheduler=None, data=None):
    """Load a checkpoint into the bare `model` (DDP's `.module`, or the FSDP-sharded model itself) and
    `optimizer`. Everything is verified before anything changes: on a CheckpointError both are untouched. This
    run's hyper-parameters (--lr, --momentum) win over the checkpoint's; returns state.json's fields plus
    "flags_kept", what was put back, for the resume message."""
    model = verify.bare(model)
    state, model_sd, tensors, groups, values = verify.read(path)
    verify.check_fits(path, model, model_sd)
    trained_on = state.get("data")
    if (
        data and trained_on and trained_on != data
    ):  # a UsageError: --resume auto never falls back past it
        raise UsageError(
            f"checkpoint {str(path)!r} was trained on other data (prepared data {trained_on[:12]}, now "
            f"{data[:12]}): --dataset, its files or the task's settings changed since; resume with the "
            f"data it trained on, or start afresh with --overwrite or another --output-dir"
        )
    # every rank reads the whole file; a sharded (FSDP) model keeps its own shard of it
    options = StateDictOptions(full_state_dict=verify.sharded(model))
    if optimizer is None:
        set_model_state_dict(model, model_sd, options=options)
        return state
    optimizer_sd = verify.optimizer_state(path, model, optimizer, tensors, groups, values)
    wanted = [
        {k: v for k, v in g.items() if k != "params"} for g in verify.inner(optimizer).param_groups
    ]
    set_model_state_dict(model, model_sd, options=options)
    set_optimizer_state_dict(model, verify.inner(optimizer), optimizer_sd, options=options)
    state["flags_kept"] = verify.keep_flags(verify.inner(optimizer), wanted, scheduler is not None)
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    state["schedule_notes"] = []
    if scheduler is not None:
        state["schedule_notes"] = schedule.restore_schedule(
            scheduler, verify.inner(optimizer), state
        )
    return state


def restore(
    resume_from, output_dir, model, optimizer, scaler=None, scheduler=None, log=print, data=None
):
    """Apply --resume (after lineage.plan): "none" starts fresh, "auto" loads the newest valid checkpoint in
    `output_dir` (falling back past corrupt ones, and saying so), anything else is a checkpoint directory.
    Returns (epoch, step, samples_in_epoch) to continue from, and the checkpoint's lineage (None: fresh)."""
    main = not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0
    if resume_from == "none":
        return 0, 0, 0, None
    candidates = list_checkpoints(output_dir)[::-1] if resume_from == "auto" else [resume_from]
    problems = []
    for path in candidates:
        try:
            state = load(path, model, optimizer, scaler, scheduler, data)
        except CheckpointError as e:
            if resume_from != "auto":
                raise
            problems.append(str(e))
            if main:
                log(f"warning: skipping {e}")
            continue
        if main:
            notes = state["flags_kept"] + state["schedule_notes"]
            log(
                f"resuming from {path} (epoch {state['epoch']}, step {state['step']})"
                + (f"; this run's flags kept: {'; '.join(notes)}" if notes else "")
            )
        return state["epoch"], state["step"], state["samples_in_epoch"], state.get("run")
    if problems:
        raise CheckpointError(
            f"no usable checkpoint in {str(output_dir)!r} (newest: {problems[0]})"
        )
    return 0, 0, 0, None


def resume(args, model, optimizer, scheduler, train_loader, scaler=None):
    """--resume for a rung: decide what it means in this output dir (common/lineage.py), `restore` into the
    bare `model` and the rest, then move the loader to the next unseen batch. Returns (epoch, step, optimizer
    steps already taken in that epoch)."""
    from common import data

    main = not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0
    resume_from = lineage.plan(args, main)
    lineage.started(args.output_dir)  # a torchrun restart of this worker's agent will know it
    sha = getattr(args, "data_sha256", None)
    epoch, step, samples, run = restore(
        resume_from, args.output_dir, model, optimizer, scaler, scheduler, data=sha
    )
    # this run's lineage: rotation deletes only its own, --resume auto continues only the dir's
    args.lineage = run if isinstance(run, str) else lineage.new_id()
    if main:
        lineage.claim(args.output_dir, args.lineage)
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
            f"could not write {str(path)!r} ({verify.why(e)}): free space or pass another "
            f"--output-dir; the last checkpoint holds the same weights"
        ) from None


def load_model(path, model):
    """Load weights written by `save_model` (or a checkpoint's model.safetensors) into the bare `model`."""
    try:
        tensors = load_file(path)
    except Exception as e:  # safetensors raises several types for a file that is not safetensors
        raise CheckpointError(
            f"{str(path)!r} is not a readable safetensors file ({verify.why(e)})"
        ) from None
    model = verify.bare(model)
    verify.check_fits(path, model, tensors)
    set_model_state_dict(
        model, tensors, options=StateDictOptions(full_state_dict=verify.sharded(model))
    )
    return model
