"""The built-in tasks (digits, cancer, gpt) and --dataset, prepared once into `datasets.Dataset` files under
--data-dir: the cache key (`spec`) holds everything that shapes the data, and a build is written atomically."""

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from common import atomic, your_data
from common.errors import UsageError

SPLIT_SEED = 42  # the train/eval split is fixed, whatever --seed says, so eval sets stay comparable
EVAL_FRACTION = 0.2  # for data that has no test/validation split of its own
CACHE_VERSION = 3  # bump when the preparation below changes, so old caches are not reused


@dataclass(frozen=True)
class Info:
    name: str  # the task or dataset name
    kind: str  # "image", "tabular" or "text"
    input_shape: tuple  # one sample's `inputs` shape
    num_classes: int


ROOT = Path(__file__).resolve().parent.parent.parent
TEXT_EVAL_FRACTION = 0.1  # the last tenth of the corpus: held-out text, not shuffled-in neighbours


def default_corpus():
    """The text that ships with the project: its README and its guides, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "guides").glob("*.md"))]


def spec(args):
    if args.dataset is None and args.task == "gpt":
        files = [Path(args.text_file).expanduser()] if args.text_file else default_corpus()
        missing = [str(p) for p in files if not p.is_file()]
        if missing:
            raise UsageError(
                f"--text-file {missing[0]!r} does not exist: pass a text file, or leave it out for "
                f"the built-in corpus"
            )
        return {
            "version": CACHE_VERSION,
            "name": "gpt",
            "block_size": args.block_size,
            "text": [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in files],
        }
    if args.dataset is None:
        return {"version": CACHE_VERSION, "name": args.task}
    source = args.dataset
    local = Path(source).expanduser()
    if local.exists():
        source = str(local.resolve())
        fingerprint = _fingerprint(local)
    elif (
        os.sep in source and not _looks_like_hub_name(source)
    ) or local.suffix.lower() in your_data.FILE_BUILDERS:
        raise UsageError(
            f"dataset path {args.dataset!r} does not exist: check the path (or pass a hub "
            f"dataset name as ORG/NAME)"
        )
    else:
        fingerprint = None
    return {
        "version": CACHE_VERSION,
        "name": Path(source).stem if local.exists() else source,
        "dataset": source,
        "fingerprint": fingerprint,
        "image_column": args.image_column,
        "feature_columns": args.feature_columns,
        "label_column": args.label_column,
        "image_size": args.image_size,
    }


def _fingerprint(path):
    """What the cache key knows of local data: every file's name, size and modification time (an image added to
    a class folder of an imagefolder changes it; the folder's own size and time would not)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for p in files:
        stat = p.stat()
        h.update(
            f"{p.relative_to(path) if p != path else p.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
        )
    return [len(files), h.hexdigest()]


def _looks_like_hub_name(source):
    parts = source.split("/")
    return len(parts) == 2 and all(parts) and not source.startswith((".", "/", "~"))


def digest(spec):
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def prepare(spec, path):
    import datasets

    datasets.disable_progress_bars()  # one build of a few thousand rows needs no progress bar per split
    if "dataset" in spec:
        splits, info = _user_data(spec)
    elif "text" in spec:
        splits, info = _text(spec)
    else:
        splits, info = _builtin(spec["name"])

    def fill(tmp):
        for split, (inputs, labels) in splits.items():
            features = datasets.Features(
                {
                    "inputs": _feature(inputs.shape[1:], str(inputs.dtype)),
                    "labels": _feature(labels.shape[1:], "int64"),
                }
            )
            ds = datasets.Dataset.from_dict({"inputs": inputs, "labels": labels}, features=features)
            ds.save_to_disk(str(tmp / split))
        # what a checkpoint records of the data it trained on: the prepared arrays' own bytes, so a copy of the
        # same files elsewhere (another mtime) is the same data, and an edited file is not
        content = hashlib.sha256()
        for split in sorted(splits):
            for array in splits[split]:
                content.update(f"{split}{array.dtype}{array.shape}".encode())
                content.update(np.ascontiguousarray(array).tobytes())
        (tmp / "info.json").write_text(json.dumps({**asdict(info), "sha256": content.hexdigest()}))

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # another process may have finished the same build first: theirs is as good
        if not path.exists():
            atomic.write_dir(path, fill)
    except (
        Exception
    ) as e:  # a full or read-only --data-dir: OSError, or pyarrow's and datasets' own errors
        why = (getattr(e, "strerror", None) or str(e).strip() or type(e).__name__).splitlines()[0][
            :160
        ]
        raise UsageError(
            f"could not write the prepared dataset under --data-dir {str(path.parent)!r} ({why}): "
            f"free space there, or pass --data-dir to a writable directory"
        ) from None


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
        raise UsageError(
            f"the text has {len(tokens)} bytes: too little for --block-size {block} (it needs 20 "
            f"sequences); use a longer --text-file or a smaller --block-size"
        )
    inputs = np.stack([tokens[i * block : (i + 1) * block] for i in range(n)])
    labels = np.stack([tokens[i * block + 1 : (i + 1) * block + 1] for i in range(n)])
    cut = n - max(1, round(n * TEXT_EVAL_FRACTION))
    info = Info("gpt", "text", (block,), 256)
    return {"train": (inputs[:cut], labels[:cut]), "eval": (inputs[cut:], labels[cut:])}, info


def _split(x, y):
    from sklearn.model_selection import train_test_split

    x_train, x_eval, y_train, y_eval = train_test_split(
        x, y, test_size=EVAL_FRACTION, random_state=SPLIT_SEED
    )
    return (x_train, y_train), (x_eval, y_eval)


def _standardize(train, eval_):
    """Scale features with the TRAINING set's mean and std (the eval set must not leak into them)."""
    mean, std = train[0].mean(0), train[0].std(0) + 1e-6
    return ((train[0] - mean) / std, train[1]), ((eval_[0] - mean) / std, eval_[1])


def _builtin(name):
    from sklearn import datasets as sk

    # 1,797 8x8 grey images of the digits 0-9, values 0..16; ships with scikit-learn
    if name == "digits":
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


def _user_data(spec):
    train, eval_, kind, classes = your_data.arrays(spec)
    if eval_ is None:
        train, eval_ = _split(*train)
    if kind == "tabular":
        train, eval_ = _standardize(train, eval_)
    info = Info(spec["name"], kind, tuple(train[0].shape[1:]), classes)
    return {"train": _as_arrays(train), "eval": _as_arrays(eval_)}, info
