"""The scheduler lab: what accelerator.prepare() does to an LR scheduler, on N processes.

    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml scripts/labs/accelerate_scheduler.py

prepare(scheduler) returns an AcceleratedScheduler. Unless the Accelerator splits batches (split_batches=True),
each of its step() calls steps the wrapped scheduler num_processes times: it assumes a schedule written for one
process, whose every step saw one process's batch, so N processes taking N batches a step move it N steps. A
schedule written in optimizer steps (warm-up 5 steps, cosine over the run, as every rung's) then runs N times too
fast, and ends early. Accelerate's own examples build it over num_training_steps x num_processes instead.

Rank 0 prints the learning rate of six optimizer steps for three schedulers:
  unprepared       LambdaLR over optimizer steps, stepped once per step: what rung 6 does (and every rung)
  prepared         the same scheduler through prepare(): the unprepared rates, N steps at a time
  prepared_scaled  built over steps x num_processes (the warm-up too), then prepared: the unprepared rates again
tests/test_features.py runs it on 2 processes and checks exactly that.
"""

import json
import sys
from pathlib import Path

import torch
from accelerate import Accelerator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import schedule  # noqa: E402  (the rungs' schedule: warm-up, then cosine)

STEPS, WARMUP = 12, 4


def rates(accelerator, scale, prepare):
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    args = type(
        "Flags",
        (),
        {
            "lr_schedule": "cosine",
            "warmup_steps": WARMUP * scale,
            "max_steps": STEPS * scale,
            "epochs": 1,
        },
    )()
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, schedule.lr_lambda(args, STEPS * scale)
    )
    if prepare:
        # the model needs no DDP here
        optimizer, scheduler = accelerator.prepare(optimizer, scheduler)
    out = []
    for _ in range(6):
        out.append(round(optimizer.param_groups[0]["lr"], 6))
        model(torch.ones(1, 2)).sum().backward()  # noqa: DDL110 (one process, no DDP: nothing to sync)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return out


def main():
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    n = accelerator.num_processes
    results = {
        "unprepared": rates(accelerator, 1, False),
        "prepared": rates(accelerator, 1, True),
        "prepared_scaled": rates(accelerator, n, True),
    }
    if accelerator.is_main_process:
        print(f"world_size: {n}")
        for name, values in results.items():
            print(f"{name}: {json.dumps(values)}")
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
