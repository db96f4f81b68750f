"""Input is validated where it enters (issue 15): flags, tabular data, labels, images. Each case is one
UsageError line naming the fix, or correct behaviour; nothing trains on garbage."""

import sys

import numpy as np
import pytest
from PIL import Image

from common import UsageError, data, flags, lock
from conftest import SCRIPTS, args_for, save_checkpoint

ROWS = 40


def csv(tmp_path, rows, name="d.csv", sep=","):
    path = tmp_path / name
    path.write_text("\n".join(sep.join(map(str, r)) for r in rows) + "\n")
    return path


def table(label=lambda i: i % 2, a=lambda i: i * 0.1, b=lambda i: (i * 7) % 5):
    return [("a", "b", "label")] + [(a(i), b(i), label(i)) for i in range(ROWS)]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--lr", "nan"], "--lr must be a positive number"),
        (["--lr", "-1"], "--lr must be a positive number"),
        (["--lr", "inf"], "--lr must be a positive number"),
        (["--momentum", "3"], "--momentum must be at least 0"),
        (["--seed", str(2**70)], "--seed must be between"),
        (["--image-size", "0"], "--image-size must be at least 1"),
        (["--dist-timeout", "0"], "--dist-timeout must be more than 0"),
    ],
)
def test_bad_flag_values_are_one_line(argv, needle, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["4_ddp_torchrun.py"])
    with pytest.raises(UsageError, match=needle):
        flags.parse(argv=argv, uses=tuple(flags.RUNG_FLAGS))


def build(tmp_path, data_dir, path, **extra):
    return data.build(args_for(data_dir, dataset=str(path), **extra))


@pytest.mark.parametrize(
    "rows,needle,extra",
    [
        (
            table(a=lambda i: "nan" if i == 7 else i),
            "feature 'a' is nan (empty, NaN or infinite)",
            {},
        ),
        (table(b=lambda i: "inf" if i == 3 else i), "feature 'b' is inf", {}),
        (
            table(label=lambda i: "" if i == 5 else i % 2),
            "must hold whole class numbers or names",
            {},
        ),
        (table(label=lambda i: i * 0.37), "must hold whole class numbers or names", {}),
        (
            table(label=lambda i: 1),
            "has 1 distinct value(s): classification needs at least two",
            {},
        ),
        (table(), "is among --feature-columns", {"feature_columns": "a,label"}),
        (
            table(b=lambda i: f"x{i}"),
            "feature column 'b' is not numeric",
            {"feature_columns": "a,b"},
        ),
        (table()[:4], "the train split has 3 rows: at least 10", {}),
    ],
)
def test_tabular_data_that_would_train_on_garbage_is_refused(
    tmp_path, data_dir, rows, needle, extra
):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")) as e:
        build(tmp_path, data_dir, csv(tmp_path, rows), **extra)
    assert "\n" not in str(e.value)


def test_float_class_numbers_tsv_and_upper_case_suffixes_read_correctly(tmp_path, data_dir):
    train, _, info = build(tmp_path, data_dir, csv(tmp_path, table(label=lambda i: float(i % 3))))
    assert info.num_classes == 3 and info.input_shape == (2,)  # 0.0, 1.0, 2.0 are three classes
    _, _, info = build(tmp_path, data_dir, csv(tmp_path, table(), "d.tsv", "\t"))
    assert info.input_shape == (2,)  # two feature columns, not one tab-joined string
    _, _, info = build(tmp_path, data_dir, csv(tmp_path, table(), "UPPER.CSV"))
    assert info.input_shape == (2,)


def folder(root, images):
    for i, (cls, image) in enumerate(images):
        (root / cls).mkdir(parents=True, exist_ok=True)
        image.save(root / cls / f"{i}.png")
    return root


def test_16_bit_images_keep_their_range_and_corrupt_ones_are_named(tmp_path, data_dir):
    rng = np.random.default_rng(0)
    images = [
        (str(i % 2), Image.fromarray((rng.random((8, 8)) * 60000).astype(np.uint16)))
        for i in range(24)
    ]
    root = folder(tmp_path / "sixteen", images)
    train, eval_, info = build(tmp_path, data_dir, root, image_size=8)
    x = np.concatenate([train[:]["inputs"].numpy(), eval_[:]["inputs"].numpy()])
    assert info.input_shape == (1, 8, 8) and 0.0 <= x.min() and x.max() <= 1.0
    # not saturated to 1.0 as an 8-bit conversion would
    assert 0.05 < x.mean() < 0.95 and (x < 0.99).mean() > 0.9
    (root / "0" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(UsageError, match="cannot be read") as e:
        build(tmp_path, data_dir, root, image_size=8)
    assert "\n" not in str(e.value)


def test_the_cache_sees_an_image_added_inside_a_class_folder(tmp_path, data_dir):
    images = [
        (str(i % 2), Image.fromarray(np.full((8, 8), i * 9, np.uint8), mode="L")) for i in range(24)
    ]
    root = folder(tmp_path / "grey", images)
    train, eval_, _ = build(tmp_path, data_dir, root, image_size=8)
    before = len(train) + len(eval_)
    Image.fromarray(np.zeros((8, 8), np.uint8), mode="L").save(root / "1" / "new.png")
    train, eval_, _ = build(tmp_path, data_dir, root, image_size=8)
    assert len(train) + len(eval_) == before + 1


@pytest.mark.launch
def test_one_run_per_output_dir_and_the_os_frees_a_dead_runs_lock(tmp_path):
    """The lock is the OS's (flock through filelock): a second taker is refused in one line naming the
    holder, a holder killed with SIGKILL leaves nothing to take over, and a lock file with any content (a bare
    pid, a JSON list, garbage) is just a file to lock; a directory in its place is one line."""
    import subprocess

    lock.lock_output_dir(tmp_path / "a")  # this test's process holds it now
    with pytest.raises(UsageError, match=r"another run \(pid \d+ on .+\) is using --output-dir"):
        lock.lock_output_dir(tmp_path / "a")
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys; sys.path.insert(0, 'scripts'); "
            "from common import lock; lock.lock_output_dir(sys.argv[1]); "
            "os.kill(os.getpid(), signal.SIGKILL)",
            str(tmp_path / "b"),
        ],
        cwd=SCRIPTS.parent,
        timeout=60,
    )
    assert killed.returncode == -9 and (tmp_path / "b" / ".lock").exists()
    lock.lock_output_dir(tmp_path / "b")  # no stale lock: the OS released it with the process
    for name, content in (("c", "12345"), ("d", "[1, 2]"), ("e", "\x00garbage")):
        (tmp_path / name).mkdir()
        (tmp_path / name / ".lock").write_text(content)
        lock.lock_output_dir(tmp_path / name)
    (tmp_path / "f" / ".lock").mkdir(parents=True)
    with pytest.raises(UsageError, match="is a directory"):
        lock.lock_output_dir(tmp_path / "f")


def test_a_resumed_run_keeps_its_own_lr_and_says_so(tmp_path):
    import torch

    from common import checkpoint

    model = torch.nn.Linear(3, 2)
    old = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model(torch.ones(4, 3)).sum().backward()
    old.step()
    save_checkpoint(tmp_path, model, old, 1, 0, 0)
    new = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    logs = []
    checkpoint.restore("auto", tmp_path, model, new, log=logs.append)
    # the flag, with the checkpoint's momentum buffers
    assert new.param_groups[0]["lr"] == 0.01 and new.state
    assert "this run's flags kept: lr 0.01 (the checkpoint had 0.05)" in logs[0]


@pytest.mark.launch
def test_a_diverging_loss_stops_in_one_line_before_its_checkpoint(tmp_path, data_dir):
    from conftest import run_script

    proc = run_script(
        "1_single_gpu.py",
        "--task",
        "cancer",
        "--epochs",
        2,
        "--lr",
        "1e12",
        "--data-dir",
        data_dir,
        "--output-dir",
        tmp_path,
        check=False,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "the training loss became" in lines[0], (
        proc.stderr
    )
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())


def test_labels_and_headers_that_raised_tracebacks_are_one_line(tmp_path, data_dir):
    """Issue 35: a label `inf` raised OverflowError, a list-typed parquet label "unhashable type: 'list'", and a
    header naming the label twice trained on `label.1` as a feature (accuracy 1.0 on noise)."""
    rows = table(label=lambda i: "inf" if i == 4 else i % 2)
    with pytest.raises(UsageError, match="label inf in row 4") as e:
        build(tmp_path, data_dir, csv(tmp_path, rows, "inf.csv"))
    assert "\n" not in str(e.value)
    import pyarrow as pa
    import pyarrow.parquet as pq

    listed = tmp_path / "listed.parquet"
    pq.write_table(
        pa.table({"a": [i * 0.1 for i in range(ROWS)], "label": [[i % 2] for i in range(ROWS)]}),
        listed,
    )
    with pytest.raises(UsageError, match=r"label \[0\] in row 0 is a list"):
        build(tmp_path, data_dir, listed)
    noise = np.random.default_rng(0)
    twice = [("a", "label", "label")] + [(float(noise.random()), i % 2, i % 2) for i in range(ROWS)]
    with pytest.raises(UsageError, match="names the label column 'label' more than once"):
        build(tmp_path, data_dir, csv(tmp_path, twice, "twice.csv"))


def test_an_imagefolder_whose_first_file_is_not_an_image_is_named(tmp_path, data_dir):
    """Issue 35: the first file was read to choose the conversion, outside the per-image check: PIL's
    traceback."""
    images = [
        (str(i % 2), Image.fromarray(np.full((8, 8), i, np.uint8), mode="L")) for i in range(24)
    ]
    root = folder(tmp_path / "first", images)
    (root / "0" / "0.png").write_bytes(b"not an image at all")
    with pytest.raises(UsageError, match="cannot be read") as e:
        build(tmp_path, data_dir, root, image_size=8)
    assert "\n" not in str(e.value)


def test_the_same_picture_gives_the_same_input_whatever_its_mode_or_bit_depth(tmp_path, data_dir):
    """Issue 35: the first image chose the conversion for all: an 8-bit picture and the same picture saved as
    16-bit (x 257) came out as different inputs. Each image is now scaled by its own bit depth, in the
    dataset's one channel mode."""
    from common.your_data import _image_converter

    grey8 = np.arange(64, dtype=np.uint8).reshape(8, 8) * 4
    as8 = Image.fromarray(grey8, mode="L")
    as16 = Image.fromarray(grey8.astype(np.uint16) * 257)
    for first in (as8, as16):
        convert = _image_converter(first, 8)
        a, b = convert(as8), convert(as16)
        assert a.shape == b.shape == (1, 8, 8) and np.abs(a - b).max() < 1e-6
    rgb = _image_converter(Image.new("RGB", (8, 8)), 8)
    assert rgb(as8).shape == rgb(as16).shape == (3, 8, 8)
    assert np.abs(rgb(as8) - rgb(as16)).max() < 1e-6


def test_an_eval_split_smaller_than_the_world_size_is_one_line():
    """Issue 35: Dataset.shard raised IndexError on the rank whose slice was empty (rungs 3, 4, 5 and 7); every
    rank now refuses the same way, before any collective."""
    import datasets

    tiny = datasets.Dataset.from_dict({"inputs": [[0.0]], "labels": [0]})
    for rank in (0, 1):
        with pytest.raises(
            UsageError, match="the eval split has 1 rows, fewer than the 2 processes"
        ):
            data.shard(tiny, 2, rank)
    two = datasets.Dataset.from_dict({"inputs": [[0.0], [1.0], [2.0]], "labels": [0, 1, 0]})
    assert [len(data.shard(two, 2, r)) for r in (0, 1)] == [2, 1]
