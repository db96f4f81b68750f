"""lm_plain.py migrated to Hugging Face Accelerate. Every changed line is one item of guides/your-script.md's
checklist: without a DataLoader, prepare() has no loader to shard, so each process keeps its share of
batchify()'s columns itself (item 15), on accelerator.device.

    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml guides/examples/lm_accelerate.py \
        --batch-size 8 --epochs 3

--batch-size is per process: 2 processes x 8 columns train on the plain script's 16.
"""

import argparse
import math

import torch
import torch.distributed.nn  # before init_process_group, or exits can abort: your-script.md item 2
import torch.nn as nn
from accelerate import Accelerator
from sklearn import datasets


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=32, nhid=64, nlayers=1, dropout=0.2):
        super().__init__()
        self.nhid, self.nlayers = nhid, nlayers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def corpus():
    """Train, validation and test streams of character ids, 90/5/5, and the vocabulary's size."""
    loaders = ("iris", "digits", "wine", "breast_cancer", "diabetes", "linnerud")
    text = "\n".join(getattr(datasets, f"load_{name}")().DESCR for name in loaders)
    vocab = sorted(set(text))
    ids = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)
    n = len(ids)
    return (
        ids[: n * 90 // 100],
        ids[n * 90 // 100 : n * 95 // 100],
        ids[n * 95 // 100 :],
        len(vocab),
    )


def batchify(data, bsz):
    """The stream as bsz columns, one below the other: [len // bsz, bsz]; the remainder is dropped."""
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


def repackage_hidden(h):
    """The state, cut from the graph of the batches before it."""
    return h.detach()


def train(args, model, accelerator, train_data, optimizer, criterion, epoch):
    model.train()
    hidden = accelerator.unwrap_model(model).init_hidden(
        args.batch_size
    )  # the wrapper: forward() only
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i, args.bptt)
        hidden = repackage_hidden(hidden)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), args.clip)  # unscales fp16 gradients first
        optimizer.step()
        if batch % args.log_interval == 0:
            accelerator.print(f"| epoch {epoch} | batch {batch} | loss {loss.item():.3f}")


def evaluate(args, model, accelerator, data_source, criterion):
    model.eval()
    total_loss = 0.0
    hidden = accelerator.unwrap_model(model).init_hidden(args.eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i, args.bptt)
            output, hidden = model(data, hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main():
    parser = argparse.ArgumentParser(description="character language model example")
    parser.add_argument("--batch-size", type=int, default=16, help="columns of the training stream")
    parser.add_argument("--eval-batch-size", type=int, default=10, help="columns for evaluation")
    parser.add_argument("--bptt", type=int, default=32, help="sequence length")
    parser.add_argument("--epochs", type=int, default=3, help="upper epoch limit")
    parser.add_argument("--lr", type=float, default=2.0, help="initial learning rate")
    parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout (0: off)")
    parser.add_argument("--seed", type=int, default=1111, help="random seed")
    parser.add_argument("--log-interval", type=int, default=20, help="batches between log lines")
    parser.add_argument("--save", default="lm.pt", help="where the best model's weights go")
    args = parser.parse_args()

    accelerator = Accelerator(
        cpu=not torch.cuda.is_available()
    )  # cpu=True: real processes on a CPU
    torch.manual_seed(args.seed)  # the same initial weights in every process
    device = accelerator.device

    train_ids, val_ids, test_ids, ntokens = corpus()
    rank, columns = accelerator.process_index, args.batch_size
    train_data = batchify(
        train_ids, columns * accelerator.num_processes
    )  # the plain script's columns
    train_data = train_data[:, rank * columns : (rank + 1) * columns].to(device)
    val_data = batchify(val_ids, args.eval_batch_size).to(device)
    test_data = batchify(test_ids, args.eval_batch_size).to(device)

    model = RNNModel(ntokens, dropout=args.dropout)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    model, optimizer = accelerator.prepare(model, optimizer)
    torch.manual_seed(args.seed + rank)  # from here on, every process its own dropout masks
    criterion = nn.CrossEntropyLoss()

    best_val_loss = None
    for epoch in range(1, args.epochs + 1):
        train(args, model, accelerator, train_data, optimizer, criterion, epoch)
        val_loss = evaluate(args, model, accelerator, val_data, criterion)  # the same everywhere
        accelerator.print(
            f"| end of epoch {epoch} | valid loss {val_loss:.3f} | valid ppl {math.exp(val_loss):.2f}"
        )
        if best_val_loss is None or val_loss < best_val_loss:  # every process takes the same branch
            best_val_loss = val_loss
            if accelerator.is_main_process:
                torch.save(accelerator.unwrap_model(model).state_dict(), args.save)
        else:  # no improvement: a smaller learning rate
            for group in optimizer.param_groups:
                group["lr"] /= 4.0

    accelerator.wait_for_everyone()  # the main process's file is complete before anyone reads it
    accelerator.unwrap_model(model).load_state_dict(torch.load(args.save, map_location="cpu"))
    test_loss = evaluate(args, model, accelerator, test_data, criterion)
    accelerator.print(
        f"| end of training | test loss {test_loss:.3f} | test ppl {math.exp(test_loss):.2f}"
    )
    del model  # its reducer holds the group: destroy_process_group frees it only after this
    accelerator.free_memory()  # and accelerate's own references to it
    accelerator.end_training()


if __name__ == "__main__":
    main()
