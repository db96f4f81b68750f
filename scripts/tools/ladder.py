"""What the tools and the tests share about the ladder: the rungs, the command that launches each one the way
its docstring says, and the comparison of two runs' weights. One place, imported by the demo, the benchmark,
compare.py and the tests.

    from ladder import RUNGS, command, max_abs_diff
    command(4, nproc=2)  # [".../torchrun", "--standalone", "--nproc_per_node=2", ".../scripts/4_ddp_torchrun.py"]
"""

import os
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]
ROOT = SCRIPTS.parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))  # scripts/common, for the tools in this folder

RUNGS = {
    1: "1_single_gpu",
    2: "2_data_parallel",
    3: "3_ddp_spawn",
    4: "4_ddp_torchrun",
    5: "5_ddp_amp",
    6: "6_accelerate",
    7: "7_fsdp",
}
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
# What the Makefile sets for launches: torchrun restarts over gloo fail or hang unless the workers stop sharing
# the rendezvous store; accelerate needs torchrun's standalone rendezvous for the same (guides/fault-tolerance.md).
LAUNCH_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "PET_STANDALONE": "1"}


def default_config():
    """The saved accelerate config for this machine: 1gpu / 2gpu_bf16 / 8gpu_bf16, or cpu_2proc without GPUs."""
    import torch

    gpus = torch.cuda.device_count()
    return (
        "cpu_2proc"
        if not gpus
        else "1gpu"
        if gpus == 1
        else "2gpu_bf16"
        if gpus == 2
        else "8gpu_bf16"
    )


def command(rung, nproc=1, launcher_flags=(), config=None, port=None):
    """The argv that launches rung `rung` on `nproc` processes as its docstring does: python (rungs 1-2), python
    with --nproc (rung 3, mp.spawn), torchrun (4, 5 and 7), accelerate launch with a saved config (6). `launcher_flags`
    go to torchrun or accelerate launch (e.g. --max-restarts=1); append the rung's own flags to the result."""
    script = str(SCRIPTS / f"{RUNGS[rung]}.py")
    bin_dir = Path(sys.executable).parent
    if rung in (1, 2):
        return [sys.executable, script]
    if rung == 3:
        return [sys.executable, script, "--nproc", str(nproc)]
    if rung in (4, 5, 7):
        return [
            str(bin_dir / "torchrun"),
            "--standalone",
            f"--nproc_per_node={nproc}",
            *launcher_flags,
            script,
        ]
    if port is None:
        from common import process

        port = process.free_port()
    config = config or default_config()
    return [
        str(bin_dir / "accelerate"),
        "launch",
        "--config_file",
        str(ROOT / "accelerate_configs" / f"{config}.yaml"),
        "--num_processes",
        str(nproc),
        "--main_process_port",
        str(port),
        *launcher_flags,
        script,
    ]


def environment(extra=None):
    """os.environ plus what every launch here gets: offline, the restart variables, unbuffered output."""
    return {**os.environ, **OFFLINE, **LAUNCH_ENV, "PYTHONUNBUFFERED": "1", **(extra or {})}


def max_abs_diff(a, b):
    """max |a - b| over two state dicts with the same keys (NaN when the keys differ)."""
    if a.keys() != b.keys():
        return float("nan")
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def job_tree(root):
    """`root` and every process descended from it, from /proc (Linux): a launch's whole job, torchrun's workers
    included (each starts in a session of its own, out of reach of a process-group kill)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree
