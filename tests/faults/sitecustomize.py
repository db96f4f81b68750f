"""Fault injection for the reliability tests, loaded by every Python process the test starts (this directory
goes on PYTHONPATH). The rungs carry no test hooks: this counts optimizer steps with torch's global step hook
and, at the step and rank the test chose, does to the process what a real fault would do.

DDP_LADDER_FAULT="ACTION@STEP:RANK", fired once per DDP_LADDER_FAULT_MARKER file (so not again after a restart):
    kill         SIGKILL this worker (a crash, the OOM killer)
    term-group   SIGTERM every process of the job: the launcher and all its workers (Slurm signals every
                 process of a job step; torchrun puts each worker in its own session, so no process group does)
    term-parent  SIGTERM the launcher only (Kubernetes signals PID 1); rungs 1-2 signal themselves
    int-group    SIGINT every process of the job: Ctrl-C in a terminal (the foreground process group)
    int-parent   SIGINT the launcher only
    raise        raise a RuntimeError in the worker (a bug in the training code)
    stall        stop joining collectives (a hung rank): sleep far past any timeout. SIGTERM ends it at once, as
                 SIGKILL would end a rank stuck in C code, so the launcher's clean-up does not wait 30 s
"""

import os


def job_tree(root):
    """`root` and every process descended from it, from /proc: ladder.job_tree's walk, kept here because this
    file runs inside the rungs' processes, where scripts/tools is not importable."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


if os.environ.get("DDP_LADDER_FAULT"):
    import signal
    import time

    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    _action, _, _where = os.environ["DDP_LADDER_FAULT"].partition("@")
    _step, _, _rank = _where.partition(":")
    _count = 0

    def _rank_now():
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank()
        return int(os.environ.get("RANK", 0))

    def _fire(optimizer, args, kwargs):
        global _count
        _count += 1
        if _count != int(_step) or _rank_now() != int(_rank or 0):
            return
        try:  # once per test: a restarted worker counts from 0 again and must not fire a second time
            fd = os.open(
                os.environ["DDP_LADDER_FAULT_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY
            )
        except FileExistsError:
            return
        # when the fault struck, for the tests' time bounds
        os.write(fd, repr(time.time()).encode())
        os.close(fd)
        print(f"fault: {_action} at step {_count} on rank {_rank_now()}", flush=True)
        if _action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif _action in ("term-group", "int-group"):
            launcher = os.getppid() if os.environ.get("DDP_LADDER_FAULT_PARENT") else os.getpid()
            for pid in job_tree(launcher):
                os.kill(pid, signal.SIGTERM if _action.startswith("term") else signal.SIGINT)
        elif _action in ("term-parent", "int-parent"):
            os.kill(
                os.getppid() if os.environ.get("DDP_LADDER_FAULT_PARENT") else os.getpid(),
                signal.SIGTERM if _action.startswith("term") else signal.SIGINT,
            )
        elif _action == "raise":
            raise RuntimeError(f"injected fault at step {_count}")
        elif _action == "stall":
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            time.sleep(600)

    register_optimizer_step_post_hook(_fire)
