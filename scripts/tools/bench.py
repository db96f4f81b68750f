"""`make bench`: every rung, and the costs around them, measured side by side in one run, as ratios.

Runs on whatever is here (CUDA, else CPU processes over gloo) and writes
    <out>/bench/results-<device>.json   every number, with the machine and versions it came from
    <out>/benchmarks.md                 the tables, from every results-*.json in <out>/bench (CPU and GPU runs)
    <out>/img/bench-*.png               throughput per rung and world size; the loss curves of all rungs overlaid
and, when <out> is guides/ (the default), the summary table in guides/performance.md. A ratio is always of two medians
taken in this run: the repeats alternate between the things compared, and each run's first epoch (warm-up,
compilation) is left out. Rungs run as users run them (python, torchrun, accelerate launch), in subprocesses.

    make bench                                        # the full run: about 6 minutes on 2 CPU cores
    make bench ARGS=--quick                           # one repeat of short runs: checks the machinery, not speed
                                                      # (writes to out/bench-quick, never over guides/)
    python scripts/tools/bench.py --sections gpu            # one section (see --help); the others' results are kept
"""

import argparse
import datetime
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

# the other half: tables, plots, the summary in guides/performance.md
from bench_report import (
    PER_STEP_KINDS,
    render,
    summary,
    summary_table,
)

from common import UsageError, checkpoint, data, flags, metrics, models, process, tasks
from ladder import ROOT, RUNGS, command, environment, job_tree, max_abs_diff

SCHEMA = 1
GPT_GPU = [
    "--block-size",
    "1024",
    "--n-layer",
    "12",
    "--n-head",
    "12",
    "--n-embd",
    "768",
]  # GPT-2 small's shape


def _run_killing_on_timeout(cmd, env, timeout):
    """subprocess.run in a session of its own: a launch that hangs (seen here: a worker stuck in libtorch's
    teardown after its run had finished) is killed with every process it started (torchrun's workers leave
    its session), and counts as a failure (exit code None) that _run records and runs again."""
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in job_tree(proc.pid):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # a grandchild still holds the pipes: stop reading them
            proc.kill()
            out, err = "", ""
        err += f"\nFatal: hung for {timeout} s and was killed"
        return subprocess.CompletedProcess(cmd, None, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


class Bench:
    """Launches rungs and times code for the sections; keeps the run's settings."""

    def __init__(self, opts, work):
        self.quick, self.work = opts.quick, Path(work)
        self.cuda = torch.cuda.is_available()
        self.device = "cuda" if self.cuda else "cpu"
        self.data_dir = opts.data_dir
        self.repeats = 1 if opts.quick else opts.repeats
        self.bin = Path(sys.executable).parent
        self.env = environment()
        self.runs, self.done = 0, {}
        self.gpu_runs = [r for r in opts.gpu_runs.split(",") if r]
        self.previous = {}  # the sections of an earlier call with the same results file
        self.failures = []  # launches that failed once (and were run again): kept in the results

    def launch(self, rung, nproc=1, args=(), accelerate_flags=(), timeout=600):
        """Run rung `rung` on `nproc` processes with `args`; returns its metrics.json plus its output dir. A quick
        run launches each distinct command once (sections share it); a full run launches every repeat afresh."""
        key = (rung, nproc, tuple(map(str, args)), tuple(accelerate_flags))
        if self.quick and key in self.done:
            return self.done[key]
        self.runs += 1
        out = self.work / f"run-{self.runs:03d}-{RUNGS[rung]}"
        config = "1gpu" if self.cuda else "cpu_2proc"
        cmd = [
            *command(
                rung, nproc, launcher_flags=accelerate_flags if rung == 6 else (), config=config
            ),
            "--output-dir",
            str(out),
            "--data-dir",
            self.data_dir,
            *map(str, args),
        ]
        return self._run(key, cmd, out, RUNGS[rung], timeout)

    def launch_peer(self, name, nproc, args=(), timeout=300):
        """Run scripts/tools/peers/<name>.py under torchrun, as launch() runs a rung."""
        key = (name, nproc, tuple(map(str, args)), ())
        if self.quick and key in self.done:
            return self.done[key]
        self.runs += 1
        out = self.work / f"run-{self.runs:03d}-{name}"
        launcher = command(4, nproc)[:-1]  # torchrun, as rung 4 is launched
        cmd = [
            *launcher,
            str(ROOT / "scripts" / "tools" / "peers" / f"{name}.py"),
            "--output-dir",
            str(out),
            "--data-dir",
            self.data_dir,
            *map(str, args),
        ]
        return self._run(key, cmd, out, name, timeout)

    def _run(self, key, cmd, out, name, timeout):
        """Run one launch. A launch that fails is run once more and the failure is kept in the results
        (`launch_failures`: the command and the worker's own lines), so a rare crash is measured, not hidden; a
        second failure fails the section."""
        for attempt in (1, 2):
            shutil.rmtree(out, ignore_errors=True)
            started = time.perf_counter()
            # a quick launch takes seconds: a hang should cost minutes, not the full run's limit
            proc = _run_killing_on_timeout(
                cmd, self.env, min(timeout, 150) if self.quick else timeout
            )
            seconds = time.perf_counter() - started
            if proc.returncode == 0:
                break
            lines = [
                line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()
            ]
            ours = [
                line for line in lines if line.startswith(("error:", "error (rank"))
            ]  # a rung's own line
            crash = [
                line
                for line in lines
                if ("Error" in line or "terminate called" in line or "Fatal" in line)
                and "ChildFailedError" not in line
                and not line.startswith("torch.distributed.elastic")
            ]
            why = (ours or crash[-1:] or lines[-1:] or ["(no output)"])[0][:400]
            self._failed(name, proc.returncode, why, attempt, lines[-25:], f" ({' '.join(cmd)})")
        result = json.loads((out / "metrics.json").read_text())
        result["output_dir"], result["launch_seconds"] = str(out), seconds
        self.done[key] = result
        return result

    def spawn(self, name, worker, args, result, limit=None):
        """mp.spawn `worker` on 2 processes (a fresh port each time) and read the JSON it leaves at `result`, with
        launch()'s policy: a failure is kept in `launch_failures` and run once more; a second one fails the section.
        Measured: the accumulation worker's rank 1 aborts at about 1 run in 40 on a 2-core VM ("terminate called
        without an active exception", in libtorch; also with a barrier and DDP freed before destroy_process_group).
        The cause, found later, is in common/__init__.py (imported first since); not remeasured here, so the retry
        stays."""
        import torch.multiprocessing as mp
        from torch.multiprocessing.spawn import ProcessException

        for attempt in (1, 2):
            Path(result).unlink(missing_ok=True)
            try:
                context = mp.spawn(
                    worker, args=(2, process.free_port(), *args, str(result)), nprocs=2, join=False
                )
                # a hang costs minutes, not the run's limit, as _run's launches (mp.spawn has no timeout)
                limit = limit or (150 if self.quick else 600)
                deadline = time.monotonic() + limit
                while not context.join(timeout=1):
                    if time.monotonic() > deadline:
                        for worker_process in context.processes:
                            worker_process.kill()
                        raise TimeoutError(f"no result after {limit} s")
                return json.loads(Path(result).read_text())
            except (ProcessException, OSError, ValueError) as e:
                why = str(e).strip().splitlines()[-1][:400] if str(e).strip() else type(e).__name__
                self._failed(name, getattr(e, "exit_code", None), why, attempt, [], "")

    def _failed(self, name, exit_code, why, attempt, tail, command):
        """Keep a failed attempt in `launch_failures` and say it; the second one fails the section."""
        self.failures.append(
            {"launch": name, "exit_code": exit_code, "why": why, "attempt": attempt, "tail": tail}
        )
        print(f"bench: {name} failed (attempt {attempt}, exit {exit_code}): {why}", file=sys.stderr)
        if attempt == 2:
            raise RuntimeError(f"{name} failed twice (exit {exit_code}): {why}{command}")

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def steady(run):
    """A run's samples/s with the warm-up left out: the median over its epochs after the first."""
    per_epoch = [h["samples_per_second"] for h in run["history"]]
    return statistics.median(per_epoch[1:] or per_epoch)


def median_steady(runs):
    return statistics.median(steady(r) for r in runs)


def weight_diff(run_a, run_b):
    """max |w_a - w_b| over the two runs' final model.safetensors."""
    from safetensors.torch import load_file

    return max_abs_diff(
        *(load_file(str(Path(r["output_dir"]) / "model.safetensors")) for r in (run_a, run_b))
    )


def curve(run):
    return [[h["step"], h["train_loss"]] for h in run["history"]]


def timed(fn, sync):
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def alternate(fns, repeats, sync):
    """Median seconds of each callable in `fns`, the repeats interleaved (a, b, a, b...) after one warm-up each,
    so a slow moment of the machine hits every contender alike."""
    for fn in fns.values():
        fn()
    sync()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn, sync))
    return {name: statistics.median(t) for name, t in times.items()}


# --- sections ---------------------------------------------------------------------------------------------


def overhead(b):
    """Scaffolding overhead: every rung at world size 1, same device, fp32, default task (digits CNN)."""
    epochs = 2 if b.quick else 8 if b.cuda else 5
    # The ladder's rungs (rung 7, FSDP, is measured against DDP in the scaling section: at world size 1 it shards
    # nothing). A quick run launches one rung per launcher (python, torchrun, accelerate) to check the machinery.
    runs = {r: [] for r in ((1, 6) if b.quick else (1, 2, 3, 4, 5, 6))}
    for _ in range(b.repeats):
        for r in runs:
            flags = ["--mixed_precision", "no"] if r == 6 else []
            runs[r].append(
                b.launch(
                    r,
                    1,
                    ["--task", "digits", "--epochs", epochs, "--batch-size", 32],
                    accelerate_flags=flags,
                )
            )
    base = median_steady(runs[1])
    rungs = {}
    for r, rs in runs.items():
        sps = median_steady(rs)
        rungs[RUNGS[r]] = {
            "samples_per_second": sps,
            "step_time_ratio": base / sps,
            "max_abs_weight_diff_vs_rung1": weight_diff(rs[0], runs[1][0]),
            "loss_curve": curve(rs[0]),
        }
    # real work per step: 45 ms on 2 CPU cores, not 2 ms
    gpt = {1: [], 4: [], 6: []} if not b.quick else {}
    for _ in range(b.repeats):
        for r in gpt:
            flags = ["--mixed_precision", "no"] if r == 6 else []
            gpt[r].append(
                b.launch(
                    r,
                    1,
                    ["--task", "gpt", "--epochs", 2, "--batch-size", 32],
                    accelerate_flags=flags,
                )
            )
    return {
        "task": "digits",
        "model": "SmallCNN",
        "batch_size": 32,
        "world_size": 1,
        "epochs": epochs,
        "repeats": b.repeats,
        "goal": 1.03,
        "rungs": rungs,
        "gpt": {
            RUNGS[r]: {
                "samples_per_second": median_steady(rs),
                "step_time_ratio": median_steady(gpt[1]) / median_steady(rs),
            }
            for r, rs in gpt.items()
        },
        "per_step_costs": per_step_costs(b),
    }


def per_step_costs(b):
    """Where a world-size-1 rung's extra time goes, timed in this process on the digits CNN with the batches
    already in memory: DDP's per-step work (its autograd hooks, the bucketed all-reduce, the forward's
    broadcast of BatchNorm buffers) and accelerate's (the optimizer wrapper, the loss division in backward)."""
    import torch.distributed as dist
    from accelerate import Accelerator
    from torch.nn.parallel import DistributedDataParallel as DDP

    args = flags.parse(argv=["--task", "digits", "--data-dir", b.data_dir])
    train_ds, _, info = data.build(args)
    batches = [
        (x["inputs"].to(b.device), x["labels"].to(b.device))
        for x in data.loader(train_ds, 32, shuffle=True, drop_last=True)
    ]
    dist.init_process_group(
        "nccl" if b.cuda else "gloo",
        init_method=f"file://{b.work / 'pg-store'}",
        rank=0,
        world_size=1,
    )
    # no launcher: one process, and accelerate does not wrap in DDP
    accelerator = Accelerator(cpu=not b.cuda)

    def variant(kind):
        torch.manual_seed(0)
        model = models.build(info).to(b.device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        if kind.startswith("DDP"):
            model = DDP(model, device_ids=[0] if b.cuda else None)
            # the attribute DDP's forward reads (torch 2.11 to 2.13)
            model.broadcast_buffers = kind == "DDP"
        elif kind == "accelerate":
            model, optimizer = accelerator.prepare(model, optimizer)

        def run():
            for inputs, targets in batches:
                with (
                    accelerator.autocast()
                    if kind == "accelerate"
                    else torch.autocast(b.device, enabled=False)
                ):
                    loss = F.cross_entropy(model(inputs), targets)
                optimizer.zero_grad(set_to_none=True)
                accelerator.backward(loss) if kind == "accelerate" else loss.backward()
                optimizer.step()

        return run

    try:
        seconds = alternate({k: variant(k) for k in PER_STEP_KINDS}, 2 if b.quick else 7, b.sync)
    finally:
        dist.destroy_process_group()
    per_step = {k: v / len(batches) for k, v in seconds.items()}
    return {
        "ms_per_step": {k: v * 1e3 for k, v in per_step.items()},
        "extra_us_per_step": {k: (v - per_step["plain loop"]) * 1e6 for k, v in per_step.items()},
    }


def input_pipeline(b):
    """The datasets-backed loader the rungs use vs the same batches already on the device, in rung 1's loop."""
    out = {"goal": 1.05}
    for task, per_pass in (("digits", 44), ("gpt", 50 if b.cuda else 12)):
        args = flags.parse(argv=["--task", task, "--data-dir", b.data_dir])
        train_ds, _, info = data.build(args)
        torch.manual_seed(0)
        model = models.build(info).to(b.device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loaders = {
            "loader": data.loader(train_ds, 32, shuffle=True, drop_last=True, device=b.device),
            "loader_1_worker": data.loader(
                train_ds, 32, shuffle=True, drop_last=True, device=b.device, num_workers=1
            ),
        }
        preloaded = [
            (x["inputs"].to(b.device), x["labels"].to(b.device))
            for x in itertools.islice(loaders["loader"], per_pass)
        ]

        def step(inputs, targets):
            loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        def from_loader(loader):
            def run():
                for batch in itertools.islice(loader, per_pass):
                    step(
                        batch["inputs"].to(b.device, non_blocking=True),
                        batch["labels"].to(b.device, non_blocking=True),
                    )

            return run

        def from_memory():
            for inputs, targets in preloaded:
                step(inputs, targets)

        fns = {"preloaded": from_memory, "loader": from_loader(loaders["loader"])}
        if not b.quick:
            fns["loader_1_worker"] = from_loader(loaders["loader_1_worker"])
        seconds = alternate(fns, 1 if b.quick else 7, b.sync)
        # one batch, read both ways
        columns, indices = (
            data.Columns(train_ds),
            list(range(0, 32 * 37, 37)),
        )
        reads = alternate(
            {"datasets_formatting": lambda: train_ds[indices], "columns": lambda: columns[indices]},
            50,
            lambda: None,
        )
        out[task] = {
            "model": type(model).__name__,
            "batch_size": 32,
            "batches_per_pass": per_pass,
            "step_ms": {k: v / per_pass * 1e3 for k, v in seconds.items()},
            "ratio": seconds["loader"] / seconds["preloaded"],
            "ratio_1_worker": seconds.get("loader_1_worker", float("nan")) / seconds["preloaded"],
            "batch_read_ms": {k: v * 1e3 for k, v in reads.items()},
        }
    return out


def _allreduce_worker(rank, world_size, port, sizes, repeats, result_path):
    import torch.distributed as dist

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    results = {}
    for numel in sizes:
        tensor = torch.ones(numel)
        times = []
        for i in range(repeats + 3):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            if i >= 3:
                times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        size = numel * 4
        results[str(numel)] = {
            "bytes": size,
            "seconds": seconds,
            "bus_bandwidth_GBps": 2 * (world_size - 1) / world_size * size / seconds / 1e9,
        }
    if rank == 0:
        Path(result_path).write_text(json.dumps(results))
    dist.barrier()
    dist.destroy_process_group()


def allreduce(b, sizes):
    """gloo all_reduce of float32 tensors of `sizes` elements between 2 processes: seconds and bus bandwidth."""
    return b.spawn(
        "allreduce",
        _allreduce_worker,
        (sorted(set(sizes)), 5 if b.quick else 30),
        b.work / "allreduce.json",
    )


def _accumulation_worker(rank, world_size, port, task, data_dir, accum, repeats, result_path):
    """Rung 4's accumulation loop on the task's model and first batches, timed with no_sync() on the first N-1
    micro-batches (as the rungs do) and without it (an all-reduce after every micro-batch), alternated."""
    import contextlib

    import torch.distributed as dist

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    args = flags.parse(argv=["--task", task, "--data-dir", data_dir])
    train_ds, _, info = data.build(args)
    sampler = torch.utils.data.DistributedSampler(train_ds, seed=0, drop_last=True)
    batch = next(iter(data.loader(train_ds, 16 * accum, sampler=sampler, drop_last=True)))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(models.build(info))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def accumulate(skip_sync):
        optimizer.zero_grad(set_to_none=True)
        for micro, (x, y) in enumerate(
            zip(batch["inputs"].chunk(accum), batch["labels"].chunk(accum)), 1
        ):
            with model.no_sync() if skip_sync and micro < accum else contextlib.nullcontext():
                loss = F.cross_entropy(model(x), y)
            (loss / accum).backward()
        return torch.cat([q.grad.flatten() for q in model.parameters()])

    def step(skip_sync):
        accumulate(skip_sync)
        optimizer.step()

    # the same weights: the same gradient
    gap = (accumulate(True) - accumulate(False)).abs().max().item()
    times = {"no_sync": [], "every_micro_step": []}
    for i in range(repeats + 2):
        for name, skip in (("no_sync", True), ("every_micro_step", False)):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(5):
                step(skip)
            if i >= 2:
                times[name].append((time.perf_counter() - start) / 5)
    if rank == 0:
        Path(result_path).write_text(
            json.dumps(
                {k: statistics.median(v) for k, v in times.items()}
                | {
                    "spread": {
                        k: (max(v) - min(v)) / statistics.median(v) for k, v in times.items()
                    },
                    "gap": gap,
                }
            )
        )
    dist.barrier()  # as the rungs end: no rank tears down while another is still at work
    dist.destroy_process_group()


def accumulation(b):
    """Gradient accumulation under DDP, 2 processes over gloo, 4 micro-batches of 16 per step: the rungs' no_sync()
    on the first 3 against an all-reduce after every micro-batch (pytorch/pytorch#43201), seconds per step."""
    if b.cuda:
        return {"skipped": "measured on CPU only: one GPU cannot host two NCCL ranks"}
    out = {"processes": 2, "micro_batches": 4, "micro_batch_size": 16}
    for task in ("digits", "gpt")[: 1 if b.quick else 2]:
        r = b.spawn(
            f"accumulation-{task}",
            _accumulation_worker,
            (task, b.data_dir, 4, 1 if b.quick else 15),
            b.work / f"accumulation-{task}.json",
        )
        out[task] = {
            "seconds_per_step": {k: r[k] for k in ("no_sync", "every_micro_step")},
            "spread": r["spread"],
            "no_sync_speedup": r["every_micro_step"] / r["no_sync"],
            "max_abs_grad_diff": r["gap"],
        }
    return out


def peers(b):
    """What a user would pick instead, on the same model, data, seed and global batch (32), in one run: rung 4,
    rung 6, the same training on Lightning Fabric, and a minimal DDP loop with none of the ladder's extras (no eval,
    checkpoints, stop flag or loss all-reduce); 2 CPU processes over gloo, or world size 1 on a GPU. Each is
    launched as its users launch it; the repeats alternate. Reports in-loop samples/s (epochs after the first),
    whole-launch seconds, both against the fastest, the spread between repeats, and max |w - w_rung1|."""
    nproc = 1 if b.cuda else 2
    # digits epochs are short (44 steps): 15 of them per run steady the medians
    epochs = 2 if b.quick else 16
    flags = ["--task", "digits", "--epochs", epochs, "--batch-size", 32 // nproc]
    ref = b.launch(1, 1, ["--task", "digits", "--epochs", epochs, "--batch-size", 32])
    contenders = {
        "4_ddp_torchrun": lambda: b.launch(4, nproc, flags),  # quick: the scaling section's launch
        "6_accelerate": lambda: b.launch(
            6, nproc, flags, accelerate_flags=["--mixed_precision", "no"]
        ),
        "lightning_fabric": lambda: b.launch_peer("fabric_ddp", nproc, flags),
        "minimal_ddp_loop": lambda: b.launch_peer("minimal_ddp", nproc, flags),
    }
    # the machinery, in the fewest launches: rung 6 is launched at 2 processes by the tests
    if b.quick:
        del contenders["6_accelerate"]
    runs = {name: [] for name in contenders}
    for _ in range(b.repeats):
        for name, launch in contenders.items():
            runs[name].append(launch())
    rows = {}
    for name, rs in runs.items():
        per_run = [steady(r) for r in rs]
        rows[name] = {
            "samples_per_second": statistics.median(per_run),
            "spread": (max(per_run) - min(per_run)) / statistics.median(per_run),
            "launch_seconds": statistics.median(r["launch_seconds"] for r in rs),
            "max_abs_weight_diff_vs_rung1": weight_diff(rs[0], ref),
        }
    fastest = max(r["samples_per_second"] for r in rows.values())
    quickest = min(r["launch_seconds"] for r in rows.values())
    for r in rows.values():
        r["vs_fastest"] = r["samples_per_second"] / fastest
        r["launch_vs_quickest"] = r["launch_seconds"] / quickest
    minimal = rows["minimal_ddp_loop"]
    return {
        "task": "digits",
        "model": "SmallCNN",
        "global_batch_size": 32,
        "world_size": nproc,
        "epochs": epochs,
        "repeats": b.repeats,
        "rows": rows,
        "extras_cost": {
            name: {
                "step_time": minimal["samples_per_second"] / rows[name]["samples_per_second"],
                "launch_time": rows[name]["launch_seconds"] / minimal["launch_seconds"],
            }
            for name in ("4_ddp_torchrun", "6_accelerate")
            if name in rows
        },
    }


def scaling(b):
    """2 processes x (cores/2) threads (rung 4) vs 1 process x all cores (rung 1), same global batch; and FSDP
    (rung 7) against DDP (rung 4) at 2 processes: step time, and bytes per process."""
    if b.cuda:
        return {"skipped": "measured on CPU only: one GPU cannot host two NCCL ranks"}
    out = {
        "threads": {
            "one_process": torch.get_num_threads(),
            "per_process_of_two": max(1, torch.get_num_threads() // 2),
        }
    }
    sizes = {}
    for task, epochs in (("digits", 5), ("gpt", 2))[
        : 1 if b.quick else 2
    ]:  # quick runs launch no GPT
        epochs = 2 if b.quick else epochs
        one, two, fsdp = [], [], []
        for _ in range(b.repeats):
            one.append(b.launch(1, 1, ["--task", task, "--epochs", epochs, "--batch-size", 32]))
            two.append(b.launch(4, 2, ["--task", task, "--epochs", epochs, "--batch-size", 16]))
            fsdp.append(b.launch(7, 2, ["--task", task, "--epochs", epochs, "--batch-size", 16]))
        info = data.build(flags.parse(argv=["--task", task, "--data-dir", b.data_dir]))[2]
        grads = sum(p.numel() for p in models.build(info).parameters())
        sizes[task] = grads
        out[task] = {
            "model": {"digits": "SmallCNN", "gpt": "GPT"}[task],
            "global_batch_size": 32,
            "one_process_samples_per_second": median_steady(one),
            "two_processes_samples_per_second": median_steady(two),
            "ratio": median_steady(two) / median_steady(one),
            "gradient_numel": grads,
            "max_abs_weight_diff": weight_diff(one[0], two[0]),
            "loss_curves": {"one_process": curve(one[0]), "two_processes": curve(two[0])},
            "fsdp_samples_per_second": median_steady(fsdp),
            "fsdp_over_ddp_step_time": median_steady(two) / median_steady(fsdp),
            "fsdp_max_abs_weight_diff_vs_one_process": weight_diff(one[0], fsdp[0]),
            "bytes_per_process": {
                r: {k: m[k] for k in ("param_bytes", "grad_bytes", "optimizer_bytes")}
                for r, m in (("ddp", two[0]), ("fsdp", fsdp[0]))
            },
        }
    reduce = allreduce(b, [1, 2**14, 2**18, 2**20, 2**22, *sizes.values()])
    out["allreduce_2_processes"] = reduce
    for task, grads in sizes.items():
        r = out[task]
        step_two = r["global_batch_size"] / r["two_processes_samples_per_second"]
        step_one = r["global_batch_size"] / r["one_process_samples_per_second"]
        r["allreduce_seconds_per_step"] = reduce[str(grads)]["seconds"]
        r["allreduce_share_of_step"] = reduce[str(grads)]["seconds"] / step_two
        r["step_seconds"] = {"one_process": step_one, "two_processes": step_two}
    return out


def mixed_precision(b):
    """Rung 5 at world size 1: bf16 autocast vs fp32, and fp16 + GradScaler vs bf16."""
    out = {}
    # fp16 on a CPU: 7-18x slower
    tasks = (
        ("digits", ("no", "bf16") if b.quick and not b.cuda else ("no", "bf16", "fp16"), 4),
        ("gpt", ("no", "bf16", "fp16") if b.cuda else ("no", "bf16"), 2),
    )
    for task, precisions, epochs in tasks[: 1 if b.quick else 2]:  # quick runs launch no GPT
        epochs = 2 if b.quick else epochs
        runs = {p: [] for p in precisions}
        for _ in range(b.repeats):
            for p in precisions:
                # "no" is the default: rung 5 is rung 4
                flag = ["--mixed-precision", p] if p != "no" else []
                runs[p].append(
                    b.launch(5, 1, ["--task", task, "--epochs", epochs, "--batch-size", 32, *flag])
                )
        sps = {p: median_steady(rs) for p, rs in runs.items()}
        out[task] = {
            "samples_per_second": sps,
            "bf16_speedup_vs_fp32": sps["bf16"] / sps["no"],
            "final_train_loss": {p: rs[0]["train_loss"] for p, rs in runs.items()},
            "max_abs_weight_diff_vs_fp32": {
                p: weight_diff(rs[0], runs["no"][0]) for p, rs in runs.items()
            },
            "loss_curves": {p: curve(rs[0]) for p, rs in runs.items()},
        }
        if "fp16" in sps:
            out[task]["fp16_speedup_vs_bf16"] = sps["fp16"] / sps["bf16"]
        else:
            out[task]["fp16"] = (
                "not run on CPU: fp16 is many times slower than fp32 there (see digits)"
            )
    return out


def checkpoints(b):
    """The checkpoint module (safetensors, sha256, fsync, atomic rename) vs torch.save/torch.load of the same
    state; and its share of an epoch's training time."""
    out = {"goal_share": 0.05}
    for task in ("digits", "gpt"):
        args = flags.parse(argv=["--task", task, "--data-dir", b.data_dir])
        train_ds, _, info = data.build(args)
        torch.manual_seed(0)
        model = models.build(info).to(b.device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loader = data.loader(train_ds, 32, shuffle=True, drop_last=True, device=b.device)

        # a quick run times the first batches and scales them to the epoch (a GPT epoch takes ~16 s on a CPU;
        # quick checks the machinery, not speed)
        timed_batches = min(len(loader), 40) if b.quick else len(loader)

        def epoch():
            for batch in itertools.islice(loader, timed_batches):
                loss = F.cross_entropy(
                    model(batch["inputs"].to(b.device)), batch["labels"].to(b.device)
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()

        epoch_seconds = alternate({"epoch": epoch}, 1 if b.quick else 2, b.sync)["epoch"]
        epoch_seconds *= len(loader) / timed_batches
        directory = b.work / f"checkpoints-{task}"
        pickle_path = b.work / f"state-{task}.pt"
        counter = itertools.count(1)

        def ours():
            flags_ = argparse.Namespace(output_dir=directory, keep=2)  # what a rung passes
            checkpoint.save(flags_, model, optimizer, None, next(counter), 0, 0)

        def plain():
            torch.save(
                {"model": model.state_dict(), "optimizer": optimizer.state_dict()}, pickle_path
            )

        def plain_fsync():
            plain()
            with open(pickle_path, "rb") as f:
                os.fsync(f.fileno())

        repeats = 2 if b.quick else 9
        save = alternate(
            {"checkpoint.save": ours, "torch.save": plain, "torch.save+fsync": plain_fsync},
            repeats,
            b.sync,
        )
        newest = checkpoint.list_checkpoints(directory)[-1]

        def load_ours():
            checkpoint.load(newest, model, optimizer)

        def load_plain():
            state = torch.load(pickle_path, map_location=b.device, weights_only=True)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])

        load = alternate({"checkpoint.load": load_ours, "torch.load": load_plain}, repeats, b.sync)
        size = sum(f.stat().st_size for f in newest.iterdir())
        out[task] = {
            "model": type(model).__name__,
            "checkpoint_bytes": size,
            "epoch_seconds": epoch_seconds,
            "epoch_batches_timed": f"{timed_batches} of {len(loader)}",
            "save_seconds": save,
            "load_seconds": load,
            "save_ratio_vs_torch_save": save["checkpoint.save"] / save["torch.save"],
            "load_ratio_vs_torch_load": load["checkpoint.load"] / load["torch.load"],
            "share_of_epoch": save["checkpoint.save"] / epoch_seconds,
        }
    return out


GPU_RUNS = {  # name: (rung, flags, accelerate flags); all at world size 1, GPT_GPU's shape, --tf32 for fp32 matmuls
    "rung5_bf16_compile": (5, ["--mixed-precision", "bf16", "--compile"], []),
    "rung5_tf32_compile": (5, ["--compile"], []),
    "rung1_tf32_compile": (1, ["--compile"], []),
    "rung6_tf32_compile": (6, [], ["--mixed_precision", "no", "--dynamo_backend", "inductor"]),
    "rung1_tf32_eager": (1, [], []),
}


def gpu(b):
    """GPT-2 small's shape (12 layers, 768 wide, 1,024 tokens) with torch.compile: bf16 vs TF32, tokens/s and MFU
    against the device's dense bf16 peak, and rung 6 / rung 1 at world size 1. --gpu-runs picks some of GPU_RUNS
    (the runs of an earlier call in the same results file are kept, so the set can be split over calls)."""
    if not b.cuda:
        return {"skipped": "no CUDA device here"}
    batch, eval_batches, epochs = (4, 1, 2) if b.quick else (32, 5, 3)
    # whole batches only: a last, shorter batch would compile again
    eval_sequences = batch * eval_batches
    # the corpus's last tenth is the eval set; 45 training steps an epoch
    sequences = 10 * eval_sequences
    text = b"\n\n".join(p.read_bytes() for p in tasks.default_corpus())
    # the project's text repeated: throughput only, the loss means little
    corpus = b.work / "corpus.txt"
    corpus.write_bytes((text * (sequences * 1024 // len(text) + 1))[: sequences * 1024 + 1])
    assert round(sequences * tasks.TEXT_EVAL_FRACTION) == eval_sequences
    common = [
        "--task",
        "gpt",
        "--text-file",
        corpus,
        *GPT_GPU,
        "--batch-size",
        batch,
        "--epochs",
        epochs,
        "--tf32",
    ]
    out = b.previous.get("gpu", {}) if "runs" in b.previous.get("gpu", {}) else {"runs": {}}
    info = data.Info("gpt", "text", (1024,), 256)
    model = models.build(info, "gpt", 12, 12, 768)
    peak, name = metrics.device_peak("cuda")
    out.update(
        {
            "device_name": name,
            "peak_bf16_flops": peak,
            "flops_per_token": model.flops_per_token(),
            "parameters": sum(p.numel() for p in model.parameters()),
            "batch_size": batch,
            "block_size": 1024,
        }
    )
    for key in b.gpu_runs:
        rung, flags, accelerate_flags = GPU_RUNS[key]
        run = b.launch(rung, 1, [*common, *flags], accelerate_flags=accelerate_flags)
        tokens = steady(run) * 1024
        out["runs"][key] = {
            "tokens_per_second": tokens,
            "train_loss": run["train_loss"],
            "mfu": tokens * model.flops_per_token() / peak if peak else None,
            "first_epoch_seconds": run["history"][0]["step"]
            * batch
            / run["history"][0]["samples_per_second"],
        }  # compilation included
    r = out["runs"]

    def ratio(a, b_):
        return (
            r[a]["tokens_per_second"] / r[b_]["tokens_per_second"] if a in r and b_ in r else None
        )

    out["bf16_speedup_vs_tf32"] = ratio("rung5_bf16_compile", "rung5_tf32_compile")
    out["rung6_over_rung1_step_time"] = ratio("rung1_tf32_compile", "rung6_tf32_compile")
    out["compile_speedup"] = ratio("rung1_tf32_compile", "rung1_tf32_eager")
    return out


SECTIONS = {
    "overhead": overhead,
    "input_pipeline": input_pipeline,
    "scaling": scaling,
    "accumulation": accumulation,
    "peers": peers,
    "mixed_precision": mixed_precision,
    "checkpoint": checkpoints,
    "gpu": gpu,
}


def machine(device):
    import accelerate
    import datasets

    return {
        "device": device,
        "device_name": torch.cuda.get_device_name()
        if device == "cuda"
        else platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "accelerate": accelerate.__version__,
        "datasets": datasets.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="one repeat of short runs: checks the machinery in seconds",
    )
    p.add_argument(
        "--out",
        default=None,
        help="where bench/, img/ and benchmarks.md go (default: guides/; out/bench-quick with --quick)",
    )
    p.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}"
    )
    p.add_argument(
        "--repeats", type=int, default=3, help="runs of each contender, interleaved (full mode)"
    )
    p.add_argument("--data-dir", default=os.environ.get("DDP_LADDER_CACHE", ".cache/ddp-ladder"))
    p.add_argument(
        "--gpu-runs",
        default=",".join(GPU_RUNS),
        help=f"the gpu section's runs, of: {', '.join(GPU_RUNS)}",
    )
    p.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: redraw benchmarks.md, the plots and the summary table from <out>/bench",
    )
    opts = p.parse_args()
    opts.out = opts.out or str(ROOT / ("out/bench-quick" if opts.quick else "guides"))
    if opts.render_only:
        return render(Path(opts.out))
    wanted = [s for s in opts.sections.split(",") if s]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        sys.exit(f"error: unknown section {unknown[0]!r}: choose from {', '.join(SECTIONS)}")
    out, started = Path(opts.out), time.perf_counter()
    (out / "bench").mkdir(parents=True, exist_ok=True)
    (out / "img").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ddp-ladder-bench-"))
    b = Bench(opts, work)
    path = out / "bench" / f"results-{b.device}.json"
    old = json.loads(path.read_text()) if path.exists() else None
    sections = (
        dict(old["sections"])
        if old and old.get("quick") == opts.quick and set(wanted) != set(SECTIONS)
        else {}
    )
    b.previous = dict(sections)
    failed, earlier = [], old["seconds"] if sections else 0.0
    result = {"schema": SCHEMA, "quick": opts.quick, "machine": machine(b.device)}
    try:
        for name in wanted:
            start = time.perf_counter()
            print(f"bench: {name} ...", flush=True)
            try:
                sections[name] = SECTIONS[name](b)
            except (RuntimeError, UsageError, subprocess.TimeoutExpired, OSError) as e:
                failed.append(name)
                sections[name] = {"error": str(e)}
                print(f"bench: {name} FAILED: {e}", file=sys.stderr)
            print(f"bench: {name} done in {time.perf_counter() - start:.0f} s", flush=True)
            result.update(
                created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                launch_failures=b.failures,
                sections=sections,
                seconds=earlier + time.perf_counter() - started,
                summary=summary(sections),
            )
            # after every section: a run cut short keeps what it measured
            metrics.write_json(path, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    render(out)
    print(summary_table(result))
    print(
        f"bench: {time.perf_counter() - started:.0f} s -> {path}, {out / 'benchmarks.md'}, {out / 'img'}"
    )
    if failed:
        sys.exit(f"error: bench sections failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
