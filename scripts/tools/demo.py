"""`make demo`: run every rung on the default task with the hardware that is here, then print one table.

Every rung gets the same seed and the same global batch, so the last column, the largest difference between
its final weights and rung 1's, shows what each step up the ladder did to the math (0 or float noise for fp32).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

from ladder import ROOT, command, default_config, environment, max_abs_diff


def precision(config):
    """A saved accelerate config's mixed_precision ("no", "bf16" or "fp16"). 1gpu.yaml is bf16: on one GPU, rung 6
    is not an fp32 rung (its 7.2e-3 from rung 1, measured on an H200, once read as an fp32 parity failure)."""
    import yaml

    text = (ROOT / "accelerate_configs" / f"{config}.yaml").read_text()
    return str(yaml.safe_load(text).get("mixed_precision") or "no")


def rungs(global_batch):
    """(name, command) for every rung, each at the same global batch: rungs 1-2 in one process, rungs 3-6 in
    one process per GPU (2 CPU processes over gloo when there is no GPU), each taking its share."""
    nproc = torch.cuda.device_count() or 2
    if global_batch % nproc:
        sys.exit(
            f"error: --global-batch {global_batch} does not split over {nproc} processes: pick a multiple"
        )
    per = ["--batch-size", str(global_batch // nproc)]
    config = default_config()
    mixed = precision(config)
    six = config if mixed == "no" or mixed in config else f"{config}, {mixed}"
    return [
        ("1_single_gpu", [*command(1), "--batch-size", str(global_batch)]),
        ("2_data_parallel", [*command(2), "--batch-size", str(global_batch)]),
        ("3_ddp_spawn", [*command(3, nproc), *per]),
        ("4_ddp_torchrun", [*command(4, nproc), *per]),
        ("5_ddp_amp (bf16)", [*command(5, nproc), "--mixed-precision", "bf16", *per]),
        (f"6_accelerate ({six})", [*command(6, nproc), *per]),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--global-batch", type=int, default=32, help="the same global batch for every rung"
    )
    p.add_argument("--output-dir", default="out/demo")
    p.add_argument(
        "args", nargs=argparse.REMAINDER, help="extra flags passed to every rung (after --)"
    )
    opts = p.parse_args()
    extra = [a for a in opts.args if a != "--"]
    rows, reference, failed = [], None, []
    for name, cmd in rungs(opts.global_batch):
        out = Path(opts.output_dir) / name.split()[0]
        # --overwrite: a second `make demo` starts each rung afresh instead of refusing the old checkpoints
        cmd = cmd + ["--output-dir", str(out), "--overwrite", *extra]
        shown = [
            Path(c).name if i == 0 else os.path.relpath(c, ROOT) if c.startswith(str(ROOT)) else c
            for i, c in enumerate(cmd)
        ]
        print(f"\n=== {name}: {' '.join(shown)}", flush=True)
        start = time.perf_counter()
        if subprocess.run(cmd, cwd=ROOT, env=environment()).returncode != 0:
            failed.append(name)
            continue
        seconds = time.perf_counter() - start
        m = json.loads((ROOT / out / "metrics.json").read_text())
        weights = load_file(ROOT / out / "model.safetensors")
        reference = reference or weights
        # DataParallel: 1 process, N GPUs
        dp_gpus = torch.cuda.device_count() if name.startswith("2_") else 1
        devices = f"{m['device'].split(':')[0]} x{max(m.get('world_size', 1), dp_gpus)}"
        rows.append(
            (
                name,
                devices,
                m["global_batch_size"],
                f"{m['train_loss']:.4f}",
                f"{m['eval_accuracy']:.4f}",
                f"{seconds:.1f}",
                f"{max_abs_diff(weights, reference):.2e}",
            )
        )
    fp32 = [r for r in rows if "bf16" not in r[0] and "fp16" not in r[0]]
    worst = max((float(r[-1]) for r in fp32), default=0.0)
    header = (
        "rung",
        "devices",
        "global batch",
        "train loss",
        "eval accuracy",
        "wall s",
        "max |w - w_rung1|",
    )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("\n" + " | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    print(
        "\nSame seed, same global batch: every fp32 rung ends on rung 1's weights (float noise, <= 1e-5). bf16\n"
        "rounds activations: expect a larger difference there. With --model cnn-bn (BatchNorm) the distributed\n"
        "rungs drift instead: each process normalises over its own share of the batch (guides/dp-vs-ddp.md)."
    )
    print(
        f"\nfp32 parity: the largest max |w - w_rung1| over the fp32 rungs is {worst:.2e}: "
        f"{'within' if worst <= 1e-5 else 'OVER'} 1e-5"
    )
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
