"""Rungs 1 and 2 end to end, as a user runs them."""

import json

import pytest
import torch
from safetensors.torch import load_file

from conftest import max_abs_diff, run_script

METRICS_KEYS = {
    "eval_accuracy",
    "eval_loss",
    "train_loss",
    "global_batch_size",
    "steps",
    "samples_per_second",
}


def weights(out):
    return load_file(out / "model.safetensors")


@pytest.fixture(scope="module")
def default_runs(tmp_path_factory, data_dir):
    """Rungs 1 and 2 with their default flags on the default task (digits, CNN, 10 epochs)."""
    outs = {}
    for script in ("1_single_gpu.py", "2_data_parallel.py"):
        out = tmp_path_factory.mktemp(script[:-3])
        run_script(script, "--data-dir", data_dir, "--output-dir", out)
        outs[script] = out
    return outs


@pytest.mark.launch
def test_rung1_default_run_is_accurate_and_complete(default_runs):
    out = default_runs["1_single_gpu.py"]
    m = json.loads((out / "metrics.json").read_text())
    assert METRICS_KEYS <= m.keys()
    assert m["eval_accuracy"] >= 0.95, m
    assert (
        "world_size" not in m and m["global_batch_size"] == 32 and m["steps"] == 10 * (1437 // 32)
    )
    assert m["eval_samples"] == 360 and m["samples_per_second"] > 0


@pytest.mark.launch
def test_rungs_1_and_2_end_on_bitwise_equal_weights(default_runs):
    a, b = (weights(default_runs[s]) for s in ("1_single_gpu.py", "2_data_parallel.py"))
    assert max_abs_diff(a, b) == 0.0
    assert not any(k.startswith("module.") for k in b)  # DataParallel's prefix is not in the file
    m2 = json.loads((default_runs["2_data_parallel.py"] / "metrics.json").read_text())
    m1 = json.loads((default_runs["1_single_gpu.py"] / "metrics.json").read_text())
    assert (
        m1["eval_accuracy"] == m2["eval_accuracy"]
        and m1["global_batch_size"] == m2["global_batch_size"]
    )


@pytest.mark.launch
@pytest.mark.skipif(
    torch.cuda.device_count() > 1, reason="with 2+ GPUs DataParallel splits the batch"
)
def test_rung2_trains_as_rung1_with_fewer_than_two_gpus(tmp_path, data_dir):
    """With one device DataParallel just calls the model: rung 2 names the device it runs on and ends on
    rung 1's weights, bitwise."""
    from safetensors.torch import load_file

    flags = ["--data-dir", data_dir, "--task", "cancer", "--max-steps", "2"]
    proc = run_script("2_data_parallel.py", *flags, "--output-dir", tmp_path / "2")
    run_script("1_single_gpu.py", *flags, "--output-dir", tmp_path / "1")
    assert ("cuda" if torch.cuda.is_available() else "cpu") in proc.stdout.splitlines()[0]
    one, two = (load_file(tmp_path / r / "model.safetensors") for r in ("1", "2"))
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)


@pytest.mark.launch
@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--task", "imagenet"], "unknown task"),
        (["--dataset", "data/missing.csv"], "does not exist"),
        (["--batch-size", "0"], "--batch-size"),
        (["--resume", "/nonexistent/ckpt"], "does not exist"),
        (["--output-dir", "/proc/not-writable"], "not writable"),
        (["--task", "cancer", "--model", "cnn"], "--model mlp"),
        (["--task", "cancer", "--batch-size", "1000"], "lower --batch-size"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, data_dir, flags, needle):
    proc = run_script(
        "1_single_gpu.py", "--data-dir", data_dir, "--output-dir", tmp_path, *flags, check=False
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr


@pytest.mark.launch
def test_checkpoint_of_another_model_is_refused_and_nothing_overwritten(tmp_path, data_dir):
    run_script(
        "1_single_gpu.py",
        "--data-dir",
        data_dir,
        "--output-dir",
        tmp_path,
        "--task",
        "cancer",
        "--epochs",
        "1",
    )
    # the lock's owner file names whichever run holds the lock: the refused run too
    before = {
        p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != ".lock.owner"
    }
    proc = run_script(
        "1_single_gpu.py",
        "--data-dir",
        data_dir,
        "--output-dir",
        tmp_path,
        "--task",
        "digits",
        "--resume",
        "auto",
        check=False,
    )
    assert (
        proc.returncode == 2
        and "another model" in proc.stderr
        and len(proc.stderr.strip().splitlines()) == 1
    )
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert before == {p: content for p, content in after.items() if p.name != ".lock.owner"}
