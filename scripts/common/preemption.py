"""SIGTERM and Ctrl-C (SIGINT) as a request to stop cleanly: finish the step, write a checkpoint, exit.

Slurm (scancel, preemption, the time limit), Kubernetes (pod eviction) and torchrun (when it is told to stop, or
when another worker failed) send SIGTERM, then SIGKILL after a grace period (30 s by default in each); Ctrl-C
sends SIGINT (torchrun passes it on to its workers as SIGINT). Python's defaults die at once (SIGTERM) or raise
KeyboardInterrupt wherever the program is (SIGINT), and lose every step since the last checkpoint. Here the
handler only sets a flag; the training loop reads it at a step boundary, every CHECK_EVERY steps, saves, and exits
with 128 + the signal's number, what a shell reports for a process that the signal ended (143, 130).

Under torch.distributed (rungs 3-7) a process cannot act on its own flag: the signal reaches the processes at
different moments, and one that leaves the loop alone leaves the others waiting forever in DDP's next gradient
all-reduce. The rung therefore all-reduces the flag every CHECK_EVERY steps (a line of its own, from rung 3 on)
and hands the sum to `agree`, so every process stops at the same step. This module runs no collective: it
knows nothing of ranks.
"""

import signal

from common.errors import leave

CHECK_EVERY = 10  # steps between checks; the loop stops at most this many steps after the signal
EXIT_CODE = 128 + signal.SIGTERM  # 143: "stopped, not finished"
EXIT_CODES = (128 + signal.SIGTERM, 128 + signal.SIGINT)


class Preemption:
    """Install the handlers; `received` turns True once SIGTERM or SIGINT has reached this process."""

    def __init__(self, signals=(signal.SIGTERM, signal.SIGINT)):
        self.received, self.stopped, self.signum, self.agreed = False, False, signal.SIGTERM, None
        for signum in signals:
            signal.signal(signum, self._handler)

    def _handler(self, signum, frame):
        self.received, self.signum = True, signum

    def agree(self, anyone):
        """What the processes agreed at this check (`anyone`: some process received the signal). `stop_now`
        then answers with it rather than with this process's own flag, which the signal may set in between."""
        self.agreed = bool(anyone)

    def stop_now(self, step):
        """Whether the loop should stop after `step`: every CHECK_EVERY steps, what `agree` was told at this
        step, or (one process) whether the signal arrived. Every process calls it after every step."""
        if step % CHECK_EVERY:
            return False
        self.stopped = self.received if self.agreed is None else self.agreed
        self.agreed = None
        return self.stopped

    def exit_if_stopped(self, step, show=True):
        """After the loop: a run that a signal stopped says so (where `show`) and exits (143 or 130); its
        checkpoint is written. Through errors.leave, as a finished run leaves: no interpreter teardown."""
        if self.stopped:
            if show:
                name = signal.Signals(self.signum).name
                print(
                    f"stopped by {name} at step {step}, checkpoint saved: rerun with --resume auto"
                )
            leave(128 + self.signum)


def ignore_in_workers(_worker_id=None):
    """DataLoader workers leave SIGTERM and SIGINT to the training process: sent to the whole process group (as
    Slurm and Ctrl-C do), they would otherwise kill the workers first and the loader with them, before the
    checkpoint."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
