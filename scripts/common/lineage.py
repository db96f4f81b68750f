"""Which checkpoints in an output dir belong to this run, so that none is continued or deleted by accident.

Every checkpoint's state.json names its lineage ("run": an id made when a run starts fresh, carried on by each
resume) and the torchrun launch that wrote it ("launch": TORCHELASTIC_RUN_ID). From those, before training:
- a fresh run into an output dir that holds checkpoints refuses in one line naming --resume auto and
  --overwrite, unless they are this torchrun launch's own and its agent restarted the workers (`restarted`: a
  new torchrun with the same --rdzv-id is a new run, and its --overwrite is honoured);
- a rewind (--resume <a checkpoint>) refuses while checkpoints at or past its step (read from its state.json,
  not from its name), another run's checkpoints, or a later best model sit in the output dir, since --resume
  auto would later continue those (or best/ keep them) instead; --overwrite deletes them;
- the output dir names its run (run.json): --resume auto continues that run's checkpoints, and refuses in one
  line when another run's checkpoint was copied in; a fresh run refuses a dir holding a best model too;
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


def agent():
    """torchrun's agent that started this worker (its parent process), as "<pid>.<start time>", so that a pid the
    OS reuses is another agent; None where /proc cannot tell."""
    try:
        stat = Path(f"/proc/{os.getppid()}/stat").read_text()
        return f"{os.getppid()}.{stat.rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return None


def _marker(output_dir):
    launch, me = launch_id(), agent()
    if launch is None or me is None:
        return None
    return Path(output_dir) / ".launches" / launch / f"{me}-{os.environ.get('LOCAL_RANK', '0')}"


def restarted(output_dir):
    """Whether this torchrun launch's agent has started a worker in this output dir before: torchrun restarted
    its workers (on a multi-node restart the healthy nodes' agents restart theirs with
    TORCHELASTIC_RESTART_COUNT=0, so the count cannot tell), rather than a new torchrun run again with the same
    --rdzv-id. Each worker judges alone, from a marker of its own that `started` leaves (<output-dir>/.launches/
    <launch>/<agent>-<local rank>), so every worker of a launch decides the same without a collective."""
    if launch_id() is None:
        return False
    marker = _marker(output_dir)
    return (
        marker is None or marker.exists() or marker.is_symlink()
    )  # no /proc: a restart, as before


def started(output_dir):
    """Leave this worker's marker, once its run has taken the output dir (created exclusively: never through a
    planted link)."""
    marker = _marker(output_dir)
    if marker is not None and not (marker.exists() or marker.is_symlink()):
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError:
            pass  # a marker left out makes a later restart of this agent refuse in one line, not lose work


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
    return read_field(Path(path) / "state.json", "run"), read_field(
        Path(path) / "state.json", "launch"
    )


def read_field(path, key):
    try:
        value = json.loads(Path(path).read_text())
        return value.get(key) if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def dir_owner(output_dir):
    """The lineage the output dir belongs to (<output-dir>/run.json, written when a run starts or resumes), or
    None in a dir no run has claimed (or one written before run.json existed)."""
    return read_field(Path(output_dir) / "run.json", "run")


def claim(output_dir, run):
    """Record that `run` owns the output dir: --resume auto continues its checkpoints and no other's."""
    from common import atomic

    path = Path(output_dir) / "run.json"
    if read_field(path, "run") != run:
        atomic.write_text(path, json.dumps({"run": run}) + "\n")


def plan(args, main):
    """What --resume means in this output dir (see the module's docstring): "none", "auto" or a checkpoint path.
    With --overwrite the main process deletes what stands in the way first: checkpoints, and best/ (the
    deleted run's best model, and the bar a new run would have to beat)."""
    found = entries(args.output_dir)
    launch = launch_id()
    best = Path(args.output_dir) / "best"
    best_launch = read_field(best / "eval.json", "launch") if best.is_dir() else None
    if args.resume == "none":
        again = restarted(args.output_dir)  # torchrun restarted this launch's workers
        if again and any(owner(p)[1] == launch for _, p in found):
            return "auto"  # continue the launch's own checkpoints
        mine = again and best_launch == launch  # best/ of an earlier try of this launch
        if not found and (not best.is_dir() or mine):
            _delete([best] if best.is_dir() else [], main)
            return "none"
        if not args.overwrite:
            what = f"checkpoints of an earlier run (newest {found[-1][1].name})" if found else ""
            raise UsageError(
                f"--output-dir {str(args.output_dir)!r} holds "
                f"{what or 'a best model (best/) of an earlier run'}: pass "
                f"--resume auto to continue it, --overwrite to delete them and start afresh, or "
                f"another --output-dir"
            )
        _delete([p for _, p in found] + ([best] if best.is_dir() else []), main)
        return "none"
    if args.resume == "auto":
        run = dir_owner(args.output_dir)
        foreign = [p for _, p in found if run is not None and owner(p)[0] != run]
        if foreign:
            raise UsageError(
                f"{str(foreign[-1])!r} belongs to another run (run {owner(foreign[-1])[0]}), not to "
                f"the one --output-dir holds (run {run}): move it out, pass it to --resume to continue "
                f"it elsewhere, or start afresh with --overwrite"
            )
        return "auto"
    target = Path(args.resume)
    at = read_field(
        target / "state.json", "step"
    )  # the checkpoint's own step, never its directory's name
    if not isinstance(at, int):
        return args.resume  # not a readable checkpoint: restore() says what is wrong with it
    run = owner(target)[0]
    stale = [
        p
        for step, p in found
        if p.resolve() != target.resolve() and (step >= at or owner(p)[0] != run)
    ]
    best_step = read_field(best / "eval.json", "step") if best.is_dir() else None
    if best.is_dir() and (read_field(best / "eval.json", "run") != run or (best_step or 0) > at):
        stale.append(best)  # a later best model, or another run's: the rewound run never beat it
    if stale and not args.overwrite:
        raise UsageError(
            f"--resume {str(args.resume)!r} rewinds to step {at}, but --output-dir holds "
            f"{stale[-1].name} of a later step or another run, which --resume auto would continue "
            f"(or best/ would keep) instead: pass --overwrite to delete them, or write the rewound "
            f"run to another --output-dir"
        )
    _delete(stale, main)
    return args.resume


def _delete(paths, main):
    if main:
        for p in paths:
            shutil.rmtree(p, ignore_errors=True)  # real directories (entries refuses links)


def rotate(output_dir, lineage, step, keep):
    """Delete this lineage's checkpoints up to `step` beyond the newest `keep`; nothing else."""
    mine = [p for at, p in entries(output_dir) if at <= step and owner(p)[0] == lineage]
    for stale in mine[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)
