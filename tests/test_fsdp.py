"""Rung 7 (FSDP2, fully_shard) on 2 CPU processes over gloo: it ends on rung 1's weights, holds half of DDP's
bytes per process, and its checkpoints move to rung 1 and back. Seed 7: one the other tests do not use."""

import os
import subprocess
import sys

import pytest
from test_distributed import FP32_TOLERANCE, launch

from conftest import OFFLINE, ROOT, SCRIPTS, max_abs_diff

SEED = ["--seed", "7"]


@pytest.mark.launch
def test_fsdp_ends_on_rung1_weights_with_half_the_memory_and_its_checkpoints_move_both_ways(
    tmp_path, data_dir
):
    flags = ["--task", "cancer", "--epochs", "2", *SEED]
    # one process holds all of it, as each DDP rank does
    ref, ref_m = launch(1, tmp_path / "1", data_dir, *flags)
    fsdp, fsdp_m = launch(7, tmp_path / "7", data_dir, *flags)
    ddp_m = {key: ref_m[key] for key in ("param_bytes", "grad_bytes", "optimizer_bytes")}
    print(
        f"\nFSDP vs rung 1: {max_abs_diff(fsdp, ref):.3g}; bytes per rank, FSDP / DDP: "
        + ", ".join(
            f"{k} {fsdp_m[k]}/{ddp_m[k]}" for k in ("param_bytes", "grad_bytes", "optimizer_bytes")
        )
    )
    assert fsdp_m["world_size"] == 2 and fsdp_m["steps"] == ref_m["steps"] == 28
    assert max_abs_diff(fsdp, ref) <= FP32_TOLERANCE
    assert (
        fsdp_m["eval_samples"] == ref_m["eval_samples"]
        and fsdp_m["eval_accuracy"] == ref_m["eval_accuracy"]
    )
    for key in ("param_bytes", "grad_bytes", "optimizer_bytes"):
        assert ddp_m[key] > 0 and 0.45 <= fsdp_m[key] / ddp_m[key] <= 0.55, (
            key,
            fsdp_m[key],
            ddp_m[key],
        )
    # a rung-7 checkpoint taken mid-epoch resumes in rung 1, and rung 1's (epoch 1's end) resumes in rung 7
    launch(7, tmp_path / "seven", data_dir, *flags, "--max-steps", 20)
    resumed, m = launch(
        1,
        tmp_path / "one",
        data_dir,
        *flags,
        "--resume",
        tmp_path / "seven/checkpoints/step-00000020",
    )
    assert m["steps"] == 28 and max_abs_diff(resumed, ref) <= FP32_TOLERANCE
    resumed, m = launch(
        7,
        tmp_path / "seven-b",
        data_dir,
        *flags,
        "--resume",
        tmp_path / "1/checkpoints/step-00000014",
    )
    assert m["steps"] == 28 and max_abs_diff(resumed, ref) <= FP32_TOLERANCE


@pytest.mark.launch
def test_fsdp_trains_the_gpt_to_rung1_weights(tmp_path, data_dir):
    """Transformer blocks as FSDP units, the tied embedding / output head with the root."""
    flags = ["--task", "gpt", "--max-steps", "6", *SEED]
    ref, _ = launch(1, tmp_path / "1", data_dir, *flags)
    fsdp, m = launch(7, tmp_path / "7", data_dir, *flags)
    assert m["model"] == "GPT" and max_abs_diff(fsdp, ref) <= FP32_TOLERANCE, max_abs_diff(
        fsdp, ref
    )


@pytest.mark.launch
@pytest.mark.parametrize("script", ["6_accelerate.py"])
def test_rung6_refuses_an_fsdp_launch_in_one_line(tmp_path, data_dir, script):
    """accelerate launch with an FSDP config sets ACCELERATE_USE_FSDP; rung 6 would save from the main process
    only (and on a CPU accelerate trains plain DDP): it refuses before training, naming rung 7."""
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / script),
            "--data-dir",
            str(data_dir),
            "--output-dir",
            str(tmp_path),
            "--task",
            "cancer",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **OFFLINE, "ACCELERATE_USE_FSDP": "true"},
    )
    assert (
        proc.returncode == 2 and proc.stderr.count("\n") == 1 and "scripts/7_fsdp.py" in proc.stderr
    ), proc.stderr
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.launch
def test_fsdp_evaluates_an_eval_split_whose_slices_differ_by_a_batch(tmp_path, data_dir):
    """Under FSDP the evaluation's forward is a collective. A corpus of 50 windows keeps 5 for evaluation: slices
    of 3 and 2 rows, 3 and 2 batches of 1. The rank with a batch fewer must still join rank 0's third forward
    (before aa0a253 gloo aborted here: 'Received data size doesn't match expected size'); every sample is
    counted once, and the run ends on rung 1's weights."""
    text = tmp_path / "corpus.txt"
    text.write_bytes(bytes(32 + (i * 7) % 90 for i in range(404)))  # (404 - 1) // 8 = 50 windows
    flags = [
        "--task",
        "gpt",
        "--text-file",
        str(text),
        "--block-size",
        "8",
        "--max-steps",
        "3",
        *SEED,
    ]
    # a global batch of 2: rung 1's 2, rung 7's 1 a process, so its slices are 3 and 2 batches
    ref, ref_m = launch(1, tmp_path / "1", data_dir, *flags, per_device=1)
    fsdp, fsdp_m = launch(7, tmp_path / "7", data_dir, *flags, per_device=1)
    assert max_abs_diff(fsdp, ref) <= FP32_TOLERANCE, max_abs_diff(fsdp, ref)
    assert fsdp_m["eval_samples"] == ref_m["eval_samples"] == 5, (fsdp_m, ref_m)
