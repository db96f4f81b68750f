"""The one way this project writes a file or a directory: into a new temporary name in the target's own
directory, created exclusively (tempfile: O_EXCL, mode 0600, a random name nobody can plant a symlink at), flushed
to disk, then renamed into place. A reader, a crash or a SIGKILL at any moment sees the old version or the new
one, never half of one."""

import os
import shutil
import tempfile
from pathlib import Path


def fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path, write):
    """Call `write(tmp_path)` on a fresh temporary file beside `path`, then rename it to `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        fsync(tmp)
        os.replace(tmp, path)  # the commit point
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync(path.parent)


def write_text(path, text):
    write_file(path, lambda tmp: tmp.write_text(text))


def write_dir(path, fill):
    """Call `fill(tmp_dir)` on a fresh temporary directory beside `path`, then rename it to `path`. An existing
    `path` is replaced: moved aside first, then removed, so there is no moment without one of the two."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".tmp-{path.name}."))
    try:
        fill(tmp)
        for name in os.listdir(tmp):
            fsync(tmp / name)
        fsync(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists():  # the same step saved again (a resumed run): move the old one aside first
        old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".tmp-old-{path.name}."))
        os.rename(path, old / path.name)
    os.rename(tmp, path)  # the commit point
    fsync(path.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove_stale(directory, name="*"):
    """Remove what a killed write of `name` (default: of anything) left in `directory`: its temporary
    directories, never a finished file or checkpoint."""
    for stale in [
        *Path(directory).glob(f".tmp-{name}.*"),
        *Path(directory).glob(f".tmp-old-{name}.*"),
    ]:
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
