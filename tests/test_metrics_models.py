import json
import subprocess
import sys

import pytest
import torch

from common import UsageError, flags, metrics, models
from common.data import Info
from conftest import ROOT


def test_accuracy_from_the_shipped_module():
    acc = metrics.load("accuracy")
    assert acc.compute(predictions=[0, 1, 1, 0], references=[0, 1, 2, 0]) == {"accuracy": 0.75}
    assert acc.compute(predictions=[0, 1, 1, 0], references=[0, 1, 2, 0], normalize=False) == {
        "accuracy": 3
    }
    r = metrics.classification(
        torch.tensor([1, 1, 0]), torch.tensor([1, 0, 0]), torch.tensor([0.5, 1.0, 1.5])
    )
    assert r == {"eval_accuracy": 2 / 3, "eval_loss": 1.0, "eval_samples": 3}


@pytest.mark.launch
def test_metric_loads_offline_and_combines(tmp_path):
    """In a fresh process with every HF offline switch on and no network: the shipped module still loads."""
    code = (
        "import sys; sys.path.insert(0, 'scripts'); import evaluate; from common import metrics;"
        "m = evaluate.combine([str(metrics.MODULES / 'accuracy')]);"
        "print(m.compute(predictions=[1, 0], references=[1, 1]))"
    )
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_EVALUATE_OFFLINE": "1",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "{'accuracy': 0.5}" in out.stdout


def test_write_json_is_atomic_and_valid(tmp_path):
    metrics.write_json(tmp_path / "m.json", {"a": 1})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_models_shapes_and_no_dropout():
    cnn = models.build(Info("d", "image", (1, 8, 8), 10))
    mlp = models.build(Info("c", "tabular", (30,), 2))
    flat = models.build(Info("d", "image", (3, 16, 16), 4), "mlp")
    assert cnn(torch.zeros(2, 1, 8, 8)).shape == (2, 10)
    assert mlp(torch.zeros(2, 30)).shape == (2, 2)
    assert flat(torch.zeros(2, 3, 16, 16)).shape == (2, 4)
    for m in (cnn, mlp, flat):
        assert not any(isinstance(x, torch.nn.Dropout) for x in m.modules())
    # the default: split-invariant
    assert any(isinstance(x, torch.nn.GroupNorm) for x in cnn.modules())
    assert not any(
        isinstance(x, (torch.nn.BatchNorm2d, torch.nn.ReLU))
        for m in (cnn, mlp)
        for x in m.modules()
    )
    bn = models.build(Info("d", "image", (1, 8, 8), 10), "cnn-bn")
    assert any(isinstance(x, torch.nn.BatchNorm2d) for x in bn.modules())
    with pytest.raises(UsageError, match="--model mlp has none"):
        flags.parse(argv=["--sync-bn", "--model", "mlp"], uses=("sync_bn",))
    assert not any(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in mlp.modules())


def recorded_run(tmp_path, capsys, eval_every=0, log_every=0, resumed_from=None, show=True):
    """Two epochs of six one-sample steps through the Meter, the Log and the Best model as a rung drives them,
    with a stub evaluate() whose eval loss falls to step 8, then rises: (the steps evaluated, the log lines,
    the meter, the best)."""
    import argparse

    from common import best_model, progress

    parsed = vars(flags.parse(argv=["--epochs", "2", "--output-dir", str(tmp_path)], uses=()))
    args = argparse.Namespace(
        **{**parsed, "eval_every": eval_every, "log_every": log_every, "lineage": "run-a"}
    )
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = resumed_from or 0
    meter = progress.Meter(args, Info("t", "tabular", (2,), 2), 1, start, start % 6)
    log = progress.Log(args, meter, model, show=show)
    best = best_model.Best(args.output_dir, args.lineage, start > 0)
    evaluated = []

    def evaluate():
        evaluated.append(meter.step)
        return {"eval_loss": abs(meter.step - 8) + 0.5, "eval_accuracy": 0.5}

    step = start
    for epoch in range(start // 6, 2):
        loss_sum = torch.zeros(())
        for _ in log.bar(range(6 - (step % 6 if epoch == start // 6 else 0)), epoch):
            step += 1
            loss_sum += 1.0
            if log.due(step):
                log.step(step, loss_sum, optimizer)
            if meter.eval_due(step):
                results = log.evaluated(step, evaluate())
                if best.improves(results) and show:
                    best.save(step, results, model)
        meter.end_epoch(step, loss_sum)
    return evaluated, capsys.readouterr().out.splitlines(), meter, best


def test_evaluation_each_epoch_or_every_n_steps_keeps_the_best_model(tmp_path, capsys):
    """Issue 25: evaluation ran once, at the end. Now each epoch's last step by default, or every --eval-every
    steps; each one lands in metrics.json's history, and the best by eval loss in <output-dir>/best (model and
    eval.json), which a resumed run of the same lineage keeps competing against."""
    evaluated, _, meter, _ = recorded_run(tmp_path / "epochs", capsys)
    assert evaluated == [6, 12]
    assert [h["step"] for h in meter.history] == [6, 12] and "eval_loss" in meter.history[0]
    best = json.loads((tmp_path / "epochs" / "best" / "eval.json").read_text())
    assert best["step"] == 6 and best["eval_loss"] == 2.5 and best["run"] == "run-a"
    assert (tmp_path / "epochs" / "best" / "model.safetensors").exists()

    evaluated, _, meter, _ = recorded_run(tmp_path / "every", capsys, eval_every=4)
    assert evaluated == [4, 8, 12]
    assert [h["step"] for h in meter.history] == [4, 6, 8, 12]  # epoch 1's eval, then the epoch's
    assert json.loads((tmp_path / "every" / "best" / "eval.json").read_text())["step"] == 8
    # a resume at step 9 of the same lineage: step 12's 4.5 is no better than the kept best (0.5, step 8)
    evaluated, _, meter, best = recorded_run(
        tmp_path / "every", capsys, eval_every=4, resumed_from=9
    )
    assert evaluated == [12] and best.loss == 0.5
    assert json.loads((tmp_path / "every" / "best" / "eval.json").read_text())["step"] == 8


def test_the_last_step_is_always_evaluated_and_offered_to_best(tmp_path, capsys):
    """Issue 35: --eval-every that does not divide the run never offered the final steps to best/, and one past
    the end left no best/ at all. The run's last step is evaluated whatever --eval-every says."""
    evaluated, _, meter, _ = recorded_run(tmp_path / "five", capsys, eval_every=5)
    assert evaluated == [5, 10, 12] and [h["step"] for h in meter.history][-1] == 12
    evaluated, _, _, best = recorded_run(tmp_path / "past", capsys, eval_every=50)
    assert evaluated == [12] and best.loss == 4.5
    assert json.loads((tmp_path / "past" / "best" / "eval.json").read_text())["step"] == 12


def test_a_non_finite_evaluation_is_never_the_best():
    """Issue 35: a NaN first evaluation became best/, and nothing beats NaN afterwards."""
    from common import best_model

    best = best_model.Best("/nonexistent-dir", "run-a", resumed=False)
    assert not best.improves({"eval_loss": float("nan")}) and best.loss is None
    assert not best.improves({"eval_loss": float("inf")})
    assert best.improves({"eval_loss": 3.0}) and not best.improves({"eval_loss": float("nan")})
    assert best.improves({"eval_loss": 2.0}) and best.loss == 2.0


def test_the_processes_that_do_not_show_print_and_write_nothing_but_decide_alike(tmp_path, capsys):
    """Issue 32: rank 1 (show=False) runs the same Meter, Log and Best calls as rank 0, and so reaches the
    same collectives at the same steps (log.due and eval_due depend on the step alone); it prints no line and
    writes no file."""
    args = dict(eval_every=4, log_every=4)
    shown, lines, _, _ = recorded_run(tmp_path / "rank0", capsys, **args)
    quiet, quiet_lines, _, _ = recorded_run(tmp_path / "rank1", capsys, **args, show=False)
    assert shown == quiet == [4, 8, 12] and quiet_lines == []
    assert not (tmp_path / "rank1" / "best").exists() and (tmp_path / "rank0" / "best").exists()


def test_a_log_that_is_not_a_terminal_gets_a_line_every_n_steps(tmp_path, capsys):
    """Issue 25: a batch job's log showed nothing for an epoch's length (tqdm draws only on a terminal)."""
    _, lines, _, _ = recorded_run(tmp_path, capsys, log_every=4)
    steps = [line for line in lines if line.startswith("step ")]
    assert [line.split("/")[0] for line in steps] == ["step      4", "step      8", "step     12"]
    assert all(
        " | epoch " in s and " | loss 1.0000 | lr 0.1 | " in s and " left" in s for s in steps
    )


def test_metrics_record_the_precision_that_ran(monkeypatch):
    """Issue 25: accelerate on a CPU turns fp16 off (no autocast, no scaler), yet metrics.json said fp16."""
    import argparse

    from common.progress import precision_that_ran

    args = argparse.Namespace(mixed_precision="no")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "fp16")
    assert precision_that_ran(args).startswith("no (fp16 asked")
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    assert precision_that_ran(args) == "bf16"
    monkeypatch.delenv("ACCELERATE_MIXED_PRECISION")
    assert (
        precision_that_ran(argparse.Namespace(mixed_precision="fp16")) == "fp16"
    )  # rung 5: autocast ran
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "fp16")
    assert precision_that_ran(args) == "fp16"
