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
    monkeypatch.setattr(data.tasks, "prepare", lambda *a: calls.append(a))
    train, _, _ = data.build(args_for(data_dir, task="cancer"))
    assert calls == [] and len(train) == 455


@pytest.mark.parametrize("n,seed", [(455, 0), (1437, 7), (10, 3)])
def test_rung1_shuffle_is_distributed_sampler_at_world_size_1(n, seed):
    """EpochShuffle (rung 1's shuffle=True) is DistributedSampler's order at world size 1, epoch by epoch, and
    moves to the next epoch by itself after each pass, as DataLoader(shuffle=True) does."""
    dataset = list(range(n))
    ours = data.EpochShuffle(dataset, seed=seed)
    theirs = DistributedSampler(
        dataset, num_replicas=1, rank=0, shuffle=True, seed=seed, drop_last=True
    )
    for epoch in (0, 1, 2):
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)  # no set_epoch on ours
    ours.set_epoch(7)
    theirs.set_epoch(7)
    assert list(ours) == list(theirs)


def test_epochs_have_different_orders():
    s = data.EpochShuffle(list(range(100)), seed=0)
    first, second = list(s), list(s)
    assert second != first and sorted(second) == sorted(first)


def test_shuffle_and_sampler_exclude_each_other_as_in_torch():
    dataset = torch.utils.data.TensorDataset(torch.arange(10))
    with pytest.raises(ValueError, match="mutually exclusive"):
        data.loader(
            dataset, 2, shuffle=True, sampler=DistributedSampler(dataset, num_replicas=1, rank=0)
        )


def test_seed_tutorial_batch_count():
    """455 samples, batch 8, 2 processes, drop_last: 28 batches per process, 448 samples per epoch."""
    dataset = torch.utils.data.TensorDataset(torch.arange(455))
    seen = []
    for rank in range(2):
        loader = data.loader(
            dataset,
            8,
            sampler=DistributedSampler(dataset, 2, rank, seed=0, drop_last=True),
            drop_last=True,
        )
        batches = list(loader)
        assert len(loader) == len(batches) == 28
        seen += [i for b in batches for i in b[0].tolist()]
    assert len(seen) == 448 and len(set(seen)) == 448  # no sample twice


def test_global_batches_are_the_same_at_every_world_size(data_dir):
    """Rung 1 at batch 2B, W=2 DistributedSampler processes at batch B (rungs 3-5), and W=2 processes of
    accelerate's prepare(split_batches=True) over a loader of 2B (rung 6) see the same samples at every
    step."""
    from accelerate.data_loader import BatchSamplerShard

    train, _, _ = data.build(args_for(data_dir, task="cancer"))
    one = data.loader(train, 16, shuffle=True, seed=3, drop_last=True)
    shards = [
        data.loader(
            train,
            8,
            sampler=DistributedSampler(train, 2, r, seed=3, drop_last=True),
            drop_last=True,
        )
        for r in range(2)
    ]
    halves = [data.loader(train, 16, shuffle=True, seed=3, drop_last=True) for _ in range(2)]
    accelerate_style = [None, None]
    for dl in (one, *shards):
        assert data.start_at(dl, 2, 0) == (2, 0)
    for r, h in enumerate(halves):
        data.start_at(h, 2, 0)
        accelerate_style[r] = [
            h.dataset.__getitems__(b)
            for b in BatchSamplerShard(h.batch_sampler, 2, r, split_batches=True)
        ]
    steps = list(zip(one, *shards, *accelerate_style))
    assert len(steps) == 28 == len(accelerate_style[0])
    key = lambda x: sorted(tuple(r.tolist()) for r in x)  # noqa: E731
    for full, a, b, c, d in steps:
        assert key(full["inputs"]) == key(torch.cat([a["inputs"], b["inputs"]]))
        assert key(full["inputs"]) == key(torch.cat([c["inputs"], d["inputs"]]))


def test_start_at_resumes_mid_epoch_at_any_batch_size_or_refuses():
    """The position is in samples: a checkpoint 12 samples into epoch 1 continues at the next unseen sample with
    batches of 4 (batch 3) or 6 (batch 2) or 2 processes of 2, rolls over to the next epoch when less than one
    batch is left, and is refused in one line where it falls inside one of this run's batches."""
    dataset = torch.utils.data.TensorDataset(torch.arange(40))
    loader = data.loader(dataset, 4, shuffle=True, seed=0, drop_last=True)
    epochs = [[b[0].tolist() for b in loader] for _ in range(3)]
    assert epochs[0] != epochs[1] != epochs[2]
    assert data.start_at(loader, 1, 12) == (1, 3)
    assert [b[0].tolist() for b in loader] == epochs[1][3:]
    assert [b[0].tolist() for b in loader] == epochs[2]  # the skip applies to one pass only
    order = data.epoch_order(40, 0, 1)
    six = data.loader(dataset, 6, shuffle=True, seed=0, drop_last=True)
    assert data.start_at(six, 1, 12) == (1, 2)
    assert [i for b in six for i in b[0].tolist()] == order[
        12:36
    ]  # 6 whole batches of 6 per epoch: 12..35
    shards = [
        data.loader(
            dataset,
            2,
            sampler=DistributedSampler(dataset, 2, r, seed=0, drop_last=True),
            drop_last=True,
        )
        for r in range(2)
    ]
    assert [data.start_at(s, 1, 12) for s in shards] == [(1, 3), (1, 3)]
    assert sorted(i for s in shards for b in s for i in b[0].tolist()) == sorted(order[12:])
    assert data.start_at(loader, 1, 40) == (2, 0)  # the epoch is over: the next one, from its start
    assert [b[0].tolist() for b in loader] == epochs[2]
    with pytest.raises(
        UsageError,
        match="12 samples into epoch 1, which is not a whole number of this run's "
        "optimizer steps of 8 samples",
    ):
        data.start_at(data.loader(dataset, 8, shuffle=True, drop_last=True), 1, 12)


def test_eval_shards_cover_every_sample_once(data_dir):
    _, eval_, _ = data.build(args_for(data_dir, task="cancer"))
    for world_size in (1, 2, 3, 4):
        shards = [eval_.shard(world_size, r, contiguous=True) for r in range(world_size)]
        labels = torch.cat([b["labels"] for shard in shards for b in data.loader(shard, 16)])
        assert torch.equal(labels, eval_[:]["labels"])


def test_batch_larger_than_dataset_is_a_usage_error():
    dataset = torch.utils.data.TensorDataset(torch.arange(10))
    with pytest.raises(UsageError, match="lower --batch-size"):
        data.loader(dataset, 16, shuffle=True, drop_last=True)


def test_user_csv_and_errors(tmp_path, data_dir):
    rows = ["a,b,c,label"] + [
        f"{i},{i % 7},{(i * 3) % 5},{'yes' if i % 2 else 'no'}" for i in range(50)
    ]
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
                tmp_path / "train" / label / f"{i}.png"
            )
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
        indices = (
            [len(train) - 1, 0, 999, 1000, 5, 998]
            if len(train) > 1000
            else [len(train) - 1, 0, 5, 3]
        )
        batch, expected = columns.__getitems__(indices), train[indices]
        for name in ("inputs", "labels"):
            assert batch[name].dtype == expected[name].dtype and torch.equal(
                batch[name], expected[name]
            )
    view = train.select([7, 3, 11])  # an indices mapping, not a table slice
    assert torch.equal(data.Columns(view).__getitems__([0, 2])["inputs"], train[[7, 11]]["inputs"])
    loader = data.loader(train, 8, shuffle=True, seed=1, drop_last=True)
    first = next(iter(loader))
    order = data.epoch_order(len(train), 1, 0)[:8]
    assert torch.equal(first["labels"], train[order]["labels"]) and first["inputs"].shape == (8, 30)


def test_an_epoch_is_whole_optimizer_steps_of_micro_batches():
    """With accumulation the loader yields micro-batches, and the epoch's ragged tail that would not fill an
    optimizer step is dropped (as drop_last drops a ragged batch): 1 process x 8 x accumulation 4 sees the
    same 32 samples per step as 1 x 32, in the same order; a resume skips whole steps."""
    dataset = torch.utils.data.TensorDataset(torch.arange(100))
    whole = data.loader(dataset, 32, shuffle=True, seed=1, drop_last=True)
    micro = data.loader(dataset, 8, shuffle=True, seed=1, drop_last=True, accum=4)
    assert len(whole) == 3 and len(micro) == 12  # 100 // 8 = 12 micro-batches: 3 steps of 4
    flat = [i for b in micro for i in b[0].tolist()]
    assert flat == [i for b in whole for i in b[0].tolist()]
    assert len(data.loader(dataset, 8, shuffle=True, drop_last=True, accum=5)) == 10  # 12 -> 2 x 5
    assert data.start_at(micro, 0, 32) == (0, 1)  # one step (32 samples) in: skip 4 micro-batches
    assert [i for b in micro for i in b[0].tolist()] == flat[32:]
    with pytest.raises(UsageError, match="optimizer steps of 32 samples"):
        data.start_at(micro, 0, 8)
