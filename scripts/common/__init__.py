"""Everything in ddp-ladder that is NOT the lesson of a rung, in rooms of one purpose: flags, process set-up,
errors, the output-dir lock, atomic writes, data, models, metrics, checkpoints, the LR schedule, preemption.

Every rung imports these modules unchanged. Where a function needs to know the rank or the world size, the rung
passes it in, or the function asks torch.distributed's public API (checkpoint, preemption and the tracker, which
every rank calls the same way); none of them starts or joins a process group.
"""

# Imported here, before any script calls init_process_group: its functions take group=group.WORLD as a default
# argument, so the import that DDP's constructor makes after init would keep the default group alive past
# destroy_process_group, and gloo's threads into the interpreter's exit, where they abort the process
# (guides/your-script.md item 2 measures it).
import torch.distributed.nn  # noqa: F401

from common.errors import UsageError  # noqa: F401  (the exception for bad input, everywhere)
