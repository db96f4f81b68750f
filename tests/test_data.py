import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from common import UsageError, data
from conftest import args_for


def test_cancer_split_is_455_train_114_eval(data_dir):
    train, eval_, info = data.build(args_for(data_dir, task="cancer"))
    assert (len(train), len(eval_)) == (455, 114)
    assert info.kind == "tabular" and info.input_shape == (30,) and info.num_classes == 2
    x = train[:]["inputs"]
    assert x.dtype == torch.float32 and x.shape == (455, 30)
    assert x.mean(0).abs().max() < 1e-4  # standardised with the training set's statistics


def test_digits_images_and_labels(data_dir):
    train, eval_, info = data.build(args_for(data_dir, task="digits"))
    assert (len(train), len(eval_)) == (1437, 360)
    assert info.input_shape == (1, 8, 8) and info.num_classes == 10
    batch = train[[0, 5, 9]]
    assert batch["inputs"].shape == (3, 1, 8, 8) and batch["labels"].dtype == torch.int64
    assert 0 <= batch["inputs"].min() and batch["inputs"].max() <= 1


def test_cache_is_built_once(data_dir, monkeypatch):
    data.build(args_for(data_dir, task="cancer"))
    calls = []
    monkeypatch.setattr(data, "_prepare", lambda *a: calls.append(a))
    train, _, _ = data.build(args_for(data_dir, task="cancer"))
    assert calls == [] and len(train) == 455


@pytest.mark.parametrize("n,world_size,seed", [(455, 2, 0), (455, 3, 1), (1437, 4, 7), (10, 1, 3)])
def test_sharded_sampler_equals_distributed_sampler(n, world_size, seed):
    dataset = list(range(n))
    for epoch in (0, 1, 5):
        for rank in range(world_size):
            ours = data.ShardedSampler(dataset, seed=seed, rank=rank, world_size=world_size)
            theirs = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed,
                                        drop_last=True)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_epochs_have_different_orders():
    s = data.ShardedSampler(list(range(100)), seed=0)
    s.set_epoch(0)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first and sorted(list(s)) == sorted(first)


def test_seed_tutorial_batch_count():
    """455 samples, batch 8, 2 processes, drop_last: 28 batches per process, 448 samples per epoch."""
    dataset = torch.utils.data.TensorDataset(torch.arange(455))
    seen = []
    for rank in range(2):
        loader = data.loader(dataset, 8, data.ShardedSampler(dataset, seed=0, rank=rank, world_size=2),
                             drop_last=True)
        batches = list(loader)
        assert len(loader) == len(batches) == 28
        seen += [i for b in batches for i in b[0].tolist()]
    assert len(seen) == 448 and len(set(seen)) == 448  # no sample twice


def test_global_batches_are_the_same_at_every_world_size(data_dir):
    """Rung 1 at batch 2B and W=2 processes at batch B see the same set of samples at every step."""
    train, _, _ = data.build(args_for(data_dir, task="cancer"))
    one = data.loader(train, 16, data.ShardedSampler(train, seed=3), drop_last=True)
    shards = [data.loader(train, 8, data.ShardedSampler(train, seed=3, rank=r, world_size=2), drop_last=True)
              for r in range(2)]
    for loaders in ([one], shards):
        for dl in loaders:
            dl.batch_sampler.sampler.set_epoch(2)
    steps = list(zip(one, *shards))
    assert len(steps) == 28
    for full, a, b in steps:
        key = lambda x: [tuple(r.tolist()) for r in x]  # noqa: E731
        assert sorted(key(full["inputs"])) == sorted(key(torch.cat([a["inputs"], b["inputs"]])))


def test_skip_batches_resumes_mid_epoch():
    dataset = torch.utils.data.TensorDataset(torch.arange(40))
    loader = data.loader(dataset, 4, data.ShardedSampler(dataset, seed=0), drop_last=True)
    full = [b[0].tolist() for b in loader]
    data.skip_batches(loader, 3)
    assert [b[0].tolist() for b in loader] == full[3:]
    assert [b[0].tolist() for b in loader] == full  # the skip applies to one pass only


def test_eval_shards_cover_every_sample_once(data_dir):
    _, eval_, _ = data.build(args_for(data_dir, task="cancer"))
    for world_size in (1, 2, 3, 4):
        shards = [eval_.shard(world_size, r, contiguous=True) for r in range(world_size)]
        labels = torch.cat([b["labels"] for shard in shards for b in data.loader(shard, 16)])
        assert torch.equal(labels, eval_[:]["labels"])


def test_batch_larger_than_dataset_is_a_usage_error():
    dataset = torch.utils.data.TensorDataset(torch.arange(10))
    with pytest.raises(UsageError, match="lower --batch-size"):
        data.loader(dataset, 16, data.ShardedSampler(dataset), drop_last=True)


def test_user_csv_and_errors(tmp_path, data_dir):
    rows = ["a,b,c,label"] + [f"{i},{i % 7},{(i * 3) % 5},{'yes' if i % 2 else 'no'}" for i in range(50)]
    csv = tmp_path / "toy.csv"
    csv.write_text("\n".join(rows) + "\n")
    train, eval_, info = data.build(args_for(data_dir, dataset=str(csv)))
    assert info.kind == "tabular" and info.input_shape == (3,) and info.num_classes == 2
    assert len(train) + len(eval_) == 50 and len(eval_) == 10
    train, _, info = data.build(args_for(data_dir, dataset=str(csv), feature_columns="a,c"))
    assert info.input_shape == (2,)
    with pytest.raises(UsageError, match="--label-column"):
        data.build(args_for(data_dir, dataset=str(csv), label_column="target"))
    with pytest.raises(UsageError, match="--feature-columns"):
        data.build(args_for(data_dir, dataset=str(csv), feature_columns="a,zzz"))
    with pytest.raises(UsageError, match="does not exist"):
        data.build(args_for(data_dir, dataset=str(tmp_path / "missing.csv")))


def test_user_imagefolder(tmp_path, data_dir):
    from PIL import Image

    for label in ("cat", "dog"):
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(6):
            Image.new("RGB", (20, 12), color=(i * 40, 0, 255 if label == "dog" else 0)).save(
                tmp_path / "train" / label / f"{i}.png")
    train, eval_, info = data.build(args_for(data_dir, dataset=str(tmp_path), image_size=16))
    assert info.kind == "image" and info.input_shape == (3, 16, 16) and info.num_classes == 2
    assert len(train) + len(eval_) == 12


def test_columns_read_what_datasets_formatting_reads(data_dir):
    """The loader's tensor columns give, batch for batch, what `dataset[indices]` gives: across Arrow chunks
    (digits and gpt are stored in two), for images and sequences, and for a select()ed view."""
    for task in ("digits", "gpt", "cancer"):
        train, _, _ = data.build(args_for(data_dir, task=task))
        columns = data.Columns(train)
        assert len(columns) == len(train) and columns.nbytes() > 0
        indices = [len(train) - 1, 0, 999, 1000, 5, 998] if len(train) > 1000 else [len(train) - 1, 0, 5, 3]
        batch, expected = columns.__getitems__(indices), train[indices]
        for name in ("inputs", "labels"):
            assert batch[name].dtype == expected[name].dtype and torch.equal(batch[name], expected[name])
    view = train.select([7, 3, 11])  # an indices mapping, not a table slice
    assert torch.equal(data.Columns(view).__getitems__([0, 2])["inputs"], train[[7, 11]]["inputs"])
    loader = data.loader(train, 8, data.ShardedSampler(train, seed=1), drop_last=True)
    first = next(iter(loader))
    order = data.epoch_order(len(train), 1, 0)[:8]
    assert torch.equal(first["labels"], train[order]["labels"]) and first["inputs"].shape == (8, 30)
