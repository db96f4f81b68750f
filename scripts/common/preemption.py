"""SIGTERM and Ctrl-C (SIGINT) as a request to stop cleanly: finish the step, write a checkpoint, exit.

Slurm (scancel, preemption, the time limit), Kubernetes (pod eviction) and torchrun (when it is told to stop, or
when another worker failed) send SIGTERM, then SIGKILL after a grace period (30 s by default in each); Ctrl-C
sends SIGINT (torchrun passes it on to its workers as SIGINT). Python's defaults die at once (SIGTERM) or raise
KeyboardInterrupt wherever the program is (SIGINT), and lose every step since the last checkpoint. Here the
handler only sets a flag; the training loop reads it at a step boundary, every CHECK_EVERY steps, saves, and exits
with 128 + the signal's number, what a shell reports for a process that the signal ended (143, 130).

Under torch.distributed (rungs 3-6) a process cannot act on its own flag: the signal reaches the processes at
different moments, and one that leaves the loop alone leaves the others waiting forever in DDP's next gradient
all-reduce. So `stop_now` stops every process when ANY of them has the flag, which takes a one-element
all-reduce; CHECK_EVERY keeps its cost (about 0.3 ms with 2 CPU processes over gloo) off most steps. This is
the one place in common/ that calls torch.distributed: it is the preemption feature's own plumbing, the same
line in every rung, and guides/fault-tolerance.md shows it.
"""

import signal
import sys

import torch
import torch.distributed as dist

CHECK_EVERY = 10  # steps between checks; the loop stops at most this many steps after the signal
EXIT_CODE = 128 + signal.SIGTERM  # 143: "stopped, not finished"
EXIT_CODES = (128 + signal.SIGTERM, 128 + signal.SIGINT)


class Preemption:
    """Install the handlers; `requested` turns True once SIGTERM or SIGINT has arrived (any number of times)."""

    def __init__(self, signals=(signal.SIGTERM, signal.SIGINT)):
        self.requested, self.stopped, self.signum = False, False, signal.SIGTERM
        for signum in signals:
            signal.signal(signum, self._handler)

    def _handler(self, signum, frame):
        self.requested, self.signum = True, signum

    def stop_now(self, step):
        """Whether the loop should stop after `step`: every CHECK_EVERY steps, True when this process or, under
        torch.distributed, any process got the signal. Every process must call it after every step."""
        if step % CHECK_EVERY:
            return False
        if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
            self.stopped = self.requested
            return self.stopped
        on_gpu = "nccl" in str(dist.get_backend()) and "gloo" not in str(dist.get_backend())
        flag = torch.tensor(int(self.requested), device="cuda" if on_gpu else "cpu")
        # the same answer on every process, at the same step
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self.stopped = bool(flag)
        return self.stopped

    def exit_if_stopped(self, step):
        """After the loop: a run that a signal stopped leaves the process group, says so and exits (143 or 130);
        its checkpoint is written. Every process calls it."""
        if self.stopped:
            main = _main_process()
            if dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()
            if main:
                print(
                    f"stopped by {self.signal_name} at step {step}, checkpoint saved: rerun with --resume auto"
                )
            sys.exit(self.exit_code)

    @property
    def signal_name(self):
        return signal.Signals(self.signum).name

    @property
    def exit_code(self):
        return 128 + self.signum


def ignore_in_workers(_worker_id=None):
    """DataLoader workers leave SIGTERM and SIGINT to the training process: sent to the whole process group (as
    Slurm and Ctrl-C do), they would otherwise kill the workers first and the loader with them, before the
    checkpoint."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main_process():
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
