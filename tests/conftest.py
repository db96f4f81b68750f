import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))

# Offline, always: a test that needs the network fails instead of quietly downloading.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
os.environ.update(OFFLINE)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """One dataset cache for the whole session: the built-in tasks are prepared once."""
    return tmp_path_factory.mktemp("data-cache")


def run_script(script, *args, env=None, timeout=300, check=True, launcher=None):
    """Run a rung as a user would (`python scripts/<rung>.py ...` or under a launcher); returns the process."""
    cmd = [*(launcher or [sys.executable]), str(SCRIPTS / script), *map(str, args)]
    full_env = {**os.environ, **OFFLINE, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def args_for(data_dir, **overrides):
    """A namespace as cli.parse would give it, for calling scripts/common directly."""
    from common import cli

    args = cli.parse(argv=["--data-dir", str(data_dir)])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args
