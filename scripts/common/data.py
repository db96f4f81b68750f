"""Datasets for every rung: built-in offline tasks or your own data, prepared once into Hugging Face `datasets`.

`build(args)` returns `(train_ds, eval_ds, info)`: two `datasets.Dataset` objects with the columns `inputs`
(float32; images as channels x height x width, tabular rows as vectors) and `labels` (int64, 0..K-1), and an
`Info` that tells the model what it gets. Prepared data is cached with `save_to_disk` under `--data-dir`, keyed by
everything that shapes it, so it is built once, and written atomically (common/atomic.py).

The sample order is the contract the parity proof rests on: epoch e visits `epoch_order(n, seed, e)`, a seeded
permutation; optimizer step s takes positions [s*G, (s+1)*G) of it (G = batch size x accumulation x world size).
Under torch's DistributedSampler (rungs 3-5, 7) rank r takes every W-th of them; under accelerate's prepare()
(rung 6, split_batches) each global micro-batch is cut in W slices. Either way each optimizer step sees the same
G samples as rung 1's, and the loader yields micro-batches, an epoch being a whole number of optimizer steps.
"""

import json
from pathlib import Path

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, Sampler, SequentialSampler

from common import preemption, tasks
from common.errors import UsageError
from common.tasks import Info  # noqa: F401  (data.Info: what a model is built for)

# a GPU keeps a prepared dataset up to 1 GiB (per process) in its own memory
ON_DEVICE_BYTES = 1 << 30


def build(args):
    """Prepare (once) and load the data that --task / --dataset name. Returns (train_ds, eval_ds, info)."""
    spec = tasks.spec(args)
    path = Path(args.data_dir) / f"{spec['name'].replace('/', '_')}-{tasks.digest(spec)}"
    if not (path / "info.json").exists():
        tasks.prepare(spec, path)
    import datasets

    info = json.loads((path / "info.json").read_text())
    args.data_sha256 = info.get(
        "sha256"
    )  # recorded in every checkpoint: a resume on other data refuses
    info = Info(info["name"], info["kind"], tuple(info["input_shape"]), info["num_classes"])
    train_ds = datasets.load_from_disk(str(path / "train")).with_format("torch")
    eval_ds = datasets.load_from_disk(str(path / "eval")).with_format("torch")
    return train_ds, eval_ds, info


def epoch_order(n, seed, epoch):
    """The seeded permutation of range(n) that epoch `epoch` visits (DistributedSampler's, to the index)."""
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(n, generator=g).tolist()


class EpochShuffle(Sampler):
    """What `DataLoader(shuffle=True)` does, with the order written down: epoch e visits `epoch_order(n, seed, e)`,
    and each pass moves on to the next epoch by itself, so the plain loop of rung 1 never calls set_epoch. It is
    exactly DistributedSampler(shuffle=True, seed=seed) at world size 1."""

    def __init__(self, dataset, seed=0):
        self.n, self.seed, self.epoch = len(dataset), seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        order = epoch_order(self.n, self.seed, self.epoch)
        self.epoch += 1
        return iter(order)

    def __len__(self):
        return self.n


class Batches(BatchSampler):
    """A BatchSampler (so that accelerate's prepare() recognises and shards it) that yields an epoch as a whole
    number of optimizer steps of `accum` micro-batches, and can pass over the first batches of its next pass
    (`skip_next`): how a resumed run continues where it stopped."""

    def __init__(self, sampler, batch_size, drop_last, accum=1):
        super().__init__(sampler, batch_size, drop_last)
        self.accum, self.skip_next = accum, 0

    def __iter__(self):
        skip, self.skip_next = self.skip_next, 0
        for i, batch in enumerate(super().__iter__()):
            if i >= len(self):
                return
            if i >= skip:
                yield batch

    def __len__(self):
        n = len(self.sampler)
        batches = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return batches // self.accum * self.accum if self.drop_last else batches


class Columns(Dataset):
    """A prepared `datasets.Dataset` read once as one tensor per column (datasets' own torch formatting of the
    whole table), so that a batch is one tensor index per column. `dataset[indices]` through datasets' formatting
    costs 2.8 ms for 32 digits images, more than the CNN's whole training step (1.8 ms on 2 cores); this costs
    about 0.05 ms (make bench: the input pipeline). It holds for every dataset that `build` prepares:
    fixed-shape numeric `inputs` and `labels`."""

    def __init__(self, dataset):
        table = dataset.with_format("torch", columns=["inputs", "labels"])[:]
        self.columns = {name: table[name] for name in ("inputs", "labels")}
        self.n = len(self.columns["labels"])

    def __len__(self):
        return self.n

    def nbytes(self):
        return sum(column.numel() * column.element_size() for column in self.columns.values())

    def to(self, device):
        self.columns = {name: column.to(device) for name, column in self.columns.items()}
        return self

    def __getitem__(self, index):
        return {name: column[index] for name, column in self.columns.items()}

    def __getitems__(self, indices):  # what DataLoader calls with a whole batch's indices
        index = torch.as_tensor(indices, dtype=torch.long)
        if self.columns[
            "inputs"
        ].is_cuda:  # from pinned memory: a copy from pageable memory waits for the GPU
            index = index.pin_memory().to(self.columns["inputs"].device, non_blocking=True)
        return {name: column[index] for name, column in self.columns.items()}


def loader(
    dataset,
    batch_size,
    shuffle=False,
    seed=0,
    sampler=None,
    drop_last=False,
    accum=1,
    num_workers=0,
    device="cpu",
):
    """A DataLoader of micro-batches (dicts of batched tensors), in the order of `sampler`, else of
    EpochShuffle(seed) when `shuffle`, else in order; with `drop_last`, an epoch is a whole number of optimizer
    steps of `accum` micro-batches (the incomplete step at its end is dropped, as drop_last drops an incomplete
    batch). For a GPU `device`: a dataset of at most ON_DEVICE_BYTES moves there once, so a batch is one gather
    on the GPU; a larger one, or one read by worker processes, comes from pinned memory instead."""
    if shuffle and sampler is not None:
        # torch's DataLoader says the same
        raise ValueError("sampler option is mutually exclusive with shuffle")
    sampler = sampler or (EpochShuffle(dataset, seed) if shuffle else SequentialSampler(dataset))
    batches = Batches(sampler, batch_size, drop_last, accum)
    if len(batches) == 0:
        raise UsageError(
            f"a batch of {batch_size} per process x {accum} accumulation steps leaves no full "
            f"optimizer step of this process's {len(sampler)} samples: lower --batch-size"
        )
    cuda = torch.device(device).type == "cuda"
    if hasattr(dataset, "with_format"):  # a datasets.Dataset from build(): read as tensor columns
        dataset = Columns(dataset)
        if cuda and num_workers == 0 and dataset.nbytes() <= ON_DEVICE_BYTES:
            dataset, cuda = dataset.to(device), False  # already on the GPU: nothing to pin
    return DataLoader(
        dataset,
        batch_sampler=batches,
        num_workers=num_workers,
        pin_memory=cuda,
        collate_fn=_whole_batch if isinstance(dataset, Columns) else None,
        persistent_workers=num_workers > 0,
        worker_init_fn=preemption.ignore_in_workers,
    )


def shard(dataset, num_shards, index):
    """`Dataset.shard(num_shards, index, contiguous=True)`: one contiguous slice per process, none overlapping,
    none dropped. A split with fewer rows than processes is refused in one line, the same on every process
    (Dataset.shard raises IndexError for the empty slice, on the processes that would get one)."""
    if len(dataset) < num_shards:
        raise UsageError(
            f"the eval split has {len(dataset)} rows, fewer than the {num_shards} processes that each "
            f"evaluate a slice of it: give --dataset a larger test split, or run fewer processes"
        )
    return dataset.shard(num_shards, index, contiguous=True)


def _whole_batch(batch):
    return batch  # Columns.__getitems__ already returns the batch as tensors


def start_at(data_loader, epoch, samples):
    """Make the loader's next pass continue epoch `epoch` at sample `samples` of its order (a resumed run), and
    return (epoch, optimizer steps already taken in it). The position is in samples, so a checkpoint taken at
    another batch size or world size continues from the next unseen sample; a position that is not a whole
    number of this run's optimizer steps is refused in one line. The loader is a DataLoader of ours, or
    accelerate's prepared one around it (reached through the public `batch_sampler` attributes)."""
    batches = data_loader.batch_sampler
    while not isinstance(batches, Batches):  # accelerate's BatchSamplerShard around ours
        batches = batches.batch_sampler
    # DistributedSampler: each process a share
    replicas = getattr(batches.sampler, "num_replicas", 1)
    step_samples = batches.batch_size * batches.accum * replicas
    if samples % step_samples:
        raise UsageError(
            f"the checkpoint stopped {samples} samples into epoch {epoch}, which is not a whole "
            f"number of this run's optimizer steps of {step_samples} samples (--batch-size x "
            f"--gradient-accumulation-steps x processes): resume with a global batch that divides "
            f"{samples}, or from a checkpoint taken at the end of an epoch"
        )
    steps = samples // step_samples
    # the rest of that epoch is less than one of this run's steps
    if steps >= len(batches) // batches.accum:
        epoch, steps = epoch + 1, 0
    if hasattr(data_loader, "set_epoch"):  # accelerate's prepared loader counts its epochs itself
        data_loader.set_epoch(epoch)
    if hasattr(batches.sampler, "set_epoch"):
        batches.sampler.set_epoch(epoch)
    batches.skip_next = steps * batches.accum
    return epoch, steps
