import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError

from common import checkpoint, models
from common.checkpoint import CheckpointError
from common.data import Info
from conftest import save_checkpoint

DIGITS = Info("digits", "image", (1, 8, 8), 10)


def trained(seed=0, optimizer_cls=torch.optim.SGD, steps=3):
    torch.manual_seed(seed)
    model = models.build(DIGITS)
    kwargs = {"lr": 0.1, "momentum": 0.9} if optimizer_cls is torch.optim.SGD else {"lr": 1e-3}
    opt = optimizer_cls(model.parameters(), **kwargs)
    for _ in range(steps):
        loss = model(torch.randn(4, 1, 8, 8)).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, opt


def assert_same_state(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


@pytest.mark.parametrize("optimizer_cls", [torch.optim.SGD, torch.optim.AdamW])
def test_round_trip_is_bitwise(tmp_path, optimizer_cls):
    model, opt = trained(optimizer_cls=optimizer_cls)
    path = save_checkpoint(tmp_path, model, opt, step=3, epoch=0, samples_in_epoch=96)
    fresh, fresh_opt = trained(seed=1, optimizer_cls=optimizer_cls, steps=1)
    state = checkpoint.load(path, fresh, fresh_opt)
    assert (state["step"], state["epoch"], state["samples_in_epoch"]) == (3, 0, 96)
    assert_same_state(model, fresh)
    sa, sb = opt.state_dict(), fresh_opt.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    for i in sa["state"]:
        for k, v in sa["state"][i].items():
            assert (
                torch.equal(v, sb["state"][i][k]) if torch.is_tensor(v) else v == sb["state"][i][k]
            )


def test_wrappers_are_unwrapped(tmp_path):
    model, opt = trained()
    bare = set(model.state_dict())
    for wrapped in (
        torch.nn.DataParallel(model),
        torch.compile(model),
        torch.nn.DataParallel(torch.compile(model)),
    ):
        assert set(checkpoint.gather(wrapped)[0]) == bare
    path = save_checkpoint(tmp_path, torch.nn.DataParallel(model), opt, 3, 0, 3)
    other, other_opt = trained(seed=5)
    # a DP checkpoint into a DP model
    checkpoint.load(path, torch.nn.DataParallel(other), other_opt)
    assert_same_state(model, other)


def test_keep_last_k_and_resume_auto_picks_newest(tmp_path):
    model, opt = trained()
    for step in (1, 2, 3, 4, 5):
        save_checkpoint(tmp_path, model, opt, step, 0, step, keep=2)
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == [
        "step-00000004",
        "step-00000005",
    ]
    assert checkpoint.restore("auto", tmp_path, *trained(seed=3), log=lambda *_: None)[:3] == (
        0,
        5,
        5,
    )


def test_crash_in_the_middle_of_a_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    model, opt = trained()
    save_checkpoint(tmp_path, model, opt, 1, 0, 1)
    real_rename = os.rename

    def crash(src, dst):  # the process dies after writing the files, before the commit point
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(os, "rename", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(tmp_path, model, opt, 2, 0, 2)
    monkeypatch.setattr(os, "rename", real_rename)
    # the debris is there
    assert any(p.name.startswith(".tmp-") for p in (tmp_path / "checkpoints").iterdir())
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["step-00000001"]
    assert checkpoint.restore("auto", tmp_path, *trained(seed=3), log=lambda *_: None)[1] == 1
    save_checkpoint(tmp_path, model, opt, 2, 0, 2)  # the next save clears the debris
    assert not any(p.name.startswith(".tmp-") for p in (tmp_path / "checkpoints").iterdir())


# what safetensors raises on a real full disk
@pytest.mark.parametrize(
    "error",
    [
        OSError(28, "No space left on device"),
        SafetensorError("Error while serializing: I/O error: No space left on device"),
    ],
    ids=["oserror", "safetensors-own-error"],
)
def test_write_error_mid_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch, error):
    model, opt = trained()
    save_checkpoint(tmp_path, model, opt, 1, 0, 1)
    real_save_file = checkpoint.save_file

    def disk_full(tensors, filename, metadata=None):  # half a file lands, then the disk is full
        real_save_file(tensors, filename, metadata=metadata)
        with open(filename, "r+b") as f:
            f.truncate(os.path.getsize(filename) // 2)
        raise error

    monkeypatch.setattr(checkpoint, "save_file", disk_full)
    with pytest.raises(CheckpointError) as e:
        save_checkpoint(tmp_path, model, opt, 2, 0, 2)
    monkeypatch.undo()
    message = str(e.value)
    assert (
        "\n" not in message and "No space left on device" in message and "step-00000002" in message
    )
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "step-00000001"
    ]  # no debris
    assert checkpoint.restore("auto", tmp_path, *trained(seed=3), log=lambda *_: None)[1] == 1


@pytest.mark.launch
def test_process_killed_between_writing_and_renaming(tmp_path):
    """A real SIGKILL at the commit point (not an exception): the next --resume auto takes the previous one."""
    script = f"""
import os, signal, sys, torch
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_checkpoint import trained
from common import checkpoint
from conftest import save_checkpoint
model, opt = trained()
save_checkpoint({str(tmp_path)!r}, model, opt, 1, 0, 1)
checkpoint.atomic.os.rename = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
save_checkpoint({str(tmp_path)!r}, model, opt, 2, 0, 2)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).parent.parent / "scripts", timeout=60
    )
    assert proc.returncode == -signal.SIGKILL
    debris = [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(".tmp-")]
    assert debris and (debris[0] / "state.json").exists()  # fully written, never committed
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["step-00000001"]
    assert checkpoint.restore("auto", tmp_path, *trained(seed=3), log=lambda *_: None)[1] == 1


def test_final_model_write_error_is_one_line(tmp_path, monkeypatch):
    model, _ = trained()
    monkeypatch.setattr(
        checkpoint, "save_file", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space"))
    )
    with pytest.raises(CheckpointError, match="could not write"):
        checkpoint.save_model(tmp_path / "model.safetensors", model)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "drop_state"])
def test_damaged_checkpoint_gives_one_line_error_and_auto_falls_back(tmp_path, damage):
    model, opt = trained()
    save_checkpoint(tmp_path, model, opt, 1, 0, 1)
    newest = save_checkpoint(tmp_path, model, opt, 2, 0, 2)
    file = newest / "model.safetensors"
    raw = file.read_bytes()
    if damage == "truncate":
        file.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        file.write_bytes(raw[:-10] + bytes([raw[-10] ^ 0xFF]) + raw[-9:])
    elif damage == "garbage":
        file.write_bytes(b"this is not a safetensors file")
    else:
        (newest / "state.json").unlink()
    other, other_opt = trained(seed=9)
    before = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(CheckpointError) as err:
        checkpoint.load(newest, other, other_opt)
    assert "\n" not in str(err.value) and str(newest) in str(err.value)
    # untouched on failure
    assert all(torch.equal(before[k], v) for k, v in other.state_dict().items())
    logs = []
    assert checkpoint.restore("auto", tmp_path, other, other_opt, log=logs.append)[1] == 1
    assert any("skipping" in line for line in logs)


def test_checkpoint_of_another_model_is_refused(tmp_path):
    model, opt = trained()
    path = save_checkpoint(tmp_path, model, opt, 1, 0, 1)
    mlp = models.build(Info("cancer", "tabular", (30,), 2))
    with pytest.raises(CheckpointError, match="another model"):
        checkpoint.load(path, mlp, torch.optim.SGD(mlp.parameters(), lr=0.1))
    wider = models.SmallCNN(1, 10, width=16)
    with pytest.raises(CheckpointError, match="shape"):
        checkpoint.load(path, wider)


def test_pickle_payload_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    model, opt = trained()
    path = save_checkpoint(tmp_path, model, opt, 1, 0, 1)
    evil = pickle.dumps({"weights": Payload()})
    (path / "model.safetensors").write_bytes(evil)
    state = json.loads((path / "state.json").read_text())
    # even with a valid hash
    state["sha256"]["model.safetensors"] = checkpoint.verify.sha256(path / "model.safetensors")
    (path / "state.json").write_text(json.dumps(state))
    with pytest.raises(CheckpointError):
        checkpoint.load(path, model, opt)
    with pytest.raises(CheckpointError):
        checkpoint.load_model(path / "model.safetensors", model)
    # what a torch.save checkpoint with a payload is
    torch.save({"model": Payload()}, tmp_path / "model.pt")
    with pytest.raises(CheckpointError, match="is a file.*never loaded"):
        checkpoint.load(tmp_path / "model.pt", model, opt)
    with pytest.raises(CheckpointError, match="not a readable safetensors"):
        checkpoint.load_model(tmp_path / "model.pt", model)
    assert not marker.exists()


def test_loads_onto_the_named_device_and_final_model_round_trip(tmp_path):
    model, opt = trained()
    checkpoint.save_model(tmp_path / "model.safetensors", torch.nn.DataParallel(model))
    other, _ = trained(seed=2)
    checkpoint.load_model(tmp_path / "model.safetensors", other)
    assert_same_state(model, other)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_tied_weights_can_be_saved(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3)
            self.out = torch.nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight

    m = Tied()
    checkpoint.save_model(tmp_path / "m.safetensors", m)
    n = Tied()
    checkpoint.load_model(tmp_path / "m.safetensors", n)
    assert torch.equal(m.emb.weight, n.emb.weight)


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: [s],
        lambda s: {k: v for k, v in s.items() if k != "sha256"},
        lambda s: {**s, "step": "14"},
        lambda s: {**s, "samples_in_epoch": -3},
        lambda s: {**s, "scaler": "garbage"},
        lambda s: {**s, "scaler": {"scale": -1.0, "growth_factor": 2.0}},
        lambda s: {**s, "scheduler": {"last_epoch": -5}},
        lambda s: {**s, "scheduler": {"last_epoch": 9}},
    ],
    ids=[
        "a-list",
        "no-sha256",
        "step-as-text",
        "negative-position",
        "scaler-garbage",
        "scaler-negative-scale",
        "scheduler-negative-step",
        "scheduler-at-another-step",
    ],
)
def test_a_malformed_state_json_is_one_line_and_auto_skips_it(tmp_path, edit):
    model, opt = trained()
    save_checkpoint(tmp_path, model, opt, 1, 0, 0)
    bad = save_checkpoint(tmp_path, model, opt, 2, 0, 0)
    state = json.loads((bad / "state.json").read_text())
    (bad / "state.json").write_text(json.dumps(edit(state)))
    with pytest.raises(CheckpointError, match="has no valid state.json") as e:
        checkpoint.load(bad, model, opt)
    assert "\n" not in str(e.value)
    # the older one
    assert checkpoint.restore("auto", tmp_path, *trained(seed=3), log=lambda *_: None)[1] == 1


def rewrite(path, name, edit_tensors=lambda t: t, edit_metadata=lambda m: m):
    """Hand-edit one safetensors file of a checkpoint and re-hash it, as a determined user would."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    file = path / name
    with safe_open(file, framework="pt") as f:
        metadata = f.metadata()
    save_file(edit_tensors(load_file(file)), file, metadata=edit_metadata(metadata))
    state = json.loads((path / "state.json").read_text())
    state["sha256"][name] = checkpoint.verify.sha256(file)
    (path / "state.json").write_text(json.dumps(state))


def _groups(edit):
    return lambda m: {**m, "param_groups": json.dumps(edit(json.loads(m["param_groups"])))}


@pytest.mark.parametrize(
    "name,tensors,metadata",
    [
        ("model.safetensors", lambda t: {k: v.long() for k, v in t.items()}, None),
        ("optimizer.safetensors", lambda t: {**t, "state.fc.weight.extra": torch.zeros(1)}, None),
        (
            "optimizer.safetensors",
            lambda t: {k: v[..., :1].contiguous() for k, v in t.items()},
            None,
        ),
        ("optimizer.safetensors", lambda t: {k: v.sum() for k, v in t.items()}, None),
        (
            "optimizer.safetensors",
            None,
            _groups(lambda g: [{k: v for k, v in g[0].items() if k != "params"}]),
        ),
        (
            "optimizer.safetensors",
            None,
            _groups(lambda g: [{**g[0], "params": g[0]["params"] + ["x"]}]),
        ),
        (
            "optimizer.safetensors",
            None,
            lambda m: {**m, "values": json.dumps({"conv1.weight.lr": [1]})},
        ),
    ],
    ids=[
        "int64-weights",
        "extra-optimizer-tensor",
        "momentum-of-the-wrong-shape",
        "momentum-as-a-scalar",
        "param-groups-without-params",
        "a-parameter-out-of-range",
        "a-list-as-a-value",
    ],
)
def test_a_hand_edited_checkpoint_is_refused_before_anything_changes(
    tmp_path, name, tensors, metadata
):
    """Issue 26: each of these trained with a cast weight or failed at the first step with a traceback. The
    checkpoint is checked against what this run's model and optimizer expect; the run's state stays as it was."""
    model, opt = trained()
    path = save_checkpoint(tmp_path, model, opt, 1, 0, 0)
    rewrite(path, name, tensors or (lambda t: t), metadata or (lambda m: m))
    other, other_opt = trained(seed=9)
    before = {k: v.clone() for k, v in other.state_dict().items()}
    momentum = [s["momentum_buffer"].clone() for s in other_opt.state.values()]
    with pytest.raises(CheckpointError, match="another model|another optimizer") as e:
        checkpoint.load(path, other, other_opt)
    assert "\n" not in str(e.value) and str(path) in str(e.value)
    assert all(torch.equal(before[k], v) for k, v in other.state_dict().items())
    after = [s["momentum_buffer"] for s in other_opt.state.values()]
    assert all(torch.equal(a, b) for a, b in zip(momentum, after, strict=True))


def test_a_checkpoint_removed_while_it_is_read_is_one_line(tmp_path, monkeypatch):
    """Issue 26: --resume <another run's step-N> while that run rotates it away gave FileNotFoundError."""
    model, opt = trained()
    path = save_checkpoint(tmp_path, model, opt, 1, 0, 0)
    real = checkpoint.verify.sha256

    def rotated_away(file):
        import shutil

        shutil.rmtree(path)  # the other run's rotation, between the listing and the read
        return real(file)

    monkeypatch.setattr(checkpoint.verify, "sha256", rotated_away)
    with pytest.raises(CheckpointError, match="could not be read.*another run may have removed it"):
        checkpoint.load(path, model, opt)


def test_changed_schedule_flags_on_resume_are_said_with_the_rates_jump(tmp_path):
    """Issue 26: a resume with another --lr-schedule, --warmup-steps or run length changed the rate without a
    word; it is now said, flag by flag, with the rate before and after. A warm-up as long as the run is refused."""
    import argparse

    from common import schedule
    from common.errors import UsageError

    def built(**flags):
        args = argparse.Namespace(
            **{
                "lr_schedule": "constant",
                "warmup_steps": 0,
                "max_steps": 10**9,
                "epochs": 4,
                **flags,
            }
        )
        model, opt = trained()
        return model, opt, torch.optim.lr_scheduler.LambdaLR(opt, schedule.lr_lambda(args, 10))

    model, opt, scheduler = built(warmup_steps=20)
    for _ in range(5):
        opt.step()
        scheduler.step()
    save_checkpoint(tmp_path, model, opt, 5, 0, 0, scheduler=scheduler)
    model, opt, scheduler = built(lr_schedule="cosine", epochs=6)
    logs = []
    checkpoint.restore("auto", tmp_path, model, opt, scheduler=scheduler, log=logs.append)
    assert "--lr-schedule cosine (the checkpoint had constant)" in logs[0]
    assert "--warmup-steps 0 (the checkpoint had 20)" in logs[0]
    assert "run length (--epochs/--max-steps) 60 (the checkpoint had 40)" in logs[0]
    assert "the rate at step 5 goes 0.025 -> 0.09" in logs[0], logs
    with pytest.raises(UsageError, match="--warmup-steps 40 is not shorter than the run \\(40 "):
        built(warmup_steps=40)
