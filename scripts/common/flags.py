"""The one argument parser every rung uses. Flags are only ever added, never renamed or removed.

Some flags belong to one step's concept (--nproc to mp.spawn, --sync-bn to DDP, --mixed-precision to AMP,
--dist-timeout to a process group): a rung names those it honours (`uses`), and the others are refused when given,
instead of being silently ignored.
"""

import argparse
import math
import os
import sys
from datetime import timedelta
from pathlib import Path

from common.errors import UsageError

# built-in tasks, offline; --dataset replaces them with your own data
TASKS = ("digits", "cancer", "gpt")
RUNG_FLAGS = {  # flag -> where it is honoured, for the refusal's hint
    "nproc": "3_ddp_spawn",
    "sync_bn": "rungs 3-6",
    "mixed_precision": "5_ddp_amp and 7_fsdp (6_accelerate takes it from its launch: accelerate launch "
    "--mixed_precision bf16)",
    "dist_timeout": "rungs 3-7",
}


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
        help="none: start fresh (refused if --output-dir holds checkpoints, unless --overwrite); "
        "auto: the newest valid checkpoint in --output-dir, if any; or a checkpoint directory",
    )
    o.add_argument(
        "--overwrite",
        action="store_true",
        help="delete the checkpoints in --output-dir that are in the way: all of them for a fresh run, "
        "those at or after the resumed step for --resume <checkpoint> (a rewind)",
    )
    o.add_argument("--keep", type=int, default=3, help="how many of the newest checkpoints to keep")
    eval_help = "evaluate every N steps (0: each epoch); the best eval loss: <output-dir>/best"
    o.add_argument("--eval-every", type=int, default=0, help=eval_help)
    log_help = "a log line every N steps when stderr is not a terminal (a batch job's log; 0: none)"
    o.add_argument("--log-every", type=int, default=50, help=log_help)
    o.add_argument(
        "--report-to",
        default="none",
        choices=("none", "tensorboard"),
        help="per-step loss, lr, grad norm and samples/s from the main process: tensorboard writes "
        "<output-dir>/runs (tensorboard --logdir out); none (default) logs nothing per step",
    )
    return p


def parse(description=None, argv=None, uses=()):
    """Parse and validate the flags; bad values raise UsageError (one line, exit code 2). `uses` names the
    rung-specific flags (RUNG_FLAGS) that the calling script honours; any other one given is refused."""
    args = parser(description).parse_args(argv)
    defaults = parser().parse_args([])
    for name, where in RUNG_FLAGS.items():
        if name not in uses and getattr(args, name) != getattr(defaults, name):
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} is not used by {Path(sys.argv[0]).stem}: {where} take(s) it")
    if args.output_dir is None:
        args.output_dir = os.path.join("out", Path(sys.argv[0]).stem)
    positive = "batch_size epochs keep block_size n_layer n_head n_embd image_size"
    for name in positive.split() + ["gradient_accumulation_steps"]:
        if getattr(args, name) < 1:
            raise UsageError(
                f"--{name.replace('_', '-')} must be at least 1 (got {getattr(args, name)})"
            )
    for name in ("max_steps", "num_workers", "warmup_steps", "eval_every", "log_every"):
        if getattr(args, name) < 0:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} must be 0 or more (got {getattr(args, name)})")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise UsageError(f"--lr must be a positive number (got {args.lr:g})")
    if not (math.isfinite(args.momentum) and 0 <= args.momentum < 1):
        raise UsageError(
            f"--momentum must be at least 0 and below 1 (got {args.momentum:g}): SGD "
            f"diverges at 1 and above"
        )
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed must be between 0 and 2**63 - 1 (got {args.seed})")
    if args.overwrite and args.resume == "auto":
        raise UsageError(
            "--overwrite deletes checkpoints and --resume auto continues them: pass one of the two"
        )
    args.max_steps = args.max_steps or sys.maxsize  # 0 means no limit
    if not args.dist_timeout > 0:
        raise UsageError(f"--dist-timeout must be more than 0 seconds (got {args.dist_timeout:g})")
    args.dist_timeout = timedelta(seconds=args.dist_timeout)  # what init_process_group takes
    if "nproc" in uses:  # mp.spawn's rung: one process per visible GPU, else 2 CPU processes
        import torch

        gpus = torch.cuda.device_count()
        args.nproc = args.nproc or gpus or 2
        if args.nproc < 1 or (gpus and args.nproc > gpus):
            raise UsageError(
                f"--nproc {args.nproc} but {gpus} GPU(s) visible: one process per GPU, at least 1"
            )
    if args.sync_bn and args.model != "cnn-bn":
        raise UsageError(
            f"--sync-bn converts BatchNorm, and --model {args.model} has none: use --model cnn-bn"
        )
    args.amp_dtype = None
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
