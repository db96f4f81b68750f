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
