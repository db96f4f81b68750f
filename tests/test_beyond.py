"""Beyond the ladder: the collectives lab, the GPT task, DDP over a model split across two devices."""
import re
import sys
from pathlib import Path

import pytest

from conftest import run_script

TORCHRUN = [str(Path(sys.executable).parent / "torchrun"), "--standalone"]
OPS = ("send/recv", "broadcast from rank 0", "reduce (sum) to rank 0", "all_reduce (sum)", "scatter from rank 0",
       "gather to rank 0", "all_gather", "reduce_scatter (sum)", "ring all-reduce from send/recv",
       "subgroups: all_reduce (sum) inside dist.new_group")


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_collectives_lab_every_op(world_size):
    proc = run_script("collectives.py", launcher=[*TORCHRUN, f"--nproc_per_node={world_size}"])
    out = proc.stdout
    for title in OPS:
        assert title in out, title
    assert f"all 10 operations gave the expected results on {world_size} processes" in out
    assert "equal to dist.all_reduce on every rank: yes" in out
    total = world_size * (world_size + 1) // 2
    assert re.search(rf"all_reduce \(sum\)\n  rank +before +after\n(?: +\d+ +\d+ +{total}\n){{{world_size}}}", out)
    evens = list(range(0, world_size, 2))
    assert f"dist.new_group({evens})" in out
    # rank 2 is rank 1 inside the group of even ranks
    if world_size >= 3:
        assert re.search(r"\n +2 +1 +3 +\d+\n", out)
    assert len(re.findall(r"^ +\d+ +\d+ +\d+ +0 +cpu$", out, re.M)) == world_size  # the identity table
