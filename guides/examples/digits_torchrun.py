"""digits_plain.py migrated to DistributedDataParallel under torchrun: one process per device. Every changed line
is one item of guides/your-script.md's checklist.

    torchrun --standalone --nproc_per_node=2 guides/examples/digits_torchrun.py --batch-size 32 --epochs 3

--batch-size is per process: 2 processes x 32 train on the plain script's global batch of 64.
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

import torch.distributed as dist
import torch.distributed.nn  # before init_process_group, or exits can abort: your-script.md item 2
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler, Subset


class Net(nn.Module):
    def __init__(self, dropout=0.25):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, padding=1)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(2 * dropout)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        x = F.avg_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.gelu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def digits():
    """Train and test sets of 8x8 digit images: 1,408 train (22 batches of 64) and 389 test images."""
    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32).unsqueeze(1)
    x_train, x_test, y_train, y_test = train_test_split(
        x, torch.tensor(d.target), train_size=1408, random_state=0
    )
    return TensorDataset(x_train, y_train), TensorDataset(x_test, y_test)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            seen = (
                batch_idx * len(data) * dist.get_world_size()
            )  # every process takes len(data) per step
            if dist.get_rank() == 0:
                print(
                    f"Train Epoch: {epoch} [{seen}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}"
                )


def test(model, device, test_loader, test_size):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()
    totals = torch.tensor([test_loss, correct], dtype=torch.float64, device=device)
    dist.all_reduce(totals)  # this process summed its shard only: add up every shard
    test_loss, correct = (
        totals[0].item() / test_size,
        int(totals[1].item()),
    )  # the whole test set's size
    if dist.get_rank() == 0:
        print(
            f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{test_size} "
            f"({100.0 * correct / test_size:.0f}%)"
        )


def main():
    parser = argparse.ArgumentParser(description="digits example")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="input batch size for training (default: 64)"
    )
    parser.add_argument(
        "--test-batch-size", type=int, default=1000, help="input batch size for testing"
    )
    parser.add_argument(
        "--epochs", type=int, default=3, help="number of epochs to train (default: 3)"
    )
    parser.add_argument("--lr", type=float, default=1.0, help="learning rate (default: 1.0)")
    parser.add_argument(
        "--gamma", type=float, default=0.7, help="learning rate step gamma (default: 0.7)"
    )
    parser.add_argument("--dropout", type=float, default=0.25, help="dropout probability (0: off)")
    parser.add_argument("--no-shuffle", action="store_true", help="train in the dataset's order")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    parser.add_argument(
        "--log-interval", type=int, default=10, help="batches between two log lines"
    )
    parser.add_argument("--save-model", default=None, help="save the trained weights to this file")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])  # torchrun sets it: never a --local_rank argument
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group()  # NCCL for CUDA tensors, gloo for CPU ones; rank and world size from torchrun
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(
        args.seed
    )  # the same initial weights in every process (DDP also broadcasts rank 0's)
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")

    train_dataset, test_dataset = digits()
    sampler = DistributedSampler(
        train_dataset, shuffle=not args.no_shuffle, seed=args.seed
    )  # not shuffle=True too
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, sampler=sampler)
    test_shard = Subset(
        test_dataset, range(rank, len(test_dataset), world_size)
    )  # no padding, no sample twice
    test_loader = DataLoader(test_shard, batch_size=args.test_batch_size)

    model = Net(args.dropout).to(device)
    model = DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    torch.manual_seed(args.seed + rank)  # from here on, different dropout masks in every process

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(
            epoch
        )  # a new order every epoch; without it, every epoch repeats the first one's
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader, len(test_dataset))
        scheduler.step()  # every process steps its own optimizer's schedule: once per epoch, as before

    if (
        args.save_model and rank == 0
    ):  # one writer; the bare model's keys, without DDP's "module." prefix
        torch.save(model.module.state_dict(), args.save_model)
    del model  # its reducer holds the group: destroy_process_group frees it only after this
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
