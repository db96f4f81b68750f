"""The collectives lab: the operations DDP is made of, one at a time, on N processes (2 to 8).

    torchrun --standalone --nproc_per_node=4 scripts/labs/collectives.py             # every op (gloo on CPU)
    torchrun --standalone --nproc_per_node=3 scripts/labs/collectives.py --only ring_all_reduce subgroups

For each operation, rank 0 prints what every rank held before and after it, in one table. Every result is also
checked against what the operation must produce, so the lab doubles as a test: a wrong result raises.
Rank r starts with the value r + 1 (or a row of them), which makes every result easy to read:
  send/recv       point to point: every rank sends to the next rank in a ring and receives from the previous
  broadcast       rank 0's tensor, copied to every rank (how DDP makes every replica start equal)
  reduce          the sum of every rank's tensor, on rank 0 only
  all_reduce      the sum, on every rank (how DDP averages gradients: sum, then divide by the world size)
  scatter         rank 0's list of N chunks, chunk r to rank r
  gather          every rank's tensor, in a list on rank 0
  all_gather      every rank's tensor, in a list on every rank (how the rungs collect eval predictions)
  reduce_scatter  the sum of every rank's chunk r, on rank r (the first half of a ring all-reduce)
  ring_all_reduce all_reduce built from send/recv: a reduce-scatter phase, then an all-gather phase, each N - 1
                  steps in which every rank sends one chunk to its right neighbour; compared with dist.all_reduce
  subgroups       dist.new_group over the even ranks: a rank's number inside the group is not its global rank
Identity first: process id, global rank, local rank, node, device, as torchrun assigned them.
"""

import argparse
import os

import torch
import torch.distributed as dist

OPS = (
    "send_recv",
    "broadcast",
    "reduce",
    "all_reduce",
    "scatter",
    "gather",
    "all_gather",
    "reduce_scatter",
    "ring_all_reduce",
    "subgroups",
)


def show(title, before, after, note=""):
    """Every rank's (before, after), printed by rank 0 as one table."""
    rows = [None] * dist.get_world_size()
    dist.all_gather_object(rows, (dist.get_rank(), fmt(before), fmt(after)))
    if dist.get_rank() == 0:
        width = max(len("before"), *(len(r[1]) for r in rows)) + 2
        print(f"\n{title}{'  (' + note + ')' if note else ''}\n  rank  {'before':<{width}}after")
        for rank, b, a in rows:
            print(f"  {rank:>4}  {b:<{width}}{a}")


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    flat = value.flatten().tolist()
    return str(int(flat[0])) if len(flat) == 1 else "(" + " ".join(str(int(x)) for x in flat) + ")"


def check(ok, what):
    if not ok:
        raise AssertionError(f"rank {dist.get_rank()}: {what}")


def send_recv(rank, n):
    x = torch.tensor([rank + 1.0])
    got = torch.zeros(1)
    right, left = (rank + 1) % n, (rank - 1) % n
    # isend/irecv, not send/recv: with blocking calls every rank would wait in send for a receiver that is itself
    # waiting in send. Non-blocking ops posted together cannot deadlock.
    requests = [dist.isend(x, right), dist.irecv(got, left)]
    for r in requests:
        r.wait()
    show("send/recv: each rank sends to rank + 1, receives from rank - 1", x, got)
    check(got.item() == left + 1, f"received {got.item()} from rank {left}")


def broadcast(rank, n):
    x = torch.tensor([rank + 1.0])
    before = x.clone()
    dist.broadcast(x, src=0)
    show("broadcast from rank 0", before, x)
    check(x.item() == 1, "broadcast")


def reduce(rank, n):
    x = torch.tensor([rank + 1.0])
    before = x.clone()
    dist.reduce(x, dst=0, op=dist.ReduceOp.SUM)
    show(
        "reduce (sum) to rank 0",
        before,
        x if rank == 0 else None,
        "the other ranks' tensors are undefined after it",
    )
    check(rank != 0 or x.item() == n * (n + 1) / 2, "reduce")


def all_reduce(rank, n):
    x = torch.tensor([rank + 1.0])
    before = x.clone()
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    show("all_reduce (sum)", before, x)
    check(x.item() == n * (n + 1) / 2, "all_reduce")


def scatter(rank, n):
    chunks = [torch.tensor([10.0 * (i + 1)]) for i in range(n)] if rank == 0 else None
    got = torch.zeros(1)
    dist.scatter(got, scatter_list=chunks, src=0)
    show("scatter from rank 0: chunk r to rank r", chunks, got)
    check(got.item() == 10 * (rank + 1), "scatter")


def gather(rank, n):
    x = torch.tensor([rank + 1.0])
    out = [torch.zeros(1) for _ in range(n)] if rank == 0 else None
    dist.gather(x, gather_list=out, dst=0)
    show("gather to rank 0", x, out)
    check(rank != 0 or [t.item() for t in out] == [i + 1 for i in range(n)], "gather")


def all_gather(rank, n):
    x = torch.tensor([rank + 1.0])
    out = [torch.zeros(1) for _ in range(n)]
    dist.all_gather(out, x)
    show("all_gather", x, out)
    check([t.item() for t in out] == [i + 1 for i in range(n)], "all_gather")


def reduce_scatter(rank, n):
    chunks = [
        torch.tensor([(rank + 1.0) * 10**i]) for i in range(n)
    ]  # chunk i of rank r: (r + 1) * 10^i
    got = torch.zeros(1)
    dist.reduce_scatter(got, chunks, op=dist.ReduceOp.SUM)
    show("reduce_scatter (sum): rank r gets the sum of every rank's chunk r", chunks, got)
    check(got.item() == n * (n + 1) / 2 * 10**rank, "reduce_scatter")


def ring(x, rank, n):
    """Ring all-reduce (sum) of x from send/recv: 2 (n - 1) steps, each moving 1/n of x per rank."""
    chunks = list(x.clone().chunk(n))
    right, left = (rank + 1) % n, (rank - 1) % n

    def exchange(send_index, recv_index):
        incoming = torch.zeros_like(chunks[recv_index])
        requests = [dist.isend(chunks[send_index].contiguous(), right), dist.irecv(incoming, left)]
        for r in requests:
            r.wait()
        return incoming

    # reduce-scatter: after it, rank r holds the full sum of chunk (r + 1) % n
    for step in range(n - 1):
        send, recv = (rank - step) % n, (rank - step - 1) % n
        chunks[recv] = chunks[recv] + exchange(send, recv)
    for step in range(n - 1):  # all-gather: pass the finished chunks around the ring
        send, recv = (rank - step + 1) % n, (rank - step) % n
        chunks[recv] = exchange(send, recv)
    return torch.cat(chunks)


def ring_all_reduce(rank, n):
    x = torch.arange(2 * n, dtype=torch.float32) + 100 * rank  # 2 elements per chunk
    mine = ring(x, rank, n)
    reference = x.clone()
    dist.all_reduce(reference)
    show(
        "ring all-reduce from send/recv (reduce-scatter phase + all-gather phase)",
        x,
        mine,
        f"{2 * (n - 1)} steps; each rank sends 2(n-1)/n of the data: the bandwidth-optimal all-reduce",
    )
    check(
        torch.equal(mine, reference),
        f"ring {mine.tolist()} != dist.all_reduce {reference.tolist()}",
    )
    if rank == 0:
        print("  equal to dist.all_reduce on every rank: yes")


def subgroups(rank, n):
    evens = list(range(0, n, 2))
    group = dist.new_group(evens)  # every rank must call new_group, members or not
    x = torch.tensor([rank + 1.0])
    before = x.clone()
    inside = dist.get_rank(group) if rank in evens else None
    if rank in evens:
        dist.all_reduce(x, group=group)
    rows = [None] * n
    dist.all_gather_object(rows, (rank, inside, fmt(before), fmt(x)))
    if rank == 0:
        print(
            f"\nsubgroups: all_reduce (sum) inside dist.new_group({evens})\n  rank  rank in group  before  after"
        )
        for r, g, b, a in rows:
            print(f"  {r:>4}  {'-' if g is None else g:>13}  {b:<6}  {a}")
    check(
        rank not in evens
        or (inside == evens.index(rank) and x.item() == sum(r + 1 for r in evens)),
        "subgroup",
    )
    dist.destroy_process_group(group)


def whoami(rank, n):
    rows = [None] * n
    me = (
        os.getpid(),
        rank,
        int(os.environ.get("LOCAL_RANK", 0)),
        int(os.environ.get("GROUP_RANK", 0)),
        f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if torch.cuda.is_available() else "cpu",
    )
    dist.all_gather_object(rows, me)
    if rank == 0:
        print(
            f"{n} processes ({dist.get_backend()}):\n  process id  rank  local rank  node  device"
        )
        for pid, r, local, node, device in rows:
            print(f"  {pid:>10}  {r:>4}  {local:>10}  {node:>4}  {device}")


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--only", nargs="+", choices=OPS, help="run only these operations")
    args = p.parse_args()
    if "RANK" not in os.environ:
        raise SystemExit(
            "error: launch with torchrun --standalone --nproc_per_node=4 scripts/labs/collectives.py"
        )
    torch.set_num_threads(1)
    # gloo runs every op on CPU tensors; NCCL would need CUDA tensors
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    if not 2 <= n <= 8:
        raise SystemExit("error: the lab is for 2 to 8 processes")
    whoami(rank, n)
    for name in args.only or OPS:
        globals()[name](rank, n)
        dist.barrier()
    if rank == 0:
        print(
            f"\nall {len(args.only or OPS)} operations gave the expected results on {n} processes"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
