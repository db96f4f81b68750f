"""Keep requirements.txt and tests/requirements.txt a lock of the virtualenv: `make lock`, after changing a pin.

Each file has the packages it is about first (hand-written, with their reasons), then a section after the line
starting "# The rest of" that pins everything else the virtualenv resolved to. This rewrites those sections from
`pip freeze --all`: a package the runtime pins pull in goes to requirements.txt, the rest to tests/requirements.txt.
`--check` exits 1 (naming the difference) when the files and the virtualenv disagree, as tests/test_repo.py does.
"""

import argparse
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = (ROOT / "requirements.txt", ROOT / "tests" / "requirements.txt")
REST = "# The rest of"
NOT_LOCKED = {"pip", "wheel"}  # the installer's own tools


def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read(path):
    """(head lines, {name: version} of the head, {name: version} of the rest)."""
    head, rest, in_rest = [], {}, False
    for line in path.read_text().splitlines():
        in_rest = in_rest or line.startswith(REST)
        if not in_rest:
            head.append(line)
        pin = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
        if pin and in_rest:
            rest[canon(pin[1])] = pin[2]
    direct = {
        canon(m[1]): m[2]
        for m in (re.match(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)", x) for x in head)
        if m
    }
    return head, direct, rest


def installed():
    out = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True
    ).stdout
    pins = dict(line.split("==", 1) for line in out.split() if "==" in line)
    return {
        canon(name): (name, version.split("+")[0])
        for name, version in pins.items()
        if canon(name) not in NOT_LOCKED
    }


def closure(names):
    """Every distribution `names` need, extras they ask for included (datasets' fsspec[http])."""
    from packaging.requirements import Requirement

    seen, todo = set(), [(n, "") for n in names]
    while todo:
        name, extra = todo.pop()
        key = (canon(name), extra)
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": extra}):
                continue
            todo += [(req.name, "")] + [(req.name, e) for e in req.extras]
    return {name for name, _ in seen}


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    p.add_argument("--cuda", action="store_true", help="rewrite constraints-cuda.txt from PyPI")
    args = p.parse_args()
    if args.cuda:
        return cuda_constraints()
    have = installed()
    runtime_head, runtime_direct, runtime_rest = read(FILES[0])
    tests_head, tests_direct, tests_rest = read(FILES[1])
    if args.check:
        pinned = {**runtime_direct, **runtime_rest, **tests_direct, **tests_rest}
        problems = [
            f"{n}=={v} pinned, {have[n][1] if n in have else 'not'} installed"
            for n, v in sorted(pinned.items())
            if have.get(n, (None, None))[1] != v.split("+")[0]
        ]
        problems += [
            f"{have[n][0]}=={have[n][1]} installed, not pinned"
            for n in sorted(set(have) - set(pinned))
        ]
        for problem in problems:
            print(f"lock: {problem}")
        if problems:
            print(
                "error: requirements and the virtualenv disagree: run `make lock` (or `make install`)"
            )
        sys.exit(1 if problems else 0)
    runtime = closure(runtime_direct) - set(runtime_direct)
    for path, head, direct, rest in (
        (FILES[0], runtime_head, runtime_direct, sorted(runtime & set(have))),
        (
            FILES[1],
            tests_head,
            tests_direct,
            sorted(set(have) - runtime - set(runtime_direct) - set(tests_direct)),
        ),
    ):
        lines = [f"{have[n][0]}=={have[n][1]}" for n in rest]
        what = (
            ": exact pins, so that a fresh install is the same everywhere"
            if path == FILES[0]
            else ""
        )
        path.write_text(
            "\n".join(
                [*head, f"{REST} the resolved set{what} (`make lock` writes them).", *lines, ""]
            )
        )
        print(f"{path.relative_to(ROOT)}: {len(direct)} direct, {len(lines)} resolved")


def cuda_constraints():
    """constraints-cuda.txt: what `pip install torch==<the pin>` resolves from PyPI (the CUDA build on Linux),
    from pip's dry-run report, ignoring this machine's pip configuration (its local CPU wheels)."""
    import json
    import tempfile

    torch = read(FILES[0])[1]["torch"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--quiet"]
            + [
                "--ignore-installed",
                "--report",
                str(report),
                "--index-url",
                "https://pypi.org/simple",
            ]
            + [f"torch=={torch}"],
            check=True,
        )
        found = json.loads(report.read_text())["install"]
    target = Path(__file__).with_name("constraints-cuda.txt")
    head = [line for line in target.read_text().splitlines() if line.startswith("#")]
    _, direct, rest = read(FILES[0])  # requirements.txt pins those already: only what CUDA adds
    found = [i for i in found if canon(i["metadata"]["name"]) not in {**direct, **rest}]
    pins = sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in found)
    target.write_text("\n".join(head + pins) + "\n")
    print(f"{target.relative_to(ROOT)}: {len(pins)} pins")


if __name__ == "__main__":
    main()
