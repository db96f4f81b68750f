"""--dataset: your own data (csv/tsv/json/parquet files, an imagefolder directory, a save_to_disk directory, or a
hub dataset when online) read with Hugging Face `datasets` and turned into the arrays that data.build caches.
Everything that would train on garbage (NaN features, a float label, one class, a text feature, an unreadable
image) is refused in one line that names the row or the file."""

import math
import re
from pathlib import Path

import numpy as np

from common.errors import UsageError

FILE_BUILDERS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".parquet": "parquet",
}
MIN_ROWS = 10  # a dataset needs at least this many rows to be split and trained on


def _load(spec):
    import datasets

    source = Path(spec["dataset"])
    try:
        if source.is_dir() and (
            (source / "dataset_dict.json").exists() or (source / "state.json").exists()
        ):
            return datasets.load_from_disk(str(source))
        if source.is_file():
            suffix = source.suffix.lower()  # data.CSV is a CSV file too
            if suffix not in FILE_BUILDERS:
                raise UsageError(
                    f"cannot read {str(source)!r}: --dataset takes a {'/'.join(FILE_BUILDERS)} "
                    f"file, an imagefolder directory or a save_to_disk directory"
                )
            # the csv builder splits on commas
            options = {"delimiter": "\t"} if suffix == ".tsv" else {}
            return datasets.load_dataset(FILE_BUILDERS[suffix], data_files=str(source), **options)
        if source.is_dir():
            return datasets.load_dataset("imagefolder", data_dir=str(source))
        return datasets.load_dataset(spec["dataset"])
    except UsageError:
        raise
    except (
        Exception
    ) as e:  # the hub unreachable, a malformed file: say which and what to do, in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(
            f"could not load dataset {spec['dataset']!r} ({first[:200]}): check the path or "
            f"name, and for a hub dataset that you are online"
        ) from None


def arrays(spec):
    """(train, eval or None, kind, number of classes): (inputs, int64 labels) arrays of --dataset's splits."""
    import datasets

    loaded = _load(spec)
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    if "train" not in loaded:
        raise UsageError(
            f"dataset {spec['dataset']!r} has no 'train' split (it has {', '.join(loaded)})"
        )
    eval_name = next((s for s in ("test", "validation", "eval") if s in loaded), None)
    columns = loaded["train"].column_names
    label = spec["label_column"]
    if label not in columns:
        raise UsageError(
            f"label column {label!r} not in dataset (columns: {', '.join(columns)}): "
            f"pass --label-column"
        )
    repeated = [c for c in columns if re.fullmatch(re.escape(label) + r"\.\d+", c)]
    if repeated:  # pandas reads a header that names a column twice as label, label.1, ...
        raise UsageError(
            f"the header names the label column {label!r} more than once (read as {repeated[0]!r}): a "
            f"copy of the label among the features teaches the model to read the answer; drop or rename "
            f"the repeated column"
        )
    image_column = spec["image_column"] or next(
        (c for c, f in loaded["train"].features.items() if isinstance(f, datasets.Image)), None
    )
    if image_column is not None and image_column not in columns:
        raise UsageError(
            f"image column {image_column!r} not in dataset (columns: {', '.join(columns)}): "
            f"pass --image-column"
        )
    if image_column is not None:
        convert = _image_converter(_first_image(loaded["train"], image_column), spec["image_size"])
        arrays = {
            s: (_images(loaded[s], image_column, convert, s), loaded[s][label]) for s in loaded
        }
        kind = "image"
    else:
        wanted = (
            spec["feature_columns"].split(",")
            if spec["feature_columns"]
            else [
                c
                for c, f in loaded["train"].features.items()
                if c != label
                and isinstance(f, datasets.Value)
                and f.dtype.startswith(("int", "uint", "float"))
            ]
        )
        missing = [c for c in wanted if c not in columns]
        if missing or not wanted:
            raise UsageError(
                f"feature columns {', '.join(missing) or '(none numeric)'} not in dataset "
                f"(columns: {', '.join(columns)}): pass --feature-columns A,B,C"
            )
        if label in wanted:
            raise UsageError(
                f"the label column {label!r} is among --feature-columns: the model would read the "
                f"answer from its input; leave it out of --feature-columns"
            )
        features = loaded["train"].features
        text = [
            c
            for c in wanted
            if not (
                isinstance(features[c], datasets.Value)
                and features[c].dtype.startswith(("int", "uint", "float", "bool"))
            )
        ]
        if text:
            raise UsageError(
                f"feature column {text[0]!r} is not numeric ({features[text[0]]}): features must be "
                f"numbers; leave it out of --feature-columns, or encode it first"
            )
        arrays = {
            s: (
                np.stack([np.asarray(loaded[s][c], dtype=np.float32) for c in wanted], axis=1),
                loaded[s][label],
            )
            for s in loaded
        }
        for s, (x, _) in arrays.items():
            bad = ~np.isfinite(x)
            if bad.any():
                row, col = map(int, np.argwhere(bad)[0])
                raise UsageError(
                    f"feature {wanted[col]!r} is {x[row, col]} (empty, NaN or infinite) in row {row} "
                    f"of the {s} split: fill or drop such rows first"
                )
        kind = "tabular"
    classes = _classes(arrays, label)
    index = {v: i for i, v in enumerate(classes)}
    arrays = {
        s: (x, np.array([index[int(v) if isinstance(v, float) else v] for v in y], dtype=np.int64))
        for s, (x, y) in arrays.items()
    }
    train = arrays["train"]
    if len(train[1]) < MIN_ROWS:
        raise UsageError(
            f"the train split has {len(train[1])} rows: at least {MIN_ROWS} are needed to hold some "
            f"out for evaluation and train on the rest"
        )
    return train, arrays[eval_name] if eval_name else None, kind, len(classes)


def _classes(arrays, label):
    """The label column's values, sorted: whole numbers or names. A missing value, a fraction (a regression
    target, or a float-parsed column) or a single class is refused: each would train on garbage, silently."""
    values = [v for _, y in arrays.values() for v in y]
    for row, v in enumerate(values):
        # a list or a struct (parquet), None (an empty cell): unhashable, or no class at all
        if not isinstance(v, (int, float, str)):
            raise UsageError(
                f"label {str(v)[:60]} in row {row} is a {type(v).__name__}: --label-column "
                f"{label!r} must hold whole class numbers or names, one per row, with no empty cells"
            )
        if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
            raise UsageError(
                f"label {v!r} in row {row}: --label-column {label!r} must hold whole class numbers or "
                f"names, with no empty cells (this looks like a missing value or a regression target)"
            )
    values = [int(v) if isinstance(v, float) else v for v in values]  # 1.0 and 1 are the same class
    classes = sorted(set(values), key=lambda v: (str(type(v)), v))
    if len(classes) < 2:
        raise UsageError(
            f"--label-column {label!r} has {len(classes)} distinct value(s): classification needs at "
            f"least two classes"
        )
    if len(classes) > max(100, len(values) // 2):
        raise UsageError(
            f"--label-column {label!r} has {len(classes)} distinct values in {len(values)} rows: that "
            f"is an identifier or a measurement, not a class; pass the right --label-column"
        )
    return classes


def _images(split, column, convert, name):
    """Every image of a split as one array; an image that cannot be decoded is named in one line."""
    out = []
    for row in range(len(split)):
        try:
            out.append(convert(split[row][column]))
        except Exception as e:  # PIL raises several types for a truncated or corrupt file
            raise UsageError(
                f"image {row} of the {name} split cannot be read ({type(e).__name__}: "
                f"{str(e)[:120]}): remove or replace that file"
            ) from None
    return np.stack(out)


def _first_image(split, column):
    try:
        return split[0][column]
    except Exception as e:  # PIL raises several types for a file that is not an image
        raise UsageError(
            f"image 0 of the train split cannot be read ({type(e).__name__}: {str(e)[:120]}): remove "
            f"or replace that file"
        ) from None


def _image_converter(first, size):
    """Images as float32 in [0, 1], in one mode for the whole dataset (grey if the first image is grey, else
    RGB), each by its own bit depth: 8-bit divided by 255, 16-bit (I;16, common for scans and microscopy) by
    65535 instead of being clipped to 8 bits. The same picture gives the same input whatever file holds it."""
    grey = first.mode in ("L", "1", "I", "F") or first.mode.startswith("I;16")

    def convert(image):
        if image.mode == "I" or image.mode.startswith("I;16"):
            array = np.asarray(
                image.convert("I").convert("F").resize((size, size)), dtype=np.float32
            )
            array = array / 65535.0
            return array[None] if grey else np.repeat(array[None], 3, axis=0)
        image = image.convert("L" if grey else "RGB").resize((size, size))
        array = np.asarray(image, dtype=np.float32) / 255.0
        return array[None] if grey else array.transpose(2, 0, 1)

    return convert
