"""The learning rate of every optimizer step, for torch's LambdaLR.

The formulas are those of Hugging Face transformers' get_constant_schedule_with_warmup and
get_cosine_schedule_with_warmup: a linear warm-up from 0, then constant or half a cosine down to 0 at the last step.
A function of the optimizer step alone, so a resumed run (which restores the scheduler's step from its checkpoint)
continues on exactly the uninterrupted run's rates.
"""

import math

from common.errors import UsageError


def lr_lambda(args, steps_per_epoch):
    """The factor on --lr at optimizer step `step` (counted from 0), for the run the flags describe: its length is
    --max-steps or --epochs x `steps_per_epoch`, whichever ends first."""
    kind, warmup = args.lr_schedule, args.warmup_steps
    total = min(args.max_steps, args.epochs * steps_per_epoch)
    if warmup and warmup >= total:
        raise UsageError(
            f"--warmup-steps {warmup} is not shorter than the run ({total} optimizer steps): the "
            f"rate would never reach --lr; pass fewer warm-up steps, or more --epochs"
        )

    def factor(step):
        if step < warmup:
            return step / warmup
        if kind == "constant":
            return 1.0
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    # what a checkpoint records, so that a resume with other schedule flags can say what changes
    factor.schedule = {"lr_schedule": kind, "warmup_steps": warmup, "total_steps": total}
    return factor


def lambda_of(scheduler):
    """The LambdaLR's factor function (common/schedule.py), inside accelerate's AcceleratedScheduler too."""
    scheduler = getattr(scheduler, "scheduler", scheduler)
    return scheduler.lr_lambdas[0] if hasattr(scheduler, "lr_lambdas") else None


SCHEDULE_FLAGS = {
    "lr_schedule": "--lr-schedule",
    "warmup_steps": "--warmup-steps",
    "total_steps": "run length (--epochs/--max-steps)",
}


def restore_schedule(scheduler, optimizer, state):
    """Put a LambdaLR back at the checkpoint's step, through its own load_state_dict; the rates are then
    recomputed from the closed form (--lr x factor(step)), so a changed --lr or schedule flag applies from the
    next step. Returns what changed against the checkpoint's schedule, and the rate's jump, for the log."""
    scheduler = getattr(
        scheduler, "scheduler", scheduler
    )  # accelerate's AcceleratedScheduler holds it
    saved, step = state.get("scheduler") or {}, state["step"]
    base = [group["initial_lr"] for group in optimizer.param_groups]
    for group, lr, factor in zip(optimizer.param_groups, base, scheduler.lr_lambdas):
        group["lr"] = lr * factor(step)
    lrs = [group["lr"] for group in optimizer.param_groups]
    new = {"last_epoch": step, "_step_count": step + 1, "base_lrs": base, "_last_lr": lrs}
    scheduler.load_state_dict({**scheduler.state_dict(), **new})
    old, mine = state.get("schedule"), getattr(lambda_of(scheduler), "schedule", None)
    if not (isinstance(old, dict) and isinstance(mine, dict)):
        return []
    notes = [
        f"{flag} {mine[key]} (the checkpoint had {old.get(key)})"
        for key, flag in SCHEDULE_FLAGS.items()
        if old.get(key) != mine[key]
    ]
    before = (saved.get("_last_lr") or [None])[0]
    if notes and isinstance(before, (int, float)) and before != lrs[0]:
        notes.append(f"the rate at step {step} goes {before:.4g} -> {lrs[0]:.4g}")
    return notes
