"""Accuracy, as an `evaluate` metric module shipped with ddp-ladder and loaded by path.

`evaluate.load("accuracy")` asks the Hugging Face Hub for this file; shipping it means no run ever needs the
network. Same inputs, outputs and result as the hub's `accuracy`.
"""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = "Accuracy: the fraction of predictions equal to their references, (TP + TN) / N."
_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int): predicted labels.
    references (list of int): ground-truth labels.
    normalize (bool, default True): False returns the number of correct predictions instead of the fraction.
    sample_weight (list of float, optional): per-sample weights.
Returns:
    accuracy (float or int): the fraction (or count) of correct predictions.
Examples:
    >>> accuracy = evaluate.load("scripts/common/metrics_modules/accuracy")
    >>> accuracy.compute(references=[0, 1, 2, 0], predictions=[0, 1, 1, 0])
    {'accuracy': 0.75}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
            ),
        )

    def _compute(self, predictions, references, normalize=True, sample_weight=None):
        correct = np.asarray(predictions) == np.asarray(references)
        weights = (
            np.ones(len(correct))
            if sample_weight is None
            else np.asarray(sample_weight, dtype=np.float64)
        )
        total = float((correct * weights).sum())
        if normalize:
            return {"accuracy": total / float(weights.sum()) if len(correct) else 0.0}
        return {"accuracy": int(total) if sample_weight is None else total}
