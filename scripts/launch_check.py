"""Check a launch before it starts, so that a bad one fails in one line instead of a launcher's traceback or a
hang. The Makefile runs it in front of every distributed target; it is also a plain command:

    python scripts/launch_check.py --gpus 2                                   # this machine has >= 2 GPUs
    python scripts/launch_check.py --config accelerate_configs/2gpu_bf16.yaml # the config exists, parses, fits
    python scripts/launch_check.py --port 29500                               # nothing listens on it yet

Exit code 0 and no output when the launch can go ahead; `error: ...` and exit code 2 when it cannot.
"""
import argparse

from common import UsageError, cli

DISTRIBUTED_TYPES = ("NO", "MULTI_GPU", "MULTI_CPU", "FSDP", "DEEPSPEED", "XLA", "MULTI_XPU", "MULTI_NPU")


def gpus():
    import torch

    return torch.cuda.device_count()


def check_gpus(needed, cpu_target, target=None):
    found = gpus()
    if found < needed:
        raise UsageError(f"{target or 'this launch'} needs {needed} GPUs, this machine has {found}: "
                         f"run {cpu_target or 'the CPU twin of this target'} instead")


def check_config(path, cpu_target):
    import yaml

    try:
        with open(path) as f:
            config = yaml.safe_load(f)
    except FileNotFoundError:
        raise UsageError(f"accelerate config {path!r} does not exist: pick one in accelerate_configs/ "
                         f"(cpu_2proc.yaml runs anywhere)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UsageError(f"accelerate config {path!r} is not valid YAML{where}: fix it, or start again from a "
                         f"file in accelerate_configs/") from None
    if not isinstance(config, dict):
        raise UsageError(f"accelerate config {path!r} is not a mapping of keys: start from accelerate_configs/")
    kind = str(config.get("distributed_type", "NO"))
    if kind not in DISTRIBUTED_TYPES:
        raise UsageError(f"accelerate config {path!r}: distributed_type {kind!r} is not one of "
                         f"{', '.join(DISTRIBUTED_TYPES)}")
    if kind == "MULTI_CPU":
        raise UsageError(f"accelerate config {path!r} is MULTI_CPU, which runs ONE process without MPI: use "
                         f"MULTI_GPU with use_cpu: true (accelerate_configs/cpu_2proc.yaml)")
    processes = int(config.get("num_processes", 1)) // max(1, int(config.get("num_machines", 1)))
    if kind != "NO" and not config.get("use_cpu"):
        found = gpus()
        if found < processes:
            raise UsageError(f"accelerate config {path!r} starts {processes} GPU processes on this machine and "
                             f"it has {found} GPU(s): use {cpu_target or 'accelerate_configs/cpu_2proc.yaml'}")


def check_port(port):
    cli.free_port(port, "pass PORT=<a free port> to make, or stop what holds it")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpus", type=int, default=0, help="GPUs this launch needs on this machine")
    p.add_argument("--config", help="an accelerate config file the launch will use")
    p.add_argument("--port", type=int, help="a rendezvous port the launch will listen on")
    p.add_argument("--cpu-target", help="what to run instead on a machine without the GPUs (for the message)")
    p.add_argument("--target", help="what is being launched (for the message)")
    args = p.parse_args()
    try:
        if args.gpus:
            check_gpus(args.gpus, args.cpu_target, args.target)
        if args.config:
            check_config(args.config, args.cpu_target)
        if args.port:
            check_port(args.port)
    except UsageError as e:
        cli.fail(e)


if __name__ == "__main__":
    main()
