"""Rungs 3-6 end to end on CPU (2 processes over gloo), and the parity proof: same seed, same global batch,
same weights as rung 1."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import BIN, ROOT, accelerate, max_abs_diff, run_rung, run_script

FP32_TOLERANCE = 1e-5  # max |w - w_rung1| for every fp32 rung (measured: ~6e-8)
BF16_TOLERANCE = {
    "weights": 0.05,
    "accuracy": 0.02,
    "train_loss": 0.02,
}  # measured: see test_amp_bf16


def launch(rung, out, data_dir, *flags, per_device=16, **kw):
    """Run a rung the way its docstring says, 2 processes for rungs 3-6; returns (weights, metrics)."""
    batch = 2 * per_device if rung <= 2 else per_device  # the same global batch in every rung
    run_rung(
        rung,
        1 if rung <= 2 else 2,
        "--batch-size",
        batch,
        "--data-dir",
        data_dir,
        "--output-dir",
        out,
        *flags,
        **kw,
    )
    return load_file(Path(out) / "model.safetensors"), json.loads(
        (Path(out) / "metrics.json").read_text()
    )


# The same proof on digits (MLP, 1 epoch) is in the step guides' commands, run by tests/test_guides.py. Rung 1
# and rung 4 at 2 x 16 are the session's reference runs (conftest.reference: the same command, launched once).
ACCUMULATE = [
    "--batch-size",
    8,
    "--gradient-accumulation-steps",
    2,
]  # 2 processes x 8 x 2 micro-batches = 32


@pytest.mark.launch
def test_parity_every_fp32_rung_ends_on_rung1_weights(tmp_path, data_dir, reference):
    """Same seed, same global batch: every fp32 rung ends on rung 1's weights. Rungs 5 (torchrun, no_sync) and 6
    (accelerate, accumulate()) train with gradient accumulation: 2 processes x 8 x 2 micro-batches = rung 1's 32."""
    task_flags = ["--task", "cancer", "--epochs", "2"]
    ref, ref_m = reference[1], reference["metrics"]
    report = {4: max_abs_diff(reference[4], ref)}
    for rung in (3, 5, 6):  # rung 2 on a CPU is rung 1, bitwise (test_rungs_1_2.py)
        flags = [*task_flags, "--mixed-precision", "no"] if rung == 5 else task_flags
        w, m = launch(
            rung, tmp_path / str(rung), data_dir, *flags, *(ACCUMULATE if rung >= 5 else [])
        )
        report[rung] = max_abs_diff(w, ref)
        assert m.get("world_size", 1) == 2, m  # the launch really got 2 ranks
        assert m["global_batch_size"] == ref_m["global_batch_size"] == 32
        assert m["gradient_accumulation_steps"] == (2 if rung >= 5 else 1)
        assert m["steps"] == ref_m["steps"]
        # every eval sample exactly once (114 / 360 on 2 ranks)
        assert m["eval_samples"] == ref_m["eval_samples"]
        assert m["eval_accuracy"] == ref_m["eval_accuracy"], (
            rung,
            m["eval_accuracy"],
            ref_m["eval_accuracy"],
        )
        assert abs(m["train_loss"] - ref_m["train_loss"]) < 1e-5
    print(
        f"\nparity cancer (rungs 5-6 with 2 x 8 x 2 micro-batches): max |w - w_rung1| per rung: {report}"
    )
    assert all(d <= FP32_TOLERANCE for d in report.values()), report


@pytest.mark.launch
def test_default_cnn_keeps_parity_and_batchnorm_drifts(tmp_path, data_dir):
    """The default CNN (GroupNorm: each sample normalised on its own) ends on rung 1's weights under DDP.
    --model cnn-bn (BatchNorm) does not: 2 processes normalise over 16 samples each, rung 1 over 32. --sync-bn
    cannot fix that on a CPU (PyTorch refuses SyncBatchNorm there): refused in one line."""
    flags = ["--task", "digits", "--epochs", "1"]
    ref, _ = launch(1, tmp_path / "1", data_dir, *flags)
    w, m = launch(3, tmp_path / "3", data_dir, *flags)
    parity = max_abs_diff(w, ref)
    ref_bn, _ = launch(
        1, tmp_path / "1bn", data_dir, *flags, "--model", "cnn-bn", "--max-steps", 20
    )
    w_bn, m_bn = launch(
        3, tmp_path / "3bn", data_dir, *flags, "--model", "cnn-bn", "--max-steps", 20
    )
    drift = max_abs_diff(w_bn, ref_bn)
    print(
        f"\ndigits CNN, 2x16 vs 32: GroupNorm (1 epoch) {parity:.3g}, BatchNorm (20 steps) {drift:.3g}"
    )
    assert parity <= FP32_TOLERANCE and m["model"] == m_bn["model"] == "SmallCNN"
    assert drift > 100 * FP32_TOLERANCE and m_bn["eval_accuracy"] > 0.5
    proc = run_script(
        "3_ddp_spawn.py",
        "--nproc",
        2,
        "--batch-size",
        16,
        "--data-dir",
        data_dir,
        "--output-dir",
        tmp_path / "sync",
        *flags,
        "--model",
        "cnn-bn",
        "--sync-bn",
        check=False,
    )
    if not torch.cuda.is_available():
        assert (
            proc.returncode == 2
            and proc.stderr.count("\n") == 1
            and "--sync-bn needs GPUs" in proc.stderr
        )


@pytest.mark.launch
def test_amp_bf16_within_stated_tolerance(tmp_path, data_dir):
    flags = ["--task", "cancer", "--epochs", "3"]
    ref, ref_m = launch(1, tmp_path / "1", data_dir, *flags)
    w, m = launch(5, tmp_path / "5", data_dir, *flags, "--mixed-precision", "bf16")
    measured = {
        "weights": max_abs_diff(w, ref),
        "accuracy": abs(m["eval_accuracy"] - ref_m["eval_accuracy"]),
        "train_loss": abs(m["train_loss"] - ref_m["train_loss"]),
    }
    print(f"\nbf16 vs fp32 rung 1 (cancer, 3 epochs): {measured}")
    assert m["mixed_precision"] == "bf16"
    assert all(measured[k] <= BF16_TOLERANCE[k] for k in measured), measured
    assert measured["weights"] > 0  # bf16 really ran: it is not bitwise fp32


@pytest.mark.launch
def test_checkpoints_cross_rungs_and_world_sizes(tmp_path, data_dir):
    """A rung-1 checkpoint taken mid-epoch resumes in rung 6 at world size 2 (accelerate's prepared loader, whose
    processes take whole batches in turn) and ends where the uninterrupted run ends. (A world-size-2 checkpoint
    resumed in rung 1: test_fsdp.py; at another batch size: test_reliability.py.)"""
    flags = ["--task", "cancer", "--epochs", "3"]
    straight, _ = launch(1, tmp_path / "straight", data_dir, *flags)
    launch(1, tmp_path / "one-b", data_dir, *flags, "--max-steps", 30)
    ckpt = sorted((tmp_path / "one-b" / "checkpoints").glob("step-*"))[-1]
    resumed, m = launch(6, tmp_path / "six", data_dir, *flags, "--resume", ckpt)
    assert m["steps"] == 42 and max_abs_diff(resumed, straight) <= FP32_TOLERANCE


@pytest.mark.launch
def test_rung6_refuses_a_launch_that_did_not_give_it_its_processes(tmp_path, data_dir):
    text = (ROOT / "accelerate_configs" / "cpu_2proc.yaml").read_text()
    bad = tmp_path / "multi_cpu.yaml"
    bad.write_text(re.sub(r"distributed_type: MULTI_GPU", "distributed_type: MULTI_CPU", text))
    proc = run_script(
        "6_accelerate.py",
        "--data-dir",
        data_dir,
        "--output-dir",
        tmp_path / "out",
        "--task",
        "cancer",
        launcher=[str(BIN / "accelerate"), "launch", "--config_file", str(bad)],
        check=False,
    )
    assert proc.returncode != 0
    assert "error: the launch asked for several processes but started one" in proc.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()


@pytest.mark.launch
def test_rung6_runs_as_one_plain_process_and_refuses_mixed_precision_flag(tmp_path, data_dir):
    """`python scripts/6_accelerate.py` (and 1gpu.yaml) is accelerate with one process and no process group:
    it trains rung 1's model. Mixed precision belongs to accelerate's config there, so the flag is refused."""
    flags = ["--data-dir", data_dir, "--task", "cancer", "--epochs", "1"]
    run_script("1_single_gpu.py", *flags, "--output-dir", tmp_path / "one")
    run_script("6_accelerate.py", *flags, "--output-dir", tmp_path / "six")
    one, six = (load_file(str(tmp_path / d / "model.safetensors")) for d in ("one", "six"))
    assert max_abs_diff(one, six) <= FP32_TOLERANCE
    proc = run_script(
        "6_accelerate.py",
        *flags,
        "--output-dir",
        tmp_path / "c",
        "--mixed-precision",
        "bf16",
        check=False,
    )
    assert (
        proc.returncode == 2
        and "--mixed_precision bf16" in proc.stderr
        and proc.stderr.count("\n") == 1
    )


@pytest.mark.launch
def test_rung4_outside_torchrun_says_how_to_launch(tmp_path, data_dir):
    proc = run_script(
        "4_ddp_torchrun.py", "--data-dir", data_dir, "--output-dir", tmp_path, check=False
    )
    assert (
        proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "torchrun" in proc.stderr
    )


def test_every_accelerate_config_loads_and_every_key_is_commented():
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    configs = sorted((ROOT / "accelerate_configs").glob("*.yaml"))
    names = {c.stem for c in configs}
    assert {
        "1gpu",
        "2gpu_bf16",
        "2gpu_fp16",
        "8gpu_bf16",
        "cpu_2proc",
        "2machines_rank0",
        "2machines_rank1",
        "fsdp_2gpu",
    } <= names
    words = {"one": 1, "two": 2, "eight": 8}
    for path in configs:
        config = load_config_from_file(str(path))
        assert config.num_processes >= 1, path.name
        text = path.read_text()
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                assert "#" in line, f"{path.name}: key without a comment: {line}"
        # Keys accelerate 1.15 reads and then ignores (its launch flags' defaults win) are not claimed to work.
        assert not re.search(r"^(same_network|rdzv_backend):", text, re.M), path.name
        # What accelerate would launch, through its own launch-argument path, against what the header says.
        args, _, _ = _validate_launch_command(
            launch_command_parser().parse_args(["--config_file", str(path), "x.py"])
        )
        header = text.splitlines()[0].lower()
        count = re.match(r"# (\d+|one|two|eight) (processes|gpus?|machines x (\d+) gpus)", header)
        assert count, (path.name, header)
        claimed = int(words.get(count[1], count[1])) * (int(count[3]) if count[3] else 1)
        assert args.num_processes == claimed == config.num_processes, (
            path.name,
            args.num_processes,
            claimed,
        )
        precision = re.search(r"\b(bf16|fp16|fp32)\b", header)[1]
        assert args.mixed_precision == {"fp32": "no"}.get(precision, precision), path.name
        assert bool(args.use_cpu) == ("cpu" in header), path.name
        assert args.num_machines == (2 if "machines" in header else 1), path.name
    cpu = load_config_from_file(str(ROOT / "accelerate_configs" / "cpu_2proc.yaml"))
    assert (
        str(cpu.distributed_type).endswith("MULTI_GPU") and cpu.use_cpu and cpu.num_processes == 2
    )
    assert str(
        load_config_from_file(str(ROOT / "accelerate_configs" / "1gpu.yaml")).distributed_type
    ).endswith("NO")
    assert "accelerate env" in (ROOT / "accelerate_configs" / "README.md").read_text()


@pytest.mark.launch
def test_nproc_reaches_every_distributed_target():
    """NPROC on the command line sets the process count of every distributed target, accelerate's included
    (their configs' count otherwise)."""
    for target in (
        "ddp-spawn-cpu",
        "ddp-cpu",
        "ddp-amp-cpu",
        "accelerate-cpu",
        "fsdp-cpu",
        "collectives",
    ):
        out = subprocess.run(
            ["make", "-n", target, "NPROC=3"], cwd=ROOT, capture_output=True, text=True, timeout=60
        ).stdout
        assert re.search(r"(--nproc 3|--nproc_per_node=3|--num_processes 3)\b", out), (target, out)
    out = subprocess.run(
        ["make", "-n", "accelerate-cpu"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    assert "--num_processes" not in out  # the config's own count


@pytest.mark.launch
@pytest.mark.parametrize(
    "target,expected",
    [
        ("ddp-spawn-2gpu", "scripts/3_ddp_spawn.py --nproc 2"),
        ("ddp-2gpu", "torchrun --standalone --nproc_per_node=2 scripts/4_ddp_torchrun.py"),
        (
            "ddp-amp-2gpu",
            "torchrun --standalone --nproc_per_node=2 scripts/5_ddp_amp.py --mixed-precision bf16",
        ),
        (
            "accelerate-2gpu",
            "accelerate launch --config_file accelerate_configs/2gpu_bf16.yaml scripts/6_accelerate.py",
        ),
        ("fsdp-2gpu", "torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py"),
        ("fsdp-cpu", "torchrun --standalone --nproc_per_node=2 scripts/7_fsdp.py"),
        ("ddp-cpu", "torchrun --standalone --nproc_per_node=2 scripts/4_ddp_torchrun.py"),
        ("accelerate-cpu", "accelerate_configs/cpu_2proc.yaml"),
    ],
)
def test_make_targets_print_the_documented_commands(target, expected):
    out = subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert expected in " ".join(out.replace("\\\n", " ").split()), out


@pytest.mark.launch
@pytest.mark.skipif(
    torch.cuda.device_count() >= 2, reason="this machine has the GPUs the target needs"
)
def test_gpu_target_without_gpus_names_its_cpu_twin():
    proc = subprocess.run(
        ["make", "-s", "ddp-2gpu"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0
    assert "error: make ddp-2gpu needs 2 GPUs" in proc.stderr and "make ddp-cpu" in proc.stderr


ACCELERATOR_PROBE = """
import json, os, sys
import torch
from accelerate import Accelerator
accelerator = Accelerator(cpu=sys.argv[1] == "cpu") if sys.argv[1] != "plain" else Accelerator()
total = accelerator.reduce(torch.ones(()), "sum")  # 1 per process that really joined
seen = {"n": accelerator.num_processes, "type": str(accelerator.distributed_type), "sum": float(total)}
with open(os.path.join(sys.argv[2], str(os.getpid())), "w") as f:  # one file a process: no interleaving
    json.dump(seen, f)
accelerator.end_training()
"""


@pytest.mark.launch
def test_a_plain_accelerator_under_every_cpu_config_does_what_its_comments_say(tmp_path):
    """Issue 32/34: rung 6 joined its processes only because common/process.py set ACCELERATE_USE_CPU behind it,
    while a user's plain `Accelerator()` under the same config trained unconnected copies. Every config whose
    header says it runs on a CPU (`use_cpu: true`) is launched twice with a 2-line script: a plain
    `Accelerator()` must give what its header says (N unconnected copies, each alone), and `Accelerator(cpu=True)`,
    rung 6's line, N joined processes."""
    probe = tmp_path / "probe.py"
    probe.write_text(ACCELERATOR_PROBE)
    configs = sorted(
        p for p in (ROOT / "accelerate_configs").glob("*.yaml") if "use_cpu: true" in p.read_text()
    )
    assert [p.stem for p in configs] == ["cpu_2proc"]
    for config in configs:
        header = config.read_text()
        nproc = int(re.search(r"^num_processes: (\d+)", header, re.M)[1])
        seen = {}
        for mode in ("plain", "cpu"):
            out = tmp_path / f"{config.stem}-{mode}"
            out.mkdir()
            cmd = [*accelerate(config=config.stem), str(probe), mode, str(out)]
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            seen[mode] = [json.loads(p.read_text()) for p in sorted(out.iterdir())]
        print(f"\n{config.name}: {seen}")
        assert "A plain Accelerator() under this config trains 2 unconnected copies" in header
        guide = (ROOT / "guides" / "your-script.md").read_text()  # item A says the same
        assert "both processes: num_processes 1, process_index 0, DistributedType.NO" in guide
        assert "num_processes 2, process_index 0 and 1, DistributedType.MULTI_CPU" in guide
        assert seen["plain"] == [{"n": 1, "type": "DistributedType.NO", "sum": 1.0}] * nproc
        assert (
            seen["cpu"]
            == [{"n": nproc, "type": "DistributedType.MULTI_CPU", "sum": float(nproc)}] * nproc
        )


def _bn_worker(rank, world, port, out, frozen):
    """your-script.md item 19's proof run: an MLP with BatchNorm, SGD momentum, DistributedSampler order;
    BatchNorm frozen (eval mode while training) when `frozen`."""
    import torch.distributed as dist
    import torch.distributed.nn  # noqa: F401  (before the group: your-script.md step 2's abort at exit)
    from torch import nn

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    torch.manual_seed(0)
    x, y = torch.randn(256, 8, generator=torch.Generator().manual_seed(1)), torch.arange(256) % 3
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for m in model.modules():
        if frozen and isinstance(m, nn.BatchNorm1d):
            m.eval()
    for start in range(0, 256, 32):  # global batch 32: rank r takes every world-th sample of it
        idx = torch.arange(start, start + 32)[rank::world]
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), out)
    del model  # the reducer holds the group (your-script.md step 2)
    dist.destroy_process_group()


@pytest.mark.launch
def test_a_batchnorm_migration_is_proven_on_a_cpu_with_batchnorm_frozen(tmp_path):
    """Issue 34: how to prove a BatchNorm model's migration on a CPU (SyncBatchNorm refuses CPU). your-script.md
    item 19: freeze BatchNorm in the proof run, and 2 processes end on the plain script's weights; trained
    normally, they do not, and compare names BatchNorm statistics."""
    import subprocess
    import sys

    from conftest import free_port

    runs = {}
    for world in (1, 2):
        for frozen in (True, False):
            out = tmp_path / f"w{world}-{'frozen' if frozen else 'train'}.pt"
            torch.multiprocessing.spawn(
                _bn_worker, args=(world, free_port(), str(out), frozen), nprocs=world
            )
            runs[world, frozen] = torch.load(out, weights_only=True)
    frozen = max((runs[1, True][k] - runs[2, True][k]).abs().max().item() for k in runs[1, True])
    trained = max(
        (runs[1, False][k] - runs[2, False][k]).abs().max().item() for k in runs[1, False]
    )
    print(f"\nBatchNorm frozen: max diff {frozen:.2e}; trained normally: {trained:.2e}")
    assert frozen <= 1e-5 < trained
    compare = [sys.executable, str(ROOT / "scripts" / "tools" / "compare.py")]
    said = subprocess.run(
        [*compare, str(tmp_path / "w1-train.pt"), str(tmp_path / "w2-train.pt")],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "BatchNorm" in said, said
    guide = (ROOT / "guides" / "your-script.md").read_text()
    assert "**Freeze BatchNorm for the proof run**" in guide
