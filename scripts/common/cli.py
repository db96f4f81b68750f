"""The one argument parser every rung uses. Flags are only ever added, never renamed or removed."""

import argparse
import atexit
import math
import multiprocessing
import os
import re
import signal
import socket
import sys
from datetime import timedelta
from pathlib import Path

from common import UsageError, preemption

TASKS = (
    "digits",
    "cancer",
    "gpt",
)  # built-in tasks, offline; --dataset replaces them with your own data


def parser(description=None):
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    d = p.add_argument_group("data")
    d.add_argument(
        "--task", default="digits", help=f"built-in task: {', '.join(TASKS)} (default digits)"
    )
    d.add_argument(
        "--dataset",
        default=None,
        help="your own data instead of --task: a local csv/json/parquet file, an imagefolder "
        "directory, a save_to_disk directory, or a hub dataset name when online",
    )
    d.add_argument("--image-column", default=None, help="image column of --dataset (default: auto)")
    d.add_argument(
        "--feature-columns",
        default=None,
        help="comma-separated numeric feature columns of --dataset (default: every numeric "
        "column but the label)",
    )
    d.add_argument("--label-column", default="label", help="integer class column of --dataset")
    d.add_argument(
        "--image-size", type=int, default=32, help="images of --dataset are resized to this"
    )
    d.add_argument(
        "--data-dir",
        default=os.environ.get("DDP_LADDER_CACHE", ".cache/ddp-ladder"),
        help="where prepared datasets are cached (save_to_disk), built once",
    )
    d.add_argument(
        "--num-workers", type=int, default=0, help="DataLoader worker processes per process"
    )
    d.add_argument(
        "--text-file",
        default=None,
        help="--task gpt: the byte-level corpus (default: this project's README and guides)",
    )
    d.add_argument(
        "--block-size", type=int, default=64, help="--task gpt: tokens (bytes) per sequence"
    )
    t = p.add_argument_group("training")
    t.add_argument(
        "--model",
        default="auto",
        choices=("auto", "cnn", "cnn-bn", "mlp", "gpt"),
        help="auto: cnn (GroupNorm) for images, mlp for tabular data, gpt for text; cnn-bn: the CNN "
        "with BatchNorm, whose statistics depend on how the batch is split over processes",
    )
    t.add_argument("--n-layer", type=int, default=2, help="gpt: transformer blocks")
    t.add_argument("--n-head", type=int, default=4, help="gpt: attention heads per block")
    t.add_argument(
        "--n-embd", type=int, default=128, help="gpt: embedding width (a multiple of --n-head)"
    )
    t.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the model, after the DDP wrap; the first steps compile",
    )
    t.add_argument(
        "--tf32",
        action="store_true",
        help="fp32 matmuls on the GPU's TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation)",
    )
    t.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    t.add_argument(
        "--max-steps",
        type=int,
        default=0,
        help="stop after this many optimizer steps (0: no limit)",
    )
    t.add_argument(
        "--batch-size",
        type=int,
        default=32,
        help="per device and micro-batch; the global batch is batch size x accumulation steps x world size",
    )
    t.add_argument(
        "--gradient-accumulation-steps",
        type=int,
        default=1,
        help="micro-batches of --batch-size per optimizer step: the same step, 1/N of the activation "
        "memory (the global batch is batch size x N x world size)",
    )
    t.add_argument(
        "--lr",
        type=float,
        default=0.05,
        help="SGD learning rate (the peak, with --lr-schedule cosine)",
    )
    t.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    t.add_argument(
        "--lr-schedule",
        default="constant",
        choices=("constant", "cosine"),
        help="the learning rate per optimizer step: constant, or cosine decay to 0 over the run "
        "(--epochs or --max-steps), after --warmup-steps",
    )
    t.add_argument(
        "--warmup-steps", type=int, default=0, help="linear warm-up from 0 to --lr over these steps"
    )
    t.add_argument(
        "--seed", type=int, default=0, help="seeds the model init and every epoch's sample order"
    )
    x = p.add_argument_group("distribution (each flag is used from the rung named in its help on)")
    x.add_argument(
        "--nproc",
        type=int,
        default=0,
        help="3_ddp_spawn: processes to spawn (default: the visible GPUs, else 2 on CPU)",
    )
    x.add_argument(
        "--sync-bn",
        action="store_true",
        help="rung 3 on, --model cnn-bn: convert BatchNorm to SyncBatchNorm (GPUs only; PyTorch refuses "
        "it on CPU)",
    )
    x.add_argument(
        "--mixed-precision",
        default="no",
        choices=("no", "fp16", "bf16"),
        help="5_ddp_amp: autocast dtype; fp16 adds a GradScaler (6_accelerate takes it from its config)",
    )
    x.add_argument(
        "--dist-timeout",
        type=float,
        default=300,
        help="rung 3 on: seconds a collective may wait for a missing rank before it fails",
    )
    o = p.add_argument_group("output")
    o.add_argument("--output-dir", default=None, help="default: out/<script name>")
    o.add_argument(
        "--resume",
        default="none",
        help="none: start fresh (old checkpoints in --output-dir are removed); auto: the newest "
        "valid checkpoint in --output-dir, if any; or a checkpoint directory",
    )
    o.add_argument("--keep", type=int, default=3, help="how many of the newest checkpoints to keep")
    o.add_argument(
        "--report-to",
        default="none",
        choices=("none", "tensorboard"),
        help="per-step loss, lr, grad norm and samples/s from the main process: tensorboard writes "
        "<output-dir>/runs (tensorboard --logdir out); none (default) logs nothing per step",
    )
    return p


# Flags that only some rungs use: given to another rung they would be silently ignored, so they are refused.
RUNG_FLAGS = {
    "nproc": ("3",),
    "sync_bn": ("3", "4", "5", "6"),
    "mixed_precision": ("5", "7"),
    "dist_timeout": ("3", "4", "5", "6", "7"),
}
ACCELERATE_FLAGS = {"mixed_precision": "--mixed_precision bf16"}


def parse(description=None, argv=None):
    """Parse and validate the flags; bad values raise UsageError (one line, exit code 2)."""
    args = parser(description).parse_args(argv)
    script = Path(sys.argv[0]).stem
    defaults = parser().parse_args([])
    for name, rungs in RUNG_FLAGS.items():
        if (
            script[:1].isdigit()
            and script[:1] not in rungs
            and getattr(args, name) != getattr(defaults, name)
        ):
            flag = "--" + name.replace("_", "-")
            hint = f"use rung {'/'.join(rungs)}"
            if script.startswith("6") and name in ACCELERATE_FLAGS:
                hint = f"6_accelerate takes it from its config: accelerate launch {ACCELERATE_FLAGS[name]}"
            raise UsageError(f"{flag} is not used by {script}: {hint}")
    if args.output_dir is None:
        args.output_dir = os.path.join("out", Path(sys.argv[0]).stem)
    for name in (
        "batch_size",
        "epochs",
        "keep",
        "block_size",
        "n_layer",
        "n_head",
        "n_embd",
        "image_size",
        "gradient_accumulation_steps",
    ):
        if getattr(args, name) < 1:
            raise UsageError(
                f"--{name.replace('_', '-')} must be at least 1 (got {getattr(args, name)})"
            )
    if args.max_steps < 0 or args.num_workers < 0 or args.warmup_steps < 0:
        raise UsageError("--max-steps, --num-workers and --warmup-steps must be 0 or more")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise UsageError(f"--lr must be a positive number (got {args.lr:g})")
    if not (math.isfinite(args.momentum) and 0 <= args.momentum < 1):
        raise UsageError(
            f"--momentum must be at least 0 and below 1 (got {args.momentum:g}): SGD diverges at 1 "
            f"and above"
        )
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed must be between 0 and 2**63 - 1 (got {args.seed})")
    args.max_steps = args.max_steps or sys.maxsize  # 0 means no limit
    if not args.dist_timeout > 0:
        raise UsageError(f"--dist-timeout must be more than 0 seconds (got {args.dist_timeout:g})")
    args.dist_timeout = timedelta(seconds=args.dist_timeout)  # what init_process_group takes
    if script.startswith("3"):  # mp.spawn's rung: one process per visible GPU, else 2 CPU processes
        import torch

        gpus = torch.cuda.device_count()
        args.nproc = args.nproc or gpus or 2
        if args.nproc < 1 or (gpus and args.nproc > gpus):
            raise UsageError(
                f"--nproc {args.nproc} but {gpus} GPU(s) visible: one process per GPU, at least 1"
            )
    if (
        args.tf32
    ):  # not about distribution, so set here once for every rung (convolutions use TF32 by default)
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        os.environ["TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"] = (
            "1"  # the same for processes this one spawns (rung 3)
        )
    if args.sync_bn:
        import torch

        if (
            not torch.cuda.is_available()
        ):  # before any process starts: mp.spawn's workers would each fail
            raise UsageError(
                "--sync-bn needs GPUs (PyTorch's SyncBatchNorm refuses CPU tensors): leave it out on a "
                "CPU, where each process normalises over its own share of the batch"
            )
    args.amp_dtype = (
        None  # --mixed-precision as the torch dtype that autocast and FSDP's policy take
    )
    if args.mixed_precision != "no":
        import torch

        args.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.mixed_precision]
    if args.n_embd % args.n_head:
        raise UsageError(f"--n-embd {args.n_embd} is not a multiple of --n-head {args.n_head}")
    if args.dataset is None and args.task not in TASKS:
        raise UsageError(
            f"unknown task {args.task!r}: use --task {' or --task '.join(TASKS)}, "
            f"or --dataset PATH_OR_HUB_NAME for your own data"
        )
    return args


def check_writable(output_dir):
    """Fail before training, not after an hour of it, when the results cannot be written."""
    if (Path(output_dir) / "checkpoints").exists() and not (
        Path(output_dir) / "checkpoints"
    ).is_dir():
        raise UsageError(
            f"{str(Path(output_dir) / 'checkpoints')!r} is a file, where the run writes its checkpoint "
            f"directories: move it away, or pass another --output-dir"
        )
    try:
        os.makedirs(output_dir, exist_ok=True)
        probe = Path(output_dir) / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise UsageError(
            f"output dir {output_dir!r} is not writable ({e.strerror}): "
            f"pass --output-dir to a writable directory"
        ) from None


def free_port(port=0, fix="pick another port"):
    """`port` if nothing listens on it yet (0: any free port); UsageError naming `fix` when it is taken."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise UsageError(
                f"port {port} is in use (another training, or one left over): {fix}"
            ) from None
        return s.getsockname()[1]


TORCHRUN_ENV = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


def prepare_process(args, script):
    """What every rung needs from its process before it trains, none of it about the lesson of any step: bad
    launch environments refused, CPU cores shared between the processes of this machine, and warnings about
    launcher and hardware traps. Rank 0 alone prints."""
    import torch

    env, first = os.environ, os.environ.get("RANK", "0") == "0"
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
    if script.startswith("6") and env.get("ACCELERATE_USE_FSDP", "").lower() == "true":
        raise UsageError(
            "rung 6 saves from the main process, and under FSDP every process must take part in "
            "gathering the weights (accelerate on a CPU would even train plain DDP): run "
            "scripts/7_fsdp.py under torchrun (make fsdp-2gpu, or make fsdp-cpu here)"
        )
    if script.startswith("6"):  # accelerate: what the launch configured, and a trap on CPUs
        args.mixed_precision = env.get(
            "ACCELERATE_MIXED_PRECISION", "no"
        )  # from the config, for metrics.json
        from accelerate import PartialState

        # Started here, Accelerator() in the rung joins this state. cpu=True: without it, a CPU launch of N
        # processes trains N unconnected copies (measured); timeout: --dist-timeout, as in rungs 3-5.
        PartialState(cpu=not torch.cuda.is_available(), timeout=args.dist_timeout)
        cache_accelerate_lookups()
    if (
        not torch.cuda.is_available()
    ):  # N processes on one machine share its cores: 1 thread each on 2 cores
        procs = int(env.get("LOCAL_WORLD_SIZE") or 0) or (
            args.nproc if script.startswith("3") else 1
        )
        threads = int(env.get("OMP_NUM_THREADS") or 0) or max(1, (os.cpu_count() or 1) // procs)
        env["OMP_NUM_THREADS"] = str(threads)  # inherited by the processes mp.spawn starts (rung 3)
        torch.set_num_threads(threads)
    if first and args.mixed_precision == "fp16" and not torch.cuda.is_available():
        print(
            "warning: fp16 on a CPU is many times slower than fp32 (and accelerate runs it in fp32, unscaled): "
            "use bf16 on a CPU"
        )
    if first and script.startswith("2") and torch.cuda.device_count() < 2:
        print(
            f"DataParallel: {torch.cuda.device_count()} GPU(s) visible, nothing to split; training as rung 1"
        )
    if (
        first
        and env.get("TORCHELASTIC_MAX_RESTARTS", "0") != "0"
        and env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    ):  # pytorch issue 135712
        fix = (
            "launch with PET_STANDALONE=1 TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"
            if "ACCELERATE_MIXED_PRECISION" in env
            else "set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in the launcher's environment"
        )
        print(
            f"warning: restarts may fail or hang (over gloo: 5 times in 8 here) while workers share torchrun's "
            f"rendezvous store: {fix}"
        )
    if (
        first
        and int(env.get("WORLD_SIZE", 1)) > 1
        and "TORCHELASTIC_RUN_ID" not in env
        and "MASTER_PORT" in env
    ):
        print(
            f"waiting up to --dist-timeout {args.dist_timeout.total_seconds():g} s for {env['WORLD_SIZE']} processes "
            f"at {env.get('MASTER_ADDR', '?')}:{env['MASTER_PORT']} (a manual env:// launch: start every RANK)",
            flush=True,
        )
    for signum in (
        signal.SIGTERM,
        signal.SIGINT,
    ):  # until the rung installs its own handler (preemption.py)
        signal.signal(signum, _forward_to_children)
    if env.get("RANK", "0") == "0":  # one process per job: the launcher's parent (rung 3) or rank 0
        lock_output_dir(args.output_dir)


def cache_accelerate_lookups():
    """accelerate 1.15's AcceleratedOptimizer.step() asks importlib, twice per step, whether the lomo_optim package
    is installed: 110 us a step here, 22 us with the answer cached (scripts/tools/bench.py's per-step costs; the
    digits CNN's whole step is 2 ms). What is installed does not change during a run, so the answer is cached."""
    import functools

    import accelerate.optimizer

    lookup = getattr(accelerate.optimizer, "is_lomo_available", None)
    if lookup is not None and not hasattr(lookup, "cache_info"):
        accelerate.optimizer.is_lomo_available = functools.cache(lookup)


def lock_output_dir(output_dir):
    """One run per output dir: a second run there would delete the first's checkpoints (--resume none) and
    overwrite its results. `<output-dir>/.lock` holds the owner's pid and host; a lock whose process is gone
    (killed, or the machine restarted) is taken over with a warning. Released when this process exits."""
    import json

    check_writable(output_dir)
    path, me = Path(output_dir) / ".lock", {"pid": os.getpid(), "host": socket.gethostname()}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = json.loads(path.read_text())
            except (OSError, ValueError):
                owner = {}  # half written by a process that died at that moment, or unreadable: stale
            pid, host = owner.get("pid"), owner.get("host")
            if host == me["host"] and isinstance(pid, int) and _alive(pid):
                raise UsageError(
                    f"another run (pid {pid}) is using --output-dir {output_dir!r}: wait for it to "
                    f"finish, or pass another --output-dir"
                ) from None
            if host not in (None, me["host"]):
                raise UsageError(
                    f"--output-dir {output_dir!r} is locked by a run on {host} (pid {pid}): pass "
                    f"another --output-dir, or delete {str(path)!r} if that run is gone"
                ) from None
            print(
                f"warning: {str(path)!r} was left by a run that is gone (pid {pid}): taking it over"
            )
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(me, f)
        atexit.register(_unlock, path, me)
        return


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _unlock(path, me):
    import json

    try:
        if json.loads(path.read_text()) == me:
            path.unlink()
    except (OSError, ValueError):
        pass


def _forward_to_children(signum, frame):
    """A launcher's parent (rung 3's mp.spawn) passes SIGTERM/SIGINT on to its workers, which checkpoint and
    exit; Kubernetes signals PID 1 alone. A process without workers takes the signal's default."""
    children = multiprocessing.active_children()
    for child in children:
        os.kill(child.pid, signum)
    if not children:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def run(main, description=None):
    """Parse the flags and run `main(args)`. Bad input, here or in a process that `main` spawned, becomes one
    line on stderr and exit code 2 instead of a traceback; so do the usual distributed failures (a collective
    that timed out, a rank that died, a torchrun script started without torchrun), with their likely cause. A
    run stopped by SIGTERM or SIGINT exits with 143 or 130, after its checkpoint."""
    script = Path(sys.argv[0]).stem
    try:
        args = parse(description)
        prepare_process(args, script)
    except UsageError as e:
        if (
            os.environ.get("RANK", "0") == "0"
        ):  # every rank parses the same flags: one of them says so
            fail(e)
        sys.exit(2)
    try:
        main(args)
    except UsageError as e:
        fail(e)
    except KeyError as e:
        if e.args and e.args[0] in TORCHRUN_ENV:  # os.environ["LOCAL_RANK"] outside torchrun
            fail(
                f"{e.args[0]} is not set: launch this script with torchrun, e.g. torchrun --standalone "
                f"--nproc_per_node=2 scripts/{script}.py"
            )
        raise
    except Exception as e:
        name = type(e).__name__
        if (
            name == "ProcessExitedException" and e.exit_code in preemption.EXIT_CODES
        ):  # mp.spawn'd workers
            sys.exit(e.exit_code)
        text = str(e).strip()
        rank = None
        if (
            name == "ProcessRaisedException"
        ):  # torch.multiprocessing.spawn: a child's traceback as text
            rank = e.error_index
            name, _, text = text.splitlines()[-1].partition(": ")
            name = name.rsplit(".", 1)[-1]
            if name in ("UsageError", "CheckpointError"):
                fail(text, rank)
        problem = distributed_problem(text, args.dist_timeout.total_seconds())
        if problem:
            fail(problem, rank)
        raise


def distributed_problem(text, timeout):
    """The likely cause, in one line, of an error a collective raised (gloo's or NCCL's words); None for any
    other error."""
    if re.search(r"timed out waiting|collective operation timeout", text, re.IGNORECASE):
        return (
            f"a collective waited more than --dist-timeout {timeout:g} s: another rank stopped joining "
            f"collectives (it hangs, or skipped one that the others entered); if it is only slow (a large "
            f"checkpoint, a long eval), raise --dist-timeout"
        )
    joined = re.search(r"waiting for clients\. (\d+)/(\d+) clients joined", text)
    if joined:  # env:// rendezvous, rank 0's side: the other ranks never came
        return (
            f"only {joined[1]} of {joined[2]} processes joined within --dist-timeout {timeout:g} s: start all "
            f"{joined[2]} (RANK 0 to {int(joined[2]) - 1}, the same MASTER_ADDR:MASTER_PORT), or launch with "
            f"torchrun, which starts them; WORLD_SIZE is the number of processes, not of machines"
        )
    if re.search(r"EADDRINUSE|address already in use", text):
        port = re.search(r"port: (\d+)", text)
        return (
            f"port {port[1] if port else os.environ.get('MASTER_PORT', '?')} is in use on this machine (another "
            f"run, or one still exiting): set MASTER_PORT to a free port, or launch with torchrun --standalone, "
            f"which picks one"
        )
    if re.search(
        r"(client socket|connect to).*(timed out|refused)|failed to connect", text, re.IGNORECASE
    ):
        return (
            f"could not reach rank 0 at {os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')} "
            f"within --dist-timeout {timeout:g} s: start rank 0 (it listens there), check the address and "
            f"that the port is open between the machines"
        )
    if re.search(r"connection (closed|reset) by peer|broken pipe", text, re.IGNORECASE):
        return (
            "another rank exited, so a collective lost its peer: the cause is that rank's error above, or the "
            "launcher's report of how it died (exitcode -9: killed, e.g. out of memory)"
        )
    return None


def fail(message, rank=None):
    """Print `error: message` (naming the rank when there are several) and exit with code 2."""
    if rank is None and int(os.environ.get("WORLD_SIZE", 1)) > 1:
        rank = os.environ.get("RANK")
    where = f" (rank {rank})" if rank is not None else ""
    print(f"error{where}: {message}", file=sys.stderr, flush=True)
    error_file = os.environ.get(
        "TORCHELASTIC_ERROR_FILE"
    )  # under torchrun: what its failure summary shows
    if (
        error_file
    ):  # this one line, instead of the traceback that @record wrote there for a real crash
        import json
        import time

        try:
            line = {"message": f"error{where}: {message}", "timestamp": int(time.time())}
            Path(error_file).write_text(json.dumps(line))
        except OSError:
            pass
    sys.exit(2)
