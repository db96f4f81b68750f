"""Everything in ddp-ladder that is NOT the lesson of a rung, in rooms of one purpose: flags, process set-up,
errors, the output-dir lock, atomic writes, data, models, metrics, checkpoints, the LR schedule, preemption.

Every rung imports these modules unchanged. Where a function needs to know the rank or the world size, the rung
passes it in, or the function asks torch.distributed's public API (checkpoint, preemption and the tracker, which
every rank calls the same way); none of them starts or joins a process group.
"""

from common.errors import UsageError  # noqa: F401  (the exception for bad input, everywhere)
