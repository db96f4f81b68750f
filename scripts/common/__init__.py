"""Everything in ddp-ladder that is NOT the lesson of a rung, in rooms of one purpose: flags, process set-up,
errors, the output-dir lock, atomic writes, data, models, metrics, checkpoints, the LR schedule, preemption.

Every rung imports these modules unchanged. They know nothing of ranks: where a function needs the rank, the world
size or whether this is the main process, the rung passes it in, and every collective a run takes is a line of
the rung. The checkpoint module alone calls torch.distributed (FSDP's gather, which every rank joins).
tests/test_repo.py checks both, and that no module writes the environment or imports in a circle.
"""

from common.errors import UsageError  # noqa: F401  (the exception for bad input, everywhere)
