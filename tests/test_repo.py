"""The repository's promises: pins, no unpickling, the two README commands, CI, make help."""
import re
import subprocess

from conftest import ROOT


def test_torch_is_pinned_exactly():
    reqs = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in reqs
    for line in reqs:
        line = line.split("#")[0].strip()
        if line:
            assert "==" in line, f"unpinned requirement: {line}"


def test_no_pickle_or_torch_load_anywhere():
    """No pickle; torch.load only with weights_only=True (bench.py's comparison with torch.save/torch.load)."""
    offenders = []
    for path in list((ROOT / "scripts").rglob("*.py")):
        text = path.read_text()
        unsafe_load = [c for c in re.findall(r"torch\.load\([^\n]*", text) if "weights_only=True" not in c]
        if re.search(r"^\s*import pickle|pickle\.loads?\(", text, re.M) or unsafe_load:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make demo" in readme
    assert re.search(r"^make test$", ci, re.M)


def test_make_help_lists_every_target_with_a_line():
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    targets = re.findall(r"^([a-zA-Z0-9_-]+):.*##", (ROOT / "Makefile").read_text(), re.M)
    assert {"install", "demo", "test", "single-gpu", "dp"} <= set(targets)
    for target in targets:
        assert f"make {target}" in out


def test_rungs_share_one_cli():
    """Every rung parses its flags with common.cli (through cli.run) and never adds its own."""
    for rung in sorted((ROOT / "scripts").glob("[0-9]_*.py")):
        text = rung.read_text()
        assert "cli.run(main, __doc__)" in text or "cli.run(spawn, __doc__)" in text, rung.name
        assert "add_argument(" not in text and "argparse" not in text, rung.name
