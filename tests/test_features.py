"""What a user of a training template expects (issue 16): an LR schedule that resumes exactly, per-step
TensorBoard tracking, the fp16 scaler across resume, accelerate's scheduler trap, and torchrun's failure summary.
Gradient accumulation's parity (2 processes x 8 x 2 micro-batches = rung 1's 32, under torchrun and accelerate) is
in test_distributed.py's parity test; make bench measures no_sync against an all-reduce per micro-batch."""

import json
import math
import re

import pytest
import torch
from test_reliability import EXACT, TASK, run, weights

from common import checkpoint, schedule
from conftest import SCRIPTS, accelerate, max_abs_diff, run_script, save_checkpoint


@pytest.mark.launch
def test_cosine_schedule_resumes_exactly_after_sigkill_and_tensorboard_logs_every_step(
    tmp_path, data_dir
):
    """A cosine schedule with warm-up, SIGKILLed after its first checkpoint and resumed with --resume auto, ends on
    the uninterrupted run's weights: the scheduler's step is in the checkpoint (JSON) and the rate is recomputed
    from it. The uninterrupted run also writes TensorBoard events: loss, lr (the schedule's, step by step), grad
    norm and samples/s."""
    flags = [*TASK, "--lr-schedule", "cosine", "--warmup-steps", 5, "--lr", 0.1, "--seed", 5]
    run(1, tmp_path / "whole", data_dir, *flags, "--report-to", "tensorboard")
    killed = tmp_path / "killed"
    run(1, killed, data_dir, *flags, fault="kill@20:0", marker=tmp_path / "marker", expect=-9)
    state = json.loads((killed / "checkpoints" / "step-00000014" / "state.json").read_text())
    assert state["scheduler"]["last_epoch"] == 14 and state["scheduler"]["base_lrs"] == [0.1]
    stdout, _ = run(1, killed, data_dir, *flags, "--resume", "auto")
    assert "resuming from" in stdout and "step 14)" in stdout
    diff = max_abs_diff(weights(killed), weights(tmp_path / "whole"))
    print(
        f"\ncosine, killed at step 20 and resumed from step 14: max |w - w_uninterrupted| = {diff:.2e}"
    )
    assert diff <= EXACT

    acc = tensorboard_events(tmp_path / "whole")  # one run directory, one events file
    assert {"train/loss", "train/lr", "train/grad_norm", "train/samples_per_second"} <= set(
        acc.Tags()["scalars"]
    )
    lrs = {e.step: e.value for e in acc.Scalars("train/lr")}
    assert sorted(lrs) == list(range(1, 29))  # every optimizer step, numbered from 1
    factor = schedule.lr_lambda(
        type(
            "A", (), {"lr_schedule": "cosine", "warmup_steps": 5, "max_steps": 10**9, "epochs": 2}
        )(),
        14,
    )
    # after step N, the rate step N + 1 trains with: factor(N), warm-up from 0, then cosine to 0
    for step, lr in lrs.items():
        assert math.isclose(lr, 0.1 * factor(step), rel_tol=1e-6, abs_tol=1e-9), (step, lr)
    assert lrs[5] == pytest.approx(0.1) and lrs[28] < 0.001
    losses = [e.value for e in acc.Scalars("train/loss")]
    assert len(losses) == 28 and all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]
    assert all(e.value > 0 for e in acc.Scalars("train/grad_norm"))


def test_default_run_writes_no_events_and_the_scheduler_restores_a_changed_lr(tmp_path):
    """--report-to none (the default) writes nothing; a resume with another --lr keeps the schedule's step and
    applies the new peak from the next step, saying so (the checkpoint's rate is not silently kept)."""
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    args = type(
        "A", (), {"lr_schedule": "cosine", "warmup_steps": 2, "max_steps": 10, "epochs": 1}
    )()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule.lr_lambda(args, 10))
    for _ in range(4):
        model(torch.ones(1, 3)).sum().backward()
        opt.step()
        sched.step()
    save_checkpoint(tmp_path, model, opt, 4, 0, 4, scheduler=sched)
    fresh = torch.nn.Linear(3, 2)
    fresh_opt = torch.optim.SGD(fresh.parameters(), lr=0.2, momentum=0.9)  # the resumed run's --lr
    fresh_sched = torch.optim.lr_scheduler.LambdaLR(fresh_opt, schedule.lr_lambda(args, 10))
    logs = []
    checkpoint.restore("auto", tmp_path, fresh, fresh_opt, scheduler=fresh_sched, log=logs.append)
    assert fresh_sched.last_epoch == 4 and "lr 0.2 (the checkpoint had 0.1)" in logs[0]
    assert fresh_opt.param_groups[0]["lr"] == pytest.approx(0.2 * schedule.lr_lambda(args, 10)(4))
    assert not list(tmp_path.rglob("events.out.tfevents.*"))


def test_fp16_scaler_state_survives_a_resume(tmp_path):
    """The GradScaler's state (rung 5's, and rung 6's accelerator.scaler) is in every checkpoint and restored on
    resume, so a resumed fp16 run keeps its loss scale instead of restarting from 65536. CPU tensors here: accelerate
    makes no scaler on a CPU (it turns fp16 off there), so rung 6's end-to-end fp16 run needs a GPU."""
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    scaler.scale(torch.ones(()))  # the scale exists from the first scaled loss on
    scaler.update(new_scale=1024.0)
    scaler._growth_tracker = torch.full((), 7, dtype=torch.int32)
    save_checkpoint(tmp_path, model, opt, 1, 0, 1, scaler=scaler)
    restored = torch.amp.GradScaler("cpu")
    checkpoint.restore("auto", tmp_path, model, opt, scaler=restored, log=lambda *_: None)
    assert restored.get_scale() == 1024.0 and restored._get_growth_tracker() == 7
    rung6 = (SCRIPTS / "6_accelerate.py").read_text()
    # the scaler that prepare() made, into resume and save:
    assert "scaler = accelerator.scaler" in rung6
    assert re.search(r"checkpoint\.resume\([^)]*scaler", rung6) and re.search(
        r"checkpoint\.save\([^)]*scaler\s*\)", rung6
    )


@pytest.mark.launch
def test_accelerate_prepared_scheduler_steps_once_per_process(tmp_path):
    """What AcceleratedScheduler does, shown by scripts/labs/accelerate_scheduler.py on 2 processes: a scheduler
    passed through prepare() steps num_processes times per optimizer step (so a schedule built over optimizer steps
    runs twice as fast), unless it was built over steps x num_processes. Rung 6 keeps its scheduler out of
    prepare() and steps it once: the same rates as every other rung."""
    proc = run_script("labs/accelerate_scheduler.py", launcher=accelerate())
    rows = dict(re.findall(r"^(\w+): (.+)$", proc.stdout, re.M))
    plain, prepared, scaled = (
        json.loads(rows[k]) for k in ("unprepared", "prepared", "prepared_scaled")
    )
    assert rows["world_size"] == "2"
    assert plain == scaled != prepared
    # prepared: the unprepared schedule, two steps at a time
    assert prepared[:3] == plain[0:6:2][:3]


@pytest.mark.launch
def test_torchrun_summary_shows_the_workers_error(tmp_path, data_dir):
    """@record on main: a worker that raises puts its exception and traceback in torchrun's failure summary
    (instead of error_file: <N/A>); bad input there is the worker's one error line, not a traceback."""
    _, stderr = run(
        4,
        tmp_path / "out",
        data_dir,
        "--task",
        "cancer",
        "--max-steps",
        3,
        fault="raise@2:1",
        marker=tmp_path / "marker",
        expect=1,
    )
    summary = stderr[
        stderr.index("Failures:") if "Failures:" in stderr else stderr.index("Root Cause") :
    ]
    assert (
        "RuntimeError: injected fault at step 2" in summary
        and "<N/A>" not in summary.split("Root Cause")[1]
    )
    assert 'File "' in summary  # the worker's traceback, a real crash's


def tensorboard_events(out):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = (
        out / "runs"
    ).iterdir()  # one directory per run (its lineage), never mixed with another's
    (events,) = run.glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    return acc


@pytest.mark.launch
def test_tensorboard_and_the_evaluations_agree_at_every_world_size(tmp_path, data_dir):
    """Issue 26: at 2 processes --report-to tensorboard logged rank 0's share of each step's loss (up to 0.11
    from rung 1's); the tracker all-reduces it. Issue 25: evaluation each epoch, in metrics.json's history and
    TensorBoard (read back with tensorboard's own EventAccumulator), with the run's hparams and the best model.
    Rung 3 at 2 processes x 8 x 2 micro-batches against rung 1 at 32 = 16 x 2: the same per-step losses, the
    same sharded evaluations as one process's, the same best checkpoint."""
    flags = [*TASK, "--gradient-accumulation-steps", 2, "--report-to", "tensorboard"]
    run(1, tmp_path / "1", data_dir, *flags, "--batch-size", 16)
    run(3, tmp_path / "3", data_dir, *flags, "--batch-size", 8)
    plain, ddp = tensorboard_events(tmp_path / "1"), tensorboard_events(tmp_path / "3")
    losses = [{e.step: e.value for e in acc.Scalars("train/loss")} for acc in (plain, ddp)]
    assert sorted(losses[0]) == sorted(losses[1]) == list(range(1, 29))
    worst = max(abs(losses[0][s] - losses[1][s]) for s in losses[0])
    print(f"\nper-step TensorBoard loss, rung 3 at 2 processes vs rung 1: max diff {worst:.2e}")
    assert worst <= 1e-5
    for acc in (plain, ddp):
        assert [e.step for e in acc.Scalars("eval/loss")] == [14, 28]
        assert {"eval/accuracy", "hparam/best_eval_loss"} <= set(acc.Tags()["scalars"])
    history = [json.loads((tmp_path / r / "metrics.json").read_text())["history"] for r in "13"]
    assert [h["step"] for h in history[0]] == [h["step"] for h in history[1]] == [14, 28]
    for a, b in zip(*history):
        assert (
            abs(a["eval_loss"] - b["eval_loss"]) <= 1e-6
            and a["eval_accuracy"] == b["eval_accuracy"]
        )
    best = [json.loads((tmp_path / r / "best" / "eval.json").read_text()) for r in "13"]
    assert best[0]["step"] == best[1]["step"] and best[0]["eval_loss"] == pytest.approx(
        best[1]["eval_loss"], abs=1e-6
    )
    assert max_abs_diff(*(weights(tmp_path / r / "best") for r in "13")) <= 1e-5


@pytest.mark.launch
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")
def test_rung6_refuses_an_accumulation_the_environment_changes_and_records_a_gpu_config_on_a_cpu(
    tmp_path, data_dir
):
    """Issue 25: with ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4 exported, rung 6 trained with 4 (eval accuracy
    0.64 against 0.90) while metrics.json said 1: now one line. (`accelerate launch --gradient_accumulation_steps`
    reaches DeepSpeed only: a DDP launch never sees it, so guides/step-5-6.md warns instead.) A GPU config on a
    machine without GPUs (1gpu.yaml, which accelerate tells the script about) trains on the CPU with a one-line
    warning, recorded in metrics.json; a warning, not a refusal, since Slurm's CPU nodes run the multi-machine
    GPU config on purpose."""
    flags = ["--data-dir", data_dir, "--task", "cancer", "--epochs", 1]
    proc = run_script(
        "6_accelerate.py",
        *flags,
        "--output-dir",
        tmp_path / "env",
        launcher=accelerate(),
        env={"ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "4"},
        check=False,
    )
    assert proc.returncode != 0 and "ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4" in proc.stderr
    assert "would override --gradient-accumulation-steps 1" in proc.stderr
    assert not (tmp_path / "env" / "checkpoints").exists()
    proc = run_script(
        "6_accelerate.py",
        *flags,
        "--output-dir",
        tmp_path / "gpu",
        launcher=accelerate(config="1gpu", nproc=1),
    )
    assert "warning: the accelerate config asks for GPUs and this machine has none" in proc.stdout
    recorded = json.loads((tmp_path / "gpu" / "metrics.json").read_text())
    assert recorded["device"] == "cpu" and recorded["mixed_precision"] == "bf16"
    assert recorded["launch_notes"] == [
        "the accelerate config asks for GPUs and this machine has none: trained on the CPU"
    ]
