import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path[:0] = [
    str(SCRIPTS),
    str(SCRIPTS / "tools"),
]  # common/, and the tools (ladder, make_guides, ...)

from ladder import (  # noqa: E402,F401  (the launch commands: one copy, shared)
    OFFLINE,
    command,
    max_abs_diff,
)

# offline, always: a test that needs the network fails instead of downloading
os.environ.update(OFFLINE)


@pytest.fixture(scope="session", autouse=True)
def own_temp_dir(tmp_path_factory):
    """The launched processes' temp files go under the session's own folder, not the machine's: torchrun's agent
    makes a `torchelastic_*` folder in the temp dir at every launch and never removes it (measured: one a launch,
    85 left in /tmp by one clean-clone CI run and its bench)."""
    folder = tmp_path_factory.mktemp("tmp")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """One dataset cache for the whole session: the built-in tasks are prepared once."""
    return tmp_path_factory.mktemp("data-cache")


def run_script(script, *args, env=None, timeout=300, check=True, launcher=None):
    """Run a rung as a user would (`python scripts/<rung>.py ...` or under a launcher); returns the process."""
    cmd = [*(launcher or [sys.executable]), str(SCRIPTS / script), *map(str, args)]
    full_env = {**os.environ, **OFFLINE, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run(
        cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


def run_rung(rung, nproc, *args, launcher_flags=(), **kw):
    """Run rung `rung` on `nproc` processes with the command its docstring gives (tools/ladder.py)."""
    cmd = command(rung, nproc, launcher_flags)
    # the script; rung 3's --nproc follows it
    at = next(i for i, part in enumerate(cmd) if part.endswith(".py"))
    return run_script(Path(cmd[at]).name, *cmd[at + 1 :], *args, launcher=cmd[:at], **kw)


def args_for(data_dir, **overrides):
    """A namespace as flags.parse would give it, for calling scripts/common directly."""
    from common import flags

    args = flags.parse(argv=["--data-dir", str(data_dir)])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


BIN = Path(sys.executable).parent  # the virtualenv's torchrun and accelerate
TORCHRUN = command(4, nproc=2)[:-1]  # the launcher part of a rung's command


def free_port():
    from common import process

    return process.free_port()


def accelerate(*extra, config="cpu_2proc", nproc=2):
    """`accelerate launch` with a saved config, on a free port; `extra` are more launch flags."""
    return command(6, nproc, launcher_flags=extra, config=config)[:-1]


@pytest.fixture(scope="session")
def reference(tmp_path_factory, data_dir):
    """Uninterrupted runs of test_reliability.TASK (cancer, 2 epochs, global batch 32) that faulted, resumed and
    accumulated runs must end on: rung 1, and rung 4 under torchrun."""
    from test_reliability import TASK, metrics_of, run, weights

    root = tmp_path_factory.mktemp("reference")
    run(1, root / "1", data_dir, *TASK)
    run(4, root / "4", data_dir, *TASK)
    return {1: weights(root / "1"), 4: weights(root / "4"), "metrics": metrics_of(root / "1")}


def save_checkpoint(
    output_dir,
    model,
    opt,
    step,
    epoch,
    samples_in_epoch,
    keep=3,
    scaler=None,
    scheduler=None,
    lineage="one-run",
):
    """checkpoint.save as a rung calls it, with what it reads from args (--output-dir, --keep, and the run's
    lineage, which checkpoint.resume sets: rotation deletes only this lineage's checkpoints)."""
    import argparse

    from common import checkpoint

    args = argparse.Namespace(output_dir=str(output_dir), keep=keep, lineage=lineage)
    return checkpoint.save(args, model, opt, scheduler, step, epoch, samples_in_epoch, scaler)


def pytest_collection_modifyitems(config, items):
    """Under `pytest -n 2 --dist loadgroup` (make test's launch group), tests that share a session's expensive
    set-up run on one worker, so it is made once: the Slurm cluster's tests, and those reading the reference
    runs. Every other test goes to whichever worker is free."""
    for item in items:
        if item.module.__name__ == "test_slurm":
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif "reference" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("reference"))
