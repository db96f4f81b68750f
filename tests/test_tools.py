"""The tools every guide leans on: compare.py (prove a migration) and ladder.py (the rungs' launch commands)."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

import compare as compare_tool
import ladder
from conftest import ROOT

COMPARE = [sys.executable, str(ROOT / "scripts" / "tools" / "compare.py")]


def compare(*args):
    return subprocess.run([*COMPARE, *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.mark.launch
def test_compare_reads_safetensors_and_torch_files_and_strips_wrapper_prefixes(tmp_path):
    """Your own script's torch.save(model.state_dict()) of a DDP-wrapped (and compiled) model compares with a
    bare model's safetensors file; a different model, a differing weight and a file that would run code are not
    mistaken for a match."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    bare = {k: v.clone() for k, v in model.state_dict().items()}
    save_file(bare, str(tmp_path / "bare.safetensors"))
    torch.save({f"module._orig_mod.{k}": v for k, v in bare.items()}, tmp_path / "ddp.pt")
    proc = compare(tmp_path / "bare.safetensors", tmp_path / "ddp.pt")
    assert proc.returncode == 0 and "max |w_a - w_b| = 0" in proc.stdout, proc.stdout + proc.stderr

    moved = dict(bare)
    moved["2.bias"] = moved["2.bias"] + 1e-3
    torch.save(moved, tmp_path / "moved.pt")
    proc = compare(tmp_path / "bare.safetensors", tmp_path / "moved.pt")
    assert (
        proc.returncode == 1 and "(largest in 2.bias)" in proc.stdout and "DIFFERENT" in proc.stdout
    )
    assert (
        compare(
            tmp_path / "bare.safetensors", tmp_path / "moved.pt", "--tolerance", 0.01
        ).returncode
        == 0
    )

    torch.save({"other.weight": torch.zeros(2)}, tmp_path / "other.pt")
    proc = compare(tmp_path / "bare.safetensors", tmp_path / "other.pt")
    assert (
        proc.returncode == 2
        and proc.stderr.startswith("error: ")
        and "different tensors" in proc.stderr
    )

    # needs a function to unpickle
    torch.save({"weights": bare, "callback": os.getcwd}, tmp_path / "code.pt")
    proc = compare(tmp_path / "bare.safetensors", tmp_path / "code.pt")
    assert (
        proc.returncode == 2 and "weights_only=True" in proc.stderr and proc.stderr.count("\n") == 1
    )
    proc = compare(tmp_path / "missing", tmp_path / "bare.safetensors")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def run_compare(capsys, *args):
    """compare.py in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        compare_tool.main([*map(str, args)])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_compare_reports_parameters_and_buffers_apart_and_names_the_kind_of_difference(
    tmp_path, capsys
):
    """Issue 34: one maximum over everything hid a BatchNorm model's weight difference behind its running_var.
    Parameters and buffers get their own maxima and relative differences, the top tensors are listed by name,
    and the verdict tells BatchNorm statistics from a changed batch and from a real divergence."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    )
    model(torch.randn(16, 4))  # running statistics that are not the initial ones
    base = {k: v.clone() for k, v in model.state_dict().items()}
    torch.save(base, tmp_path / "base.pt")

    def variant(name, **changes):
        torch.save({**base, **changes}, tmp_path / name)
        return tmp_path / name

    bn = variant(
        "bn.pt",
        **{"1.running_var": base["1.running_var"] * 3, "0.weight": base["0.weight"] + 1e-7},
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", bn)
    assert code == 1 and "verdict: BatchNorm statistics" in out, out
    assert re.search(
        r"^parameters: +6 tensors, max \|a - b\| = 1\.\d+e-07 \(in 0\.weight\)", out, re.M
    )
    assert re.search(
        r"^buffers: +3 tensors, max \|a - b\| = [\d.]+ \(in 1\.running_var\)", out, re.M
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", bn, "--params-only")
    assert code == 0 and "(largest in 0.weight, parameters only): the same within 1e-05" in out
    assert "verdict: BatchNorm statistics" in out  # still said: the buffers do differ
    # measured (your-script.md): per-process statistics move the weights too, by as much, relatively
    both = variant(
        "both.pt",
        **{k: v * 1.1 for k, v in base.items() if v.is_floating_point() and "running" not in k},
        **{"1.running_mean": base["1.running_mean"] * 1.2},
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", both, "--params-only")
    assert code == 1 and "verdict: BatchNorm statistics" in out and "beyond 1e-05" in out, out

    # relative beside absolute, and the top tensors in order: 3.bias moved by 0.5 on a norm of its own
    shifted = variant(
        "shifted.pt", **{"3.bias": base["3.bias"] + 0.5, "3.weight": base["3.weight"] + 0.1}
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", shifted, "--top", "2")
    rows = out.split("top 2 tensors by |a - b|:\n")[1].splitlines()[:3]
    assert (
        rows[0].split()[:3] == ["3.bias", "parameter", "0.5"] and rows[1].split()[0] == "3.weight"
    )
    relative = 0.5 * 2**0.5 / max(base["3.bias"].norm(), (base["3.bias"] + 0.5).norm()).item()
    assert rows[0].endswith(f"relative {relative:.3g}") and rows[2].startswith(
        "max |w_a - w_b| = 0.5"
    )
    assert code == 1 and "verdict: real divergence: concentrated" in out, out

    scaled = variant(  # every parameter a little different: what every step being different leaves
        "scaled.pt",
        **{k: v * 1.001 for k, v in base.items() if v.is_floating_point() and "running" not in k},
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", scaled)
    assert code == 1 and "verdict: world-size/batch mismatch (likely)" in out, out
    counts = {"1.num_batches_tracked": base["1.num_batches_tracked"] + 20}
    counted = variant("counted.pt", **{**{"3.bias": base["3.bias"] + 0.1}, **counts})
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", counted)
    assert (
        code == 1
        and "verdict: world-size/batch mismatch: 1.num_batches_tracked differs by 20" in out
    )
    # equal parameters: a plain run that normalized each process's share apart counted twice as often
    code, out, _ = run_compare(
        capsys, tmp_path / "base.pt", variant("ghost.pt", **counts), "--params-only"
    )
    assert code == 0 and "verdict: BatchNorm statistics" in out and "item 19" in out, out
    torch.manual_seed(1)
    other = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    )
    variant(
        "other.pt",
        **{k: v for k, v in other.state_dict().items() if "running" not in k and "num" not in k},
    )
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", tmp_path / "other.pt")
    assert code == 1 and "verdict: real divergence: most parameter tensors differ by" in out, out
    code, out, _ = run_compare(capsys, tmp_path / "base.pt", tmp_path / "base.pt", "--top", "0")
    assert code == 0 and "verdict: the same" in out and "top 0 tensors by |a - b|:\nmax" in out

    # two runs of the ladder with other step counts: the metrics say it, whatever the weights do
    for run, steps, batch in (("run-a", 40, 32), ("run-b", 80, 16)):
        (tmp_path / run).mkdir()
        metrics = {
            "rung": "x",
            "global_batch_size": batch,
            "steps": steps,
            "eval_accuracy": 0.5,
            "eval_samples": 9,
        }
        (tmp_path / run / "metrics.json").write_text(json.dumps(metrics))
        save_file({"w": torch.zeros(2)}, str(tmp_path / run / "model.safetensors"))
    code, out, _ = run_compare(capsys, tmp_path / "run-a", tmp_path / "run-b")
    assert (
        code == 1
        and "verdict: world-size/batch mismatch: 40 vs 80 steps at global batch 32 vs 16" in out
    )
    code, _, err = run_compare(capsys, tmp_path / "base.pt", tmp_path / "missing.pt")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.launch
def test_ladder_commands_are_the_documented_launches():
    """One place builds the command of every rung; the tests, the demo and the benchmark all use it."""
    assert ladder.command(1)[-1].endswith("scripts/1_single_gpu.py")
    assert ladder.command(3, nproc=3)[-2:] == ["--nproc", "3"]
    four = ladder.command(4, nproc=2, launcher_flags=["--max-restarts=1"])
    assert four[1:4] == ["--standalone", "--nproc_per_node=2", "--max-restarts=1"] and four[
        0
    ].endswith("torchrun")
    six = ladder.command(6, nproc=3, config="cpu_2proc", port=29999)
    assert six[1:3] == ["launch", "--config_file"] and six[3].endswith(
        "accelerate_configs/cpu_2proc.yaml"
    )
    assert six[4:8] == ["--num_processes", "3", "--main_process_port", "29999"]
    assert ladder.max_abs_diff({"a": torch.ones(2)}, {"a": torch.zeros(2)}) == 1.0


@pytest.mark.launch
def test_compare_refuses_what_it_cannot_compare_in_one_line(tmp_path):
    """Issue 26 and 23: each of these gave a traceback, or "the same" for two empty files, or raw terminal
    escapes in a pipe. A whole pickled module says how to save a state dict instead."""
    import struct

    torch.save(torch.nn.Linear(2, 2), tmp_path / "module.pt")
    torch.save({1: torch.zeros(2)}, tmp_path / "int-keys.pt")
    torch.save({}, tmp_path / "empty.pt")
    (tmp_path / "garbage.safetensors").write_bytes(b"garbage" * 10)
    (tmp_path / "huge-header.safetensors").write_bytes(struct.pack("<Q", 2**40) + b"{}")
    save_file({"w": torch.zeros(64)}, str(tmp_path / "whole.safetensors"))
    raw = (tmp_path / "whole.safetensors").read_bytes()
    (tmp_path / "truncated.safetensors").write_bytes(raw[: len(raw) - 100])
    for run, metrics in (("list-run", "[1, 2]"), ("keyless-run", '{"rung": "1_single_gpu"}')):
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.json").write_text(metrics)
        save_file({"w": torch.zeros(2)}, str(tmp_path / run / "model.safetensors"))
    for name, says in [
        ("module.pt", "pickles a torch.nn.modules.linear.Linear object (torch.save(model)"),
        ("int-keys.pt", "holds no state_dict of named tensors"),
        ("empty.pt", "empty state_dict: there is nothing to compare"),
        ("garbage.safetensors", "is not a readable safetensors file"),
        ("huge-header.safetensors", "is not a readable safetensors file"),
        ("truncated.safetensors", "is not a readable safetensors file"),
        ("list-run", "is not a ladder run's metrics"),
        ("keyless-run", "is not a ladder run's metrics (no global_batch_size"),
    ]:
        proc = compare(tmp_path / name, tmp_path / name)
        assert proc.returncode == 2 and proc.stdout == "", (name, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert says in proc.stderr and "\x1b" not in proc.stderr, (name, proc.stderr)
    assert "model.state_dict()" in compare(tmp_path / "module.pt", tmp_path / "empty.pt").stderr


@pytest.mark.launch
def test_launch_check_refuses_bad_counts_ports_and_precisions_in_one_line(tmp_path):
    """Issue 26: `num_processes: two`, `num_machines: "2"`, `--port 99999` or `-1`, and `make ddp-cpu` with
    NPROC=0, abc or -1 were the launchers' tracebacks or assertions; fp8 passed the check (issue 25)."""
    check = [sys.executable, str(ROOT / "scripts" / "tools" / "launch_check.py")]
    head = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nuse_cpu: true\n"
    cases = {
        "two.yaml": (head + "num_processes: two\n", "num_processes is 'two', not a whole number"),
        "quoted.yaml": (head + 'num_processes: 2\nnum_machines: "2"\n', "num_machines is '2'"),
        "fp8.yaml": (head + "num_processes: 2\nmixed_precision: fp8\n", "mixed_precision fp8"),
    }
    runs = []
    for name, (text, says) in cases.items():
        (tmp_path / name).write_text(text)
        runs.append((check + ["--config", str(tmp_path / name)], says))
    for port in ("99999", "-1", "0"):
        runs.append((check + ["--port", port], f"port {port} is not a TCP port"))
    if (
        not torch.cuda.is_available()
    ):  # 1gpu.yaml (distributed_type NO) used to pass, then train on the CPU
        config = str(ROOT / "accelerate_configs" / "1gpu.yaml")
        runs.append(
            (check + ["--config", config], "starts 1 GPU processes on this machine and it has 0")
        )
    for nproc in ("0", "abc", "-1"):
        make = ["make", "--no-print-directory", "-s", "ddp-cpu", f"NPROC={nproc}"]
        runs.append((make, f"NPROC={nproc} is not a number of processes"))
    for cmd, says in runs:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        lines = [
            line
            for line in proc.stderr.splitlines()
            if not re.match(r"make(\[\d+\])?: \*\*\*", line)
        ]
        assert proc.returncode == 2 and len(lines) == 1, (cmd, proc.stderr)
        assert lines[0].startswith("error: ") and says in lines[0], (cmd, proc.stderr)


@pytest.mark.parametrize("config", ["cpu_2proc", "1gpu", "2gpu_bf16", "8gpu_bf16"])
def test_demo_names_the_precision_of_the_accelerate_config_it_launches(monkeypatch, config):
    """On one H200 `make demo` launched rung 6 under 1gpu.yaml (bf16), named it "6_accelerate (1gpu)", counted
    it as an fp32 rung and printed "fp32 parity ... 7.24e-03: OVER 1e-5" (measured: 4.8e-7 with
    --mixed_precision no). A rung is left out of the fp32 parity line only when its name says bf16 or fp16."""
    import demo
    import yaml

    gpus = {"cpu_2proc": 0, "1gpu": 1, "2gpu_bf16": 2, "8gpu_bf16": 8}[config]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(demo, "default_config", lambda: config)
    names = [name for name, _ in demo.rungs(32)]
    six = next(n for n in names if n.startswith("6_accelerate"))
    saved = yaml.safe_load((ROOT / "accelerate_configs" / f"{config}.yaml").read_text())
    mixed = saved.get("mixed_precision") or "no"
    assert demo.precision(config) == mixed
    assert config in six and (mixed in six) == (mixed != "no"), six
