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

from common import cli

ROOT = Path(__file__).resolve().parent.parent




def rungs(global_batch):
    """(name, command) for every rung, each at the same global batch: rungs 1-2 in one process, rungs 3-6 in
    one process per GPU (2 CPU processes over gloo when there is no GPU), each taking its share."""
    py, bin_dir = sys.executable, Path(sys.executable).parent
    gpus = torch.cuda.device_count()
    nproc = gpus or 2
    if global_batch % nproc:
        sys.exit(f"error: --global-batch {global_batch} does not split over {nproc} processes: pick a multiple")
    per = str(global_batch // nproc)
    torchrun = [str(bin_dir / "torchrun"), "--standalone", f"--nproc_per_node={nproc}"]
    config = "cpu_2proc" if not gpus else "1gpu" if gpus == 1 else "2gpu_bf16" if gpus == 2 else "8gpu_bf16"
    accelerate = [str(bin_dir / "accelerate"), "launch", "--config_file", f"accelerate_configs/{config}.yaml",
                  "--num_processes", str(nproc), "--main_process_port", str(cli.free_port())]
    return [
        ("1_single_gpu", [py, "scripts/1_single_gpu.py", "--batch-size", str(global_batch)]),
        ("2_data_parallel", [py, "scripts/2_data_parallel.py", "--batch-size", str(global_batch)]),
        ("3_ddp_spawn", [py, "scripts/3_ddp_spawn.py", "--nproc", str(nproc), "--batch-size", per]),
        ("4_ddp_torchrun", [*torchrun, "scripts/4_ddp_torchrun.py", "--batch-size", per]),
        ("5_ddp_amp (bf16)", [*torchrun, "scripts/5_ddp_amp.py", "--mixed-precision", "bf16", "--batch-size", per]),
        (f"6_accelerate ({config})", [*accelerate, "scripts/6_accelerate.py", "--batch-size", per]),
    ]


def max_abs_diff(a, b):
    if a.keys() != b.keys():
        return float("nan")
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--global-batch", type=int, default=32, help="the same global batch for every rung")
    p.add_argument("--output-dir", default="out/demo")
    p.add_argument("args", nargs=argparse.REMAINDER, help="extra flags passed to every rung (after --)")
    opts = p.parse_args()
    extra = [a for a in opts.args if a != "--"]
    rows, reference, failed = [], None, []
    for name, cmd in rungs(opts.global_batch):
        out = Path(opts.output_dir) / name.split()[0]
        cmd = cmd + ["--output-dir", str(out), *extra]
        print(f"\n=== {name}: {' '.join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd))}", flush=True)
        start = time.perf_counter()
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            failed.append(name)
            continue
        seconds = time.perf_counter() - start
        m = json.loads((ROOT / out / "metrics.json").read_text())
        weights = load_file(ROOT / out / "model.safetensors")
        reference = reference or weights
        dp_gpus = torch.cuda.device_count() if name.startswith("2_") else 1  # DataParallel: 1 process, N GPUs
        devices = f"{m['device'].split(':')[0]} x{max(m['world_size'], dp_gpus)}"
        rows.append((name, devices, m["global_batch_size"], f"{m['train_loss']:.4f}", f"{m['eval_accuracy']:.4f}",
                     f"{seconds:.1f}", f"{max_abs_diff(weights, reference):.2e}"))
    header = ("rung", "devices", "global batch", "train loss", "eval accuracy", "wall s", "max |w - w_rung1|")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("\n" + " | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    print("\nThe default model has BatchNorm: with several processes each normalises over its own share of the\n"
          "batch, so the distributed rungs drift from rung 1 (use --model mlp for a BatchNorm-free model: the\n"
          "fp32 rungs then agree to float noise). bf16 rounds activations: expect a larger difference there.")
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
