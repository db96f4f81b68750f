"""The one argument parser every rung uses. Flags are only ever added, never renamed or removed."""
import argparse
import os
import sys
from pathlib import Path

from common import UsageError

TASKS = ("digits", "cancer")  # built-in tasks, offline; --dataset replaces them with your own data


def parser(description=None):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--task", default="digits", help=f"built-in task: {', '.join(TASKS)} (default digits)")
    d.add_argument("--dataset", default=None,
                   help="your own data instead of --task: a local csv/json/parquet file, an imagefolder "
                        "directory, a save_to_disk directory, or a hub dataset name when online")
    d.add_argument("--image-column", default=None, help="image column of --dataset (default: auto)")
    d.add_argument("--feature-columns", default=None,
                   help="comma-separated numeric feature columns of --dataset (default: every numeric "
                        "column but the label)")
    d.add_argument("--label-column", default="label", help="integer class column of --dataset")
    d.add_argument("--image-size", type=int, default=32, help="images of --dataset are resized to this")
    d.add_argument("--data-dir", default=os.environ.get("DDP_LADDER_CACHE", ".cache/ddp-ladder"),
                   help="where prepared datasets are cached (save_to_disk), built once")
    d.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes per process")
    t = p.add_argument_group("training")
    t.add_argument("--model", default="auto", choices=("auto", "cnn", "mlp"),
                   help="auto: cnn (with BatchNorm) for images, mlp for tabular data")
    t.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps (0: no limit)")
    t.add_argument("--batch-size", type=int, default=32,
                   help="per device; the global batch is batch size x world size")
    t.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    t.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    t.add_argument("--seed", type=int, default=0, help="seeds the model init and every epoch's sample order")
    o = p.add_argument_group("output")
    o.add_argument("--output-dir", default=None, help="default: out/<script name>")
    o.add_argument("--resume", default="none",
                   help="none: start fresh (old checkpoints in --output-dir are removed); auto: the newest "
                        "valid checkpoint in --output-dir, if any; or a checkpoint directory")
    o.add_argument("--keep", type=int, default=3, help="how many of the newest checkpoints to keep")
    return p


def parse(description=None, argv=None):
    """Parse and validate the flags; bad values raise UsageError (one line, exit code 2)."""
    args = parser(description).parse_args(argv)
    if args.output_dir is None:
        args.output_dir = os.path.join("out", Path(sys.argv[0]).stem)
    for name in ("batch_size", "epochs", "keep"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(args, name)})")
    if args.max_steps < 0 or args.num_workers < 0:
        raise UsageError("--max-steps and --num-workers must be 0 or more")
    args.max_steps = args.max_steps or sys.maxsize  # 0 means no limit
    if args.dataset is None and args.task not in TASKS:
        raise UsageError(f"unknown task {args.task!r}: use --task {' or --task '.join(TASKS)}, "
                         f"or --dataset PATH_OR_HUB_NAME for your own data")
    return args


def check_writable(output_dir):
    """Fail before training, not after an hour of it, when the results cannot be written."""
    try:
        os.makedirs(output_dir, exist_ok=True)
        probe = Path(output_dir) / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"output dir {output_dir!r} is not writable ({e.strerror}): "
                         f"pass --output-dir to a writable directory") from None


def run(main):
    """Run a rung's main(): bad input becomes one line on stderr and exit code 2, not a traceback."""
    try:
        main()
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
