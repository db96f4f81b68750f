"""Check a launch before it starts, so that a bad one fails in one line instead of a launcher's traceback or a
hang. The Makefile runs it in front of every distributed target; it is also a plain command:

    python scripts/tools/launch_check.py --gpus 2                                   # this machine has >= 2 GPUs
    python scripts/tools/launch_check.py --config accelerate_configs/2gpu_bf16.yaml # the config exists, parses, fits
    python scripts/tools/launch_check.py --port 29500                               # nothing listens on it yet

Exit code 0 and no output when the launch can go ahead; `error: ...` and exit code 2 when it cannot.
"""

import argparse

import ladder  # noqa: F401  (puts scripts/ on the path, for common)
from common import UsageError, errors, process

# messages
DISTRIBUTED_TYPES = (
    "NO",
    "MULTI_GPU",
    "MULTI_CPU",
    "FSDP",
    "DEEPSPEED",
    "XLA",
    "MULTI_XPU",
    "MULTI_NPU",
)


def gpus():
    import torch

    return torch.cuda.device_count()


def check_gpus(needed, cpu_target, target=None):
    found = gpus()
    if found < needed:
        raise UsageError(
            f"{target or 'this launch'} needs {needed} GPUs, this machine has {found}: "
            f"run {cpu_target or 'the CPU twin of this target'} instead"
        )


def load_config(path):
    """The config as `accelerate launch --config_file` reads it (accelerate's own loader, which also refuses
    unknown keys and unknown values), with every failure turned into one line naming the fix."""
    import yaml
    from accelerate.commands.config.config_args import load_config_from_file

    try:
        return load_config_from_file(str(path))
    except FileNotFoundError:
        raise UsageError(
            f"accelerate config {path!r} does not exist: pick one in accelerate_configs/ "
            f"(cpu_2proc.yaml runs anywhere)"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UsageError(
            f"accelerate config {path!r} is not valid YAML{where}: fix it, or start again from a "
            f"file in accelerate_configs/"
        ) from None
    except AttributeError:  # a YAML list or scalar: accelerate calls .get on it
        raise UsageError(
            f"accelerate config {path!r} is not a mapping of keys: start from accelerate_configs/"
        ) from None
    except ValueError as e:  # an unknown distributed_type, mixed_precision, ... or a misspelt key
        detail = (
            str(e)
            .split(", please try")[0]
            .replace(
                "is not a valid DistributedType", f"is not one of {', '.join(DISTRIBUTED_TYPES)}"
            )
        )
        raise UsageError(
            f"accelerate config {path!r}: {detail}: fix it, or start again from a file in "
            f"accelerate_configs/"
        ) from None


def check_config(path, cpu_target):
    config = load_config(path)
    kind = str(config.distributed_type).rsplit(".", 1)[-1]
    for key in ("num_processes", "num_machines"):
        value = getattr(config, key, 1)
        if type(value) is not int or value < 1:
            raise UsageError(
                f"accelerate config {path!r}: {key} is {value!r}, not a whole number of at least 1 "
                f"(write it without quotes)"
            )
    precision = str(getattr(config, "mixed_precision", None) or "no").rsplit(".", 1)[-1].lower()
    if precision not in ("no", "fp16", "bf16"):
        raise UsageError(
            f"accelerate config {path!r} asks for mixed_precision {precision}, which the rungs do not "
            f"run (fp8 needs an H100-class GPU and TransformerEngine or torchao): use bf16"
        )
    if kind == "MULTI_CPU":
        raise UsageError(
            f"accelerate config {path!r} is MULTI_CPU, which runs ONE process without MPI: use "
            f"MULTI_GPU with use_cpu: true (accelerate_configs/cpu_2proc.yaml)"
        )
    if kind == "FSDP" and not gpus():
        raise UsageError(
            f"accelerate config {path!r} is FSDP, which accelerate on a CPU silently trains as plain "
            f"DDP: run make fsdp-cpu (scripts/7_fsdp.py, FSDP2 over gloo) instead"
        )
    if config.num_machines > 1 and not str(getattr(config, "main_process_ip", "") or "").strip():
        raise UsageError(
            f"accelerate config {path!r} spans {config.num_machines} machines and main_process_ip is "
            f"empty: set it to machine 0's address (the same in every machine's file)"
        )
    processes = config.num_processes // config.num_machines
    if not config.use_cpu:  # a NO config (1gpu.yaml) takes the GPU too, and would train on the CPU
        found, processes = gpus(), max(1, processes)
        if found < processes:
            raise UsageError(
                f"accelerate config {path!r} starts {processes} GPU processes on this machine and "
                f"it has {found} GPU(s): use {cpu_target or 'accelerate_configs/cpu_2proc.yaml'}"
            )


def processes(text):
    """NPROC as the Makefile passes it: a whole number of at least 1 (torchrun would assert on the rest)."""
    if not (text.isdigit() and int(text) >= 1):
        raise UsageError(f"NPROC={text} is not a number of processes: pass NPROC=2 (or any n >= 1)")
    return int(text)


def check_port(port):
    if not 1 <= port <= 65535:
        raise UsageError(f"port {port} is not a TCP port: pass one between 1 and 65535")
    process.free_port(port, "pass another port, or stop what holds it")


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--gpus", default="0", help="GPUs this launch needs on this machine")
    p.add_argument("--nproc", help="processes this launch starts on this machine (NPROC)")
    p.add_argument("--config", help="an accelerate config file the launch will use")
    p.add_argument("--port", type=int, help="a rendezvous port the launch will listen on")
    p.add_argument(
        "--cpu-target", help="what to run instead on a machine without the GPUs (for the message)"
    )
    p.add_argument("--target", help="what is being launched (for the message)")
    args = p.parse_args()
    try:
        if args.nproc is not None:
            processes(args.nproc)
        if args.gpus != "0":
            check_gpus(processes(args.gpus), args.cpu_target, args.target)
        if args.config:
            check_config(args.config, args.cpu_target)
        if args.port is not None:
            check_port(args.port)
    except UsageError as e:
        errors.fail(e)


if __name__ == "__main__":
    main()
