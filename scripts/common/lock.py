"""One run per output dir: a second run there would delete the first's checkpoints and overwrite its results.

The lock is the operating system's (`filelock`: flock on `<output-dir>/.lock`): two processes cannot both hold
it, whatever their timing, and the OS releases it when its holder dies (kill -9 included), so there are no stale
locks to take over. The holder's pid and host are written beside it, for the message a second run gets.
"""

import json
import os
import socket
from pathlib import Path

from filelock import FileLock, Timeout

from common import atomic
from common.errors import UsageError

_held = []  # the locks this process holds, released by the OS when it exits


def lock_output_dir(output_dir):
    """Take `<output-dir>/.lock` for this process, or raise UsageError naming the run that holds it."""
    path = Path(output_dir)
    check_writable(path)
    if (path / ".lock").is_dir() or (path / ".lock").is_symlink():
        raise UsageError(  # a planted link would make the lock truncate the file it points to
            f"{str(path / '.lock')!r} is a directory or a symlink, where the run keeps its lock "
            f"file: remove it"
        )
    lock = FileLock(path / ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            owner = json.loads((path / ".lock.owner").read_text())
            who = f"pid {int(owner['pid'])} on {str(owner['host'])[:64]}"
        except (OSError, ValueError, TypeError, KeyError):
            who = "a process that is starting"
        raise UsageError(
            f"another run ({who}) is using --output-dir {str(output_dir)!r}: wait for it to "
            f"finish, or pass another --output-dir"
        ) from None
    _held.append(lock)
    atomic.write_text(
        path / ".lock.owner", json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
    )


def check_writable(output_dir):
    """Fail before training, not after an hour of it, when the results cannot be written."""
    path = Path(output_dir)
    if (path / "checkpoints").exists() and not (path / "checkpoints").is_dir():
        raise UsageError(
            f"{str(path / 'checkpoints')!r} is a file, where the run writes its checkpoint "
            f"directories: move it away, or pass another --output-dir"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path / ".write-test", "ok")
        (path / ".write-test").unlink()
    except OSError as e:
        raise UsageError(
            f"output dir {str(output_dir)!r} is not writable ({e.strerror}): "
            f"pass --output-dir to a writable directory"
        ) from None
