"""Datasets for every rung: built-in offline tasks or your own data, prepared once into Hugging Face `datasets`.

`build(args)` returns `(train_ds, eval_ds, info)`: two `datasets.Dataset` objects with the columns `inputs`
(float32; images as channels x height x width, tabular rows as vectors) and `labels` (int64, 0..K-1), in torch
format, and an `Info` that tells the model what it gets. Prepared data is cached with `save_to_disk` under
`--data-dir`, keyed by everything that shapes it, so it is built once; a build writes into a temporary directory
and renames it into place, so a process that loads the cache never sees half of it.

The sample order is the contract the parity proof rests on: epoch e visits `epoch_order(n, seed, e)`, a seeded
permutation; the global batch at step s is positions [s*G, (s+1)*G) of it (G = batch size x world size), and rank
r of W takes every W-th of them, exactly as `torch.utils.data.distributed.DistributedSampler(shuffle=True,
drop_last=True)` does (rungs 3-5), or the W batches of B in a row (accelerate's prepare(), rung 6). So one
process at batch 2B and two processes at batch B see the same global batches.
"""
import hashlib
import json
import os
import shutil
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, Sampler, SequentialSampler

from common import UsageError, preemption

ON_DEVICE_BYTES = 1 << 30  # a GPU keeps a prepared dataset up to 1 GiB (per process) in its own memory
SPLIT_SEED = 42  # the train/eval split is fixed, whatever --seed says, so eval sets stay comparable
EVAL_FRACTION = 0.2  # for data that has no test/validation split of its own
CACHE_VERSION = 2  # bump when the preparation below changes, so old caches are not reused
MIN_ROWS = 10  # a dataset needs at least this many rows to be split and trained on
FILE_BUILDERS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


@dataclass(frozen=True)
class Info:
    name: str  # the task or dataset name
    kind: str  # "image", "tabular" or "text"
    input_shape: tuple  # one sample's `inputs` shape
    num_classes: int


def build(args):
    """Prepare (once) and load the data that --task / --dataset name. Returns (train_ds, eval_ds, info)."""
    spec = _spec(args)
    path = Path(args.data_dir) / f"{spec['name'].replace('/', '_')}-{_digest(spec)}"
    if not (path / "info.json").exists():
        _prepare(spec, path)
    import datasets

    info = json.loads((path / "info.json").read_text())
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
    exactly DistributedSampler(shuffle=True, seed=seed) at world size 1, which is what lets rung 3 swap one for
    the other and keep rung 1's batches (and accelerate's prepare() shard this one, batch by batch)."""

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


class _Batches(BatchSampler):
    """Groups a sampler's indices into batches, so the loader reads each batch with one call,
    `Columns.__getitems__(indices)`, instead of one row at a time. `skip_next` drops the first
    batches of the next pass only: that is how a run resumed mid-epoch continues where it stopped. A
    BatchSampler subclass, so that accelerate's prepare() recognises it and shards whole batches."""

    def __init__(self, sampler, batch_size, drop_last):
        super().__init__(sampler, batch_size, drop_last)
        self.skip_next = 0

    def __iter__(self):
        skip, self.skip_next = self.skip_next, 0
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                if skip:
                    skip -= 1
                else:
                    yield batch
                batch = []
        if batch and not self.drop_last and not skip:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class Columns(Dataset):
    """A prepared `datasets.Dataset` read as one tensor per column, so that a batch is one tensor index per
    column. `dataset[indices]` through datasets' torch formatting costs 2.8 ms for 32 digits images, more than the
    CNN's whole training step (1.8 ms on 2 cores); this costs about 0.05 ms (make bench: the input pipeline).
    A column stored in one Arrow chunk is used in place (the memory-mapped file, no copy); one of several chunks
    is joined once into RAM, which `build` needed anyway (it prepares every dataset from in-memory arrays). It
    holds for every dataset that `build` prepares: fixed-shape numeric `inputs` and `labels`, whatever the source."""

    def __init__(self, dataset):
        if dataset._indices is not None:  # a select()/shuffle() view: write its rows out contiguously first
            dataset = dataset.flatten_indices()
        table = dataset.data.table
        self.n = table.num_rows
        self.columns = {}
        for name in ("inputs", "labels"):
            parts = [_tensor(chunk) for chunk in table.column(name).chunks]
            self.columns[name] = parts[0] if len(parts) == 1 else torch.cat(parts)

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
        if self.columns["inputs"].is_cuda:  # from pinned memory: a copy from pageable memory would wait for the GPU
            index = index.pin_memory().to(self.columns["inputs"].device, non_blocking=True)
        return {name: column[index] for name, column in self.columns.items()}


def _tensor(chunk):
    """One Arrow chunk of a fixed-shape numeric column as a tensor over the same memory (N x shape)."""
    shape = []
    if isinstance(chunk, pa.ExtensionArray):  # datasets' Array3D: nested lists of one shape underneath
        shape, chunk = list(chunk.type.shape), chunk.storage
    while pa.types.is_fixed_size_list(chunk.type) or pa.types.is_list(chunk.type):
        shape += [chunk.type.list_size] if pa.types.is_fixed_size_list(chunk.type) else []
        chunk = chunk.flatten()  # zero-copy: the child values, offset by the chunk's slice
    values = chunk.to_numpy(zero_copy_only=True)
    with warnings.catch_warnings():  # read-only memory map: batches are copies made by indexing, never written
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(values).view(-1, *shape)


def loader(dataset, batch_size, shuffle=False, seed=0, sampler=None, drop_last=False, num_workers=0, device="cpu"):
    """A DataLoader that yields dicts of batched tensors, one index per batch, in the order of `sampler`, else of
    EpochShuffle(seed) when `shuffle`, else in order. As with torch's DataLoader, shuffle and sampler exclude
    each other.
    For a GPU `device`: a dataset of at most ON_DEVICE_BYTES moves there once, so each batch is one gather on the
    GPU (no per-batch copy); a larger one, or one read by worker processes, comes from pinned memory instead,
    which the rungs' `.to(device, non_blocking=True)` copies while the GPU still works on the previous step."""
    if shuffle and sampler is not None:
        raise ValueError("sampler option is mutually exclusive with shuffle")  # torch's DataLoader says the same
    sampler = sampler or (EpochShuffle(dataset, seed) if shuffle else SequentialSampler(dataset))
    batches = _Batches(sampler, batch_size, drop_last)
    if len(batches) == 0:
        raise UsageError(f"a batch of {batch_size} per process leaves no full batch of this process's "
                         f"{len(batches.sampler)} samples: lower --batch-size")
    cuda = torch.device(device).type == "cuda"
    if hasattr(dataset, "data") and hasattr(dataset, "_indices"):  # a datasets.Dataset from build()
        dataset = Columns(dataset)
        if cuda and num_workers == 0 and dataset.nbytes() <= ON_DEVICE_BYTES:
            dataset, cuda = dataset.to(device), False  # already on the GPU: nothing to pin
    return DataLoader(dataset, batch_sampler=batches, num_workers=num_workers, pin_memory=cuda,
                      collate_fn=_whole_batch if isinstance(dataset, Columns) else None,
                      persistent_workers=num_workers > 0, worker_init_fn=preemption.ignore_in_workers)


def _whole_batch(batch):
    return batch  # Columns.__getitems__ already returns the batch as tensors


def start_at(data_loader, epoch, samples):
    """Make the loader's next pass continue epoch `epoch` at sample `samples` of its order (a resumed run), and
    return (epoch, batch) for the loop. The position is in samples, so a checkpoint taken at another batch size
    or world size continues from the next unseen sample: at batch samples / global batch, or, past the epoch's
    last whole batch, at the start of the next epoch. A position that is not a whole number of this run's global
    batches is refused in one line. Works on the loaders of every rung: EpochShuffle's, DistributedSampler's, and
    accelerate's prepared loader, whose processes take whole batches in turn."""
    batches, in_turn = data_loader.batch_sampler, 1  # in_turn: processes that take whole batches in turn
    while not isinstance(batches, _Batches):  # accelerate's BatchSamplerShard around ours
        in_turn = getattr(batches, "num_processes", 1) if not getattr(batches, "split_batches", True) else 1
        batches = batches.batch_sampler
    replicas = getattr(batches.sampler, "num_replicas", 1)  # DistributedSampler: each process a share of a batch
    global_batch = batches.batch_size * in_turn * replicas
    if samples % global_batch:
        raise UsageError(f"the checkpoint stopped {samples} samples into epoch {epoch}, which is not a whole number "
                         f"of this run's global batch of {global_batch} (--batch-size x processes): resume with a "
                         f"global batch that divides {samples}, or from a checkpoint taken at the end of an epoch")
    batch = samples // global_batch
    if batch >= len(data_loader):  # the rest of that epoch is less than one of this run's batches
        epoch, batch = epoch + 1, 0
    if hasattr(data_loader, "iteration"):  # accelerate's DataLoaderShard: it sets the sampler's epoch itself
        data_loader.set_epoch(epoch)
    if hasattr(batches.sampler, "set_epoch"):
        batches.sampler.set_epoch(epoch)
    batches.skip_next = batch * in_turn  # batches of this process's loader to pass over
    return epoch, batch


# --- preparation (runs once per cache key) ---------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent.parent
TEXT_EVAL_FRACTION = 0.1  # the last tenth of the corpus: held-out text, not shuffled-in neighbours


def _default_corpus():
    """The text that ships with the project: its README and its guides, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "guides").glob("*.md"))]


def _spec(args):
    if args.dataset is None and args.task == "gpt":
        files = [Path(args.text_file).expanduser()] if args.text_file else _default_corpus()
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise UsageError(f"--text-file {missing[0]!r} does not exist: pass a text file, or leave it out for "
                             f"the built-in corpus")
        return {"version": CACHE_VERSION, "name": "gpt", "block_size": args.block_size,
                "text": [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files]}
    if args.dataset is None:
        return {"version": CACHE_VERSION, "name": args.task}
    source = args.dataset
    local = Path(source).expanduser()
    if local.exists():
        source = str(local.resolve())
        fingerprint = _fingerprint(local)
    elif (os.sep in source and not _looks_like_hub_name(source)) or local.suffix.lower() in FILE_BUILDERS:
        raise UsageError(f"dataset path {args.dataset!r} does not exist: check the path (or pass a hub "
                         f"dataset name as ORG/NAME)")
    else:
        fingerprint = None
    return {"version": CACHE_VERSION, "name": Path(source).stem if local.exists() else source,
            "dataset": source, "fingerprint": fingerprint, "image_column": args.image_column,
            "feature_columns": args.feature_columns, "label_column": args.label_column,
            "image_size": args.image_size}


def _fingerprint(path):
    """What the cache key knows of local data: every file's name, size and modification time (an image added to
    a class folder of an imagefolder changes it; the folder's own size and time would not)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for p in files:
        stat = p.stat()
        h.update(f"{p.relative_to(path) if p != path else p.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return [len(files), h.hexdigest()]


def _looks_like_hub_name(source):
    parts = source.split("/")
    return len(parts) == 2 and all(parts) and not source.startswith((".", "/", "~"))


def _digest(spec):
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def _prepare(spec, path):
    import datasets

    datasets.disable_progress_bars()  # one build of a few thousand rows needs no progress bar per split
    if "dataset" in spec:
        splits, info = _from_user_data(spec)
    elif "text" in spec:
        splits, info = _text(spec)
    else:
        splits, info = _builtin(spec["name"])
    tmp = path.parent / f".tmp-{path.name}-{os.getpid()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        for split, (inputs, labels) in splits.items():
            features = datasets.Features({"inputs": _feature(inputs.shape[1:], str(inputs.dtype)),
                                          "labels": _feature(labels.shape[1:], "int64")})
            ds = datasets.Dataset.from_dict({"inputs": inputs, "labels": labels}, features=features)
            ds.save_to_disk(str(tmp / split))
        (tmp / "info.json").write_text(json.dumps(asdict(info)))
    except Exception as e:  # a full or read-only --data-dir: OSError, or pyarrow's and datasets' own errors
        shutil.rmtree(tmp, ignore_errors=True)
        why = (getattr(e, "strerror", None) or str(e).strip() or type(e).__name__).splitlines()[0][:160]
        raise UsageError(f"could not write the prepared dataset under --data-dir {str(path.parent)!r} ({why}): "
                         f"free space there, or pass --data-dir to a writable directory") from None
    try:
        os.rename(tmp, path)  # atomic: a reader sees no cache or a whole one
    except OSError:  # another process finished the same build first; theirs is as good as ours
        shutil.rmtree(tmp, ignore_errors=True)


def _feature(shape, dtype="float32"):
    import datasets

    if len(shape) == 3:
        return datasets.Array3D(shape=tuple(shape), dtype=dtype)
    if len(shape) == 0:
        return datasets.Value(dtype)
    return datasets.List(datasets.Value(dtype), length=int(shape[0]))


def _text(spec):
    """Byte-level language modelling: the corpus as bytes (a 256-token vocabulary, no tokenizer to download), cut
    into non-overlapping windows of block_size + 1; the model reads window[:-1] and predicts window[1:]."""
    data = b"\n\n".join(Path(path).read_bytes() for path, _, _ in spec["text"])
    tokens = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    block = spec["block_size"]
    n = (len(tokens) - 1) // block
    if n < 20:
        raise UsageError(f"the text has {len(tokens)} bytes: too little for --block-size {block} (it needs 20 "
                         f"sequences); use a longer --text-file or a smaller --block-size")
    inputs = np.stack([tokens[i * block:(i + 1) * block] for i in range(n)])
    labels = np.stack([tokens[i * block + 1:(i + 1) * block + 1] for i in range(n)])
    cut = n - max(1, round(n * TEXT_EVAL_FRACTION))
    info = Info("gpt", "text", (block,), 256)
    return {"train": (inputs[:cut], labels[:cut]), "eval": (inputs[cut:], labels[cut:])}, info


def _split(x, y):
    from sklearn.model_selection import train_test_split

    x_train, x_eval, y_train, y_eval = train_test_split(x, y, test_size=EVAL_FRACTION, random_state=SPLIT_SEED)
    return (x_train, y_train), (x_eval, y_eval)


def _standardize(train, eval_):
    """Scale features with the TRAINING set's mean and std (the eval set must not leak into them)."""
    mean, std = train[0].mean(0), train[0].std(0) + 1e-6
    return ((train[0] - mean) / std, train[1]), ((eval_[0] - mean) / std, eval_[1])


def _builtin(name):
    from sklearn import datasets as sk

    if name == "digits":  # 1,797 8x8 grey images of the digits 0-9, values 0..16; ships with scikit-learn
        d = sk.load_digits()
        x = (d.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8, in [0, 1]
        train, eval_ = _split(x, d.target.astype(np.int64))
        info = Info("digits", "image", (1, 8, 8), 10)
    else:  # "cancer": 569 tumours x 30 features, malignant or benign; 455 train / 114 eval
        d = sk.load_breast_cancer()
        train, eval_ = _standardize(*_split(d.data.astype(np.float32), d.target.astype(np.int64)))
        info = Info("cancer", "tabular", (30,), 2)
    return {"train": _as_arrays(train), "eval": _as_arrays(eval_)}, info


def _as_arrays(pair):
    return np.ascontiguousarray(pair[0], dtype=np.float32), np.asarray(pair[1], dtype=np.int64)


def _load_user_dataset(spec):
    import datasets

    source = Path(spec["dataset"])
    try:
        if source.is_dir() and ((source / "dataset_dict.json").exists() or (source / "state.json").exists()):
            return datasets.load_from_disk(str(source))
        if source.is_file():
            suffix = source.suffix.lower()  # data.CSV is a CSV file too
            if suffix not in FILE_BUILDERS:
                raise UsageError(f"cannot read {str(source)!r}: --dataset takes a {'/'.join(FILE_BUILDERS)} "
                                 f"file, an imagefolder directory or a save_to_disk directory")
            options = {"delimiter": "\t"} if suffix == ".tsv" else {}  # the csv builder splits on commas
            return datasets.load_dataset(FILE_BUILDERS[suffix], data_files=str(source), **options)
        if source.is_dir():
            return datasets.load_dataset("imagefolder", data_dir=str(source))
        return datasets.load_dataset(spec["dataset"])
    except UsageError:
        raise
    except Exception as e:  # the hub unreachable, a malformed file: say which and what to do, in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"could not load dataset {spec['dataset']!r} ({first[:200]}): check the path or "
                         f"name, and for a hub dataset that you are online") from None


def _from_user_data(spec):
    import datasets

    loaded = _load_user_dataset(spec)
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    if "train" not in loaded:
        raise UsageError(f"dataset {spec['dataset']!r} has no 'train' split (it has {', '.join(loaded)})")
    eval_name = next((s for s in ("test", "validation", "eval") if s in loaded), None)
    columns = loaded["train"].column_names
    label = spec["label_column"]
    if label not in columns:
        raise UsageError(f"label column {label!r} not in dataset (columns: {', '.join(columns)}): "
                         f"pass --label-column")
    image_column = spec["image_column"] or next(
        (c for c, f in loaded["train"].features.items() if isinstance(f, datasets.Image)), None)
    if image_column is not None and image_column not in columns:
        raise UsageError(f"image column {image_column!r} not in dataset (columns: {', '.join(columns)}): "
                         f"pass --image-column")
    if image_column is not None:
        convert = _image_converter(loaded["train"][0][image_column], spec["image_size"])
        arrays = {s: (_images(loaded[s], image_column, convert, s), loaded[s][label]) for s in loaded}
        kind = "image"
    else:
        wanted = spec["feature_columns"].split(",") if spec["feature_columns"] else [
            c for c, f in loaded["train"].features.items()
            if c != label and isinstance(f, datasets.Value) and f.dtype.startswith(("int", "uint", "float"))]
        missing = [c for c in wanted if c not in columns]
        if missing or not wanted:
            raise UsageError(f"feature columns {', '.join(missing) or '(none numeric)'} not in dataset "
                             f"(columns: {', '.join(columns)}): pass --feature-columns A,B,C")
        if label in wanted:
            raise UsageError(f"the label column {label!r} is among --feature-columns: the model would read the "
                             f"answer from its input; leave it out of --feature-columns")
        features = loaded["train"].features
        text = [c for c in wanted if not (isinstance(features[c], datasets.Value) and
                                          features[c].dtype.startswith(("int", "uint", "float", "bool")))]
        if text:
            raise UsageError(f"feature column {text[0]!r} is not numeric ({features[text[0]]}): features must be "
                             f"numbers; leave it out of --feature-columns, or encode it first")
        arrays = {s: (np.stack([np.asarray(loaded[s][c], dtype=np.float32) for c in wanted], axis=1),
                      loaded[s][label]) for s in loaded}
        for s, (x, _) in arrays.items():
            bad = ~np.isfinite(x)
            if bad.any():
                row, col = map(int, np.argwhere(bad)[0])
                raise UsageError(f"feature {wanted[col]!r} is {x[row, col]} (empty, NaN or infinite) in row {row} "
                                 f"of the {s} split: fill or drop such rows first")
        kind = "tabular"
    classes = _classes(arrays, label)
    index = {v: i for i, v in enumerate(classes)}
    arrays = {s: (x, np.array([index[int(v) if isinstance(v, float) else v] for v in y], dtype=np.int64))
              for s, (x, y) in arrays.items()}
    train = arrays["train"]
    if len(train[1]) < MIN_ROWS:
        raise UsageError(f"the train split has {len(train[1])} rows: at least {MIN_ROWS} are needed to hold some "
                         f"out for evaluation and train on the rest")
    eval_ = arrays[eval_name] if eval_name else None
    if eval_ is None:
        train, eval_ = _split(*train)
    if kind == "tabular":
        train, eval_ = _standardize(train, eval_)
    info = Info(spec["name"], kind, tuple(train[0].shape[1:]), len(classes))
    return {"train": _as_arrays(train), "eval": _as_arrays(eval_)}, info


def _classes(arrays, label):
    """The label column's values, sorted: whole numbers or names. A missing value, a fraction (a regression
    target, or a float-parsed column) or a single class is refused: each would train on garbage, silently."""
    values = [v for _, y in arrays.values() for v in y]
    for row, v in enumerate(values):
        if v is None or (isinstance(v, float) and (v != v or v != int(v))):
            raise UsageError(f"label {v!r} in row {row}: --label-column {label!r} must hold whole class numbers or "
                             f"names, with no empty cells (this looks like a missing value or a regression target)")
    values = [int(v) if isinstance(v, float) else v for v in values]  # 1.0 and 1 are the same class
    classes = sorted(set(values), key=lambda v: (str(type(v)), v))
    if len(classes) < 2:
        raise UsageError(f"--label-column {label!r} has {len(classes)} distinct value(s): classification needs at "
                         f"least two classes")
    if len(classes) > max(100, len(values) // 2):
        raise UsageError(f"--label-column {label!r} has {len(classes)} distinct values in {len(values)} rows: that "
                         f"is an identifier or a measurement, not a class; pass the right --label-column")
    return classes


def _images(split, column, convert, name):
    """Every image of a split as one array; an image that cannot be decoded is named in one line."""
    out = []
    for row in range(len(split)):
        try:
            out.append(convert(split[row][column]))
        except Exception as e:  # PIL raises several types for a truncated or corrupt file
            raise UsageError(f"image {row} of the {name} split cannot be read ({type(e).__name__}: "
                             f"{str(e)[:120]}): remove or replace that file") from None
    return np.stack(out)


def _image_converter(first, size):
    """Images as float32 in [0, 1]: 8-bit grey or colour divided by 255, 16-bit grey (I;16, common for scans and
    microscopy) by 65535 instead of being clipped to 8 bits."""
    sixteen = first.mode.startswith("I;16") or first.mode == "I"
    mode = "L" if first.mode in ("L", "1") else "RGB"

    def convert(image):
        if sixteen:
            array = np.asarray(image.convert("I").convert("F").resize((size, size)), dtype=np.float32) / 65535.0
            return array[None]
        image = image.convert(mode).resize((size, size))
        array = np.asarray(image, dtype=np.float32) / 255.0
        return array[None] if mode == "L" else array.transpose(2, 0, 1)

    return convert
