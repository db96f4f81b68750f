"""A plain single-device training script, written in the shape of pytorch/examples' mnist/main.py: train() and
test() functions, Adadelta with a StepLR schedule, two Dropout layers, DataLoader(shuffle=True), a sum-based
test loss, and --save-model with torch.save(model.state_dict()). The data is scikit-learn's 8x8 digits (offline).

    python guides/examples/digits_plain.py --epochs 3

digits_torchrun.py and digits_accelerate.py are this script migrated; guides/your-script.md shows the diffs.
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
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}"
            )


def test(model, device, test_loader):
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
    test_loss /= len(test_loader.dataset)
    print(
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

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    train_dataset, test_dataset = digits()
    train_loader = DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=not args.no_shuffle
    )
    test_loader = DataLoader(test_dataset, batch_size=args.test_batch_size)

    model = Net(args.dropout).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)


if __name__ == "__main__":
    main()
