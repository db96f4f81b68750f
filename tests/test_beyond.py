"""Beyond the ladder: the collectives lab, the GPT task, DDP over a model split across two devices."""

import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import BIN, accelerate, max_abs_diff, run_script

TORCHRUN = [str(BIN / "torchrun"), "--standalone"]  # --nproc_per_node per test


OPS = (
    "send/recv",
    "broadcast from rank 0",
    "reduce (sum) to rank 0",
    "all_reduce (sum)",
    "scatter from rank 0",
    "gather to rank 0",
    "all_gather",
    "reduce_scatter (sum)",
    "ring all-reduce from send/recv",
    "subgroups: all_reduce (sum) inside dist.new_group",
)


# 2 and 3 ran the same checks (the subgroups need 3 or more)
@pytest.mark.launch
@pytest.mark.parametrize("world_size", [4])
def test_collectives_lab_every_op(world_size):
    proc = run_script("labs/collectives.py", launcher=[*TORCHRUN, f"--nproc_per_node={world_size}"])
    out = proc.stdout
    for title in OPS:
        assert title in out, title
    assert f"all 10 operations gave the expected results on {world_size} processes" in out
    assert "equal to dist.all_reduce on every rank: yes" in out
    total = world_size * (world_size + 1) // 2
    assert re.search(
        rf"all_reduce \(sum\)\n  rank +before +after\n(?: +\d+ +\d+ +{total}\n){{{world_size}}}",
        out,
    )
    evens = list(range(0, world_size, 2))
    assert f"dist.new_group({evens})" in out
    # rank 2 is rank 1 inside the group of even ranks
    if world_size >= 3:
        assert re.search(r"\n +2 +1 +3 +\d+\n", out)
    # the identity table
    assert len(re.findall(r"^ +\d+ +\d+ +\d+ +0 +cpu$", out, re.M)) == world_size


def launch(script, out, data_dir, *flags, launcher=None):
    run_script(script, "--data-dir", data_dir, "--output-dir", out, *flags, launcher=launcher)
    return load_file(Path(out) / "model.safetensors"), json.loads(
        (Path(out) / "metrics.json").read_text()
    )


@pytest.mark.launch
def test_gpt_task_trains_unchanged_in_every_kind_of_rung(tmp_path, data_dir):
    """--task gpt (byte-level, the project's own README and guides as the corpus): rung 1, torchrun DDP with bf16
    and accelerate all train it with no change to the rungs; accelerate (fp32) ends on rung 1's weights, bf16
    within its tolerance, and tokens/s is reported."""
    flags = ["--task", "gpt", "--max-steps", 8]
    w1, m1 = launch("1_single_gpu.py", tmp_path / "1", data_dir, *flags, "--batch-size", 32)
    assert m1["model"] == "GPT" and m1["steps"] == 8 and m1["eval_samples"] > 100
    assert m1["tokens_per_second"] == pytest.approx(m1["samples_per_second"] * 64)
    assert "mfu" not in m1  # MFU only on a GPU whose peak is known
    assert torch.equal(w1["tok.weight"], w1["head.weight"])  # weight tying survives the checkpoint
    w6, m6 = launch(
        "6_accelerate.py",
        tmp_path / "6",
        data_dir,
        *flags,
        "--batch-size",
        16,
        launcher=accelerate(),
    )
    assert m6["world_size"] == 2 and m6["eval_samples"] == m1["eval_samples"]
    assert max_abs_diff(w6, w1) <= 1e-5
    w5, m5 = launch(
        "5_ddp_amp.py",
        tmp_path / "5",
        data_dir,
        *flags,
        "--batch-size",
        16,
        "--mixed-precision",
        "bf16",
        launcher=[*TORCHRUN, "--nproc_per_node=2"],
    )
    assert m5["mixed_precision"] == "bf16" and 0 < max_abs_diff(w5, w1) <= 0.05


def test_gpt_model_is_causal_and_sized_by_flags():
    from common import models
    from common.data import Info

    torch.manual_seed(0)
    model = models.build(Info("gpt", "text", (16,), 256), "auto", n_layer=3, n_head=2, n_embd=32)
    assert len(model.blocks) == 3 and model.tok.weight.shape == (256, 32)
    x = torch.randint(0, 256, (2, 16))
    logits = model(x)
    # (batch, vocab, time): what F.cross_entropy takes for sequences
    assert logits.shape == (
        2,
        256,
        16,
    )
    changed = x.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 256  # the future changes ...
    # ... the past does not see it
    assert torch.allclose(model(changed)[:, :, :10], logits[:, :, :10], atol=1e-6)
    with pytest.raises(Exception, match="does not fit"):
        models.build(Info("cancer", "tabular", (30,), 2), "gpt")


@pytest.mark.launch
def test_ddp_over_a_model_split_across_two_devices(tmp_path, data_dir):
    flags = ["--task", "cancer", "--epochs", 2]
    w1, _ = launch("1_single_gpu.py", tmp_path / "1", data_dir, *flags, "--batch-size", 32)
    w, m = launch(
        "labs/ddp_model_parallel.py",
        tmp_path / "mp",
        data_dir,
        *flags,
        "--batch-size",
        16,
        launcher=[*TORCHRUN, "--nproc_per_node=2"],
    )
    assert m["world_size"] == 2 and m["devices"] == ["cpu", "cpu"] and m["steps"] == 28
    assert max_abs_diff(w, w1) <= 1e-5  # the split moves weights, not arithmetic
