"""The guides cannot drift: generated diffs are current, every hunk is explained, every step is within its
budget, the side-by-side page renders in a real browser, and every `sh` command in a guide runs."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import make_guides
from conftest import OFFLINE, ROOT, free_port

GUIDES = ROOT / "guides"
# Every guide; each page's commands run on their own (test_every_sh_command_in_the_guides_runs), in any order.
GUIDE_ORDER = [
    "your-script.md",
    "doctor.md",
    "migrate.md",
    "step-1-2.md",
    "step-2-3.md",
    "step-3-4.md",
    "step-4-5.md",
    "step-5-6.md",
    "step-4-7.md",
    "old-apis.md",
    "dp-vs-ddp.md",
    "troubleshooting.md",
    "multi-node.md",
    "fault-tolerance.md",
    "next-steps.md",
    "performance.md",
    "benchmarks.md",
    "reliability.md",
]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def sh_blocks(path):
    return re.findall(r"^```sh\n(.*?)^```", path.read_text(), re.S | re.M)


@pytest.mark.launch
def test_generated_guides_are_current():
    proc = subprocess.run(
        [sys.executable, ROOT / "scripts" / "tools" / "make_guides.py", "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + "\nrun: make guides"


def test_every_guide_is_listed_and_linked():
    names = {p.name for p in GUIDES.glob("*.md")} - {"README.md"}
    assert set(GUIDE_ORDER) == names, "a guide is missing from GUIDE_ORDER (or the other way round)"
    index = (GUIDES / "README.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in names:
        assert f"({name})" in index, f"guides/README.md does not link {name}"
        assert f"(guides/{name})" in readme, f"README.md does not link guides/{name}"
    for step in make_guides.BUDGET:
        assert f"(html/step-{step[0]}-{step[1]}.html)" in index
    for path in GUIDES.glob("*.md"):  # every relative link points at a file that exists
        prose = re.sub(
            r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
        )
        for target in re.findall(r"\]\((?!https?:|#)([^)#]+)", prose):
            assert (path.parent / target).exists(), (
                f"{path.name} links {target}, which does not exist"
            )


def sources_copy(tmp_path, monkeypatch):
    """The generator pointed at a copy of guides/, so a test can break the copy."""
    copy = tmp_path / "guides"
    shutil.copytree(GUIDES, copy)
    monkeypatch.setattr(make_guides, "GUIDES", copy)
    monkeypatch.setattr(make_guides, "SOURCES", copy / "src")
    return copy


def test_a_hunk_without_an_explanation_is_an_error(tmp_path, monkeypatch):
    copy = sources_copy(tmp_path, monkeypatch)
    source = copy / "src" / "step-1-2.md"
    text = source.read_text()
    source.write_text(
        re.sub(
            r"<!-- hunk: model = torch.nn.DataParallel\(model\) -->.*?(?=<!-- hunk:)",
            "",
            text,
            flags=re.S,
        )
    )
    with pytest.raises(
        make_guides.GuideError, match="has no explanation.*model = torch.nn.DataParallel"
    ):
        make_guides.build()


def test_an_explanation_without_a_hunk_is_an_error(tmp_path, monkeypatch):
    copy = sources_copy(tmp_path, monkeypatch)
    source = copy / "src" / "step-3-4.md"
    stale = "<!-- hunk: a line no script has -->\nStale.\n\n"
    source.write_text(
        source.read_text().replace("<!-- after the diff -->", stale + "<!-- after the diff -->")
    )
    with pytest.raises(
        make_guides.GuideError, match="no hunk of step 3->4 contains 'a line no script has'"
    ):
        make_guides.build()


def test_every_step_is_within_the_budget_and_rung1_is_plain():
    """Changed code lines per step (module docstrings aside, no context), counted on the ruff-formatted rungs
    (the lint test holds them formatted, and no rung line is over 100 columns, so nothing is packed to fit):
    <= 70 for 2->3 and 5->6 (issue 32: the visible collectives and their accelerate twins), 40 for every
    other step. And rung 1 is the script a user has, with no
    distribution vocabulary."""
    import ast

    assert make_guides.BUDGET == {
        (1, 2): 40,
        (2, 3): 70,
        (3, 4): 40,
        (4, 5): 40,
        (5, 6): 70,
        (4, 7): 40,
    }
    for n in make_guides.RUNGS if hasattr(make_guides, "RUNGS") else range(1, 8):
        for number, line in enumerate(make_guides.rung(n).read_text().splitlines(), 1):
            assert len(line) <= 100, f"rung {n} line {number} has {len(line)} columns"
    for (a, b), budget in make_guides.BUDGET.items():
        changed = make_guides.code_changes(make_guides.rung(a), make_guides.rung(b))
        print(f"step {a}->{b}: {changed} changed code lines (budget {budget})")
        assert 0 < changed <= budget, (a, b, changed)
    tree = ast.parse(make_guides.rung(1).read_text())
    names = (
        {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        | {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args}
    )
    assert not names & {
        "rank",
        "local_rank",
        "world_size",
        "is_main",
        "num_shards",
        "shard",
        "dist",
        "set_epoch",
        "sampler",
    }, names & {"rank", "world_size", "is_main", "num_shards", "shard", "dist"}


def test_rung1_spends_at_most_twenty_code_lines_on_the_projects_features():
    """Rung 1 reads as the plain script a user has: the project's own features (exact resume, the meter of
    position, throughput and history, the log's bar, lines and --report-to, the best model, SIGTERM/Ctrl-C
    preemption) cost at most twenty of its code lines (19 now), each one call, and none is a distribution concept.
    (Ten, until issue 32 took them out of one Recorder: the calls that a rung 3 must reduce around, or guard
    by rank, are lines of their own now, so that the step diff shows every collective.)"""
    text = make_guides.rung(1).read_text()
    features = re.compile(
        r"\b(meter|log|best|best_model|preempted|preemption|progress)\.|checkpoint\.resume"
    )
    code = [line for line in make_guides.code_lines(make_guides.rung(1)) if line.strip()]
    project = [
        line.strip() for line in code if features.search(line) and not line.startswith("from ")
    ]
    print("\n".join(project))
    assert 0 < len(project) <= 20, project
    assert (
        "sync_bn" not in text and "check_writable" not in text and "time.perf_counter" not in text
    )


def test_a_step_over_its_budget_is_an_error(monkeypatch):
    monkeypatch.setitem(make_guides.BUDGET, (4, 5), 10)
    with pytest.raises(make_guides.GuideError, match="step 4->5 changes .* over its budget of 10"):
        make_guides.build()


def test_a_stale_guide_fails_the_check(tmp_path, monkeypatch, capsys):
    copy = sources_copy(tmp_path, monkeypatch)
    page = copy / "step-2-3.md"
    page.write_text(
        page.read_text().replace("dist.barrier()", "dist.barrier()  # edited by hand", 1)
    )
    monkeypatch.setattr(sys, "argv", ["make_guides.py", "--check"])
    with pytest.raises(SystemExit) as e:
        make_guides.main()
    assert e.value.code == 1 and "step-2-3.md" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["make_guides.py"])  # and `make guides` mends it, idempotently
    make_guides.main()
    assert "1 of 14 files written" in capsys.readouterr().out
    make_guides.main()
    assert "0 of 14 files written" in capsys.readouterr().out


def test_the_step_guides_show_the_real_diff():
    """Every changed line of every step appears in its guide, in a diff block, with its +/- sign."""
    for a, b in make_guides.BUDGET:
        guide = (GUIDES / f"step-{a}-{b}.md").read_text()
        old = make_guides.rung(a).read_text().splitlines()
        new = make_guides.rung(b).read_text().splitlines()
        for hunk in make_guides.hunks(old, new):
            assert hunk.header in guide
            for tag, text in hunk.lines:
                assert f"\n{tag}{text}\n" in guide, (a, b, tag, text)


@pytest.mark.launch
def test_side_by_side_page_renders_in_chromium(tmp_path):
    """A real headless browser renders step 2->3: two columns, removed lines highlighted on the left, added on
    the right, and one explanation row per hunk."""
    assert Path(CHROMIUM).exists(), (
        "Debian's chromium is missing: apt-get install chromium (make test does)"
    )
    from PIL import Image

    page = GUIDES / "html" / "step-2-3.html"
    flags = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    hunk_list = make_guides.hunks(
        make_guides.rung(2).read_text().splitlines(), make_guides.rung(3).read_text().splitlines()
    )
    added, removed = (sum(tag == sign for h in hunk_list for tag, _ in h.lines) for sign in "+-")
    assert "scripts/2_data_parallel.py</th>" in dom and "scripts/3_ddp_spawn.py</th>" in dom
    assert dom.count('class="why"') == len(hunk_list)
    assert dom.count('class="add"') == added > 30 and dom.count('class="del"') == removed > 10
    shot = tmp_path / "step-2-3.png"
    subprocess.run(
        [*flags, "--window-size=1400,1800", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    image = Image.open(shot).convert("RGB")
    width, height = image.size
    pixels = image.load()
    colours = {"left": set(), "right": set()}
    for y in range(0, height, 3):
        for x in range(0, width, 7):
            colours["left" if x < width // 2 else "right"].add(pixels[x, y])
    removed, added, explanation = (255, 235, 233), (218, 251, 225), (255, 248, 197)
    assert removed in colours["left"] and removed not in colours["right"]
    assert added in colours["right"] and added not in colours["left"]
    # rows across both columns
    assert explanation in colours["left"] and explanation in colours["right"]


def fresh_clone(root):
    """The repository's tracked files (as they are in the working tree) copied into `root`, with the .venv
    linked: what a reader has who cloned it and read one page, with no out/ from another page."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():  # (a file deleted in the working tree is not there to copy)
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    (root / ".venv").symlink_to(ROOT / ".venv")
    return root


@pytest.fixture
def sandbox(tmp_path, data_dir):
    """A fresh copy of the repository for one page's commands: a page may use only what its own blocks make."""
    env = {
        **os.environ,
        **OFFLINE,
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "DDP_LADDER_CACHE": str(data_dir),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("VIRTUAL_ENV", None)
    return fresh_clone(tmp_path / "clone"), env


@pytest.mark.launch
@pytest.mark.parametrize("guide", GUIDE_ORDER)
def test_every_sh_command_in_the_guides_runs(sandbox, guide):
    """Each page's blocks, in order, in a fresh copy of the repository (issue 34: step-4-5 and step-5-6 compared
    against out/guide/4, which only step-3-4 made, so they failed when read alone)."""
    root, env = sandbox
    for block in sh_blocks(GUIDES / guide):
        proc = subprocess.run(
            ["bash", "-e", "-c", block],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, (
            f"{guide}:\n{block}\nexit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
        out = proc.stdout + proc.stderr
        if "compare.py" in block:
            assert "DIFFERENT" not in out and "the same within" in out, out
        if "DDP_LADDER_FAULT=term-parent" in block:
            assert "exit code 143" in out and "done:" in out
        if "find_unused_parameters" in block:
            assert "find_unused_parameters=False: Expected to have finished reduction" in out
            assert "find_unused_parameters=True: trains" in out
        if "world size" in block:
            assert "world size 2" in out
        # node 1's second process: rank 3, local rank 1, node 1
        if "scripts/labs/collectives.py" in block:
            assert (
                re.search(r"\d+ +3 +1 +1 +cpu", out)
                and "all 1 operations gave the expected results" in out
            )


def test_every_page_compares_only_what_its_own_commands_make():
    """The cheap half of issue 34's rule (the launch test runs the pages): a run that a page's compare.py reads
    is written by an earlier line of that page, not by another page."""
    for name in GUIDE_ORDER:
        made = []
        for block in sh_blocks(GUIDES / name):
            for line in block.splitlines():
                compared = re.findall(r"compare\.py\s+(\S+)\s+(\S+)", line)
                for path in (p for pair in compared for p in pair):
                    assert any(path == m or path.startswith(m + "/") for m in made), (
                        f"{name}: compare.py reads {path}, which no earlier command of the page makes"
                    )
                made += re.findall(r"--(?:output-dir|save|save-model)[ =](\S+)", line)


def test_commands_left_to_a_test_name_a_test_that_exists():
    """A guide command that a test runs (instead of test_every_sh_command_in_the_guides_runs running it twice) is
    a `bash` block that names that test; the name must be a test function of that file."""
    named = set()
    for path in GUIDES.glob("*.md"):
        named |= set(re.findall(r"`tests/(test_\w+\.py)::(test_\w+)`", path.read_text()))
    assert len(named) >= 4
    for file, test in named:
        assert re.search(rf"^def {test}\(", (ROOT / "tests" / file).read_text(), re.M), (file, test)


def test_sh_blocks_only_where_they_run_here():
    """GPU- or cluster-only commands are in `bash` blocks; every guide has something to run, but next-steps and
    step-4-7, whose FSDP commands tests/test_fsdp.py runs with assertions (not twice: the suite's time budget),
    performance, whose quick bench tests/test_bench.py runs (every section, not input_pipeline alone twice),
    and the two pages of results (benchmarks, reliability), whose every row names its test."""
    for name in GUIDE_ORDER:
        blocks = sh_blocks(GUIDES / name)
        assert blocks or name in (
            "next-steps.md",
            "benchmarks.md",
            "step-4-7.md",
            "reliability.md",
            "performance.md",
        ), f"{name}: nothing runs on CPU"
        for block in blocks:
            assert "ddp-2gpu" not in block and not re.search(r"^\s*sbatch ", block, re.M), block


@pytest.mark.launch
@pytest.mark.parametrize(
    "script,env,expected",
    [
        (
            "torchrun.sbatch",
            {"SLURM_GPUS_ON_NODE": "4"},
            [
                "job 777 start 1 on node01: 3 node(s) x 4 process(es), rendezvous node01:29500, "
                "output out/ddp-ladder-torchrun-777/",
                "srun --kill-on-bad-exit=1 torchrun --nnodes=3 --nproc_per_node=4 --rdzv-id=777-",
                "--rdzv-backend=c10d --rdzv-endpoint=node01:29500 --max-restarts=3",
                "scripts/4_ddp_torchrun.py --output-dir out/ddp-ladder-torchrun-777 --task cancer",
            ],
        ),
        (  # CPU nodes, requeued once: NPROC_PER_NODE processes, and the run continues its checkpoints
            "torchrun.sbatch",
            {"SLURM_GPUS_ON_NODE": "0", "NPROC_PER_NODE": "2", "SLURM_RESTART_COUNT": "1"},
            [
                "job 777 start 2 on node01: 3 node(s) x 2 process(es)",
                "--nproc_per_node=2",
                "scripts/4_ddp_torchrun.py --resume auto --output-dir out/ddp-ladder-torchrun-777",
            ],
        ),
        (
            "accelerate.sbatch",
            {"SLURM_GPUS_ON_NODE": "4", "MIXED_PRECISION": "no"},
            [
                "--config_file accelerate_configs/2machines_rank0.yaml --mixed_precision no",
                "--num_machines 3 --num_processes 12",
                '--machine_rank\\ \\"\\$SLURM_NODEID\\"',  # read by each node's own shell
                "--main_process_ip node01 --main_process_port 29500",
                "scripts/6_accelerate.py --output-dir out/ddp-ladder-accelerate-777 --task cancer",
            ],
        ),
    ],
)
def test_slurm_scripts_parse_and_build_the_documented_command(script, env, expected):
    path = ROOT / "scripts" / "labs" / "slurm" / script
    assert subprocess.run(["bash", "-n", path], timeout=60).returncode == 0
    text = path.read_text()
    for line in ("--requeue", "--open-mode=append", "--signal=B:USR1@", "--output=slurm-%x-%j.out"):
        assert f"#SBATCH {line}" in text
    assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in text
    env = {**os.environ, "DRY_RUN": "1", "SLURM_JOB_ID": "777", "SLURM_NNODES": "3", **env}
    out = subprocess.run(
        ["bash", path, "--task", "cancer"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    for piece in expected:
        assert piece in out, (piece, out)


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="what a machine without a GPU does"
)
def test_syncbatchnorm_on_a_cpu_is_refused_as_your_script_md_quotes():
    """Item 19 quotes the error a CPU run gets for SyncBatchNorm; one gloo process is enough to get it."""
    code = (
        "import torch, torch.distributed as dist, torch.distributed.nn\n"
        f"dist.init_process_group('gloo', init_method='tcp://127.0.0.1:{free_port()}', rank=0, world_size=1)\n"
        "model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm1d(4)))\n"
        "try:\n    torch.nn.parallel.DistributedDataParallel(model)\n"
        "except ValueError as e:\n    print(f'ValueError: {e}')\n"
        "dist.destroy_process_group()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    said = proc.stdout.strip()
    assert said == "ValueError: SyncBatchNorm layers only work with GPU modules", (
        proc.stdout + proc.stderr
    )
    assert f"`{said}`" in (GUIDES / "your-script.md").read_text()
