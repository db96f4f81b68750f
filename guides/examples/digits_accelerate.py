"""digits_plain.py migrated to Hugging Face Accelerate. Every changed line is one item of guides/your-script.md's
checklist. Launch it with a saved config (on a CPU: accelerate_configs/cpu_2proc.yaml), or with plain python
for one process:

    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml guides/examples/digits_accelerate.py \
        --batch-size 32 --epochs 3

--batch-size is per process: 2 processes x 32 train on the plain script's global batch of 64.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

import torch.distributed.nn  # before init_process_group, or exits can abort: your-script.md item 2
from accelerate import Accelerator


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


def train(args, model, accelerator, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()  # the prepared loader already put the batch on this process's device
        output = model(data)
        loss = F.nll_loss(output, target)
        accelerator.backward(loss)  # instead of loss.backward(): scales the loss for fp16
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            seen = (
                batch_idx * len(data) * accelerator.num_processes
            )  # every process takes len(data) per step
            accelerator.print(
                f"Train Epoch: {epoch} [{seen}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}"
            )


def test(model, accelerator, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            losses = F.nll_loss(output, target, reduction="none")
            pred = output.argmax(dim=1)  # get the index of the max log-probability
            # every process's samples of this batch, without the ones prepare() repeated to even the batches
            losses, pred, target = accelerator.gather_for_metrics((losses, pred, target))
            test_loss += losses.sum().item()  # sum up batch loss
            correct += pred.eq(target).sum().item()
    test_loss /= len(
        test_loader.dataset
    )  # the whole test set: prepare() shards the loader, not the dataset
    accelerator.print(
        f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(test_loader.dataset)} "
        f"({100.0 * correct / len(test_loader.dataset):.0f}%)"
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

    accelerator = Accelerator(
        cpu=not torch.cuda.is_available()
    )  # cpu=True: real processes on a CPU launch
    torch.manual_seed(args.seed)  # the same initial weights in every process

    train_dataset, test_dataset = digits()
    train_loader = DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=not args.no_shuffle
    )
    test_loader = DataLoader(test_dataset, batch_size=args.test_batch_size)

    model = Net(args.dropout)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    model, optimizer, train_loader, test_loader = accelerator.prepare(
        model, optimizer, train_loader, test_loader
    )
    torch.manual_seed(
        args.seed + accelerator.process_index
    )  # from here on, different dropout in every process

    # Not passed to prepare(): a prepared scheduler steps once per process at every call (measured: lr 1.0 ->
    # 0.49 -> 0.2401 at 2 processes), which suits a schedule stepped per optimizer step, not this per-epoch one.
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, accelerator, train_loader, optimizer, epoch)
        test(model, accelerator, test_loader)
        scheduler.step()

    if args.save_model:
        accelerator.wait_for_everyone()
        if (
            accelerator.is_main_process
        ):  # one writer; the bare model's keys, without DDP's "module." prefix
            torch.save(accelerator.unwrap_model(model).state_dict(), args.save_model)
    del model  # its reducer holds the group: destroy_process_group frees it only after this
    accelerator.free_memory()  # and accelerate's own references to it
    accelerator.end_training()


if __name__ == "__main__":
    main()
