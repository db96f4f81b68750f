"""doctor as people install it (issue 33, item 3): `pip install .` into a fresh virtualenv gives a working
`ddp-doctor` command with libcst and without torch, and the pre-commit hook in .pre-commit-hooks.yaml runs on a
temporary git repository. Both build from a copy of just the files the package is made of, so that nothing is
written into the checkout (setuptools leaves build/ and *.egg-info beside its sources)."""

import os
import shutil
import subprocess
import sys

import doctor
import pytest

from conftest import ROOT

PACKAGE = [
    "pyproject.toml",
    ".pre-commit-hooks.yaml",
    "scripts/tools/doctor.py",
    "scripts/tools/doctor_fix.py",
    "scripts/tools/doctor_output.py",
]
BAD = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "sampler = DistributedSampler(ds)\n"
    "loader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
    "sampler.set_epoch(0)\n"
)
GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.com",
    "-c",
    "init.defaultBranch=main",
]


def sh(*cmd, cwd=None, env=None, check=True, timeout=600):
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert proc.returncode == 0, (cmd, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(a copy of the package's sources, committed as a git repository; a fresh virtualenv holding the
    package, installed with `pip install .`, and pre-commit)."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "ddp-ladder"
    for name in PACKAGE:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    sh(*GIT, "init", "-q", source)
    sh(*GIT, "add", "-A", cwd=source)
    sh(*GIT, "commit", "-qm", "package", cwd=source)
    venv = tmp / "venv"
    sh(
        sys.executable, "-m", "venv", venv
    )  # no --system-site-packages: nothing of the project's venv
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    sh(*pip, source, "pre-commit")
    return source, venv


@pytest.mark.launch
def test_pip_install_gives_a_ddp_doctor_command_that_needs_no_torch(installed, tmp_path):
    source, venv = installed
    python = venv / "bin" / "python"
    listed = sh(python, "-m", "pip", "list", "--format=freeze").stdout.lower()
    assert "ddp-ladder-doctor==" in listed and "libcst==" in listed
    assert "torch" not in listed  # not installed, not needed
    assert sh(python, "-c", "import torch", check=False).returncode == 1
    train = tmp_path / "train.py"
    train.write_text(BAD)
    command = venv / "bin" / "ddp-doctor"
    assert sh(command, "--version").stdout == f"ddp-doctor {doctor.__version__}\n"
    found = sh(command, train, check=False)
    assert found.returncode == 1 and found.stdout.startswith(f"{train}:3:10: DDL104 "), found
    fixed = sh(command, "--fix", train, check=False)  # --fix imports libcst: the one dependency
    assert fixed.returncode == 0 and fixed.stderr == f"fixed: {train}: 3 DDL104\n", fixed.stderr
    assert "shuffle" not in train.read_text()
    # the project's own fixtures, which import torch: doctor reads them without it
    fixtures = sh(command, "--preview", ROOT / "tests" / "doctor_fixtures", check=False)
    codes = {line.split()[1] for line in fixtures.stdout.splitlines()}
    assert fixtures.returncode == 1 and fixtures.stderr == "", fixtures.stderr
    assert {"DDL102", "DDL104", "DDL106", "DDL115", "DDL118"} <= codes, codes


@pytest.mark.launch
def test_the_pre_commit_hook_runs_on_a_temporary_git_repository(installed, tmp_path):
    source, venv = installed
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(BAD)
    (project / "clean.py").write_text("import torch\nprint(torch.ones(2))\n")
    sh(*GIT, "init", "-q", project)
    sh(*GIT, "add", "-A", cwd=project)
    env = {"PRE_COMMIT_HOME": str(tmp_path / "cache"), "PRE_COMMIT_COLOR": "never"}
    pre_commit = [venv / "bin" / "pre-commit", "try-repo", source, "ddp-doctor"]
    failed = sh(*pre_commit, "--all-files", cwd=project, env=env, check=False)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "ddp-doctor" in failed.stdout and "Failed" in failed.stdout
    assert "train.py:3:10: DDL104 " in failed.stdout and "clean.py" not in failed.stdout
    passed = sh(*pre_commit, "--files", "clean.py", cwd=project, env=env, check=False)
    assert passed.returncode == 0 and "Passed" in passed.stdout, passed.stdout + passed.stderr
