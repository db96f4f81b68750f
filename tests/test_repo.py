"""The repository's promises: pins, no unpickling, the two README commands, CI, make help."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
        unsafe_load = [
            c for c in re.findall(r"torch\.load\([^\n]*", text) if "weights_only=True" not in c
        ]
        if re.search(r"^\s*import pickle|pickle\.loads?\(", text, re.M) or unsafe_load:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make demo" in readme
    assert re.search(r"^make test$", ci, re.M)


@pytest.mark.launch
def test_make_help_lists_every_target_with_a_line():
    out = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    targets = re.findall(r"^([a-zA-Z0-9_-]+):.*##", (ROOT / "Makefile").read_text(), re.M)
    assert {"install", "demo", "test", "single-gpu", "dp"} <= set(targets)
    for target in targets:
        assert f"make {target}" in out


def test_rungs_share_one_cli():
    """Every rung parses its flags with common/flags.py (through entry.run) and never adds its own."""
    for rung in sorted((ROOT / "scripts").glob("[0-9]_*.py")):
        text = rung.read_text()
        assert re.search(r"entry\.run\((main|spawn), __doc__(, uses=\(.*\))?\)", text), rung.name
        assert "add_argument(" not in text and "argparse" not in text, rung.name


def _imports(paths):
    """Top-level modules imported by `paths` that are installed distributions (not the standard library)."""
    import ast
    from importlib.metadata import packages_distributions

    dists, found = packages_distributions(), {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else (
                    [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    else []
                )
            )
            for name in names:
                top = name.split(".")[0]
                if top in dists:
                    found.setdefault(
                        re.sub(r"[-_.]+", "-", dists[top][0]).lower(), path.relative_to(ROOT)
                    )
    return found


@pytest.mark.launch
def test_requirements_pin_every_import_and_lock_the_virtualenv():
    """Runtime and test requirements are split; every package a script imports directly is a pin of its own in
    requirements.txt (with torch.utils.tensorboard's tensorboard), every test-only import one in
    tests/requirements.txt; and both files together pin exactly what the virtualenv holds (the lock)."""
    import sys

    def direct(path):
        head = path.read_text().split("# The rest of")[0]
        return {
            re.sub(r"[-_.]+", "-", m).lower()
            for m in re.findall(r"^([A-Za-z0-9_.\-]+)==", head, re.M)
        }

    runtime, tests = direct(ROOT / "requirements.txt"), direct(ROOT / "tests" / "requirements.txt")
    tools = ROOT / "scripts" / "tools"  # make bench (its peers too) and make lock use the test pins
    dev_tools = [tools / name for name in ("bench.py", "bench_report.py", "plots.py", "lock.py")]
    dev_tools += list((tools / "peers").glob("*.py"))
    used = _imports(p for p in (ROOT / "scripts").rglob("*.py") if p not in dev_tools)
    assert set(used) <= runtime, {k: str(v) for k, v in used.items() if k not in runtime}
    assert "tensorboard" in runtime and "pytest" in tests and "pytest" not in runtime
    dev = [*(ROOT / "tests").rglob("*.py"), *dev_tools]
    test_only = {k: v for k, v in _imports(dev).items() if k not in runtime}
    assert set(test_only) <= tests, test_only
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "tools" / "lock.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_no_private_attribute_of_another_library_is_read():
    """scripts/ uses the public APIs of torch, datasets and accelerate: no `obj._name` (nor getattr(obj,
    "_name")) but on `self`. A private attribute changes without notice between releases."""
    import ast

    found = []
    for path in sorted((ROOT / "scripts").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            name = None
            owner = node.value.id if isinstance(getattr(node, "value", None), ast.Name) else None
            # `self`'s own, and os._exit: public, documented; the underscore means "no clean-up"
            if (
                isinstance(node, ast.Attribute)
                and owner != "self"
                and (owner, node.attr) != ("os", "_exit")
            ):
                name = node.attr
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "getattr",
                "hasattr",
            ):
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    name = str(node.args[1].value)
            if name and name.startswith("_") and not name.startswith("__"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not found, found


# What only a rung may do (issue 32): a collective, a rank or world-size query, a process group's life. In
# common/ the checkpoint module alone (FSDP's gather: every rank joins it) calls torch.distributed this way.
DISTRIBUTED = {
    "all_reduce", "all_gather", "all_gather_object", "all_gather_into_tensor", "broadcast",
    "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor", "barrier",
    "gather", "gather_object", "scatter", "send", "recv", "all_to_all", "monitored_barrier",
    "get_rank", "get_world_size", "get_node_local_rank", "init_process_group",
    "destroy_process_group", "new_group", "full_tensor", "redistribute",
}  # fmt: skip


def _distributed_uses(path):
    """`dist.all_reduce(...)`, `torch.distributed.get_rank()`, `x.full_tensor()`... in `path`: the calls whose
    name is one of DISTRIBUTED and that are made on torch.distributed or on a tensor (not a module of common/,
    whose own `checkpoint.gather` is a name, not a collective), and every write to os.environ."""
    import ast

    tree, found = ast.parse(path.read_text()), []
    dist_names = {"dist", "torch.distributed"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "torch.distributed":
            found += [f"from torch.distributed import {a.name}" for a in node.names]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = ast.unparse(node.func.value), node.func.attr
            environ = owner in ("os.environ", "environ", "env") and name in (
                "setdefault", "update", "pop", "clear"
            )  # fmt: skip
            if environ or name in ("putenv", "unsetenv"):
                found.append(f"{path.name}:{node.lineno}: {owner}.{name}")
            elif name in DISTRIBUTED and (owner in dist_names or name == "full_tensor"):
                found.append(f"{path.name}:{node.lineno}: {owner}.{name}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and ast.unparse(t.value) in ("os.environ", "env"):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(t)} written")
    return found


def test_common_knows_nothing_of_ranks_and_never_writes_the_environment():
    """Issue 32: every collective a run takes is a line in a rung; common/ takes rank, world size and "is main"
    as arguments. The checkpoint module alone calls torch.distributed (FSDP's gather, the rank that logs a
    resume), and no module writes os.environ (it was: ACCELERATE_USE_CPU, OMP_NUM_THREADS, TF32, evaluate's
    offline switch). The test is proven on a copy that breaks each rule."""
    found = {}
    for path in sorted((ROOT / "scripts" / "common").glob("*.py")):
        if path.name != "checkpoint.py":
            found[path.name] = _distributed_uses(path)
    assert not any(found.values()), found
    bad = ROOT / "scripts" / "common" / "metrics.py"
    planted = bad.read_text() + (
        "\nimport torch.distributed as dist\n\ndef f(t):\n    dist.all_reduce(t)\n"
        "    os.environ['X'] = '1'\n    t.full_tensor()\n    return dist.get_rank()\n"
    )
    copy = Path(os.environ.get("TMPDIR", "/tmp")) / f"planted-{os.getpid()}.py"
    try:
        copy.write_text(planted)
        assert len(_distributed_uses(copy)) == 4, _distributed_uses(copy)
    finally:
        copy.unlink()
    # the rungs do call them (the lesson): rung 3 takes every kind of collective the run needs
    rung3 = "\n".join(_distributed_uses(ROOT / "scripts" / "3_ddp_spawn.py"))
    for name in ("all_reduce", "all_gather_object", "barrier", "destroy_process_group"):
        assert f"dist.{name}" in rung3, rung3


def test_common_imports_in_no_circle():
    """Issue 32: errors -> flags -> errors and process -> lock -> errors were circles. The graph of imports
    between modules of common/ (at the top or inside functions) has no cycle."""
    import ast

    graph = {}
    for path in sorted((ROOT / "scripts" / "common").glob("*.py")):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("common")
            ):
                parts = node.module.split(".")
                if len(parts) > 1:
                    deps.add(parts[1])
                else:
                    deps |= {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[1] for a in node.names if a.name.startswith("common.")}
        graph[path.stem] = deps - {path.stem}
    graph["__init__"] = (
        set()
    )  # the package's own file: imported before every module, imports errors only

    def cycle(node, stack):
        if node in stack:
            return stack[stack.index(node) :] + [node]
        for dep in sorted(graph.get(node, ())):
            found = cycle(dep, stack + [node])
            if found:
                return found
        return None

    for module in sorted(graph):
        assert cycle(module, []) is None, " -> ".join(cycle(module, []))


def test_common_is_rooms_of_one_purpose_each_within_250_lines():
    for path in sorted((ROOT / "scripts" / "common").glob("*.py")):
        lines = len(path.read_text().splitlines())
        assert lines <= 250, f"{path.name} has {lines} lines"
        assert path.name != "cli.py", "flags, process set-up and errors have rooms of their own"


@pytest.mark.launch
def test_lint_is_clean():
    """`make lint`: ruff's formatter (line length 100) and its lint rules, as pyproject.toml configures them."""
    ruff = [sys.executable, "-m", "ruff"]
    fmt = subprocess.run(
        [*ruff, "format", "--check", "scripts", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run(
        [*ruff, "check", "scripts", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_the_cuda_constraints_pin_only_what_the_cuda_build_adds():
    """A GPU user's lock (issue 25): scripts/tools/constraints-cuda.txt pins the nvidia/cuda/triton wheels that
    torch==2.13.0 pulls from PyPI on Linux (lock.py --cuda writes it from pip's dry run), and nothing that
    requirements.txt pins already, so `pip install -r requirements.txt -c ...` cannot conflict."""
    import lock

    _, direct, rest = lock.read(lock.FILES[0])
    pins = [
        line.split("==")
        for line in (ROOT / "scripts" / "tools" / "constraints-cuda.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    names = {lock.canon(name) for name, _ in pins}
    assert all(len(pin) == 2 and pin[1] for pin in pins) and len(pins) >= 15
    assert {"nvidia-nccl-cu13", "nvidia-cudnn-cu13", "triton"} <= names
    assert not names & ({**direct, **rest}.keys())
    assert direct["torch"] == "2.13.0"


def test_the_files_to_copy_import_nothing_of_the_project():
    """Issue 32: the README's first screen offers guides/examples/ as the files to copy; each must be whole.
    None imports a module of this repository (common, the tools, another example), nor reads a path of it;
    the README's table names every torchrun/accelerate example and its plain twin."""
    import ast

    readme = (ROOT / "README.md").read_text()
    first_screen = readme[: readme.index("## Two commands")]
    every = sorted((ROOT / "guides" / "examples").glob("*.py"))
    # the ones offered to copy (digits_accelerate_resume.py shows accelerate's save_state on top of
    # digits_accelerate.py, which it imports, and is not offered alone)
    examples = [p for p in every if p.name in first_screen]
    assert len(examples) == 6, [p.name for p in examples]
    ours = {p.stem for p in (ROOT / "scripts" / "common").glob("*.py")} | {"common", "conftest"}
    ours |= {p.stem for p in (ROOT / "scripts" / "tools").glob("*.py")} | {p.stem for p in every}
    for path in examples:
        tree = ast.parse(path.read_text())
        imported = {
            a.name.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
        }
        imported |= {
            n.module.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module
        }
        assert not imported & ours, (path.name, imported & ours)
        assert "scripts/" not in path.read_text(), path.name
    for name in ("digits_torchrun.py", "digits_accelerate.py", "digits_plain.py", "lm_torchrun.py"):
        assert name in first_screen, name


def test_every_wait_in_the_tests_is_bounded():
    """Stop 40's CI stalled past its 5,400 s in the launch tests and printed nothing of which one. Every process a
    test starts is waited for with a timeout (subprocess.run, check_output, communicate, wait), so a hang fails
    its test with the command and its output; pyproject's pytest-timeout (900 s) is the net for the rest."""
    import ast

    waits = ("run", "check_output", "check_call", "call", "communicate", "wait")
    unbounded = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name, owner = node.func.attr, ast.unparse(node.func.value)
            process = (
                owner == "subprocess"
                or name == "communicate"
                or (name == "wait" and "proc" in owner)
            )
            if name in waits and process and not any(k.arg == "timeout" for k in node.keywords):
                unbounded.append(
                    f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}"
                )
    assert not unbounded, "\n".join(unbounded)
