"""Bad input and the usual distributed failures as one line on stderr and exit code 2, never a traceback.

A leaf: it imports nothing of common/, so every module can raise UsageError (common/entry.py is the entry point
that turns what went wrong into the `error: ...` line). `leave` is the one way a finished or stopped run exits.
"""

import os
import re
import sys
from pathlib import Path

# The exit-time race's workaround, in one place (leave() below explains it; guides/troubleshooting.md has the
# minimal reproduction). Imported before any init_process_group: torch.distributed.nn's functions take
# group=group.WORLD as a default argument, so the import DDP's constructor makes after init would pin the default
# group, and gloo's threads, for the life of the process.
import torch.distributed.nn  # noqa: F401

_HELD = []  # libtorch objects (the DDP/FSDP model) kept until leave(): never freed while gloo's threads run

TORCHRUN_ENV = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)


class UsageError(Exception):
    """Bad input. Printed as one line on stderr (naming the fix) and the process exits with code 2."""


def hold(obj):
    """Keep `obj` (the run's wrapped model) alive until leave(): freed with main()'s frame, its DDP Reducer's
    ProcessGroupGloo destructor joins gloo's worker threads while holding the GIL, and hangs when one of them
    waits for the GIL to free a tensor (a launch test timed out after "done:"; py-spy showed that join)."""
    _HELD.append(obj)


def leave(code=0):
    """End a run (finished, or stopped by a signal after its checkpoint) without the interpreter's teardown.
    The exit-time race, measured here: gloo's worker threads live as long as the process group's last holder
    (the DDP model's Reducer, and torch.distributed.nn when imported after init: see the import above), not
    until destroy_process_group; freed while the interpreter exits, a worker that frees the last collective's
    tensor needs the GIL, is ended by Python, and the process aborts ("terminate called without an active
    exception", the shape of pytorch/pytorch#190489), or the main thread's join hangs. A few runs in a hundred
    on 2 loaded cores, each after the run had finished. So: the import above, the model held (`hold`), and
    os._exit here, after the output is flushed; the OS frees the memory and releases the output-dir lock.
    guides/troubleshooting.md ("The run finished, then aborted or hung") has the reproduction; a script of
    one's own takes the fix of guides/your-script.md item 2 instead (del model, then destroy_process_group)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def distributed_problem(text, timeout):
    """The likely cause, in one line, of an error a collective raised (gloo's or NCCL's words); None for any
    other error."""
    env = os.environ
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
            f"port {port[1] if port else env.get('MASTER_PORT', '?')} is in use on this machine (another run, "
            f"or one still exiting): set MASTER_PORT to a free port, or launch with torchrun --standalone, "
            f"which picks one"
        )
    if re.search(r"(client socket|connect to).*(timed out|refused)|failed to connect", text, re.I):
        return (
            f"could not reach rank 0 at {env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')} within "
            f"--dist-timeout {timeout:g} s: start rank 0 (it listens there), check the address and that the "
            f"port is open between the machines"
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
    # under torchrun: what its failure summary shows
    error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    # this one line, instead of the traceback that @record wrote there for a real crash
    if error_file:
        import json
        import time

        try:
            line = {"message": f"error{where}: {message}", "timestamp": int(time.time())}
            Path(error_file).write_text(json.dumps(line))
        except OSError:
            pass
    sys.exit(2)
