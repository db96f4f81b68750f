"""Everything in ddp-ladder that is NOT about distribution: CLI, data, models, metrics, checkpoints.

Every rung imports these modules unchanged. Nothing here calls torch.distributed: where a function needs to
know the rank or the world size, the rung passes it in.
"""


class UsageError(Exception):
    """Bad input. Printed as one line on stderr (naming the fix) and the process exits with code 2."""
