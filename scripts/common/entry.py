"""Every rung's entry point: `run(main, doc, uses)` parses the flags (common/flags.py), prepares the process
(common/process.py), calls `main(args)`, and turns what went wrong into one `error: ...` line that names the fix
(common/errors.py). Kept apart from errors.py so that no module of common/ imports in a circle."""

import functools
import sys
from pathlib import Path

from common import flags, preemption, process
from common.errors import TORCHRUN_ENV, UsageError, distributed_problem, fail, leave


def run(main, description=None, uses=()):
    """Parse the flags (`uses`: the rung-specific flags this script honours), prepare the process and run
    `main(args)`. Bad input, here or in a process that `main` spawned, becomes one line on stderr and exit code 2;
    so do the usual distributed failures, with their likely cause. A run stopped by SIGTERM or SIGINT exits with
    143 or 130, after its checkpoint."""
    script = Path(sys.argv[0]).stem
    try:
        args = flags.parse(description, uses=uses)
        process.prepare(args)
    except UsageError as e:
        # every rank parses the same flags: one of them says so
        if process.first_process():
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
        # mp.spawn'd workers
        if name == "ProcessExitedException" and e.exit_code in preemption.EXIT_CODES:
            sys.exit(e.exit_code)
        text, rank = str(e).strip(), None
        # torch.multiprocessing.spawn: a child's traceback as text
        if name == "ProcessRaisedException":
            rank = e.error_index
            name, _, text = text.splitlines()[-1].partition(": ")
            if name.rsplit(".", 1)[-1] in ("UsageError", "CheckpointError"):
                fail(text, rank)
        problem = distributed_problem(text, args.dist_timeout.total_seconds())
        if problem:
            fail(problem, rank)
        raise
    leave()


def worker(main):
    """For the processes mp.spawn starts (rung 3): run `main(local_rank, args)`, then leave as a finished run
    does (errors.leave: os._exit, no libtorch teardown, which aborted a spawned rank after "done:" in a
    clean-clone test run). An exception still reaches mp.spawn, which reports it to the parent."""

    @functools.wraps(main)
    def run(*args):
        main(*args)
        leave()

    return run
