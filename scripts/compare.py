"""Compare two finished runs: did they end on the same weights and the same eval results?

    python scripts/compare.py out/guide/1 out/guide/3                 # fp32 rungs: within 1e-5
    python scripts/compare.py out/guide/4 out/guide/5 --tolerance 0.05  # bf16 vs fp32

Prints max |w_a - w_b| over every tensor, and both runs' eval accuracy, steps, world size and global batch.
Exit code 0 when the weights agree within --tolerance and the step counts and global batches match, 1 otherwise.
"""
import argparse
import json
import sys
from pathlib import Path

from safetensors.torch import load_file


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="an --output-dir of a finished run")
    p.add_argument("b", help="another one")
    p.add_argument("--tolerance", type=float, default=1e-5, help="max |w_a - w_b| allowed (default 1e-5)")
    args = p.parse_args()
    runs = []
    for out in (args.a, args.b):
        try:
            metrics = json.loads((Path(out) / "metrics.json").read_text())
            runs.append((load_file(Path(out) / "model.safetensors"), metrics))
        except (OSError, ValueError) as e:
            print(f"error: {out} is not a finished run ({e}): run the script with --output-dir {out} first",
                  file=sys.stderr)
            sys.exit(2)
    (wa, ma), (wb, mb) = runs
    if wa.keys() != wb.keys():
        print("error: the two runs trained different models (their weights have different names)", file=sys.stderr)
        sys.exit(2)
    diff = max((wa[k].double() - wb[k].double()).abs().max().item() for k in wa)
    for out, m in ((args.a, ma), (args.b, mb)):
        print(f"{out:<24} {m['rung']:<18} world size {m['world_size']}  global batch {m['global_batch_size']:>3}  "
              f"steps {m['steps']:>4}  eval accuracy {m['eval_accuracy']:.4f}  ({m['eval_samples']} samples)")
    same = diff <= args.tolerance and ma["steps"] == mb["steps"] and ma["global_batch_size"] == mb["global_batch_size"]
    print(f"max |w_a - w_b| = {diff:.3g}: {'the same' if same else 'DIFFERENT'} within {args.tolerance:g}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
