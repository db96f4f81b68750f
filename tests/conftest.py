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


BIN = Path(sys.executable).parent  # the virtualenv's torchrun and accelerate
TORCHRUN = [str(BIN / "torchrun"), "--standalone", "--nproc_per_node=2"]


def free_port():
    from common import cli

    return cli.free_port()


def accelerate(*extra, config="cpu_2proc"):
    """`accelerate launch` with a saved config, on a free port; `extra` are more launch flags."""
    return [str(BIN / "accelerate"), "launch", "--config_file", str(ROOT / "accelerate_configs" / f"{config}.yaml"),
            "--main_process_port", str(free_port()), *extra]


def max_abs_diff(a, b):
    """max |a - b| over two state dicts with the same keys."""
    assert a.keys() == b.keys()
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)
