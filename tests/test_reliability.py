"""Reliability on CPU, 2 processes over gloo: a rank killed and restarted, preemption by SIGTERM, hangs, bad
launches, eval at awkward sizes. Faults are injected from outside the rungs (tests/faults/sitecustomize.py), at a
step the test chooses. Crashes during a save and corrupt checkpoints: tests/test_checkpoint.py."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from common import UsageError, preemption
from conftest import BIN, OFFLINE, ROOT, SCRIPTS, command, free_port, max_abs_diff
from ladder import job_tree

FAULTS = ROOT / "tests" / "faults"
RESTART_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}  # what the Makefile and the guides set
TASK = ["--task", "cancer", "--epochs", "2"]  # 14 steps an epoch at global batch 32: 28 steps
EXACT = 1e-6  # max |w - w_reference| after a fault and a resume (measured: 0 against the same rung, 6e-8 vs rung 1)
# seconds from SIGTERM to a checkpointed exit (the schedulers' grace period is 30)
SIGTERM_BOUND = 20


def start(
    rung, out, data_dir, *flags, fault=None, marker=None, env=None, launcher_flags=(), nproc=None
):
    """Start a rung in its own session (so a test can signal the whole job, as Slurm does) and return it: one
    process for rungs 1-2, two for 3-6, at a global batch of 32."""
    nproc = nproc or (1 if rung <= 2 else 2)
    batch = 32 // nproc if "--batch-size" not in map(str, flags) else None
    cmd = [
        *command(rung, nproc, launcher_flags),
        *(["--batch-size", str(batch)] if batch else []),
        "--data-dir",
        str(data_dir),
        "--output-dir",
        str(out),
        *map(str, flags),
    ]
    full_env = {**os.environ, **OFFLINE, "PYTHONUNBUFFERED": "1", **RESTART_ENV, **(env or {})}
    if fault:
        full_env.update(
            {
                "PYTHONPATH": str(FAULTS),
                "DDP_LADDER_FAULT": fault,
                "DDP_LADDER_FAULT_MARKER": str(marker),
                "DDP_LADDER_FAULT_PARENT": "1" if rung >= 3 else "",
            }
        )
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill_job(proc):
    """SIGKILL the launcher and every worker (torchrun starts each worker in a session of its own)."""
    for pid in job_tree(proc.pid)[::-1]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def drain(proc):
    """SIGKILL the job and read what it printed. Bounded: a process the walk from the launcher missed (one whose
    parent had exited, handed to init) would hold the pipes open, and an unbounded read then waits forever."""
    kill_job(proc)
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait(timeout=30)
        return (
            "",
            "(the pipes stayed open 30 s after the kill: a process outside the job's tree holds them)",
        )


def finish(proc, timeout=240):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = drain(proc)
        raise AssertionError(f"hung for {timeout} s\n{out[-3000:]}\n{err[-3000:]}") from None
    return proc.returncode, out, err


def run(rung, out, data_dir, *flags, expect=0, **kw):
    code, stdout, stderr = finish(start(rung, out, data_dir, *flags, **kw))
    assert code == expect, (
        f"rung {rung} exited {code}, expected {expect}\n{stdout[-3000:]}\n{stderr[-3000:]}"
    )
    return stdout, stderr


def weights(out):
    return load_file(Path(out) / "model.safetensors")


def metrics_of(out):
    return json.loads((Path(out) / "metrics.json").read_text())


@pytest.mark.launch
def test_a_killed_rank_restarts_and_ends_on_the_same_weights(tmp_path, data_dir, reference):
    """SIGKILL rank 1 mid-epoch 2 under torchrun --max-restarts=1: all workers restart, resume from the epoch-1
    checkpoint and end bitwise where the uninterrupted run ends. Once per suite run (5 of 5 when measured in a
    loop); restarts over gloo used to fail 5 times in 8 (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 is the fix)."""
    out = tmp_path / "run"
    stdout, stderr = run(
        4,
        out,
        data_dir,
        *TASK,
        fault="kill@20:1",
        marker=tmp_path / "marker",
        launcher_flags=["--max-restarts=1"],
    )
    assert "fault: kill at step 20 on rank 1" in stdout
    assert "resuming from" in stdout and "step-00000014" in stdout, stdout
    assert "warning: restarts may fail" not in stdout  # the store is not shared
    m = metrics_of(out)
    assert (m["steps"], m["epochs"]) == (28, 2)
    assert max_abs_diff(weights(out), reference[4]) <= EXACT
    assert max_abs_diff(weights(out), reference[1]) <= EXACT


@pytest.mark.launch
def test_rung6_killed_rank_restarts_under_accelerate_launch(tmp_path, data_dir, reference):
    """With PET_STANDALONE=1, as the Makefile launches it: accelerate 1.15 runs one machine with torchrun's static
    rendezvous, whose store the workers always share whatever TORCH_DISABLE_SHARE_RDZV_TCP_STORE says (a restart
    then hung once in a clean-clone run), and it ignores a config's rdzv_backend. torchrun's standalone mode,
    switched on by its PET_STANDALONE variable, gives a c10d rendezvous on a free port, unshared."""
    stdout, _ = run(
        6,
        tmp_path / "out",
        data_dir,
        *TASK,
        fault="kill@20:1",
        marker=tmp_path / "m",
        launcher_flags=["--max_restarts", "1"],
        env={"PET_STANDALONE": "1"},
    )
    assert "resuming from" in stdout and "step-00000014" in stdout, stdout
    assert "warning: restarts may fail" not in stdout  # the store is not shared
    assert max_abs_diff(weights(tmp_path / "out"), reference[1]) <= EXACT


@pytest.mark.launch
def test_shared_rendezvous_store_with_restarts_is_warned_about(tmp_path, data_dir):
    stdout, _ = run(
        4,
        tmp_path / "out",
        data_dir,
        "--task",
        "cancer",
        "--max-steps",
        1,
        launcher_flags=["--max-restarts=1"],
        env={"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "0"},
    )
    assert (
        "warning: restarts may fail or hang" in stdout
        and "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in stdout
    )


# SIGTERM to rung 3's launcher alone (Kubernetes signals PID 1, which must pass it on: torchrun and accelerate
# do, rung 3's parent does it itself). Rung 1: test_ctrl_c_...[group-sigterm-...]; rung 2 on a CPU is rung 1;
# rungs 4-5 share the loop and launcher (test_ctrl_c_... signals torchrun's whole job); rung 6: Ctrl-C under
# accelerate launch, below.
@pytest.mark.launch
def test_sigterm_to_rung3s_launcher_checkpoints_exits_and_resumes_exactly(
    tmp_path, data_dir, reference
):
    rung, out, marker = 3, tmp_path / "out", tmp_path / "marker"
    flags = TASK
    proc = start(rung, out, data_dir, *flags, fault="term-parent@17:1", marker=marker)
    code, stdout, stderr = finish(proc)
    exited = time.time()
    assert code == preemption.EXIT_CODE, (code, stderr[-2000:])
    took = exited - float(marker.read_text())
    print(f"\nrung 3: SIGTERM to the launcher at step 17 -> checkpointed exit {took:.2f} s later")
    assert took < SIGTERM_BOUND
    stop = 20  # the signal came after step 17; the ranks agree to stop at the next multiple of CHECK_EVERY
    assert f"stopped by SIGTERM at step {stop}, checkpoint saved" in stdout, stdout + stderr[-2000:]
    assert sorted(p.name for p in (out / "checkpoints").iterdir())[-1] == f"step-{stop:08d}"
    assert not (out / "model.safetensors").exists()  # a preempted run is not a finished one
    stdout, _ = run(rung, out, data_dir, *flags, "--resume", "auto")
    assert f"step {stop})" in stdout
    assert metrics_of(out)["steps"] == 28
    assert max_abs_diff(weights(out), reference[1]) <= EXACT


@pytest.mark.launch
def test_resume_mid_epoch_at_another_batch_size_or_world_size_continues_or_refuses(
    tmp_path, data_dir
):
    """A checkpoint 40 steps of 8 (320 samples) into epoch 0 continues at a global batch of 32, in one process and
    in two, from the next unseen sample (4 more steps of epoch 0, then epoch 1: 58 steps), and is refused in one
    line at 24, which does not divide 320. (It used to loop forever: its batch counter was past the new epoch's
    end.)"""
    first = tmp_path / "first"
    run(1, first, data_dir, "--task", "cancer", "--batch-size", 8, "--max-steps", 40)
    ckpt = first / "checkpoints" / "step-00000040"
    for rung, batch in ((1, 32), (4, 16)):
        out = tmp_path / f"rung{rung}"
        run(
            rung,
            out,
            data_dir,
            "--task",
            "cancer",
            "--batch-size",
            batch,
            "--epochs",
            2,
            "--resume",
            ckpt,
        )
        assert (metrics_of(out)["steps"], metrics_of(out)["epochs"]) == (58, 2)
    _, stderr = run(
        1,
        tmp_path / "bad",
        data_dir,
        "--task",
        "cancer",
        "--batch-size",
        24,
        "--epochs",
        2,
        "--resume",
        ckpt,
        expect=2,
    )
    assert "not a whole number of this run's optimizer steps of 24 samples" in one_error_line(
        stderr
    )


@pytest.mark.launch
@pytest.mark.parametrize(
    "rung,fault,flags,signame,code",
    [
        (
            1,
            "term-group@17:0",
            ["--num-workers", 2],
            "SIGTERM",
            143,
        ),  # Slurm signals every process, loader workers too
        (
            1,
            "int-parent@17:0",
            [],
            "SIGINT",
            130,
        ),  # Ctrl-C on the plain script: no KeyboardInterrupt, a checkpoint
        (
            4,
            "int-group@17:1",
            [],
            "SIGINT",
            1,
        ),  # Ctrl-C on torchrun: SIGINT to the launcher and every worker
        (
            6,
            "int-group@17:1",
            [],
            "SIGINT",
            1,
        ),  # Ctrl-C on accelerate launch (torchrun inside): the same, and it says 1
    ],
    ids=[
        "group-sigterm-with-loader-workers",
        "ctrl-c-rung1",
        "ctrl-c-torchrun",
        "ctrl-c-accelerate-launch",
    ],
)
def test_ctrl_c_and_group_signals_checkpoint_first(
    tmp_path, data_dir, reference, rung, fault, flags, signame, code
):
    out = tmp_path / "out"
    proc = start(rung, out, data_dir, *TASK, *flags, fault=fault, marker=tmp_path / "marker")
    returncode, stdout, stderr = finish(proc)
    # torchrun, interrupted, reports 1 after its workers
    assert returncode == code, (
        returncode,
        stderr[-2000:],
    )
    assert f"stopped by {signame} at step 20, checkpoint saved" in stdout, stdout + stderr[-2000:]
    assert "KeyboardInterrupt" not in stderr and "worker killed by signal" not in stderr
    assert sorted(p.name for p in (out / "checkpoints").iterdir())[-1] == "step-00000020"
    run(rung, out, data_dir, *TASK, *flags, "--resume", "auto")
    assert metrics_of(out)["steps"] == 28 and max_abs_diff(weights(out), reference[1]) <= EXACT


def tiny_filesystem(size):
    """A command prefix that runs under a mount namespace with a tmpfs of `size` on its first argument's place:
    a real full disk (ENOSPC), not an injected error. Root only (unshare and mount)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip(
            "a real small filesystem needs root and unshare (mount namespaces); the injected faults in "
            "tests/test_checkpoint.py still run"
        )
    return lambda where, cmd: [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'mkdir -p "$1" && mount -t tmpfs -o size={size} tmpfs "$1" && shift && exec "$@"',
        "sh",
        str(where),
        *map(str, cmd),
    ]


@pytest.mark.launch
def test_a_really_full_disk_is_one_line_and_leaves_no_debris(tmp_path, data_dir):
    """--output-dir on a 48 KB tmpfs: the first checkpoint (about 52 KB for the cancer MLP) does not fit. The run
    stops with one error line; no .tmp-* directory or file is left behind. The same for a full --data-dir."""
    wrap = tiny_filesystem("48k")
    out, script = tmp_path / "full", SCRIPTS / "1_single_gpu.py"
    cmd = wrap(
        out,
        [
            sys.executable,
            script,
            "--task",
            "cancer",
            "--epochs",
            1,
            "--data-dir",
            data_dir,
            "--output-dir",
            out,
        ],
    )
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **OFFLINE}
    )
    if "mount" in proc.stderr and "permission denied" in proc.stderr.lower():
        pytest.skip(f"this container cannot mount a tmpfs: {proc.stderr.strip()[:200]}")
    line = one_error_line(proc.stderr)
    assert (
        proc.returncode == 2 and "could not write checkpoint" in line and "No space left" in line
    ), proc.stderr
    cache = tmp_path / "cache"
    cmd = wrap(
        cache,
        [
            sys.executable,
            script,
            "--task",
            "digits",
            "--epochs",
            1,
            "--data-dir",
            cache,
            "--output-dir",
            tmp_path / "out2",
        ],
    )
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **OFFLINE}
    )
    line = one_error_line(proc.stderr)
    assert (
        proc.returncode == 2 and "could not write the prepared dataset under --data-dir" in line
    ), proc.stderr


@pytest.mark.launch
def test_a_hung_rank_becomes_an_error_within_the_timeout(tmp_path, data_dir):
    """Rank 1 stops joining collectives at step 5; rank 0 must fail within --dist-timeout with a line that names
    the likely cause, not wait forever."""
    marker = tmp_path / "marker"
    proc = start(
        4,
        tmp_path / "out",
        data_dir,
        "--task",
        "cancer",
        "--dist-timeout",
        3,
        fault="stall@5:1",
        marker=marker,
    )
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # line by line
    reader.start()
    deadline = time.time() + 120
    try:  # torchrun then waits its 30 s grace for the hung rank to exit: the test does not wait for that
        while (
            not any(line.startswith("error (rank 0)") for line in lines) and time.time() < deadline
        ):
            time.sleep(0.2)
        failed_after = time.time() - float(marker.read_text())
    finally:
        drain(proc)
    print(
        f"\nrank 1 hung at step 5 -> rank 0's error {failed_after:.2f} s later (--dist-timeout 3)"
    )
    error = [line for line in lines if line.startswith("error")]
    assert error and "a collective waited more than --dist-timeout 3 s" in error[0], "".join(
        lines[-30:]
    )
    assert "another rank stopped joining collectives" in error[0]
    # the timeout, plus the steps and the start of the failure path
    assert failed_after < 3 + 10, failed_after


def listening_socket():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def one_error_line(stderr):
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, stderr[-3000:]
    assert f'File "{SCRIPTS}' not in stderr, stderr[-3000:]  # no traceback through our scripts
    return errors[0]


@pytest.mark.launch
def test_bad_launches_fail_in_one_line_before_training(tmp_path, data_dir, monkeypatch):
    flags = ["--data-dir", data_dir, "--output-dir", tmp_path / "out", "--task", "cancer"]
    with listening_socket() as s:  # rung 3's rendezvous port is taken
        _, stderr = run(
            3,
            tmp_path / "out",
            data_dir,
            "--task",
            "cancer",
            expect=2,
            env={"MASTER_PORT": str(s.getsockname()[1])},
        )
        assert (
            f"port {s.getsockname()[1]} is in use" in one_error_line(stderr)
            and "MASTER_PORT" in stderr
        )
    # WORLD_SIZE without RANK (a half-copied environment): rungs 4 and 6 refuse it
    for script in ("4_ddp_torchrun.py", "6_accelerate.py"):
        proc = subprocess.run(
            [sys.executable, SCRIPTS / script, *map(str, flags)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, **OFFLINE, "WORLD_SIZE": "2"},
            timeout=300,
        )
        assert proc.returncode == 2 and "RANK" in one_error_line(proc.stderr), proc.stderr
    # A manual env:// launch (no torchrun): a port in use, and WORLD_SIZE=2 with one rank started (it says what it
    # waits for, then fails in one line after --dist-timeout instead of a DistStoreError traceback).
    manual = {
        **os.environ,
        **OFFLINE,
        "MASTER_ADDR": "127.0.0.1",
        "RANK": "0",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
    }
    with listening_socket() as s:
        proc = subprocess.run(
            [sys.executable, SCRIPTS / "4_ddp_torchrun.py", *map(str, flags)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**manual, "WORLD_SIZE": "1", "MASTER_PORT": str(s.getsockname()[1])},
            timeout=300,
        )
        assert proc.returncode == 2 and f"port {s.getsockname()[1]} is in use" in one_error_line(
            proc.stderr
        )
    proc = subprocess.run(
        [sys.executable, SCRIPTS / "4_ddp_torchrun.py", *map(str, flags), "--dist-timeout", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**manual, "WORLD_SIZE": "2", "MASTER_PORT": str(free_port())},
        timeout=300,
    )
    assert "waiting up to --dist-timeout 2 s for 2 processes" in proc.stdout
    assert proc.returncode == 2 and "only 1 of 2 processes joined" in one_error_line(proc.stderr), (
        proc.stderr
    )
    assert not (tmp_path / "out" / "checkpoints").exists()
    # more processes than GPUs: rung 3's flags are checked before it spawns anything
    from common import flags

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(sys, "argv", ["3_ddp_spawn.py"])
    with pytest.raises(UsageError, match="--nproc 2 but 1 GPU"):
        flags.parse(argv=["--nproc", "2"], uses=("nproc",))


@pytest.mark.launch
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")
def test_gpu_config_on_a_machine_without_gpus(tmp_path):
    """A GPU config on a machine without GPUs stops before launching. (accelerate launch itself does not pass
    the config's use_cpu to the processes, so rung 6 cannot tell: the check is in front of the launch.)"""
    for target, config, says in [
        ("accelerate-2gpu", None, "GPU processes on this machine and it has 0"),
        (
            "accelerate-cpu",
            "accelerate_configs/2gpu_fp32.yaml",
            "GPU processes on this machine and it has 0",
        ),
        (
            "accelerate-cpu",
            "accelerate_configs/fsdp_2gpu.yaml",
            "silently trains as plain DDP: run make fsdp-cpu",
        ),
        ("fsdp-2gpu", None, "needs 2 GPUs, this machine has 0: run make fsdp-cpu"),
    ]:
        proc = subprocess.run(
            ["make", "--no-print-directory", target, *([f"CONFIG={config}"] if config else [])],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        line = one_error_line(proc.stderr)
        assert proc.returncode != 0 and says in line, proc.stderr


@pytest.mark.launch
def test_launch_check_configs_and_ports(tmp_path):
    from launch_check import check_config, check_port

    (tmp_path / "bad.yaml").write_text("distributed_type: [oops\n")
    (tmp_path / "typo.yaml").write_text("distributed_type: MULTI_GPUU\nnum_processes: 2\n")
    (tmp_path / "mpi.yaml").write_text("distributed_type: MULTI_CPU\nnum_processes: 2\n")
    for name, message in [
        ("missing.yaml", "does not exist"),
        ("bad.yaml", "not valid YAML at line"),
        ("typo.yaml", "'MULTI_GPUU' is not one of"),
        ("mpi.yaml", "runs ONE process"),
    ]:
        with pytest.raises(UsageError, match=message):
            check_config(str(tmp_path / name), None)
    check_config(str(ROOT / "accelerate_configs" / "cpu_2proc.yaml"), None)
    # the two-machine files, unedited (accelerate
    with pytest.raises(UsageError, match="main_process_ip is empty"):
        # itself stops in 3 s)
        check_config(str(ROOT / "accelerate_configs" / "2machines_rank0.yaml"), None)
    with listening_socket() as s:
        with pytest.raises(UsageError, match="is in use"):
            check_port(s.getsockname()[1])
    proc = subprocess.run(
        ["make", "--no-print-directory", "accelerate-cpu", f"CONFIG={tmp_path / 'mpi.yaml'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "MULTI_CPU" in one_error_line(proc.stderr)


@pytest.mark.launch
def test_dataset_on_one_node_only_fails_before_training(tmp_path, data_dir):
    """Two torchrun "nodes" on this machine, each in its own directory: the relative --dataset path exists on
    node 0 only. Node 1 says so in one line; node 0 reports the lost rank instead of a traceback."""
    rng = np.random.default_rng(0)
    node0, node1 = tmp_path / "node0", tmp_path / "node1"
    for d in (node0, node1):
        d.mkdir()
    x = rng.normal(size=(100, 2))
    rows = ["a,b,label"] + [f"{a:.4f},{b:.4f},{int(a + b > 0)}" for a, b in x]
    (node0 / "train.csv").write_text("\n".join(rows) + "\n")
    port = free_port()
    procs = [
        subprocess.Popen(
            [
                str(BIN / "torchrun"),
                "--nnodes=2",
                f"--node-rank={rank}",
                "--nproc_per_node=1",
                "--rdzv-backend=c10d",
                f"--rdzv-endpoint=127.0.0.1:{port}",
                str(SCRIPTS / "4_ddp_torchrun.py"),
                "--dataset",
                "train.csv",
                "--output-dir",
                str(tmp_path / "out"),
            ],
            cwd=node,
            env={**os.environ, **OFFLINE, "PYTHONPATH": str(SCRIPTS)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, node in enumerate((node0, node1))
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode != 0 for p in procs)
    rank1 = [line for line in results[1][1].splitlines() if line.startswith("error")]
    rank0 = [line for line in results[0][1].splitlines() if line.startswith("error")]
    assert rank1 and "(rank 1)" in rank1[0] and "train.csv" in rank1[0], results[1][1][-2000:]
    # Rank 0 reports the lost rank, unless its agent goes first: both agents are on this host, so node 1's may
    # hold the rendezvous store and take it away on its way out (RendezvousConnectionError; seen once in 3).
    assert all("another rank exited" in line for line in rank0), results[0][1][-2000:]
    # no traceback through the rungs
    assert all(f'File "{SCRIPTS}' not in err for _, err in results)
    # torchrun's summary: the worker's line (@record)
    assert "traceback : error (rank 1): " in results[1][1]
    assert not (tmp_path / "out" / "checkpoints").exists()


def write_odd_dataset(path, rows=185, seed=0):
    """185 rows: 148 train, 37 eval. 37 is prime: no world size x batch size divides it."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3))
    # noisy: accuracy < 1
    y = ((x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.8, size=rows)) > 0).astype(int)
    path.write_text(
        "a,b,c,label\n" + "".join(f"{a:.5f},{b:.5f},{c:.5f},{t}\n" for (a, b, c), t in zip(x, y))
    )
    return path


@pytest.fixture(scope="module")
def odd_reference(tmp_path_factory, data_dir):
    root = tmp_path_factory.mktemp("odd")
    csv = write_odd_dataset(root / "odd.csv")
    run(1, root / "1", data_dir, "--dataset", csv, "--epochs", 1, "--batch-size", 12)
    return csv, metrics_of(root / "1")


# the two eval implementations: all_gather_object (3-5), accelerate's
@pytest.mark.launch
@pytest.mark.parametrize("rung", [3, 6])
def test_eval_at_awkward_sizes_matches_one_process(tmp_path, data_dir, odd_reference, rung):
    """3 processes x batch 4 over 37 eval samples (shards of 13/12/12, last batches ragged): the same samples,
    each once, and the same accuracy as one process."""
    csv, one = odd_reference
    run(rung, tmp_path / "n", data_dir, "--dataset", csv, "--epochs", 1, "--batch-size", 4, nproc=3)
    many = metrics_of(tmp_path / "n")
    assert many["world_size"] == 3 and many["global_batch_size"] == 12
    assert one["eval_samples"] == many["eval_samples"] == 37
    assert 0.5 < one["eval_accuracy"] < 1.0
    assert (
        many["eval_accuracy"] == one["eval_accuracy"]
        and abs(many["eval_loss"] - one["eval_loss"]) < 1e-5
    )


@pytest.mark.launch
def test_a_terminal_on_one_rank_only_changes_no_collective(tmp_path, data_dir, reference):
    """Issue 32: the --log-every line was a collective that only ranks without a terminal took, so under `script`
    or `srun --pty` (rank 0's stderr a terminal, rank 1's a file) rank 1 died with gloo's "collective mismatch"
    (SIGABRT, no metrics.json). Rank 0 here has a terminal (`script`), rank 1 writes to files (torchrun's
    --redirects): the run ends on the uninterrupted run's weights, with a line logged every 3 steps by the rank
    with no terminal... which is none that shows: rank 0 draws its bar instead."""
    import shlex

    assert shutil.which("script"), "util-linux's script(1) is needed to give one rank a terminal"
    out = tmp_path / "tty"
    launcher = ["--redirects", "1:3", "--log-dir", str(tmp_path / "logs")]
    cmd = [
        *command(4, 2, launcher),
        *("--batch-size", "16", "--data-dir", str(data_dir), "--output-dir", str(out)),
        *(*TASK, "--log-every", "3", "--report-to", "tensorboard"),
    ]
    env = {**os.environ, **OFFLINE, **RESTART_ENV}
    proc = subprocess.run(
        ["script", "-qec", shlex.join(cmd), "/dev/null"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "done:" in proc.stdout and "step      3/28" not in proc.stdout  # a terminal: the bar
    diff = max_abs_diff(weights(out), reference[4])
    print(f"\none rank on a terminal, --log-every 3: max |w - w_rung4| = {diff:.2e}")
    assert diff <= EXACT and metrics_of(out)["steps"] == 28
