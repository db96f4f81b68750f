"""The tools every guide leans on: compare.py (prove a migration) and ladder.py (the rungs' launch commands)."""

import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

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
