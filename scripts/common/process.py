"""What every rung needs from its process before it trains, none of it the lesson of any step: bad launch
environments refused, CPU cores shared between the processes of one machine, warnings about launcher and
hardware traps, SIGTERM/Ctrl-C passed on to spawned workers, and the output dir locked.

This runs before any process group exists, so the launcher's environment is all there is to read: the first
process of a launch (RANK unset or 0) prints the warnings and takes the lock. It reads the environment and never
writes it: what a launch needs set (ACCELERATE's CPU mode, the threads of mp.spawn's workers, TF32) is a line in
the rung that needs it."""

import multiprocessing
import os
import signal
import socket

from common.errors import UsageError

NOTES = []  # what the launch asked for and did not get, for metrics.json (progress.Meter.summary)


def first_process():
    """Whether the launcher made this the first process (RANK unset or 0): the one that prints before main()."""
    return os.environ.get("RANK", "0") == "0"


def prepare(args):
    import torch

    env, first = os.environ, first_process()
    if "WORLD_SIZE" in env and "RANK" not in env:
        raise UsageError(
            "WORLD_SIZE is set but RANK is not (a half-copied launch environment): launch with "
            "torchrun or accelerate launch, or unset WORLD_SIZE"
        )
    if "ACCELERATE_MIXED_PRECISION" in env and "MASTER_PORT" in env and "WORLD_SIZE" not in env:
        raise UsageError(
            "the launch asked for several processes but started one (accelerate runs a MULTI_CPU "
            "config as ONE process): use a MULTI_GPU config, with use_cpu: true on a CPU"
        )
    if env.get("ACCELERATE_USE_FSDP", "").lower() == "true":
        raise UsageError(
            "an accelerate FSDP config: this project's FSDP is rung 7 (under FSDP every process must "
            "take part in gathering the weights, and accelerate on a CPU would even train plain "
            "DDP): run scripts/7_fsdp.py under torchrun (make fsdp-2gpu, or make fsdp-cpu here)"
        )
    if args.sync_bn:
        # before any process starts: each spawned worker would fail
        if not torch.cuda.is_available():
            raise UsageError(
                "--sync-bn needs GPUs (PyTorch's SyncBatchNorm refuses CPU tensors): leave it out "
                "on a CPU, where each process normalises over its own share of the batch"
            )
    steps = env.get("ACCELERATE_GRADIENT_ACCUMULATION_STEPS")
    if steps is not None and steps != str(args.gradient_accumulation_steps):
        raise UsageError(  # accelerate takes it over the Accelerator's argument: it trained 4 when asked 1
            f"ACCELERATE_GRADIENT_ACCUMULATION_STEPS={steps} in the environment would override "
            f"--gradient-accumulation-steps {args.gradient_accumulation_steps}: unset it, or pass the "
            f"flag instead"
        )
    if env.get("ACCELERATE_USE_CPU", "").lower() == "false" and not torch.cuda.is_available():
        NOTES.append(
            "the accelerate config asks for GPUs and this machine has none: trained on the CPU"
        )
        if first:  # a warning, not a refusal: Slurm CPU nodes run the GPU config on purpose
            print(f"warning: {NOTES[-1]}: on a CPU use accelerate_configs/cpu_2proc.yaml")
    procs = int(env.get("LOCAL_WORLD_SIZE") or 0)
    if procs > 1 and "OMP_NUM_THREADS" not in env:
        # N processes on one machine share its cores (torchrun and accelerate launch set OMP_NUM_THREADS
        # themselves; a launch by hand does not): 2 processes x 2 threads on 2 cores ran 55x slower
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // procs))
    if first and args.mixed_precision == "fp16" and not torch.cuda.is_available():
        print("warning: fp16 on a CPU is many times slower than fp32: use bf16 on a CPU")
    # pytorch issue 135712
    if (
        first
        and env.get("TORCHELASTIC_MAX_RESTARTS", "0") != "0"
        and env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    ):
        fix = (
            "launch with PET_STANDALONE=1 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"
            if "ACCELERATE_MIXED_PRECISION" in env
            else "set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in the launcher's environment"
        )
        print(
            f"warning: restarts may fail or hang (over gloo: 5 times in 8 here) while workers share "
            f"torchrun's rendezvous store: {fix}"
        )
    if (
        first
        and int(env.get("WORLD_SIZE", 1)) > 1
        and "TORCHELASTIC_RUN_ID" not in env
        and "MASTER_PORT" in env
    ):
        print(
            f"waiting up to --dist-timeout {args.dist_timeout.total_seconds():g} s for {env['WORLD_SIZE']} "
            f"processes at {env.get('MASTER_ADDR', '?')}:{env['MASTER_PORT']} (a manual env:// launch: start "
            f"every RANK)",
            flush=True,
        )
    # until the rung installs its own handler (preemption.py)
    for signum in (
        signal.SIGTERM,
        signal.SIGINT,
    ):
        signal.signal(signum, _forward_to_children)
    if first:  # one process per job: the launcher's parent (rung 3) or rank 0
        from common import lock

        lock.lock_output_dir(args.output_dir)
        runs = os.path.join(args.output_dir, "runs")
        if args.report_to == "tensorboard" and os.path.exists(runs) and not os.path.isdir(runs):
            raise UsageError(
                f"{runs!r} is a file, where --report-to tensorboard writes its events: move it "
                f"away, or pass another --output-dir"
            )


def free_port(port=0, fix="set MASTER_PORT to a free port, or unset it (a free one is picked)"):
    """`port` if nothing listens on it yet (0: any free port); UsageError naming `fix` when it is taken."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except (OSError, OverflowError):
            raise UsageError(
                f"port {port} is in use or invalid (another training, or one left over): {fix}"
            ) from None
        return s.getsockname()[1]


def _forward_to_children(signum, frame):
    """A launcher's parent (rung 3's mp.spawn) passes SIGTERM/SIGINT on to its workers, which checkpoint and
    exit; Kubernetes signals PID 1 alone. A process without workers takes the signal's default."""
    children = multiprocessing.active_children()
    for child in children:
        os.kill(child.pid, signum)
    if not children:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
