"""The sbatch scripts under a real Slurm cluster (tests/slurm_cluster.py: slurmctld and two slurmd on this
machine), as a user submits them on CPU nodes: two nodes x 1 process, each job interrupted once and requeued,
each ending on rung 1's weights. And the multi-node torchrun restart that used to delete the checkpoints.

Slurm's own clock is the one thing not waited for: the time-limit warning (`--signal=B:USR1@300`) is sent with
`scancel --batch --signal=USR1`, what Slurm sends at that time; guides/multi-node.md has a real `--time=1` run."""

import os
import subprocess
import time

import pytest
from slurm_cluster import Cluster, Unavailable
from test_reliability import RESTART_ENV, TASK, run, weights

from conftest import BIN, OFFLINE, ROOT, SCRIPTS, free_port, max_abs_diff

pytestmark = pytest.mark.launch
# 2 nodes x 16 = rung 1's 32; 16 epochs, 224 steps. The interruption comes at the first checkpoint (step 14) and
# takes a second or two to reach the rung (a poll, scancel, the batch script's trap, the launcher): with 6 epochs
# (84 steps, about 2 s of training on an idle machine) a clean clone run alone once finished before it arrived
# ("the run finished (metrics.json written); exit 1 came after it"), so the job was never requeued
EPOCHS = "16"
FLAGS = ["--task", "cancer", "--epochs", EPOCHS, "--batch-size", "16"]
CPU_NODES = ["--nodes=2", "--gpus-per-node=0", "--cpus-per-task=1", "--time=10"]


@pytest.fixture(scope="session")  # once a worker: xdist may run other modules' tests between these
def cluster(tmp_path_factory):
    try:
        c = Cluster(tmp_path_factory.mktemp("slurm")).start()
    except Unavailable as e:
        pytest.skip(f"no Slurm here: {e}")
    yield c
    c.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory, data_dir):
    """Rung 1 at the jobs' global batch, uninterrupted: where every job must end."""
    out = tmp_path_factory.mktemp("plain")
    run(1, out, data_dir, "--task", "cancer", "--epochs", EPOCHS)
    return weights(out)


def submit_and_interrupt(cluster, script, name, data_dir, plain, interrupt, env=None):
    """Submit `script` on two CPU nodes, interrupt it once its first checkpoint is written, let the requeued job
    run to the end. Asserts it completed after one requeue with every start in its log, and returns the log and
    the max |w - w_rung1| of its weights."""
    job = cluster.sbatch(
        *CPU_NODES,
        f"--job-name={name}",
        "--export=ALL,NPROC_PER_NODE=1" + "".join(f",{k}={v}" for k, v in (env or {}).items()),
        f"scripts/labs/slurm/{script}",
        *FLAGS,
        "--data-dir",
        str(data_dir),
        cwd=ROOT,
        # as a user submits: the virtualenv's python, torchrun and accelerate first on PATH (make test does
        # not activate it, and the job inherits sbatch's environment)
        env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **OFFLINE},
    )
    out = ROOT / "out" / f"{name}-{job}"
    log = ROOT / f"slurm-{name}-{job}.out"
    try:
        cluster.wait(job, lambda s: s == "RUNNING" and any(out.glob("checkpoints/step-*")))
        subprocess.run([*interrupt, str(job)], env=cluster.env, check=True, timeout=30)
        state, restarts = cluster.wait(
            job, lambda s: s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
        )
        text = log.read_text()
        starts = [line for line in text.splitlines() if f"job {job} start " in line]
        assert state == "COMPLETED" and restarts == 1 and len(starts) == 2, text[-3000:]
        assert "2 node(s) x 1 process(es)" in starts[1] and "requeued, it resumes there" in text
        assert "stopped by SIGTERM at step" in text and "resuming from" in text, text[-3000:]
        return text, max_abs_diff(weights(out), plain)
    finally:
        subprocess.run(["scancel", str(job)], env=cluster.env, capture_output=True, timeout=60)
        log.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(out)], timeout=60)


def test_torchrun_sbatch_on_two_nodes_is_requeued_and_ends_on_rung_1s_weights(
    cluster, plain, data_dir
):
    """`scontrol requeue` mid-run: Slurm's SIGTERM reaches the rung through srun and torchrun, it checkpoints,
    the job is requeued (Restarts=1), its log keeps both starts, and the second start resumes."""
    _, diff = submit_and_interrupt(
        cluster, "torchrun.sbatch", "ladder-torchrun", data_dir, plain, ["scontrol", "requeue"]
    )
    print(f"\ntorchrun.sbatch, 2 nodes, requeued once: max |w - w_rung1| = {diff:.2e}")
    assert diff <= 1e-5


def test_accelerate_sbatch_at_its_time_limit_requeues_itself_and_ends_on_rung_1s_weights(
    cluster, plain, data_dir
):
    """The time-limit warning (USR1 to the batch script): the script sends SIGTERM to the job's steps, the rung
    checkpoints, the script requeues the job itself (a time limit never requeues by --requeue), and the next
    start resumes. The same path serves `scancel --signal=TERM`."""
    _, diff = submit_and_interrupt(
        cluster,
        "accelerate.sbatch",
        "ladder-accelerate",
        data_dir,
        plain,
        ["scancel", "--batch", "--signal=USR1"],
        env={"MIXED_PRECISION": "no"},
    )
    print(f"\naccelerate.sbatch, 2 nodes, time-limit requeue: max |w - w_rung1| = {diff:.2e}")
    assert diff <= 1e-5


def test_two_node_torchrun_restart_keeps_the_checkpoints_and_completes(
    tmp_path, data_dir, reference
):
    """Issue 24: two torchrun agents (c10d, --max-restarts=1), rank 1 SIGKILLed at step 20. The healthy node
    restarts its worker with TORCHELASTIC_RESTART_COUNT=0; it used to start afresh and delete the checkpoints,
    and the directory ended empty. The checkpoints carry the launch's id (--rdzv-id), so both nodes resume."""
    port = free_port()
    env = {
        **os.environ,
        **OFFLINE,
        **RESTART_ENV,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": str(ROOT / "tests" / "faults"),
        "DDP_LADDER_FAULT": "kill@20:1",
        "DDP_LADDER_FAULT_MARKER": str(tmp_path / "marker"),
    }
    procs = [
        subprocess.Popen(
            [
                str(BIN / "torchrun"),
                "--nnodes=2",
                "--nproc_per_node=1",
                "--max-restarts=1",
                "--rdzv-backend=c10d",
                "--rdzv-id=job-7",
                f"--rdzv-endpoint=127.0.0.1:{port}",
                str(SCRIPTS / "4_ddp_torchrun.py"),
                *TASK,
                "--batch-size",
                "16",
                "--data-dir",
                str(data_dir),
                "--output-dir",
                str(tmp_path / "out"),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    output = "\n".join(out + err for out, err in results)
    assert [p.returncode for p in procs] == [0, 0], output[-4000:]
    assert "fault: kill" in output and "resuming from" in output and "step 14)" in output, output[
        -4000:
    ]
    assert sorted(p.name for p in (tmp_path / "out" / "checkpoints").iterdir()) == [
        "step-00000014",
        "step-00000028",
    ]
    diff = max_abs_diff(weights(tmp_path / "out"), reference[1])
    print(f"\ntwo torchrun nodes, rank 1 killed at step 20: max |w - w_rung1| = {diff:.2e}")
    assert diff <= 1e-5


def test_accelerate_sbatch_passes_arguments_with_spaces_quotes_and_semicolons_intact(
    cluster, data_dir, tmp_path
):
    """Issue 35: accelerate.sbatch ran `bash -c "... $*"` on each node, so a job argument holding `;touch x` was
    executed and arguments with spaces were split. A job whose name and arguments hold spaces, a quote and
    `;touch PWNED` trains to the end, its data read through the odd path as one argument, and nothing ran."""
    odd = tmp_path / "data dir 'q' ;touch PWNED"
    odd.symlink_to(data_dir, target_is_directory=True)
    name = "ladder acc 'q' x"
    planted = ROOT / "PWNED"
    planted.unlink(missing_ok=True)
    job = cluster.sbatch(
        *CPU_NODES,
        f"--job-name={name}",
        "--export=ALL,NPROC_PER_NODE=1,MIXED_PRECISION=no",
        "scripts/labs/slurm/accelerate.sbatch",
        *("--task", "cancer", "--epochs", "1", "--batch-size", "16", "--data-dir", str(odd)),
        cwd=ROOT,
        env={"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **OFFLINE},
    )
    out = ROOT / "out" / f"{name}-{job}"
    log = ROOT / f"slurm-{name}-{job}.out"
    try:
        state, _ = cluster.wait(job, lambda s: s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"))
        text = log.read_text() if log.exists() else "(no log)"
        assert state == "COMPLETED", text[-3000:]
        assert not planted.exists() and "done: eval accuracy" in text, text[-3000:]
        assert (out / "metrics.json").exists() and (out / "model.safetensors").exists()
    finally:
        subprocess.run(["scancel", str(job)], env=cluster.env, capture_output=True, timeout=60)
        log.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(out)], timeout=60)
        planted.unlink(missing_ok=True)


def test_stop_returns_only_once_what_it_started_has_exited(tmp_path):
    """A munged that takes its time to exit after SIGTERM (here a shell that sleeps in its TERM trap) is gone
    when stop() returns: the next cluster's start() asks whether a munged runs, and must not hear a dying one."""
    slow = subprocess.Popen(
        ["bash", "-c", "trap 'sleep 0.5; exit 0' TERM; while :; do sleep 0.05; done"]
    )
    time.sleep(0.3)  # the trap is set
    cluster = Cluster(tmp_path)
    cluster.pids.append(slow.pid)
    cluster.stop()
    assert slow.poll() is not None  # exited (and reaped here) before stop() returned
