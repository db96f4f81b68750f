"""doctor --fix never harms (issue 33, item 4): writes are exclusive, atomic, through a symbolic link to its
target and refused when the file changed since it was read; line endings, encoding and permissions are kept;
special files are skipped without being opened; and a fix is not offered where it would change what some path
through the program does (reported only). One test per case."""

import os
import stat
import subprocess
import sys

import doctor
import doctor_fix
import pytest

from conftest import ROOT

BAD_LOADER = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "sampler = DistributedSampler(ds)\n"
    "loader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
    "sampler.set_epoch(0)\n"
)
FIXED_LOADER = BAD_LOADER.replace("shuffle=True, ", "")


def fix(capsys, *paths):
    code = doctor.main(["--fix", *map(str, paths)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_link_planted_at_the_old_temporary_name_is_never_written_through(tmp_path, capsys):
    """The fix used to write `.train.py.doctor-fix.tmp` without exclusive create: a symbolic link planted there
    sent the fixed text into any file the user could write, and chmodded it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    victim.chmod(0o600)
    (tmp_path / ".train.py.doctor-fix.tmp").symlink_to(victim)
    train = tmp_path / "train.py"
    train.write_text(BAD_LOADER)
    assert fix(capsys, train)[0] == 0
    assert train.read_text() == FIXED_LOADER
    assert victim.read_text() == "keep me\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    # and the temporary file is gone: only what was there before is left
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".train.py.doctor-fix.tmp",
        "train.py",
        "victim.txt",
    ]


def test_a_symlinked_source_is_fixed_at_its_target_and_stays_a_link(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "train.py"
    target.write_text(BAD_LOADER)
    link = tmp_path / "train.py"
    link.symlink_to(target)
    assert fix(capsys, link)[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FIXED_LOADER


def test_an_edit_saved_during_the_fix_is_kept_and_the_fix_refused(tmp_path, capsys, monkeypatch):
    """An editor that saves the file while doctor computes the fix (10 s on a 20k-line file) must not lose the
    edit: doctor compares the bytes just before the rename and writes nothing."""
    train = tmp_path / "train.py"
    train.write_text(BAD_LOADER)
    real_fix = doctor_fix.fix_source

    def slow_fix(source, *args):
        result = real_fix(source, *args)
        with open(train, "a") as f:  # the user's save, mid-fix
            f.write("print('my edit')\n")
        return result

    monkeypatch.setattr(doctor_fix, "fix_source", slow_fix)
    code, out, err = fix(capsys, train)
    assert code == 2 and err.startswith(f"error: {train}: it changed since doctor read it"), err
    assert train.read_text() == BAD_LOADER + "print('my edit')\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary file left


def test_a_fix_that_cannot_be_written_is_one_error_line_and_the_file_stays(
    tmp_path, capsys, monkeypatch
):
    """A read-only directory or a full disk: said as a write error (not 'cannot read it'), nothing changed."""
    train = tmp_path / "train.py"
    train.write_text(BAD_LOADER)

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(doctor.tempfile, "mkstemp", refused)
    code, out, err = fix(capsys, train)
    assert code == 2 and err == (
        f"error: {train}: cannot write the fix beside it (Permission denied); nothing written\n"
    )
    assert train.read_text() == BAD_LOADER


def test_crlf_line_endings_are_kept_on_every_line(tmp_path, capsys):
    train = tmp_path / "train.py"
    train.write_bytes(BAD_LOADER.replace("\n", "\r\n").encode())
    assert fix(capsys, train)[0] == 0
    data = train.read_bytes()
    assert data == FIXED_LOADER.replace("\n", "\r\n").encode()
    assert data.count(b"\n") == data.count(b"\r\n") == 4


def test_a_form_feed_line_does_not_shift_the_fix_to_another_line(tmp_path, capsys):
    """str.splitlines splits at a form feed, Python does not: the fix then took `shuffle` from the loader one
    line below the finding, the correct one."""
    source = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "sampler = DistributedSampler(ds)\n\x0c\n"
        "loader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
        "plain = DataLoader(other, shuffle=True)\n"
        "sampler.set_epoch(0)\n"
    )
    train = tmp_path / "train.py"
    train.write_bytes(source.encode())
    assert fix(capsys, train)[0] == 0
    assert train.read_bytes().decode() == source.replace("shuffle=True, sampler", "sampler")
    # and a noqa after a form feed is read on its own line
    quiet = source.replace("sampler=sampler)", "sampler=sampler)  # noqa: DDL104")
    assert [f.code for f in doctor.check_source(quiet)] == []


def test_a_utf8_bom_is_read_and_kept(tmp_path, capsys):
    train = tmp_path / "train.py"
    train.write_bytes(b"\xef\xbb\xbf" + BAD_LOADER.encode())
    code, out, err = fix(capsys, train)
    assert code == 0 and err == f"fixed: {train}: 3 DDL104\n", err
    assert train.read_bytes() == b"\xef\xbb\xbf" + FIXED_LOADER.encode()


def test_a_latin1_coding_cookie_is_read_and_the_file_written_in_latin1(tmp_path, capsys):
    cookie = "# -*- coding: latin-1 -*-\n# caf\xe9 au lait\n"
    train = tmp_path / "train.py"
    train.write_bytes((cookie + BAD_LOADER).encode("latin-1"))
    assert doctor.main([str(train)]) == 1 and "DDL104" in capsys.readouterr().out
    assert fix(capsys, train)[0] == 0
    assert train.read_bytes() == (cookie + FIXED_LOADER).encode(
        "latin-1"
    )  # \xe9, not UTF-8's \xc3\xa9


def test_permissions_are_kept(tmp_path, capsys):
    train = tmp_path / "train.py"
    train.write_text(BAD_LOADER)
    train.chmod(0o751)
    assert fix(capsys, train)[0] == 0
    assert train.read_text() == FIXED_LOADER and stat.S_IMODE(train.stat().st_mode) == 0o751


def test_a_fifo_named_py_is_skipped_not_opened(tmp_path):
    """Opening a FIFO waits for a writer: doctor on a directory holding one hung. A subprocess, so that a
    regression fails the test (timeout) instead of hanging the run."""
    (tmp_path / "pipe.py").parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "train.py").write_text(BAD_LOADER)
    run = [sys.executable, str(ROOT / "scripts" / "tools" / "doctor.py")]
    proc = subprocess.run([*run, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert proc.stdout.startswith(f"{tmp_path / 'train.py'}:3:") and "pipe.py" not in proc.stdout
    named = subprocess.run(
        [*run, str(tmp_path / "pipe.py")], capture_output=True, text=True, timeout=60
    )
    assert named.returncode == 2 and named.stderr == (
        f"error: {tmp_path / 'pipe.py'}: is not a regular file (a FIFO, socket or device): skipped, "
        "not opened\n"
    )


def reported_not_rewritten(capsys, tmp_path, source, code):
    """--diff shows nothing and --fix writes nothing, byte for byte, while the finding is still reported."""
    train = tmp_path / "train.py"
    train.write_text(source)
    assert code in [f.code for f in doctor.check_source(source)]
    # --preview: DDL106 is a preview rule, whose fix runs only when the rule does
    assert doctor.main(["--diff", "--preview", str(train)]) == 0 and capsys.readouterr().out == ""
    status, out, err = fix(capsys, "--preview", train)
    assert status == 1 and f" {code} " in out and "fixed:" not in err, (out, err)
    assert train.read_text() == source


@pytest.mark.parametrize(
    "wrap",
    [
        "if distributed:\n    model = DDP(model)\n",
        "model = DDP(model) if distributed else model\n",
    ],
)
def test_ddl106_under_a_conditional_wrap_is_reported_not_rewritten(tmp_path, capsys, wrap):
    """`.module` added where the wrap is conditional: the single-process run then crashes at its save."""
    source = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = torch.nn.Linear(2, 2)\n" + wrap + "if rank == 0:\n"
        "    torch.save(model.state_dict(), 'w.pt')\n"
    )
    reported_not_rewritten(capsys, tmp_path, source, "DDL106")


@pytest.mark.parametrize(
    "sampler",
    [
        "sampler = DistributedSampler(ds) if dist.is_initialized() else None\n",
        "sampler = None\nif dist.is_initialized():\n    sampler = DistributedSampler(ds)\n",
    ],
)
def test_ddl104_where_the_sampler_may_be_none_is_reported_not_rewritten(tmp_path, capsys, sampler):
    """Dropping shuffle=True where the sampler is None (no process group) loses that run's shuffling."""
    source = (
        "import torch.distributed as dist\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n" + sampler + "loader = "
        "DataLoader(ds, shuffle=True, sampler=sampler)\nif sampler is not None:\n"
        "    sampler.set_epoch(0)\n"
    )
    reported_not_rewritten(capsys, tmp_path, source, "DDL104")


def test_ddl104_with_a_sampler_parameter_is_reported_not_rewritten(tmp_path, capsys):
    source = (
        "from torch.utils.data import DataLoader\n"
        "def make(ds, sampler=None):\n    return DataLoader(ds, shuffle=True, sampler=sampler)\n"
    )
    reported_not_rewritten(capsys, tmp_path, source, "DDL104")


def test_ddl115_no_sync_whose_block_would_take_in_the_step_is_reported_not_rewritten(
    tmp_path, capsys
):
    """`with model.no_sync():` around backward *and* step: the step uses gradients never all-reduced, and the
    ranks' weights diverge."""
    source = (
        "import torch\nfor x in loader:\n    model.no_sync()\n    model(x).sum().backward()\n"
        "    optimizer.step()\n    optimizer.zero_grad()\n"
    )
    reported_not_rewritten(capsys, tmp_path, source, "DDL115")
