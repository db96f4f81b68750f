"""What a run may do to an output dir: the lock (two races, 200 rounds each), which checkpoints are its own to
continue or delete (common/lineage.py), and symlinks planted in the tree. No launches: these call the code a rung
calls, with the flags it would parse."""

import argparse
import multiprocessing
import os
import shutil

import pytest
import torch

from common import checkpoint, lineage, lock
from common.errors import UsageError
from conftest import save_checkpoint


def flags(output_dir, resume="none", overwrite=False):
    return argparse.Namespace(output_dir=str(output_dir), resume=resume, overwrite=overwrite)


def model_and_optimizer():
    model = torch.nn.Linear(3, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def steps(output_dir):
    return [int(p.name[5:]) for p in checkpoint.list_checkpoints(output_dir)]


def _take(path, start, results, done):
    start.wait()
    try:
        lock.lock_output_dir(path)
        results.put(os.getpid())
        done.wait()  # hold the lock until both takers have tried
    except UsageError:
        results.put(None)


def race(path, start_method="fork"):
    """Two processes released at the same instant try to take one output dir's lock: how many got it."""
    ctx = multiprocessing.get_context(start_method)
    start, results, done = ctx.Event(), ctx.Queue(), ctx.Event()
    takers = [ctx.Process(target=_take, args=(path, start, results, done)) for _ in range(2)]
    for p in takers:
        p.start()
    start.set()
    got = [results.get(timeout=30) for _ in takers]
    done.set()
    for p in takers:
        p.join(timeout=30)
    return sum(pid is not None for pid in got)


def _take_each(paths, barrier, results):
    for round_, path in enumerate(
        paths
    ):  # one fresh dir a round, both takers released by the barrier
        barrier.wait()
        try:
            lock.lock_output_dir(path)  # a winner keeps holding it: the OS frees all at exit
            results.put((round_, True))
        except UsageError:
            results.put((round_, False))
        barrier.wait()  # both have tried before the next round


def test_the_lock_cannot_be_taken_twice_fresh_or_stale_200_rounds_each(tmp_path):
    """Issue 26's races: two runs reaching a dir whose lock file a dead run left (the winner of each round
    exits, so the next round's file is stale), or a fresh dir (no lock file yet; two long-lived takers, one new
    dir a round), at the same instant. Each round exactly one wins: the OS's flock, which a dead holder frees."""
    stale = tmp_path / "stale"
    for round_ in range(200):
        assert race(stale) == 1, f"stale lock, round {round_}"
    assert (stale / ".lock").exists()
    ctx = multiprocessing.get_context("fork")
    paths = [tmp_path / f"fresh-{i}" for i in range(200)]
    barrier, results = ctx.Barrier(2), ctx.Queue()
    takers = [ctx.Process(target=_take_each, args=(paths, barrier, results)) for _ in range(2)]
    for p in takers:
        p.start()
    got = [results.get(timeout=60) for _ in range(2 * len(paths))]
    for p in takers:
        p.join(timeout=60)
    wins = [sum(won for r, won in got if r == i) for i in range(len(paths))]
    assert wins == [1] * len(paths), [i for i, w in enumerate(wins) if w != 1]


def test_a_planted_lock_symlink_is_refused_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's data")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".lock").symlink_to(victim)
    with pytest.raises(UsageError, match="is a directory or a symlink"):
        lock.lock_output_dir(tmp_path / "out")
    assert victim.read_text() == "the victim's data"


def test_a_fresh_run_refuses_an_output_dir_with_checkpoints_unless_overwrite(tmp_path, monkeypatch):
    model, opt = model_and_optimizer()
    save_checkpoint(tmp_path, model, opt, 14, 1, 0, lineage="old")
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    with pytest.raises(
        UsageError, match=r"holds checkpoints .*step-00000014.*--resume auto.*--overwrite"
    ):
        lineage.plan(flags(tmp_path), main=True)
    assert steps(tmp_path) == [14]  # refused: nothing deleted
    assert lineage.plan(flags(tmp_path, overwrite=True), main=False) == "none"
    assert steps(tmp_path) == [14]  # only the main process deletes
    assert lineage.plan(flags(tmp_path, overwrite=True), main=True) == "none"
    assert steps(tmp_path) == []


def test_torchrun_restarts_continue_their_own_launch_whatever_the_restart_count(
    tmp_path, monkeypatch
):
    """On a multi-node restart the healthy node restarts its workers with TORCHELASTIC_RESTART_COUNT=0: the
    checkpoints written under this launch's id are continued, not refused and not deleted (not even with
    --overwrite, which was meant for the launch's first start). Another launch's are refused."""
    model, opt = model_and_optimizer()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-41")
    assert lineage.restarted(tmp_path) is False  # the launch's first start, by this agent
    lineage.started(tmp_path)  # what checkpoint.resume does once the plan is made
    save_checkpoint(tmp_path, model, opt, 20, 1, 0, lineage="run")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")
    assert lineage.plan(flags(tmp_path), main=True) == "auto"
    assert lineage.plan(flags(tmp_path, overwrite=True), main=True) == "auto"
    assert steps(tmp_path) == [20]
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-42")
    with pytest.raises(UsageError, match="holds checkpoints"):
        lineage.plan(flags(tmp_path), main=True)
    monkeypatch.setenv(
        "TORCHELASTIC_RUN_ID", "none"
    )  # torchrun's default id: shared by every launch
    save_checkpoint(tmp_path, model, opt, 21, 1, 0, lineage="run")
    with pytest.raises(UsageError, match="holds checkpoints"):
        lineage.plan(flags(tmp_path), main=True)


def test_a_new_torchrun_with_the_same_rdzv_id_is_a_new_run_not_a_restart(tmp_path, monkeypatch):
    """Issue 35: the same torchrun rendezvous id rerun with --overwrite continued the old checkpoints (a launch's
    own were taken for a restart's). A restart is now the same agent (torchrun's process, by pid and start
    time) starting a worker again, which each worker tells from a marker of its own; a new torchrun is a new
    agent: its --overwrite deletes, and without it the run refuses."""
    model, opt = model_and_optimizer()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-9")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")
    monkeypatch.setattr(lineage, "agent", lambda: "4242.100")
    assert lineage.plan(flags(tmp_path), main=True) == "none"  # the first run: nothing there yet
    lineage.started(tmp_path)
    save_checkpoint(tmp_path, model, opt, 14, 1, 0, lineage="run")
    monkeypatch.setattr(
        lineage, "agent", lambda: "5151.900"
    )  # the user runs the same command again
    with pytest.raises(UsageError, match="holds checkpoints of an earlier run"):
        lineage.plan(flags(tmp_path), main=True)
    assert lineage.plan(flags(tmp_path, overwrite=True), main=True) == "none"
    assert steps(tmp_path) == []
    assert (tmp_path / ".launches" / "job-9" / "4242.100-0").exists()
    assert lineage.agent() is not None or not os.path.exists("/proc")


def test_a_rewind_refuses_while_later_checkpoints_exist_and_overwrite_deletes_only_those(tmp_path):
    model, opt = model_and_optimizer()
    for step in (14, 28, 42):
        save_checkpoint(tmp_path, model, opt, step, step // 14, 0, keep=5, lineage="old")
    rewind = str(tmp_path / "checkpoints" / "step-00000014")
    with pytest.raises(UsageError, match=r"rewinds.*step-00000042.*--overwrite"):
        lineage.plan(flags(tmp_path, resume=rewind), main=True)
    assert steps(tmp_path) == [14, 28, 42]
    assert lineage.plan(flags(tmp_path, resume=rewind, overwrite=True), main=True) == rewind
    assert steps(tmp_path) == [14]
    # the rewound run continues the lineage it resumed: its own checkpoints rotate the one it came from
    assert checkpoint.restore(rewind, tmp_path, model, opt, log=lambda *_: None)[3] == "old"
    save_checkpoint(tmp_path, model, opt, 15, 1, 0, keep=1, lineage="old")
    assert steps(tmp_path) == [15]


def test_rotation_counts_and_deletes_only_this_runs_checkpoints(tmp_path):
    """Issue 26: a corrupt far-future step-00099999 was counted as the newest, so --keep 1 deleted every new
    checkpoint as soon as it was written. Rotation now counts only this lineage's checkpoints up to the step just
    written; another lineage's and a corrupt one stay; the one a run resumed from stays until a newer one exists."""
    model, opt = model_and_optimizer()
    save_checkpoint(tmp_path, model, opt, 3, 0, 0, lineage="someone-else")
    corrupt = tmp_path / "checkpoints" / "step-00099999"
    corrupt.mkdir()
    (corrupt / "state.json").write_text("{not json")
    save_checkpoint(tmp_path, model, opt, 5, 0, 0, keep=1, lineage="mine")
    assert steps(tmp_path) == [3, 5, 99999]
    save_checkpoint(tmp_path, model, opt, 6, 0, 0, keep=1, lineage="mine")
    save_checkpoint(tmp_path, model, opt, 7, 0, 0, keep=1, lineage="mine")
    assert steps(tmp_path) == [3, 7, 99999]
    # a far-future checkpoint of this very lineage (a copy, say) is past the live step: never counted
    shutil.copytree(
        tmp_path / "checkpoints" / "step-00000007", tmp_path / "checkpoints" / "step-00000090"
    )
    save_checkpoint(tmp_path, model, opt, 8, 0, 0, keep=1, lineage="mine")
    assert steps(tmp_path) == [3, 8, 90, 99999]
    logs = []  # and --resume auto skips the corrupt one, saying so, and takes the newest valid
    checkpoint.restore("auto", tmp_path, model, opt, log=logs.append)
    assert "skipping" in logs[0] and "step-00099999" in logs[0]
    assert logs[1].startswith(f"resuming from {tmp_path / 'checkpoints' / 'step-00000090'}")


def test_symlinks_in_the_checkpoint_tree_are_refused_never_followed(tmp_path):
    """Issue 26: `<output-dir>/checkpoints` linked to another run's checkpoints let a fresh run delete them,
    and a linked step-99 was continued by --resume auto. Both are now refused before anything is touched."""
    model, opt = model_and_optimizer()
    other = tmp_path / "other"
    save_checkpoint(other, model, opt, 14, 1, 0, lineage="other")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "checkpoints").symlink_to(other / "checkpoints")
    for args in (flags(mine), flags(mine, overwrite=True), flags(mine, resume="auto")):
        with pytest.raises(UsageError, match="is a symlink"):
            lineage.plan(args, main=True)
    with pytest.raises(UsageError, match="is a symlink"):
        save_checkpoint(mine, model, opt, 1, 0, 0)
    (mine / "checkpoints").unlink()
    (mine / "checkpoints").mkdir()
    (mine / "checkpoints" / "step-00000099").symlink_to(other / "checkpoints" / "step-00000014")
    with pytest.raises(UsageError, match="step-00000099' is a symlink"):
        lineage.plan(flags(mine, overwrite=True), main=True)
    with pytest.raises(UsageError, match="is a symlink"):
        checkpoint.restore("auto", mine, model, opt, log=lambda *_: None)
    assert steps(other) == [14]  # the other run's checkpoint was never touched


@pytest.mark.launch
def test_a_rerun_into_a_used_output_dir_refuses_before_training_and_overwrite_starts_afresh(
    tmp_path, data_dir
):
    """Issue 24/26: the same command run twice used to delete the first run's checkpoints (or, with a job ID that
    a reinstalled cluster reused, continue a stranger's run). Now a fresh run refuses in one line, at every
    world size; `runs` as a file is refused before a --report-to run starts."""
    from test_reliability import one_error_line, run

    out = tmp_path / "out"
    run(1, out, data_dir, "--task", "cancer", "--epochs", 1)
    before = steps(out)
    _, stderr = run(1, out, data_dir, "--task", "cancer", "--epochs", 1, expect=2)
    assert "holds checkpoints of an earlier run" in one_error_line(stderr), stderr
    _, stderr = run(4, out, data_dir, "--task", "cancer", "--epochs", 1, expect=1)  # torchrun's 1
    assert "error (rank 0): --output-dir" in stderr, stderr  # and torchrun's own summary
    assert steps(out) == before == [14]
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "runs").write_text("not a directory")
    _, stderr = run(
        1, tmp_path / "tb", data_dir, "--task", "cancer", "--report-to", "tensorboard", expect=2
    )
    assert "runs' is a file, where --report-to tensorboard writes" in one_error_line(stderr)
    stdout, _ = run(
        1, out, data_dir, "--task", "cancer", "--epochs", 1, "--max-steps", 3, "--overwrite"
    )
    assert steps(out) == [3] and "3 steps" in stdout


def test_planted_symlinks_are_never_written_or_deleted_through(tmp_path):
    """Issue 26: another user of a group-writable output dir planted symlinks named like the run's coming
    temporary files, and the run wrote its metrics through them into a victim's file. Every write is now a
    fresh mkstemp/mkdtemp name (O_EXCL) renamed over the final name: a planted link at any name, the final
    one included, is replaced, never followed; the clean-up of a killed save skips links."""
    from common import metrics

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret").write_text("the victim's data")
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    pid = os.getpid()
    names = [".write-test", f".write-test-{pid}", f".metrics.json.tmp-{pid}", "metrics.json"]
    names += [f".model.safetensors.tmp-{pid}", "model.safetensors"]
    for name in names:
        (out / name).symlink_to(victim / "secret")
    (out / "checkpoints" / ".tmp-step-00000001.planted").symlink_to(victim)
    lock.check_writable(out)
    metrics.write_json(out / "metrics.json", {"eval_accuracy": 1.0})
    model, opt = model_and_optimizer()
    checkpoint.save_model(out / "model.safetensors", model)
    save_checkpoint(out, model, opt, 1, 0, 0)
    assert (victim / "secret").read_text() == "the victim's data"
    assert not (out / "metrics.json").is_symlink() and not (out / "model.safetensors").is_symlink()
    assert (out / "checkpoints" / ".tmp-step-00000001.planted").is_symlink() and victim.is_dir()


def test_a_rewind_reads_its_step_from_the_checkpoint_not_from_its_name(tmp_path):
    """Issue 35: a copy of step-28 stored under another name bypassed the rewind guard (the step was read from
    the directory's name) and overwrote the run's step-42 and step-56 without --overwrite."""
    model, opt = model_and_optimizer()
    for step in (28, 42, 56):
        save_checkpoint(tmp_path / "run", model, opt, step, step // 14, 0, keep=5, lineage="a")
    copy = tmp_path / "my-favourite"
    shutil.copytree(tmp_path / "run" / "checkpoints" / "step-00000028", copy)
    with pytest.raises(UsageError, match=r"rewinds to step 28.*step-00000056.*--overwrite"):
        lineage.plan(flags(tmp_path / "run", resume=str(copy)), main=True)
    assert steps(tmp_path / "run") == [28, 42, 56]


def test_resume_auto_continues_the_dirs_own_run_and_refuses_a_copied_in_checkpoint(tmp_path):
    """Issue 35: another run's checkpoint copied into checkpoints/ was continued by --resume auto without a
    word (and its evaluations then replaced best/). The dir names its run (run.json); auto refuses the
    stranger in one line, and a checkpoint of the dir's own run is continued as before."""
    model, opt = model_and_optimizer()
    save_checkpoint(tmp_path / "mine", model, opt, 14, 1, 0, lineage="mine")
    lineage.claim(tmp_path / "mine", "mine")
    assert lineage.plan(flags(tmp_path / "mine", resume="auto"), main=True) == "auto"
    save_checkpoint(tmp_path / "other", model, opt, 70, 5, 0, lineage="other")
    shutil.copytree(
        tmp_path / "other" / "checkpoints" / "step-00000070",
        tmp_path / "mine" / "checkpoints" / "step-00000070",
    )
    with pytest.raises(UsageError, match=r"step-00000070' belongs to another run \(run other\)"):
        lineage.plan(flags(tmp_path / "mine", resume="auto"), main=True)
    assert steps(tmp_path / "mine") == [14, 70]  # refused: nothing deleted


def best_dir(output_dir, run, step=6, loss=0.5, launch=None):
    best = output_dir / "best"
    best.mkdir(parents=True)
    record = {"run": run, "step": step, "eval_loss": loss, "launch": launch}
    (best / "eval.json").write_text(__import__("json").dumps(record))
    return best


def test_a_best_model_is_a_runs_own_a_fresh_run_refuses_it_and_overwrite_deletes_it(
    tmp_path, monkeypatch
):
    """Issue 35: a fresh run into a dir holding only a finished run's best/ replaced it, and --overwrite kept
    the deleted run's best/ (and so its bar to beat). A rewind past the best model's step must delete it too."""
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    best = best_dir(tmp_path, "old")
    with pytest.raises(UsageError, match=r"holds a best model \(best/\) of an earlier run"):
        lineage.plan(flags(tmp_path), main=True)
    assert best.is_dir()
    assert lineage.plan(flags(tmp_path, overwrite=True), main=True) == "none"
    assert not best.exists()
    # the same torchrun launch's earlier try wrote it before any checkpoint: a restart starts over
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job-7")
    lineage.started(tmp_path)  # the launch's first try, by this agent
    best = best_dir(tmp_path, "try-1", launch="job-7")
    assert lineage.plan(flags(tmp_path), main=True) == "none" and not best.exists()
    # a rewind to step 14 while best/ holds step 42's model: that model was never beaten by the rewound run
    model, opt = model_and_optimizer()
    save_checkpoint(tmp_path / "r", model, opt, 14, 1, 0, lineage="a")
    best = best_dir(tmp_path / "r", "a", step=42)
    rewind = str(tmp_path / "r" / "checkpoints" / "step-00000014")
    with pytest.raises(UsageError, match="rewinds to step 14, but --output-dir holds best"):
        lineage.plan(flags(tmp_path / "r", resume=rewind), main=True)
    assert lineage.plan(flags(tmp_path / "r", resume=rewind, overwrite=True), main=True) == rewind
    assert not best.exists() and steps(tmp_path / "r") == [14]


def test_a_killed_best_write_leaves_nothing_behind_after_the_next_start(tmp_path):
    """Issue 35: kill -9 during the best/ write left a model-sized .tmp-best.* that nothing removed."""
    from common import best_model

    (tmp_path / ".tmp-best.abc123").mkdir()
    (tmp_path / ".tmp-best.abc123" / "model.safetensors").write_bytes(b"x" * 1000)
    (tmp_path / ".tmp-old-best.def456").mkdir()
    (tmp_path / ".tmp-keep-me").mkdir()  # not best/'s: left alone
    best_model.Best(tmp_path, "run", resumed=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-keep-me"]


def test_a_resume_on_other_data_refuses(tmp_path):
    """Issue 35: --dataset edited between a run and its resume (320 -> 200 rows) continued on the other data.
    Every checkpoint records the prepared data's sha256; a resume with another refuses, and never falls back
    to an older checkpoint of the same data."""
    model, opt = model_and_optimizer()
    args = argparse.Namespace(output_dir=str(tmp_path), keep=3, lineage="a", data_sha256="1" * 64)
    checkpoint.save(args, model, opt, None, 14, 1, 0)
    state = __import__("json").loads(
        (tmp_path / "checkpoints" / "step-00000014" / "state.json").read_text()
    )
    assert state["data"] == "1" * 64
    quiet = dict(log=lambda *_: None)
    assert checkpoint.restore("auto", tmp_path, model, opt, data="1" * 64, **quiet)[1] == 14
    with pytest.raises(
        UsageError, match="was trained on other data .*111111111111, now 222222222222"
    ):
        checkpoint.restore("auto", tmp_path, model, opt, data="2" * 64, **quiet)
