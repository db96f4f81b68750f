"""Evaluation metrics through Hugging Face `evaluate`, offline, plus the run's metrics.json.

The metric modules ship in `metrics_modules/<name>/` and are loaded by path, so nothing asks the Hub (which is
what `evaluate.load("accuracy")` does, and what fails on a machine without internet).
"""
import json
import os
from pathlib import Path

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")  # evaluate ignores HF_HUB_OFFLINE; this keeps it off the network

MODULES = Path(__file__).resolve().parent / "metrics_modules"
_loaded = {}


def load(name="accuracy"):
    """The shipped `evaluate` module `name`, loaded once per process."""
    if name not in _loaded:
        import evaluate

        _loaded[name] = evaluate.load(str(MODULES / name), keep_in_memory=True)  # no cache files to share
    return _loaded[name]


def classification(predictions, references, losses):
    """Accuracy (through `evaluate`) and mean loss over ALL eval samples. The rung hands in every sample exactly
    once: a duplicated or dropped sample would move both numbers."""
    result = load("accuracy").compute(predictions=predictions.tolist(), references=references.tolist())
    return {"eval_accuracy": float(result["accuracy"]), "eval_loss": float(losses.double().mean()),
            "eval_samples": len(references)}


def write_json(path, values):
    """Write `values` as JSON atomically: readers see the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
