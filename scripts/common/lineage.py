"""Which checkpoints in an output dir belong to this run, so that none is continued or deleted by accident.

Every checkpoint's state.json names its lineage ("run": an id made when a run starts fresh, carried on by each
resume) and the torchrun launch that wrote it ("launch": TORCHELASTIC_RUN_ID). From those, before training:
- a fresh run into an output dir that holds checkpoints refuses in one line naming --resume auto and
  --overwrite, unless they are this torchrun launch's own: torchrun restarted the workers (on a multi-node job
  the healthy nodes restart theirs with TORCHELASTIC_RESTART_COUNT=0, so the count alone cannot tell);
- a rewind (--resume <a checkpoint>) refuses while checkpoints at or past its step sit in the output dir, since
  --resume auto would later continue those instead; --overwrite deletes them;
- rotation (--keep) counts and deletes only this lineage's checkpoints up to the step just written: a corrupt,
  foreign or far-future checkpoint is never counted, and the one a run resumed from stays until newer ones do.
A symlink in the checkpoint tree is refused, never followed: deleting through it would delete another run's work.
"""

import json
import os
import shutil
import uuid
from pathlib import Path

from common.errors import UsageError


def launch_id():
    """torchrun's id of this launch (the same across its restarts), or None outside torchrun. torchrun's default
    without --standalone or --rdzv-id is the literal "none", shared by every launch: not an id."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "")
    return None if run_id in ("", "none") else run_id


def new_id():
    return uuid.uuid4().hex


def entries(output_dir):
    """[(step, directory)] of `<output-dir>/checkpoints/step-N`, oldest first; a symlink there is refused."""
    root = Path(output_dir) / "checkpoints"
    if root.is_symlink():
        raise UsageError(
            f"{str(root)!r} is a symlink (to {os.readlink(root)!r}): a run writes and deletes "
            f"checkpoints there, so it must be a real directory; remove the link"
        )
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        if not (p.name.startswith("step-") and p.name[5:].isdigit()):
            continue  # temporary directories of an unfinished save, other files
        if p.is_symlink():
            raise UsageError(
                f"checkpoint {str(p)!r} is a symlink (to {os.readlink(p)!r}): a run would continue "
                f"or delete another run's checkpoint through it; remove the link"
            )
        if p.is_dir():
            found.append((int(p.name[5:]), p))
    return sorted(found)


def owner(path):
    """(lineage, launch) from a checkpoint's state.json, or (None, None) when it cannot be read."""
    try:
        state = json.loads((Path(path) / "state.json").read_text())
        return (state.get("run"), state.get("launch")) if isinstance(state, dict) else (None, None)
    except (OSError, ValueError):
        return None, None


def plan(args, main):
    """What --resume means in this output dir (see the module's docstring): "none", "auto" or a checkpoint path.
    With --overwrite the main process deletes what stands in the way first."""
    found = entries(args.output_dir)
    launch = launch_id()
    if args.resume == "none":
        if not found:
            return "none"
        if launch is not None and any(owner(p)[1] == launch for _, p in found):
            return "auto"  # torchrun restarted this launch's workers: continue its own checkpoints
        if not args.overwrite:
            raise UsageError(
                f"--output-dir {str(args.output_dir)!r} holds checkpoints of an earlier run (newest "
                f"{found[-1][1].name}): pass --resume auto to continue it, --overwrite to delete them "
                f"and start afresh, or another --output-dir"
            )
        stale = [p for _, p in found]
    elif args.resume == "auto":
        return "auto"
    else:
        target = Path(args.resume)
        name = target.name
        at = int(name[5:]) if name.startswith("step-") and name[5:].isdigit() else -1
        later = [p for step, p in found if step >= at] if at >= 0 else []
        stale = [p for p in later if p.resolve() != target.resolve()]
        if stale and not args.overwrite:
            raise UsageError(
                f"--resume {str(args.resume)!r} rewinds, but --output-dir holds later checkpoints "
                f"(newest {stale[-1].name}) that --resume auto would continue instead: pass "
                f"--overwrite to delete them, or write the rewound run to another --output-dir"
            )
    if main:
        for p in stale:
            shutil.rmtree(p, ignore_errors=True)  # a real directory (entries refuses links)
    return args.resume


def rotate(output_dir, lineage, step, keep):
    """Delete this lineage's checkpoints up to `step` beyond the newest `keep`; nothing else."""
    mine = [p for at, p in entries(output_dir) if at <= step and owner(p)[0] == lineage]
    for stale in mine[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)
