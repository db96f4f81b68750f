"""`make bench --quick`: the machinery and the results' schema, never the speed (CI machines differ)."""

import json
import math
import os
import subprocess
import sys

import bench  # noqa: E402
import pytest
from PIL import Image

from conftest import OFFLINE, ROOT


def positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.mark.launch
def test_quick_bench_writes_results_tables_and_plots(tmp_path, data_dir):
    proc = subprocess.run(
        [
            sys.executable,
            "scripts/tools/bench.py",
            "--quick",
            "--out",
            str(tmp_path),
            "--data-dir",
            str(data_dir),
        ],
        cwd=ROOT,
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the row guides/performance.md's quick command shows (that page leaves its run to this test)
    assert "input pipeline: loader / preloaded (digits)" in proc.stdout + proc.stderr
    result = json.loads((tmp_path / "bench" / "results-cpu.json").read_text())
    assert result["schema"] == bench.SCHEMA and result["quick"] is True
    assert {
        "device",
        "device_name",
        "cpu_count",
        "torch",
        "accelerate",
        "datasets",
        "python",
    } <= set(result["machine"])
    s = result["sections"]
    assert set(s) == set(bench.SECTIONS) and not any("error" in v for v in s.values())

    rungs = s["overhead"]["rungs"]
    assert list(rungs) == [
        bench.RUNGS[r] for r in (1, 6)
    ]  # quick: python and accelerate (torchrun: scaling)
    assert rungs["1_single_gpu"]["step_time_ratio"] == 1.0
    for name, r in rungs.items():
        assert positive(r["samples_per_second"]) and positive(r["step_time_ratio"])
        # world size 1, fp32, same seed: every rung trains rung 1's model, whatever its scaffolding
        assert r["max_abs_weight_diff_vs_rung1"] <= 1e-6, name
        assert len(r["loss_curve"]) == 2 and all(positive(loss) for _, loss in r["loss_curve"])
    assert s["overhead"]["gpt"] == {}  # quick runs launch no GPT (a full run does)
    costs = s["overhead"]["per_step_costs"]
    assert (
        set(costs["ms_per_step"]) == set(bench.PER_STEP_KINDS)
        and costs["extra_us_per_step"]["plain loop"] == 0
    )

    for task in ("digits", "gpt"):  # in this process: both tasks
        p = s["input_pipeline"][task]
        assert positive(p["ratio"]) and positive(p["batch_read_ms"]["columns"])
        k = s["checkpoint"][task]
        assert positive(k["share_of_epoch"]) and positive(k["save_ratio_vs_torch_save"])
        assert positive(k["load_ratio_vs_torch_load"]) and positive(k["checkpoint_bytes"])
    c = s["scaling"]["digits"]
    assert (
        positive(c["ratio"])
        and positive(c["allreduce_seconds_per_step"])
        and "gpt" not in s["scaling"]
    )
    assert c["gradient_numel"] == 29_162 and len(c["loss_curves"]["two_processes"]) == 2
    m = s["mixed_precision"]["digits"]
    # quick on a CPU: no fp16
    assert positive(m["bf16_speedup_vs_fp32"]) and "fp16_speedup_vs_bf16" not in m
    assert (
        set(m["samples_per_second"]) == {"no", "bf16"}
        and m["max_abs_weight_diff_vs_fp32"]["no"] == 0
    )
    f = c["bytes_per_process"]
    assert (
        positive(c["fsdp_over_ddp_step_time"])
        and c["fsdp_max_abs_weight_diff_vs_one_process"] <= 1e-5
    )
    assert 0.45 <= sum(f["fsdp"].values()) / sum(f["ddp"].values()) <= 0.55
    reduce = s["scaling"]["allreduce_2_processes"]
    assert all(
        positive(v["seconds"]) and positive(v["bus_bandwidth_GBps"]) for v in reduce.values()
    )
    acc = s["accumulation"][
        "digits"
    ]  # no_sync against an all-reduce per micro-step: the same gradients
    assert (
        positive(acc["no_sync_speedup"])
        and acc["max_abs_grad_diff"] <= 1e-5
        and "gpt" not in s["accumulation"]
    )
    peers = s["peers"]["rows"]  # quick: rung 4 (the scaling section's launch) and the two peers
    assert set(peers) == {"4_ddp_torchrun", "lightning_fabric", "minimal_ddp_loop"}
    for (
        name,
        r,
    ) in peers.items():  # cross-framework parity: every fp32 peer ends on rung 1's weights
        assert positive(r["samples_per_second"]) and positive(r["launch_seconds"]), name
        assert r["max_abs_weight_diff_vs_rung1"] <= 1e-5, name
    assert max(r["vs_fastest"] for r in peers.values()) == 1.0
    assert positive(s["peers"]["extras_cost"]["4_ddp_torchrun"]["step_time"])
    assert "skipped" in s["gpu"]  # no CUDA here

    assert result["summary"] and all(
        isinstance(r["measure"], str)
        and positive(r["value"])
        and r["goal_met"] in (None, True, False)
        for r in result["summary"]
    )
    page = (tmp_path / "benchmarks.md").read_text()
    assert "| measure | value | goal | met |" in page and "CPU (" in page
    for png in ("bench-throughput-cpu.png", "bench-loss-cpu.png"):
        assert f"(img/{png})" in page
        with Image.open(tmp_path / "img" / png) as image:
            assert image.format == "PNG" and image.width == 960 and image.height >= 270


def _abort_once(rank, world_size, port, marker, result_path):
    """A worker that dies as the CI one did (SIGABRT) on its first launch and succeeds on the second."""
    from pathlib import Path

    if not Path(marker).exists():
        if rank == 1:
            Path(marker).touch()
            os.abort()
        return
    if rank == 0:
        Path(result_path).write_text(json.dumps({"port": port}))


@pytest.mark.launch
def test_a_spawned_section_that_aborts_once_is_run_again_and_the_failure_kept(tmp_path):
    b = bench.Bench.__new__(bench.Bench)
    b.failures, b.quick = [], True  # quick: a hung worker is killed after 150 s
    result = b.spawn("abort-once", _abort_once, (str(tmp_path / "marker"),), tmp_path / "r.json")
    assert positive(result["port"])
    assert (
        len(b.failures) == 1
        and b.failures[0]["launch"] == "abort-once"
        and b.failures[0]["attempt"] == 1
    )
    assert "SIGABRT" in b.failures[0]["why"]


def _always_raise(rank, world_size, port, result_path):
    raise ValueError("worker broke")


@pytest.mark.launch
def test_a_spawned_section_that_fails_twice_fails_with_one_line(tmp_path):
    b = bench.Bench.__new__(bench.Bench)
    b.failures, b.quick = [], True  # quick: a hung worker is killed after 150 s
    try:
        b.spawn("broken", _always_raise, (), tmp_path / "r.json")
    except RuntimeError as e:
        assert "broken failed twice" in str(e) and "worker broke" in str(e)
    else:
        raise AssertionError("a worker that always fails passed")
    assert [f["attempt"] for f in b.failures] == [1, 2]


def _hang(rank, world_size, port, result_path):
    import time

    time.sleep(600)


@pytest.mark.launch
def test_a_spawned_section_that_hangs_is_killed_at_its_limit(tmp_path):
    b = bench.Bench.__new__(bench.Bench)
    b.failures, b.quick = [], True
    try:
        b.spawn("hung", _hang, (), tmp_path / "r.json", limit=3)
    except RuntimeError as e:
        assert "hung failed twice" in str(e) and "no result after 3 s" in str(e)
    else:
        raise AssertionError("a worker that never ends passed")
    assert [f["attempt"] for f in b.failures] == [1, 2]
