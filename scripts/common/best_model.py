"""The best model by eval loss, in <output-dir>/best/ (model.safetensors and eval.json), as pytorch/examples'
imagenet keeps model_best: `improves` decides, `save` writes. Every process can ask `improves` and gets the same
answer (the rung hands in results gathered over every eval sample); which process writes, and who joins an FSDP
gather first, is the rung's to say. A resumed run continues its own lineage's best, and a non-finite eval loss
(a diverged model) is never the best."""

import json
import math
from pathlib import Path

from common import atomic, checkpoint, lineage


class Best:
    def __init__(self, output_dir, run, resumed):
        self.dir, self.lineage, self.loss = Path(output_dir) / "best", run, None
        if (
            self.dir.parent.is_dir()
        ):  # what a killed write left (.tmp-best.*): the dir's lock is this run's
            atomic.remove_stale(self.dir.parent, "best")
        try:
            saved = json.loads((self.dir / "eval.json").read_text())
        except (OSError, ValueError):
            return
        ok = isinstance(saved, dict) and isinstance(saved.get("eval_loss"), (int, float))
        if (
            resumed
            and ok
            and saved.get("run") == self.lineage
            and math.isfinite(saved["eval_loss"])
        ):
            self.loss = saved["eval_loss"]

    def improves(self, results):
        """Whether `results` beat the best so far (its eval loss is then the new bar to beat)."""
        loss = results["eval_loss"]
        if not math.isfinite(loss) or (self.loss is not None and not loss < self.loss):
            return False
        self.loss = loss
        return True

    def save(self, step, results, model):
        """Write `model` (the bare model, or a state dict gathered from FSDP's shards) with its results."""
        state = model if isinstance(model, dict) else checkpoint.gather(model)[0]
        record = {"step": step, "run": self.lineage, "launch": lineage.launch_id(), **results}

        def fill(tmp):
            checkpoint.save_model(tmp / "model.safetensors", state)
            (tmp / "eval.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")

        self.dir.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_dir(self.dir, fill)
