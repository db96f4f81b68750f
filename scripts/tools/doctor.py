"""Find the silent mistakes of distributed PyTorch training in any Python script: a static check, nothing runs.

    ddp-doctor train.py [more.py | a directory ...]    # or: python scripts/tools/doctor.py ...
    ddp-doctor --explain DDL105
    ddp-doctor --diff train.py     # the mechanical fixes, as a diff; --fix writes them
    ddp-doctor --preview train.py  # the preview rules too: more of the mistakes, and more false findings
    ddp-doctor --select DDL1 --ignore DDL113 --output-format sarif --statistics src/

One finding a line, as flake8 and ruff print them, so editors and CI read them:
`path:line:col: CODE message (guide)`; --output-format json, github (workflow annotations) or sarif (2.1.0, for
code scanning) instead. By default only the rules that were right at least 0.8 of the time on public code doctor
had never seen run; the others are preview rules (--explain marks them, and says each rule's measured
precision), run with --preview or when --select names their exact code. A `[tool.ddp-doctor]` section (select,
ignore, preview) in the checked project's nearest pyproject.toml sets the codes; --select, --ignore and
--preview replace its values. `# noqa: CODE` on a line silences that exact code there. Exit code 0 when nothing
was found, 1 when something was, 2 on bad input (a file that cannot be read or parsed, a bad option or section),
with one `error:` line each. The rules are listed by --explain without a code; each names the fix and the
section of guides/your-script.md that shows it. The checker reads the code as written: it knows names
(`dist.barrier`, `accelerator.prepare`, `DistributedSampler`), each read as its import makes it (an alias is
resolved), not types, so a helper that hides a collective behind another name is not seen.
"""

import argparse
import ast
import builtins
import copy
import functools
import io
import itertools
import os
import re
import stat
import sys
import tempfile
import tokenize
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import doctor_output

__version__ = "0.2.0"

GUIDE = "guides/your-script.md"
COLLECTIVES = {
    "all_reduce",
    "all_gather",
    "all_gather_object",
    "all_gather_into_tensor",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "all_to_all",
    "all_to_all_single",
    "monitored_barrier",
    "gather_for_metrics",
    "wait_for_everyone",
    "pad_across_processes",
}
# a file name made from the rank is one file per process: nothing is overwritten
# (TORCHELASTIC_ERROR_FILE: torchrun hands each worker a file of its own)
# a name no other process makes: its rank, or a uuid / pid (vall-e's `batch-{uuid4()}.pt`)
PER_RANK = re.compile(
    # accelerator.device: each process's own GPU (MuseTalk's sample images, corpus 28)
    r"rank|process_index|gpu_id|worker_id|TORCHELASTIC_ERROR_FILE|uuid|getpid|accelerator\.device"
    # each process's own clock to the microsecond (ERNIE's `"loss.{}".format(datetime.datetime.now())`, corpus
    # 18); not strftime's seconds, which the ranks share
    r"|datetime\.now\(\)(?!\.strftime)",
    re.I,
)
# `gpu_id == 0`: pytorch/examples' ddp-tutorial-series names the local rank so
RANK_WORDS = (
    "rank",
    "is_main",
    "main_process",
    "master",
    "local_main",
    "gpu_id",
    "gpu_index",  # monosdf's `self.GPU_INDEX == 0`, its local rank (corpus 40)
    "primary",  # timm's utils.is_primary(args)
    "global_zero",  # Lightning's trainer.is_global_zero
    "is_root",  # Horovod/MPI style: distr_backend.is_root_worker(), is_root
    "root_worker",
    "world_process_zero",  # transformers' Trainer: self.is_world_process_zero()
)
WRAPPERS = {"DistributedDataParallel", "DDP", "DataParallel", "FullyShardedDataParallel", "FSDP"}
# what a test asks of the file system (`os.path.exists(p)`, `path.is_file()`): the same answer on every rank
PATH_TESTS = {"exists", "isfile", "isdir", "is_file", "is_dir", "lexists"}
# calls that start the script's own processes, one a rank (mp.spawn, torch.multiprocessing.Process)
LAUNCHERS = ("spawn", "start_processes", "Process")
# the commands that start processes and set RANK and WORLD_SIZE in their environment
ENV_LAUNCHERS = r"torch\.distributed\.(launch|run)|torchrun|accelerate\s+launch|deepspeed"
# mistakes of a distributed run's data, writes and evaluation: none where only a one-process run goes
RUN_SHAPED = {"DDL105", "DDL107", "DDL127", "DDL128", "DDL132", "DDL137", "DDL139", "DDL175"}
# what only goes wrong between processes: quiet where every documented command runs the file as one process
# (not DDL105: one process without set_epoch repeats its order too, as blox-pal's did, corpus 37)
BETWEEN_PROCESSES = (RUN_SHAPED - {"DDL105"}) | {
    "DDL124",
    "DDL134",
    "DDL142",
    "DDL152",
    "DDL157",
    "DDL159",
    "DDL164",
}
BARRIERS = {"barrier", "monitored_barrier", "wait_for_everyone"}
# `val` alone or run together with what it names (`valset`, `valloader`: Depth-Anything-V2), not `interval`, `value`
# what a test reads to tell a distributed run from one process (`not args.distributed`, `world_size == 1`)
DISTRIBUTION_WORDS = re.compile(
    r"distributed|is_initialized|world_size|ddp|parallel|multi_?gpu|gpus|num_processes|nprocs", re.I
)
EVAL_WORDS = re.compile(
    r"eval|test|valid|predict|(?<![a-z])val(?:set|ds|data|dataset|loader|sampler)?(?![a-z])", re.I
)


def names_eval_only(text):
    """Whether a loader's or dataset's name says evaluation (val, test, eval) and not training."""
    return bool(EVAL_WORDS.search(text)) and not re.search(r"train", text, re.I)


NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)

RULES = {
    "DDL101": (
        "deprecated launcher: torch.distributed.launch and its --local_rank argument",
        "launch with torchrun and read LOCAL_RANK from the environment",
        "1-launch-with-torchrun",
        "torch.distributed.launch is deprecated; torchrun replaces it and passes LOCAL_RANK (and RANK, "
        "WORLD_SIZE, ...) in the environment instead of a --local_rank argument. A script that parses "
        "--local_rank breaks under torchrun (the argument never comes) or gets it twice.",
    ),
    "DDL102": (
        "deprecated mixed precision: torch.cuda.amp or NVIDIA APEX amp",
        "use torch.amp.autocast(device_type) and torch.amp.GradScaler(device_type)",
        "10-mixed-precision",
        "torch.cuda.amp.autocast/GradScaler are deprecated spellings of torch.amp.*; APEX's "
        "amp.initialize(opt_level=...) is unmaintained and its O2 casts the weights themselves. torch.amp "
        "keeps fp32 weights and works with DDP, FSDP and torch.compile.",
    ),
    "DDL103": (
        "nn.DataParallel",
        "use DistributedDataParallel, one process per GPU",
        "5-wrap-the-model-in-ddp",
        "DataParallel runs every GPU from one process through Python threads, copies the model to every "
        "GPU at every step and gathers all outputs on GPU 0. DistributedDataParallel has none of these "
        "costs and works across machines.",
    ),
    "DDL104": (
        "DataLoader with both shuffle=True and a sampler",
        "drop shuffle=True: DistributedSampler shuffles (seed + set_epoch)",
        "4-shard-the-training-data",
        "DataLoader raises 'sampler option is mutually exclusive with shuffle'. DistributedSampler(shuffle="
        "True) already shuffles, the same permutation on every rank, each rank taking its share.",
    ),
    "DDL105": (
        "DistributedSampler without set_epoch",
        "call sampler.set_epoch(epoch) at the start of every epoch",
        "4-shard-the-training-data",
        "DistributedSampler shuffles with seed + epoch and never advances the epoch itself: without "
        "set_epoch every epoch repeats the first one's order, silently.",
    ),
    "DDL106": (
        "saving a wrapped model's state_dict()",
        "save model.module.state_dict() (DDP) or accelerator.unwrap_model(model).state_dict()",
        "11-save-from-rank-0-without-the-module-prefix",
        "A DDP or DataParallel model's state_dict() names every tensor 'module.<name>': the file then loads "
        "into the wrapped model only, not into the plain model of your inference code.",
    ),
    "DDL107": (
        "one file written on every rank (torch.save, save_pretrained, to_csv, json.dump), or once per node",
        "write under `if rank == 0:` (or accelerator.is_main_process), not `rank % ngpus_per_node == 0`",
        "11-save-from-rank-0-without-the-module-prefix",
        "Every process runs the same code: without a guard, N processes write the same file at once (a "
        "torn file on a shared disk) or N copies. A library's save is no different (a model's "
        "save_pretrained without is_main_process=, a DataFrame's to_csv, json.dump). `rank % ngpus_per_node "
        "== 0` picks one process on every node: as soon as two nodes share a file system they write the "
        "same path at once. A file name made from the rank (one file per process) is not reported.",
    ),
    "DDL108": (
        "a collective inside a block only some ranks enter",
        "call it on every rank: move it out of the rank check",
        "7-the-loss-you-print-and-the-eval-you-report",
        "A collective (all_reduce, barrier, gather, wait_for_everyone, gather_for_metrics, ...) completes "
        "only when every rank calls it. Called under `if rank == 0:`, rank 0 waits forever for the others "
        "(or until the timeout).",
    ),
    "DDL109": (
        "torch.load with weights_only=False",
        "drop weights_only=False (the default since torch 2.6 is True); save plain data (vars(args), not "
        "the Namespace) or allow-list a class with torch.serialization.safe_globals",
        "12-load-safely",
        "With weights_only=False torch.load unpickles: a checkpoint from elsewhere can run code when it is "
        "loaded. Since torch 2.6 the default is weights_only=True, which loads tensors and plain containers "
        "only; a checkpoint that holds an argparse.Namespace then fails to load: store vars(args) instead, or "
        "load it inside `with torch.serialization.safe_globals([argparse.Namespace]):`. (TorchFix: TOR102.)",
    ),
    "DDL132": (
        "torch.load without map_location on every rank of a DDP script",
        'pass map_location=device (this process\'s device) or map_location="cpu"',
        "12-load-safely",
        "A checkpoint saved during GPU training holds tensors tagged with the device that saved them, cuda:0 "
        "for rank 0's save. Without map_location every process loads them back onto that device: N copies on "
        "GPU 0, memory it needs for its own process (an out-of-memory error at resume on a full GPU), and "
        "tensors on another process's device until something moves them.",
    ),
    "DDL133": (
        "init_process_group's failure caught and the run carried on as one process",
        "let the error end the run (re-raise it after logging), or fall back only where no launcher set WORLD_SIZE",
        "2-join-the-process-group",
        "A process group that fails to form (a wrong MASTER_ADDR, a port in use, a NCCL error) then raises in "
        "every process. Caught and turned into world size 1 and rank 0, each process goes on as a whole run of "
        "its own: N unconnected copies train on the full data, each believes it is the main process, and all "
        "write the same checkpoint and logs. The launcher reports success.",
    ),
    "DDL134": (
        "a batch skipped, the loop left or the run ended on a condition one process decides alone",
        "all_reduce the condition first (every rank skips or none does), or zero the loss and step",
        "17-decisions-driven-by-a-metric",
        "Under DDP every backward joins an all-reduce of the gradients. A process that skips its batch on its own "
        "non-finite loss (`if torch.isnan(loss): continue`) misses that all-reduce while the others wait in it: "
        "the job hangs until NCCL's timeout, or the next batch's gradients are averaged with this one's. Agree "
        "first: all_reduce the flag (MAX) so that every process skips together.",
    ),
    "DDL135": (
        "an optimizer or scheduler stepped under a rank check in a DDP script",
        "step on every rank: each process holds its own optimizer and scheduler",
        "9-lr-schedulers",
        "Each DDP process holds a full copy of the optimizer and the scheduler. Stepped on rank 0 only, rank 0's "
        "weights or learning rate move and the others' stay: the replicas drift apart silently (DDP only "
        "averages gradients, it never re-syncs the weights).",
    ),
    "DDL136": (
        "the forward run through the DDP wrapper's .module (or accelerator.unwrap_model) for a backward",
        "call the wrapped model itself (put the loss in its forward if a method computes it)",
        "5-wrap-the-model-in-ddp",
        "DDP arms its gradient all-reduce in its own forward. A forward through `model.module` (or its "
        "sub-modules, or a method such as `model.module.get_logits_loss(...)`, or Accelerate's "
        "`accelerator.unwrap_model(model)`), in the function that calls backward or in one whose result it "
        "takes, skips it: the backward then "
        "all-reduces nothing and every process trains its own model (measured: torch 2.13 over gloo, "
        "gradients equal across ranks through the wrapper, different through .module).",
    ),
    "DDL137": (
        "a folder created with os.makedirs or Path.mkdir (no exist_ok=True) or os.mkdir on every rank",
        "os.makedirs(path, exist_ok=True), or create it on rank 0 before a barrier",
        "14-a-file-one-rank-writes-and-the-others-read",
        "`if not os.path.exists(d): os.makedirs(d)` run by every process is a race: two processes see no folder, "
        "both create it, and the second raises FileExistsError at start-up, on some launches and not others.",
    ),
    "DDL138": (
        "accelerate's even_batches turned off for training",
        "keep even_batches=True for training (or make every rank's batch count equal: drop_last, a sampler)",
        "c-eval-accumulation-saving",
        "With even_batches=False, Accelerate gives processes different numbers of batches when the count does "
        "not divide. Under DDP each backward is a collective: the process with one more batch waits in an "
        "all-reduce nobody else joins, and its barrier meets a pending all-reduce. Uneven inputs are for "
        "evaluation, or for a DDP join() context.",
    ),
    "DDL139": (
        "a dataset downloaded (download=True) by every rank at once",
        "download on rank 0 first (`if rank == 0:` then a barrier, or accelerator.main_process_first())",
        "14-a-file-one-rank-writes-and-the-others-read",
        "Every process that builds `CIFAR10(root, download=True)` checks for the archive, finds it missing or "
        "half written, and downloads and extracts into the same files as the others: a torn archive, a "
        "checksum error, or a process that reads what another is still writing.",
    ),
    "DDL140": (
        "a folder removed (shutil.rmtree) on every rank",
        "remove it on rank 0 alone, then a barrier before any rank writes into it",
        "14-a-file-one-rank-writes-and-the-others-read",
        "`shutil.rmtree(save_dir)` at start-up in every process deletes what a quicker process has already "
        "created or written there: a FileNotFoundError in one process, a missing file or log in another, on "
        "some launches and not others.",
    ),
    "DDL141": (
        "the world size taken from the GPU count (torch.cuda.device_count()) or a flag's default",
        "let init_process_group() read WORLD_SIZE from the launcher, and ask dist.get_world_size() after it",
        "2-join-the-process-group",
        "Under a launcher (torchrun, torch.distributed.launch, srun) the world size is the number of processes "
        "it started on every machine, not this machine's GPU count: with 2 nodes, or fewer processes than "
        "GPUs, `init_process_group(world_size=torch.cuda.device_count())` waits for ranks that never come, "
        "and a sampler with `num_replicas=` the GPU count gives each rank the wrong share.",
    ),
    "DDL142": (
        "every rank seeded alike in a script with random augmentations",
        "seed once for the weights, then per rank (seed + rank) for what should differ",
        "3-seeds-the-same-initial-weights-different-randomness",
        "`torch.manual_seed(SEED)` (or numpy's, random's, accelerate's set_seed) with the same value on every "
        "rank, and no per-rank seed after it, gives every process the same random stream: the DataLoader "
        "workers' seeds come from it, so the k-th sample of every rank gets the same crop, flip and "
        "augmentation policy, and the same dropout masks (measured: identical masks on two ranks).",
    ),
    "DDL143": (
        "CUDA_VISIBLE_DEVICES set to one GPU in a script that starts a process per GPU",
        "leave CUDA_VISIBLE_DEVICES to the launcher (or the user), and index the GPU with LOCAL_RANK",
        "2-join-the-process-group",
        "`os.environ['CUDA_VISIBLE_DEVICES'] = '0'` in the script itself runs in every process torchrun starts: "
        "each then sees one GPU, so `set_device(local_rank)` fails with an invalid device ordinal on every "
        "process but the first, or all of them share GPU 0.",
    ),
    "DDL144": (
        "a name bound on the main process alone and read on every rank",
        "bind it on every rank (`writer = SummaryWriter(...) if rank == 0 else None`) and read it under the "
        "same check, or move the read under it",
        "8-per-batch-logging",
        "`if rank == 0: writer = SummaryWriter(...)` then `writer.add_scalar(...)` outside the check: the "
        "other processes never bound the name, so they stop at the read with UnboundLocalError (NameError at "
        "module level), often at the first evaluation, hours in, while rank 0 waits for them in a collective.",
    ),
    "DDL145": (
        "a model wrapped in DistributedDataParallel by hand, then given to accelerator.prepare",
        "give prepare() the bare model: it wraps it in DDP itself",
        "a-accelerator-prepare-and-backward",
        "Under `accelerate launch` on several GPUs, prepare() wraps the model in DistributedDataParallel "
        "whatever it is given: a model already wrapped gets two reducers on the same parameters, so every "
        "backward all-reduces the gradients twice, and `model.module` is the inner wrapper (a `module.` prefix "
        "left in every checkpoint).",
    ),
    "DDL146": (
        "whether to run distributed decided by the GPU count (torch.cuda.device_count())",
        "decide by what the launcher set: int(os.environ.get('WORLD_SIZE', 1)) > 1",
        "2-join-the-process-group",
        "The GPU count says what the machine holds, not how the script was started: `python train.py` on a "
        "machine with 4 GPUs joins a process group no launcher set up (no RANK, no WORLD_SIZE: it fails), and "
        "under a launcher that gives each process one visible GPU (a cluster's per-task CUDA_VISIBLE_DEVICES) "
        "the model is never wrapped: every rank trains its own copy.",
    ),
    "DDL147": (
        "a process group made (dist.new_group) on every call of a function run in a loop",
        "make the group once, after init_process_group, and hand it to the function",
        "2-join-the-process-group",
        "Every `dist.new_group(...)` builds a new communicator on every rank (for NCCL, GPU memory and a "
        "rendezvous through the store): one made inside an evaluation that runs every few thousand steps "
        "adds one more each time, none freed for the life of the run, and a rank that skips one call makes "
        "every later group hang.",
    ),
    "DDL148": (
        "a training DataLoader never given to accelerator.prepare",
        "prepare it with the model and optimizer: model, optimizer, loader = accelerator.prepare(model, "
        "optimizer, loader), and iterate what prepare returns",
        "a-accelerator-prepare-and-backward",
        "Under `accelerate launch`, prepare() is what shards a DataLoader: one that is never prepared (or whose "
        "prepared copy is thrown away) hands every process the whole dataset in its own order, so an epoch is "
        "N epochs' worth of samples, every rank steps on the same data, and the step count assumed for the "
        "schedule is N times too small.",
    ),
    "DDL149": (
        "seeds set in the process that calls mp.spawn, not in the spawned workers",
        "seed inside the worker function (seed + rank for what should differ between ranks), and set "
        "cudnn.deterministic there too",
        "3-seeds-the-same-initial-weights-different-randomness",
        "mp.spawn starts each worker as a fresh interpreter that imports the script and calls the worker "
        "function: torch's, numpy's and random's streams and the cudnn flags set in the parent before the "
        "spawn are not inherited, so a run given --seed is neither seeded nor deterministic, unlike the same "
        "script run as one process.",
    ),
    "DDL150": (
        'a model or tensor put on the default GPU (.cuda(), "cuda") in a DDP script that never calls '
        "torch.cuda.set_device",
        "call torch.cuda.set_device(local_rank) before the first CUDA call, or give every .cuda()/.to() its "
        "index: .cuda(local_rank), torch.device('cuda', local_rank)",
        "5-wrap-the-model-in-ddp",
        "Every process of a run starts with cuda:0 as its current device: `.cuda()` with no index and "
        "`torch.device('cuda')` mean GPU 0 on every rank unless `torch.cuda.set_device` moved it. The "
        "replicas then share one GPU (out of memory, or DDP refusing a module on another device than its "
        "device_ids), and each process opens a CUDA context on GPU 0 besides its own.",
    ),
    "DDL151": (
        "a collective called on every path of a script that also runs as one process",
        "call it only when distributed (if dist.is_initialized(): ...), or join a group of one in the "
        "one-process run",
        "2-join-the-process-group",
        "A script that joins the process group only when launched distributed (`if args.local_rank != -1:`, "
        "an init helper that returns early) still calls `dist.barrier()` or `dist.all_reduce(...)` with no "
        'such check: a plain `python train.py` run trains, then dies at that line with "Default process '
        "group has not been initialized\" (at the first evaluation, or after the first epoch's save).",
    ),
    "DDL152": (
        "noise drawn in the training step of a script that seeds every rank alike",
        "seed per rank (seed + rank, or accelerate's set_seed(seed, device_specific=True)) after the "
        "weights are made",
        "3-seeds-the-same-initial-weights-different-randomness",
        "`torch.manual_seed(SEED)` (or accelerate's set_seed) with the same value on every rank gives every "
        "process the same random stream, so the noise, timesteps or masks each draws in its training step "
        "(`torch.randn_like(x)`, `torch.randint(0, T, ...)`) are the same on every rank: a diffusion or "
        "flow-matching step pairs world-size different batches with one draw, where one process would draw "
        "world-size times as many.",
    ),
    "DDL153": (
        "a plain GradScaler with FullyShardedDataParallel",
        "use torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler (or bf16, which needs no scaler)",
        "21-fsdp-its-scaler-and-its-state-dict",
        "Under FullyShardedDataParallel each process holds a shard of the gradients, and GradScaler checks "
        "only its own shard for inf/NaN: after an fp16 overflow in one shard, that process skips its step "
        "and lowers its scale while the others step, so the shards of one model are updated a different "
        "number of times and the scales part. ShardedGradScaler all-reduces the check, so every process "
        "skips or steps together.",
    ),
    "DDL154": (
        "the state_dict() of the module inside FullyShardedDataParallel",
        "take model.state_dict() on every rank under FSDP.state_dict_type(model, "
        "StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True, rank0_only=True)), or "
        "get_model_state_dict(model) from torch.distributed.checkpoint.state_dict, then save on rank 0",
        "21-fsdp-its-scaler-and-its-state-dict",
        "`model.module` of a FullyShardedDataParallel model is the module inside it, whose parameters FSDP "
        "has flattened into its own sharded FlatParameter: their state_dict() bypasses FSDP's state-dict "
        "hooks and holds each process's shard (or freed, empty views), not the model's weights, and a "
        "load with strict=False hides it. FSDP's own state_dict() (a collective: every rank calls it) gives "
        "the full weights with the plain names.",
    ),
    "DDL155": (
        "a scheduler sized in optimizer steps and given to accelerator.prepare, which steps it once per process",
        "size it in single-process steps (num_training_steps and the warmup times accelerator.num_processes, "
        "as diffusers' scripts do), or keep it out of prepare()",
        "b-schedulers-with-prepare",
        "A prepared scheduler steps num_processes times at each optimizer step (split_batches=False), so one "
        "sized max_train_steps (times the accumulation, as older diffusers scripts did) ends 1/N of the way "
        "through: a linear decay over 10 optimizer steps reached 0 after 5 at 2 processes and stayed there "
        "(measured).",
    ),
    "DDL156": (
        "a DDP training loop over a DataLoader that shuffles the whole dataset (shuffle=True or a "
        "RandomSampler), with no DistributedSampler",
        "shard it: DataLoader(dataset, sampler=DistributedSampler(dataset), ...) and set_epoch(epoch) each epoch",
        "4-shard-the-training-data",
        "Without a DistributedSampler every rank iterates the whole dataset in its own order: an epoch is "
        "world-size passes over the data, each sample is trained on world-size times an epoch, and the run "
        "is not the one-process run with the same global batch.",
    ),
    "DDL157": (
        "the DDP-wrapped model run (its forward) by some ranks alone, an evaluation under `if rank == 0:`",
        "evaluate through model.module on that rank (no collective), or on every rank over a shard of the "
        "evaluation set and reduce the sums",
        "7-the-loss-you-print-and-the-eval-you-report",
        "A DDP forward broadcasts rank 0's buffers (BatchNorm's running statistics, any registered buffer; "
        "broadcast_buffers=True by default) after a training step: a collective the other ranks never join. "
        "On gloo, a model with one BatchNorm evaluated on rank 0 alone between training steps aborted both "
        "processes (measured); on NCCL the collectives pair up wrongly or hang. Without buffers the other "
        "ranks still wait in their next collective for the whole evaluation.",
    ),
    "DDL158": (
        "torch.nn.utils.clip_grad_norm_ over a FullyShardedDataParallel model's parameters, which clips each "
        "rank's shard by that shard's norm",
        "call the wrapper's own model.clip_grad_norm_(max_norm) (FSDP1), or shard with fully_shard (FSDP2), "
        "whose gradients torch.nn.utils reads whole",
        "21-fsdp-its-scaler-and-its-state-dict",
        "FSDP1 keeps a shard of each gradient on each rank: torch.nn.utils computes the norm of the local shard "
        "and scales it by its own factor, so the ranks clip one gradient differently and no rank by its real "
        "norm. At 2 processes on gloo the shards' norms were 0.756 and 1.422, the gradient's 1.611, which "
        "FSDP's clip_grad_norm_ gave on both ranks (measured).",
    ),
    "DDL159": (
        "an evaluation every rank of a DDP script runs over the whole evaluation set (a DataLoader with no "
        "DistributedSampler)",
        "shard it (a Subset per rank, or DistributedSampler(shuffle=False) with its padding left out of the "
        "counts) and all-reduce the sums and counts, or evaluate on rank 0 alone through model.module",
        "7-the-loss-you-print-and-the-eval-you-report",
        "Without a sampler that shards it, each rank evaluates every sample: world-size times the evaluation's "
        "work for one result, and a rank whose metric is logged alone has seen the whole set only by repeating "
        "what the others did.",
    ),
    "DDL160": (
        "a DistributedSampler shards the training data of a model nothing wraps: no DDP, FSDP, DeepSpeed or "
        "Accelerate, no gradient all-reduce",
        "wrap the model: model = DDP(model, device_ids=[local_rank]) before the optimizer's first step",
        "5-wrap-the-model-in-ddp",
        "Without a wrap (or an all-reduce of the gradients) each rank steps its own copy of the model on its own "
        "shard: the copies drift apart from the first step, and the one that is saved has seen 1/world-size of "
        "the data.",
    ),
    "DDL161": (
        "an evaluation set sharded with DistributedSampler(drop_last=True), which leaves samples out of every "
        "rank's share",
        "shard eval with Subset(ds, range(rank, len(ds), world_size)) (every sample once), then all_reduce the "
        "sums and counts",
        "7-the-loss-you-print-and-the-eval-you-report",
        "drop_last=True trims the set to a multiple of the world size before sharding: up to world_size - 1 "
        "samples are never evaluated, so the reported metric is not the whole set's, and which samples are left "
        "out changes with the number of processes (and with the seed when shuffle=True).",
    ),
    "DDL162": (
        "a validation metric a LightningModule logs per epoch without sync_dist=True, in a project that trains "
        "with DDP",
        "self.log(name, value, sync_dist=True), or log a torchmetrics Metric object, which reduces itself",
        "7-the-loss-you-print-and-the-eval-you-report",
        "Lightning gives each process its own shard of the validation set, and self.log's epoch mean is taken on "
        "each process alone unless sync_dist=True: the logged val_loss is rank 0's shard's, and a "
        "ModelCheckpoint or EarlyStopping that monitors it decides on each rank's own number (Lightning warns "
        "of it at run time: 'It is recommended to use sync_dist=True when logging on epoch level in distributed "
        "setting').",
    ),
    "DDL163": (
        "a state dict loaded into the DDP / prepared wrapper in a module that saves the unwrapped model's",
        "load into what was saved: model.module.load_state_dict(...) (DDP) or "
        "accelerator.unwrap_model(model).load_state_dict(...)",
        "11-save-from-rank-0-without-the-module-prefix",
        "The wrapper's parameters are named 'module.<name>'; the checkpoint this module saves from the "
        "unwrapped model (.module, unwrap_model) has no prefix, so the wrapper's load_state_dict fails with "
        "missing and unexpected keys (with strict=False it loads nothing) as soon as a run resumes on more than "
        "one process. One process hides it: prepare() wraps nothing there.",
    ),
    "DDL164": (
        "a DistributedSampler seeded with the rank (seed=base + rank), so each rank shuffles the data its own way",
        "give every rank the same seed (seed=base): the sampler itself gives each rank its own share of one "
        "permutation",
        "4-shard-the-training-data",
        "DistributedSampler shuffles the whole dataset with its seed and the epoch, then takes every world_size-th "
        "index from the rank's offset. That partitions the data only when every rank draws the same permutation: "
        "with a seed per rank, each rank strides through a different one, so some samples are in several ranks' "
        "shares each epoch and others in none.",
    ),
    "DDL165": (
        "an optimizer stepped in an Accelerate script that never hands it to accelerator.prepare",
        "prepare it with its model: model, optimizer = accelerator.prepare(model, optimizer)",
        "a-accelerator-prepare-and-backward",
        "accelerator.prepare wraps the model in DDP and the optimizer in an AcceleratedOptimizer. An optimizer "
        "left out steps on its own: the model it steps (a GAN's discriminator, left out with it) gets no "
        "all-reduce, so every process trains its own copy and they drift apart; and its step skips what the "
        "AcceleratedOptimizer does, unscaling fp16 gradients and holding the step during accumulation.",
    ),
    "DDL166": (
        "MASTER_ADDR or MASTER_PORT set by a script that torchrun launches",
        "leave both to the launcher; set them only where the script starts its own processes (mp.spawn), or "
        "with os.environ.setdefault",
        "2-join-the-process-group",
        "torchrun (and torch.distributed.launch, which runs it) sets MASTER_ADDR and MASTER_PORT to the store its "
        "agent already serves, and the workers connect to it as clients. A script that overwrites them sends "
        "every process to a port where nothing listens: measured here with torch 2.13, two gloo workers under "
        "torchrun timed out connecting to localhost:12355, and joined at once without the two lines or with "
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1. pytorch/examples' mp.spawn script sets them; its torchrun "
        "script does not.",
    ),
    "DDL167": (
        "a training loss divided by the world size before its backward, under DDP, FSDP or Accelerate",
        "drop the division: the wrapper averages the gradients over the processes already",
        "18-a-summed-loss-reductionsum",
        "DDP (and FSDP, and accelerator.backward) averages the gradients over the processes: a loss that is a "
        "mean over the rank's batch already gives the global batch's gradient. Divided by the world size too, "
        "every gradient is world_size times smaller than the plain script's, silently (the learning rate "
        "divided by the process count). A division for the log line, after the backward or on a detached "
        "copy, changes nothing and is not reported.",
    ),
    "DDL168": (
        "destroy_process_group in the process that starts the workers (after mp.spawn), which never joined",
        "destroy the group in the worker function, at its end; the parent has none",
        "2-join-the-process-group",
        "mp.spawn runs the worker function in new processes; each joins the group and should leave it. The "
        "process that called mp.spawn never called init_process_group, so its destroy_process_group has no "
        "group to destroy: torch 2.13 raises (AssertionError: Process group cannot be None, measured here), and "
        "every run that trained to the end exits with a traceback and a failure status.",
    ),
    "DDL169": (
        "a loss summed over the ranks (all_reduce or reduce, op SUM) and logged without the division by the "
        "world size",
        "divide by the world size after the reduction (or reduce with op=ReduceOp.AVG), then log",
        "7-the-loss-you-print-and-the-eval-you-report",
        "all_reduce and reduce sum by default: the loss each rank computed over its own batch, summed, is "
        "world_size times the mean a plain run prints. Logged as it is, every curve is scaled by the process "
        "count, and changes with it. A sum of counts (correct, total) is what the later division wants, and is "
        "not reported.",
    ),
    "DDL170": (
        "the name of a DDP-wrapped model bound again to a plain model, which then trains",
        "wrap the model you train: build it (and load its weights) first, then wrap it once, then make the "
        "optimizer from the wrapper's parameters",
        "5-wrap-the-model-in-ddp",
        "DDP all-reduces the gradients of the model it wraps. A script that wraps one model and then binds the "
        "same name to a new plain one (from_pretrained again, a fresh constructor) trains the new one with no "
        "all-reduce at all: every process steps its own copy on its own shard, the copies drift apart, and rank "
        "0 saves only its own. The wrapped copy just holds memory.",
    ),
    "DDL171": (
        "accelerator.load_state from a checkpoint saved inside the batch loop, and no batch skipped on resume",
        "skip the batches the checkpoint already trained: loader = accelerator.skip_first_batches(loader, n) "
        "for the resumed epoch (or `if step < resume_step: continue`)",
        "d-checkpoints-resume-and-tracking-accelerates-own",
        "A checkpoint saved every N steps is saved in the middle of an epoch. load_state restores the weights, "
        "the optimizer and the RNG, but the loop that follows starts its epoch at the first batch again: the "
        "resumed run trains the batches before the checkpoint a second time, and its schedule no longer "
        "matches the uninterrupted run's.",
    ),
    "DDL172": (
        "noise drawn for samples that are then gathered across ranks, in a script that seeds every rank alike",
        "seed each rank apart for sampling (torch.manual_seed(seed + rank)), or draw from a generator seeded "
        "with the rank: torch.randn(..., generator=g)",
        "3-seeds-the-same-initial-weights-different-randomness",
        "With one seed on every rank and the same calls in the same order, every process draws the same noise. "
        "Samples generated from it (for an FID, a sample grid, a Monte Carlo estimate) are the same on every "
        "rank, so the set gathered from the ranks is world-size copies of one rank's: the metric is computed on "
        "1/world-size of the samples it claims.",
    ),
    "DDL173": (
        "an environment variable torchrun never sets (NODE_RANK) read without a default in a torchrun script",
        "read what torchrun sets: GROUP_RANK for the node's index, RANK and LOCAL_RANK for the process's, or "
        'os.environ.get("NODE_RANK", "0")',
        "1-launch-with-torchrun",
        "torchrun gives each worker RANK, LOCAL_RANK, GROUP_RANK (the node's index), WORLD_SIZE, "
        "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torch 2.13, listed here), and no NODE_RANK: "
        '`os.environ["NODE_RANK"]` raises KeyError on every rank of the documented launch, before the '
        "process group forms.",
    ),
    "DDL174": (
        "an LR scheduler left out of a resume that restores the optimizer",
        "save scheduler.state_dict() with the optimizer's and load it on resume (or rebuild the scheduler with "
        "last_epoch set to the resumed step)",
        "12-load-safely",
        "A resume that restores the weights and the optimizer's state but builds the LR scheduler anew starts "
        "the schedule from step 0: the warm-up runs again and the decay starts over, so the resumed run trains "
        "at other learning rates than the uninterrupted one.",
    ),
    "DDL175": (
        "an optimizer over the parameters of a module no DDP wraps, in a script that wraps another",
        "wrap that module in DistributedDataParallel too (a GAN's discriminator, a loss with learnable "
        "weights), and make its optimizer from the wrapper's parameters",
        "5-wrap-the-model-in-ddp",
        "DDP all-reduces the gradients of the module it wraps and nothing else. A second trained module (a GAN's "
        "discriminator inside the loss, a learnable loss weight) that no DDP wraps keeps each rank's own "
        "gradients: every process steps its own copy on its own shard, the copies drift apart, and rank 0 "
        "saves only its own.",
    ),
    "DDL176": (
        "a resume that reads the step back and restores the weights, in a project that never restores an "
        "optimizer's state",
        "save optimizer.state_dict() (and the scheduler's) with the weights and load them on resume, or use "
        "accelerator.save_state / torch.distributed.checkpoint for all of it",
        "12-load-safely",
        "A checkpoint that keeps the weights and the step but not the optimizer resumes with Adam's moments at "
        "zero (SGD's momentum too) at a step the schedule counts as late: the first updates after the resume are "
        "full-size steps in a direction the run had averaged away, and the run no longer continues the "
        "interrupted one.",
    ),
    "DDL177": (
        "a DataLoader with a DistributedSampler handed to accelerator.prepare, which shards it again",
        "give prepare the loader with shuffle=True and no sampler: prepare shards the batches itself",
        "a-accelerator-prepare-and-backward",
        "accelerator.prepare wraps every loader's batch sampler in its own shard (BatchSamplerShard) and does not "
        "look for a DistributedSampler: a loader that already yields this rank's 1/N of the data is cut into N "
        "again, so each process trains on 1/N of its 1/N and the epoch covers 1/N of the dataset. Measured with "
        "two processes, 16 samples and a batch of 2: rank 0 saw samples 0, 2, 8, 10 and rank 1 saw 5, 7, 13, "
        "15; the other 8 never came.",
    ),
    "DDL178": (
        "a checkpoint loaded into the DDP-wrapped (or prepared) model on some ranks only",
        "load on every rank (or before the DDP wrap, which broadcasts rank 0's weights), or broadcast the "
        "parameters after the load",
        "12-load-safely",
        "DDP copies rank 0's parameters to the other ranks once, when it wraps the model. A load_state_dict "
        "under `if rank == 0:` after the wrap changes rank 0's weights alone: the other ranks go on from "
        "their own (fresh) weights, the gradients they all-reduce belong to different models, and the "
        "replicas drift apart while every rank believes the run resumed.",
    ),
    "DDL179": (
        "a value a loop updates on some ranks only, then tests on every rank",
        "update it on every rank (compute it from reduced values), or broadcast it before the test",
        "17-decisions-driven-by-a-metric",
        "Under `if rank == 0:` only rank 0's copy of a counter or a best score moves; the other ranks keep "
        "theirs. A test of it outside the check then decides differently on each rank: one rank enters a "
        "collective (an FSDP state dict, a barrier) or switches its training phase while the others do not, "
        "and the run hangs or the replicas train different things.",
    ),
    "DDL180": (
        "accelerator.accumulate entered twice for one batch (two contexts, one per model)",
        "enter it once with every model: `with accelerator.accumulate(model_a, model_b):`",
        "c-eval-accumulation-saving",
        "Each accelerator.accumulate() call counts one micro-batch. Two of them for one batch count two, so "
        "with gradient_accumulation_steps=2 every batch ends a cycle: nothing accumulates, and the loss, "
        "divided by 2, steps the optimizer at every batch. Measured here (accelerate 1.15, two models, "
        "gradient_accumulation_steps=2): sync_gradients was True, True, True, True over four batches with two "
        "contexts, and False, True, False, True with one accumulate(model_a, model_b).",
    ),
    "DDL181": (
        "a batch's mean loss added up and divided by a count of samples (`sums[0] += loss.item()`, "
        "`sums[1] += len(data)`)",
        "add the batch's sum (loss.item() * len(data), or a loss with reduction='sum' as PyTorch's FSDP "
        "tutorial has), or count batches (`+= 1`)",
        "7-the-loss-you-print-and-the-eval-you-report",
        "PyTorch's FSDP tutorial adds `loss.item()` to one slot and `len(data)` to the other, then divides "
        "the all-reduced sums: right for its `F.nll_loss(..., reduction='sum')`. With a loss that is already "
        "the batch's mean (the default reduction, a Hugging Face model's `.loss`) the quotient is the mean "
        "loss divided by the batch size: a batch of 32 with mean loss 2.0 adds 2.0 and 32, and reports "
        "0.0625. The number logged, and any best-checkpoint choice made on it, is off by the batch size.",
    ),
    "DDL182": (
        "a collective that reduces a tensor made in its own call from the script's values "
        "(`dist.all_reduce(torch.tensor(total_loss))`): the result is thrown away",
        "bind the tensor first, reduce it, and read the values back from it: `t = torch.tensor(total_loss, "
        "device=device)`, `dist.all_reduce(t)`, `total_loss = t.item()`",
        "7-the-loss-you-print-and-the-eval-you-report",
        "all_reduce and reduce work in place on the tensor they are given and return None (or a work handle). A "
        "tensor made inside the call is reduced and dropped: the names it was made from keep each rank's own "
        "value, so what is logged or divided by the world size next is one rank's number, and "
        "`dist.all_reduce(...).item()` fails on None.",
    ),
    "DDL183": (
        "wandb.log called on every rank where wandb.init runs on the main process alone",
        "log under the same check as wandb.init (`if rank == 0:` / `accelerator.is_main_process`), or use "
        "accelerator.init_trackers and accelerator.log, which run on the main process alone",
        "8-per-batch-logging",
        "wandb.log before wandb.init raises wandb's 'You must call wandb.init() before wandb.log()' error: the "
        "ranks that skipped the init crash at their first log, and the run dies with them.",
    ),
    "DDL184": (
        "gradients clipped inside accelerator.accumulate() at every micro-batch, not under "
        "`if accelerator.sync_gradients:`",
        "clip once a cycle: `if accelerator.sync_gradients: accelerator.clip_grad_norm_(params, max_norm)`",
        "c-eval-accumulation-saving",
        "accelerate's clip_grad_norm_ clips whatever the gradients hold when it is called: inside an "
        "accumulation it clips a partial sum, then the next micro-batches add to it, so the step is no longer "
        "the clipped sum of the cycle. Measured here (accelerate 1.15, gradient_accumulation_steps=2, norms 80 "
        "and 57): clipping each micro-batch gave the gradient [-0.40, 0.64, -0.15, -0.64, 0.04], once a cycle "
        "[0.27, 0.58, -0.59, -0.49, 0.04]. Under fp16 the second unscale_ of a cycle raises.",
    ),
    "DDL185": (
        "optimizer.zero_grad() before the backward inside accelerator.accumulate(): it runs at the cycle's "
        "last micro-batch and wipes the ones accumulated before it",
        "zero the gradients after optimizer.step() (step, scheduler step, zero_grad at the end of the block)",
        "c-eval-accumulation-saving",
        "A prepared optimizer's zero_grad() does nothing while accumulate() holds the gradients, and zeroes "
        "them once sync_gradients is True: at the start of the cycle's last micro-batch, when it comes before "
        "the backward. The step then sees that micro-batch alone. Measured here (accelerate 1.15, "
        "gradient_accumulation_steps=4, inputs 1 to 4): the gradient at the step was 2.0 with zero_grad first, "
        "5.0 (all four micro-batches) with zero_grad after the step.",
    ),
    "DDL186": (
        "an EMA update handed the DDP wrapper, whose parameter names carry `module.` where the EMA's do not",
        "hand it the module inside: update_ema(ema, model.module) (DiT's train.py does)",
        "5-wrap-the-model-in-ddp",
        "DDP's named_parameters() are the wrapper's: `module.blocks.0.weight` for the EMA copy's "
        "`blocks.0.weight`. An update that looks the EMA's parameters up by the model's names "
        "(`ema_params[name].mul_(decay)...`, DiT's update_ema) raises KeyError at the first step after the "
        "wrap (an update that zips the two lists in order is not affected).",
    ),
    "DDL187": (
        "a save the script makes under a rank check in one place and on every rank in another",
        "make it under the same check (`if rank == 0:`, accelerator.is_main_process) here too",
        "11-save-from-rank-0-without-the-module-prefix",
        "The script itself says the call must run on one process: it guards it by the rank in one place. "
        "Where it makes the same call unguarded (the best checkpoint after the epoch's, a last export), every "
        "process writes the same file at once: a torn or clobbered checkpoint, or one rank's half-written file "
        "read back by another.",
    ),
    "DDL188": (
        "a run folder or file named by each process's own clock, which one rank makes and every rank then uses",
        "take the time on rank 0 and broadcast it (dist.broadcast_object_list([stamp], src=0)), or name the run "
        "from its arguments",
        "14-a-file-one-rank-writes-and-the-others-read",
        "Every process reads its own clock: `time.strftime('%Y-%m-%d-%H-%M')` or `datetime.now()` gives rank 0 one "
        "name and a rank that starts a moment later another, once a minute or a second rolls over between them. "
        "Rank 0 makes the folder or writes the file under its name; the others open their log there, or load the "
        "checkpoint rank 0 wrote, under theirs: FileNotFoundError on some runs and not others.",
    ),
    "DDL189": (
        "a model wrapped in DistributedDataParallel (or prepared by accelerate) whose wrapper is thrown away",
        "bind the wrapper and train it: model = DDP(model, device_ids=[local_rank])",
        "5-wrap-the-model-in-ddp",
        "`DistributedDataParallel(model, ...)` as a statement of its own builds the wrapper and drops it: the "
        "script trains the plain model, with no all-reduce of the gradients, so every process steps its own copy "
        "on its own shard and the copies drift apart (the same for `accelerator.prepare(model)`, whose result is "
        "the prepared model). Nothing fails.",
    ),
    "DDL190": (
        "a metric fed one tensor gathered from every rank and another from this rank alone",
        "gather both the same way (accelerator.gather_for_metrics((predictions, labels))), or neither",
        "7-the-loss-you-print-and-the-eval-you-report",
        "`labels = accelerator.gather(labels)` beside `predictions` left as this rank's: the gathered tensor holds "
        "world-size times the rows, in rank order, so pairing it with the local predictions (zip, a metric's "
        "add_batch, a helper that walks both) matches rank 0's labels with every rank's predictions: the score on "
        "every rank but 0 compares the wrong pairs, and rank 0's covers only its own shard.",
    ),
    "DDL191": (
        "an attribute Accelerate's Accelerator does not have (`accelerator.num_process`, `accelerator.is_main`)",
        "spell it as Accelerate does: num_processes, is_main_process, wait_for_everyone, process_index",
        "a-accelerator-prepare-and-backward",
        "Accelerator answers its own names only; a misspelled one raises AttributeError where it is reached: at "
        "the first step (TextBox's `accelerator.num_process`, every multi-GPU run), or only on the branch a "
        "one-GPU test never takes. A name read through `getattr(accelerator, name, default)` is left alone.",
    ),
    "DDL192": (
        "hand-written gradient accumulation on an FSDP model without no_sync() / set_requires_gradient_sync()",
        "where the memory allows, run the first N-1 backwards under `with model.no_sync():` (FSDP1), or call "
        "model.set_requires_gradient_sync(is_last_micro_batch) before each (FSDP2)",
        "6-gradient-accumulation",
        "FSDP reduce-scatters the gradients at every backward(): with an optimizer step every N micro-batches, "
        "N reduce-scatters of the whole gradient for one step, where one would do. Turning the sync off keeps "
        "each rank's unsharded gradients until the last micro-batch: more memory, which a model sharded to "
        "fit may not have. Say which in a comment when you keep the per-micro-batch sync on purpose.",
    ),
    "DDL193": (
        "the data's order drawn from an unseeded global stream in each process, then split between the processes",
        "seed the stream alike on every process before the order is drawn (accelerate's set_seed(seed), "
        "random.seed(seed)), or draw it from a generator of its own seeded alike (torch.Generator().manual_seed(seed))",
        "4-shard-the-training-data",
        "A sampler that shuffles with random's or numpy's stream (or torch.randperm with no generator) under "
        "accelerator.prepare, which deals its batches out by process, or a dataset that shuffles its list in "
        "its constructor under a DistributedSampler, which splits the indexes: both take the order as the same "
        "on every process. Each process seeds its streams at random when the script seeds none, so each draws "
        "its own order, and the shares overlap: some samples are trained on twice an epoch, others never.",
    ),
    "DDL194": (
        "the trained model's weights overwritten on one rank inside the training loop "
        "(`ema.copy_to(model.parameters())` under a main-process check)",
        "store and restore around it (ema.store(params); ema.copy_to(params); ...; ema.restore(params)), or copy "
        "the EMA into a model of its own for the checkpoint",
        "16-the-models-own-methods-and-state-carried-across-batches",
        "DDP broadcasts the weights once, when it wraps the model; after that the replicas stay equal only because "
        "every rank applies the same averaged gradient. An EMA copied into rank 0's live weights at a checkpoint "
        "(and not restored) sends rank 0 on from the EMA's weights and the others from their own: the replicas "
        "are apart from then on, nothing brings them back, and every later checkpoint rank 0 saves is a model "
        "no rank trained alone.",
    ),
    "DDL195": (
        "a number of epochs counted from a DataLoader's length before accelerator.prepare, which shards it",
        "count again after prepare (num_update_steps_per_epoch = ceil(len(train_dataloader) / accumulation); "
        "epochs = ceil(max_train_steps / num_update_steps_per_epoch)), as diffusers' scripts do",
        "b-schedulers-with-prepare",
        "prepare() gives each process 1/num_processes of the batches, so the loader's length after it is "
        "1/N of the length the epochs were counted from: a run asked for 32 steps over a loader of 16 batches "
        "counted 2 epochs and, at 2 processes, made 16 steps (measured). Training stops at 1/N of the steps "
        "the script prints as its total, and a `global_step >= max_steps` stop is never reached.",
    ),
    "DDL196": (
        "a loss made as a new tensor (`torch.tensor(0.0, requires_grad=True)`) on some batches, in a DDP loop "
        "that calls its backward",
        "make the stand-in from the model's output, so that every parameter is in its graph "
        "(`loss = output.sum() * 0`), and leave the step to every rank alike",
        "5-wrap-the-model-in-ddp",
        "A tensor made with requires_grad=True is a leaf: its backward reaches no parameter, so DDP's hooks "
        "never fire on that rank and it skips that step's gradient all-reduce. Measured on gloo at 2 processes: "
        "the rank that took the stand-in at step 1 paired its step-2 all-reduce with the other's step 1 (each "
        "stepped on a gradient averaged with the wrong step's), then finished while the other failed waiting "
        "('Connection closed by peer'); over NCCL the wait is a hang. A zero made from the output runs every "
        "hook and all-reduces zeros.",
    ),
    "DDL197": (
        "the loss computed through an object that holds the model from before its DDP wrap, with the wrapper "
        "never called in the training step",
        "make the object after the wrap, from the wrapper (`rf = RectifiedFlow(model)` after `model = DDP(model)`), "
        "or call the wrapper in the step",
        "5-wrap-the-model-in-ddp",
        "DDP all-reduces the gradients of a backward that follows a forward through the wrapper. An object made "
        "from the model before the wrap keeps the plain module: a loss computed through it calls the module "
        "itself, the wrapper's forward never runs, and each rank steps on its own gradient. Nothing fails; the "
        "copies drift apart.",
    ),
    "DDL198": (
        "the world size left at a flag's default on a path that reads the rank from the environment "
        "(`elif 'SLURM_PROCID' in os.environ: args.rank = ...`)",
        "read the world size on that path too (`args.world_size = int(os.environ['SLURM_NTASKS'])`), or start "
        "the script with torchrun under srun, which sets RANK and WORLD_SIZE",
        "2-join-the-process-group",
        "DETR's init_distributed_mode, copied into many projects, reads RANK and WORLD_SIZE under torchrun, "
        "but on its Slurm path sets the rank from SLURM_PROCID and leaves the world size at the --world_size "
        "default (1) unless submitit's launcher set it first. Measured on a real two-node Slurm cluster here "
        "(srun, one task per node, MASTER_ADDR and MASTER_PORT exported): rank 0 joined a group of one and went "
        "on alone; rank 1 waited in init_process_group until it was killed.",
    ),
    "DDL110": (
        "loss.backward() in a script that uses Accelerate",
        "call accelerator.backward(loss)",
        "a-accelerator-prepare-and-backward",
        "accelerator.backward scales the loss for fp16 and divides it for gradient accumulation; "
        "loss.backward() skips both, so fp16 gradients underflow and accumulated steps are too large.",
    ),
    "DDL111": (
        "a scheduler passed to accelerator.prepare and stepped once per epoch",
        "step it every optimizer step, or keep it out of prepare()",
        "b-schedulers-with-prepare",
        "A prepared scheduler steps once per process at every call (split_batches=False): a per-epoch "
        "StepLR(gamma=0.7) at 2 processes went 1.0 -> 0.49 -> 0.2401 instead of 1.0 -> 0.7 -> 0.49.",
    ),
    "DDL112": (
        "DistributedDataParallel(find_unused_parameters=True)",
        "leave it False unless some parameters really get no gradient",
        "5-wrap-the-model-in-ddp",
        "find_unused_parameters=True walks the autograd graph after every forward to find parameters "
        "without gradients: a cost on every step, needed only for models with unused branches.",
    ),
    "DDL113": (
        "init_process_group without destroy_process_group",
        "call dist.destroy_process_group() at the end",
        "2-join-the-process-group",
        "Without it, NCCL's resources are torn down in whatever order the interpreter exits (torch warns), "
        "and a process that exits early can leave the others hanging in a collective.",
    ),
    "DDL114": (
        "a metric divided by len(loader.dataset) in a script that shards its data",
        "all_reduce the sums first, then divide by the whole set's size",
        "7-the-loss-you-print-and-the-eval-you-report",
        "With a DistributedSampler or a per-rank shard, each process sums over its own share only; dividing "
        "that by the size of the whole set reports 1/world_size of the real mean, without an error.",
    ),
    "DDL115": (
        "a context manager called as a plain statement, which does nothing",
        "use it in a `with` block around the code it is for",
        "6-gradient-accumulation",
        "model.no_sync(), accelerator.accumulate(model), torch.autocast(...), torch.cuda.device(i) and "
        "accelerator.autocast() return a context manager; called on a line of their own they are created and "
        "dropped, and the code after them runs without them (an all-reduce per micro-batch, no autocast).",
    ),
    "DDL116": (
        "random_split or randperm without a seeded generator in a distributed script",
        "pass generator=torch.Generator().manual_seed(seed), the same on every rank",
        "4-shard-the-training-data",
        "Every rank runs the split: with the global RNG (seeded per rank, or not at all) each rank splits "
        "differently, so the ranks train and test on overlapping sets (measured: rank 0's test set [2, 11], "
        "rank 1's [7, 17]).",
    ),
    "DDL117": (
        "the global rank used as a device index",
        "index devices with LOCAL_RANK (torchrun) or accelerator.device: the rank counts processes on every "
        "node",
        "2-join-the-process-group",
        "RANK (dist.get_rank(), accelerator.process_index) numbers the processes across all nodes; the GPUs "
        "of a machine are numbered from 0 on each. `.to(rank)`, `device_ids=[rank]`, `set_device(rank)` or "
        "`cuda:{rank}` work on one node and fail on the second (rank 8 asks for GPU 8 of an 8-GPU machine: "
        "'invalid device ordinal'), or put two processes on one GPU with fewer GPUs per node.",
    ),
    "DDL118": (
        "accelerator.gather() feeding an evaluation",
        "use accelerator.gather_for_metrics(), which drops the samples prepare() repeated",
        "c-eval-accumulation-saving",
        "A prepared eval loader evens the last batch across processes by repeating samples; gather() returns "
        "them too, so the metric counts some samples twice (measured: 389 test samples at 2 processes x 32 "
        "gathered 448). gather_for_metrics() removes the repeats on the last batch.",
    ),
    "DDL119": (
        "hand-written gradient accumulation in a DDP or Accelerate script without no_sync()/accumulate()",
        "run the first N-1 backwards under `with model.no_sync():` (DDP) or every micro-step under "
        "`with accelerator.accumulate(model):`",
        "6-gradient-accumulation",
        "DDP all-reduces the gradients at every backward(): with an optimizer step every N micro-batches "
        "(`if step % N == 0: optimizer.step()`), the first N-1 all-reduces are wasted, N times the "
        "communication for the same result. (nanoGPT's `model.require_backward_grad_sync = ...` does the "
        "same as no_sync and is recognised.)",
    ),
    "DDL120": (
        "torch.save of a whole model object",
        "save model.state_dict() (model.module.state_dict() under DDP, accelerator.unwrap_model(model)'s "
        "under Accelerate)",
        "11-save-from-rank-0-without-the-module-prefix",
        "torch.save(model) pickles the module, its class by import path, and under DDP the wrapper and its "
        "process group's handles: the file loads only with weights_only=False (which runs code from the "
        "file), only where the same class is importable under the same name, and a DDP one not at all "
        "without a process group. A state_dict is tensors by name: it loads with weights_only=True anywhere.",
    ),
    "DDL121": (
        "gradients clipped while they are still scaled (Accelerate, or a GradScaler without unscale_)",
        "call accelerator.clip_grad_norm_(model.parameters(), max_norm) in an Accelerate script; with a "
        "GradScaler, scaler.unscale_(optimizer) before clipping",
        "13-gradient-clipping",
        "Under fp16 the gradients are multiplied by the loss scale (65536 at the start) until the optimizer "
        "step: torch.nn.utils.clip_grad_norm_ then measures the scaled norm and clips nearly every step to "
        "max_norm/scale. accelerator.clip_grad_norm_ unscales first (and clips sharded FSDP gradients "
        "correctly); with a GradScaler, scaler.unscale_(optimizer) does.",
    ),
    "DDL122": (
        "a file written under a rank check and read by every rank with no barrier between",
        "call dist.barrier() (accelerator.wait_for_everyone()) after the write, on every rank",
        "14-a-file-one-rank-writes-and-the-others-read",
        "The other ranks do not wait for rank 0: they reach the read while rank 0 is still writing, and "
        "load a missing, partial or previous file (a FileNotFoundError at best, last epoch's weights at "
        "worst).",
    ),
    "DDL123": (
        "a training loss summed (reduction='sum') under DDP or Accelerate, not scaled by the world size",
        "multiply the loss by the world size (dist.get_world_size(), accelerator.num_processes), or use "
        "reduction='mean' and the learning rate that goes with it",
        "5-wrap-the-model-in-ddp",
        "DDP (and Accelerate) average the gradients over the processes. With a mean loss that is the mean "
        "over the global batch, as one process would compute it; with a summed loss each process's gradient "
        "is a sum over its own share, and the average is 1/world_size of the sum the plain script stepped "
        "with: every step is world_size times smaller, silently. An evaluation's sum (then all-reduced and "
        "divided) is not reported.",
    ),
    "DDL125": (
        "an attribute of the model reached through the DDP / DataParallel wrapper",
        "call it on the model inside: model.module.X under DDP, accelerator.unwrap_model(model).X under "
        "Accelerate (or keep a `raw_model` before wrapping)",
        "16-the-models-own-methods-and-state-carried-across-batches",
        "DistributedDataParallel and DataParallel answer nn.Module's own API (forward, parameters, "
        "state_dict, train, ...) and their own; every other attribute of the model inside (generate, "
        "config, tokenizer, an encoder submodule, a method of your class) raises AttributeError: "
        "'DistributedDataParallel' object has no attribute ..., and only in the distributed run: the "
        "single-process run never wraps.",
    ),
    "DDL126": (
        "a device index made from the rank and a GPU count written in the code",
        "use LOCAL_RANK (torchrun sets it) or rank % torch.cuda.device_count()",
        "2-join-the-process-group",
        "`cuda:{rank % 8}` is the local GPU only on nodes with exactly 8 GPUs: on nodes with 4 the second "
        "node's processes ask for GPUs 4 to 7 ('invalid device ordinal'), on nodes with 16 half the GPUs "
        "sit idle while two processes share each of the others.",
    ),
    "DDL127": (
        "an evaluation set sharded with DistributedSampler (which pads with repeated samples) and its "
        "metrics reduced over the ranks",
        "shard eval with Subset(ds, range(rank, len(ds), world_size)) (no padding), or drop the repeats "
        "after gathering (gather_for_metrics under Accelerate)",
        "7-the-loss-you-print-and-the-eval-you-report",
        "DistributedSampler evens the shards by repeating samples from the start of the set (drop_last=False "
        "pads): with 50,000 images on 3 processes two are evaluated twice, and an all_reduce of the sums, or "
        "an all_gather of the predictions, counts them twice. The reported accuracy (or mIoU, AP) is then "
        "not the set's whenever its size does not divide by the world size.",
    ),
    "DDL128": (
        "an experiment tracker started on every rank (SummaryWriter, wandb.init, mlflow.start_run)",
        "start it under `if rank == 0:` (accelerator.is_main_process), or use accelerator.init_trackers and "
        "accelerator.log, which log from the main process only",
        "8-per-batch-logging",
        "Every process runs the line: N TensorBoard event files in one directory (its curves drawn N times, "
        "each from one shard), N wandb or MLflow runs for one job, N copies of every logged metric.",
    ),
    "DDL129": (
        "parameters frozen before the DDP wrap and unfrozen after it",
        "wrap the model after its final requires_grad setting, or build DDP again (or pass all parameters "
        "and let unused ones be found) after unfreezing",
        "5-wrap-the-model-in-ddp",
        "DistributedDataParallel registers, when it is built, only the parameters that require a gradient: "
        "those frozen then are left out of its buckets for good. Unfrozen later (a backbone trained after a "
        "warm-up), they get gradients on every rank that are never all-reduced: each replica steps its own "
        "backbone and the copies drift apart, silently.",
    ),
    "DDL131": (
        "an EMA copy of the model made before the DDP wrap, in a script seeded per rank",
        "make the EMA copy after the wrap (from model.module), or seed the model's initialization the same on "
        "every rank",
        "5-wrap-the-model-in-ddp",
        "With `seed = args.seed + rank`, each process builds its model from its own random initialization; the "
        "DDP wrap then broadcasts rank 0's weights, but a `ModelEma(model)` (a deep copy) made before the wrap "
        "keeps each rank's own: every rank averages toward the same weights from a different start, the EMA "
        "evaluated across ranks mixes different models, and the one rank 0 saves is not the one the others hold.",
    ),
    "DDL130": (
        "no_sync() (or accumulate()) around the backward alone, the forward outside it",
        "put the forward and the loss inside the same `with` as the backward",
        "6-gradient-accumulation",
        "DDP decides in the forward whether the next backward all-reduces: a forward run outside "
        "`model.no_sync()` has armed the all-reduce already, and the backward inside the block still "
        "communicates (measured over gloo with a comm hook: 1 all-reduce with the backward alone inside, 0 with "
        "both). The gradients are right; the skipped communication is not skipped. torch's no_sync and "
        "accelerate's accumulate documentation put the forward inside.",
    ),
    "DDL124": (
        "a validation metric logged by one rank without a reduction, while the evaluation data is sharded",
        "all_reduce the sums (and counts) first, or gather_for_metrics under Accelerate, then log",
        "7-the-loss-you-print-and-the-eval-you-report",
        "With a DistributedSampler (or a prepared loader) on the evaluation set, each process evaluates its "
        "own share: rank 0's loss or accuracy is that of 1/world_size of the set, printed as the whole "
        "set's. The ranks' sums and counts must be reduced before the division.",
    ),
}

# How often each rule's findings were right on public code it had never seen, as (true, judged): the first
# verdicts of guides/doctor.md's never-seen tables (45 sets, 1355 files; a rule changed after a set is not judged
# again), which a test recounts from the page. A rule right less often than STABLE is a preview rule, as ruff
# has them: it runs with --preview (or `preview = true`), or when --select names its exact code, so that what
# doctor prints by default is what it has been right about. A rule with no finding there yet runs by default:
# it is proven on the project's own bad and good scripts and migrations, and has not been wrong in public.
STABLE = 0.8
MEASURED = {
    "DDL101": (180, 204),
    "DDL102": (499, 540),
    "DDL103": (35, 46),
    "DDL105": (90, 125),
    "DDL106": (33, 59),
    "DDL107": (309, 642),
    "DDL108": (3, 13),
    "DDL109": (37, 38),
    "DDL110": (2, 4),
    "DDL111": (6, 9),
    "DDL112": (106, 231),
    "DDL113": (369, 375),
    "DDL114": (2, 4),
    "DDL115": (2, 2),
    "DDL116": (4, 18),
    "DDL117": (8, 44),
    "DDL118": (11, 34),
    "DDL119": (137, 191),
    "DDL120": (6, 7),
    "DDL121": (5, 19),
    "DDL122": (0, 11),
    "DDL123": (0, 5),
    "DDL124": (35, 54),
    "DDL125": (61, 116),
    "DDL127": (102, 179),
    "DDL128": (65, 104),
    "DDL129": (1, 1),
    "DDL130": (4, 8),
    "DDL131": (3, 9),
    "DDL132": (53, 99),
    "DDL133": (2, 3),
    "DDL134": (37, 61),
    "DDL135": (1, 5),
    "DDL136": (3, 5),
    "DDL137": (72, 139),
    "DDL138": (1, 2),
    "DDL139": (37, 60),
    "DDL140": (13, 17),
    "DDL141": (9, 13),
    "DDL142": (83, 129),
    "DDL143": (2, 2),
    "DDL144": (6, 10),
    "DDL146": (3, 7),
    "DDL147": (1, 1),
    "DDL148": (1, 1),
    "DDL149": (18, 23),
    "DDL150": (2, 4),
    "DDL151": (7, 16),
    "DDL152": (18, 30),
    "DDL153": (5, 9),
    "DDL155": (13, 19),
    "DDL156": (3, 4),
    "DDL157": (6, 20),
    "DDL158": (0, 1),
    "DDL159": (15, 22),
    "DDL160": (0, 1),
    "DDL161": (2, 2),
    "DDL162": (9, 26),
    "DDL163": (2, 8),
    "DDL165": (0, 1),
    "DDL166": (1, 3),
    "DDL171": (8, 12),
    "DDL172": (0, 3),
    "DDL173": (1, 1),
    "DDL174": (3, 5),
    "DDL175": (0, 3),
    "DDL176": (4, 5),
    "DDL177": (2, 2),
    "DDL179": (0, 1),
    "DDL183": (0, 1),
    "DDL187": (2, 5),
    "DDL188": (1, 1),
    "DDL190": (0, 3),
    "DDL191": (0, 6),
    "DDL192": (3, 3),
    "DDL194": (0, 1),
    "DDL198": (0, 2),
}
# A rule written since the newest never-seen set has not met code it was not shaped on: a preview rule until one
# measures it.
UNMEASURED = frozenset(
    {
        "DDL197",
        "DDL196",
        "DDL195",
        "DDL193",
        "DDL189",
        "DDL186",
        "DDL185",
        "DDL184",
        "DDL182",
        "DDL181",
        "DDL180",
        "DDL178",
        "DDL154",
        "DDL164",
        "DDL167",
        "DDL168",
        "DDL169",
        "DDL170",
    }
)
PREVIEW = UNMEASURED | frozenset(
    code for code, (true, judged) in MEASURED.items() if true < STABLE * judged
)
CONTEXT_MANAGERS = {"no_sync", "accumulate", "autocast", "device", "device_index"}
FIXABLE = {"DDL102", "DDL104", "DDL106", "DDL115", "DDL118"}  # the codes doctor_fix rewrites


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    # whether --fix rewrites it: False for the rules it does not fix, and where the rewrite would change what
    # some path through the program does (reported only)
    fixable: bool = field(default=True, compare=False)
    # where the mistake is when the call at this line reaches it in another module: "engine.py:48"
    via: str = field(default="", compare=False)

    def __str__(self):
        what, fix, anchor, _ = RULES[self.code]
        where = doctor_output.reached(self)
        return f"{self.path}:{self.line}:{self.col + 1}: {self.code} {what}{where}: {fix} ({GUIDE}#{anchor})"


def dotted(node):
    """'torch.cuda.amp.autocast' for an attribute chain, the name for a Name, '' otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):  # Net().to -> 'Net().to'
        return ".".join([dotted(node.func) + "()", *reversed(parts)])
    return ""


def last(name):
    return name.rsplit(".", 1)[-1]


def keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def is_true(node):
    return isinstance(node, ast.Constant) and node.value is True


def membership(test):
    """`"RANK" in os.environ`: whether a variable is set, the same answer on every rank."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Constant)
        and all(isinstance(op, (ast.In, ast.NotIn)) for op in test.ops)
    )


def mentions_rank(test):
    """Whether an `if` test picks some ranks: rank == 0, is_main, accelerator.is_main_process, local_rank != 0 ...
    Not `rank != -1` / `local_rank == -1`: -1 is the launchers' "not distributed", so every rank is on one side."""
    if membership(test):
        return False
    if isinstance(test, ast.BoolOp):
        return any(mentions_rank(value) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return mentions_rank(test.operand)
    if isinstance(test, ast.Call) and last(dotted(test.func)) in PATH_TESTS:
        # `rank0_checkpoint_path.exists()`: a file every rank sees alike, whatever its name says (AudioCraft's
        # solver, corpus 27, seen)
        return False
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.Gt))
        and ast.unparse(test.comparators[0]) == "-1"
    ):
        return False
    if (  # `rank is not None` (Satlas's is_distributed, corpus 23): distributed or not, as -1 is
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and ast.unparse(test.comparators[0]) == "None"
    ):
        return False
    if (  # local_rank >= 0, rank < 0: distributed or not, the same answer on every rank
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.GtE, ast.Lt))
        and ast.unparse(test.comparators[0]) == "0"
    ):
        return False
    # MASTER_ADDR and MASTER_PORT are the launcher's, the same on every rank (ml-mdm's `if not "MASTER_ADDR" in
    # os.environ or world_size == 1: return`, corpus 23, seen)
    text = re.sub(r"master_(addr|port)", "", ast.unparse(test).lower())
    return any(word in text for word in RANK_WORDS)


def shuffles_true(value):
    """`{"shuffle": True, ...}` or `dict(shuffle=True, ...)`."""
    if isinstance(value, ast.Dict):
        return any(
            isinstance(k, ast.Constant) and k.value == "shuffle" and is_true(v)
            for k, v in zip(value.keys, value.values)
        )
    return (
        isinstance(value, ast.Call)
        and dotted(value.func) == "dict"
        and is_true(keyword(value, "shuffle"))
    )


def assigned_to(checker, call):
    """The names a call's value is bound to: `s = DistributedSampler(d)`, and through a conditional
    expression, `s = DistributedSampler(d) if distributed else None`."""
    parent = checker.parent.get(call)
    while isinstance(parent, ast.IfExp):
        parent = checker.parent.get(parent)
    return [dotted(t) for t in parent.targets] if isinstance(parent, ast.Assign) else []


def per_node(test):
    """`rank % ngpus_per_node == 0`, `local_rank == 0`, `accelerator.is_local_main_process`: one process on
    every node, not one in the whole job. (`... or rank == 0` with a global check beside it is not.)"""
    if isinstance(test, ast.BoolOp):
        picks = [value for value in test.values if mentions_rank(value)]
        return bool(picks) and all(per_node(value) for value in picks)
    text = ast.unparse(test).lower()
    if "local_main" in text:
        return True
    if (
        isinstance(test, ast.Compare)
        and "local_rank" in ast.unparse(test.left).lower()
        and all(isinstance(op, (ast.Eq, ast.In)) for op in test.ops)
    ):
        return True  # local_rank == 0, LOCAL_RANK in (-1, 0)
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and "rank" in ast.unparse(n.left).lower()
        and "local" not in ast.unparse(n.left).lower()
        for n in ast.walk(test)
    )


# a test that means "this run is distributed": its else branch runs in a one-process run only
DISTRIBUTED_FLAG = re.compile(
    r"([\w.]*\.)?(distributed|is_distributed|use_distributed|ddp|use_ddp|is_ddp|multi_gpu|use_multi_gpu|multigpu"
    r"|multiprocessing_distributed|parallel|parallel_training|dist_train|distributed_training"
    # TAP_ASR's `is_use_DDP`, SLAM-LLM's `enable_fsdp` / `enable_ddp` (corpus 43)
    r"|is_use_ddp|enable_ddp|enable_fsdp|use_fsdp|enable_distributed)"
    r"|(torch\.)?(distributed|dist)\.is_initialized\(\)",
    re.I,
)


def reads_local_rank(node, parent):
    """`os.environ["LOCAL_RANK"]`, `os.getenv("LOCAL_RANK")`: the value read. Not a write
    (`os.environ["LOCAL_RANK"] = str(args.local_rank)`) nor a membership test (`if "LOCAL_RANK" not in
    os.environ:`, Point-MAE's, which then keeps its --local_rank default on every rank)."""
    if not (isinstance(node, ast.Constant) and node.value == "LOCAL_RANK"):
        return False
    above = parent.get(node)
    if isinstance(above, ast.Subscript) and isinstance(above.ctx, ast.Store):
        return False
    return not (
        isinstance(above, ast.Compare)
        and above.left is node
        and all(isinstance(op, (ast.In, ast.NotIn)) for op in above.ops)
    )


def returns_one_ranks_count(function):
    """Whether a function returns what it sets only under a rank check in its body (Retro3D's `save_models`:
    `if self.rank < 1: ... self.early_stop += 1`, then `return self.early_stop >= 7`): rank 0's answer, which
    the others never reach."""
    parent = {c: p for p in ast.walk(function) for c in ast.iter_child_nodes(p)}

    def under_rank_check(node):
        child, above = node, parent.get(node)
        while above is not None and above is not function:
            if isinstance(above, ast.If) and child is not above.test and mentions_rank(above.test):
                return True
            child, above = above, parent.get(above)
        return False

    returned = {
        dotted(n)
        for r in ast.walk(function)
        if isinstance(r, ast.Return) and r.value is not None
        for n in ast.walk(r.value)
        if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n)
    }
    for name in returned:
        sets = assignments_to(function, name)
        if sets and all(map(under_rank_check, sets)):
            return True
    return False


def hf_trainer(checker):
    """A script that trains with a Hugging Face Trainer: transformers' or trl's `Trainer`, `SFTTrainer`,
    `Seq2SeqTrainer`, ... built and its `train()` called."""
    imported = {
        alias.asname or alias.name
        for n in checker.nodes
        if isinstance(n, ast.ImportFrom)
        and (n.module or "").split(".")[0] in ("transformers", "trl")
        for alias in n.names
        if alias.name.endswith("Trainer")
    }
    return bool(imported & set(checker.calls)) and "train" in checker.calls


def assignments_to(tree, name):
    """The assignments (`=`, `+=`, ...) in `tree` that bind the dotted `name`, alone or in a tuple
    (`self.best, self.bad = acc, 0`)."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Assign, ast.AugAssign))
        and name
        in {
            dotted(t)
            for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
            for t in (target.elts if isinstance(target, ast.Tuple) else [target])
        }
    ]


def bound_names(node):
    """The names a statement or a comprehension binds: its targets, a loop's, a walrus's, a with's."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def flags_set_under_rank_checks(nodes, parent):
    """Names set to True, False or None in the body of an `if` that picks ranks (`if dist.get_rank() != main_gpu:
    self.save_models = False`): a flag the rank decides, as `save = rank == 0` is."""
    found, made, nothing = set(), set(), set()
    for n in nodes:
        if not isinstance(n, ast.Assign):
            continue
        names = {dotted(t) for t in n.targets if dotted(t)}
        if isinstance(n.value, ast.Constant) and n.value.value is None:
            nothing |= names
        above = parent.get(n)
        if not (isinstance(above, ast.If) and n in above.body and mentions_rank(above.test)):
            continue
        if isinstance(n.value, ast.Constant) and isinstance(n.value.value, bool):
            found |= names
        elif isinstance(n.value, ast.Constant) and n.value.value is None:
            # `if rank not in [0, -1]: self._exp_conf.ckpt_dir = None`: the others write where it is not
            # None (SE(3) diffusion's checkpoints, corpus 22, seen)
            found |= names
        elif isinstance(n.value, ast.Call):
            made |= names  # `if rank == 0: log_writer = SummaryWriter(...)`, else None: `if log_writer:`
    return found | (made & nothing)


def joins(statements):
    """Whether these statements join the process group themselves (`dist.init_process_group(...)`): in an
    `if` whose else does not, that else is the run of one process."""
    return any(
        isinstance(n, ast.Call) and last(dotted(n.func)) == "init_process_group"
        for statement in statements
        for n in ast.walk(statement)
    )


def asserts_main(statement):
    """`assert dist.get_rank() == 0, "Only the first process should process"`: what follows runs on the main
    process alone (FastChat's train_flant5.py, whose other ranks wait at a barrier and then read the file)."""
    return isinstance(statement, ast.Assert) and selects_main(statement.test)


def returns_unless(statement):
    """`if not is_main: return` (or `if rank != 0: return`): what follows it runs on the selected ranks only.
    Not `if args.show_model and args.rank == 0: return`: the main process leaves, and the rest is every other
    rank's (Action-Recognition-Study's validate() calls, corpus 30)."""
    return (
        isinstance(statement, ast.If)
        and mentions_rank(statement.test)
        and not selects_main(statement.test)
        and not per_node(statement.test)
        and not statement.orelse
        and isinstance(statement.body[-1], (ast.Return, ast.Continue))
    )


class Checker:
    """The facts about one module that the rules share: its parent map, call sites, wrapped models,
    samplers, prepared schedulers; and the findings."""

    def __init__(self, path, tree):
        self.path, self.tree, self.found = path, tree, []
        self.nodes = list(ast.walk(tree))  # one walk, read by every fact and every rule
        self_parents = {child: node for node in self.nodes for child in ast.iter_child_nodes(node)}
        calls = [n for n in self.nodes if isinstance(n, ast.Call)]
        names = {last(dotted(c.func)) for c in calls}
        self.uses_accelerate = builds_accelerator(self.nodes)
        self.distributed = bool(
            names
            & {
                "init_process_group",
                "Accelerator",
                "DistributedSampler",
                "DistributedDataParallel",
                "DDP",
                "PartialState",
                "Fabric",  # Lightning Fabric: its launcher starts the processes (`lightning run model`)
            }
        )
        self.distributed = (
            self.distributed
            or any(  # WORLD_SIZE read: torchrun runs it (HF Trainer)
                isinstance(n, ast.Constant) and n.value in ("WORLD_SIZE", "LOCAL_WORLD_SIZE")
                for n in self.nodes
            )
        )
        self.shards = bool(
            names & {"DistributedSampler", "Subset", "shard", "split_dataset_by_node"}
        )
        self.reduces = bool(
            names
            & {
                "all_reduce",
                "reduce",
                "gather_for_metrics",
                "gather",
                "all_gather",
                "all_gather_object",
            }
        )
        self.project = (
            Project()
        )  # what the neighbouring modules say: check_source sets it from the path
        self.wrapped = set()  # names bound to a DDP / DataParallel / prepared model
        self.handed_ddp = (
            False  # a DDP script's call reaches this module's functions (one_call_away)
        )
        self.samplers = set()  # names bound to a DistributedSampler
        self.prepared_schedulers = set()
        self.set_epoch_called = "set_epoch" in names or any(
            isinstance(n, ast.Attribute) and n.attr == "set_epoch" for n in self.nodes
        )
        self.reads_local_rank = any(reads_local_rank(n, self_parents) for n in self.nodes)
        self.called_local_is_global = False  # the calling script's fact (one_call_away)
        self.called_eval_sharded = (
            False  # the calling script shards its evaluation data (one_call_away)
        )
        self.parent = self_parents
        self.calls = {}  # function name -> its call sites in this module (`f(...)`, `self.f(...)`)
        for call in calls:
            callee_name = last(dotted(call.func))
            if callee_name:
                self.calls.setdefault(callee_name, []).append(call)
        self.conditional_wraps = set()  # wrapped on some paths only: `if ddp: model = DDP(model)`
        # names bound to a FullyShardedDataParallel model (FSDP1's wrapper)
        self.fsdp_wrapped = set()
        for node in self.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.IfExp):
                branches = (node.value.body, node.value.orelse)  # model = DDP(m) if ddp else m
                if any(
                    isinstance(b, ast.Call) and last(dotted(b.func)) in WRAPPERS for b in branches
                ):
                    names = [dotted(t) for t in node.targets]
                    self.wrapped.update(names)
                    self.conditional_wraps.update(names)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = last(dotted(node.value.func))
                targets = [
                    t
                    for target in node.targets
                    for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                ]
                target_names = [dotted(t) for t in targets]
                if callee in WRAPPERS:
                    self.wrapped.update(target_names)
                    if callee == "FullyShardedDataParallel":
                        self.fsdp_wrapped.update(target_names)
                    if any(isinstance(p, ast.If) for p in self.parents_of(node)):
                        self.conditional_wraps.update(target_names)
                if callee == "DistributedSampler":
                    self.samplers.update(target_names)
                if callee == "prepare":
                    args = [dotted(a) for a in node.value.args]
                    for arg, target in zip(args, target_names):
                        if "sched" in arg.lower() or "lr" in arg.lower().split("_"):
                            self.prepared_schedulers.add(target)
                    # a model by its name (PREPARED_MODEL: phenaki's `self.vae`, corpus 33)
                    self.wrapped.update(
                        t
                        for a, t in zip(args, target_names)
                        if PREPARED_MODEL.search(a)
                        and not PREPARED_OTHER.search(a)
                        and not a.lower().endswith("s")
                    )

    @functools.cached_property
    def shuffling_dicts(self):
        """Names of dicts that hold shuffle=True: `{"shuffle": True}`, `dict(shuffle=True)`, `d["shuffle"] = True`,
        and those updated from one (`train_kwargs.update(cuda_kwargs)`, pytorch/examples' mnist); not those whose
        shuffle is popped (`train_kwargs.pop("shuffle")`, your-script.md item 4's fix)."""
        found, updates, popped = set(), [], set()
        for node in self.nodes:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "pop"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "shuffle"
            ):
                popped.add(dotted(node.func.value))
            if isinstance(node, ast.Assign) and shuffles_true(node.value):
                found.update(dotted(t) for t in node.targets)
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Subscript)
                and ast.unparse(node.targets[0].slice) in ("'shuffle'", '"shuffle"')
                and is_true(node.value)
            ):
                found.add(dotted(node.targets[0].value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "update" and node.args:
                    if shuffles_true(node.args[0]):
                        found.add(dotted(node.func.value))
                    updates.append((dotted(node.func.value), dotted(node.args[0])))
        for _ in updates:  # a chain of updates: one more link each pass
            found.update(target for target, source in updates if source in found)
        return found - popped - {""}

    def own_method_picks_the_rank(self, method):
        """A class of this module defines `method` and tests the rank in it (Long-Context-Biencoder's
        `def save_pretrained(self, path): if self.accelerator.is_main_process: ...`, corpus 41): a call of that
        name is most likely its own, which writes on one process."""
        return any(
            isinstance(n, ast.ClassDef)
            and any(
                isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and f.name == method
                and any(isinstance(i, ast.If) and self.picks_ranks(i.test) for i in ast.walk(f))
                for f in n.body
            )
            for n in self.nodes
        )

    def one_file_written(self, call, name, callee):
        """The path a call writes a file to (torch.save, save_pretrained, a DataFrame's to_csv/to_json/to_parquet,
        json/pickle/yaml.dump into an `open(path, "w")` handle), or None where it writes none or leaves the choice of
        process to the library (`save_pretrained(..., is_main_process=...)`, `save_function=`)."""
        if callee == "save" and re.search(r"tokenizer", dotted(call.func), re.I) and call.args:
            return call.args[0]  # tokenizer.save(path): a Hugging Face tokenizer's file
        if callee == "FileHandler" and call.args:
            mode = call.args[1] if len(call.args) > 1 else keyword(call, "mode")
            truncates = (
                isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "w" in mode.value
            )
            if not truncates and (self.log_level_by_rank() or self.logs_on_one_rank()):
                return None  # it appends, and the other ranks log warnings only: no line twice, none lost
            path = call.args[0]
            return None if self.parameter_path(call, path) else path
        if name == "logging.basicConfig" and keyword(call, "filename") is not None:
            # logging.basicConfig(filename=..., filemode="w"): a FileHandler by keywords (BiRefNet's and
            # wespeaker's log files every rank truncates, corpora 24 and 21, seen)
            # only a truncating one: every rank appending its lines to one log, at a level it may pick by
            # its rank in code doctor does not follow (STDC-Seg's setup_logger, corpus 12), loses nothing
            mode = keyword(call, "filemode")
            if not (isinstance(mode, ast.Constant) and "w" in str(mode.value)):
                return None
            path = keyword(call, "filename")
            return None if self.parameter_path(call, path) else path
        if callee == "save" and name in ("torch.save", "save"):
            path = (call.args[1:2] or [keyword(call, "f")])[0]
            return None if self.in_memory(call, path) else path
        if callee == "save_pretrained" and isinstance(call.func, ast.Attribute):
            if self.own_method_picks_the_rank(callee):
                return None  # the module's own class saves on the main process itself (corpus 41)
            if keyword(call, "is_main_process") is None and keyword(call, "save_function") is None:
                return (call.args[:1] or [keyword(call, "save_directory")])[0]
        if callee in ("to_csv", "to_json", "to_parquet") and isinstance(call.func, ast.Attribute):
            given = [*call.args[:1], keyword(call, "path_or_buf"), keyword(call, "path")]
            return next((value for value in given if value is not None), None)
        if callee == "save_to_disk" and isinstance(call.func, ast.Attribute):
            # a Hugging Face dataset written out (MDLM's tokenized cache, corpus 29, seen): its folder's files
            path = (call.args[:1] or [keyword(call, "dataset_path")])[0]
            return None if path is None or self.parameter_path(call, path) else path
        if name in MEMMAPS and call.args:
            # a memmap opened "w+" creates the file anew: every rank truncating and filling the same one
            # (self-rewarding-lm's generated preference pairs, corpus 27, seen); "r+" and "r" open what exists
            position = (
                2 if last(name) == "memmap" else 1
            )  # np.memmap(path, dtype, mode), open_memmap(path, mode)
            mode = (call.args[position : position + 1] or [keyword(call, "mode")])[0]
            if isinstance(mode, ast.Constant) and mode.value == "w+":
                path = call.args[0]
                return None if self.parameter_path(call, path) else path
        if name.startswith("shutil.copy") and keyword(call, "dst") is not None:
            path = keyword(call, "dst")  # copyfile(src=best, dst=exp_dir / "best-stage1.pt")
            return None if self.parameter_path(call, path) else path
        if name in FILE_WRITERS and len(call.args) > FILE_WRITERS[name]:
            path = call.args[
                FILE_WRITERS[name]
            ]  # np.save(path, a), fig.savefig(path), save_image(x, path)
            return None if self.parameter_path(call, path) else path
        if (
            callee in ("write_text", "write_bytes")
            and isinstance(call.func, ast.Attribute)
            and not hasattr(
                call.func.value, "qualified_from"
            )  # atomic.write_text(path, text): a module's
        ):
            path = call.func.value  # Path(out, "args.json").write_text(...)
            return None if self.parameter_path(call, path) else path
        if (
            name == "open"
            and self.opened_for_writing(call)
            and "devnull" not in ast.unparse(call.args[0])  # open(os.devnull, "w"): no file
        ):
            return None if self.parameter_path(call, call.args[0]) else call.args[0]
        if name in DUMPS and len(call.args) > 1:
            if SETTINGS.fullmatch(ast.unparse(call.args[0])):
                # the run's settings, the same bytes from every rank: yolor's `yaml.dump(hyp, f)`,
                # recognize-anything's config.yaml (corpus 17, seen; corpus 15's config.json)
                return None
            opened = call.args[1]  # json.dump(x, open(path, "w")): the handle opened in the call
            path = None
            if isinstance(opened, ast.Call) and dotted(opened.func) == "open" and opened.args:
                path = opened.args[0]
            handle = dotted(call.args[1])
            for parent in [] if path is not None else self.parents_of(call):
                if path is not None:
                    break
                for item in getattr(parent, "items", []) if isinstance(parent, ast.With) else []:
                    opened = item.context_expr
                    if dotted(item.optional_vars) != handle or not isinstance(opened, ast.Call):
                        continue
                    if dotted(opened.func) == "open" and opened.args:
                        path = opened.args[0]  # with open(path, "w") as f
                    elif isinstance(opened.func, ast.Attribute) and opened.func.attr == "open":
                        path = opened.func.value  # with path.open("w") as f
            # None: a handle from elsewhere (where it writes is not known here), or a path the caller picks
            return None if path is None or self.parameter_path(call, path) else path
        return None

    def in_memory(self, call, path):
        """torch.save(obj, buffer) where every binding of `buffer` in the function is an io.BytesIO()."""
        if not isinstance(path, ast.Name):
            return False
        scope = function_of(self, call) or self.tree
        values = [
            node.value
            for node in ast.walk(scope)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == path.id for t in node.targets)
        ]
        return bool(values) and all(
            isinstance(v, ast.Call) and last(dotted(v.func)) in ("BytesIO", "StringIO")
            for v in values
        )

    LOG_CALLS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}

    def logs_on_one_rank(self):
        """Every logging call of the module (`logger.info(...)`, `logging.info(...)`) is under a rank check, a
        node's first process's included: every rank opens the log for appending, one writes to it (rDL-SIM's
        and SimXNS's log.txt, corpus 34; CDVG's and Autoregressive-Transcription's, corpus 32)."""
        calls = [
            n
            for n in self.nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in self.LOG_CALLS
            and re.search(r"log", dotted(n.func.value), re.I)
        ]
        return bool(calls) and all(self.guarded(c, per_node_too=True) for c in calls)

    def log_level_by_rank(self):
        """`logging.basicConfig(level=logging.INFO if local_rank in [-1, 0] else logging.WARN)` or a
        `setLevel(...)` of that shape: the level chosen by the rank (the Hugging Face scripts' way)."""
        return any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in ("basicConfig", "setLevel")
            and (
                any(
                    isinstance(e, ast.IfExp) and mentions_rank(e.test)
                    for a in [*n.args, *(k.value for k in n.keywords)]
                    for e in ast.walk(a)
                )
                # `if not is_first_worker(): logger.setLevel(logging.WARN)` (SimXNS, corpus 34)
                or any(
                    isinstance(p, ast.If) and self.picks_ranks(p.test) for p in self.parents_of(n)
                )
            )
            for n in self.nodes
        )

    def opened_for_writing(self, call):
        """`with open(path, "w") as f:` or `f = open(path, "wb")` whose handle no json/pickle/yaml dump takes
        (those are reported at the dump): a file truncated and written. Appending ("a") is left alone."""
        mode = call.args[1] if len(call.args) > 1 else keyword(call, "mode")
        if not (call.args and isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
            return False
        if "w" not in mode.value and "x" not in mode.value:
            return False
        parent = self.parent.get(call)
        if isinstance(parent, ast.withitem):
            handle, body = dotted(parent.optional_vars), self.parent[parent].body
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1:
            handle, body = dotted(parent.targets[0]), siblings(self, parent)[1]
        else:
            return False  # json.dump(x, open(path, "w")) is the dump's; anything else is not known here
        dumped = any(
            isinstance(n, ast.Call)
            and dotted(n.func) in DUMPS
            and len(n.args) > 1
            and dotted(n.args[1]) == handle
            for statement in body
            for n in ast.walk(statement)
        )
        return bool(handle) and not dumped

    def parameter_path(self, call, path):
        """A path the enclosing function is handed (`def save_json(obj, path)`) in a function nothing in this
        module calls: the caller, in another module, picks both the path and the process."""
        function = function_of(self, call)
        if function is None or self.calls.get(function.name) or function.name in self.handed_on:
            return False  # called here, or handed to mp.spawn: the training function itself
        given = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        return any(isinstance(n, ast.Name) and n.id in given for n in ast.walk(path))

    def one_process_flag(self, test):
        """`args.submission`, `args.inference_dir is not None`: a flag the repository's commands pass to a
        one-process run only (Project.one_process_flags)."""
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.IsNot)
        ):
            test = test.left
        if not (isinstance(test, ast.Attribute) and self.path and Path(self.path).is_file()):
            return False
        return test.attr in Project.one_process_flags(str(Path(self.path).resolve()))

    @functools.cached_property
    def prepared_expressions(self):
        """What the module's `prepare(...)` calls take and bind, as written (`optimizer`, `self.optim`,
        `model_dict['optimizer']`): DDL119 and DDL165 read a step's optimizer against it. None where a prepare
        call takes starred or listed arguments, whose items cannot be read."""
        calls = [
            n
            for n in self.nodes
            if isinstance(n, ast.Call) and last(dotted(n.func)).startswith("prepare")
        ]
        if any(isinstance(a, (ast.Starred, ast.List, ast.Tuple)) for c in calls for a in c.args):
            return None
        prepared = set()
        for call in calls:
            prepared |= {ast.unparse(a) for a in call.args}
            parent = self.parent.get(call)
            if isinstance(parent, ast.Assign):
                for target in parent.targets:
                    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                    prepared |= {ast.unparse(e) for e in elts}
        return prepared

    @functools.cached_property
    def splits_batches(self):
        """The Accelerator splits each batch between the processes (`split_batches=True`, or a
        DataLoaderConfiguration saying so): a prepared loader keeps its length, a prepared scheduler steps once."""
        return any(
            is_true(keyword(call, "split_batches"))
            for call in self.calls.get("Accelerator", [])
            + self.calls.get("DataLoaderConfiguration", [])
        )

    @functools.cached_property
    def schedulers_step_alone(self):
        """The Accelerator is made with `step_scheduler_with_optimizer=False`: a prepared scheduler's step()
        then steps it once, not once a process."""
        return any(
            isinstance(keyword(call, "step_scheduler_with_optimizer"), ast.Constant)
            and keyword(call, "step_scheduler_with_optimizer").value is False
            for call in self.calls.get("Accelerator", [])
        )

    @functools.cached_property
    def root(self):
        """The repository around the checked file (Project.root_of), or None (a string, or no repository)."""
        return Project.root_of(self.path) if self.path != "<string>" else None

    def launched_with(self, launcher, unless=None):
        """Whether one of the repository's commands that runs this file matches the pattern `launcher` (and not
        `unless`)."""
        if self.root is None:
            return False
        named = Project.naming(self.path)
        return any(
            re.search(launcher, command)
            and named.search(command)
            and not (unless and re.search(unless, command))
            for command in Project.commands(self.root)
        )

    def under_a_flag_off_by_default(self, node, seen=()):
        """Whether `node` runs only under `if args.fp16:` (or `opt.fp16`, `fp16`), a command-line flag declared
        off by default (store_true, or a default of False, None, "" or 0) that nothing else in the repository
        names: no script, page or config passes it and no code sets it, so neither the default run nor a
        documented one takes that branch (howardlau1999's APEX branch under `--fp16`, corpus 30; LESS's
        `--save_pred` writes and SplatFormer's `--save_viewer`, corpus 31). The judges of corpora 12 to 31
        counted such findings false, and the readers tag such mistakes [config], not [full]. Or in a function of
        this module whose every call is (Amdg's `set_fp16`, called under `if self.config.fp16:`; corpus 41)."""
        for parent in self.parents_of(node):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = [c for c in self.calls.get(parent.name, []) if not is_inside(c, parent)]
                return (
                    bool(calls)
                    and parent.name not in seen
                    and parent.name not in self.handed_on
                    and all(
                        self.under_a_flag_off_by_default(c, (*seen, parent.name)) for c in calls
                    )
                )
            if isinstance(parent, DEFINITIONS):
                return False
            if not isinstance(parent, ast.If) or not _in_body(node, parent):
                continue
            test = parent.test
            if (  # `if args.seed is not None:` (S3Diff's, PASD's, StableAnimator's seed; corpus 34)
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.IsNot)
                and ast.unparse(test.comparators[0]) == "None"
            ):
                test = test.left
            if isinstance(test, (ast.Name, ast.Attribute)) and last(dotted(test)):
                flag = last(dotted(test))
                if self.root is not None:
                    if Project.flag_off(self.root, flag) or self.flag_off_in_its_runs(flag):
                        return True
                elif self.flag_off_here(flag):
                    return True
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant)
                and isinstance(test.comparators[0].value, str)
                and isinstance(test.left, (ast.Name, ast.Attribute))
                and self.root is not None
                and self.choice_not_taken(last(dotted(test.left)), test.comparators[0].value)
            ):
                return True
        return False

    def choice_not_taken(self, flag, value):
        """`if hps.dataset == 'cifar100':` in a file whose `--dataset` is declared here once with a default
        that is not the value, that no code of the repository sets, and that every command of the repository
        running this file gives another value (InNOutRobustness's CIFAR-100 branches, which its torchrun script
        runs with `--dataset cifar10`: downloads judged false, corpus 46)."""
        if PHASE_FLAGS.search(flag) or not self.path or not Path(self.path).is_file():
            return False
        spelled, _ = flag_spellings(flag)
        declared = [
            n
            for n in self.nodes
            if isinstance(n, ast.Call)
            and last(dotted(n.func)) == "add_argument"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and re.fullmatch(rf"--{spelled}", str(n.args[0].value))
        ]
        if len(declared) != 1:
            return False
        default = keyword(declared[0], "default")
        if not isinstance(default, ast.Constant) or default.value == value:
            return False
        parsed = self.parsed_names  # `hps = parser.parse_args()`
        setter = rf"\b({'|'.join(map(re.escape, parsed))})\.{re.escape(flag)}\s*=(?!=)"
        if any(
            re.search(setter, Project.text(page)) for page in Project.pages(self.root, (".py",))
        ):
            return False
        named = Project.naming(self.path)
        runs = [c for c in Project.commands(self.root) if named.search(c)]
        if not runs:
            return False
        for command in runs:
            given = re.findall(rf"--{spelled}(?:[= ]+)(\S+)", command)
            # each command names its choice: one left at the default is a choice the user is still offered
            # (cutmix's README runs train.py without --dataset, and its judge counted the cifar10 branch's
            # download true, corpus 43)
            if not given or any(g.strip("'\"") == value or "$" in g for g in given):
                return False  # taken, left to the default, or a variable the command fills in
        return True

    @functools.cached_property
    def parsed_names(self):
        """`args` and the names this module binds to what parse_args() returns (`hps = parser.parse_args()`)."""
        return {"args"} | {
            dotted(t)
            for n in self.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) in ("parse_args", "parse_known_args")
            for t in n.targets
            if isinstance(t, ast.Name)
        }

    def flag_off_in_its_runs(self, flag):
        """This file declares `--flag` once, off by default (or, declaring none, every declaration in the
        repository's Python is off), nothing sets it, no page documents it, and the repository's commands run
        this file and none of them passes it (Time-LLM's `--use_amp` and SimXNS's `--fp16`, which other scripts
        pass to other files; S3Diff's, PASD's and StableAnimator's `--seed`, default None; corpus 34, where both
        judges counted seven deprecated-AMP findings and three seeds under such flags false; corpora 26's judges
        had counted two such findings true, SemCKD's `--deterministic` seed and MS-G3D's `--save-score`). Not a
        flag for a phase of the work (resume, eval, test, load), which a user runs when it comes."""
        if PHASE_FLAGS.search(flag):
            return False  # SuPreM's --resume, medical_mae's --eval: judged true where the path was read
        spelled, declaration = flag_spellings(flag)
        declared = declaration.findall(Project.text(Path(self.path)))
        if not declared:
            # declared in a helper module (S3Diff's my_utils/training_utils.py): every declaration counts
            declared = [
                d
                for page in Project.pages(self.root, (".py",))
                for d in declaration.findall(Project.text(page))
            ]
        elif len(declared) > 1:
            return False
        if not declared or not all(map(declared_off, declared)):
            return False  # off where this file declares it: predict.py may declare its own
        # the names parse_args() binds here: `args.use_amp = True` sets the flag, StableAnimator's vendored
        # `config.seed = 2048` does not
        parsed = self.parsed_names
        setter = rf"\b({'|'.join(map(re.escape, parsed))})\.{re.escape(flag)}\s*=(?!=)"
        if any(
            re.search(setter, Project.text(page)) for page in Project.pages(self.root, (".py",))
        ):
            return False  # `args.use_amp = True` somewhere
        if any(
            re.search(rf"--{spelled}\b", Project.text(page))
            for page in Project.pages(self.root, (".md",))
        ):
            return False  # the pages document the option (BrushNet's --seed, medical_mae's --dist_eval)
        named = Project.naming(self.path)
        runs = [c for c in Project.commands(self.root) if named.search(c)]
        return bool(runs) and not any(re.search(rf"--{spelled}\b", c) for c in runs)

    def flag_off_here(self, flag):
        """flag_off for a module read alone: its own text is the whole repository."""
        return flag_off_in([(".py", self.text)], flag)

    def launched_in_processes(self):
        """The repository's commands run this file with a launcher that starts several processes: `accelerate
        launch` (not with --num_processes 1 or --cpu), torchrun, `python -m torch.distributed.launch` or `run`,
        deepspeed."""
        return self.launched_with(
            # after a variable, `nohup` or a container's exec (MNCDV3's `apptainer exec --nv ... accelerate
            # launch train.py`, scope-recommendation's `nohup accelerate launch`, corpus 32)
            r"(^|[\s;&|(])(accelerate\s+launch|torchrun|deepspeed|python3?\s+-m\s+"
            r"torch\.distributed\.(launch|run))\b",
            unless=r"--num_processes[= ]+1\b|--nproc_per_node[= ]+1\b|--cpu\b",
        )

    @functools.cached_property
    def single_node(self):
        """The repository launches this work on one machine only: its pages and shell scripts give distributed
        launches, and none names several nodes (Project.single_node). A global rank is then a local one (DEIM's
        `torchrun --nproc_per_node=4`, corpus 17, seen), and a one-writer-a-node guard the job's one writer: the
        judges of corpora 11-16 counted such writes true wherever the code could run on several nodes, those of
        corpora 25, 27 and 28 false where the repository runs on one machine, as it says."""
        return self.root is not None and (
            Project.single_node(self.root) or Project.meets_on_localhost(self.root)
        )

    @functools.cached_property
    def local_is_global(self):
        """The script makes its local rank the global one: `init_process_group(rank=local_rank)` (then it runs on
        one node only, where local rank 0 is rank 0: mri_dm, fine-tune-mistral), or `local_rank =
        dist.get_rank()` (the super-resolution course's main.py), or the node's offset added to it after the group
        forms (`args.local_rank += args.node_index * args.gpu_per_node`, CodeXGLUE's run_lm.py, corpus 15), or
        the ranks of the whole job counted against it (`for p_rank in range(args.world_size): if
        args.local_rank != p_rank:`, DRAGON, corpus 23). A one-writer-a-node guard is then rank 0's."""
        if self.called_local_is_global:
            return True
        if self.root is not None and Project.asserts_local_is_global(self.root):
            return True
        holders = {"local_rank"}  # `args.device_id = args.gpus = args.local_rank`
        for n in self.nodes:
            if isinstance(n, ast.Assign) and "local_rank" in ast.unparse(n.value).lower():
                holders |= {dotted(t) for t in n.targets}
        for n in self.nodes:
            if isinstance(n, ast.Call) and last(dotted(n.func)) == "init_process_group":
                rank = keyword(n, "rank")
                if rank is not None and (
                    "local" in ast.unparse(rank).lower() or dotted(rank) in holders
                ):
                    return True
            if (
                isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and last(dotted(n.value.func)) == "get_rank"
                and any("local_rank" in dotted(t).lower() for t in n.targets)
            ):
                return True
            if (  # CodeXGLUE's `args.local_rank += args.node_index * args.gpu_per_node`: made global
                isinstance(n, ast.AugAssign)
                and isinstance(n.op, ast.Add)
                and "local_rank" in dotted(n.target).lower()
                and any(
                    isinstance(m, ast.BinOp) and isinstance(m.op, ast.Mult)
                    for m in ast.walk(n.value)
                )
            ):
                return True
            if (  # DRAGON's `for p_rank in range(args.world_size): if args.local_rank != p_rank:` (corpus 23)
                isinstance(n, ast.For)
                and isinstance(n.target, ast.Name)
                and isinstance(n.iter, ast.Call)
                and dotted(n.iter.func) == "range"
                and any("world_size" in ast.unparse(a) for a in n.iter.args)
                and any(
                    isinstance(c, ast.Compare)
                    and {dotted(x) for x in [c.left, *c.comparators]} & {n.target.id}
                    and any("local_rank" in dotted(x) for x in [c.left, *c.comparators])
                    for c in ast.walk(n)
                )
            ):
                return True
        return False

    @functools.cached_property
    def forks_through_a_helper(self):
        """The script starts its processes through a function of another module of the project that forks or
        spawns them and sets each one's rank (DeBERTa's `initialize_distributed`, whose `os.fork()` loop sets
        `args.local_rank`; corpus 24, seen)."""
        for call in self.nodes:
            if isinstance(call, ast.Call):
                target = self.project.defined.get(dotted(call.func))
                if target is not None and re.search(
                    r"\bos\.fork\(|\bspawn\(|\bProcess\(", Project.source_of(*target)
                ):
                    return True
        return False

    @functools.cached_property
    def documented_as_one_process(self):
        """Whether every command of the repository that runs this file runs it as one process, and it starts
        no processes itself: Jarvisgivemeasuit's `torchrun --nproc_per_node=1 ood_detector_maha_linear.py`,
        VenusWSL's `python src/train.py` (corpus 46, where the judges called five findings about what
        processes do to each other false for it)."""
        if not self.path or not Path(self.path).is_file() or self.spawned:
            return False
        return Project.one_process_only(str(Path(self.path).resolve()))

    @functools.cached_property
    def spawned(self):
        """Names of this module's functions a launcher starts in every process: `mp.spawn(run, ...)`,
        `start_processes(run, ...)`, `Process(target=run)`."""
        return {
            a.id
            for c in self.nodes
            if isinstance(c, ast.Call) and last(dotted(c.func)) in LAUNCHERS
            for a in [*c.args[:1], *(k.value for k in c.keywords if k.arg in ("fn", "target"))]
            if isinstance(a, ast.Name)
        }

    @functools.cached_property
    def handed_on(self):
        """Names of this module's functions passed to a call (`mp.spawn(main_worker, ...)`)."""
        return {
            a.id
            for c in self.nodes
            if isinstance(c, ast.Call)
            for a in [*c.args, *(k.value for k in c.keywords)]
            if isinstance(a, ast.Name)
        }

    @functools.cached_property
    def words(self):
        """Every name and attribute the module reads or writes (`model_without_ddp`, `.no_sync`)."""
        return {n.id for n in self.nodes if isinstance(n, ast.Name)} | {
            n.attr for n in self.nodes if isinstance(n, ast.Attribute)
        }

    @functools.cached_property
    def passed_functions(self):
        """Names of functions registered as hooks or callbacks (`register_save_state_pre_hook(f)`,
        `add_callback(f)`): their caller decides which process runs them. A function handed to anything
        else (mp.spawn, a `run_ddp(train, ...)` of the script's own) runs on every process."""
        return {
            a.id
            for c in self.nodes
            if isinstance(c, ast.Call)
            and re.search(r"hook|register|callback|connect|atexit", last(dotted(c.func)), re.I)
            for a in [*c.args, *(k.value for k in c.keywords)]
            if isinstance(a, ast.Name)
        }

    @functools.cached_property
    def reductions(self):
        return Reductions(self.nodes)

    def never_none(self, value):
        """Whether a DataLoader's `sampler=` is a sampler on every path: a call, or a name that every
        assignment in the module binds to a call (not `... if distributed else None`, not a parameter)."""
        if isinstance(value, ast.Call):
            return True
        if not isinstance(value, ast.Name):
            return False
        values, parameter = [], False
        for node in self.nodes:
            if isinstance(node, ast.Assign) and any(dotted(t) == value.id for t in node.targets):
                values.append(node.value)
            parameter = parameter or isinstance(node, ast.arg) and node.arg == value.id
        return bool(values) and not parameter and all(isinstance(v, ast.Call) for v in values)

    def shuffles(self, sampler):
        """Whether a DistributedSampler's epoch order matters and is set nowhere this module can see: a
        training sampler (not shuffle=False, not an eval set's) that is not handed to a function defined in
        another module (pytorch/examples' FSDP passes it to a train() in utils/ that calls set_epoch)."""
        shuffle = keyword(sampler, "shuffle")
        if isinstance(shuffle, ast.Constant) and shuffle.value is False:
            return False
        names = assigned_to(self, sampler)
        text = " ".join(names + [ast.unparse(a) for a in sampler.args[:1]])
        if EVAL_WORDS.search(text):
            return False
        defined = {n.name for n in self.nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for call in (n for n in self.nodes if isinstance(n, ast.Call)):
            passed = [*call.args, *(k.value for k in call.keywords)]
            callee = last(dotted(call.func))
            if (
                callee not in defined
                and callee != "DataLoader"
                # `list(sampler)` reads its order (gcr_lerobot_2's resume, corpus 31): no epoch set there
                and not (isinstance(call.func, ast.Name) and hasattr(builtins, callee))
                and any(dotted(a) in names for a in passed if dotted(a))
                and not self.builds_a_loader_only(dotted(call.func))
            ):
                return False
        return True

    def builds_a_loader_only(self, name):
        """A function of another module of the project, read, that never sets an epoch: the fasterrcnn
        pipeline's `create_train_loader(dataset, ..., batch_sampler=train_sampler)`, which only builds the
        DataLoader (corpus 27, seen)."""
        module_path, function = self.project.defined.get(name, (None, None))
        if module_path is None:
            return False
        source = Project.source_of(module_path, function)
        return bool(source) and "set_epoch" not in source and "DataLoader(" in source

    def add(self, node, code, fixable=True, via=None):
        if code == "DDL102" and self.old_api_fallback(node):
            return
        if code in RUN_SHAPED and self.never_distributed(node):
            return  # a sampler, a write or an eval in code that only a one-process run reaches (TAPE's run_eval)
        if self.under_a_flag_off_by_default(node):
            return  # a branch neither the default run nor any documented one takes
        fixable = fixable and code in FIXABLE and via is None
        self.found.append(Finding(self.path, node.lineno, node.col_offset, code, fixable, via))

    def old_api_fallback(self, node):
        """Whether a torch.cuda.amp use is the fallback for an older torch, after the new API was tried:
        `try: from torch.amp import GradScaler` / `except ImportError: from torch.cuda.amp import GradScaler`,
        or the else branch of `if hasattr(torch, "amp"):` or of a torch version check. --fix once rewrote it into
        the call that failed."""
        child = node
        for parent in self.parents_of(node):
            if isinstance(parent, ast.ExceptHandler):
                tried = ast.unparse(ast.Module(body=self.parent[parent].body, type_ignores=[]))
                if "torch.amp" in tried or "from torch import amp" in tried:
                    return True
            if (
                isinstance(parent, ast.If)
                and child in parent.orelse
                or isinstance(parent, ast.IfExp)
                and child is parent.orelse
            ) and re.search(r"amp|version|torch", ast.unparse(parent.test), re.I):
                return True  # `if hasattr(torch, "amp"): ... else:`, `... if TORCH_GE_2_4 else ...`
            # `if version.parse(torch.__version__) < version.parse("2.4.0"):` the old spelling, `else:` the
            # new one (speechbrain's core.py, corpus 24, seen)
            if (
                isinstance(parent, ast.If)
                and child in parent.body
                and re.search(r"version|hasattr", ast.unparse(parent.test), re.I)
                and re.search(
                    r"torch\.(amp\b|GradScaler|autocast)|from torch import amp",
                    ast.unparse(ast.Module(body=parent.orelse, type_ignores=[])),
                )
            ):
                return True
            child = parent
        return False

    def guarded(self, node, seen=(), per_node_too=False):
        """Under a rank check, or in a function of this module whose every call is (recursively): the
        pattern of pytorch/examples, `if rank == 0: save_checkpoint(...)` around a helper that saves. Or in a
        branch the script asserts never runs distributed. `per_node_too`: one process per node counts."""
        if self.never_distributed(node):
            return True
        child = node
        for parent in self.parents_of(node):
            if isinstance(parent, ast.If) and self.picks_ranks(parent.test):
                one_a_node = per_node(parent.test) or any(
                    dotted(n) in self.local_rank_holders
                    for n in ast.walk(parent.test)
                    if isinstance(n, (ast.Name, ast.Attribute))
                )
                # one writer a node is the job's one writer where the repository launches on one machine only
                # (its judges on corpora 25, 27 and 28 counted those writes false: MMAudio's `torchrun
                # --standalone`, the RSNA solution's run scripts)
                return per_node_too or not one_a_node or self.local_is_global or self.single_node
            if (
                isinstance(parent, ast.If)
                and "__main__" in ast.unparse(parent.test)
                and any(
                    isinstance(n, ast.Call) and last(dotted(n.func)) in LAUNCHERS
                    for n in ast.walk(parent)
                )
            ):
                return True  # the launcher's own lines, before mp.spawn starts the ranks
            if isinstance(child, ast.stmt) and any(
                returns_unless(s) or asserts_main(s) for s in siblings(self, child)[0]
            ):
                return True
            child = parent
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                mentions_rank(d) or "main_process" in ast.unparse(d) or "master" in ast.unparse(d)
                for d in parent.decorator_list
            ):
                return True  # @main_process, @master_only, @rank_zero_only: the decorator picks the rank
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                last(dotted(n.func)) in (*LAUNCHERS, "Popen")
                for n in ast.walk(parent)
                if isinstance(n, ast.Call)
            ):
                return (
                    True  # the launcher's function: it runs once, before mp.spawn starts the ranks
                )
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside = {id(n) for n in ast.walk(parent)}
                calls = [  # its call sites: not itself, not another module's function of that name
                    c
                    for c in self.calls.get(parent.name, [])
                    if id(c) not in inside
                    and not dotted(c.func).startswith(
                        ("torch.", "np.", "numpy.", "json.", "pickle.")
                    )
                ]
                if parent.name in self.spawned:
                    return False  # mp.spawn runs it on every rank, whatever its direct calls (vall-e's run)
                if not calls and parent.name in self.passed_functions:
                    return True  # a hook or callback (register_save_state_pre_hook(f)): its caller decides
                if not calls and function_of(self, parent) is not None:
                    continue  # a function defined inside another runs where that one runs (OLMo's hook)
                if not calls or parent.name in seen:
                    return False
                return all(self.guarded(call, (*seen, parent.name), per_node_too) for call in calls)
        return False

    def callers_elsewhere(self, node, methods_only=False):
        """In a function (or a class's __init__) that nothing in this module calls nor hands on: a helper whose
        callers, in other modules, decide which process makes it (StudioGAN's `worker.save()`, called under `if
        global_rank == 0` in loader.py). `methods_only`: a class's methods only (a top-level function no one
        here calls is as often the entry point mp.spawn runs on every rank: StudioGAN's `load_worker`)."""
        function = function_of(self, node)
        if function is None:
            return False
        if methods_only and not any(isinstance(p, ast.ClassDef) for p in self.parents_of(function)):
            return False
        if any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in ("Accelerator", "init_process_group")
            for n in ast.walk(function)
        ):
            return False  # it makes the Accelerator or joins the group: every process runs it (audiolm)
        name = function.name
        if name == "__init__":
            cls = next((p for p in self.parents_of(function) if isinstance(p, ast.ClassDef)), None)
            name = cls.name if cls is not None else name
        return not self.calls.get(name) and name not in self.words  # not called, not handed on

    def after_early_exit(self, node):
        """Whether an `if not is_main: return` (or `continue`) comes before `node` in its function: what
        follows runs on the selected ranks only (imagen-pytorch's save(), whose barrier the others never reach)."""

        def exits(
            statement,
        ):  # not `if not fsdp_eval and not is_rank0: return`: the exit has a second say
            return returns_unless(statement) and not (
                isinstance(statement.test, ast.BoolOp) and isinstance(statement.test.op, ast.And)
            )

        child = node
        for parent in self.parents_of(node):
            if isinstance(child, ast.stmt) and any(map(exits, siblings(self, child)[0])):
                return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return False
            child = parent
        return False

    @property
    def wraps_in_ddp(self):
        """The model is in DDP: wrapped here, by an importer of this module, or handed by a DDP script's call."""
        return bool(
            set(self.calls) & {"DistributedDataParallel", "DDP"}
            or self.handed_ddp
            or self.project.wrapped_by_importer
        )

    @functools.cached_property
    def off_when_distributed(self):
        """Flags the script asserts false when distributed: `if LOCAL_RANK != -1: assert not opt.evolve`
        (yolov5's and yolov9's hyperparameter evolution runs in one process)."""
        return {
            ast.unparse(n.test.operand)
            for n in self.nodes
            if isinstance(n, ast.Assert)
            and isinstance(n.test, ast.UnaryOp)
            and isinstance(n.test.op, ast.Not)
            and any(
                isinstance(p, ast.If)
                and re.search(r"rank|world_size|distributed|ddp", ast.unparse(p.test), re.I)
                for p in self.parents_of(n)
            )
        }

    def never_distributed(self, node, seen=()):
        """Whether `node` sits in a branch that only a flag asserted off when distributed leads to, or after a
        function's `if args.distributed: raise NotImplementedError()` (PoinTr's test_net) or `local_rank = -1`
        (TAPE's run_eval), or in a function that only such code calls."""
        child = node
        for parent in self.parents_of(node):
            if isinstance(child, ast.stmt) and any(
                map(asserts_one_process, siblings(self, child)[0])
            ):
                return True  # after `assert opt.local_rank == -1, 'DDP mode not implemented for --evolve'`
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(
                    (refuses_distributed(s) or binds_no_rank(s)) and s.lineno < node.lineno
                    for s in parent.body
                    if s is not child
                ):
                    return True
                callers = [c for c in self.calls.get(parent.name, []) if not is_inside(c, parent)]
                if (
                    callers
                    and parent.name not in seen
                    and parent.name not in self.handed_on
                    and all(self.never_distributed(c, (*seen, parent.name)) for c in callers)
                ):
                    return True
            if isinstance(parent, ast.If):
                test, taken = parent.test, child not in parent.orelse
                if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    test, taken = test.operand, not taken
                if (  # `if (parallel == True):` (transfuser) is `if parallel:`
                    isinstance(test, ast.Compare)
                    and len(test.ops) == 1
                    and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.NotEq, ast.IsNot))
                    and isinstance(test.comparators[0], ast.Constant)
                    and type(test.comparators[0].value) is bool
                ):
                    negated = isinstance(test.ops[0], (ast.NotEq, ast.IsNot))
                    taken ^= negated ^ (not test.comparators[0].value)
                    test = test.left
                if taken and ast.unparse(test) in self.off_when_distributed:
                    return True
                if not taken and DISTRIBUTED_FLAG.fullmatch(ast.unparse(test)):
                    return True  # the else of `if distributed:` (or `if args.ddp:`): one process
                if taken and not_distributed(test) or not taken and launched_test(test):
                    # `if args.local_rank == -1:`, and the else of `if args.local_rank != -1:` (OpenMatch's
                    # one-process save_trec beside each rank's own file, corpus 41)
                    return True
                if not taken and joins(parent.body) and not joins(parent.orelse):
                    return True  # the else of the branch that joins the group (VL-BERT's `if args.dist:`)
                if taken and self.one_process_flag(test):
                    return True  # `if args.submission:`, a flag only one-process commands pass
            child = parent
        return False

    @functools.cached_property
    def rank_flags(self):
        """Names bound to a rank test (`args.should_save = ... and is_master(args)`, `save = rank == 0`):
        an `if` on them picks ranks as the test itself would."""

        def a_test(
            value,
        ):  # rank == 0, is_master(args) and x, not is_main, accelerator.is_main_process
            if isinstance(value, (ast.Compare, ast.BoolOp, ast.UnaryOp)):
                return True
            if isinstance(value, ast.Call):
                return bool(re.match(r"is_|should_", last(dotted(value.func))))
            return isinstance(value, ast.Attribute) and value.attr.startswith("is_")

        flags = {
            dotted(t)
            for n in self.nodes
            if isinstance(n, ast.Assign) and a_test(n.value) and mentions_rank(n.value)
            for t in n.targets
            # a name the rank words do not already read: `main_worker = (local_rank == 0 and rank == 0)`
            # (fsdp-for-transformer, corpus 33)
            if dotted(t) and not mentions_rank(t)
        } | set(flags_set_under_rank_checks(self.nodes, self.parent))
        # transformers' `args.should_save`, which the Trainer sets on the main process (on one a node with
        # save_on_each_node), where the module sets no `.should_save` of its own (open_clip does)
        if not any(
            isinstance(t, ast.Attribute) and t.attr == "should_save"
            for n in self.nodes
            if isinstance(n, ast.Assign)
            for t in n.targets
        ):
            flags |= {
                dotted(n)
                for n in self.nodes
                if isinstance(n, ast.Attribute)
                and n.attr == "should_save"
                and dotted(n)
                and not (  # not a function of that name (`utils.should_save()`)
                    isinstance(self.parent.get(n), ast.Call) and self.parent[n].func is n
                )
            }
        # `should_log = should_write and logging` (AdaBins, corpus 17): one link a pass
        for _ in range(2):
            flags |= {
                dotted(t)
                for n in self.nodes
                if isinstance(n, ast.Assign)
                and isinstance(n.value, ast.BoolOp)
                and isinstance(n.value.op, ast.And)
                and any(dotted(v) in flags for v in n.value.values)
                for t in n.targets
                if dotted(t)
            }
        return flags

    def calls_a_helper_saying(self, pattern, whole_module=False):
        """Whether a function of the project that this module calls has `pattern` in its source (an init helper
        that reads LOCAL_RANK, sets the device, or returns before it joins); `whole_module`: in the source of
        the module that defines it (a trainer whose epoch loop, another function there, sets the epoch)."""
        return any(
            re.search(
                pattern,
                Project.text(target[0]) if whole_module else Project.source_of(*target),
            )
            for n in self.nodes
            if isinstance(n, ast.Call)
            and (target := self.project.defined.get(dotted(n.func))) is not None
        )

    def rank_test_function(self, call):
        """A call of a project function whose return is a test of the rank: ANCE's `is_first_worker()` (`return
        not dist.is_initialized() or dist.get_rank() == 0`), s3prl's `is_leader_process()`, sssegmentation's
        `ismainprocess()` (`return str(os.environ['RANK']) in ['0']`): corpus 18, seen."""
        target = self.project.defined.get(dotted(call.func))
        if target is None:
            return False
        returns = re.findall(r"^\s*return (.+)$", Project.source_of(*target), re.M)
        return bool(returns) and all(
            re.search(r"rank|RANK", r) and re.search(r"==\s*0\b|in \[\s*['\"]?0|<=\s*0\b", r)
            for r in returns
        )

    def picks_ranks(self, test):
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            # `is_main and force is True or (not exists(force) and asked())` (audiolm-pytorch, corpus 13):
            # where a side names neither a rank nor whether the run is distributed, it holds on every rank
            # `args.local_rank == -1 or get_rank() == 0` (DialoGPT, corpus 17): -1 is a one-process run
            return any(self.picks_ranks(v) for v in test.values) and all(
                self.picks_ranks(v)
                or DISTRIBUTION_WORDS.search(ast.unparse(v))
                or not_distributed(v)
                for v in test.values
            )
        if mentions_rank(test):
            return True
        if isinstance(test, ast.BoolOp) and any(self.picks_ranks(v) for v in test.values):
            return True  # `steps % 1000 == 0 and gpu == 0`
        if any(self.rank_test_function(n) for n in ast.walk(test) if isinstance(n, ast.Call)):
            return True  # `if is_first_worker():` (ANCE), `if ismainprocess():` (sssegmentation)
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value != -1
            and dotted(test.left) in self.rank_holders
        ):
            return True  # `gpu == 0` where `init_process_group(rank=gpu)`: gpu is the rank
        return any(
            dotted(n) in self.rank_flags
            or isinstance(n, ast.Attribute)
            and n.attr in self.keyed_rank_flags
            or isinstance(n, ast.Subscript)
            and isinstance(n.slice, ast.Constant)
            and n.slice.value in self.keyed_rank_flags
            for n in ast.walk(test)
            if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))
        )

    def made_of(self, expression, depth=3):
        """The expression and what its names were assigned anywhere in the module, link by link, `depth` links
        down (`max_train_steps = epochs * steps_per_epoch`, itself `len(loader) // gas`)."""
        values, names = [expression], {dotted(m) for m in ast.walk(expression) if dotted(m)}
        for _ in range(depth):
            made = [
                n.value
                for n in self.nodes
                if isinstance(n, ast.Assign) and any(dotted(t) in names for t in n.targets)
            ]
            values += made
            names = {dotted(m) for v in made for m in ast.walk(v) if dotted(m)}
        return values

    def dataset_shards(self, call):
        """The loader's dataset is given the rank or the world size (`ShardedDataset(path, rank=rank)`), or is a
        project class whose source reads them: it shards itself."""
        dataset = call.args[0] if call.args else keyword(call, "dataset")
        if dataset is None:
            return True
        # what the dataset is made of, link by link (FiD's examples, loaded per rank)
        for value in self.made_of(dataset):
            if re.search(r"rank|world_size|num_replicas|process_index", ast.unparse(value), re.I):
                return True
            for made in ast.walk(value):
                target = (
                    self.project.defined.get(dotted(made.func))
                    if isinstance(made, ast.Call)
                    else None
                )
                # contriever's data.load_data, whose module splits its files by get_rank()
                if target is not None and re.search(
                    r"rank|world_size|num_replicas|split_by_node|shard", Project.text(target[0])
                ):
                    return True
        return False

    @functools.cached_property
    def text(self):
        """The module's source as its tree (names qualified) reads back: what a rule searches for words."""
        return ast.unparse(self.tree)

    @functools.cached_property
    def loaders_built(self):
        """(assignment, name, call) of each `name = DataLoader(...)` of the module: what DDL156 and DDL159 read."""
        return [
            (n, dotted(n.targets[0]), n.value)
            for n in self.nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) == "DataLoader"
            and dotted(n.targets[0])
        ]

    def bound_to(self, callee):
        """The names this module binds to a call of `callee` (`sampler = RandomSampler(ds)`: "sampler")."""
        return {
            dotted(t)
            for n in self.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) == callee
            for t in n.targets
        }

    @functools.cached_property
    def keyed_rank_flags(self):
        """Keys of a config set to a rank test (`params['log_to_wandb'] = (global_rank == 0) and
        params['log_to_wandb']`, multiple physics pretraining, corpus 23, seen), read later as the config's
        attribute (`if self.params.log_to_wandb:`) or item."""
        return {
            t.slice.value
            for n in self.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, (ast.Compare, ast.BoolOp))
            and mentions_rank(n.value)
            for t in n.targets
            if isinstance(t, ast.Subscript)
            and isinstance(t.slice, ast.Constant)
            and isinstance(t.slice.value, str)
            and not re.search(r"rank|main|master", t.slice.value, re.I)
        }

    @functools.cached_property
    def rank_holders(self):
        """Names handed to `init_process_group(rank=...)` that do not say rank (DROID-SLAM's `rank=gpu`, corpus
        14): the process's rank under another name, so `if gpu == 0:` picks rank 0. And names bound to the rank
        modulo a count (`device = rank % torch.cuda.device_count()`, sngp-segmentation's, corpus 20, seen): the
        local rank, so `if device == 0:` picks one process a node."""
        handed = {
            dotted(rank)
            for n in self.nodes
            if isinstance(n, ast.Call) and last(dotted(n.func)) == "init_process_group"
            for rank in [keyword(n, "rank")]
            if rank is not None and dotted(rank) and not mentions_rank(rank)
        }
        return handed | self.local_rank_holders

    @functools.cached_property
    def local_rank_holders(self):
        return {
            dotted(t)
            for n in self.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.BinOp)
            and isinstance(n.value.op, ast.Mod)
            and mentions_rank(n.value.left)
            for t in n.targets
            if dotted(t) and not mentions_rank(t)
        }

    def parents_of(self, node):
        """The nodes around `node`, innermost first, outside the test of an `if` it sits in."""
        child, parent = node, self.parent.get(node)
        while parent is not None:
            if not (isinstance(parent, ast.If) and child is parent.test):
                yield parent
            child, parent = parent, self.parent.get(parent)


# Every rule is one class, the way TorchFix writes its visitors: `Rule.run` visits the module with the facts
# the Checker gathered (its parent map, call sites, wrapped names) and reports its one code. RULE_CLASSES, at
# the end, is the registry.
def asserts_one_process(statement):
    """`assert opt.local_rank == -1, '...'`, `assert not args.distributed`, `assert args.world_size == 1`: what
    follows it in its block runs in a one-process run only (yolor's --evolve branch, corpus 17; DRAGON's
    evaluation, corpus 23: seen)."""
    if not isinstance(statement, ast.Assert):
        return False
    test = statement.test
    return not_distributed(test) or (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and ast.unparse(test.comparators[0]) == "1"
        and (last(dotted(test.left)) or "").lower() == "world_size"
    )


def binds_no_rank(statement):
    """`local_rank = -1  # TAPE does not support torch.distributed.launch for evaluation` in a function's body:
    what follows in it runs as one process (TAPE's run_eval and run_embed, corpus 23, seen)."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and mentions_rank(statement.targets[0])
        and ast.unparse(statement.value) == "-1"
    )


def refuses_distributed(statement):
    """`if args.distributed: raise NotImplementedError()`: what follows never runs distributed."""
    return (
        isinstance(statement, ast.If)
        and bool(DISTRIBUTED_FLAG.fullmatch(ast.unparse(statement.test)))
        and bool(statement.body)
        and all(isinstance(s, ast.Raise) for s in statement.body)
        and not statement.orelse
    )


def reached_at(checked_path, module, line):
    """Where a mistake one call (or several) away is, as a finding's `via` gives it: the module's path from the
    checked file's folder, and the line (`engine.py:48`)."""
    return f"{os.path.relpath(module, Path(checked_path).resolve().parent)}:{line}"


def is_inside(node, scope):
    return scope.lineno <= node.lineno <= scope.end_lineno


class Rule:
    """One code. `begin` looks at the module (False: nothing to visit), then `visit_<NodeType>` is called for
    every node of that type in one walk shared by all the rules (run_rules), then `end`."""

    code = ""
    # a rule of distributed runs alone: nothing to visit in a module that joins no process group and does not
    # use Accelerate
    distributed_only = False

    def __init__(self, checker):
        self.m = checker

    def begin(self):
        return not self.distributed_only or self.m.distributed or self.m.uses_accelerate

    def end(self):
        pass

    def add(self, node, fixable=True):
        self.m.add(node, self.code, fixable)

    def function_of(self, node):
        return function_of(self.m, node)

    def bound_before(self, call, name):
        """What `name` was last bound to before `call` in its function: `state_dict = self.vae.state_dict()`
        then `torch.save(state_dict, model_path)` (phenaki's trainer, corpus 33)."""
        scope = self.function_of(call) or self.m.tree
        values = [
            n.value
            for n in scope_nodes(scope, DEFINITIONS)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and dotted(n.targets[0]) == name
            and n.lineno < call.lineno
        ]
        return values[-1] if values else None

    def in_test(self, node):
        """Inside a test_* function: a test runs in one process."""
        function = self.function_of(node)
        return function is not None and function.name.startswith("test_")

    def rank_check(self, node):
        """(condition, polarity) of the innermost `if` around `node` (in its body or else, not its test) that
        picks some ranks, or None. The condition is written without a leading `not`; polarity is False in the
        else branch or under `not`."""
        child, parent = node, self.m.parent.get(node)
        while parent is not None:
            if (
                isinstance(parent, ast.If)
                and child is not parent.test
                and self.m.picks_ranks(parent.test)
            ):
                test, polarity = parent.test, child not in parent.orelse
                if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                    test, polarity = test.operand, not polarity
                return ast.unparse(test), polarity
            child, parent = parent, self.m.parent.get(parent)
        return None

    def every_rank_on_a_shared_folder(self, call, folder, handled_is_safe):
        """A folder made or removed by every process: not one named by the rank, not under a rank check (one a
        node included: shared folders are rare), not in a method whose callers are in another module, not in a
        test; with `handled_is_safe`, not inside a `try` that handles the error (a makedirs race's only harm)."""
        if (
            PER_RANK.search(ast.unparse(folder))
            or self.m.guarded(call, per_node_too=True)
            or self.m.callers_elsewhere(call, methods_only=True)
            or self.in_test(call)
        ):
            return False
        for parent in self.m.parents_of(call) if handled_is_safe else ():
            if isinstance(parent, ast.Try) and parent.handlers:
                return False  # the error is handled
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
        return True

    def add_first_of_each(self, pairs):
        """`pairs` of (node, names): a finding at the first node in the source that shows a name not shown
        before. One mistake, one finding, however many lines show it: the fix is where the name is made."""
        reported = set()
        for node, names in sorted(pairs, key=lambda p: (p[0].lineno, p[0].col_offset)):
            if names - reported:
                reported |= names
                self.add(node, fixable=False)

    def report_first(self, nodes):
        """One finding, at the first of `nodes` in the source (the rules walk the tree breadth first, not in
        source order): one mistake a file, however many lines show it."""
        if nodes:
            self.add(min(nodes, key=lambda n: (n.lineno, n.col_offset)), fixable=False)

    def trains_deep(self, statements):
        """trains(), or a call of a function or method of this module whose body trains (seed-vc's
        `self._process_batch(...)`)."""
        defined = self.m.reductions.defined
        return trains(statements) or any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in defined
            and trains(defined[last(dotted(n.func))].body)
            for s in statements
            for n in ast.walk(s)
        )

    def innermost_loop(self, node):
        """The innermost for/while loop around `node` within its function, or None."""
        for parent in self.m.parents_of(node):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None
            if isinstance(parent, (ast.For, ast.While)):
                return parent
        return None


class DeprecatedLauncher(Rule):
    """DDL101: torch.distributed.launch imported or run, or a --local_rank argument parsed, in a script that
    does not read LOCAL_RANK from the environment."""

    code = "DDL101"

    def visit_ImportFrom(self, node):
        if (node.module or "").startswith("torch.distributed.launch"):
            self.add(node)

    def visit_Import(self, node):
        if any(alias.name.startswith("torch.distributed.launch") for alias in node.names):
            self.add(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value in (
            "--local_rank",
            "--local-rank",
            "torch.distributed.launch",
        ):
            parent = self.m.parent.get(node)
            if node.value == "--local_rank" and self.rejected_by_the_documented_launcher(parent):
                # read from LOCAL_RANK or not: argparse stops the launch the repository documents
                self.add(node)
            elif node.value.startswith("--local") and self.m.reads_local_rank:
                pass  # the script reads LOCAL_RANK from the environment too: the argument is a leftover
            elif node.value.startswith("--local") and self.reads_local_rank_through_a_helper():
                pass  # DUSt3R's init_distributed_mode (croco/utils/misc.py) reads LOCAL_RANK for it
            elif node.value.startswith("--local") and self.starts_processes():
                pass  # the script starts its own processes and hands each its rank (NVAE's Process)
            elif node.value.startswith("--local") and self.both_spellings(parent):
                pass  # add_argument("--local-rank", "--local_rank") or one call for each: both parse
            elif node.value.startswith("--local") and self.overwritten():
                pass  # RoboFlamingo's `args.local_rank, ... = world_info_from_env()`: a leftover flag
            elif node.value.startswith("--local") and self.launched_by_deepspeed():
                pass  # LISA's `deepspeed train_ds.py`: DeepSpeed's launcher passes --local_rank itself
            elif node.value.startswith("--local") and self.never_read():
                pass  # parsed and never read: the launch works whichever launcher runs it
            elif isinstance(parent, ast.Call) and last(dotted(parent.func)) in (
                "add_argument",
                "run",
                "Popen",
                "call",
                "check_call",
                "check_output",
            ):
                self.add(node)
            elif isinstance(parent, ast.List) and node.value == "torch.distributed.launch":
                self.add(node)

    def overwritten(self):
        """The parsed local rank is bound again from a call (`args.local_rank, args.rank, args.world_size =
        world_info_from_env()`, corpus 22, seen): the flag's value is never read, whatever passes it."""
        return any(
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) != "parse_args"
            and any(
                last(dotted(t)) == "local_rank" and dotted(t) != "local_rank"
                for target in n.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            )
            for n in self.m.nodes
        )

    def never_read(self):
        """Whether nothing reads the parsed local rank: no `args.local_rank` (but assignments to it),
        `["local_rank"]` or `getattr(..., "local_rank")` in this module or any Python file of its repository
        (pangu-pytorch-demo's finetune scripts, KelpChallenge's Fabric script, a MIL trainer's config.py: corpus
        32, where the judges counted the finding false: torchrun runs them as they are)."""
        read = re.compile(
            r"\.local_rank\b(?!\s*=(?!=))|\[\s*['\"]local_rank['\"]\s*\]|getattr\([^)]*['\"]local_rank"
        )
        pages = Project.pages(self.m.root, (".py",)) if self.m.root is not None else ()
        texts = [self.m.text, *(Project.text(p) for p in pages)]
        return not any(read.search(text) for text in texts)

    def launched_by_deepspeed(self):
        """The repository's commands run this file with DeepSpeed's launcher (`deepspeed train_ds.py ...`),
        which hands every process `--local_rank=N` (LISA, corpus 22, seen): the argument is the launcher's."""
        # `CUDA_VISIBLE_DEVICES=0,1 deepspeed --master_port 520 train.py` (ChatGLM-Finetuning, corpus 23)
        return self.m.launched_with(r"^\s*(\w+=\S*\s+)*deepspeed\b")

    def starts_processes(self):
        """The module starts its processes itself: `mp.spawn(run, ...)`, `Process(target=run)`, or a function
        of another module (LSGM's `Process(target=utils.init_processes, ...)`, corpus 19, seen)."""
        return self.m.forks_through_a_helper or any(
            isinstance(c, ast.Call)
            and last(dotted(c.func)) in LAUNCHERS
            and any(
                dotted(a)
                for a in [*c.args[:1], *(k.value for k in c.keywords if k.arg in ("fn", "target"))]
            )
            for c in self.m.nodes
        )

    def rejected_by_the_documented_launcher(self, call):
        """Whether `add_argument("--local_rank")` alone (no `--local-rank` beside it) is read by a strict
        `parse_args()` in a project whose README or shell scripts launch with `torch.distributed.launch`: torch
        2's launcher passes `--local-rank=N`, which argparse rejects, so the documented launch dies at start
        however the script reads LOCAL_RANK after (sam-hq, U2PL, imaginaire, seg-gdkd: corpora 11-13, seen)."""
        text = Project.text(Path(self.m.path))
        return (
            isinstance(call, ast.Call)
            and last(dotted(call.func)) == "add_argument"
            and not self.both_spellings(call)
            and "parse_known_args" not in text
            and ".parse_args(" in text
            and Project.documents_launch(Path(self.m.path))
        )

    def reads_local_rank_through_a_helper(self):
        """Whether a function of the project that this module calls reads LOCAL_RANK from the environment:
        the environment's "LOCAL_RANK", not a config's field of that name (RepVGG's config.LOCAL_RANK)."""
        return self.m.calls_a_helper_saying(r"[\'\"]LOCAL_RANK[\'\"]")

    def both_spellings(self, call):
        spelled = {
            n.value
            for n in self.m.nodes
            if isinstance(n, ast.Constant) and n.value in ("--local_rank", "--local-rank")
        }
        return len(spelled) == 2


class DeprecatedAmp(Rule):
    """DDL102: torch.cuda.amp (imported or spelled out) and NVIDIA APEX's amp; not the old-torch
    fallback after torch.amp was tried (Checker.add leaves those out)."""

    code = "DDL102"

    def visit_ImportFrom(self, node):
        module = node.module or ""
        apex = module == "apex" and any(a.name == "amp" for a in node.names)
        # an APEX import the script never reads runs nothing deprecated (style-transfer's `try: from apex
        # import amp`, with no amp call in the file; corpus 42)
        if apex and self.read("amp", node) or module.startswith("apex.amp"):
            self.add(node)
        elif module == "torch.cuda.amp" and self.used(node):
            self.add(node)
        elif module == "torch.cuda" and self.used(node, only="amp"):
            self.add(node)  # `from torch.cuda import amp`

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name in ("apex.amp",):
                self.add(node)
            elif alias.name.startswith("torch.cuda.amp") and (not alias.asname or self.used(node)):
                self.add(node)

    def read(self, name, node):
        """Whether the name an import binds is read anywhere a run goes, qualified or as written (`amp = None`
        in the except beside the import leaves it unqualified): not only under a flag no command passes (UVC's
        and HRKD's `if args.fp16:` around every amp call, corpus 46, judged false)."""
        bound = next((a.asname or a.name for a in node.names if a.name == name), name)
        return any(
            (
                getattr(n, "qualified_from", None) == bound
                or isinstance(n, ast.Name)
                and n.id == bound
                and isinstance(n.ctx, ast.Load)
            )
            and not self.m.under_a_flag_off_by_default(n)
            for n in self.m.nodes
        )

    def used(self, node, only=None):
        """Whether a name this import binds (of the imported `only`, if given) is read anywhere (an import the
        script never uses runs nothing deprecated: RocWeather's `import torch.cuda.amp as amp`, VITS's under
        Accelerate; corpus 21, seen)."""
        bound = {alias.asname or alias.name for alias in node.names if only in (None, alias.name)}
        return any(getattr(n, "qualified_from", None) in bound for n in self.m.nodes)

    def visit_Attribute(self, node):
        name = dotted(node)
        base = node
        while isinstance(base, ast.Attribute) and not hasattr(base, "qualified_from"):
            base = base.value
        if hasattr(base, "qualified_from"):
            pass  # an imported name, resolved (`amp.autocast` after `import torch.cuda.amp as amp`): its
            # import is reported
        elif (
            name.startswith("torch.cuda.amp.")
            and name.count(".") == 3
            and not self.in_annotation(node)
        ):
            self.add(node)
        # not apex.parallel.DistributedDataParallel: a DDP wrapper, no mixed precision (read as amp twice,
        # corpora 12 and 13: OFAKD, TorchSemiSeg)
        if name in ("amp.initialize", "apex.amp.initialize") and self.imports_apex:
            self.add(node)

    def in_annotation(self, node):
        """In a type annotation (`scaler: torch.cuda.amp.GradScaler`, Music-Source-Separation-Training's
        parameter, corpus 39): a name read by no one at run time, nothing deprecated called."""
        child = node
        for parent in self.m.parents_of(node):
            if isinstance(parent, (ast.arg, ast.AnnAssign)) and child is parent.annotation:
                return True
            if (
                isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef))
                and child is parent.returns
            ):
                return True
            child = parent
        return False

    @functools.cached_property
    def imports_apex(self):
        """Whether the module imports apex at all: with `# import apex` commented out, `apex.amp.initialize(...)`
        is a NameError, no mixed precision (MS-G3D's --half branch, corpus 26, seen)."""
        return any(
            isinstance(n, ast.ImportFrom)
            and (n.module or "").split(".")[0] == "apex"
            or isinstance(n, ast.Import)
            and any(a.name.split(".")[0] == "apex" for a in n.names)
            for n in self.m.nodes
        )


class CallRule(Rule):
    """A rule that looks at calls: `check(call, name, callee)` with the call's qualified name and its last
    part."""

    def visit_Call(self, node):
        name = dotted(node.func)
        self.check(node, name, last(name))

    def check(self, call, name, callee):
        raise NotImplementedError


class DataParallelUse(CallRule):
    """DDL103: nn.DataParallel (the import alone is not a use), in a script with no DDP path. Beside a DDP wrap it
    is the one-process fallback the user picks by not launching (`if args.distributed: DDP(...) else:
    DataParallel(...)`): corpora 15 and 16 (seen), judged false by three judges of four."""

    code = "DDL103"

    def check(self, call, name, callee):
        if callee == "DataParallel" and not self.m.wraps_in_ddp and not self.shards():
            self.add(call)

    def shards(self):
        """An FSDP path beside it (`FSDP(model, ...)`, `fully_shard(model)`): the DataParallel is the one-process
        fallback, as beside a DDP wrap (visual-recognition-memory's train_fsdp.py, corpus 32)."""
        return any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in ("FSDP", "FullyShardedDataParallel", "fully_shard")
            for n in self.m.nodes
        )


class ShuffleWithSampler(CallRule):
    """DDL104: DataLoader(shuffle=True, sampler=...), the shuffle given as a keyword or through a kwargs dict.
    --fix drops the keyword only where the sampler is one on every path."""

    code = "DDL104"

    def check(self, call, name, callee):
        if callee != "DataLoader" or keyword(call, "sampler") is None:
            return
        if is_true(keyword(call, "shuffle")):
            # where the sampler may be None, dropping shuffle=True would drop the order of that run
            self.add(call, fixable=self.m.never_none(keyword(call, "sampler")))
        elif any(
            k.arg is None and dotted(k.value) in self.m.shuffling_dicts for k in call.keywords
        ):  # DataLoader(ds, sampler=s, **loader_kwargs): the dict's shuffle, reported only
            self.add(call, fixable=False)


class SamplerWithoutSetEpoch(CallRule):
    """DDL105: a training DistributedSampler in a module that never calls set_epoch."""

    code = "DDL105"

    def check(self, call, name, callee):
        if self.timm_sampler(call, name) and not self.m.set_epoch_called:
            self.add(call, fixable=False)
            return
        if (
            callee == "DistributedSampler"
            and (
                not self.m.set_epoch_called
                or self.epoch_never_reaches_a_sampler
                or self.epoch_never_moves
                or self.left_out(call)
                or self.epoch_set_before_the_steps
                and call is self.first_sampler(call)
            )
            and self.m.shuffles(call)
            and not self.epoched_by_a_trainer()
            and not self.in_a_library_trainer(call)
        ):
            self.add(call)

    def timm_sampler(self, call, name):
        """timm's `create_loader(dataset, is_training=True, distributed=...)`, which builds a DistributedSampler
        of its own when distributed: its epoch is the script's to set (timm's train.py calls
        `loader_train.sampler.set_epoch(epoch)`). Under Accelerate, a loader that prepare() takes (no prefetcher)
        gets its epoch from accelerate; timm's PrefetchLoader, the default, is no DataLoader and does not
        (accelerate_timm's train.py, corpus 37)."""
        if not name.startswith("timm.") or last(name) != "create_loader":
            return False
        distributed = keyword(call, "distributed")
        prefetcher = keyword(call, "use_prefetcher")
        return (
            is_true(keyword(call, "is_training"))
            and distributed is not None
            and not (isinstance(distributed, ast.Constant) and not distributed.value)
            and not (
                self.m.uses_accelerate
                and isinstance(prefetcher, ast.Constant)
                and prefetcher.value is False
            )
        )

    @functools.cached_property
    def set_epoch_calls(self):
        return [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "set_epoch"
        ]

    @functools.cached_property
    def epoched(self):
        """What the module's set_epoch calls are made on: `train_sampler`, `loader.sampler`."""
        return {dotted(n.func.value) for n in self.set_epoch_calls}

    def gets_its_epoch(self, sampler):
        """Whether a sampler's name, or a loader built on it (`loader = DataLoader(ds, sampler=s)`, or a helper
        given `sampler=s`), is given set_epoch in this module."""
        if sampler in self.epoched:
            return True
        return any(
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and dotted(keyword(n.value, "sampler") or ast.Pass()) == sampler
            and any(f"{dotted(t)}.sampler" in self.epoched for t in n.targets)
            for n in self.m.nodes
        )

    def left_out(self, call):
        """A shuffling sampler that never gets its epoch where one built beside it (in the same function) does:
        the script sets epochs by hand and forgot this one (HSI_domain_adaptation's target_sampler beside
        `source_dataloader.sampler.set_epoch(epoch)`, corpus 35). Not where its name goes anywhere but into a
        loader (a helper may set it)."""
        names = assigned_to(self.m, call)
        if len(names) != 1 or not names[0] or self.gets_its_epoch(names[0]):
            return False
        uses = [
            n
            for n in self.m.nodes
            if isinstance(n, (ast.Name, ast.Attribute))
            and isinstance(n.ctx, ast.Load)
            and dotted(n) == names[0]
        ]
        if any(
            not (
                isinstance(self.m.parent.get(u), ast.keyword) and self.m.parent[u].arg == "sampler"
            )
            for u in uses
        ):
            return False
        function = self.function_of(call)
        beside = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call)
            and n is not call
            and last(dotted(n.func)) == "DistributedSampler"
            and self.function_of(n) is function
            and self.m.shuffles(n)
        ]
        return any(
            len(assigned_to(self.m, n)) == 1 and self.gets_its_epoch(assigned_to(self.m, n)[0])
            for n in beside
        )

    def first_sampler(self, call):
        """The first DistributedSampler built in the function of `call` (one finding, however often a resume
        builds it again)."""
        function = self.function_of(call)
        return min(
            (
                n
                for n in self.m.nodes
                if isinstance(n, ast.Call)
                and last(dotted(n.func)) == "DistributedSampler"
                and self.function_of(n) is function
            ),
            key=lambda n: (n.lineno, n.col_offset),
        )

    @functools.cached_property
    def epoch_set_before_the_steps(self):
        """Every set_epoch of the module is made once, before a loop of steps that draws its batches with
        next() (`while step < cfg.steps: batch = next(dataloader_iter)` over a cycled loader), outside any loop:
        every pass over the data after the first repeats its order (gcr_lerobot_2's set_epoch only in its
        resume branch, corpus 31). Not a loop over the loader itself (`train_one_epoch`'s, which its caller
        runs once an epoch)."""
        calls = self.set_epoch_calls
        for call in calls:
            function = self.function_of(call)
            if function is None:
                return False
            for parent in self.m.parents_of(call):
                if parent is function:
                    break
                if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
                    return False
            steps = [
                loop
                for loop in scope_nodes(function)
                if isinstance(loop, (ast.While, ast.For))
                and loop.lineno > call.lineno
                and (
                    isinstance(loop, ast.While)
                    or "range" in dotted(getattr(loop.iter, "func", ast.Pass()))
                )
                and any(
                    isinstance(n, ast.Call) and dotted(n.func) == "next" for n in ast.walk(loop)
                )
                and self.trains_deep(loop.body)
            ]
            if not steps:
                return False
        return bool(calls)

    @functools.cached_property
    def epoch_never_moves(self):
        """Every set_epoch of the module is given the same value each epoch: a constant, or a name its loop never
        binds again (CuiJiali-CV's pytorch-ddp, `train_dl.sampler.set_epoch(global_step)` with `global_step = 0`
        before the loop and never counted; corpus 30). Every epoch then shuffles as the first did."""
        calls = self.set_epoch_calls
        for call in calls:
            value = call.args[0] if call.args else None
            loops = []
            for parent in self.m.parents_of(call):
                if isinstance(parent, DEFINITIONS):
                    break
                if isinstance(parent, (ast.For, ast.While)):
                    loops.append(parent)
            if isinstance(value, ast.Constant) and loops:
                continue  # `set_epoch(0)` once, outside a loop: one epoch, as it should
            shared = {  # `global step`: another function may count it
                name
                for n in self.m.nodes
                if isinstance(n, (ast.Global, ast.Nonlocal))
                for name in n.names
            }
            if not isinstance(value, ast.Name) or not loops or value.id in shared:
                return False
            if any(value.id in bound_names(n) for n in ast.walk(loops[-1])):
                return False
        return bool(calls)

    @functools.cached_property
    def epoch_never_reaches_a_sampler(self):
        """Every set_epoch of the module is on a parameter of a function (`def cycle_loader(dataloader,
        sampler=None): ... sampler.set_epoch(...)`) that no call of it in the module passes (SEDD's
        `cycle_loader(DataLoader(train_set, sampler=train_sampler))`, corpus 23, seen): no sampler gets it."""
        calls = self.set_epoch_calls
        for call in calls:
            function = self.function_of(call)
            owner = dotted(call.func.value)
            if function is None:
                return False
            params = [a.arg for a in function.args.posonlyargs + function.args.args]
            if owner not in params + [a.arg for a in function.args.kwonlyargs]:
                return False
            position = params.index(owner) if owner in params else None
            uses = self.m.calls.get(function.name, [])
            if not uses or any(
                keyword(use, owner) is not None
                or position is not None
                and len(use.args) > position
                or any(isinstance(a, ast.Starred) for a in use.args)
                or any(k.arg is None for k in use.keywords)
                for use in uses
            ):
                return False
        return bool(calls)

    def in_a_library_trainer(self, call):
        """In a method of a subclass of transformers' Trainer (`get_train_sampler` overridden): the Trainer's
        epoch loop sets the epoch on its loader's sampler itself (babylm's CustomTrainer, corpus 20, seen)."""
        return any(
            isinstance(parent, ast.ClassDef)
            and any(
                re.fullmatch(r"(transformers|trl)\.(\w+\.)*\w*Trainer", dotted(base))
                for base in parent.bases
            )
            for parent in self.m.parents_of(call)
        )

    def epoched_by_a_trainer(self):
        """A project module whose function this module calls sets the epoch on the loader's own sampler
        (foundation-model-stack's trainer.py: `data.sampler.set_epoch(epoch)` in the epoch loop that
        `trainer.train(...)` runs; corpus 19, seen)."""
        return self.m.calls_a_helper_saying(r"\.sampler\.set_epoch\(", whole_module=True)

    def end(self):
        """A sampler built by the same helper as one that gets set_epoch, that does not get it itself:
        TorchSemiSeg's `unsupervised_train_loader_0, unsupervised_train_sampler_0 = get_train_loader(...)`
        beside `train_loader, train_sampler = get_train_loader(...)`, only `train_sampler.set_epoch(epoch)`: the
        unlabeled samplers repeat one order every epoch (corpus 13, seen)."""
        epoched = self.epoched
        built = []  # (the helper, the tuple position, the name, the assignment)
        for node in self.m.nodes:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)
            ):
                for i, element in enumerate(node.targets[0].elts):
                    if "sampler" in dotted(element).lower():
                        built.append((dotted(node.value.func), i, dotted(element), node))
        self.built_modules_away()
        used = {
            n.id for n in self.m.nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for helper, i, name, node in built:
            twins = [b for b in built if b[0] == helper and b[1] == i and b[2] in epoched]
            if twins and name not in epoched and name not in used and not EVAL_WORDS.search(name):
                self.add(node, fixable=False)

    def built_modules_away(self):
        """A shuffling training sampler built by a project function (HigherHRNet's make_dataloader in
        lib/dataset/build.py, ViT-pytorch's get_loader, vq-vae-2's `dist.data_sampler(ds, shuffle=True, ...)`)
        in a module that runs the epochs (the loader or sampler is used inside a loop here) and never calls
        set_epoch, nor does the code it hands them to in that loop (corpus 14, seen)."""
        m = self.m
        if (
            m.set_epoch_called
            and not self.epoch_never_moves
            or m.uses_accelerate
            # a helper that builds a DistributedSampler runs in a process group: the module that calls it is
            # distributed whatever it says itself (slurm-pytorch-ddp-boilerplate's trainer.py, corpus 30)
            or not (m.distributed or m.project.train_sampler_helpers)
        ):
            return
        loops = [n for n in m.nodes if isinstance(n, (ast.For, ast.While))]
        if not m.distributed:  # then a loop that trains: not a data module's demo loop (OpenSTL's)
            loops = [loop for loop in loops if self.trains_deep(loop.body)]
        for node in m.nodes:
            if not isinstance(node, ast.Call):
                continue
            name = dotted(node.func)
            where = m.project.train_sampler_helpers.get(name)
            parent = m.parent.get(node)
            named = [  # `train_ds, test_ds = dataloader.load_data(...)` (CMGAN, corpus 17, seen)
                dotted(e)
                for t in (parent.targets if isinstance(parent, ast.Assign) else [])
                for e in (t.elts if isinstance(t, ast.Tuple) else [t])
            ]
            train = asks_train(node) or any(
                re.match(r"train", n.rsplit(".", 1)[-1], re.I) for n in named
            )
            if where is None and name in m.project.sampler_helpers and train:
                target = m.project.defined.get(name)
                where = (target[0], Project.spans(target[0])[target[1]][0]) if target else None
            if where is None:
                continue
            # not a switch's name: `make_test=True` asks for a test loader besides the training one
            # (TransformerCVAE's prepare_dataset, corpus 41)
            said = [ast.unparse(a) for a in node.args] + [
                ast.unparse(k)
                for k in node.keywords
                if not (isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool))
            ]
            parent = m.parent.get(node)
            bound = []
            if isinstance(parent, ast.Assign):
                for target in parent.targets:
                    elements = target.elts if isinstance(target, ast.Tuple) else [target]
                    bound += [dotted(e) for e in elements if dotted(e)]
            # and the loader built over the sampler: `loader = DataLoader(ds, sampler=sampler)`
            for other in m.nodes:
                if (
                    isinstance(other, ast.Assign)
                    and isinstance(other.value, ast.Call)
                    and any(
                        dotted(a) in bound
                        for a in [*other.value.args, *(k.value for k in other.value.keywords)]
                    )
                ):
                    bound += [dotted(t) for t in other.targets if dotted(t)]
            if any(EVAL_WORDS.search(s) for s in said) or any(
                k.arg
                and ("train" in k.arg or k.arg == "shuffle")
                and isinstance(k.value, ast.Constant)
                and k.value.value is False
                for k in node.keywords
            ):
                continue  # the eval split's loader, or a sampler asked not to shuffle
            # handed to a trainer that keeps it by its name
            kept = {f"self.{last(b)}" for b in bound}
            inside = [
                n
                for loop in loops
                for n in ast.walk(loop)
                if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in {*bound, *kept}
            ]
            if "set_epoch" in Project.text(where[0]):
                continue
            # not iterated here: handed on by a script that runs distributed (DiffuSeq's
            # `TrainLoop(data=load_data_text(...))`, corpus 29; not a data module's `return create_loader(...)`),
            # where no Python file of the repository sets an epoch at all
            if not inside and (
                not m.distributed or m.root is None or Project.sets_epochs(m.root) or not bound
            ):
                continue
            handed = {  # what the loop hands them to: its own set_epoch would count
                dotted(c.func)
                for loop in loops
                for c in ast.walk(loop)
                if isinstance(c, ast.Call) and any(dotted(a) in bound for a in c.args)
            }
            if any(
                "set_epoch" in Project.source_of(*m.project.defined[h])
                for h in handed
                if h in m.project.defined
            ):
                continue
            module, line = where
            via = reached_at(m.path, module, line)
            m.add(node, self.code, False, via)


# a value that wraps a model: DDP, DataParallel, accelerate's prepare; not ConditionalDDPM, a class RIR-DM names
# (corpus 32) (DDL106, DDL163)
WRAPPING = re.compile(r"DistributedDataParallel|\bDDP\b|DataParallel|\bprepare\b")


class WrappedStateDict(CallRule):
    """DDL106: torch.save(model.state_dict(), ...) where model is a DDP / DataParallel / prepared model.
    --fix adds `.module` only where the wrap is unconditional (unwrap_model under Accelerate always)."""

    code = "DDL106"

    def check(self, call, name, callee):
        saved = call.args[0] if call.args else None
        if isinstance(saved, ast.Name):
            saved = self.bound_before(call, saved.id)
        if (
            callee == "save"
            and name in ("torch.save", "save")
            and isinstance(saved, ast.Call)
            and last(dotted(saved.func)) == "state_dict"
        ):
            owner = dotted(saved.func.value) if isinstance(saved.func, ast.Attribute) else ""
            if (
                owner in self.m.wrapped
                # FSDP's own state_dict() gives the plain names; its `.module` is DDL154's mistake
                and owner not in self.m.fsdp_wrapped
                and not self.wrapped_later(call, owner)
                and not self.m.never_distributed(call)  # the else of `if ddp:`: never wrapped there
                and not self.unwrapped_beside(call, owner)
                and not self.own_wrapper_unwraps(owner)
                and not self.a_parameter_never_handed_a_wrap(call, owner)
            ):  # `.module` of a model wrapped on some paths only fails on the others
                unwrap = self.m.uses_accelerate or owner not in self.m.conditional_wraps
                self.add(call, fixable=unwrap)

    def a_parameter_never_handed_a_wrap(self, call, owner):
        """`owner` is a parameter of the function around the save, and no call of that function in the module
        hands it a wrapped name: champ's `save_checkpoint(model, ...)`, called with `unwrap_model.denoising_unet`
        (corpus 29), saves the plain model whatever the script's `model` is."""
        handed = arguments_for(self.m, self.function_of(call), owner)
        return handed is not None and not any(
            dotted(g) in self.m.wrapped for _, given in handed for g in given
        )

    def own_wrapper_unwraps(self, owner):
        """The wrap is the project's own DistributedDataParallel class, whose `state_dict` returns the inner
        module's (sentiment-discovery's model/distributed.py, corpus 17, seen): no `module.` prefix."""
        for n in self.m.nodes:
            if (
                isinstance(n, ast.Assign)
                and any(dotted(t) == owner for t in n.targets)
                and isinstance(n.value, ast.Call)
            ):
                target = self.m.project.defined.get(dotted(n.value.func))
                if target is not None and re.search(
                    r"def state_dict\([^)]*\):[\s\S]*?self\.module\.state_dict\(",
                    Project.source_of(*target),
                ):
                    return True
        return False

    def unwrapped_beside(self, call, owner):
        """The other branch of the `if` around the save saves `owner.module.state_dict()`: the script unwraps
        where it wrapped (VISTA's `if world_size > 1:` ... `else: torch.save(model.state_dict(), ...)`)."""
        for parent in self.m.parents_of(call):
            if isinstance(parent, ast.If):
                other = parent.body if _in_orelse(call, parent) else parent.orelse
                return any(
                    f"{owner}.module.state_dict()" in ast.unparse(s) for s in other
                ) and not self.counts_gpus_not_processes(parent.test, owner)
        return False

    def counts_gpus_not_processes(self, test, owner):
        """`if args.n_gpu > 1:` around the unwrapped save, where DDP wraps `owner` under another test and the
        project sets `n_gpu = 1` in each DDP process (the old Hugging Face examples' pattern): under DDP the
        else branch runs and saves the wrapper (OpenMatch's train.py, corpus 41)."""
        if not re.search(r"\bn_gpu\s*>\s*1\b", ast.unparse(test)):
            return False
        ddp_wraps = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and any(dotted(t) == owner for t in n.targets)
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) in ("DistributedDataParallel", "DDP")
        ]
        if not ddp_wraps or any(
            isinstance(p, ast.If) and "n_gpu" in ast.unparse(p.test)
            for w in ddp_wraps
            for p in self.m.parents_of(w)
        ):
            return False
        texts = [self.m.text]
        if self.m.root is not None:
            texts += Project.python_texts(self.m.root)
        return any(re.search(r"\bn_gpu\s*=\s*1\b", t) for t in texts)

    def wrapped_later(self, call, owner):
        """Every wrap of `owner` in this function comes after the save: the model saved is not wrapped yet
        (rank 0 saving the initial weights for the others to load)."""
        scope = self.function_of(call) or self.m.tree
        lines = [
            n.lineno
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and any(dotted(t) == owner for t in n.targets)
            and isinstance(n.value, (ast.Call, ast.IfExp))
            and WRAPPING.search(ast.unparse(n.value))
        ]
        return bool(lines) and min(lines) > call.lineno


class LoadIntoWrapper(CallRule):
    """DDL163: `model.load_state_dict(...)` on a DDP-wrapped or accelerate-prepared model in a module whose
    saves take the unwrapped model's state dict (`model.module.state_dict()`, `unwrap_model(model)`, a name or
    property made from them) and never the wrapper's own: the keys differ by the `module.` prefix. MeshGPT's
    trainer saves `self.unwrapped_model.state_dict()` and loads into the prepared `self.model` (corpus 27, seen).
    Not a load made before the wrap in the same function, not an FSDP model's, not where no process group runs."""

    code = "DDL163"

    def begin(self):
        wrappers = self.m.wrapped - self.m.fsdp_wrapped
        if not wrappers:
            return False
        saved = [  # the owners of the state dicts a function that saves takes
            dotted(n.func.value)
            for function in [self.m.tree, *self.m.nodes]
            if isinstance(function, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))
            if self.saves(function)
            for n in scope_nodes(function, DEFINITIONS)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "state_dict"
        ]
        self.unwrapped_saves = [o for o in saved if UNWRAPPED.search(o)]
        return bool(self.unwrapped_saves) and not any(o in wrappers for o in saved)

    def saves(self, function):
        return any(
            isinstance(n, ast.Call)
            and (
                dotted(n.func) in ("torch.save", "safetensors.torch.save_file")
                or dotted(n.func).endswith(".save")
            )
            for n in scope_nodes(function, DEFINITIONS)
        )

    def check(self, call, name, callee):
        if callee != "load_state_dict" or not isinstance(call.func, ast.Attribute):
            return
        owner = dotted(call.func.value)
        if owner not in self.m.wrapped or owner in self.m.fsdp_wrapped:
            return
        if self.m.never_distributed(call) or not self.wrapped_at(call, owner):
            return
        handed = arguments_for(self.m, self.function_of(call), owner)
        if handed and all(
            given and all(UNWRAPPED.search(dotted(g) or ast.unparse(g)) for g in given)
            for _, given in handed
        ):
            return  # EVP's `load_model(ckpt, model.module)` at every call (corpus 34): the plain model
        if self.prefixed(call):
            return
        self.add(call, fixable=False)

    def prefixed(self, call):
        """Whether the state dict loaded is one the function filled with keys it gave the wrapper's `module.`
        prefix: ArcFace_PyTorch's `k = 'module.' + k; new_state_dict_model[k] = v` before
        `self.model.load_state_dict(new_state_dict_model)` (corpus 45, judged false twice)."""
        given = (call.args[:1] or [keyword(call, "state_dict")])[0]
        if not isinstance(given, ast.Name):
            return False
        scope = self.function_of(call) or self.m.tree
        filled = any(
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Subscript) and dotted(t.value) == given.id for t in n.targets)
            for n in ast.walk(scope)
        )
        text = ast.unparse(scope)
        return filled and bool(re.search(r"""['"]module\.['"]\s*\+|f['"]module\.\{""", text))

    def wrapped_at(self, call, owner, depth=3):
        """Whether `owner` is the wrapper where it loads: its last binding before the load in the load's
        function (or module) is the wrap, or it has none there (an attribute or a global wrapped elsewhere). Not
        a model bound again to the plain network first (the migrated quickstart's `model = NeuralNetwork()`
        before it loads its file back) nor one wrapped only after the load."""
        scope = self.function_of(call) or self.m.tree
        bindings = self.bindings(scope, owner)
        before = [wraps for line, wraps in bindings if line < call.lineno]
        if before:
            return before[-1]
        if not bindings and depth and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a method that loads, called from __init__ before the wrap (the DDP tutorial series'
            # `self._load_snapshot(path)`, then `self.model = DDP(self.model)`; corpus 30)
            callers = [c for c in self.m.calls.get(scope.name, []) if not is_inside(c, scope)]
            return not callers or any(self.wrapped_at(c, owner, depth - 1) for c in callers)
        return not bindings  # bound only after the load: not wrapped yet

    def bindings(self, scope, owner):
        """(line, whether it wraps) of each binding of `owner` in a function or module."""
        return sorted(
            (
                n.lineno,
                bool(WRAPPING.search(ast.unparse(n.value))),
            )
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and any(owner in {dotted(t), *map(dotted, getattr(t, "elts", []))} for t in n.targets)
        )


# the owner of a state_dict() that is the inner model: `model.module`, `unwrap_model(model)`, `unwrapped_model`,
# `model_without_ddp` (DDL163)
UNWRAPPED = re.compile(r"\.module$|unwrap|without_ddp|_no_ddp")


def fsdp_before(checker, node, owner):
    """`owner` names a FullyShardedDataParallel model at `node`: the module wraps that name, the function (or
    module) around `node` binds it last to the wrap or not at all (a parameter: simsiam's train_one_epoch), not
    to a model a helper wraps later (Lumina's `model = setup_fsdp_sync(model)` after rank 0 reads the plain
    model), and `node` is not in the branch of a test on FSDP that runs without it (open_lm's `cpu_state if
    args.fsdp else model.state_dict()`)."""
    if owner not in checker.fsdp_wrapped:
        return False
    scope = function_of(checker, node) or checker.tree
    bindings = sorted(
        (
            n.lineno,
            isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) == "FullyShardedDataParallel",
        )
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign)
        and n.lineno < node.lineno
        and any(dotted(t) == owner for t in n.targets)
    )
    if bindings and not bindings[-1][1]:
        return False  # bound here last to something else: a parameter's or a global's name is the wrap's
    branch = fsdp_branch(checker, node)
    return branch is None or branch  # in the branch where FSDP is on, or under no test of it


def fsdp_branch(checker, node):
    """Whether `node` sits in the FSDP-on branch of the innermost `if` (or conditional expression) around it
    that tests FSDP (`if args.fsdp:`, `if use_fp16 and not enable_fsdp:`); None where no test mentions it."""
    child = node
    for parent in checker.parents_of(node):
        if isinstance(parent, (ast.If, ast.IfExp)) and "fsdp" in ast.unparse(parent.test).lower():
            negated = isinstance(parent.test, ast.UnaryOp) and isinstance(parent.test.op, ast.Not)
            in_else = child is parent.orelse or (
                isinstance(parent.orelse, list) and child in parent.orelse
            )
            return in_else == negated
        child = parent
    return None


def fsdp_wraps(checker):
    """Whether the module wraps a model in FullyShardedDataParallel (FSDP1), or a project module it imports does
    (chinese_pretrain's env.py, which its train.py imports; corpus 21, seen)."""
    return bool(checker.fsdp_wrapped) or any(
        "FullyShardedDataParallel" in Project.text(m) for m in checker.project.imported
    )


class FsdpPlainScaler(CallRule):
    """DDL153: a GradScaler (torch.amp's or torch.cuda.amp's, or a project class that makes one: MAE's
    NativeScalerWithGradNormCount) in a module where FullyShardedDataParallel wraps the model, with no
    ShardedGradScaler. Not under FSDP2's fully_shard, whose DTensor gradients GradScaler reads whole."""

    code = "DDL153"

    def begin(self):
        words = set(self.m.calls) | self.m.words
        return "ShardedGradScaler" not in words and fsdp_wraps(self.m)

    def check(self, call, name, callee):
        if self.chosen_by_fsdp(call):
            return
        if callee == "GradScaler" and name.split(".")[0] in ("torch", "GradScaler", "amp"):
            self.add(call, fixable=False)
            return
        target = self.m.project.defined.get(name)
        source = Project.source_of(*target) if target is not None else ""
        if "GradScaler(" in source and "ShardedGradScaler" not in source:
            self.add(call, fixable=False)  # simsiam's `loss_scaler = NativeScaler()` (misc.py)

    def chosen_by_fsdp(self, call):
        """The scaler sits in a branch that asks whether FSDP is on (`if use_fp16 and not enable_fsdp:`), or
        after an assertion that it is off (open_lm's `assert not args.fsdp`): the script picks its scaler."""
        if fsdp_branch(self.m, call) is not None:
            return True
        child = call
        for parent in self.m.parents_of(call):
            if isinstance(child, ast.stmt) and any(
                isinstance(s, ast.Assert) and "fsdp" in ast.unparse(s.test).lower()
                for s in siblings(self.m, child)[0]
            ):
                return True
            child = parent
        return False


class FsdpInnerStateDict(CallRule):
    """DDL154: `model.module.state_dict()` where `model` is a FullyShardedDataParallel model, or the
    state_dict() of a name bound to its `.module` (`model_without_ddp = model.module`)."""

    code = "DDL154"

    def begin(self):
        if not self.m.fsdp_wrapped:
            return False
        self.inner = {
            dotted(t)
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Attribute)
            and n.value.attr == "module"
            and dotted(n.value.value) in self.m.fsdp_wrapped
            for t in n.targets
            if dotted(t)
        }
        return True

    def check(self, call, name, callee):
        if callee != "state_dict" or not isinstance(call.func, ast.Attribute):
            return
        owner = call.func.value
        if (
            isinstance(owner, ast.Attribute)
            and owner.attr == "module"
            and fsdp_before(self.m, call, dotted(owner.value))
        ) or dotted(owner) in self.inner:
            self.add(call, fixable=False)


class FsdpShardNormClip(CallRule):
    """DDL158: torch.nn.utils.clip_grad_norm_ over the parameters of a FullyShardedDataParallel model (FSDP1):
    wrapped here (`model = FSDP(net)`), or made by a function of the project that wraps one (moshi-finetune's
    `model = get_fsdp_model(args)`, corpus 24, seen). Each rank holds a shard of each gradient, so each computes
    the norm of its own shard and scales it by its own factor: measured on gloo at 2 processes, 0.756 and 1.422
    where the whole gradient's norm, which FSDP's own `model.clip_grad_norm_` gave on both ranks, was 1.611.
    Not under FSDP2's fully_shard, whose DTensor gradients torch.nn.utils reads whole (1.611 on both, measured),
    nor in the branch of a test that runs without FSDP."""

    code = "DDL158"

    def begin(self):
        if "fully_shard" in self.m.calls:
            return False
        self.made = {}  # name -> bound to a call of a project function that wraps in FSDP1
        for node in self.m.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                target = self.m.project.defined.get(dotted(node.value.func))
                if target is not None and self.wraps_in_fsdp1(*target):
                    for t in node.targets:
                        self.made[dotted(t)] = node
        return bool(self.m.fsdp_wrapped or self.made)

    @staticmethod
    def wraps_in_fsdp1(module_path, function):
        """A project function that wraps in FullyShardedDataParallel, by that name or the one its module
        imports it as (translate_vi_en_bidir's `model = FSDP(...)` in utils.py, corpus 41)."""
        names = {"FullyShardedDataParallel"} | set(
            re.findall(r"FullyShardedDataParallel\s+as\s+(\w+)", Project.text(module_path))
        )
        source = Project.source_of(module_path, function)
        return any(re.search(rf"\b{re.escape(n)}\(", source) for n in names)

    def check(self, call, name, callee):
        if callee != "clip_grad_norm_" or not name.startswith("torch.nn.utils"):
            return
        if not call.args or not isinstance(call.args[0], ast.Call):
            return
        given = call.args[0].func
        if not isinstance(given, ast.Attribute) or given.attr != "parameters":
            return
        owner = dotted(given.value)
        if fsdp_branch(self.m, call) is False:
            return  # the branch that runs without FSDP
        if fsdp_before(self.m, call, owner) or (
            owner in self.made and self.made[owner].lineno < call.lineno
        ):
            self.add(call, fixable=False)


class WriteOnEveryRank(CallRule):
    """DDL107: one file written (torch.save, save_pretrained, to_csv, json.dump) with no guard that picks one
    process in the job; not a file name made from the rank. A library's write whose path is made from what
    its loop binds (one file per item: each rank writes its own items) or inside a test_* function is not
    reported either."""

    code = "DDL107"

    def check(self, call, name, callee):
        if (
            name in self.m.project.writer_helpers
            and self.m.distributed
            and not any(
                self.per_rank(call, a) for a in [*call.args, *(k.value for k in call.keywords)]
            )
            and not self.m.guarded(call)
        ):
            self.add(call)  # a helper of another module that writes on every call
            return
        path = self.m.one_file_written(call, name, callee)
        if (
            path is not None
            and (self.m.distributed or self.m.uses_accelerate)
            and not self.per_rank(call, path)
            and not (callee != "save" and (self.per_item(call, path) or self.in_test(call)))
            and not self.m.in_memory(call, path)
            and not self.temporary(call, path)
            and not self.m.guarded(call)
        ):
            self.add(call)

    TEMPORARY = ("TemporaryDirectory", "mkdtemp", "NamedTemporaryFile", "mkstemp")

    def temporary(self, call, path):
        """A path in a folder or file tempfile made for this process alone: visualDet3D's cfg_from_file copies
        the config into `with tempfile.TemporaryDirectory() as temp_config_dir` (corpus 45, judged false)."""
        names = {n.id for n in ast.walk(path) if isinstance(n, ast.Name)}
        if not names:
            return False
        scope = self.function_of(call) or self.m.tree
        for node in ast.walk(scope):
            made = []
            if isinstance(node, (ast.With, ast.AsyncWith)):
                made = [(i.optional_vars, i.context_expr) for i in node.items]
            elif isinstance(node, ast.Assign):
                made = [(t, node.value) for t in node.targets]
            for target, value in made:
                if (
                    isinstance(value, ast.Call)
                    and last(dotted(value.func)) in self.TEMPORARY
                    and target is not None
                    and {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} & names
                ):
                    return True
        return False

    def per_rank(self, call, path):
        """A file name made from the rank, written out or bound to a name first (`queue_path = ... + str(rank)`,
        every binding of the name in the function, or the module, made from the rank)."""
        if PER_RANK.search(ast.unparse(path)):
            return True
        scope = self.function_of(call) or self.m.tree
        for name in {n.id for n in ast.walk(path) if isinstance(n, ast.Name)}:
            # `os.path.join(out, opt_state_fn)` with `opt_state_fn = f"optimizer.{rank:05d}..."` one line up
            values = [
                node.value
                for node in ast.walk(scope)
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            ]
            if values and all(PER_RANK.search(ast.unparse(value)) for value in values):
                return True
        return False

    def fixed_items(self, loop):
        """A loop over items the script wrote out, the same on every rank: `for model, name in ((vae,
        "vae"), (ema, "ema")):`, or over a name bound only to such tuples (muse-maskgit's vaes_to_evaluate)."""
        if not isinstance(loop, ast.For):
            return False
        if (
            isinstance(loop.iter, ast.Call)
            and dotted(loop.iter.func) == "range"
            and not PER_RANK.search(ast.unparse(loop.iter))
        ):  # `for epoch in range(start, epochs)`: the same epochs on every rank (ChartReformer, corpus 28);
            return True  # not `range(rank, n, world_size)`, each rank's own

        own = loop.iter.id if isinstance(loop.iter, ast.Name) else None

        def literal(value):  # a tuple or list written out, or grown from one: `((ema, ...),) + own`
            if isinstance(value, ast.BinOp):
                return literal(value.left) and literal(value.right)
            return isinstance(value, (ast.Tuple, ast.List)) or dotted(value) == own

        if not isinstance(loop.iter, ast.Name):
            return isinstance(loop.iter, (ast.Tuple, ast.List, ast.BinOp)) and literal(loop.iter)
        scope = self.function_of(loop) or self.m.tree
        values = [
            node.value
            for node in ast.walk(scope)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == loop.iter.id for t in node.targets)
        ]
        return bool(values) and all(map(literal, values))

    def per_item(self, call, path):
        used = {n.id for n in ast.walk(path) if isinstance(n, ast.Name)}
        for parent in self.m.parents_of(call):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return False
            if self.fixed_items(parent):
                continue  # every rank writes the same files for them
            if isinstance(parent, (ast.For, ast.While)):
                if used & self.bound_per_item(parent):
                    return True
        return False

    @staticmethod
    def bound_per_item(loop):
        """The names a loop binds to its item: its target's, and those its body binds from them (`name =
        batch["id"]`, link by link). Not a name the body binds from the run's counters alone (ChartReformer's
        `output_dir = f"step_{completed_steps}"` in its training loop, the same on every rank; corpus 28)."""
        target = getattr(loop, "target", None)
        bound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target else set()
        assignments = [
            n
            for statement in loop.body
            for n in ast.walk(statement)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With))
        ]
        if target is None:  # a while loop: whatever its body binds
            return {
                n.id
                for statement in loop.body
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        for _ in range(3):
            for node in assignments:
                value = getattr(node, "value", None) or getattr(node, "iter", None)
                if value is None and isinstance(node, ast.With):
                    value = ast.Tuple([i.context_expr for i in node.items], ast.Load())
                if value is None or not bound & {
                    n.id for n in ast.walk(value) if isinstance(n, ast.Name)
                }:
                    continue
                targets = getattr(node, "targets", None) or [
                    getattr(node, "target", None),
                    *[i.optional_vars for i in getattr(node, "items", [])],
                ]
                bound |= {
                    n.id
                    for t in targets
                    if t is not None
                    for n in ast.walk(t)
                    if isinstance(n, ast.Name)
                }
        return bound


class CollectiveUnderRankCheck(CallRule):
    """DDL108: a collective under a rank check (not a subgroup's). A collective is paired by one of the same
    name on the other side of the same check (rank 0's `gather(t, gather_list)` in the if, every other rank's
    `gather(t)` in the else: nerfplusplus); a barrier also by one under another check of the same function
    (torch_distributed_zero_first)."""

    code = "DDL108"

    def begin(self):
        self.under_checks = []  # (node, condition, polarity, callee)
        self.own_helpers = Project.collective_functions(
            f for f in self.m.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        return True

    def end(self):
        sides, checks = {}, {}
        for node, condition, polarity, callee in self.under_checks:
            sides.setdefault((condition, callee), set()).add(polarity)
            if callee in BARRIERS:
                checks.setdefault(self.function_of(node), set()).add((condition, polarity))
        for node, condition, _, callee in self.under_checks:
            barrier_pair = callee in BARRIERS and len(checks[self.function_of(node)]) >= 2
            if len(sides[condition, callee]) < 2 and not barrier_pair:
                self.add(node)

    def check(self, call, name, callee):
        if (
            callee in COLLECTIVES
            and (
                name.startswith(("dist.", "torch.distributed.", "accelerator.", "accelerate."))
                or "." not in name
            )
            and keyword(call, "group") is None  # a subgroup's collective is for its members only
        ) or self.gathers_a_sharded_state(call, name, callee):
            check = self.rank_check(call)
            if check is not None:
                self.under_checks.append((call, *check, callee))
        elif name in self.m.project.collective_helpers and self.rank_check(call) is not None:
            self.add(call)  # a function of another module of the project that runs a collective
        elif name in self.own_helpers:
            # a function of this module that runs one (the WaveNet ASR's `reduce_tensor` under `if
            # local_rank == 0`), paired as its collective would be: by a call on the other side
            check = self.rank_check(call)
            if check is not None:
                self.under_checks.append((call, *check, name))
        else:
            return
        if (
            self.rank_check(call) is None
            and self.m.after_early_exit(call)
            and (
                callee not in BARRIERS or name.startswith(("dist.", "torch.distributed.", "accel"))
            )
        ):
            self.add(call)  # `if not is_main: return` earlier in the function: the rest is rank 0's

    def gathers_a_sharded_state(self, call, name, callee):
        """A state dict whose making gathers the shards, a collective every rank must call:
        torch.distributed.checkpoint.state_dict's get_model_state_dict / get_optimizer_state_dict /
        get_state_dict, FSDP1's `model.state_dict()` (a full state dict by default) and its
        full_optim_state_dict / optim_state_dict (step 4 -> 7's first pitfall: under `if rank == 0:` it
        hangs)."""
        if name.startswith("torch.distributed.checkpoint.state_dict.") and callee in (
            "get_model_state_dict",
            "get_optimizer_state_dict",
            "get_state_dict",
        ):
            return True
        if name.startswith("torch.distributed.fsdp.") and callee in (
            "full_optim_state_dict",
            "optim_state_dict",
        ):
            return True
        return (
            callee == "state_dict"
            and isinstance(call.func, ast.Attribute)
            and fsdp_before(self.m, call, dotted(call.func.value))
        )


class UnsafeLoad(CallRule):
    """DDL109: torch.load(..., weights_only=False); since torch 2.6 a bare load is weights_only=True."""

    code = "DDL109"

    def check(self, call, name, callee):
        only = keyword(call, "weights_only")
        if name == "torch.load" and isinstance(only, ast.Constant) and only.value is False:
            self.add(call)


class LoadWithoutMapLocation(CallRule):
    """DDL132: a `torch.load` of the run's own checkpoint (a resume, latest, last or best file) with no
    map_location in a DDP script, outside a rank check (one process loading onto its own GPU 0 is fine), outside
    Accelerate, and not in a branch beside one that maps."""

    code = "DDL132"

    def check(self, call, name, callee):
        if (
            name == "torch.load"
            and self.m.distributed
            and not self.m.uses_accelerate
            and ast.unparse(keyword(call, "map_location") or ast.Constant(None)) == "None"
            and len(call.args) == 1
            and RUN_CHECKPOINT.search(self.what_is_loaded(call))
            and not PRETRAINED.search(self.what_is_loaded(call))
            # f"ckpt_{rank}.pt": each rank saved its own, from its own GPU
            and not PER_RANK.search(ast.unparse(call.args[0]))
            and not self.m.guarded(call)
            and not self.in_test(call)
            and not self.mapped_beside(call)
        ):
            self.add(call, fixable=False)

    def what_is_loaded(self, call):
        """The load's argument, and the name of the function around it when that function is handed the path
        (a `load_checkpoint(path, model)` that loads `path`)."""
        text = ast.unparse(call.args[0])
        function = self.function_of(call)
        if function is not None and function.name in ("load", "resume"):
            text += " checkpoint"  # a trainer's `def load(self, num)`: its own checkpoint
        elif function is not None and isinstance(call.args[0], ast.Name):
            given = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
            if call.args[0].id in given:
                text += " " + function.name
        saved = {  # `torch.save(state, model_filename)` elsewhere in the module: the run's own file
            ast.unparse(n.args[1])
            for n in self.m.nodes
            if isinstance(n, ast.Call)
            and dotted(n.func) == "torch.save"
            and len(n.args) > 1
            and re.search(r"state|model|ckpt|checkpoint|optim", ast.unparse(n.args[0]), re.I)
            and any(isinstance(p, (ast.For, ast.While)) for p in self.m.parents_of(n))
        }  # saved in the training loop: a checkpoint (not the final weights a demo loads back)
        if ast.unparse(call.args[0]) in saved:
            text += " checkpoint"
        if isinstance(
            call.args[0], ast.Name
        ):  # `path = join(snapshot_download(repo), ...)`: pretrained
            text += " ".join(
                " " + ast.unparse(n.value)
                for n in ast.walk(function or self.m.tree)
                if isinstance(n, ast.Assign)
                and any(dotted(t) == call.args[0].id for t in n.targets)
            )
        return text

    def mapped_beside(self, call):
        """A load in `if args.gpu is None:` beside one given `map_location=loc` in the `else:`: the script
        maps where it runs distributed (SLIP's, pytorch/examples' imagenet)."""
        for parent in self.m.parents_of(call):
            if isinstance(parent, ast.If):
                return any(
                    isinstance(n, ast.Call)
                    and dotted(n.func) == "torch.load"
                    and keyword(n, "map_location") is not None
                    for n in ast.walk(parent)
                )
        return False


class SwallowedInit(CallRule):
    """DDL133: `init_process_group(...)` in the body of a `try` whose handler catches everything (bare,
    Exception, BaseException, RuntimeError, ValueError) and neither raises nor exits: the failure becomes a
    one-process run (msn's and jepa's `init_distributed`). Not a retry loop's try."""

    code = "DDL133"
    BROAD = {"Exception", "BaseException", "RuntimeError", "ValueError", "DistBackendError"}
    ENDS = {"exit", "_exit", "quit", "abort"}

    def check(self, call, name, callee):
        if callee != "init_process_group":
            return
        child = call
        for parent in self.m.parents_of(call):
            if isinstance(
                parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
            ):
                return
            if isinstance(parent, ast.Try) and child in parent.body:
                retried = (
                    self.innermost_loop(parent) is not None
                )  # jukebox's: try again, then raise
                if not retried and any(self.swallows(h) for h in parent.handlers):
                    self.add(call, fixable=False)
                return
            child = parent

    def swallows(self, handler):
        caught = handler.type
        names = (
            [last(dotted(e)) for e in caught.elts]
            if isinstance(caught, ast.Tuple)
            else [last(dotted(caught))]
            if caught is not None
            else ["BaseException"]
        )
        if not set(names) & self.BROAD:
            return False
        return not any(
            isinstance(n, ast.Raise)
            or isinstance(n, ast.Call)
            and last(dotted(n.func)) in self.ENDS
            for statement in handler.body
            for n in ast.walk(statement)
        )


def agreed_on(test, scope):
    """Whether a name the test reads goes through a collective in `scope` (all_reduce, reduce, gather,
    all_gather, broadcast): every rank then decides alike."""
    tested = {dotted(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute))}
    return any(
        isinstance(n, ast.Call)
        and last(dotted(n.func)) in ("all_reduce", "reduce", "gather", "all_gather", "broadcast")
        and any(dotted(a) in tested for a in n.args)
        for n in ast.walk(scope)
    )


def made_from(scope, names, before):
    """`names` and the names the scope binds from them before line `before`, three steps deep: `out =
    self.model(batch)`, `batch, gotit = batch` (co-tracker, corpus 16, seen)."""
    data = set(names)
    for _ in range(3):
        data |= {
            t.id
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and n.lineno < before
            and any(isinstance(m, ast.Name) and m.id in data for m in ast.walk(n.value))
            for target in n.targets
            for t in ast.walk(target)
            if isinstance(t, ast.Name)
        }
    return data


def tests_what_it_holds(test, data, sums=False):
    """Whether a test reads what one of the `data` names holds: through len/any/all/numel/size/shape (with
    `sums`, sum too), or `is None` / `== None` (VoiceCraft's `if out == None: continue`)."""
    counters = {"len", "any", "all", "numel", "size", "nelement"} | ({"sum"} if sums else set())
    content = any(
        isinstance(n, ast.Call)
        and last(dotted(n.func)) in counters
        or isinstance(n, ast.Attribute)
        and n.attr == "shape"
        or isinstance(n, ast.Compare)
        and (
            any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
            or any(isinstance(c, ast.Constant) and c.value is None for c in n.comparators)
        )
        for n in ast.walk(test)
    )
    return content and any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(test))


class SkipOnLocalCondition(Rule):
    """DDL134: `if torch.isnan(loss): continue` (isinf, isfinite, math.isnan: a non-finite value), or a
    `continue`/`break` under a rank check (`if rank == 0 and stop: break`), in a loop whose backward or optimizer
    step comes after it (a `break`: anywhere in the loop), in a DDP or Accelerate script, where nothing in the
    test was all-reduced: one process skips the all-reduce the others wait in (open_flamingo's per-rank NaN
    check between two backwards), or leaves the loop while they go on. Also a `continue` on what the process's
    own batch holds (`if any(len(t) < 1 for t in targets):`), and a `break` on an early stopper fed a value the
    process computed alone (`if early_stopping.early_stop:` after `early_stopping(vali_loss)`)."""

    code = "DDL134"
    NON_FINITE = re.compile(r"isnan|isinf|isfinite|\bnan\b|\binf\b", re.I)
    EARLY_STOP = re.compile(r"early_?stop|should_stop|stop_training", re.I)
    CLOCK = re.compile(r"\btime\.(time|perf_counter|monotonic)\(|\bdatetime\.now\(")

    def reads_batch(self, test, loop):
        """A test of what this process's batch holds: `if any(len(t) < 1 for t in targets): continue`
        (maskrcnn-benchmark's images without targets), `if images is None:` — names the loop binds from its
        data, tested through len/any/all/numel/size/shape or `is None`; not the enumerate index (a step count
        every rank shares)."""
        if not isinstance(loop, ast.For):
            return False
        target = loop.target
        counted = isinstance(loop.iter, ast.Call) and last(dotted(loop.iter.func)) == "enumerate"
        if counted and isinstance(target, ast.Tuple) and target.elts:
            target = ast.Tuple(elts=target.elts[1:], ctx=ast.Store())
        elif counted:
            return False
        data = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} - {"_"}
        # and what the loop makes from them before the test: `out = self.model(batch)`
        return tests_what_it_holds(test, made_from(loop, data, test.lineno))

    def fed_unreduced(self, node, loop):
        """Whether the early stopper the test reads (`if early_stopping.early_stop: break`) is fed, in the loop,
        a value each process computed alone: the result of a function of this module or of the project that
        reduces nothing (TEMPO's `vali()`, its loss over the rank's own shard). A value from elsewhere may be
        reduced: not known, not reported."""
        receivers = {
            dotted(n.value)
            for n in ast.walk(node.test)
            if isinstance(n, ast.Attribute) and dotted(n.value)
        }
        fed = [
            a
            for n in ast.walk(loop)
            if isinstance(n, ast.Call)
            and (dotted(n.func) in receivers or self.EARLY_STOP.search(dotted(n.func)))
            for a in n.args[:1]
        ]
        reductions = self.m.reductions
        for value in fed:
            name = dotted(value)
            if not name or name in reductions.reduced:
                continue
            for made in reductions.results.get(name, []):
                call = head_call(made)
                if call is None:
                    continue
                local = reductions.defined.get(last(dotted(call.func)))
                if local is not None:
                    if not any(isinstance(n, ast.Call) and reduces(n) for n in ast.walk(local)):
                        return True
                elif dotted(call.func) in self.m.project.defined:
                    if self.m.project.reducer(call) is None:
                        return True
        return False

    def begin(self):
        return (
            self.m.wraps_in_ddp
            or self.m.uses_accelerate
            or self.handed_ddp()
            or self.inherits_a_wrap()
        )

    def inherits_a_wrap(self):
        """A class of this module built on a class of the project's whose module wraps the model in DDP
        (ROMP's `class Trainer(Base)`, whose base.py makes `self.model` the wrapper; corpus 45)."""
        return any(
            isinstance(n, ast.ClassDef)
            and any(
                (target := self.m.project.defined.get(dotted(b))) is not None
                and Project.wraps_ddp(target[0])
                for b in n.bases
            )
            for n in self.m.nodes
        )

    def handed_ddp(self):
        """A function that tests whether the model it is handed is DDP (`if isinstance(net,
        DistributedDataParallel): model = net.module`): its caller wraps it (IMS-Toucan's train loops, corpus
        27)."""
        return any(
            isinstance(n, ast.Call)
            and dotted(n.func) == "isinstance"
            and len(n.args) == 2
            and any(
                last(dotted(t)) in ("DistributedDataParallel", "DDP")
                for t in (n.args[1].elts if isinstance(n.args[1], ast.Tuple) else [n.args[1]])
            )
            for n in self.m.nodes
        )

    def counted_on_one_rank(self, test, loop):
        """Whether the test reads a name the loop sets only under a rank check: an early-stopping count kept on
        rank 0 (`if rank == 0: ... bad += 1`, then `if bad >= patience: break`; Retro3D's `self.early_stop`,
        corpus 29, seen). Rank 0 leaves the loop; the others never do."""
        tested = {
            dotted(n)
            for n in ast.walk(test)
            if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n)
        }
        for name in tested:
            sets = assignments_to(loop, name)
            if sets and all(self.rank_check(n) is not None for n in sets):
                return True
            # `early_stop = trainer.save_models(dir)`, whose method returns a count it keeps on rank 0
            made = [
                n.value
                for n in ast.walk(loop)
                if isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and name in {dotted(t) for t in n.targets}
            ]
            for call in made + [n for n in ast.walk(test) if isinstance(n, ast.Call)]:
                if any(map(returns_one_ranks_count, self.functions_called(call))):
                    return True
        return False

    def functions_called(self, call):
        """The definitions a call runs: a function or method of this module by its name, or the function or
        the method of a class of the project's other modules (one_call_away's reading)."""
        local = self.m.reductions.defined.get(last(dotted(call.func)))
        found = [local] if local is not None else []
        for (module, name), method in called_targets(self.m, call, project_instances(self.m)):
            for node in Project.tree(module).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    found.append(node)
                if isinstance(node, ast.ClassDef) and node.name == name and method:
                    found += [
                        m
                        for m in node.body
                        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and m.name == method
                    ]
        return found

    @staticmethod
    def exits_quietly(statement):
        """`exit()`, `sys.exit(0)`: the process ends with success, so torchrun's agent waits for the others,
        which wait in a collective (an exception or exit(1) makes the agent stop them all)."""
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return False
        call = statement.value
        return dotted(call.func) in ("exit", "sys.exit", "quit", "os._exit") and (
            not call.args
            or isinstance(call.args[0], ast.Constant)
            and call.args[0].value in (0, None)
        )

    def visit_Try(self, node):
        """`try: ... except Exception: continue` in a training loop: one process's failure (a corrupt sample,
        a feature that raises, an out-of-memory batch) skips its forward and backward while the others run
        theirs, and the all-reduces pair across steps (LatentSync's audio features, corpus 17; co-tracker's
        failed sample, corpus 16: seen). Not `except StopIteration` (an iterator restarted)."""
        loop = self.innermost_loop(node)
        if loop is None or not self.trains_deep(loop.body):
            return
        for handler in node.handlers:
            caught = ast.unparse(handler.type) if handler.type is not None else ""
            if "StopIteration" in caught or "KeyboardInterrupt" in caught:
                continue
            skips = any(
                isinstance(n, ast.Continue) and self.innermost_loop(n) is loop
                for n in ast.walk(handler)
            )
            after, child = [], node  # what the rest of this pass of the loop runs
            while child is not loop:
                after += siblings(self.m, child)[1]
                child = self.m.parent[child]
            if skips and (self.trains_deep(node.body) or self.trains_deep(after)):
                self.add(handler, fixable=False)
                return
            if self.recovers_from_oom(handler) and self.trains_deep(node.body):
                self.add(handler, fixable=False)
                return

    @staticmethod
    def recovers_from_oom(handler):
        """fairseq's "attempting to recover from OOM": an out-of-memory error caught, the gradients zeroed and
        the loop carried on, where the rank that ran out skipped the backward whose all-reduce the others wait
        in (SpanBERT's and Uni-Core's trainers, OpenNMT's "batch removed": corpora 24 and 25, seen). Not where
        the handler raises again on that path, or raises whenever the run is distributed."""
        said = ast.unparse(handler)
        if not re.search(r"out of memory|OutOfMemoryError", said, re.I):
            return False
        if any(isinstance(statement, ast.Raise) for statement in handler.body):
            return False  # logged, then raised whatever it was (VALL-E's memory advice, corpus 10)
        tests = [
            n
            for n in ast.walk(handler)
            if isinstance(n, ast.If) and re.search(r"out of memory", ast.unparse(n.test), re.I)
        ]
        path = tests[0].body if tests else handler.body
        for statement in path:
            if isinstance(statement, ast.Raise):
                return False  # logged, then raised on every path
            for n in ast.walk(statement):
                if (
                    isinstance(n, ast.If)
                    and any(isinstance(r, ast.Raise) for r in n.body)
                    and (
                        WORLD_SIZE.search(ast.unparse(n.test))
                        or DISTRIBUTED_FLAG.search(ast.unparse(n.test))
                    )
                ):
                    return (
                        False  # `if world_size > 1: raise e`: recovered in a one-process run only
                    )
        return True

    def visit_If(self, node):
        leaves = [s for s in node.body if isinstance(s, (ast.Continue, ast.Break, ast.Return))]
        loop = self.innermost_loop(node)
        per_rank = self.m.picks_ranks(node.test) or self.rank_check(node) is not None
        if leaves and isinstance(leaves[0], ast.Break) and loop is not None and not per_rank:
            # a wall-clock limit each process reads for itself (nGPT's `if time.time() - tlaunch >
            # time_limit_seconds: break`, corpus 31): the ranks cross it at different steps
            per_rank = bool(self.CLOCK.search(ast.unparse(node.test))) or self.counted_on_one_rank(
                node.test, loop
            )
        if (
            not leaves
            and loop is not None
            and any(map(self.exits_quietly, node.body))
            and (selects_main(node.test) or self.rank_check(node) is not None)
            and self.trains_deep(loop.body)
        ):
            # seed-vc's and XLM's (corpus 16): rank 0 alone saves and calls exit() inside the training loop;
            # the others go on into the next all-reduce and wait there, since a clean exit stops no one
            self.add(node, fixable=False)
            return
        if leaves and isinstance(leaves[0], ast.Return):
            # `if rank == 0 and args.test_only: evaluate(); return`: the others go on to train alone; also
            # under an outer main-only `if` (CLAP's `if is_master(args): ... if exists(log): return -1`, before
            # the group forms), and inside the training loop (CodeBERT's `if global_rank == 0 and step == last:
            # ...; return`: the others train on into an all-reduce rank 0 never joins; corpus 14, seen)
            function = self.function_of(node)
            picked = selects_main(node.test) or any(
                isinstance(p, ast.If)
                and (function is None or is_inside(p, function))
                and selects_main(p.test)
                and _in_body(node, p)
                for p in self.m.parents_of(node)
            )
            after, child = [], node
            while function is not None and child is not function:
                after += siblings(self.m, child)[1]
                child = self.m.parent[child]
            if loop is not None and (function is None or is_inside(loop, function)):
                after += loop.body  # the next passes of the loop, which the others go on to run
            if picked and trains(after):
                self.add(node, fixable=False)
            elif (
                not picked
                and not per_rank
                and loop is None
                and function is not None
                and (backward_in(after) or steps_in(after))
                and self.step_left_on_local_data(node, function)
            ):
                self.add(node, fixable=False)
            return
        if not leaves or loop is None:
            return
        if (
            isinstance(leaves[0], ast.Break)
            and self.EARLY_STOP.search(ast.unparse(node.test))
            and trains(loop.body)
            and self.fed_unreduced(node, loop)
        ):
            self.add(node, fixable=False)  # each process stops at its own epoch: the others wait
            return
        if not (
            self.NON_FINITE.search(ast.unparse(node.test))
            or per_rank
            or isinstance(leaves[0], ast.Continue)
            and self.reads_batch(node.test, loop)
        ):
            return
        if isinstance(leaves[0], ast.Break):  # the loop left: every later pass's training is missed
            after = loop.body
        else:
            # what the rest of this pass of the loop runs, out to the loop's body
            after, child = [], node
            while child is not loop:
                after += siblings(self.m, child)[1]
                child = self.m.parent[child]
        if not trains(after) and not (
            # rank 0 alone `continue`s past the loop's own `break` (speech_llm's save step, corpus 39): at the
            # last step it trains on into an all-reduce the others, gone, never join
            isinstance(leaves[0], ast.Continue)
            and per_rank
            and self.breaks_the_loop(after)
            and trains(loop.body)
        ):
            return
        if not agreed_on(node.test, self.function_of(node) or self.m.tree):
            self.add(node, fixable=False)

    # a step function's parameters that are not its batch: what every rank is handed alike
    NOT_DATA = re.compile(
        r"^(self|cls|args|opts?|cfg|config|conf|hparams|params|gpu|device|rank|epoch|step|\w*model|net|"
        r"\w*optimi[sz]er|\w*scheduler|\w*scaler)$"
    )

    def step_left_on_local_data(self, node, function):
        """`if torch.isnan(loss): return` before the backward of a function the module calls once a batch
        (ROMP's train_step), or a return on what the batch it is handed holds (ADL's `if mask.sum() == 0:
        return float(0)` before the forward, corpus 45): that rank skips the step's all-reduce the others wait
        in. Not where the tested value was all-reduced first."""
        test = node.test
        per_batch = any(
            isinstance(c, ast.Call)
            and last(dotted(c.func)) == function.name
            and self.innermost_loop(c) is not None
            for c in self.m.nodes
        )
        if not per_batch:
            return False
        if not self.NON_FINITE.search(ast.unparse(test)):
            data = {
                a.arg
                for a in [*function.args.posonlyargs, *function.args.args]
                if not self.NOT_DATA.match(a.arg)
            }
            # and what the function makes from them before the test; an empty mask counted by its sum
            if not tests_what_it_holds(test, made_from(function, data, test.lineno), sums=True):
                return False
        return not agreed_on(test, function)

    @staticmethod
    def breaks_the_loop(statements):
        """A `break` among the statements that leaves the loop they are in (not one of a loop inside them)."""

        def found(nodes):
            for n in nodes:
                if isinstance(n, ast.Break):
                    return True
                if isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if found(ast.iter_child_nodes(n)):
                    return True
            return False

        return found(statements)


def holds(tree, node):
    """Whether `node` is `tree` or inside it (by identity, not by line: two operands can share one)."""
    return any(n is node for n in ast.walk(tree))


def _in_orelse(node, branch):
    """Whether `node` sits in the else of the `if` `branch`."""
    return any(holds(s, node) for s in branch.orelse)


def _in_body(node, branch):
    """Whether `node` sits in the body of the `if` `branch` (not its else)."""
    return any(is_inside(node, s) for s in branch.body)


def not_distributed(test):
    """`not args.distributed`, `args.local_rank == -1`, `'RANK' not in os.environ` (no launcher set it:
    PersonReID-YouReID's `'RANK' not in os.environ or int(os.environ['RANK']) == 0`, corpus 38): true in a
    one-process run only."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return bool(DISTRIBUTED_FLAG.fullmatch(ast.unparse(test.operand)))
    if asks_environ(test, ast.NotIn):
        return True
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and ast.unparse(test.comparators[0]) == "-1"
        and mentions_rank(test.left)
    )


def launched_test(test):
    """`args.local_rank != -1`, `"RANK" in os.environ`: true where a launcher started the process, so its
    else is a one-process run."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.NotEq)
        and ast.unparse(test.comparators[0]) == "-1"
        and mentions_rank(test.left)
    ) or asks_environ(test, ast.In)


def asks_environ(test, op):
    """`"RANK" in os.environ` (op ast.In) or `not in` (ast.NotIn): whether a launcher set the rank."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and isinstance(test.left, ast.Constant)
        and test.left.value in ("RANK", "LOCAL_RANK", "WORLD_SIZE")
        and dotted(test.comparators[0]) == "os.environ"
    )


def selects_main(test):
    """`rank == 0`, `is_main_process`, `args.local_rank == 0 and args.test_only`: a test the main process
    passes and the others fail (not `rank != 0`, not `not is_main`)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(selects_main(v) for v in test.values)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        # `not args.distributed or args.rank % ngpus == 0` (bts, NeWCRFs; corpus 16): one process, or the main
        return any(selects_main(v) for v in test.values) and all(
            selects_main(v) or not_distributed(v) for v in test.values
        )
    if isinstance(test, ast.Compare):
        return (
            len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and ast.unparse(test.comparators[0]) == "0"
            and mentions_rank(test)
        )
    return isinstance(test, (ast.Name, ast.Attribute, ast.Call)) and bool(
        re.search(  # a constant's spelling too: LTX-Video's IS_MAIN_PROCESS (corpus 28)
            r"is_main|is_master|main_process|is_primary|global_zero|world_process_zero",
            ast.unparse(test),
            re.I,
        )
    )


def trains(statements):
    """Whether the statements train: a backward, an optimizer step, or a call of a `train...`/`fit...`
    function (doctr's `fit_one_epoch(model, ...)`)."""
    return (
        backward_in(statements)
        or steps_in(statements)
        or any(
            isinstance(n, ast.Call)
            and re.match(r"_?(train|fit)", last(dotted(n.func)))
            and not mode_switch(n)
            for statement in statements
            for n in ast.walk(statement)
        )
    )


def mode_switch(call):
    """`model.train()` / `self.model.train(True)`: the module's training mode, not a training run (a rank-0
    evaluation ends with it: VoiceprintRecognition's, corpus 14)."""
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "train"
        and not call.keywords
        and all(isinstance(a, ast.Constant) and type(a.value) is bool for a in call.args)
        and len(call.args) <= 1
    )


# a method of the bare module that runs its forward (not `get_loss_acc(out, y)`, which reads outputs)
def forward_named(method):
    """A method whose name says it runs the model (RUNS_FORWARD), not one that sets it up: Hugging Face's
    `model_to_resize.resize_token_embeddings(len(tokenizer))` (corpus 23's run_pretrain, seen), a `set_`, `tie_`,
    `init_`, `load_`, `save_` or `freeze` method."""
    return bool(RUNS_FORWARD.search(method)) and not NOT_FORWARD.match(method)


NOT_FORWARD = re.compile(
    r"(resize|set|tie|init|load|save)_|(un)?freeze|get_(input|output)_embeddings"
)
RUNS_FORWARD = re.compile(
    r"forward|logits|encode|decode|embed|predict|infer|extract|feature|backbone|head|net$|model$|"
    # a model's own training step or loss (P5's `self.model.module.train_step(batch)`, corpus 13, seen)
    r"layer|block|trunk|tower|train_step|training_step|_loss$|^loss|_tokens$",
    re.I,
)


class ForwardThroughModule(Rule):
    """DDL136: in a function that calls backward, in a DDP script, a call through the wrapper's `.module`
    that runs the forward: `model.module(x)`, `model.module.encoder(x)`, `model.module.get_logits_loss(...)`, or
    the same through a name bound to it (`sam_model = self.model.module`). Not under no_grad, and not a method
    that only reads outputs (`get_loss_acc(ret, label)`: no forward in its name)."""

    code = "DDL136"

    def begin(self):
        if not (self.m.wraps_in_ddp or self.m.uses_accelerate):
            return False
        # the functions whose result a backward takes: called by a function of this module that calls backward
        # (OpenVLA-OFT's `run_forward_pass`, whose action head runs through `.module`: corpus 25, seen)
        self.feeding = {
            last(dotted(c.func))
            for f in self.m.nodes
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and backward_in(f.body)
            for c in ast.walk(f)
            if isinstance(c, ast.Call)
        }
        return True

    @staticmethod
    def unwrapped(value):
        """`model.module`, or `model.module if hasattr(model, "module") else model` (DeepCORO-CLIP's video
        encoder, corpus 26, seen); not Accelerate's unwrap_model: see unwrapped_loss."""
        if isinstance(value, ast.IfExp):
            value = value.body
        return isinstance(value, ast.Attribute) and value.attr == "module"

    def unwrapped_loss(self, function):
        """Accelerate's shape (ILQL's, corpus 25, seen): `loss, logs = accelerator.unwrap_model(model).get_loss(
        items)` and then `accelerator.backward(loss)` in the same function: the loss the backward takes is made
        by the unwrapped model's forward. Only that direct flow: scripts unwrap frozen models (a VAE, a text
        encoder) for their features, and reassign `model = accelerator.unwrap_model(model)` to save."""
        backed = {
            n.id
            for c in ast.walk(function)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            if c.func.attr == "backward"
            for a in [c.func.value, *c.args]
            for n in ast.walk(a)
            if isinstance(n, ast.Name)
        }
        for n in ast.walk(function):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
                continue
            parts = dotted(n.value.func).split(".")
            named = {
                t.id for target in n.targets for t in ast.walk(target) if isinstance(t, ast.Name)
            }
            if (
                "unwrap_model()" in parts[:-1]
                and forward_named(parts[-1])
                and named & backed
                and not any(no_grad(p) for p in self.m.parents_of(n))
            ):
                return n.value
        return None

    def visit_FunctionDef(self, node):
        if not (backward_in(node.body) or node.name in self.feeding):
            return
        if any(re.search(r"no_grad|inference_mode", ast.unparse(d)) for d in node.decorator_list):
            return  # `@torch.no_grad()`: an evaluation helper the training function calls
        if not self.m.wraps_in_ddp:  # Accelerate alone
            found = self.unwrapped_loss(node) if backward_in(node.body) else None
            if found is not None:
                self.add(found, fixable=False)
            return
        bare = {
            dotted(t)
            for n in ast.walk(node)
            if isinstance(n, ast.Assign) and self.unwrapped(n.value)
            for t in n.targets
            if dotted(t)
        }
        calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
        called = {
            dotted(c.func) for c in calls
        }  # `model(...)` as well: DDP's forward arms the backward
        for call in calls:
            parts = dotted(call.func).split(".")
            if len(parts) < 2 or any(no_grad(p) for p in self.m.parents_of(call)):
                continue
            if "module" in parts and ".".join(parts[: parts.index("module")]) in called:
                continue  # generative-recommenders' embeddings through .module, then the wrapper's forward
            if self.rank_check(call) is not None:
                continue  # rank 0's sample for its log, not the step's forward
            if isinstance(self.m.parent.get(call), ast.Attribute):
                continue  # `model.module.get_input_embeddings().weight.grad`: a getter, not a forward
            direct = parts[-1] == "module"
            through = "module" in parts[1:-1] or any(
                ".".join(parts[:i]) in bare for i in range(1, len(parts))
            )
            if direct or through and forward_named(parts[-1]):
                self.add(call, fixable=False)
                return  # one a function
        # a forward helper handed the module inside (index-tts-lora's `forward_UnifiedVoice(self.model.module,
        # mel_spec, ...)`, whose loss the step backs: corpus 36)
        for call in calls:
            name = last(dotted(call.func))
            if (
                "forward" in name.lower()
                and any(self.unwrapped(a) for a in [*call.args, *(k.value for k in call.keywords)])
                and not any(no_grad(p) for p in self.m.parents_of(call))
                and self.rank_check(call) is None
            ):
                self.add(call, fixable=False)
                return

    visit_AsyncFunctionDef = visit_FunctionDef


class MakedirsOnEveryRank(CallRule):
    """DDL137: `os.makedirs(path)` without exist_ok=True, `os.mkdir(path)`, or pathlib's `folder.mkdir(...)`
    without exist_ok=True, in a distributed script, on every rank (not guarded, not a per-rank folder, not
    inside a try that catches the error)."""

    code = "DDL137"

    def begin(self):
        return self.m.distributed

    def check(self, call, name, callee):
        exist_ok = keyword(call, "exist_ok")
        allowed = exist_ok is not None and not (
            isinstance(exist_ok, ast.Constant) and not exist_ok.value
        )
        if name in ("os.makedirs", "os.mkdir") and call.args:
            folder = call.args[0]
            if name == "os.makedirs" and (allowed or len(call.args) > 2):
                return
        elif (  # `folder.mkdir(parents=True)` after `if not folder.exists():` (PEFT's dreambooth)
            callee == "mkdir"
            and isinstance(call.func, ast.Attribute)
            and not getattr(call.func, "from_import", False)  # an imported `mkdir` helper
            and not name.startswith(("os.", "tf.", "fs.", "gfile"))
            and not allowed
        ):
            folder = call.func.value
        else:
            return
        if self.m.spawned and self.function_of(call) is None:
            return  # module level: the parent makes it before mp.spawn, the re-imported children find it
        if self.main_first(call):
            return
        if self.every_rank_on_a_shared_folder(call, folder, handled_is_safe=True):
            self.add(call, fixable=False)

    def main_first(self, call):
        """`if not os.path.exists(folder): os.mkdir(folder)` after `if dist.get_rank() != 0: dist.barrier()`:
        the main process makes it while the others wait, and they find it made (FastChat's train_flant5.py)."""
        tested = any(
            isinstance(p, ast.If)
            and any(
                isinstance(n, ast.Call) and last(dotted(n.func)) in PATH_TESTS
                for n in ast.walk(p.test)
            )
            for p in self.m.parents_of(call)
        )
        child = call
        for parent in self.m.parents_of(call) if tested else ():
            if isinstance(child, ast.stmt):
                for before in siblings(self.m, child)[0]:
                    if (
                        isinstance(before, ast.If)
                        and mentions_rank(before.test)
                        and not selects_main(before.test)
                        and any(
                            isinstance(n, ast.Call) and last(dotted(n.func)) in BARRIERS
                            for n in ast.walk(before)
                        )
                    ):
                        return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            child = parent
        return False


class DownloadOnEveryRank(CallRule):
    """DDL139: a call with `download=True` (torchvision's datasets, a project's own) in a distributed script,
    on every rank: not under a rank check, not in a `main_process_first()` / `torch_distributed_zero_first()`
    block, not in a method whose callers are in another module."""

    code = "DDL139"

    def begin(self):
        return self.m.distributed

    def check(self, call, name, callee):
        if not (is_true(keyword(call, "download")) or self.downloads_by_default(call)):
            return
        if self.m.guarded(call, per_node_too=True) or self.m.callers_elsewhere(call, True):
            return
        for parent in self.m.parents_of(call):
            if isinstance(parent, ast.With) and any(
                re.search(r"first|zero|lock", ast.unparse(item.context_expr), re.I)
                for item in parent.items
            ):
                return  # the main process downloads, the others wait, then find the files
        if self.committed(call):
            return
        self.add(call, fixable=False)

    def downloads_by_default(self, call):
        """A project's dataset class or function whose `download` parameter defaults to True, called without
        it (US3L's `DATASET(transform, mode, root=..., download=True)`, which downloads in its constructor;
        corpus 42)."""
        if keyword(call, "download") is not None or dotted(call.func) not in self.m.project.defined:
            return False
        module, name = self.m.project.defined[dotted(call.func)]
        for node in Project.tree(module).body:
            method = isinstance(node, ast.ClassDef) and node.name == name
            if method:  # a class: its constructor's parameters, after self
                node = next(
                    (
                        f
                        for f in node.body
                        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
                    ),
                    None,
                )
            elif not (isinstance(node, ast.FunctionDef) and node.name == name):
                continue
            if node is None:
                return False
            args = node.args
            names = [a.arg for a in [*args.posonlyargs, *args.args]]
            defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults))
            defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
            names = names[1:] if method else names
            given = "download" in names and len(call.args) > names.index("download")
            return not given and is_true(defaults.get("download"))
        return False

    def committed(self, call):
        """The repository holds the data already, under the root the call names (`root="data"`, with a folder
        in data/ beside the script or at the repository's top: the pytorch-multi-GPU-training-tutorial's
        data/FashionMNIST, corpus 30): the dataset finds its files and downloads nothing."""
        root = keyword(call, "root") or (call.args[0] if call.args else None)
        if (
            not (isinstance(root, ast.Constant) and isinstance(root.value, str))
            or self.m.root is None
        ):
            return False
        dataset = re.sub(r"\W|_", "", last(dotted(call.func))).lower()  # FashionMNIST, CIFAR10
        for base in {Path(self.m.path).resolve().parent, self.m.root}:
            folder = base / root.value
            if folder.is_dir() and any(  # data/FashionMNIST, data/cifar-10-batches-py
                p.is_dir() and dataset in re.sub(r"\W|_", "", p.name).lower()
                for p in folder.iterdir()
            ):
                return True
        return False


class RmtreeOnEveryRank(CallRule):
    """DDL140: `shutil.rmtree(path)` in a distributed script, on every rank: not under a rank check (one remover a
    node included), not a per-rank or temporary folder, not in a method whose callers are in another module
    (DBNet's base trainer clears its save folder in every process before making it again)."""

    code = "DDL140"

    def begin(self):
        return self.m.distributed

    def check(self, call, name, callee):
        if name != "shutil.rmtree" or not call.args:
            return
        if re.search(r"tmp|temp", ast.unparse(call.args[0]), re.I):
            return  # mkdtemp(): each process's own
        # a handled error does not undo the deletion of what another process wrote
        if self.every_rank_on_a_shared_folder(call, call.args[0], handled_is_safe=False):
            self.add(call, fixable=False)


def gpu_count(node, counts):
    """`torch.cuda.device_count()` (any spelling), or a name assigned from it (`counts`)."""
    if isinstance(node, ast.Call):
        return dotted(node.func).endswith("device_count") and not node.args
    return dotted(node) in counts if isinstance(node, (ast.Name, ast.Attribute)) else False


class GpuCountAsWorldSize(Rule):
    """DDL141: `init_process_group(world_size=...)` or `DistributedSampler(num_replicas=...)` given the GPU count
    (`torch.cuda.device_count()`, or a name assigned from it alone) or a `--world_size` flag whose default is a
    number and that nothing sets from the launcher (RIFE's `default=4`), in a script that a launcher starts: it
    never starts its own processes (no mp.spawn, start_processes or Process), where the GPU count is the number
    it starts on one machine."""

    code = "DDL141"

    def begin(self):
        if not self.m.distributed or set(LAUNCHERS) & set(self.m.calls):
            return False
        # function -> the names it assigns from the GPU count (None: the module's own): a parameter of another
        # function that happens to share the name is what its caller passes (SEA-RAFT's `setup_ddp(rank,
        # world_size)` beside `init_ddp`'s `world_size = torch.cuda.device_count()`, corpus 27, seen)
        self.counts = {}
        for node in self.m.nodes:
            if isinstance(node, ast.Assign) and gpu_count(node.value, ()):
                for target in node.targets:
                    # a local name is its function's; `args.world_size` is read wherever args goes
                    scope = self.function_of(node) if isinstance(target, ast.Name) else None
                    if isinstance(target, (ast.Name, ast.Attribute)):
                        self.counts.setdefault(scope, set()).add(dotted(target))
        # `--world_size` flags with a number for a default, never set from the launcher's WORLD_SIZE (RIFE's 4)
        assigned = {
            t.attr
            for n in self.m.nodes
            if isinstance(n, (ast.Assign, ast.AugAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute)
        }
        self.flags = {
            "args." + flag.lstrip("-").replace("-", "_")
            for n in self.m.nodes
            if isinstance(n, ast.Call)
            and last(dotted(n.func)) == "add_argument"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and str(n.args[0].value).lstrip("-").replace("-", "_") in ("world_size", "world-size")
            and isinstance(keyword(n, "default"), ast.Constant)
            for flag in [str(n.args[0].value)]
            if flag.lstrip("-").replace("-", "_") not in assigned
        }
        return True

    def visit_Call(self, node):
        argument = {"init_process_group": "world_size", "DistributedSampler": "num_replicas"}.get(
            last(dotted(node.func))
        )
        value = keyword(node, argument) if argument else None
        counts = self.counts.get(self.function_of(node), set()) | self.counts.get(None, set())
        if value is not None and (gpu_count(value, counts) or dotted(value) in self.flags):
            self.add(node, fixable=False)


class OneVisibleGpu(Rule):
    """DDL143: `os.environ["CUDA_VISIBLE_DEVICES"] = "0"` (a literal naming one GPU) in a distributed script that
    a launcher starts once per GPU (no mp.spawn of its own, which may hand each process its GPU this way), or
    that the repository's commands start in several processes (scope-recommendation's `train.py`, whose trainers
    in other modules call accelerate, corpus 32)."""

    code = "DDL143"

    def begin(self):
        return (self.m.distributed or self.m.launched_in_processes()) and not self.m.spawned

    def visit_Assign(self, node):
        value = node.value
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and re.fullmatch(r"\s*\d+\s*", value.value)
            and any(
                isinstance(t, ast.Subscript)
                and dotted(t.value) in ("os.environ", "environ")
                and isinstance(t.slice, ast.Constant)
                and t.slice.value == "CUDA_VISIBLE_DEVICES"
                for t in node.targets
            )
            and not self.m.guarded(node)
        ):
            self.add(node, fixable=False)


SEEDERS = {"manual_seed", "manual_seed_all", "seed", "set_seed", "seed_everything"}
# a project's own seeding helper (esvit's utils.fix_random_seeds, mmcv's set_random_seed): one seed for all three
SEED_HELPER = re.compile(r"^(fix|set|init|setup)_?(random_|all_)?seeds?$|^seed_all$|^random_seed$")
# a transform that draws at random; not RandomSampler, which the DistributedSampler replaces (CodeT5, corpus 14)
AUGMENTS = re.compile(
    r"^(Random(?!\w*Sampler$)\w+|RandAugment|AutoAugment|TrivialAugment\w*|AugMix|Rand[A-Z]\w*)$"
)


# torch's own draws, in a function whose name says it augments (not a dataset's feature placeholder,
# Bert-VITS2's `torch.randn(1024, len(phone))`)
TORCH_DRAWS = {
    f"torch.{name}"
    for name in ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "bernoulli")
}


class SameSeedEveryRank(Rule):
    """DDL142: a seed (torch, numpy, random, accelerate's set_seed) with no rank in it, in a distributed script
    that builds random augmentations (RandomResizedCrop, AutoAugment, MONAI's Rand* transforms) and never seeds
    per rank (`seed + rank`, `set_seed(seed, device_specific=True)`, a per-rank worker_init_fn)."""

    code = "DDL142"

    def begin(self):
        if not self.m.distributed:
            return False
        calls = [n for n in self.m.nodes if isinstance(n, ast.Call)]
        # not a seed rank 0 alone sets (`torch.manual_seed(42)` in the log_validation only the main process
        # calls: AniPortrait's and JoyHallo's, corpus 34; champ's, corpus 29)
        seeds = [c for c in self.alike_seeds(calls) if not self.m.guarded(c)]
        names = {last(dotted(c.func)) for c in calls}
        if not seeds or not (
            any(AUGMENTS.match(name or "") for name in names)
            or self.m.project.augments
            # a RandomSampler in place of a DistributedSampler: every rank alike draws the same batches
            or ("RandomSampler" in names and "DistributedSampler" not in names)
        ):
            return False
        self.seeds = seeds
        return True

    def alike_seeds(self, calls):
        """The calls that seed a global stream with no rank in the seed, in a module that seeds nowhere per
        rank; [] when it does."""
        seeds = [
            c
            for c in calls
            if (last(dotted(c.func)) in SEEDERS or SEED_HELPER.match(last(dotted(c.func))))
            and c.args
            and self.global_stream(dotted(c.func))
            and not self.launcher(c)
            and "worker" not in ast.unparse(c).lower()  # worker_init_fn's seed + worker_id
            and not self.seeds_a_loader_worker(c)
            and not self.helper_adds_the_rank(c)
        ]
        ranked = (
            any(
                RANKED_SEED.search(ast.unparse(c)) or is_true(keyword(c, "device_specific"))
                for c in seeds
            )
            or any(  # worker_init_fn=seed_worker that reads the rank, or a seed made from it one line up
                RANKED_SEED.search(ast.unparse(n.value))
                and any("seed" in dotted(t).lower() for t in n.targets)
                for n in self.m.nodes
                if isinstance(n, ast.Assign)
            )
            # the loaders' workers seeded per rank: arcface-pytorch's
            # `worker_init_fn=partial(worker_init_fn, rank=rank, seed=seed)` (corpus 45, judged false)
            or any(
                k.arg == "worker_init_fn" and PER_RANK.search(ast.unparse(k.value))
                for c in calls
                for k in c.keywords
            )
        )
        return [] if ranked else seeds

    def seeds_a_loader_worker(self, call):
        """In a DataLoader's worker_init_fn (`seed_worker`, `worker_init_fn`), which each worker runs for
        itself; not in the function mp.spawn starts on every rank (`main_worker`: CurricularFace's
        `torch.manual_seed(SEED)` there, corpus 22, seen)."""
        function = self.function_of(call)
        name = getattr(function, "name", "")
        return "worker" in name and name not in self.m.spawned and not name.endswith("main_worker")

    def helper_adds_the_rank(self, call):
        """A project's seeding helper that adds the rank itself (MOTIP's `set_seed`: `seed + distributed_rank()`,
        corpus 12, seen)."""
        target = self.m.project.defined.get(dotted(call.func))
        return target is not None and bool(RANKED_SEED.search(Project.source_of(*target)))

    @staticmethod
    def global_stream(name):
        """torch's, CUDA's, numpy's or random's own stream, or a seeding helper's (`set_seed`); not a
        `torch.Generator().manual_seed(...)` of one's own (muse-maskgit's random_split)."""
        if last(name) in ("set_seed", "seed_everything") or SEED_HELPER.match(last(name)):
            return True
        return name.rsplit(".", 1)[0] in (
            "torch",
            "torch.cuda",
            "np.random",
            "numpy.random",
            "random",
        )

    def launcher(self, call, depth=2):
        """In the function that starts the processes with mp.spawn (or the `__main__` block doing so): the
        spawned processes start with fresh random streams (pytorch/examples' imagenet, SimSiam). Also in a
        helper only that function or block calls (retinaface_pytorch's `setup_seed`, called in the `__main__`
        block before mp.spawn; corpus 21, seen)."""
        for parent in self.m.parents_of(call):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If)) and any(
                isinstance(n, ast.Call) and last(dotted(n.func)) in LAUNCHERS
                for n in ast.walk(parent)
            ):
                return True
        function = self.function_of(call)
        # the function mp.spawn starts runs in every rank, though the one-process branch beside the spawn
        # calls it too (`else: main_worker(gpu, ...)`)
        if function is None or not depth or function.name in self.m.spawned:
            return False
        callers = [
            c for c in self.m.calls.get(function.name, []) if dotted(c.func) == function.name
        ]
        return bool(callers) and all(self.launcher(c, depth - 1) for c in callers)

    def end(self):
        self.add(self.seeds[0], fixable=False)


# torch's draws of noise, timesteps and masks: `torch.randn_like(x)`, `torch.randint(0, T, (n,), device=...)`
NOISE = {
    "randn",
    "randn_like",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "normal",
    "bernoulli",
    "multinomial",
    "poisson",
}


class SameNoiseEveryRank(SameSeedEveryRank):
    """DDL152: the training step draws noise (`torch.randn_like(x)`, timesteps with `torch.randint`) in a
    distributed script that seeds torch alike on every rank (no rank in the seed, none added after): every
    process draws the same noise and the same timesteps for its own batch, so a diffusion or flow-matching
    step sees world-size copies of one draw (lingbot-vla-v2's issue 41, measured there with prints). An
    unseeded process is not reported: its CPU stream starts from a random seed (measured here), and whether
    CUDA's does is not measured here."""

    code = "DDL152"

    def begin(self):
        if not (self.m.wraps_in_ddp or self.m.uses_accelerate):
            return False
        calls = [n for n in self.m.nodes if isinstance(n, ast.Call)]
        seeds = [
            c
            for c in self.alike_seeds(calls)
            if not self.m.guarded(c)  # rank 0 alone reseeded (before sampling images): not alike
            and not self.salted(c)
            # `if args.seed is not None: set_seed(args.seed)`, a seed no documented run passes: unseeded
            # (S3Diff, StableAnimator; corpus 34)
            and not self.m.under_a_flag_off_by_default(c)
        ]
        if not seeds:
            return False
        # torch.cuda.manual_seed alone leaves the CPU stream, which starts from a random seed, to each process
        gpu_only = all(dotted(c.func).startswith("torch.cuda.") for c in seeds)
        self.draws = [
            c
            for c in calls
            if dotted(c.func).startswith("torch.")
            and last(dotted(c.func)) in NOISE
            and not keyword(c, "generator")  # a generator of its own is seeded where it is made
            and (not gpu_only or last(dotted(c.func)).endswith("_like") or keyword(c, "device"))
            and self.in_training_step(c)
            # rank 0's samples for a picture (`if local_rank == 0 and ep % vis_iter == 0:`, CuiJiali-CV's
            # pytorch-ddp, corpus 30): one process draws, no step
            and self.rank_check(c) is None
        ]
        if not self.draws:
            # the step drawn in the project's model: `loss = self.model.compute_loss(batch)`, whose
            # compute_loss draws the noise and the timesteps (UMI's diffusion policy, corpus 22, seen)
            drawing = set().union(*(Project.noise_methods(m) for m in self.m.project.imported))
            self.draws = [
                c
                for c in calls
                if isinstance(c.func, ast.Attribute)
                and c.func.attr in drawing
                and self.in_training_step(c)
                # `raw_loss = self.model(batch)` in the training loop, whose forward returns
                # self.compute_loss(batch) (RDT's `loss = rdt(...)`, corpus 18)
                or "forward" in drawing
                and self.makes_the_loss(c)
            ]
        return bool(self.draws)

    def makes_the_loss(self, call):
        """A call of a model object (`rdt(...)`, `self.model(batch)`) in the training loop whose result is
        the loss: `loss = rdt(...)`."""
        parent = self.m.parent.get(call)
        loop = self.innermost_loop(call)
        return (
            isinstance(parent, ast.Assign)
            and any("loss" in dotted(t).lower() for t in parent.targets)
            and (last(dotted(call.func)) or "A")[0].islower()
            and not dotted(call.func).startswith(("torch.", "F."))
            and loop is not None
            and trains(loop.body)
        )

    def salted(self, seed):
        """A seed made with hash() of a string (`hash(args.wandb_run_name) % 2**32`, peft's boft_dreambooth):
        Python salts str hashes per process, so each rank seeds differently."""
        names = {dotted(a) for a in seed.args if dotted(a)}
        values = [seed.args[0]] + [
            n.value
            for n in self.m.nodes
            if isinstance(n, ast.Assign) and any(dotted(t) in names for t in n.targets)
        ]
        return any(
            isinstance(n, ast.Call) and dotted(n.func) == "hash"
            for v in values
            for n in ast.walk(v)
        )

    def in_training_step(self, call):
        """In the loop that trains, or in a function whose body does (a `train_step` that calls backward)."""
        loop = self.innermost_loop(call)
        if loop is not None and trains(loop.body):
            return True
        function = function_of(self.m, call)
        return function is not None and self.trains_deep(function.body)

    def end(self):
        self.report_first(self.draws)


class SameSamplesGathered(SameNoiseEveryRank):
    """DDL172: noise drawn outside the training step (`z = torch.randn(...)` for an FID's samples) in a
    function that then gathers across ranks, in a distributed script that seeds torch alike on every rank: each
    rank generates the same samples, and the gathered set is world-size copies of one rank's (CuiJiali-CV's
    pytorch-ddp, corpus 30: `init_seeds(args['seed'])`, then `gather(s, nprocs)` of 50,000 samples for the FID).
    Not a draw with a generator of its own, nor one under a rank check, nor one in a training step (DDL152)."""

    code = "DDL172"
    GATHERS = {
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "gather",
        "gather_for_metrics",
    }

    def begin(self):
        if not self.m.distributed:
            return False
        calls = [n for n in self.m.nodes if isinstance(n, ast.Call)]
        seeds = [c for c in self.alike_seeds(calls) if not self.m.guarded(c) and not self.salted(c)]
        if not seeds or all(dotted(c.func).startswith("torch.cuda.") for c in seeds):
            return False
        self.draws = [
            c
            for c in calls
            if dotted(c.func).startswith("torch.")
            and last(dotted(c.func)) in NOISE
            and not keyword(c, "generator")
            and self.rank_check(c) is None
            and not self.in_training_step(c)
            and self.gathered(c)
        ]
        return bool(self.draws)

    def gathered(self, call):
        """Whether the outermost function around the draw gathers across ranks: a collective gather, or a
        project helper that all-gathers (`gather(s, nprocs)` of ddp_utils.py)."""
        functions = [p for p in self.m.parents_of(call) if isinstance(p, DEFINITIONS)]
        if not functions or not isinstance(functions[-1], (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        for n in ast.walk(functions[-1]):
            if not isinstance(n, ast.Call) or last(dotted(n.func)) not in self.GATHERS:
                continue
            target = self.m.project.defined.get(dotted(n.func))
            if target is None or "all_gather" in Project.source_of(*target):
                return True
        return False


class UnevenTrainingBatches(Rule):
    """DDL138: `accelerator.even_batches = False` or `even_batches=False` handed to Accelerator or its
    DataLoaderConfiguration, in a script that calls backward, with no join of uneven inputs."""

    code = "DDL138"

    def begin(self):
        text = self.m.words
        return backward_in(self.m.tree.body) and not {"join_uneven_inputs", "Join"} & text

    def visit_Assign(self, node):
        if (
            any(isinstance(t, ast.Attribute) and t.attr == "even_batches" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is False
        ):
            self.add(node, fixable=False)

    def visit_keyword(self, node):
        if (
            node.arg == "even_batches"
            and isinstance(node.value, ast.Constant)
            and node.value.value is False
        ):
            self.add(node.value, fixable=False)


class StepUnderRankCheck(CallRule):
    """DDL135: `optimizer.step()` or `scheduler.step()` under a rank check (or after rank 0's early return) in
    a script that wraps its model in DDP or prepares it with Accelerate: each process steps its own copy, so one
    stepping alone drifts."""

    code = "DDL135"

    def begin(self):
        # or under Accelerate: RPG's `if accelerator.is_main_process: scheduler.step()` (corpus 29, seen)
        return (
            bool(set(self.m.calls) & {"DistributedDataParallel", "DDP"})
            or self.m.handed_ddp
            or self.m.uses_accelerate
        )

    def check(self, call, name, callee):
        if callee != "step" or not isinstance(call.func, ast.Attribute):
            return
        owner = ast.unparse(call.func.value).lower()
        if not (is_step(call) or re.search(r"sched|lr_", owner)):
            return
        if self.rank_check(call) is not None or self.m.after_early_exit(call):
            self.add(call, fixable=False)


# what a run saved itself during GPU training (`latest.pth`, a resume or best checkpoint), not pretrained
# weights, which are saved from the CPU and load back there
RUN_CHECKPOINT = re.compile(r"resume|checkpoint|ckpt|chkpt|latest|last|best", re.I)
PRETRAINED = re.compile(r"pretrain|init|backbone|download|hub", re.I)


class BackwardUnderAccelerate(CallRule):
    """DDL110: `loss.backward()` in an Accelerate script."""

    code = "DDL110"

    def check(self, call, name, callee):
        if (
            callee == "backward"
            and self.m.uses_accelerate
            and isinstance(call.func, ast.Attribute)
            and last(dotted(call.func.value)) != "accelerator"
            and not call.args
            and not self.beside_accelerate(call)
        ):
            self.add(call)

    def beside_accelerate(self, call):
        """In the branch of an `if` whose other side backpropagates through Accelerate (BiRefNet's
        `if args.use_accelerate: accelerator.backward(loss)` `else: loss.backward()`, corpus 24, seen): the
        script's own path without it."""
        child = call
        for parent in self.m.parents_of(call):
            if isinstance(parent, ast.If) and child is not parent.test:
                other = parent.orelse if child in parent.body else parent.body
                if any(
                    isinstance(n, ast.Call)
                    and last(dotted(n.func)) == "backward"
                    and "accelerat" in dotted(n.func).lower()
                    for statement in other
                    for n in ast.walk(statement)
                ):
                    return True
            child = parent
        return False


class PreparedSchedulerPerEpoch(CallRule):
    """DDL111: a scheduler passed to accelerator.prepare, stepped in the epoch loop itself (not in a loop over
    batches or updates)."""

    code = "DDL111"

    def begin(self):
        # an Accelerator told `step_scheduler_with_optimizer=False` steps a prepared scheduler once a call
        # (Relation-DETR's per-epoch MultiStepLR, corpus 42)
        return not self.m.schedulers_step_alone

    def check(self, call, name, callee):
        if (
            callee == "step"
            and isinstance(call.func, ast.Attribute)
            and dotted(call.func.value) in self.m.prepared_schedulers
            # `lr_scheduler.step(epoch + warmup_steps)`: a timm scheduler told the epoch sets the same rate
            # however many processes step it (eP-ALM's, corpus 44)
            and not call.args
            and keyword(call, "epoch") is None
        ):
            loop = self.innermost_loop(call)
            if isinstance(loop, ast.For) and "epoch" in ast.unparse(loop.target).lower():
                self.add(call)


class PreparedSchedulerInOptimizerSteps(Rule):
    """DDL155: `lr_scheduler = get_scheduler(..., num_training_steps=args.max_train_steps * gas)` (transformers'
    or diffusers' get_scheduler, get_*_schedule_with_warmup) handed to accelerator.prepare, in a script whose
    Accelerator keeps split_batches=False and steps the scheduler with the optimizer (the defaults): the
    prepared scheduler steps once per process at each optimizer step, so a total counted in optimizer steps
    ends 1/num_processes of the way through (Hallo's and Text-To-Video-Finetuning's shape, from diffusers'
    older scripts; corpora 22 and 23), or a torch scheduler's T_max / total_iters / total_steps, made here or by a
    method of the module that returns it (Voicebox's CosineAnnealingLR, LTX-Video's `_create_scheduler`; corpus
    28). Not when the count is scaled by the process count, nor when it is made
    from a loader's length (accelerate's own design: the unsharded loader's length before prepare is counted
    in single-process steps), which this rule cannot tell from the prepared one's."""

    code = "DDL155"
    SCALED = re.compile(r"num_processes|world_size|num_machines|process_count|\blen\(")

    def begin(self):
        if not self.m.uses_accelerate or not self.m.prepared_schedulers:
            return False
        return not self.m.schedulers_step_alone and not self.m.splits_batches

    # torch's schedulers that end after a number of steps: that parameter's name and position
    TORCH_TOTALS = {
        "CosineAnnealingLR": ("T_max", 1),
        "LinearLR": ("total_iters", 3),
        "PolynomialLR": ("total_iters", 1),
        "ConstantLR": ("total_iters", 2),
        "OneCycleLR": ("total_steps", 2),
    }

    def visit_Assign(self, node):
        call = node.value
        prepared = self.m.prepared_schedulers | self.handed_to_prepare
        if not isinstance(call, ast.Call) or not any(dotted(t) in prepared for t in node.targets):
            return
        # made here, or by a method of this module that returns it (LTX-Video's `_create_scheduler`, corpus 28)
        made = [call, *self.made_by(call)]
        for scheduler in made:
            total = self.total_of(scheduler)
            if total is not None and not self.scaled(total) and not self.constant(scheduler):
                self.add(scheduler, fixable=False)
                return

    @functools.cached_property
    def handed_to_prepare(self):
        """The scheduler names handed to accelerator.prepare (`prepare(optimizer, lr_scheduler)`, its result
        bound to other names)."""
        return {
            dotted(a)
            for n in self.m.nodes
            if isinstance(n, ast.Call) and last(dotted(n.func)) == "prepare"
            for a in n.args
            if "sched" in dotted(a).lower() or "lr" in dotted(a).lower().split("_")
        }

    def made_by(self, call):
        """The scheduler calls in the body of this module's function or method that `call` calls."""
        name = last(dotted(call.func))
        functions = [
            n
            for n in self.m.nodes
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
        ]
        return [
            n
            for f in functions[:1]
            for n in ast.walk(f)
            if isinstance(n, ast.Call) and n is not call and self.total_of(n) is not None
        ]

    def total_of(self, call):
        """The number of steps a scheduler call is sized in: get_scheduler's num_training_steps, the total of
        transformers' get_*_schedule_with_warmup, or a torch scheduler's T_max / total_iters / total_steps."""
        callee = last(dotted(call.func)) or ""
        if re.fullmatch(r"get_scheduler|get_\w*schedule\w*", callee):
            total = keyword(call, "num_training_steps")
            if total is None and "with_warmup" in callee and len(call.args) >= 3:
                total = call.args[2]  # get_linear_schedule_with_warmup(optimizer, warmup, total)
            return total
        if callee in self.TORCH_TOTALS:
            parameter, position = self.TORCH_TOTALS[callee]
            given = keyword(call, parameter)
            if given is None and len(call.args) > position:
                given = call.args[position]
            return given
        return None

    def scaled(self, total, depth=3):
        """The total is scaled by the process count or made from a loader's length (SCALED), itself or through
        a name every binding of which is: Voicebox's `self.num_train_steps`, `len(dataset) // batch_size *
        num_epochs` on one path and the `num_train_steps` it is handed on the other, is not (corpus 28). Nor a
        total divided by the process count (minLLMTrain's `... // accelerator.num_processes`, corpus 33): the
        schedule then ends after 1/N of the run, prepared or not."""
        if any(
            isinstance(n, ast.BinOp)
            and isinstance(n.op, (ast.Div, ast.FloorDiv))
            and re.search(r"num_processes|world_size|process_count", ast.unparse(n.right))
            for n in ast.walk(total)
        ):
            return False
        if self.SCALED.search(ast.unparse(total)):
            return True
        if depth == 0:
            return False
        names = {
            dotted(n)
            for n in ast.walk(total)
            if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n)
        }
        for name in names:
            values = [
                n.value
                for n in self.m.nodes
                if isinstance(n, ast.Assign) and any(dotted(t) == name for t in n.targets)
            ]
            if values and all(self.scaled(v, depth - 1) for v in values):
                return True
        return False

    def constant(self, call):
        """A schedule that is constant as the script runs by default (`get_scheduler("constant", ...)`, a
        parameter whose default is "constant": Tune-A-Video's `lr_scheduler: str = "constant"`, or a config key
        every YAML file of the repository sets to "constant": Hallo's `lr_scheduler: "constant"`): stepping it
        faster changes nothing."""
        if last(dotted(call.func)) in self.TORCH_TOTALS:
            return False  # torch's own: its class is its schedule
        chosen = keyword(call, "name") or (call.args[0] if call.args else None)
        if isinstance(chosen, ast.Constant):
            return chosen.value == "constant"
        if isinstance(chosen, ast.Attribute) and self.m.path and Path(self.m.path).is_file():
            # `cfg.solver.lr_scheduler`: what the repository's configs set
            values = Project.config_values(Project.root_of(self.m.path), chosen.attr)
            return bool(values) and values == {"constant"}
        function = self.function_of(call)
        if not isinstance(chosen, ast.Name) or function is None:
            return False
        arguments = function.args
        positional = arguments.posonlyargs + arguments.args
        defaults = dict(zip([a.arg for a in positional][::-1], arguments.defaults[::-1]))
        defaults.update(
            (a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None
        )
        default = defaults.get(chosen.id)
        return isinstance(default, ast.Constant) and default.value == "constant"


class UnshardedTrainingLoader(Rule):
    """DDL156: in a script that wraps its model in DDP, a loop that trains (here or in a method of this module it
    calls) over a DataLoader this module builds with `shuffle=True` or a `RandomSampler`, where nothing in the
    module shards the data (no DistributedSampler, no sampler helper of the project, no rank or replica count
    handed to the loader or its dataset, no `split_dataset_by_node`): every rank iterates the whole dataset
    (Satlas under torch.distributed.launch, corpus 23; neuraloperator's Burgers loader, corpus 21)."""

    code = "DDL156"
    SHARDS = {
        "DistributedSampler",
        "DistributedBatchSampler",
        "ElasticDistributedSampler",
        "num_replicas",
        "split_dataset_by_node",
        "shard",
        "shards",
        "distributed_sampler",
        "InfiniteSampler",
    }

    def begin(self):
        words = self.m.words | set(self.m.calls)
        return (
            self.m.wraps_in_ddp
            and not self.m.uses_accelerate
            and not words & self.SHARDS
            and not self.m.project.sampler_helpers
            and not self.m.project.train_sampler_helpers
        )

    def end(self):
        random_samplers = self.m.bound_to("RandomSampler")
        built = {}
        for n, name, call in self.m.loaders_built:
            sampler = keyword(call, "sampler")
            shuffles = is_true(keyword(call, "shuffle")) or (
                sampler is not None
                and (
                    dotted(sampler) in random_samplers
                    or isinstance(sampler, ast.Call)
                    and last(dotted(sampler.func)) == "RandomSampler"
                )
            )
            if shuffles and not self.m.dataset_shards(call):
                built.setdefault(name, n)
        # `train_loader = get_data(args, "train")`, a project function's plain loader
        for n in self.m.nodes:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
                target = self.m.project.defined.get(dotted(n.value.func))
                if target is not None and self.shuffles_unsharded(*target, n.value):
                    for t in n.targets:
                        for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                            if re.search(r"train", dotted(e), re.I):
                                built.setdefault(dotted(e), n)
        for loop in self.m.nodes:
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            iterated = {
                dotted(n) for n in ast.walk(loop.iter) if isinstance(n, (ast.Name, ast.Attribute))
            }
            if iterated & set(built) and self.trains_deep(loop.body):
                self.add(loop, fixable=False)
                return

    def shuffles_unsharded(self, module, name, call=None):
        """A project function that builds a DataLoader over a RandomSampler (or shuffle=True), in a module that
        shards nothing (hyperfuture's datasets.get_data, corpus 20; not tdfo's data.py, whose datasets
        split_dataset_by_node splits). Or `shuffle=shuffle`, a parameter the call gives True (rDL-SIM's
        `get_loader_SR('train', ..., data_root, True, num_workers)`, corpus 34)."""
        source = Project.source_of(module, name)
        handed = call is not None and any(
            is_true(a) for a in [*call.args, *(k.value for k in call.keywords)]
        )
        shuffles = r"RandomSampler\(|shuffle\s*=\s*True" + (
            r"|shuffle\s*=\s*shuffle\b" if handed else ""
        )
        return (
            "DataLoader(" in source
            and re.search(shuffles, source) is not None
            and re.search(
                r"DistributedSampler|num_replicas|rank|world_size|shard|split_dataset_by_node",
                Project.text(module),
            )
            is None
        )


class WholeEvalOnEveryRank(Rule):
    """DDL159: in a script that wraps its model in DDP, an evaluation every rank runs over a DataLoader this module
    builds without a sampler that shards it (no sampler, or a SequentialSampler): each rank evaluates the whole set
    (FKD's ImageNet validation, corpus 23; LeViT's, whose `--dist-eval` is off by default, corpus 24; both seen).
    The evaluation is the loop over the loader, here or in the function it is handed to (`evaluate(val_loader,
    model)`), under no rank check. Quiet where the loader's dataset is made with the rank or the world size, where
    the sampler is a name bound to a DistributedSampler on another branch whose option is not off by default, and
    where the run is one process."""

    code = "DDL159"

    def begin(self):
        return self.m.wraps_in_ddp and not self.m.uses_accelerate

    def end(self):
        sequential = self.m.bound_to("SequentialSampler")
        sharding = self.m.bound_to("DistributedSampler")
        loaders = {}
        for n, name, call in self.m.loaders_built:
            if keyword(call, "batch_sampler"):
                continue
            dataset = call.args[0] if call.args else keyword(call, "dataset")
            said = " ".join([name, ast.unparse(dataset) if dataset is not None else ""])
            if not names_eval_only(said):
                continue
            sampler = keyword(call, "sampler")
            if sampler is None and len(call.args) > 2:
                sampler = call.args[2]
            if sampler is not None:
                if isinstance(sampler, ast.Call):
                    if last(dotted(sampler.func)) != "SequentialSampler":
                        continue
                elif dotted(sampler) not in sequential:
                    continue
                elif dotted(sampler) in sharding and not self.off_by_default(sampler, n):
                    continue  # `--dist-eval` picks a DistributedSampler, and the script turns it on
            if dataset is None or self.m.dataset_shards(call):
                continue
            loaders[name] = n
        if not loaders:
            return
        for node in self.m.nodes:
            loader = None
            if isinstance(node, (ast.For, ast.AsyncFor)) and dotted(node.iter) in loaders:
                loader = dotted(node.iter)
                if self.trains_deep(node.body):
                    continue
            elif isinstance(node, ast.Call) and EVAL_WORDS.search(last(dotted(node.func)) or "-"):
                given = [dotted(a) for a in [*node.args, *(k.value for k in node.keywords)]]
                loader = next((g for g in given if g in loaders), None)
            if loader is None or node.lineno < loaders[loader].lineno:
                continue
            if self.m.guarded(node, per_node_too=True) or self.in_test(node):
                continue
            if self.shared_out(node):
                continue
            self.add(node, fixable=False)
            return

    def shared_out(self, node):
        """Inside `for i in range(args.gpu, len(weights), ngpus_per_node):`: each rank evaluates its own items
        (sugar's checkpoints, corpus 26, seen), a split of the work, not a repeat."""
        for parent in self.m.parents_of(node):
            if not isinstance(parent, ast.For) or not isinstance(parent.iter, ast.Call):
                continue
            args = parent.iter.args
            if last(dotted(parent.iter.func)) == "range" and len(args) == 3:
                start, step = ast.unparse(args[0]).lower(), ast.unparse(args[2])
                if re.search(r"rank|gpu", start) and (WORLD_SIZE.search(step) or "gpus" in step):
                    return True
        return False

    def off_by_default(self, sampler, built):
        """The `if` whose branch binds `sampler` to a DistributedSampler and whose else binds a SequentialSampler
        tests a store_true flag of this module's parser (`if args.dist_eval:` with `--dist-eval` off unless given):
        the default run evaluates the whole set. Not `if args.distributed:`, which every distributed run takes."""

        def binds(statements, kind):
            return any(
                isinstance(s, ast.Assign)
                and any(dotted(t) == dotted(sampler) for t in s.targets)
                and isinstance(s.value, ast.Call)
                and last(dotted(s.value.func)) == kind
                for statement in statements
                for s in ast.walk(statement)
            )

        for n in self.m.nodes:
            if not isinstance(n, ast.If) or n.lineno > built.lineno:
                continue
            # the `if` that picks between them: one branch shards, the other does not
            if not (binds(n.body, "DistributedSampler") and binds(n.orelse, "SequentialSampler")):
                continue
            flag = last(dotted(n.test)) if isinstance(n.test, (ast.Name, ast.Attribute)) else ""
            for a in self.m.nodes:
                if (
                    isinstance(a, ast.Call)
                    and last(dotted(a.func)) == "add_argument"
                    and any(
                        isinstance(x, ast.Constant)
                        and isinstance(x.value, str)
                        and x.value.lstrip("-").replace("-", "_") == flag
                        for x in a.args
                    )
                ):
                    action = keyword(a, "action")
                    default = keyword(a, "default")
                    return (
                        isinstance(action, ast.Constant)
                        and action.value == "store_true"
                        and not is_true(default)
                    )
        return False


def without_imports(text):
    """Source text without its import lines: a name imported is not yet a name used."""
    return re.sub(r"(?m)^\s*(from|import)\s[^\n]*(\([^)]*\))?", "", text)


class NeverWrapped(Rule):
    """DDL160: a script that shards its training data with a DistributedSampler and trains (a backward and an
    optimizer step), where nothing synchronizes the gradients: no DDP, FSDP, DeepSpeed, Accelerate or Horovod
    wrap and no all-reduce of the gradients, in this module or in a project module it imports (two imports down;
    an all-reduce of a metric or a loss is no sync; NVIDIA's `apply_gradient_allreduce` hooks are). Each rank then
    trains its own copy on its shard (FrozenBiLM's documented 8-GPU run, corpus 24, seen)."""

    code = "DDL160"
    SYNCS = (
        r"DistributedDataParallel|\bDDP\b|FullyShardedDataParallel|\bFSDP\b|fully_shard|deepspeed|"
        r"Accelerator|(all_?reduce|reduce_scatter)\w*\([^)\n]*grad|average_grad|sync_grad|"
        r"gradient_allreduce|allreduce_params|all_?reduce_grad|"
        r"DistributedOptimizer|horovod|lightning|"
        r"\bTrainer\(|broadcast_parameters|DataParallel|"
        r"post_accumulate_grad_hook"  # a DDP of its own: gradients all-reduced from hooks
    )

    def begin(self):
        if not self.trains():
            return False
        if re.search(self.SYNCS, self.code_text()) or self.m.wraps_in_ddp:
            return False
        project = self.m.project
        self.reported = False
        modules = project.imported | project.imported_any
        used = without_imports("\n".join([self.m.text, *(Project.text(m) for m in modules)]))
        return not project.wrapped_by_importer and not any(
            self.syncs(module, used) for module in modules
        )

    def code_text(self):
        """The module's code without its strings: `print(f"Initialized DDP on rank {rank}")` over a script that
        never wraps its model says nothing of a sync (PaliGemma 2's DDP fine-tuning, corpus 30)."""

        class Unsaid(ast.NodeTransformer):
            def visit_Constant(self, node):
                return ast.Constant("") if isinstance(node.value, str) else node

            def visit_JoinedStr(self, node):
                return ast.Constant("")

            # torch's wrappers imported and never used (Instruction_Motion_Editing imports FSDP, wraps
            # nothing: corpus 31); an import of another library (lightning, deepspeed) still says it
            def visit_ImportFrom(self, node):
                return None if (node.module or "").startswith("torch.") else node

        return ast.unparse(Unsaid().visit(copy.deepcopy(self.m.tree)))

    def syncs(self, module, used, depth=2):
        """Whether a project module synchronizes the gradients: it says so, or a module it imports does (`depth`
        imports down), unless what it says is in functions that nothing read here calls (Pangu's `gather_grad`,
        defined in utils_dist.py and never called: corpus 25, seen). `used`: the text the calls are read in,
        import lines left out."""
        said = re.compile(self.SYNCS)
        text = Project.text(module)
        if said.search(text):
            lines, spans = text.splitlines(), Project.spans(module).items()
            outside = [
                line
                for i, line in enumerate(lines, 1)
                if not any(first <= i <= end for _, (first, end) in spans)
            ]
            if said.search("\n".join(outside)):
                return True
            for name, (first, end) in spans:
                if said.search("\n".join(lines[first - 1 : end])):
                    named = len(re.findall(rf"\b{re.escape(name)}\b", used))
                    if named > len(re.findall(rf"\b(def|class)\s+{re.escape(name)}\b", used)):
                        return True
        elif module.name == "__init__.py" and Project.says(module, self.SYNCS, 0):
            return True  # a package's modules
        if not depth:
            return False
        used += "\n" + without_imports(text)
        return any(
            self.syncs(found, used, depth - 1)
            for found in Project.imports_of(module)
            if found != module
        )

    def trains(self):
        """A backward and an optimizer step here, or in a function of the project this module calls (Pangu's
        `train(model, train_loader=...)` in models/pangu_sample.py, corpus 25, seen)."""
        if {"backward", "step"} <= set(self.m.calls):
            return True
        for calls in self.m.calls.values():
            for call in calls:
                target = self.m.project.defined.get(dotted(call.func))
                if target is not None and not Project.is_class(*target):
                    text = Project.source_of(*target)
                    if re.search(r"\.backward\(", text) and re.search(r"\.step\(", text):
                        return True
        return False

    def visit_Call(self, node):
        if last(dotted(node.func)) != "DistributedSampler" or self.reported:
            return
        dataset = node.args[0] if node.args else keyword(node, "dataset")
        if dataset is None or EVAL_WORDS.search(ast.unparse(dataset)):
            return
        self.reported = True
        self.add(node, fixable=False)


class FindUnusedParameters(CallRule):
    """DDL112: DistributedDataParallel(find_unused_parameters=True); not with static_graph=True, under which DDP
    finds the unused parameters once, in the first iteration, instead of walking the graph every step (SEDD,
    corpus 23, seen)."""

    code = "DDL112"

    def check(self, call, name, callee):
        if (
            callee in ("DistributedDataParallel", "DDP")
            and is_true(keyword(call, "find_unused_parameters"))
            and not is_true(keyword(call, "static_graph"))
            and "_set_static_graph" not in self.m.words
        ):
            self.add(call)


class NoDestroyProcessGroup(Rule):
    """DDL113: init_process_group in a module that never calls destroy_process_group."""

    code = "DDL113"

    def begin(self):
        if "init_process_group" in self.m.calls and "destroy_process_group" not in self.m.calls:
            self.add(self.m.calls["init_process_group"][0])  # the first in ast.walk's order
        return False


class DatasetLengthDenominator(Rule):
    """DDL114: `x / len(loader.dataset)` (or `x /= ...`) in a script that shards its data, where x is not
    reduced: not passed to a collective nor made from a reduced value (Reductions). A module that reduces
    nothing reports every such division; `len(loader.dataset)` outside a division (a progress line) is not
    a metric."""

    code = "DDL114"

    def begin(self):
        self.sharded_sets = self.sampled_sets()
        return self.m.shards and self.m.distributed

    def sampled_sets(self):
        """The names of the datasets a DistributedSampler is built over: given to it here, or handed to a
        function of this module whose parameter it is built over (SRGAN-with-distributed-training's
        `prepare(rank, world_size, train_set)`, corpus 30)."""
        found = set()
        for f in [self.m.tree, *self.m.nodes]:
            if not isinstance(f, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [] if isinstance(f, ast.Module) else [a.arg for a in f.args.args]
            for n in scope_nodes(f):
                if not (
                    isinstance(n, ast.Call)
                    and last(dotted(n.func)) == "DistributedSampler"
                    and n.args
                ):
                    continue
                given = dotted(n.args[0])
                if given in params and isinstance(f, ast.FunctionDef):
                    index = params.index(given)
                    for call in self.m.calls.get(f.name, []):
                        passed = [k.value for k in call.keywords if k.arg == given]
                        passed = passed or call.args[index : index + 1]
                        found |= {dotted(a) for a in passed if dotted(a)}
                elif given:
                    found.add(given)
        return found

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Div):
            self.check(node.left, node.right)

    def visit_AugAssign(self, node):
        if isinstance(node.op, ast.Div):
            self.check(node.target, node.value)

    def check(self, numerator, denominator):
        if not (
            isinstance(denominator, ast.Call)
            and last(dotted(denominator.func)) == "len"
            and denominator.args
            and (
                isinstance(denominator.args[0], ast.Attribute)
                and denominator.args[0].attr == "dataset"
                # the sharded set by its name, under a metric (`running_loss / len(train_set)`), not a count
                # of epochs (`start_step * batch_size / len(train_set)`)
                or dotted(denominator.args[0]) in self.sharded_sets
                and bool(METRIC_WORD.search(ast.unparse(numerator)))
            )
        ):
            return
        if self.m.guarded(denominator) and not self.eval_sharded():
            return  # rank 0 alone evaluates the whole test set (Princeton's mnist_classify_ddp.py)
        names = {dotted(n) for n in ast.walk(numerator) if isinstance(n, (ast.Name, ast.Attribute))}
        reductions = self.m.reductions
        unknown = (
            not self.m.reduces
        )  # a name this module does not assign: reduced only if it reduces
        if not any(
            reductions.maybe_reduced(n) or n not in reductions.assigned and not unknown
            for n in names - {""}
        ):
            self.add(denominator)

    def eval_sharded(self):
        """Whether a DistributedSampler (or a Subset shard) is built over an evaluation set here."""
        return any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in ("DistributedSampler", "Subset")
            and EVAL_WORDS.search(" ".join(ast.unparse(a) for a in n.args[:1]))
            for n in self.m.nodes
        )


class ManagerAsStatement(Rule):
    """DDL115: `model.no_sync()`, `accelerator.accumulate(model)`, `torch.autocast(...)`,
    `torch.cuda.device(i)`, `torch.accelerator.device_index(i)` as a statement of their own: the context
    manager is made and dropped, and the code after it runs without it."""

    code = "DDL115"

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and last(dotted(call.func)) in CONTEXT_MANAGERS:
            name = dotted(call.func)
            # `torch.device(x)` alone is the usual check that x names a device, not a manager left unused
            if name != "torch.device" and (
                name.startswith(("torch.", "accelerator.")) or name.endswith(".no_sync")
            ):
                self.add(node)


class UnseededSplit(Rule):
    """DDL116: random_split / randperm on the global RNG in a distributed script: each rank draws its own."""

    code = "DDL116"

    def visit_Call(self, node):
        if (
            last(dotted(node.func)) in ("random_split", "randperm")
            and self.m.distributed
            and keyword(node, "generator") is None
        ):
            self.add(node)
        if (  # a datasets.Dataset's .shuffle() with no seed: each rank its own order, before the sampler
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "shuffle"
            and not node.args
            and not node.keywords
            and self.m.distributed
        ):
            self.add(node)


GLOBAL_RANK = re.compile(
    r"(\bget_rank\(\)|(environ\.get\(|getenv\(|\[)\s*['\"]RANK['\"]|\bprocess_index\b)"
)


class GlobalRankAsDevice(Rule):
    """DDL117: `.to(rank)`, `.cuda(rank)`, `set_device(rank)`, `device_ids=[rank]`, `cuda:{rank}` where the
    value is the global rank: `dist.get_rank()`, `os.environ["RANK"]`, `accelerator.process_index`, or a name
    assigned from one of them. A parameter named rank (mp.spawn's index, one node) is not flagged, nor a script
    that makes the local rank the global one (`init_process_group(rank=local_rank)`: one node, MeloTTS's, corpus
    15). A name is reported at its first use as a device only: the fix is where it is bound."""

    code = "DDL117"

    def begin(self):
        self.names, self.uses = set(), []
        for node in self.m.nodes:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Tuple)
                and isinstance(node.targets[0], ast.Tuple)
            ):  # rank, world_size = dist.get_rank(), dist.get_world_size(): element by element
                for target, value in zip(node.targets[0].elts, node.value.elts):
                    name = dotted(target)
                    if name and "local" not in name.lower() and self.is_global(value, named=False):
                        self.names.add(name)
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if self.is_global(node.value, named=False):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [dotted(t) for t in targets]
                    self.names.update(n for n in names if n and "local" not in n.lower())
        for (
            node
        ) in self.m.nodes:  # rank = LOCAL_RANK if set, else RANK: the local index where it matters
            if isinstance(node, ast.Assign) and any(
                isinstance(n, ast.Constant) and n.value == "LOCAL_RANK"
                for n in ast.walk(node.value)
            ):
                self.names.difference_update(dotted(t) for t in node.targets)
        return True

    def is_global(self, node, named=True):
        if named and dotted(node) in getattr(self, "names", ()):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return False  # rank % torch.cuda.device_count(): a local index, made from the rank
        if isinstance(node, ast.Call) and last(dotted(node.func)) in ("int", "str"):
            return bool(node.args) and self.is_global(node.args[0], named)
        if not any(  # cheap first: nothing in it could name the global rank
            isinstance(n, ast.Constant)
            and n.value == "RANK"
            or isinstance(n, ast.Attribute)
            and n.attr in ("get_rank", "process_index")
            or isinstance(n, ast.Name)
            and n.id in ("get_rank", "process_index")
            for n in ast.walk(node)
        ):
            return False
        text = ast.unparse(node)
        return bool(GLOBAL_RANK.search(text)) and "local" not in text.lower() and len(text) < 80

    def report(self, node, values):
        named = {dotted(v) for v in values if self.is_global(v)}
        if named:
            self.uses.append((node, named))

    def visit_Call(self, node):
        self.report(node, device_indexes(node))

    def visit_JoinedStr(self, node):  # f"cuda:{rank}"
        self.report(node, cuda_indexes(node))

    def end(self):
        # asked only then: they read every assignment, or the repository's pages
        if self.uses and not self.m.local_is_global and not self.m.single_node:
            self.add_first_of_each(self.uses)


class GatherInEval(Rule):
    """DDL118: `accelerator.gather(...)` in an eval function, an eval loop or under no_grad, in a script that
    does not truncate the repeats itself (`samples_seen`, accelerate's own examples before 0.15)."""

    code = "DDL118"

    def visit_Call(self, node):
        func = node.func
        if (
            self.m.uses_accelerate
            and isinstance(func, ast.Attribute)
            and func.attr == "gather"
            and "accelerator" in dotted(func.value).lower()
            and self.in_eval(node)
        ):
            self.add(node)

    def in_eval(self, node):
        function = self.function_of(node)
        if "samples_seen" in ast.unparse(function or self.m.tree):
            return False
        looped = False
        for parent in self.m.parents_of(node):
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # evaluate(), test() (mnist's), validate(); not a pytest test_* that checks gather itself
                return bool(EVAL_WORDS.search(parent.name)) and not parent.name.lstrip(
                    "_"
                ).startswith("test_")
            if isinstance(parent, ast.For) and EVAL_WORDS.search(ast.unparse(parent.iter)):
                return True
            looped = looped or isinstance(parent, (ast.For, ast.While))
            if no_grad(parent) and looped:
                # a loop over batches under no_grad; not a training step's statistics gathered under
                # no_grad for the log (summarize_from_feedback_details' ppo.py, corpus 17, seen)
                return True
        return False


def no_grad(node):
    """Whether a node is `with torch.no_grad():` or `with torch.inference_mode():`."""
    return isinstance(node, ast.With) and any(
        last(
            dotted(
                item.context_expr.func
                if isinstance(item.context_expr, ast.Call)
                else item.context_expr
            )
        )
        in ("no_grad", "inference_mode")
        for item in node.items
    )


# an optimizer by its name: `optimizer`, `self.optim`, `opt_d`, `loss_dict['optimizer_D']`
OPTIMIZER_NAME = re.compile(r"optim|(^|[._\[\'\"])opt")


def stepped_node(step):
    """What an optimizer step steps: `optimizer` of `optimizer.step()`, and of `scaler.step(optimizer)`."""
    owner = step.func.value
    if "scaler" in ast.unparse(owner).lower() and step.args:
        return step.args[0]
    return owner


def stepped_optimizer(step):
    return ast.unparse(stepped_node(step))


def is_step(node):
    """An optimizer step: `optimizer.step()`, `self.optim.step()`, `scaler.step(optimizer)`,
    `scaler.step(optimizer=self.optimizer)` (ml-cvnets')."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "step"
        and any(
            re.search(r"optim|(^|[._])opt($|[._\d])", ast.unparse(n).lower())
            for n in [node.func.value, *node.args, *(k.value for k in node.keywords)]
        )
    )


def counts_micro_batches(test):
    """`step % N == 0`, `(i + 1) % accum != 0`, `ni - last_opt_step >= accumulate`."""
    modulo = any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and not re.search(
            r"\b(size|shape|len)\b", ast.unparse(n.left)
        )  # X.size(0) % world: a batch's size
        for n in ast.walk(test)
    )
    mode = (  # `if accum_freq == 1:` / `> 1`: whether it accumulates at all, not which micro-batch
        isinstance(test, ast.Compare)
        and len(test.comparators) == 1
        and ast.unparse(test.comparators[0]) in ("0", "1")
    )
    # `num_iter == config.step_per_update`, `batch_id - start + 1 == gradient_interval`: a counter reaching the
    # accumulation's length
    counted = isinstance(test, ast.Compare) and bool(ACCUMULATION_NAMES.search(ast.unparse(test)))
    return modulo or ("accum" in ast.unparse(test).lower() or counted) and not mode


ACCUMULATION_NAMES = re.compile(
    r"accum|step_per_update|steps_per_update|update_freq|gradient_interval|grad_interval|acml", re.I
)


def steps_in(statements):
    return any(is_step(n) for statement in statements for n in ast.walk(statement))


def backward_names(scope):
    """The names whose backward a function (or module) runs: `loss.backward()`, `accelerator.backward(loss)`,
    `scaler.scale(loss).backward()` (DDL196, DDL197)."""
    found = set()
    for call in ast.walk(scope):
        if not (isinstance(call, ast.Call) and last(dotted(call.func)) == "backward"):
            continue
        if isinstance(call.func, ast.Attribute) and dotted(call.func.value):
            found.add(dotted(call.func.value))
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
            found |= {dotted(a) for a in call.func.value.args}
        found |= {dotted(a) for a in call.args}
    return found - {""}


def backward_in(statements):
    """Whether the statements call backward (`loss.backward()`, `(loss / n).backward()`,
    `accelerator.backward(loss)`)."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for statement in statements
        for n in ast.walk(statement)
    )


def counts_given(checker, count):
    """The values the repository gives a count (`args.gradient_accumulation_steps`, `self.grad_accum_every`):
    configs, parameters' defaults and command-line defaults and values, as text; None where it cannot tell."""
    if not isinstance(count, (ast.Name, ast.Attribute)) or checker.root is None:
        return None
    key = last(dotted(count))
    given = {
        v
        for v in Project.values_given(checker.root, key)
        # `self.grad_accum_every = grad_accum_every` passes it on; `steps: int = 1` is read as a config
        if last(v) != key and not re.fullmatch(r"int|float|str|bool|Optional\[\w+\]", v)
    }
    return given | Project.numbers_given(checker.root, key)


class AccumulationWithoutNoSync(Rule):
    """DDL119: gradient accumulation by hand in a script that wraps its model in DDP or prepares it with
    Accelerate (or wraps it in another module: it reduces, reads the rank or unwraps `.module`), and never
    calls no_sync / accumulate nor sets require_backward_grad_sync. The shapes: an optimizer step under
    `if step % N == 0` or `if ni - last_opt_step >= accumulate`; `if (i + 1) % N != 0: continue` before the
    step; a loss-scaler call that steps (`loss_scaler(loss, optimizer, update_grad=(i + 1) % N == 0)`, MAE's);
    an inner loop of backwards over micro-batches with the step after it."""

    code = "DDL119"
    fsdp = False  # DDL192 reads the scripts that shard with FSDP alone

    def begin(self):
        self.reported_in = {}  # function (None: the module's own code) -> its findings, reported in end()
        names = set(self.m.calls)
        words = self.m.words
        wraps = (
            bool(names & {"DistributedDataParallel", "DDP"})
            or self.m.uses_accelerate
            or any(  # model = smart_DDP(model): a helper of the project that wraps
                isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and "ddp" in last(dotted(n.value.func)).lower()
                and any(MODEL_NAMES.search(last(dotted(t)) or "-") for t in n.targets)
                for n in self.m.nodes
            )
        )
        fsdp_alone = (
            not wraps
            and not self.m.handed_ddp
            and any("fsdp" in w.lower() or w == "fully_shard" for w in names | words)
        )
        if fsdp_alone != self.fsdp:
            return False  # FSDP alone is DDL192's: accumulating without no_sync is a trade there
        elsewhere = (
            any("all_reduce" in n for n in names)
            or names & {"get_world_size", "get_rank", "is_dist_avail_and_initialized"}
            or "model_without_ddp" in words
            or self.m.project.wrapped_by_importer  # main.py wraps and imports this engine.py
            or self.m.handed_ddp  # a DDP script calls this module's function
        )
        self.wrapped_here = wraps or (
            fsdp_alone and bool(names & {"FSDP", "FullyShardedDataParallel", "fully_shard"})
        )
        return bool(
            (wraps or elsewhere or fsdp_alone)
            # FSDP2's no_sync; Lightning Fabric's (alphafold3-pytorch's trainer, corpus 25, seen)
            and not names & {"no_sync", "set_requires_gradient_sync", "no_backward_sync"}
            and not self.accumulates()
            and not any("sync" in n.lower() and "ddp" in n.lower() for n in names)  # misc.ddp_sync
            and "require_backward_grad_sync" not in words
            and "no_sync"
            not in words  # `ctx = model.no_sync if ... else nullcontext` (accelerate's)
        )

    def accumulates(self):
        """accelerate's `accumulate(model)`: a `with` block's manager, or called on an accelerator; not COCO's
        `coco_evaluator.accumulate()` (isc-demos' maskrcnn engine), which sums evaluation results."""
        managers = {
            id(item.context_expr)
            for n in self.m.nodes
            if isinstance(n, (ast.With, ast.AsyncWith))
            for item in n.items
        }
        return any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) == "accumulate"
            and (id(n) in managers or "accelerat" in dotted(n.func).lower())
            for n in self.m.nodes
        )

    def add(self, node, fixable=True):
        """Where the wrap is in another module, only in a function that is handed the model
        (`train_one_epoch(model, ...)`, MAE's): a model made here and never wrapped all-reduces nothing."""
        function = self.function_of(node)
        handed = function is not None and any(
            MODEL_NAMES.search(a.arg)
            or a.arg == "self"  # a trainer's method: its object holds the model
            for a in [*function.args.args, *function.args.kwonlyargs]
        )
        if self.wrapped_here or handed:
            self.reported_in.setdefault(function, []).append((node, fixable))

    def end(self):
        """One finding a function, its first: the step for the leftover micro-batches after the loop is the same
        accumulation (minimind-v's, reported twice in corpus 27, seen)."""
        for found in self.reported_in.values():
            node, fixable = min(found, key=lambda f: (f[0].lineno, f[0].col_offset))
            super().add(node, fixable)

    def visit_If(self, node):
        if counts_micro_batches(node.test) and not self.counts_one(node.test):
            _, after = siblings(self.m, node)
            if self.steps_through_helpers(node):
                self.add(node)
            elif (
                steps_in(node.body) and not backward_in(node.body) and self.prepared_step(node.body)
            ):
                self.add(
                    node
                )  # (a backward inside the step's branch: the other batches backpropagate nothing)
            elif (
                isinstance(node.body[-1], ast.Continue)
                and steps_in(after)
                and backward_in(siblings(self.m, node)[0])
            ):
                self.add(node)  # backward, then `if (i + 1) % N != 0: continue`, then the step

    def steps_through_helpers(self, node):
        """`training_scheduler.loss_scale_and_backward(loss)` before `if (i + 1) % accum_iter == 0:
        training_scheduler.step_and_lr_schedule(...)`: the backward and the step are a project object's methods
        (R-ESM's Scheduler, corpus 28), named for what they do, under a test an accumulation count names."""
        if steps_in(node.body) or not ACCUMULATION_NAMES.search(ast.unparse(node.test)):
            return False

        def named(statements, word):
            return any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and re.search(rf"(^|_){word}(_|$)", n.func.attr)
                for s in statements
                for n in ast.walk(s)
            )

        before, _ = siblings(self.m, node)
        return (
            named(node.body, "step")
            and named(before, "backward")
            and not named(node.body, "backward")
        )

    def prepared_step(self, statements):
        """Under Accelerate, whether an optimizer the statements step was handed to prepare: MuseTalk steps its
        discriminator's optimizer, which it never prepares, so that backward all-reduces nothing (corpus 28).
        Not where every accelerate config of the repository launches DeepSpeed, whose engine does the
        accumulation whatever the script's `%` test says."""
        if not self.m.uses_accelerate:
            return True
        if (
            self.m.root is not None
            and Project.config_values(self.m.root, "distributed_type") == {"DEEPSPEED"}
        ):  # launched on DeepSpeed alone: its engine keeps the accumulation count (MuseTalk's gpu.yaml)
            return False
        prepared = self.m.prepared_expressions
        if prepared is None:
            return True  # what a starred or listed prepare takes cannot be read
        stepped = [stepped_optimizer(n) for s in statements for n in ast.walk(s) if is_step(n)]
        optimizers = {p for p in prepared if OPTIMIZER_NAME.search(p.lower())}
        return not optimizers or any(o in prepared for o in stepped)

    def counts_one(self, test):
        """The micro-batch count of a `%` test is 1 wherever the repository gives it (count_is_one)."""
        counts = [
            n.right
            for n in ast.walk(test)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
        ]
        return len(counts) == 1 and self.count_is_one(counts[0])

    def count_is_one(self, count):
        """The micro-batch count is 1 wherever the repository gives it: a config's only value (the RSNA
        solution's `cfg.grad_accumulation = 1`, corpus 28), a parameter's default nothing overrides (soundstorm's
        `grad_accum_every = 1`, corpus 33, judged false by both judges; phenaki's README passes 4, judged true).
        Every micro-batch then steps: nothing accumulates, no all-reduce is wasted. Not a count a command-line
        option offers."""
        given = counts_given(self.m, count)
        # a command-line option offers the accumulation: the judges of corpora 26, 27 and 29 counted those true
        # (minimind-v, BERT-NER, croco, medical_mae: five findings), corpus 33's false (minLLMTrain, MGSVit,
        # compositional-scene-understanding: three); the majority stands
        return given == {"1"} and not Project.offers_option(self.m.root, last(dotted(count)))

    def visit_Call(self, node):
        update = keyword(node, "update_grad")
        if update is not None and counts_micro_batches(update) and not self.counts_one(update):
            self.add(node)
        elif isinstance(update, ast.Name) and any(
            # `apply_update = (i + 1) % accum_iter == 0` first, then `update_grad=apply_update`
            # (flow_matching's train_loop)
            isinstance(n, ast.Assign)
            and any(dotted(t) == update.id for t in n.targets)
            and counts_micro_batches(n.value)
            for n in ast.walk(self.function_of(node) or self.m.tree)
        ):
            self.add(node)

    def visit_For(self, node):
        outer = self.m.parent.get(node)
        _, after = siblings(self.m, node)
        iterated = node.iter
        if (
            isinstance(iterated, ast.Call)
            and dotted(iterated.func) == "range"
            and len(iterated.args) == 1
            and self.count_is_one(iterated.args[0])
        ):
            return  # `for _ in range(self.grad_accum_every):` with the count 1 wherever it is given
        if (
            # in a loop, or a step function's `for _ in range(self.grad_accum_every):` (muse-maskgit's)
            (
                isinstance(outer, (ast.For, ast.While))
                or ACCUMULATION_NAMES.search(ast.unparse(node.iter))
            )
            and backward_in(node.body)
            and not steps_in(node.body)
            and steps_in(after)
            and not self.contexts_made_from_the_model(node)
        ):
            self.add(node)  # for micro in chunks: loss.backward() ... then optimizer.step()

    @staticmethod
    def contexts_made_from_the_model(loop):
        """`for context in model_forward_contexts(accelerator, model, steps): with context(): ...`: each
        micro-step runs in a context a function made from the model, which doctor cannot read (an installed
        package's, as self-rewarding-lm's; corpus 27, seen) and which is no_sync but for the last one."""
        given = (
            [*loop.iter.args, *(k.value for k in loop.iter.keywords)]
            if isinstance(loop.iter, ast.Call)
            else []
        )
        if not any(
            MODEL_NAMES.search(last(dotted(a)) or "-") or "accelerator" in dotted(a) for a in given
        ):
            return False
        target = dotted(loop.target)
        return any(
            isinstance(n, (ast.With, ast.AsyncWith))
            and any(
                dotted(
                    item.context_expr.func
                    if isinstance(item.context_expr, ast.Call)
                    else item.context_expr
                )
                == target
                for item in n.items
            )
            for s in loop.body
            for n in ast.walk(s)
        )


def siblings(checker, statement):
    """(the statements before `statement` in its block, those after it)."""
    parent = checker.parent.get(statement)
    for part in ("body", "orelse", "finalbody"):
        block = getattr(parent, part, None)
        if isinstance(block, list) and statement in block:
            i = block.index(statement)
            return block[:i], block[i + 1 :]
    return [], []


MODEL_NAMES = re.compile(r"(^|_)(model|net|network|module)$", re.I)
# what an accelerator.prepare(...) tuple holds that is a model, by its name
PREPARED_MODEL = re.compile(
    r"model|transformer|unet|vae|encoder|decoder|generator|discriminator|backbone|policy|critic",
    re.I,
)
PREPARED_OTHER = re.compile(
    r"optim|sched|loader|dataset|data$|_data|ema", re.I
)  # `optimizer_generator`


class WholeModelSave(Rule):
    """DDL120: `torch.save(model, ...)`: the object itself (a name like model, net, self.model, raw_model),
    not its state_dict()."""

    code = "DDL120"

    def visit_Call(self, node):
        if dotted(node.func) == "torch.save" and node.args:
            saved = node.args[0]
            name = dotted(saved) if isinstance(saved, (ast.Name, ast.Attribute)) else ""
            if name and MODEL_NAMES.search(last(name)) and not self.holds_a_state_dict(node, name):
                self.add(node)

    def holds_a_state_dict(self, node, name):
        """`best_model = net.state_dict().copy()` in the same function: the name holds a state dict."""
        return any(
            isinstance(n, ast.Assign)
            and any(dotted(t) == name for t in n.targets)
            and any(
                isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "state_dict"
                for c in ast.walk(n.value)
            )
            for n in ast.walk(self.function_of(node) or self.m.tree)
        )


class ClipScaledGradients(Rule):
    """DDL121: torch.nn.utils.clip_grad_norm_ / clip_grad_value_ in an Accelerate script, or in a script
    with a GradScaler that never calls unscale_."""

    code = "DDL121"

    def visit_Call(self, node):
        name = dotted(node.func)
        receiver = name.rsplit(".", 1)[0] if "." in name else ""
        # accelerate's own clip on any name (LTX-Video's `self._accelerator.clip_grad_norm_`, corpus 28)
        if (
            last(name) in ("clip_grad_norm_", "clip_grad_value_")
            and "accelerator" not in receiver.lower()
        ):
            if "unscale_gradients" in self.m.calls:
                return  # accelerate's own unscale before a torch clip (MOTIP): the gradients are true
            if self.m.uses_accelerate or "unscale_" not in self.m.calls and self.after_scale(node):
                self.add(node)

    def after_scale(self, node):
        """Whether an earlier statement of the clip's own block backpropagates a scaled loss
        (`scaler.scale(loss).backward()`): the AMP branch, not the fp32 one beside it."""
        statement = next(p for p in [node, *self.m.parents_of(node)] if isinstance(p, ast.stmt))
        before, _ = siblings(self.m, statement)
        return any(
            isinstance(n, ast.Call) and last(dotted(n.func)) == "scale"
            for s in before
            for n in ast.walk(s)
        )


WRITERS = {"save": 1, "save_file": 1, "save_pretrained": 0, "save_model": 1}
# writers of one file, and the argument that names it (DDL107): numpy, matplotlib, torchvision
FILE_WRITERS = {
    "np.save": 0,
    "numpy.save": 0,
    "np.savez": 0,
    "numpy.savez": 0,
    "np.savez_compressed": 0,
    "numpy.savez_compressed": 0,
    "np.savetxt": 0,
    "numpy.savetxt": 0,
    "plt.savefig": 0,
    "matplotlib.pyplot.savefig": 0,
    "save_image": 1,
    "torchvision.utils.save_image": 1,
    "vutils.save_image": 1,
    "safetensors.torch.save_file": 1,
    "save_file": 1,
    "shutil.copyfile": 1,  # vall-e's best checkpoints copied by every rank
    "shutil.copy": 1,
    "shutil.copy2": 1,
}
# memory-mapped arrays, which mode="w+" creates anew (DDL107)
MEMMAPS = {"np.memmap", "numpy.memmap", "numpy.lib.format.open_memmap", "np.lib.format.open_memmap"}
# serializers that write into a file handle, their second argument (DDL107)
SETTINGS = re.compile(
    r"(vars\()?(self\.)?(args|opt|opts|hyp|hyps|cfg|config|conf|hparams|hps|options|settings)\)?",
    re.I,
)
DUMPS = (
    "json.dump",
    "pickle.dump",
    "yaml.dump",
    "yaml.safe_dump",
    "ruamel_yaml.dump",
    "ruamel.yaml.dump",
)
READERS = {"load": 0, "load_file": 0, "from_pretrained": 0, "load_state_dict_from_file": 0}


class ReadWithoutBarrier(Rule):
    """DDL122: a path written under a rank check (torch.save, save_file, save_pretrained, open(..., "w"))
    and read later by every rank (torch.load, load_file, from_pretrained, open(...)) with no barrier on
    every rank between the two. The path is matched as written."""

    code = "DDL122"

    def begin(self):
        if self.m.distributed:
            self.report()
        return False

    def report(self):
        writes, reads, barriers = [], [], []
        for node in self.m.nodes:
            if not isinstance(node, ast.Call):
                continue
            callee = last(dotted(node.func))
            if callee in BARRIERS and not self.m.guarded(node):
                barriers.append(node.lineno)
            path = self.path_of(node)
            if path is None:
                continue
            kind, text = path
            # one writer a node races the readers just the same (MissM's `if local_rank == 0: torch.save(...)`,
            # then every rank's torch.load of best_model.pth, corpus 39)
            if kind == "write" and self.m.guarded(node, per_node_too=True):
                writes.append((node.lineno, text, self.function_of(node)))
            elif kind == "read" and not self.m.guarded(node):
                reads.append((node, text))
        for node, text in reads:
            # in the same function: a name like `idx_file` in two functions is two paths, and the lines of two
            # functions say nothing of which runs first (CodeXGLUE's resume reads, corpus 15)
            function = self.function_of(node)
            before = [
                line
                for line, written, where in writes
                if written == text and line < node.lineno and where is function
            ]
            if before and not any(max(before) < line < node.lineno for line in barriers):
                self.add(node)

    # tables and arrays, their path first: `oof_df.to_csv(path)` on rank 0, then `pd.read_csv(path)` on every rank
    # (the RSNA solution's out-of-fold predictions, corpus 37)
    TABLES = {
        "to_csv": "write",
        "to_parquet": "write",
        "to_json": "write",
        "to_pickle": "write",
        "read_csv": "read",
        "read_parquet": "read",
        "read_json": "read",
        "read_pickle": "read",
        "np.save": "write",
        "numpy.save": "write",
        "np.load": "read",
        "numpy.load": "read",
    }

    @staticmethod
    def path_of(call):
        callee = last(dotted(call.func))
        kind = ReadWithoutBarrier.TABLES.get(callee) or ReadWithoutBarrier.TABLES.get(
            dotted(call.func)
        )
        if kind is not None and "." in dotted(call.func) and call.args:
            return kind, ast.unparse(call.args[0])
        if callee == "open" and call.args:
            mode = call.args[1] if len(call.args) > 1 else keyword(call, "mode")
            mode = mode.value if isinstance(mode, ast.Constant) else "r"
            kind = "write" if any(c in str(mode) for c in "wax") else "read"
            return kind, ast.unparse(call.args[0])
        table = WRITERS if callee in WRITERS else READERS if callee in READERS else None
        if (
            table is None
            or callee in ("load", "save")
            and not dotted(call.func).startswith(("torch.", "accelerator."))
        ):
            return None  # np.save, json.load, ...: another argument order, or not a checkpoint
        position = table[callee]
        args = (
            call.args[position : position + 1]
            or [
                keyword(call, k) for k in ("f", "filename", "path") if keyword(call, k) is not None
            ][:1]
        )
        if not args or isinstance(args[0], ast.Name) and args[0].id == "f":
            return None  # a file object: the path is on its open()
        return ("write" if table is WRITERS else "read"), ast.unparse(args[0])


WORLD_SIZE = re.compile(r"world_size|get_world_size|num_processes|WORLD_SIZE|num_replicas", re.I)


class SummedLoss(Rule):
    """DDL123: a training loss with reduction="sum" in a script that wraps its model in DDP or prepares it with
    Accelerate, and nowhere multiplies a loss by the world size. Not an evaluation's sum (an eval function,
    under no_grad, or `.item()` at once): a summed metric is what an all_reduce then divides."""

    code = "DDL123"

    def begin(self):
        wraps = (
            bool(set(self.m.calls) & {"DistributedDataParallel", "DDP"}) or self.m.uses_accelerate
        )
        return wraps and backward_in(self.m.tree.body) and not self.scaled()

    def scaled(self):
        """A statement about a loss that multiplies by the world size: `loss = f(x) * world_size`,
        `loss *= accelerator.num_processes`."""
        for node in self.m.nodes:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                sides = node.left, node.right
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult):
                sides = node.target, node.value
            else:
                continue
            statement = next(p for p in [node, *self.m.parents_of(node)] if isinstance(p, ast.stmt))
            if any(WORLD_SIZE.search(ast.unparse(side)) for side in sides) and (
                "loss" in ast.unparse(statement).lower()
            ):
                return True
        return False

    def visit_Call(self, node):
        reduction = keyword(node, "reduction")
        if isinstance(reduction, ast.Constant) and reduction.value == "sum":
            function = self.function_of(node)
            parent = self.m.parent.get(node)
            evaluation = (
                function is not None
                and EVAL_WORDS.search(function.name)
                and not backward_in(function.body)  # `train_eval_ddp()` trains too (isc-demos)
                or any(no_grad(p) for p in self.m.parents_of(node))
                or isinstance(parent, ast.Attribute)
                and parent.attr == "item"
            )
            # `F.mse_loss(x, y, reduction='sum') / mask.sum()`: divided by the rank's own count, a mean, which
            # DDP's average keeps (HEIST's reconstruction loss, corpus 39: three judged false)
            divided = (
                isinstance(parent, ast.BinOp)
                and isinstance(parent.op, ast.Div)
                and parent.left is node
            )
            if not evaluation and not divided:
                self.add(node)


class RewrappedAway(Rule):
    """DDL170: `model = DDP(model, ...)`, then, later in the same function or module, `model =
    AutoModelForMaskedLM.from_pretrained(...)` (a value that does not read the wrapped name), then a backward:
    the model trained is not the one wrapped (an ESM-2 fine-tuning script, corpus 30). Not a binding in the other
    branch of the `if` that wrapped, nor one made from the wrapper (`model = model.module`, `torch.compile(model)`),
    nor one with no backward after it."""

    code = "DDL170"

    def begin(self):
        return self.m.wraps_in_ddp or self.m.uses_accelerate

    def visit_Assign(self, node):
        if self.unwrapped_to_train(node):
            self.add(node, fixable=False)
            return
        if not wraps(node.value) or len(node.targets) != 1 or not dotted(node.targets[0]):
            return
        name = dotted(node.targets[0])
        scope = self.function_of(node) or self.m.tree
        nodes = list(scope_nodes(scope))
        later = sorted(
            (
                n
                for n in nodes
                if isinstance(n, ast.Assign)
                and n.lineno > node.end_lineno
                and any(dotted(t) == name for t in n.targets)
            ),
            key=lambda n: n.lineno,
        )
        for again in later:
            if wraps(again.value) or name in {dotted(m) for m in ast.walk(again.value)}:
                return  # wrapped again, or made from the wrapper
            if self.exclusive(node, again):
                continue
            if any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "backward"
                and n.lineno > again.lineno
                for n in nodes
            ):
                self.add(again, fixable=False)
            return

    def unwrapped_to_train(self, node):
        """`unet = unet.module` right after `accelerator.prepare(unet, ...)` (or a DDP wrap), then a backward
        later in the same scope: the forward that follows skips the wrapper, which then never all-reduces
        (SVD_Xtend's train_svd.py, corpus 31). Not a binding under no_grad, nor one with no backward after it
        (the unwrap before a save)."""
        if len(node.targets) != 1 or not dotted(node.targets[0]):
            return False
        name, value = dotted(node.targets[0]), node.value
        if not (
            isinstance(value, ast.Attribute)
            and value.attr == "module"
            and dotted(value.value) == name
        ):
            return False
        prepared = self.m.prepared_expressions or set()
        wrapped = name in prepared or any(
            isinstance(n, ast.Assign)
            and wraps(n.value)
            and any(dotted(t) == name for t in n.targets)
            and n.lineno < node.lineno
            for n in self.m.nodes
        )
        scope = self.function_of(node) or self.m.tree
        return wrapped and any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "backward"
            and n.lineno > node.end_lineno
            for n in scope_nodes(scope)
        )

    def exclusive(self, first, second):
        """Whether two statements sit in the two branches of one `if`."""
        for parent in self.m.parents_of(first):
            if isinstance(parent, ast.If) and is_inside(second, parent):
                return _in_body(first, parent) != _in_body(second, parent)
        return False


class ResumeReplaysBatches(Rule):
    """DDL171: under Accelerate, `accelerator.load_state(...)` in a module that saves its state
    (`accelerator.save_state`) inside a loop over a loader, and skips no batch on resume: no
    `skip_first_batches`, no stateful loader, no `continue` under a test that compares the step or names the
    resume (index-tts's GPT trainer and an SD3 trainer, corpus 30: each resumed epoch trains its first batches
    again). Not a save made once an epoch, after the batch loop."""

    code = "DDL171"
    SKIPS = {"skip_first_batches", "use_stateful_dataloader", "islice", "SkipBatchSampler"}

    def begin(self):
        return self.m.uses_accelerate and not (self.m.words | set(self.m.calls)) & self.SKIPS

    def end(self):
        calls = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and "accelerat" in dotted(n.func.value).lower()
        ]
        loads = [c for c in calls if c.func.attr == "load_state"]
        loops = {
            loop
            for c in calls
            if c.func.attr == "save_state"
            for loop in self.m.parents_of(c)
            if isinstance(loop, (ast.For, ast.AsyncFor))
            and re.search(r"loader|batch", ast.unparse(loop.iter), re.I)
        }
        if loads and loops and not any(self.skips(loop) for loop in loops):
            self.add(loads[0], fixable=False)

    @staticmethod
    def skips(loop):
        """A `continue` under a test that compares (`step < resume_step`) or names the resume or a skip."""
        return any(
            isinstance(n, ast.If)
            and any(isinstance(c, ast.Continue) for c in ast.walk(n))
            and (
                any(
                    isinstance(op, (ast.Lt, ast.LtE))
                    for c in ast.walk(n.test)
                    if isinstance(c, ast.Compare)
                    for op in c.ops
                )
                or re.search(r"resum|skip", ast.unparse(n.test), re.I)
            )
            for n in ast.walk(loop)
        )


class EnvironmentTorchrunNeverSets(Rule):
    """DDL173: `os.environ["NODE_RANK"]` (no default) in a script the repository launches with torchrun, which
    sets RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT but no
    NODE_RANK (listed here from torch 2.13's torchrun): the documented launch dies with a KeyError on every
    rank (gcr_lerobot_2's fsdp_train.py, corpus 31). Not where a shell script of the repository exports the
    variable or sets it on the command, nor a read with a default (`os.environ.get`)."""

    code = "DDL173"
    NEVER_SET = ("NODE_RANK", "NNODES", "NPROC_PER_NODE")

    def begin(self):
        lightning = any(
            isinstance(n, (ast.Import, ast.ImportFrom)) and "lightning" in ast.unparse(n)
            for n in self.m.nodes
        )
        if lightning or self.m.launched_with(
            r"lightning\s+run|\bdeepspeed\b|accelerate\s+launch|\bsrun\b|mpirun"
        ):
            return False  # Lightning's launcher sets NODE_RANK; the others are not read here
        # torchrun named by the repository, or LOCAL_RANK read with no default: the script counts on it
        return self.m.launched_with(r"\btorchrun\b|torch\.distributed\.run\b") or any(
            isinstance(n, ast.Subscript)
            and dotted(n.value) in ("os.environ", "environ")
            and isinstance(n.slice, ast.Constant)
            and n.slice.value == "LOCAL_RANK"
            and isinstance(n.ctx, ast.Load)
            for n in self.m.nodes
        )

    def visit_Subscript(self, node):
        if not (
            dotted(node.value) in ("os.environ", "environ")
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in self.NEVER_SET
            and isinstance(node.ctx, ast.Load)
        ):
            return
        variable = node.slice.value
        exported = re.compile(
            rf"\bexport\s+{variable}\b|(^|\s){variable}=\S*\s+(torchrun|python)", re.M
        )
        if self.m.root is not None and any(
            exported.search(Project.text(page)) for page in Project.pages(self.m.root, (".sh",))
        ):
            return
        self.add(node, fixable=False)


# the optimizers that keep a state per parameter (moments, momentum), by constructor name
OPTIMIZERS = re.compile(
    r"^(Adam\w*|AdamW\w*|SGD|RMSprop|Adagrad|Adadelta|Adafactor|Lion|LAMB|Lamb|FusedAdam|FusedLAMB|Muon|"
    r"NAdam|RAdam|AdEMAMix\w*|MARS\w*)$"
)


class SchedulerNotResumed(Rule):
    """DDL174: an LR scheduler object the module builds and steps, in a project that restores the optimizer's
    state on resume (`optimizer.load_state_dict(...)`, here or in a project module this one imports) but never
    the scheduler's: no `scheduler.load_state_dict`, no `last_epoch=`, no `scheduler.step(epoch)`, no loop that
    steps it to the resumed step, no accelerate load_state. The resumed run starts the schedule again: warm-up
    and decay from step 0 (gpt2-fsdp's StepLR, VITRA's warm-up schedule; corpus 31)."""

    code = "DDL174"
    MADE = re.compile(
        r"^(get_\w*schedul\w*|\w*_schedule(_with_\w+)?|\w*LR|\w*LRScheduler|LRScheduler|"
        r"ReduceLROnPlateau|CosineAnnealing\w*|OneCycleLR|MultiGroupLRScheduler)$"
    )

    def begin(self):
        words = self.m.words | set(self.m.calls)
        if self.m.uses_accelerate or words & {"load_state", "Trainer", "LightningModule"}:
            return False
        if not any(self.MADE.match(name or "-") for name in self.m.calls):
            return False
        loads = [
            receiver
            for tree in [self.m.tree, *(Project.tree(m) for m in self.m.project.imported)]
            for receiver in self.loaded_into(tree)
        ]
        restores_optimizer = any("opt" in r.lower() for r in loads)
        restores_scheduler = any("sched" in r.lower() for r in loads)
        return restores_optimizer and not restores_scheduler

    @staticmethod
    def loaded_into(tree):
        """What a module's `x.load_state_dict(...)` calls load into (`optimizer`, `self.lr_scheduler`), and what
        `load_state_dict(scheduler, ...)` is given first; not in a `load_state_dict` method the module defines (a
        Lookahead optimizer's, which loads its inner optimizer: kaggle_contrails, corpus 28)."""
        found, todo = [], list(ast.iter_child_nodes(tree))
        while todo:
            node = todo.pop()
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == "load_state_dict"
            ):
                continue
            if isinstance(node, ast.Call) and last(dotted(node.func)) == "load_state_dict":
                if isinstance(node.func, ast.Attribute):
                    found.append(dotted(node.func.value))
                found += [dotted(a) for a in node.args[:1]]
            todo.extend(ast.iter_child_nodes(node))
        return found

    def end(self):
        made = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and dotted(n.targets[0])
            and isinstance(n.value, ast.Call)
            and self.MADE.match(last(dotted(n.value.func)))
            and keyword(n.value, "last_epoch") is None
        ]
        for node in made:
            name = dotted(node.targets[0])
            steps = [
                c
                for c in self.m.nodes
                if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "step"
                and dotted(c.func.value) == name
            ]
            if not steps or any(c.args or c.keywords for c in steps):
                continue  # never stepped, or stepped to a position it is given (`scheduler.step(epoch)`)
            if any(self.catches_up(c) for c in steps):
                continue
            self.add(node, fixable=False)
            return

    def catches_up(self, step):
        """`for _ in range(resumed_steps): lr_scheduler.step()`: a loop that does nothing but step it."""
        loop = self.m.parent.get(step)
        loop = self.m.parent.get(loop) if isinstance(loop, ast.Expr) else loop
        return isinstance(loop, ast.For) and len(loop.body) == 1 and not trains(loop.body)


class DistributedSamplerIntoPrepare(Rule):
    """DDL177: a DataLoader built with a DistributedSampler (`sampler=DistributedSampler(ds)`, a name bound to
    one, or `... if distributed else None`) and then handed to accelerator.prepare, which shards its batches a
    second time (AudioMAEDefense's pretraining.py, corpus 32, seen)."""

    code = "DDL177"

    def begin(self):
        if not self.m.uses_accelerate:
            return False
        classes = sampler_classes(self.m.tree)

        def a_sampler(node):
            if isinstance(node, ast.IfExp):
                return a_sampler(node.body) or a_sampler(node.orelse)
            if isinstance(node, ast.Call):
                # or a project function that returns one (distributed-llm-alignment's
                # `get_distributed_sampler(dataset, accelerator)`, corpus 35)
                return last(dotted(node.func)) in classes or dotted(node.func) in helpers
            return dotted(node) in samplers

        helpers = self.m.project.sampler_helpers
        samplers = set()
        for n in self.m.nodes:
            if isinstance(n, ast.Assign) and a_sampler(n.value):
                samplers |= {dotted(t) for t in n.targets if dotted(t)}
        self.loaders = set()
        for n in self.m.nodes:
            if (
                isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and last(dotted(n.value.func)) == "DataLoader"
                and keyword(n.value, "sampler") is not None
                and a_sampler(keyword(n.value, "sampler"))
            ):
                self.loaders |= {dotted(t) for t in n.targets if dotted(t)}
        return bool(self.loaders)

    def visit_Call(self, node):
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in ("prepare", "prepare_data_loader")
            and "accelerat" in dotted(node.func.value).lower()
        ):
            for arg in node.args:
                if dotted(arg) in self.loaders:
                    self.add(arg, fixable=False)


def arguments_for(checker, function, name):
    """(call, [the expressions it passes as `name`]) for each call of `function` in the module, outside it; None
    where `name` is not a parameter of it. A method's `self` is not counted: `self.save(model)` passes `model`
    as the parameter after it."""
    if function is None or "." in name:
        return None
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if name not in params + [a.arg for a in function.args.kwonlyargs]:
        return None
    index = params.index(name) if name in params else None
    if index is not None and params[0] in ("self", "cls"):
        index -= 1
    found = []
    for call in checker.calls.get(function.name, []):
        if is_inside(call, function):
            continue
        given = [k.value for k in call.keywords if k.arg == name]
        if index is not None and 0 <= index < len(call.args):
            given.append(call.args[index])
        found.append((call, given))
    return found


class LoadOnSomeRanks(CallRule):
    """DDL178: `model.load_state_dict(...)` under a rank check where `model` is a DDP-wrapped or prepared
    model: bound to the wrap before the load in the same function, or a parameter of a function that every
    call of this module hands a wrapped name after its wrap (pytorch-ddp-example's `load_model(model=model)`
    under `if dist.get_rank() == 0:`, corpus 33). Not where the module broadcasts afterwards."""

    code = "DDL178"

    def begin(self):
        return bool(self.m.wrapped - self.m.fsdp_wrapped) and "broadcast" not in self.m.text

    def check(self, call, name, callee):
        if callee != "load_state_dict" or not isinstance(call.func, ast.Attribute):
            return
        owner = dotted(call.func.value)
        if owner.endswith(".module"):
            owner = owner[: -len(".module")]
        if self.rank_check(call) is None or not self.m.guarded(call, per_node_too=True):
            return
        if (self.wrapped_before(call, owner) and self.trains_after(call)) or self.handed_a_wrap(
            call, owner
        ):
            self.add(call, fixable=False)

    def trains_after(self, node):
        """A backward, an optimizer step or a call of a training function (`train(...)`, `train_one_epoch`)
        after `node` in its function: the run goes on from the loaded weights. Not the best weights loaded back
        on rank 0 for its final report or save (Person_reID's and the group-activity trainer's, corpus 26)."""
        scope = self.function_of(node) or self.m.tree
        return any(
            isinstance(n, ast.Call)
            and n.lineno > node.lineno
            and (
                last(dotted(n.func)) == "backward"
                or is_step(n)
                or re.search(r"(^|_)train", last(dotted(n.func)))
            )
            for n in scope_nodes(scope, DEFINITIONS)
        )

    def wrapped_before(self, call, owner):
        scope = self.function_of(call) or self.m.tree
        bindings = sorted(
            (n.lineno, wraps(n.value) or last(dotted(getattr(n.value, "func", None))) == "prepare")
            for n in scope_nodes(scope, DEFINITIONS)
            if isinstance(n, ast.Assign)
            and any(owner in {dotted(t), *map(dotted, getattr(t, "elts", []))} for t in n.targets)
            and n.lineno < call.lineno
        )
        return bool(bindings) and bindings[-1][1] and owner in self.m.wrapped

    def handed_a_wrap(self, call, owner):
        handed = arguments_for(self.m, self.function_of(call), owner) or []
        return bool(handed) and all(
            any(
                dotted(g) in self.m.wrapped and self.wrapped_before(caller, dotted(g))
                for g in given
            )
            and self.trains_after(caller)
            for caller, given in handed
        )


class UpdatedOnSomeRanks(Rule):
    """DDL179: in a loop, a name rebound only under a rank check (`if rank == 0: best_val_loss = loss`,
    `if args.local_rank == 0: ... global_step += 1`) and read in the test of an `if` or `while` every rank runs,
    whose body does more than print: learn-pytorch-ddp's FSDP save gated on `curr_val_loss < best_val_loss`
    (corpus 33), DUSTGaussian's phase switch on `global_step` (corpus 34). Not a name a collective takes, nor one
    the loop also rebinds on every rank."""

    code = "DDL179"
    QUIET = {"print", "info", "debug", "warning", "log", "write", "add_scalar", "set_description"}

    def begin(self):
        if not self.m.distributed or re.search(r"broadcast", self.m.text):
            return False
        for scope in [self.m.tree] + [
            n for n in self.m.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]:
            self.scope(scope)
        return False

    @staticmethod
    def a_rank_test(text):
        """A test of the rank itself (`rank == 0`, `args.local_rank == 0`, `is_main_process`), not one that holds
        the letters ("iteration_reranker_step": SimXNS, corpus 34) or compares strings
        (`command_arg in ('--distributed_node_rank', ...)`: SwinTrack, corpus 29)."""
        return not re.search(r"['\"]", text) and bool(
            re.search(
                r"(?<![a-z])(local_|global_|node_)?rank(?![a-z])|main|master|first_worker|zero",
                text,
                re.I,
            )
        )

    def acts(self, body):
        """Whether statements do more than print or log: a call other than those (their arguments aside), a
        break or a return."""
        for statement in body:
            for n in ast.walk(statement):
                if isinstance(n, (ast.Break, ast.Return)):
                    return True
                if isinstance(n, ast.Call) and last(dotted(n.func)) not in self.QUIET:
                    quiet = any(
                        isinstance(p, ast.Call) and last(dotted(p.func)) in self.QUIET
                        for p in self.m.parents_of(n)
                    )
                    if not quiet:
                        return True
        return False

    def loops_of(self, node, scope):
        return [
            p
            for p in itertools.takewhile(lambda p: p is not scope, self.m.parents_of(node))
            if isinstance(p, (ast.For, ast.While))
        ]

    def scope(self, scope):
        guarded, everywhere = {}, set()
        for node in scope_nodes(scope, DEFINITIONS):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AugAssign)
                else []
            )
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                check = self.rank_check(node)
                if check is not None and self.loops_of(node, scope) and self.a_rank_test(check[0]):
                    guarded.setdefault(target.id, []).append(node)
                elif self.loops_of(node, scope):
                    everywhere.add(target.id)
        collected = {
            dotted(a)
            for n in scope_nodes(scope, DEFINITIONS)
            if isinstance(n, ast.Call) and last(dotted(n.func)) in COLLECTIVES
            for a in n.args
        }
        for name in set(guarded) - everywhere - collected:
            for test_owner in scope_nodes(scope, DEFINITIONS):
                if not isinstance(test_owner, (ast.If, ast.While)):
                    continue
                if not any(
                    isinstance(n, ast.Name) and n.id == name for n in ast.walk(test_owner.test)
                ):
                    continue
                if self.rank_check(test_owner) is not None or self.m.picks_ranks(test_owner.test):
                    continue
                if not self.loops_of(test_owner, scope) and not isinstance(test_owner, ast.While):
                    continue
                if self.acts(test_owner.body):
                    self.add(test_owner.test, fixable=False)
                    break


class AccumulateTwice(Rule):
    """DDL180: `with accelerator.accumulate(a), accelerator.accumulate(b):`, or a `with X.accumulate(...)` inside
    another on the same accelerator: each call counts a micro-batch (PASD's ControlNet and UNet, corpus 34)."""

    code = "DDL180"

    @staticmethod
    def accumulations(with_node):
        """The `X.accumulate(...)` calls a `with` enters, where X names an accelerator (PASD imports a vendored
        copy of accelerate's Accelerator, `from pasd.accelerate import Accelerator`)."""
        return [
            item.context_expr
            for item in with_node.items
            if isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Attribute)
            and item.context_expr.func.attr == "accumulate"
            and "accelerat" in dotted(item.context_expr.func.value).lower()
        ]

    def visit_With(self, node):
        calls = self.accumulations(node)
        owners = [dotted(c.func.value) for c in calls]
        for i, call in enumerate(calls):
            if owners[i] in owners[:i]:
                self.add(call, fixable=False)
                return
        for parent in self.m.parents_of(node):
            if isinstance(parent, DEFINITIONS + (ast.For, ast.While)):
                return
            if isinstance(parent, ast.With) and any(
                dotted(c.func.value) in owners for c in self.accumulations(parent)
            ):
                self.add(calls[0], fixable=False)
                return


# a loss that averages over its batch unless told otherwise (reduction="mean", the default): the functional
# form's name, or its module class's
MEAN_LOSSES = re.compile(
    r"^(?:cross_entropy|nll_loss|mse_loss|l1_loss|smooth_l1_loss|huber_loss|binary_cross_entropy"
    r"(?:_with_logits)?|CrossEntropyLoss|NLLLoss|MSELoss|L1Loss|SmoothL1Loss|HuberLoss|BCELoss"
    r"|BCEWithLogitsLoss)$"
)


def sample_count(node):
    """Whether an expression counts a batch's samples: `len(data)`, `x.size(0)`, `x.shape[0]`, `x.numel()`."""
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        if name == "len" and len(node.args) == 1:
            return True
        if last(name) == "size" and len(node.args) == 1 and ast.unparse(node.args[0]) == "0":
            return True
        return last(name) == "numel" and not node.args
    return (
        isinstance(node, ast.Subscript)
        and ast.unparse(node.slice) == "0"
        and (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            or isinstance(node.value, ast.Call)
            and last(dotted(node.value.func)) == "size"
            and not node.value.args
        )
    )


class MeanLossOverSamples(Rule):
    """DDL181: `ddp_loss[0] += loss.item()` and `ddp_loss[1] += len(data)`, then `ddp_loss[0] / ddp_loss[1]`
    (or two names, `total_loss` and `seen`), where the loss is its batch's mean: PyTorch's FSDP tutorial with
    its `reduction='sum'` left out (learn-pytorch-ddp's HF `outputs.loss`, arawxx's `nn.CrossEntropyLoss()`,
    corpus 33). The loss is a mean where it comes from a mean-reducing loss (a functional one, or a module
    class bound in this module, without reduction=), from a model output's `.loss` / `["loss"]` (Hugging
    Face's convention), or from a loss function handed in as a parameter where no Python file of the
    repository asks for reduction="sum". Not where the value added is scaled (`loss.item() * len(data)`), nor
    where the other slot counts batches (`+= 1`)."""

    code = "DDL181"

    def begin(self):
        return self.m.distributed

    def visit_FunctionDef(self, node):
        nodes = list(scope_nodes(node))
        adds = [
            n
            for n in nodes
            if isinstance(n, ast.AugAssign)
            and isinstance(n.op, ast.Add)
            and dotted_or_slot(n.target)
        ]
        counts = {dotted_or_slot(n.target) for n in adds if sample_count(n.value)}
        if not counts:
            return
        quotients = {
            (dotted_or_slot(n.left), dotted_or_slot(n.right))
            for n in nodes
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
        }
        for add in adds:
            total = dotted_or_slot(add.target)
            added = added_loss(add.value)
            if added is None or not any((total, c) in quotients for c in counts):
                continue
            if output_loss(added) or self.is_mean(dotted(added), node, add):
                self.add(add, fixable=False)
                return

    visit_AsyncFunctionDef = visit_FunctionDef

    def is_mean(self, loss, function, at):
        """Whether the name `loss`, as bound last before `at` in `function`, holds a batch's mean."""
        bindings = [
            n
            for n in scope_nodes(function)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and dotted(n.targets[0]) == loss
            and (n.lineno, n.col_offset) < (at.lineno, at.col_offset)
        ]
        if not bindings:
            return False
        value = max(bindings, key=lambda n: (n.lineno, n.col_offset)).value
        while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
            value = value.left  # `loss = criterion(out, y) / accumulation_steps`: a mean still
        if output_loss(value):
            return True
        if not isinstance(value, ast.Call):
            return False
        callee = dotted(value.func)
        if MEAN_LOSSES.search(last(callee)):
            return keyword(value, "reduction") is None
        made = self.constructed(callee)
        if made is not None:
            return (
                MEAN_LOSSES.search(last(dotted(made.func))) and keyword(made, "reduction") is None
            )
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if callee in params and re.search(r"crit|loss", callee, re.I):
            # handed in: a mean unless the repository asks for a sum anywhere
            return self.m.root is not None and not Project.asks_for_a_sum(self.m.root)
        return False

    def constructed(self, name):
        """The call this module binds `name` (or `self.name`) to, where it binds it once: the loss module."""
        made = [
            n.value
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and dotted(n.targets[0]) == name
            and isinstance(n.value, ast.Call)
        ]
        return made[0] if len(made) == 1 else None


def dotted_or_slot(node):
    """`total` or `sums[0]`: a name, or a name's slot by a constant, as written."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and dotted(node.value)
    ):
        return ast.unparse(node)
    return dotted(node)


def added_loss(value):
    """The loss an accumulation adds (`loss.item()`, `float(loss)`, `loss.detach()`, `output["loss"].item()`),
    or None where it adds something else (`loss.item() * len(data)`)."""
    while True:
        if isinstance(value, ast.Call) and dotted(value.func) == "float" and len(value.args) == 1:
            value = value.args[0]
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("item", "detach", "cpu")
            and not value.args
        ):
            value = value.func.value
        else:
            break
    if output_loss(value) or "loss" in last(dotted(value)).lower():
        return value
    return None


def output_loss(node):
    """A model output's loss, `outputs.loss` or `outputs["loss"]`: a batch's mean by Hugging Face's
    convention."""
    if isinstance(node, ast.Attribute) and node.attr == "loss":
        return dotted(node) != "loss"
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "loss"
    )


# what makes a new tensor from the values it is given (DDL182)
NEW_TENSOR = {
    "tensor",
    "Tensor",
    "as_tensor",
    "FloatTensor",
    "DoubleTensor",
    "LongTensor",
    "stack",
    "cat",
}


class ReducedTemporary(Rule):
    """DDL182: `dist.all_reduce(torch.tensor(diagnostic_logs["train_loss"]).to(device))` (SSL-for-2D-Turbulence,
    corpus 35): the collective reduces a tensor made in its own call and nothing keeps it, so the value it was
    made from is still this rank's. Not a tensor of constants or of the rank alone (`all_reduce(torch.tensor([0],
    device=d))`, a signal or a warm-up whose value nobody reads)."""

    code = "DDL182"

    def begin(self):
        return self.m.distributed

    def visit_Call(self, node):
        name = dotted(node.func)
        if last(name) not in ("all_reduce", "reduce") or not name.startswith(
            ("dist.", "torch.distributed.")
        ):
            return
        given = node.args[0] if node.args else keyword(node, "tensor")
        made = given
        while (
            isinstance(made, ast.Call)
            and isinstance(made.func, ast.Attribute)
            and made.func.attr in ("to", "cuda", "float", "double", "detach", "cpu")
        ):
            made = made.func.value
        if not isinstance(made, ast.Call):
            return
        if last(dotted(made.func)) not in NEW_TENSOR or not dotted(made.func).startswith("torch."):
            return
        values = [
            n
            for a in made.args
            for n in ast.walk(a)
            if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))
            and isinstance(getattr(n, "ctx", None), ast.Load)
        ]
        if any(not re.search(r"rank|device", dotted(v) or ast.unparse(v), re.I) for v in values):
            self.add(node, fixable=False)


class WandbLogWithoutInit(Rule):
    """DDL183: `if accelerator.is_main_process: ... wandb.init(...)`, then `wandb.log(...)` with no rank check
    (tango's train.py, corpus 35): every other rank calls wandb.log before any wandb.init, and wandb raises
    (its preinit.py: "You must call wandb.init() before wandb.log()"; wandb/wandb#6556 is this shape). Not
    where some wandb.init runs on every rank (a disabled one in the else branch), nor where the log is itself
    under a rank check or in a function only rank-checked calls reach."""

    code = "DDL183"

    def begin(self):
        if not self.m.distributed:
            return False
        if self.m.launched_with(r"\S") and not self.m.launched_in_processes():
            return False  # the repository runs it as one process (DMD2's `python main/edm/test_folder_edm.py`)
        if any(  # `wandb` a name of the script's own: a parameter, `wandb = None`, `import swanlab as wandb`
            isinstance(n, ast.arg)
            and n.arg == "wandb"
            or isinstance(n, ast.Name)
            and n.id == "wandb"
            and isinstance(n.ctx, ast.Store)
            or isinstance(n, ast.alias)
            and n.asname == "wandb"
            for n in self.m.nodes
        ):
            return False  # minimind-v's `if wandb: wandb.log(...)`, None on the other ranks (corpus 27)
        inits = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call) and dotted(n.func) in ("wandb.init", "wandb.sdk.init")
        ]
        # each under a check that picks the main process (not its else branch: `else: wandb.init(mode=
        # "disabled")` gives the other ranks a run of their own)
        # the names the init's rank-checked block binds (bsq-vit's `with_wandb = True` beside its wandb.init,
        # corpus 31): a log under `if with_wandb:` runs where the init did
        self.flags = {
            t.id
            for n in inits
            for p in self.m.parents_of(n)
            if isinstance(p, ast.If) and self.m.picks_ranks(p.test)
            for t in ast.walk(p)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
        }
        return bool(inits) and all(
            self.m.guarded(n)
            and not self.m.never_distributed(n)
            and (self.rank_check(n) or (None, True))[1]
            for n in inits
        )

    def visit_Call(self, node):
        if dotted(node.func) != "wandb.log" or self.in_test(node):
            return
        tests = [p.test for p in self.m.parents_of(node) if isinstance(p, (ast.If, ast.IfExp))]
        if any(isinstance(n, ast.Name) and n.id in self.flags for t in tests for n in ast.walk(t)):
            return
        if not self.m.guarded(node):
            self.add(node, fixable=False)


class ClipEveryMicroBatch(Rule):
    """DDL184: `accelerator.clip_grad_norm_(...)` (or torch.nn.utils.clip_grad_norm_) in the block of
    `with accelerator.accumulate(model):` with no `if accelerator.sync_gradients:` around it
    (distributed-llm-alignment's train_reward.py, corpus 35): each micro-batch's partial sum is clipped. Not
    where the accumulation count is 1 wherever the repository gives it (AccumulationWithoutNoSync's
    count_is_one), nor where `Accelerator()` is made with no gradient_accumulation_steps (and no plugin)."""

    code = "DDL184"

    def begin(self):
        if not self.m.uses_accelerate:
            return False
        makers = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call) and last(dotted(n.func)) == "Accelerator"
        ]
        counts = [keyword(n, "gradient_accumulation_steps") for n in makers]
        plugins = [keyword(n, "gradient_accumulation_plugin") for n in makers]
        if makers and all(c is None for c in counts) and all(p is None for p in plugins):
            return False  # one micro-batch a cycle: accumulate() syncs every step
        return not any(
            c is not None
            and (isinstance(c, ast.Constant) and c.value == 1 or self.one_wherever_given(c))
            for c in counts
        )

    def one_wherever_given(self, count):
        """The count is 1 wherever the repository gives it, an option's default included (TOMS-Net's
        `--gradient_accumulation_steps`, default 1, which no run of it passes: corpus 35). Stricter than
        DDL119's count_is_one, whose judges counted an offered option true: these rules are new."""
        return counts_given(self.m, count) == {"1"}

    def visit_Call(self, node):
        if last(dotted(node.func)) not in ("clip_grad_norm_", "clip_grad_value_"):
            # or a project helper that clips (distributed-llm-alignment's maybe_clip_gradients)
            target = self.m.project.defined.get(dotted(node.func))
            if target is None or not re.search(
                r"clip_grad_(norm|value)_\(", Project.source_of(*target)
            ):
                return
        inside = False
        for parent in self.m.parents_of(node):
            if isinstance(parent, ast.If) and "sync_gradients" in ast.unparse(parent.test):
                return
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(
                isinstance(item.context_expr, ast.Call)
                and last(dotted(item.context_expr.func)) == "accumulate"
                for item in parent.items
            ):
                inside = True
                break
            if isinstance(parent, DEFINITIONS):
                break
        if inside:
            self.add(node, fixable=False)


class ZeroGradFirstInAccumulate(ClipEveryMicroBatch):
    """DDL185: `with accelerator.accumulate(model): optimizer.zero_grad(); accelerator.backward(loss); ...`
    (supervoice-flow's train.py, corpus 36): the prepared optimizer zeroes only when sync_gradients is True, at
    the start of the cycle's last micro-batch, so the step sees that micro-batch alone. Where the accumulation
    is real (ClipEveryMicroBatch.begin): not with one micro-batch a cycle."""

    code = "DDL185"

    def visit_Call(self, node):
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "zero_grad"):
            return
        block = next(
            (
                p
                for p in self.m.parents_of(node)
                if isinstance(p, (ast.With, ast.AsyncWith))
                and any(
                    isinstance(item.context_expr, ast.Call)
                    and last(dotted(item.context_expr.func)) == "accumulate"
                    for item in p.items
                )
            ),
            None,
        )
        if block is None or any(
            isinstance(p, DEFINITIONS) and is_inside(p, block) for p in self.m.parents_of(node)
        ):
            return
        calls = [
            n
            for n in ast.walk(block)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        at = (node.lineno, node.col_offset)
        # first in the block: no step before it (S3Diff's `step(); zero_grad()` between its generator's and
        # its discriminator's backward is another shape, corpus 34)
        if any(n.func.attr == "step" and (n.lineno, n.col_offset) < at for n in calls):
            return
        if any(n.func.attr == "backward" and (n.lineno, n.col_offset) > at for n in calls):
            self.add(node, fixable=False)


# a call that writes a file by its name: `save_parameters`, `dump_results`, `export_onnx`, `to_csv` (DDL187)
SAVING = re.compile(r"save|dump|export|to_csv|to_json|to_parquet", re.I)
# owners whose save every process must call (it gathers shards, or picks the writer itself): accelerate's
# save_state, Lightning's trainer and Fabric, DeepSpeed's engine, torch.distributed.checkpoint, a project's
# checkpoint manager or saver (torchtitan's `checkpoint.save(step)` in flame, corpus 28); the library's writes
SAVES_TOGETHER = re.compile(
    r"(^|\.)(accelerator|fabric|trainer|\w*engine|dcp|dist|\w*checkpoint\w*|\w*ckpt\w*|\w*saver|\w*manager|"
    r"torch|np|numpy|json|pickle|os|shutil|sys|logger|logging)$",
    re.I,
)


class WriteGuardedElsewhere(WriteOnEveryRank):
    """DDL187: the same saving call (`self.actor_critic.save_parameters(...)`, `save_checkpoint(...)` of the
    project) made as a statement under a rank check in one place of the module and with none in another
    (scope-recommendation's best-loss save after its main-process epoch save, corpus 32). Not the library's own
    writes (DDL107's), not the saves every process must call (a checkpoint manager's, accelerate's save_state),
    not a helper or an object that checks the rank or joins a collective itself, not a file named by the rank or
    by the loop's item (each rank its own samples: diffusers' class images)."""

    code = "DDL187"
    distributed_only = True

    def check(self, call, name, callee):
        pass  # DDL107's reading, not its findings

    def end(self):
        groups = {}
        for n in self.m.nodes:
            if (
                isinstance(n, ast.Call)
                and isinstance(self.m.parent.get(n), ast.Expr)  # a write, not `text = cfg.dump()`
                and SAVING.search(last(dotted(n.func)))
            ):
                groups.setdefault(dotted(n.func), []).append(n)
        instances = project_instances(self.m)
        for name, calls in groups.items():
            owner = name.rpartition(".")[0]
            if SAVES_TOGETHER.search(owner) or last(name) in ("save_state", "save_checkpoint"):
                continue
            # a function of a project module (`misc.save_model`, PhysioNet's: it writes through save_on_master,
            # corpus 37) is read as a helper, an object's method through its class
            helper = not owner or name in self.m.project.defined
            if not (self.plain_helper(name) if helper else self.plain_owner(owner, instances)):
                continue
            guarded = [c for c in calls if self.m.guarded(c, per_node_too=True)]
            if not guarded:
                continue
            for call in calls:
                given = [*call.args, *(k.value for k in call.keywords)]
                if (
                    call not in guarded
                    and not self.m.never_distributed(call)
                    and not self.in_test(call)
                    and not PER_RANK.search(ast.unparse(call))
                    and not any(self.per_item(call, a) for a in given)
                    and not SAVING.search(getattr(self.function_of(call), "name", ""))
                ):
                    self.add(call, fixable=False)

    RANK_AWARE = re.compile(
        r"rank|is_main|main_process|master|barrier|reduce|gather|broadcast", re.I
    )

    def plain_helper(self, name):
        """A function of this module or the project that writes and leaves the rank to its caller: no rank
        test, collective or barrier in it."""
        local = self.m.reductions.defined.get(name)
        if local is not None:
            text = ast.unparse(local)
        elif name in self.m.project.defined:
            text = Project.source_of(*self.m.project.defined[name])
        else:
            return False
        return bool(text) and not self.RANK_AWARE.search(text)

    def plain_owner(self, owner, instances):
        """An object that is not told the rank where it is made (voltron's `CheckpointSaver(...,
        is_rank_zero=...)`), whose class, where the project defines it, checks no rank itself."""
        made = [
            n.value
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and owner in {dotted(t) for t in n.targets}
        ]
        if any(self.RANK_AWARE.search(ast.unparse(value)) for value in made):
            return False
        return not any(
            self.RANK_AWARE.search(Project.source_of(module, name))
            for module, name in instances.get(owner, ())
        )


# a call that reads the machine's clock (DDL188)
CLOCK_CALLS = (
    "datetime.now",
    "datetime.today",
    "datetime.utcnow",
    "time.strftime",
    "time.localtime",
    "time.time",
    "time.ctime",
    "time.asctime",
)
# a call that uses a path on every rank: opens, reads, logs into or lists it (DDL188)
USES_A_PATH = {
    "open",
    "load",
    "FileHandler",
    "SummaryWriter",
    "listdir",
    "glob",
    "read_csv",
    "read_json",
    "loadtxt",
    "from_pretrained",
    "load_state_dict",
}


class ClockNamedRun(Rule):
    """DDL188: a path made from a value of the clock (`os.path.join(out, time.strftime(...))`, `f"{datetime.now():
    %y%m%d_%H%M}_{name}"`), link by link through the names bound from it in the same function, that a call under a
    rank check makes or writes, and that a call on every rank then opens, loads or logs into (BDCI's
    create_logger: the folder made on rank 0, the FileHandler on every rank; CryoET's averaged checkpoint written
    on rank 0 and loaded on every rank after a barrier; corpus 37). Not where the stamp is broadcast, nor a path
    that names the rank."""

    code = "DDL188"
    distributed_only = True

    @staticmethod
    def reads_clock(value):
        return any(
            isinstance(n, ast.Call) and dotted(n.func).endswith(CLOCK_CALLS)
            for n in ast.walk(value)
        )

    def end(self):
        if any(
            isinstance(n, ast.Call) and "broadcast" in last(dotted(n.func)) for n in self.m.nodes
        ):
            return  # the stamp may be rank 0's, sent to the others
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        for scope in [self.m.tree, *(f for f in self.m.nodes if isinstance(f, functions))]:
            inside = list(scope_nodes(scope))
            binds = sorted((n for n in inside if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
            stamped = [b for b in binds if self.reads_clock(b.value) and not self.m.guarded(b)]
            if not stamped:
                continue
            names = set()
            for b in binds:
                if b.lineno >= stamped[0].lineno and (
                    self.reads_clock(b.value) or mentions_any(b.value, names)
                ):
                    names |= {
                        dotted(t)
                        for target in b.targets
                        for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                    }
            names.discard("")
            calls = [
                c
                for c in inside
                if isinstance(c, ast.Call)
                and c.lineno > stamped[0].lineno
                and any(mentions_any(a, names) for a in [*c.args, *c.keywords])
                and not PER_RANK.search(ast.unparse(c))
            ]
            made = [c for c in calls if last(dotted(c.func)) not in LOGGERS and self.m.guarded(c)]
            used = [
                c
                for c in calls
                if last(dotted(c.func)) in USES_A_PATH
                and not self.m.guarded(c)
                and any(c.lineno > m.lineno for m in made)
            ]
            if made and used:
                self.add(stamped[0], fixable=False)


class DiscardedWrapper(Rule):
    """DDL189: `torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])` (or DataParallel,
    FSDP1, `accelerator.prepare(model)`) as an expression statement: the wrapper is dropped, and the plain model
    trains (blox-pal's NCF profile, corpus 37)."""

    code = "DDL189"

    def visit_Expr(self, node):
        call = node.value
        if not isinstance(call, ast.Call) or not call.args:
            return
        callee = last(dotted(call.func))
        if (
            callee in WRAPPERS
            or callee == "prepare"
            and dotted(call.func).endswith("accelerator.prepare")
        ):
            self.add(node, fixable=False)


class GatheredBesideLocal(Rule):
    """DDL190: in a loop, a call handed a name bound from a gather (`labels_gathered = accelerator.gather(labels)`)
    and a name the loop binds from the rank's own computation (`predictions = model.crf.decode(outputs, ...)`),
    neither gathered the other way (AnswerExtract's `get_labels_ray(predictions, labels_gathered)`, corpus 37).
    Not a print or a log, nor a name also gathered in the loop."""

    code = "DDL190"
    distributed_only = True

    @staticmethod
    def is_gather(node):
        """all_gather, accelerator.gather, gather_for_metrics, a project's concat_all_gather."""
        return isinstance(node, ast.Call) and "gather" in last(dotted(node.func)).lower()

    def gathers(self, value):
        return any(self.is_gather(n) for n in ast.walk(value))

    def visit_For(self, node):
        inside = [n for s in node.body for n in ast.walk(s)]
        gathered, local = set(), set()
        binds = sorted(
            (
                n
                for n in inside
                if isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
            ),
            key=lambda n: n.lineno,
        )
        # what the loop binds, its target's and its body's: a gather of one of them is a batch's values (not
        # `checkpoint.gather(raw_model)`, the model's state: this project's rung 7)
        bound = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} | {
            n.targets[0].id for n in binds
        }
        made = {}  # name -> [(line, "gathered" or "local")] of its bindings in the loop
        for n in binds:
            name = n.targets[0].id
            batch_gathered = any(
                self.is_gather(c) and any(mentions_any(a, bound) for a in c.args)
                for c in ast.walk(n.value)
            )
            # made from a gathered value (`tau = ema.update_tau(margin_global)`: dynamic_beta's, corpus 35)
            if batch_gathered or mentions_any(n.value, gathered):
                gathered.add(name)
                made.setdefault(name, []).append((n.lineno, "gathered"))
            elif isinstance(n.value, ast.Call) and not self.gathers(n.value):
                local.add(name)
                made.setdefault(name, []).append((n.lineno, "local"))
        handed = {  # a name handed to a gather in the loop is not left local
            a.id
            for n in inside
            if self.is_gather(n)
            for a in ast.walk(n)
            if isinstance(a, ast.Name)
        }
        local -= gathered | handed
        if not gathered or not local:
            return

        def holds(name, line, kind, names):
            """What `name` holds at `line`: its last binding in the loop above the line (MissM's `labels`, local
            where the loss reads it, gathered eight lines below: corpus 39); else what the loop makes it."""
            above = [k for at, k in made.get(name, []) if at < line]
            return above[-1] == kind if above else name in names

        for call in inside:
            if (
                isinstance(call, ast.Call)
                and last(dotted(call.func)) not in (*LOGGERS, "print", "len", "extend", "append")
                and not self.gathers(call)
                and any(
                    isinstance(a, ast.Name) and holds(a.id, call.lineno, "gathered", gathered)
                    for a in call.args
                )
                and any(
                    isinstance(a, ast.Name)
                    and a.id in local
                    and holds(a.id, call.lineno, "local", local)
                    for a in call.args
                )
            ):
                self.add(call, fixable=False)
                return


# What accelerate's Accelerator answers (accelerate 1.15's dir() of the class and of an instance, public
# names), and the names of earlier releases scripts still use (`use_fp16`, `deepspeed_config`) (DDL191)
ACCELERATOR_API = frozenset(
    "accumulate autocast backward check_trigger clear clip_grad_norm_ clip_grad_value_ context_parallel_rank "
    "data_parallel_rank data_parallel_shard_rank deepspeed_plugin deepspeed_ulysses_dl_adapter device "
    "dispatch_batches distributed_type end_training even_batches fp8_backend free_memory gather "
    "gather_for_metrics get_state_dict get_tracker gradient_accumulation_steps init_trackers "
    "is_composable_parallelism_enabled is_fsdp2 is_last_process is_local_main_process is_main_process "
    "join_uneven_inputs load_state local_main_process_first local_process_index log logging_dir lomo_backward "
    "main_process_first maybe_context_parallel mixed_precision multi_device no_sync non_blocking num_processes "
    "on_last_process on_local_main_process on_local_process on_main_process on_process "
    "optimizer_step_was_skipped pad_across_processes parallelism_config pipeline_parallel_rank prepare "
    "prepare_data_loader prepare_model prepare_optimizer prepare_scheduler print process_index profile "
    "project_dir reduce register_for_checkpointing register_load_state_pre_hook register_save_state_pre_hook "
    "save save_iteration save_model save_state set_trigger should_save_model skip_first_batches split_batches "
    "split_between_processes sync_gradients tensor_parallel_rank torch_device_mesh trigger_sync_in_backward "
    "unscale_gradients unwrap_model use_distributed use_seedable_sampler use_stateful_dataloader "
    "verify_device_map wait_for_everyone ao_recipe_handler autocast_handler dataloader_config ddp_handler "
    "delayed_fp8_autocast device_placement flag_tensor fp8_enabled fp8_recipe_handler gradient_state "
    "has_fp8_handler has_lomo_optimizer init_handler log_with msamp_recipe_handler native_amp profile_handler "
    "project_configuration rng_types scaler scaler_handler state step step_scheduler_with_optimizer "
    "te_recipe_handler trackers use_fp16 fp16 deepspeed_config deepspeed_engine_wrapped fsdp_plugin "
    "megatron_lm_plugin kwargs_handlers torch_tp_plugin".split()
)


class AcceleratorMisspelled(Rule):
    """DDL191: `accelerator.num_process` where `accelerator = Accelerator(...)` (or `self.accelerator`, bound so
    in the class): a name the Accelerator does not have (TextBox's trainer, corpus 38). Not a name the script
    binds on it itself (`accelerator.my_flag = ...`), nor a read under a getattr or hasattr."""

    code = "DDL191"

    def begin(self):
        self.holders = {
            dotted(t)
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            # Hugging Face's, as its import names it: not a project's own class of that name (VoxCPM's
            # voxcpm.training.Accelerator, with its own rank, barrier and all_reduce: six false, corpus 40)
            and last(dotted(n.value.func)) == "Accelerator"
            and (dotted(n.value.func).startswith("accelerate.") or self.m.uses_accelerate)
            for t in n.targets
        }
        self.holders.discard("")
        self.own = {
            n.attr
            for n in self.m.nodes
            if isinstance(n, ast.Attribute)
            and isinstance(n.ctx, ast.Store)
            and dotted(n.value) in self.holders
        }
        self.seen = set()
        return bool(self.holders)

    def visit_Attribute(self, node):
        if (
            isinstance(node.ctx, ast.Load)
            and dotted(node.value) in self.holders
            and not node.attr.startswith("_")
            and node.attr not in ACCELERATOR_API
            and node.attr not in self.own
            and node.attr not in self.seen
        ):
            self.seen.add(node.attr)
            self.add(node, fixable=False)


class FSDPAccumulationWithoutNoSync(AccumulationWithoutNoSync):
    """DDL192: DDL119's accumulations in a script that shards its model with FSDP alone (FSDP1's wrapper or
    FSDP2's fully_shard, no DDP, no Accelerate) and never turns the gradient sync off: every micro-batch's
    backward reduce-scatters the whole gradient. Its own code, because here it is a trade, not a plain waste:
    FSDP1's no_sync (and FSDP2's set_requires_gradient_sync(False)) keep unsharded gradients until the last
    micro-batch, memory a run sharded to fit may not have. Readers of corpora 31 to 38 counted six of these as
    mistakes (FastVideo's twice, a DPO trainer's, NeuronSpark's, Semi-AT's, gcr_lerobot_2's); the judges of
    llama-recipes and chinese_pretrain (corpora 1 and 30) held them the author's choice. Preview."""

    code = "DDL192"
    fsdp = True


# a global stream's shuffle: each process draws its own order unless the stream is seeded alike
GLOBAL_SHUFFLES = {
    "random.shuffle",
    "random.sample",
    "numpy.random.shuffle",
    "numpy.random.permutation",
    "torch.randperm",
}


def shuffles_globally(node):
    """Whether `node` (a class) shuffles with a global stream it does not seed itself: random's or numpy's
    shuffle, or torch.randperm with no generator of its own."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    if any(
        last(dotted(c.func)) in SEEDERS or SEED_HELPER.match(last(dotted(c.func))) for c in calls
    ):
        return False
    return any(
        dotted(c.func) in GLOBAL_SHUFFLES
        and not (dotted(c.func) == "torch.randperm" and keyword(c, "generator") is not None)
        for c in calls
    )


class UnseededShuffleBeforeTheShard(Rule):
    """DDL193: an order of the data drawn from a global random stream in a script that seeds none, then split
    between the processes as if every process had drawn the same one. A project sampler that shuffles its
    indexes with random's or numpy's stream (or torch.randperm with no generator), handed to a loader that
    Accelerate prepares (it deals the sampler's batches out by process) or shuffling then taking its rank's
    share itself (mini_music_tagging's and Speech_flow's InfiniteSampler, corpora 32 and 36); a dataset whose
    constructor shuffles its list so, under a DistributedSampler, which splits the indexes of a list it takes
    as alike on every rank (rnnt_whisper_small_vi's AudioDataset, corpus 32). Every process starts its streams
    from its own random seed (measured here: two processes, two different torch.randperm(5), random.random()
    and numpy draws), so the shares overlap: some samples are trained on twice an epoch, others never."""

    code = "DDL193"
    distributed_only = True

    def begin(self):
        if not super().begin():
            return False
        calls = [n for n in self.m.nodes if isinstance(n, ast.Call)]
        seeded = any(
            (last(dotted(c.func)) in SEEDERS or SEED_HELPER.match(last(dotted(c.func))))
            and SameSeedEveryRank.global_stream(dotted(c.func))
            for c in calls
        )
        self.prepares = self.m.uses_accelerate and any(
            last(dotted(c.func)).startswith("prepare") for c in calls
        )
        self.reported = set()
        # a seed anywhere in the repository may be the one this run takes (Dialog_Extension seeds random in the
        # main.py that imports its runner, corpus 27, seen)
        return not seeded and not (
            self.m.root is not None
            and Path(self.m.path).is_file()  # a source checked as a string has no repository
            and Project.seeds_anywhere(self.m.root)
        )

    def class_of(self, call, depth=1):
        """The project class a call makes, read where it is defined: in this module, or in the project module
        its name was imported from; through one helper that returns one (Speech_flow's get_sampler)."""
        name = dotted(call.func)
        for node in self.m.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node
        target = self.m.project.defined.get(name)
        if target is None:
            return None
        module_path, defined = target
        tree = Project.qualified_tree(module_path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == defined:
                return node
            if isinstance(node, ast.FunctionDef) and node.name == defined and depth:
                return self.returned_class(module_path, node)
        return None

    @staticmethod
    def returned_class(module_path, function):
        """The shuffling class a project helper returns an instance of (`return InfiniteSampler(dataset)`,
        the class imported in the helper or its module: Qualify reads it as its import's qualified name)."""
        for ret in ast.walk(function):
            if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Call)):
                continue
            made = dotted(ret.value.func)
            source, name = module_path, made
            if "." in made:
                module, name = made.rsplit(".", 1)
                source = Project.resolve(module_path, module, 0)
            else:  # a relative import, which Qualify leaves as written
                for node in ast.walk(function):
                    if isinstance(node, ast.ImportFrom) and node.level:
                        if any((a.asname or a.name) == made for a in node.names):
                            source = Project.resolve(module_path, node.module or "", node.level)
            if source is None:
                continue
            source, name = Project.origin(source, name)
            for c in Project.qualified_tree(source).body:
                if isinstance(c, ast.ClassDef) and c.name == name:
                    return c
        return None

    def visit_Call(self, node):
        name = last(dotted(node.func))
        if name == "DistributedSampler":
            dataset = node.args[0] if node.args else keyword(node, "dataset")
            made = self.bound_before(node, dataset.id) if isinstance(dataset, ast.Name) else dataset
            made = made if isinstance(made, ast.Call) else None
            cls = self.class_of(made) if made is not None else None
            if cls is not None and self.init_shuffles(cls):
                self.report(node)
            return
        cls = self.class_of(node) if "(" not in ast.unparse(node.func) else None
        if cls is None or not self.is_sampler(cls):
            return
        iterate = next(
            (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__iter__"), None
        )
        if iterate is None or not shuffles_globally(cls):
            return
        if self.prepares or self.shuffles_then_takes_its_share(iterate):
            self.report(node)

    @staticmethod
    def is_sampler(cls):
        """A sampler by its name or its bases; not an IterableDataset that shards its files by rank first and
        shuffles its own share after (X-VLM's DistLineReadingDataset, corpus 26, seen)."""
        return "Sampler" in cls.name or any("Sampler" in dotted(b) for b in cls.bases)

    @staticmethod
    def shuffles_then_takes_its_share(iterate):
        """`__iter__` shuffles with a global stream, then slices the order by the rank
        (`indices[self.rank::self.num_replicas]`): each process slices its own order."""
        shuffles = [
            n.lineno
            for n in ast.walk(iterate)
            if isinstance(n, ast.Call) and dotted(n.func) in GLOBAL_SHUFFLES
        ]
        shares = [
            n.lineno
            for n in ast.walk(iterate)
            if isinstance(n, ast.Subscript)
            and re.search(r"rank|num_replicas|world_size", ast.unparse(n.slice))
        ]
        return bool(shuffles and shares and min(shuffles) <= max(shares))

    @staticmethod
    def init_shuffles(cls):
        """A dataset (it has __getitem__) whose constructor shuffles its list with a global stream."""
        methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
        return (
            "__getitem__" in methods
            and "__init__" in methods
            and shuffles_globally(methods["__init__"])
        )

    def report(self, node):
        if node.lineno not in self.reported:
            self.reported.add(node.lineno)
            self.add(node, fixable=False)


class WeightsChangedOnOneRank(Rule):
    """DDL194: inside the training loop, under a check that picks one rank, the trained model's weights are
    overwritten: `ema.copy_to(model.parameters())` with no `ema.restore(...)` after it (AudioEditing's and
    AUDIT_v2's checkpoint blocks, corpora 35 and 39). DDP broadcasts the weights once, at the wrap; after that the
    replicas stay equal only because every rank applies the same averaged gradient, so rank 0 trains on from the
    EMA's weights and the others from their own, apart from then on. Not after the loop (the end of training, as
    diffusers' scripts copy), nor a copy restored before the loop goes on (their validation's store, copy_to,
    restore)."""

    code = "DDL194"
    distributed_only = True

    def visit_Call(self, node):
        if not (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "copy_to"
            and node.args
            and isinstance(node.args[0], ast.Call)
            and isinstance(node.args[0].func, ast.Attribute)
            and node.args[0].func.attr == "parameters"
        ):
            return
        if not self.m.guarded(node, per_node_too=True) or not self.in_a_training_loop(node):
            return
        if self.into_a_fresh_model(node):
            return
        holder = dotted(node.func.value)
        scope = self.function_of(node) or self.m.tree
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "restore"
            and dotted(n.func.value) == holder
            and n.lineno > node.lineno
            for n in ast.walk(scope)
        ):
            return
        self.add(node, fixable=False)

    def into_a_fresh_model(self, node):
        """The copy goes into a model loaded or copied for the checkpoint inside the loop (Drivingdojo's
        `unet_ckpt = UNet...from_pretrained(...)` just before `ema_unet.copy_to(unet_ckpt.parameters())`, corpus
        44), not the trained one; not a name bound so before the loop (AudioEditing's `unet`, prepared since)."""
        name = dotted(node.args[0].func.value)
        loop = next(
            (p for p in self.m.parents_of(node) if isinstance(p, (ast.For, ast.While))), None
        )
        bindings = [
            n
            for n in ast.walk(loop)
            if isinstance(n, ast.Assign)
            and any(dotted(t) == name for t in n.targets)
            and n.lineno < node.lineno
        ]
        return (
            bool(bindings)
            and isinstance(bindings[-1].value, ast.Call)
            and last(dotted(bindings[-1].value.func)) in ("from_pretrained", "deepcopy")
        )

    def in_a_training_loop(self, node):
        """Inside a loop whose body runs a backward (`loss.backward()`, `accelerator.backward(loss)`)."""
        return any(
            isinstance(loop, (ast.For, ast.While)) and backward_in(loop.body)
            for loop in self.m.parents_of(node)
        )


class EpochsFromTheUnshardedLength(Rule):
    """DDL195: `num_epochs = math.ceil(args.num_iters / len(train_dataloader))` (or through a name made from the
    length: `num_update_steps_per_epoch = ceil(len(loader) / accumulation)`) before the loader goes through
    accelerator.prepare, with no new count after it, and a loop `for epoch in range(..., num_epochs)` after the
    prepare: each process gets 1/N of the batches, so the run makes 1/N of the steps it counted (Diff-Pruning's
    DDPM training, from an older diffusers example; corpus 42). Not with split_batches=True, which keeps the
    length."""

    code = "DDL195"

    def begin(self):
        return self.m.uses_accelerate and not self.m.splits_batches

    def end(self):
        accelerators = self.m.bound_to("Accelerator") | {"accelerator", "self.accelerator"}
        prepares = [
            c
            for c in self.m.calls.get("prepare", [])
            if isinstance(c.func, ast.Attribute) and dotted(c.func.value) in accelerators
        ]
        for prepare in prepares:
            loaders = {dotted(a) for a in prepare.args if dotted(a)}
            scope = self.function_of(prepare) or self.m.tree
            assignments = [
                n
                for n in ast.walk(scope)
                if isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], (ast.Name, ast.Attribute))
            ]

            def lengths(
                expression, names, loaders=loaders
            ):  # the loader's length, or a name made from it
                return any(
                    isinstance(n, ast.Call)
                    and dotted(n.func) == "len"
                    and n.args
                    and dotted(n.args[0]) in loaders
                    or isinstance(n, (ast.Name, ast.Attribute))
                    and dotted(n) in names
                    for n in ast.walk(expression)
                )

            made, epochs = set(), {}
            for node in sorted(assignments, key=lambda n: n.lineno):
                if node.lineno >= prepare.lineno:
                    break
                if lengths(node.value, made):
                    made.add(dotted(node.targets[0]))
                    # a count divided by the length: epochs
                    if any(
                        isinstance(n, ast.BinOp)
                        and isinstance(n.op, (ast.Div, ast.FloorDiv))
                        and lengths(n.right, made - {dotted(node.targets[0])})
                        for n in ast.walk(node.value)
                    ):
                        epochs[dotted(node.targets[0])] = node
            recounted = {dotted(n.targets[0]) for n in assignments if n.lineno > prepare.lineno}
            for name, node in epochs.items():
                if name in recounted:
                    continue
                loops = [
                    n
                    for n in ast.walk(scope)
                    if isinstance(n, ast.For)
                    and n.lineno > prepare.lineno
                    and isinstance(n.iter, ast.Call)
                    and dotted(n.iter.func) == "range"
                    and n.iter.args
                    and dotted(n.iter.args[-1]) == name
                ]
                if loops:
                    self.add(node, fixable=False)


class LeafLossUnderDDP(Rule):
    """DDL196: `loss = torch.tensor(0.0, requires_grad=True)` (torch.zeros, torch.ones, torch.as_tensor with
    requires_grad=True) in a branch of a function that then runs the loss's backward, in a DDP script (or an
    Accelerate one, whose prepared model is DDP's): a rank whose batch takes the branch runs a backward that
    reaches no parameter, while the others all-reduce (DS-Net's mock loss when a batch has no instance, corpus
    42)."""

    code = "DDL196"
    MADE = {"tensor", "zeros", "ones", "as_tensor", "scalar_tensor", "zeros_like", "full"}

    def begin(self):
        return self.m.wraps_in_ddp or self.m.uses_accelerate

    def visit_Assign(self, node):
        value = node.value
        if not (
            isinstance(value, ast.Call)
            and dotted(value.func).startswith("torch.")
            and last(dotted(value.func)) in self.MADE
            and is_true(keyword(value, "requires_grad"))
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            return
        if not any(isinstance(p, ast.If) for p in self.m.parents_of(node)):
            return  # made on every batch: a buffer or a parameter of the script's own, not a stand-in
        if node.targets[0].id in backward_names(self.function_of(node) or self.m.tree):
            self.add(node, fixable=False)


class TrainedThroughAnUnwrappedHolder(Rule):
    """DDL197: `self.rf = RectifiedFlow(self.model)` made before `self.model = DDP(self.model)` (in __init__,
    the wrap in another method; or earlier in the same function), then a training step whose loss comes from
    `self.rf` (`loss = self.rf.forward_pass(x, y)`) and which never calls the wrapper nor hands it on
    (reflow's ddp_train.py, corpus 42). Not an EMA or a copy (deepcopy), not an object itself wrapped or
    prepared."""

    code = "DDL197"
    COPIES = re.compile(
        r"deepcopy|copy|ema|average|swa|clone|optim|sched|scaler|summary|hook", re.I
    )

    def begin(self):
        return bool(self.m.wrapped - self.m.fsdp_wrapped) and self.m.wraps_in_ddp

    def wraps_of(self, name):
        return [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and any(dotted(t) == name for t in n.targets)
            and wraps(n.value)
        ]

    def end(self):
        holders = {}  # holder -> (model, its assignment)
        for node in self.m.nodes:
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.value, ast.Call)
                and not self.COPIES.search(dotted(node.value.func))
                and not wraps(node.value)
            ):
                continue
            holder = dotted(node.targets[0])
            if not holder or holder in self.m.wrapped:
                continue
            given = [*node.value.args, *(k.value for k in node.value.keywords)]
            for model in {dotted(a) for a in given} & self.m.wrapped:
                wraps_later = [w for w in self.wraps_of(model) if self.before(node, w)]
                if wraps_later and model != holder:
                    holders[holder] = (model, node)
        if not holders:
            return
        for function in self.m.nodes:
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            losses = backward_names(function)
            for assign in ast.walk(function):
                if not (
                    isinstance(assign, ast.Assign)
                    and len(assign.targets) == 1
                    and dotted(assign.targets[0]) in losses
                ):
                    continue
                used = {
                    h
                    for c in ast.walk(assign.value)
                    if isinstance(c, ast.Call)
                    for h in holders
                    if dotted(c.func) == h or dotted(c.func).startswith(h + ".")
                }
                for holder in used:
                    model = holders[holder][0]
                    if not self.wrapper_runs(function, model):
                        self.add(assign, fixable=False)
                        return

    def before(self, made, wrap):
        """The holder is made before the wrap: earlier in the same function, or in __init__ with the wrap in
        another method of the class."""
        here, there = self.function_of(made), self.function_of(wrap)
        if here is there:
            return made.lineno < wrap.lineno
        return (
            here is not None
            and here.name == "__init__"
            and there is not None
            and there.name != "__init__"
            and dotted(wrap.targets[0]).startswith("self.")
        )

    @staticmethod
    def wrapper_runs(function, model):
        """The function calls the wrapper, or hands it to a call (`diffusion.training_losses(model, ...)`)."""
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and (
                dotted(call.func) == model
                or any(dotted(a) == model for a in [*call.args, *(k.value for k in call.keywords)])
            ):
                return True
        return False


class WorldSizeUnsetOnAnEnvironmentPath(Rule):
    """DDL198: `init_process_group(world_size=args.world_size, rank=args.rank)` after an if/elif chain on the
    environment where one branch sets both (`'RANK' in os.environ`) and another sets the rank alone
    (`'SLURM_PROCID' in os.environ`: DETR's init_distributed_mode, corpus 44's PointTAD, TadTR, EgoVLPv2), so
    on that path the world size is whatever the caller had: the flag's default. Not where something else in the
    project sets that attribute (DETR's run_with_submitit.py sets `args.world_size = job_env.num_tasks`), nor
    where the branch returns or the world size is set after the chain, nor where the repository's commands
    launch the callers with torchrun (the environment's branch) and never with srun itself."""

    code = "DDL198"

    def begin(self):
        return self.m.distributed

    def visit_Call(self, node):
        if last(dotted(node.func)) != "init_process_group":
            return
        size, rank = keyword(node, "world_size"), keyword(node, "rank")
        if (
            not isinstance(size, ast.Attribute)
            or rank is None
            or not dotted(size)
            or not dotted(rank)
        ):
            return
        function = self.function_of(node)
        if function is None:
            return
        size_name, rank_name = dotted(size), dotted(rank)

        def sets(statements, name):
            return [n for statement in statements for n in assignments_to(statement, name)]

        elifs = {
            id(n.orelse[0])
            for n in ast.walk(function)
            if isinstance(n, ast.If) and len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If)
        }
        for chain in ast.walk(function):
            if (
                not isinstance(chain, ast.If)
                or id(chain) in elifs
                or chain.end_lineno >= node.lineno
            ):
                continue
            branches, link = [], chain
            while True:
                branches.append((link.test, link.body))
                if len(link.orelse) == 1 and isinstance(link.orelse[0], ast.If):
                    link = link.orelse[0]
                    continue
                if link.orelse:
                    branches.append((None, link.orelse))
                break
            both = [b for t, b in branches if sets(b, size_name) and sets(b, rank_name)]
            alone = [
                (t, b)
                for t, b in branches
                if t is not None
                and "environ" in ast.unparse(t)
                and sets(b, rank_name)
                and not sets(b, size_name)
                and not isinstance(b[-1], (ast.Return, ast.Raise))
            ]
            inside = {id(n) for n in ast.walk(chain)}
            elsewhere = [n for n in sets(function.body, size_name) if id(n) not in inside]
            if (
                both
                and alone
                and not elsewhere
                and not self.set_elsewhere(size, function)
                and not self.launched_through_the_environment(function)
            ):
                self.add(node, fixable=False)
                return

    LAUNCHER = re.compile(ENV_LAUNCHERS)

    def launched_through_the_environment(self, function):
        """Whether the repository's commands start the scripts that call `function` (or this module) with a
        launcher that sets RANK and WORLD_SIZE (torchrun, torch.distributed.launch, accelerate launch,
        deepspeed), so that the documented runs take the environment's branch, and none starts them with srun
        itself. Corpus 46's judges called the finding false twice where torchrun was the documented launch
        (torchvision-tiny-imagenet, adv-part-model)."""
        root = self.m.root
        if root is None or not Path(self.m.path).is_file():
            return False  # a source not on disk: no page of the repository around its name speaks of it
        here = Path(self.m.path).resolve()
        callers = {here} | {
            page.resolve()
            for page in Project.pages(root, (".py",))
            if f"{function.name}(" in Project.text(page)
        }
        # a caller named by its path from the root, or bare, as a command run in its own folder names it (not
        # tools/train.py of a vendored library for the root's train.py: QRNet's swin_model, corpus 44)
        spelled = set()
        for caller in callers:
            try:
                spelled.add(caller.relative_to(Path(root).resolve()).as_posix())
            except ValueError:
                pass
            spelled.add(caller.name)
        names = re.compile(
            r"(?<![\w./-])(\./)?(" + "|".join(re.escape(n) for n in sorted(spelled)) + r")(?!\w)"
        )
        commands = [c for _, c in Project.page_commands(root) if names.search(c)]
        srun = any(
            re.search(r"\bsrun\b", line)
            and re.search(r"\bpython", line)
            and names.search(line)
            and not self.LAUNCHER.search(line)
            for page in Project.pages(root, (".sh", ".md", ".sbatch", ".slurm"))
            for line in Project.text(page).replace("\\\n", " ").splitlines()
        )
        # or a launcher's command a Python file of the repository builds (X-VLM's run.py runs
        # `python3 -m torch.distributed.launch ... Pretrain.py`, corpus 26)
        built = any(
            self.LAUNCHER.search(text) and names.search(text) for text in Project.python_texts(root)
        )
        return (any(self.LAUNCHER.search(c) for c in commands) or built) and not srun

    def set_elsewhere(self, size, function):
        """Whether another function of this module, or another module of the project, sets the attribute on a
        name like its owner (`self.args.world_size = job_env.num_tasks` for `args.world_size`), or the project
        launches through submitit (which sets the world size before the chain runs)."""
        owner, attr = last(dotted(size.value)), size.attr
        for n in self.m.nodes:
            if isinstance(n, (ast.Assign, ast.AugAssign)) and not is_inside(n, function):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(
                    isinstance(t, ast.Attribute)
                    and t.attr == attr
                    and last(dotted(t.value)) == owner
                    for t in targets
                ):
                    return True
        setter = re.compile(rf"\b{re.escape(owner)}\.{re.escape(attr)}\s*=(?!=)|\bsubmitit\b")
        return any(setter.search(Project.text(other)) for other in self.m.project.others)


class OptimizerOverAnUnwrappedModule(Rule):
    """DDL175: in a script that wraps a model in DDP, an optimizer made over the parameters of another module
    that nothing wraps (`criterion.discriminator.parameters()`, or the module handed to a parameter-group
    helper), then stepped: that module's gradients are never all-reduced, so each rank trains its own copy
    (bsq-vit's GAN discriminator, corpus 31). Not a module the script wraps or unwraps (`model.module`,
    `model_without_ddp`), nor where the module all-reduces gradients by hand."""

    code = "DDL175"

    def begin(self):
        if not self.m.wraps_in_ddp or re.search(r"all_reduce\([^)]*grad", self.m.text):
            return False
        self.wrapped = set()
        for n in self.m.nodes:
            if isinstance(n, ast.Assign) and wraps(n.value):
                value = n.value.body if isinstance(n.value, ast.IfExp) else n.value
                self.wrapped |= {dotted(t) for t in n.targets}
                self.wrapped |= {dotted(a) for a in value.args[:1]}
        for n in self.m.nodes:  # `model_without_ddp = model.module`, `net = model` before the wrap
            if not (isinstance(n, ast.Assign) and isinstance(n.value, (ast.Name, ast.Attribute))):
                continue
            if dotted(n.value).split(".")[0] in self.wrapped or any(
                dotted(t) in self.wrapped for t in n.targets
            ):
                self.wrapped |= {dotted(t) for t in n.targets} | {dotted(n.value)}
        for f in self.m.nodes:  # `@property def core_model(self): return self.model.module`
            if (
                isinstance(f, ast.FunctionDef)
                and any(dotted(d) == "property" for d in f.decorator_list)
                and any(
                    isinstance(r, ast.Return)
                    and r.value is not None
                    and any(dotted(x) in self.wrapped for x in ast.walk(r.value))
                    for r in ast.walk(f)
                )
            ):
                self.wrapped.add(f"self.{f.name}")
        self.wrapped.discard("")
        self.stepped = {  # every name a step reads (`scaler.step(opt_g if i == 0 else opt_d)`)
            dotted(x)
            for n in self.m.nodes
            if isinstance(n, ast.Call) and is_step(n)
            for x in ast.walk(n)
            if isinstance(x, (ast.Name, ast.Attribute))
        }
        return bool(self.wrapped)

    def visit_Assign(self, node):
        if len(node.targets) != 1 or not OPTIMIZER_NAME.search(dotted(node.targets[0]).lower()):
            return
        if dotted(node.targets[0]) not in self.stepped or not isinstance(node.value, ast.Call):
            return
        sources = []
        for n in ast.walk(node.value):
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Attribute) and n.func.attr in (
                "parameters",
                "named_parameters",
            ):
                sources.append(dotted(n.func.value))
            elif "param" in last(dotted(n.func)).lower() and n.args:
                sources.append(dotted(n.args[0]))
        # `self.parameters()`: the module itself, which its caller wraps (a LightningModule's
        # configure_optimizers in torch-quiver's benchmarks, corpus 29)
        sources = [x for x in sources if x and x != "self"]
        if sources and not any(self.covered(x) for x in sources):
            self.add(node, fixable=False)

    def covered(self, source):
        """Whether the module a source names is wrapped, or inside or around a wrapped one."""
        parts = source.split(".")
        prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        return bool(prefixes & self.wrapped) or any(
            w.startswith(source + ".") for w in self.wrapped
        )


class ResumeWithoutOptimizer(Rule):
    """DDL176: a resume that reads the step (or epoch) back from a checkpoint and restores the model's weights, in
    a project that never restores an optimizer's state (no optimizer `load_state_dict`, no accelerate
    load_state, no DeepSpeed load_checkpoint, no DCP set_state_dict): Adam's moments start from zero at a step
    the schedule thinks is late (MMaDA's `global_step` from the checkpoint's folder name, Switti's
    `metadata["iter"]` in utils/fsdp.py; corpus 31). Here, or in the project function this module calls."""

    code = "DDL176"
    COUNTER = re.compile(
        r"(^|_)(global_step|step|steps|epoch|epochs|iter|it|iteration|start|resume_step)$"
    )
    KEYS = {"iter", "iteration", "global_step", "step", "steps", "epoch", "cur_iter", "it"}
    RESTORES = {"load_state", "load_checkpoint", "set_state_dict", "set_optimizer_state_dict"}

    def begin(self):
        if not any(OPTIMIZERS.match(name or "-") for name in self.m.calls):
            return False
        if self.m.words & {"Trainer", "LightningModule", "fabric"}:
            return False  # the library's checkpoints hold the optimizer
        trees = [self.m.tree, *(Project.tree(m) for m in self.m.project.imported)]
        for tree in trees:
            if any(
                isinstance(n, ast.Call) and last(dotted(n.func)) in self.RESTORES
                for n in ast.walk(tree)
            ):
                return False
            if any("opt" in r.lower() for r in SchedulerNotResumed.loaded_into(tree)):
                return False
            if any(  # DINO's `restart_from_checkpoint(path, ..., optimizer=optimizer)`: handed to a loader
                isinstance(n, ast.Call)
                and re.search(r"load|resume|restore|restart", last(dotted(n.func)), re.I)
                and (
                    any(
                        OPTIMIZER_NAME.search((k.arg or "").lower() or dotted(k.value).lower())
                        for k in n.keywords
                    )
                    or any(OPTIMIZER_NAME.search(dotted(a).lower()) for a in n.args if dotted(a))
                )
                for n in ast.walk(tree)
            ):
                return False
        return True

    def end(self):
        here = self.resume_in(self.m.tree)
        if here is not None:
            self.add(here, fixable=False)
            return
        instances = project_instances(self.m)
        for call in (n for n in self.m.nodes if isinstance(n, ast.Call)):
            for (module, name), _method in called_targets(self.m, call, instances):
                for f in Project.tree(module).body:
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name:
                        found = self.resume_in(f)
                        if found is not None:
                            self.m.add(
                                call,
                                self.code,
                                False,
                                reached_at(self.m.path, module, found.lineno),
                            )
                            return

    def resume_in(self, scope):
        """The first assignment of a step counter read back from a checkpoint (`start_iter = metadata["iter"] +
        1`, `global_step = int(os.path.basename(path).split("-")[1])`) in a scope that also loads a state dict."""
        nodes = list(ast.walk(scope))
        if not any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in ("load_state_dict", "load_sharded_checkpoint")
            for n in nodes
        ):
            return None
        for n in nodes:
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
                continue
            if not self.COUNTER.search(dotted(n.targets[0]) or "-"):
                continue
            keyed = any(
                isinstance(x, ast.Subscript)
                and isinstance(x.slice, ast.Constant)
                and x.slice.value in self.KEYS
                for x in ast.walk(n.value)
            )
            numbered = any(
                isinstance(x, ast.Call)
                and isinstance(x.func, ast.Attribute)
                and x.func.attr == "split"
                for x in ast.walk(n.value)
            ) and re.search(r"path|dir|checkpoint|ckpt", ast.unparse(n.value), re.I)
            if keyed or numbered:
                return n
        return None


class SummedLossLogged(Rule):
    """DDL169: `dist.reduce(tensor=v, dst=0, op=dist.ReduceOp.SUM)` over a loss (`for k, v in
    self.loss_dict.items()`), then `add_scalar(k, v.item())` on rank 0, with no division of it in the function
    (haozhi1817's pytorch-ddp engine, corpus 30): world_size times the mean. Not with op AVG, MAX or MIN, nor
    where anything in the function divides it."""

    code = "DDL169"

    def visit_Call(self, node):
        if last(dotted(node.func)) not in ("all_reduce", "reduce") or not dotted(
            node.func
        ).startswith(("dist.", "torch.distributed.")):
            return
        given = node.args[0] if node.args else keyword(node, "tensor")
        name = dotted(given) if given is not None else ""
        # all_reduce(tensor, op), reduce(tensor, dst, op); the functional collectives' reduceOp (dzorlu's
        # `funcol.all_reduce(loss, reduceOp=reduceOp)` with "AVG" in a name, corpus 30): an op that is no SUM
        # written out, or one a name holds, is not known to sum
        at = 1 if last(dotted(node.func)) == "all_reduce" else 2
        op = keyword(node, "op") or keyword(node, "reduceOp")
        op = op or (node.args[at] if len(node.args) > at else None)
        if not name or op is not None and not ast.unparse(op).endswith("SUM"):
            return
        scope = self.function_of(node) or self.m.tree
        loops = [p for p in self.m.parents_of(node) if isinstance(p, ast.For)]
        lossy = "loss" in name.lower() or any(
            name in bound_names(loop) and "loss" in ast.unparse(loop.iter).lower() for loop in loops
        )
        if not lossy:
            return
        nodes = list(scope_nodes(scope))
        divided = any(
            isinstance(n, ast.BinOp)
            and isinstance(n.op, (ast.Div, ast.FloorDiv))
            and name in {dotted(m) for m in ast.walk(n.left)}
            or isinstance(n, ast.AugAssign)
            and isinstance(n.op, (ast.Div, ast.FloorDiv))
            and dotted(n.target) == name
            for n in nodes
        )
        logged = any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) in LOGGERS
            and n.lineno >= node.lineno
            and name
            in {dotted(m) for a in [*n.args, *(k.value for k in n.keywords)] for m in ast.walk(a)}
            for n in nodes
        )
        if logged and not divided:
            self.add(node, fixable=False)


class DestroyInTheParent(Rule):
    """DDL168: `mp.spawn(main, ...)` then `cleanup()` (whose body calls destroy_process_group) or
    destroy_process_group itself, in the block that spawns: the parent never joined a group (pytorch-ddpm-ddp's
    `__main__`, corpus 30). Not where that block joins one itself first."""

    code = "DDL168"

    def begin(self):
        self.destroyers = {
            f.name
            for f in self.m.nodes
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(
                isinstance(n, ast.Call) and last(dotted(n.func)) == "destroy_process_group"
                for n in ast.walk(f)
            )
        }
        return bool(self.m.spawned)

    def visit_Call(self, node):
        if last(dotted(node.func)) not in LAUNCHERS:
            return
        statement = next(p for p in self.m.parents_of(node) if isinstance(p, ast.stmt))
        after = siblings(self.m, statement)[1]
        child = statement  # joined before, in this block or one around it
        while child in self.m.parent and not isinstance(child, (ast.FunctionDef, ast.Module)):
            if isinstance(child, ast.stmt) and joins(
                [s for s in siblings(self.m, child)[0] if not isinstance(s, DEFINITIONS)]
            ):
                return
            child = self.m.parent[child]
        for later in after:
            for n in ast.walk(later):
                if isinstance(n, ast.Call) and (
                    last(dotted(n.func)) == "destroy_process_group"
                    or dotted(n.func) in self.destroyers
                ):
                    self.add(n, fixable=False)
                    return


class LossOverWorldSize(Rule):
    """DDL167: the value a backward runs on is a loss divided by the world size (`loss = loss_dict["total"] /
    self.world_size`, then `scaler.scale(loss).backward()`: haozhi1817's pytorch-ddp engine, corpus 30), in a
    module whose model is wrapped in DDP or FSDP or prepared by Accelerate, which average the gradients
    themselves. Not a division for the log, nor where the module all-reduces gradients by hand."""

    code = "DDL167"

    def begin(self):
        if not (self.m.wraps_in_ddp or self.m.fsdp_wrapped or self.m.uses_accelerate):
            return False
        # `dist.all_reduce(param.grad)`: a hand-made average, which the division may be part of
        return not any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) == "all_reduce"
            and "grad" in ast.unparse(n.args[0] if n.args else n)
            for n in self.m.nodes
        )

    @staticmethod
    def divides(value):
        return (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Div)
            and bool(WORLD_SIZE.search(ast.unparse(value.right)))
        )

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "backward":
            value = func.value
            if isinstance(value, ast.Call) and last(dotted(value.func)) == "scale" and value.args:
                value = value.args[0]  # scaler.scale(loss).backward()
            elif node.args and dotted(func.value).endswith(("accelerator", "engine", "model")):
                value = node.args[0]  # accelerator.backward(loss)
        else:
            return
        if self.divides(value) or isinstance(value, ast.Name) and self.made_divided(value, node):
            self.add(node, fixable=False)

    def made_divided(self, name, call):
        """The last binding of `name` before the backward, in its function, divides by the world size."""
        scope = self.function_of(call) or self.m.tree
        inside = {id(n) for n in scope_nodes(scope)}  # not in a function defined inside
        bound = [
            n for n in assignments_to(scope, name.id) if id(n) in inside and n.lineno < call.lineno
        ]
        if not bound:
            return False
        last_bound = max(bound, key=lambda n: n.lineno)
        if isinstance(last_bound, ast.AugAssign):
            return isinstance(last_bound.op, ast.Div) and bool(
                WORLD_SIZE.search(ast.unparse(last_bound.value))
            )
        return self.divides(last_bound.value)


LOGGERS = {"print", "info", "log", "log_dict", "add_scalar", "add_scalars", "log_metrics", "write"}
# in the value given to a metric's entry: the accumulator (`total_val_loss`), whatever its prefix
METRIC_WORD = re.compile(r"loss|acc|metric|score|ppl|perplexity|psnr|err", re.I)
# `val_loss`, `test_acc`; behind one word (`epoch_val_loss`, `avg_val_metric`: PSED's, corpus 29); a key as
# trackers spell it (`"val/loss"`)
EVAL_METRIC = re.compile(
    r"^([a-z]+[_/.])?(val|valid|validation|test|eval)[_/.]?[a-z_/.]*"
    r"(loss|acc|accuracy|metric|score|f1|ppl|perplexity)",
    re.I,
)


# a test that picks a loader's split (`if split == "train":`, `if is_train`): a sampler under it is not every
# split's
SPLIT_TEST = re.compile(r"split|train|mode|phase|shuffle", re.I)


def iterated(loop):
    """What a loop iterates, through enumerate(), tqdm() and iter(): `val_loader` of `for i, b in
    enumerate(tqdm(val_loader))`."""
    source = loop.iter
    while (
        isinstance(source, ast.Call)
        and last(dotted(source.func)) in ("enumerate", "tqdm", "iter")
        and source.args
    ):
        source = source.args[0]
    return source


def mentions_any(node, names):
    """Whether an expression reads one of the dotted `names`."""
    return any(
        isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) in names for n in ast.walk(node)
    )


# a message that says it reports an evaluation: "test images", "Validation", "eval" (DDL124)
EVAL_TEXT = re.compile(r"\b(val|valid|validation|test|eval|evaluation)\b", re.I)


class UnreducedEvalLog(Rule):
    """DDL124: a validation metric (val_loss, test_acc, ...) printed or logged under a rank check, in a script
    whose evaluation data is sharded (a DistributedSampler or prepare() on an eval loader), where the value is
    never reduced: not passed to a collective, not made by a call that reduces or gathers, not returned by a
    function of this module that does (or by one defined elsewhere, which doctor cannot read)."""

    code = "DDL124"

    def begin(self):
        self.shown = []
        sharded = self.eval_sharded()  # binds main_loggers too
        self.by_name = sharded or self.m.called_eval_sharded
        self.piles = self.shard_piles() if self.m.distributed else []
        return self.m.distributed and (self.by_name or bool(self.piles))

    def sharded_eval_loaders(self):
        """The evaluation loaders this module shards: name -> the functions (None: the module) that bind it so.
        One whose sampler gets its epoch (`self.eval_ds.dataloader.sampler.set_epoch(epoch)`: dtmol's, corpus
        31), and one bound to a DataLoader given a DistributedSampler, to prepare() or setup_dataloaders(), or
        to what a helper returns that builds a DistributedSampler for every split (LESS's `get_dataloader(...,
        "val", args)`, corpus 31)."""
        found = {}
        for node in self.m.nodes:
            names = []
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "set_epoch"
            ):
                holder = dotted(node.func.value)
                for suffix in (".dataloader.sampler", ".batch_sampler.sampler", ".sampler"):
                    if holder.endswith(suffix):
                        names.append(holder[: -len(suffix)])
                        break
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if self.shards(node.value):
                    names += [
                        dotted(t)
                        for target in node.targets
                        for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                    ]
            for name in names:
                if name and names_eval_only(last(name)):
                    found.setdefault(name, set()).add(self.function_of(node))
        return found

    def loops_over_a_shard(self, loop, loaders):
        """Whether a loop iterates a sharded evaluation loader: an attribute so bound anywhere
        (`self.eval_ds`), a name bound so in the loop's own function (or at module level, where the function
        binds none), or a parameter named as a loader the module shards (LESS's `evaluate_one_epoch(net,
        val_dataloader, ...)`)."""
        return self.sharded_loader(iterated(loop), loop, loaders, by_binding=False)

    def sharded_loader(self, source, node, loaders, by_binding):
        """Whether `source`, where `node` is, is a sharded evaluation loader. `by_binding`: a name's last binding
        before `node` decides (AI-system-work-4's whole --eval_only loader bound after the sharded one), not
        any binding of its function."""
        name = dotted(source)
        if not name or not isinstance(source, (ast.Name, ast.Attribute)):
            return False
        if isinstance(source, ast.Attribute):
            return name in loaders
        function = self.function_of(node)
        if function is not None:
            parameters = [
                *function.args.posonlyargs,
                *function.args.args,
                *function.args.kwonlyargs,
            ]
            if name in {a.arg for a in parameters}:
                return name in loaders
        if by_binding:
            bound = [
                b
                for b in assignments_to(function or self.m.tree, name)
                if b.lineno < node.lineno and isinstance(b, ast.Assign)
            ]
            if bound:
                value = max(bound, key=lambda b: b.lineno).value
                return name in loaders and isinstance(value, ast.Call) and self.shards(value)
            return None in loaders.get(name, ()) or function is not None and name in loaders
        if function is None or not assignments_to(function, name):
            return None in loaders.get(name, ())
        return function in loaders.get(name, ())

    def shards(self, call):
        callee = dotted(call.func)
        if last(callee) in ("prepare", "setup_dataloaders"):
            return True
        if last(callee) == "DataLoader":
            given = keyword(call, "sampler")
            if isinstance(
                given, ast.Name
            ):  # bound in the same function (TextBrewer's two `eval_sampler`s)
                scope = self.function_of(call) or self.m.tree
                given = [
                    a.value for a in assignments_to(scope, given.id) if isinstance(a, ast.Assign)
                ]
            return any(
                isinstance(n, ast.Call) and last(dotted(n.func)) == "DistributedSampler"
                for value in (given if isinstance(given, list) else [given])
                if value is not None
                for n in ast.walk(value)
            )
        if callee in self.m.project.eval_sampler_helpers:
            return True
        helper = self.m.reductions.defined.get(last(callee))
        return helper is not None and any(
            isinstance(n, ast.Call)
            and last(dotted(n.func)) == "DistributedSampler"
            and not any(
                isinstance(p, (ast.If, ast.IfExp)) and SPLIT_TEST.search(ast.unparse(p.test))
                for p in self.m.parents_of(n)
            )
            for n in ast.walk(helper)
        )

    def shard_piles(self):
        """(scope, anchor, names, made) of each loop over a sharded evaluation loader whose per-batch values pile
        up in Python (`ious.append(iou)`, `iou_cum += iou`), with the bindings made from the piles after the loop
        (`miou = np.mean(ious)`, `msg = f"... {miou}"`); none in a function that reduces or gathers anything.
        And of each call of a function of the module that returns such a pile's value over the loader it is
        handed, given a sharded one (AI-system-work-4's `bleu_score = evaluate(model, val_loader, ...)`, corpus
        37): the anchor is the call, the name its result."""
        loaders = self.sharded_eval_loaders()
        piles, returning, self.reducing = [], {}, {}
        for loop in self.m.nodes:
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            function = self.function_of(loop)
            if function is None or self.reduces_in(function):
                continue
            over = self.loops_over_a_shard(loop, loaders)
            parameter = self.loops_over_a_parameter(loop, function)
            if not over and parameter is None:
                continue
            names = self.piled_up(loop, function)
            if not names:
                continue
            made = self.made_from(function, loop.end_lineno, names)
            if over:
                piles.append((function, loop, names, made))
            elif any(
                isinstance(r, ast.Return)
                and r.value is not None
                and r.lineno > loop.end_lineno
                and self.piled_in(r, function, names, made)
                for r in ast.walk(function)
            ):
                returning[function.name] = parameter
        for call in self.m.nodes:
            if not isinstance(call, ast.Call) or last(dotted(call.func)) not in returning:
                continue
            position, name = returning[last(dotted(call.func))]
            if dotted(call.func).startswith("self."):
                position -= 1  # a method's self
            given = call.args[position] if 0 <= position < len(call.args) else keyword(call, name)
            parent = self.m.parent.get(call)
            scope = self.function_of(call)
            if (
                given is None
                or not isinstance(parent, ast.Assign)
                or len(parent.targets) != 1
                or not isinstance(parent.targets[0], ast.Name)
                or not self.hands_a_shard(given, call, loaders)
                or scope is not None
                and self.reduces_in(scope)
            ):
                continue
            result = {parent.targets[0].id}
            if result & self.m.reductions.reduced:
                continue
            # the result counts where its last binding is this call's (not the same name bound again by a
            # later call over a loader that is whole: AI-system-work-4's --eval_only branch)
            made = self.made_from(scope or self.m.tree, call.lineno, result) | {parent}
            piles.append((scope, call, set(), made))
        return piles

    def reduces_in(self, function):
        """Whether a function reduces, gathers or syncs anything (read once a function: `self.reducing`)."""
        if function in self.reducing:
            return self.reducing[function]
        self.reducing[function] = any(
            isinstance(n, ast.Call)
            and (
                reduces(n)
                or "sync" in last(dotted(n.func)).lower()
                or dotted(n.func) in self.m.project.collective_helpers
            )
            for n in ast.walk(function)
        )
        return self.reducing[function]

    @staticmethod
    def loops_over_a_parameter(loop, function):
        """(position, name) of the function's parameter the loop iterates (`for batch in tqdm(dataloader)`)."""
        source = iterated(loop)
        parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if isinstance(source, ast.Name) and source.id in parameters:
            return parameters.index(source.id), source.id
        return None

    def hands_a_shard(self, given, call, loaders):
        """Whether a call's argument is a sharded evaluation loader where the call is."""
        return self.sharded_loader(given, call, loaders, by_binding=True)

    @staticmethod
    def piled_up(loop, function):
        """The names a loop's body piles values into (`.append`, `.extend`, `+=` of a non-constant), bound
        before the loop in its function."""
        started = {
            dotted(t)
            for n in ast.walk(function)
            if isinstance(n, ast.Assign) and n.lineno < loop.lineno
            for target in n.targets
            for t in (target.elts if isinstance(target, ast.Tuple) else [target])
        }
        names = set()
        for n in (n for s in loop.body for n in ast.walk(s)):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("append", "extend")
            ):
                names.add(dotted(n.func.value))
            if (
                isinstance(n, ast.AugAssign)
                and isinstance(n.op, ast.Add)
                and not isinstance(n.value, ast.Constant)
            ):
                names.add(dotted(n.target))
        return {n for n in names if n and n in started}

    @staticmethod
    def made_from(scope, line, names):
        """The bindings after `line` made from `names`, in the order of the source: `msg = f"{miou}"` counts
        until `msg` is bound to something else (dtmol's second evaluation reuses `msg`)."""
        made, now = set(), {}
        after = sorted(
            (
                n
                for n in ast.walk(scope)
                if isinstance(n, (ast.Assign, ast.AugAssign)) and n.lineno > line
            ),
            key=lambda n: n.lineno,
        )
        for n in after:
            piled = mentions_any(n.value, names | {k for k, v in now.items() if v})
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(n, ast.AugAssign):  # `msg += ...` keeps what msg was
                        piled = piled or now.get(dotted(t), False)
                    now[dotted(t)] = piled
            if piled:
                made.add(n)
        return made

    def eval_sharded(self):
        self.main_loggers = {  # print0(...): a function of this module that logs on one rank only
            f.name
            for f in self.m.nodes
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(
                isinstance(n, ast.Call)
                and last(dotted(n.func)) in LOGGERS
                and self.rank_check(n) is not None
                for n in ast.walk(f)
            )
        }
        for node in self.m.nodes:
            if isinstance(node, ast.Call) and self.takes_the_rank(node):
                statement = next(
                    p for p in [node, *self.m.parents_of(node)] if isinstance(p, ast.stmt)
                )
                if isinstance(statement, ast.Assign) and EVAL_WORDS.search(
                    " ".join(dotted(t) for t in statement.targets)
                ):
                    return True  # val_loader = ShardedLoader(files, B, T, ddp_rank, ddp_world_size)
            if isinstance(node, ast.Call) and last(dotted(node.func)) in (
                "DistributedSampler",
                "prepare",
                "setup_dataloaders",  # Lightning Fabric's, which shards with a DistributedSampler
            ):
                statement = next(
                    p for p in [node, *self.m.parents_of(node)] if isinstance(p, ast.stmt)
                )
                if EVAL_WORDS.search(ast.unparse(statement)):
                    return True
        # or in a project function this module calls (U2PL's get_loader -> build_voc_semi_loader("val"),
        # DDL127's): the sampler is in datasets/, the metric logged here
        helpers = self.m.project.eval_sampler_helpers
        return any(dotted(c.func) in helpers for calls in self.m.calls.values() for c in calls)

    SILENCES = re.compile(r"setup_for_distributed\(|__builtins?__\.print\s*=|builtins\.print\s*=")

    @functools.cached_property
    def print_silenced(self):
        """The script makes print() the main process's alone: DeiT's and MAE's `setup_for_distributed(rank ==
        0)`, which replaces builtins.print, called here or in a helper of the project this module calls
        (`misc.init_distributed_mode(args)`; The-AI-Summer's pytorch-ddp, corpus 33)."""
        if self.SILENCES.search(self.m.text):
            return True
        defined = self.m.project.defined
        return any(
            name in defined and self.SILENCES.search(Project.source_of(*defined[name]))
            for name in {dotted(n.func) for n in self.m.nodes if isinstance(n, ast.Call)}
        )

    @staticmethod
    def takes_the_rank(call):
        """A loader or dataset of the script's own given the rank and the world size: it shards."""
        passed = [dotted(a) for a in [*call.args, *(k.value for k in call.keywords)]]
        words = [last(p).lower() for p in passed if p]
        return (
            last(dotted(call.func)) not in ("to", "cuda", "device", "set_device", "DDP")
            and any("rank" in w or w == "process_index" for w in words)
            and any(WORLD_SIZE.search(w) or w == "num_processes" for w in words)
        )

    def main_only(self, node):
        """A call that runs on the main process alone: accelerate's and Lightning Fabric's print and log, a
        logging function of this module that checks the rank, print where the script silences the others."""
        callee = last(dotted(node.func))
        return (
            dotted(node.func).startswith(
                ("accelerator.", "self.accelerator.", "fabric.", "self.fabric.")
            )
            or callee in self.main_loggers
            or callee == "print"
            and self.print_silenced
            or self.accelerate_logger(node)
        )

    def accelerate_logger(self, node):
        """`logger.info(...)` on a logger accelerate's get_logger made, which logs on the main process unless
        told `main_process_only=False` (Accelerator-Simple-Template's validation accuracy, corpus 42)."""
        only = keyword(node, "main_process_only")
        if not isinstance(node.func, ast.Attribute) or only is not None and not is_true(only):
            return False
        made = {
            dotted(t)
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and dotted(n.value.func) in ("accelerate.logging.get_logger", "accelerate.get_logger")
            for t in n.targets
        }
        return dotted(node.func.value) in made

    def visit_Call(self, node):
        callee = last(dotted(node.func))
        if not self.by_name:
            return
        if (callee in LOGGERS or callee in self.main_loggers) and (
            self.main_only(node) or self.m.guarded(node)
        ):
            # `writer.add_scalar("valid_loss", loss_per_word, step)`: the tag names the value a metric
            # (Retro3D's, corpus 29)
            tag = node.args[0] if node.args else None
            tagged = isinstance(tag, ast.Constant) and isinstance(tag.value, str)
            self.report(
                node,
                [*node.args, *(k.value for k in node.keywords)],
                tagged and bool(EVAL_METRIC.search(tag.value)),
            )

    def report(self, node, shown, entry=False):
        metrics = self.metrics_in(shown, entry)
        unreduced = {n for n in metrics if self.m.reductions.assigned_unreduced(n)}
        if unreduced:
            self.shown.append((node, unreduced))

    def end(self):
        for function, loop, names, made in self.piles:  # one finding an evaluation loop
            function = function or self.m.tree
            shown = [
                call
                for call in ast.walk(function)
                if isinstance(call, ast.Call)
                and call.lineno > loop.end_lineno
                and self.logs(call)
                and "rank" not in ast.unparse(call).lower()  # labelled per rank
                and (self.main_only(call) or self.m.guarded(call))
                and self.piled_in(call, function, names, made)
            ]
            shown = [c for c in shown if all(c is not node for node, _ in self.shown)]
            if shown:
                first = min(shown, key=lambda n: (n.lineno, n.col_offset))
                self.shown.append((first, {f"{loop.lineno}:pile"}))
        # once a metric: one reduction of its sums (tango's six lines)
        self.add_first_of_each(self.shown)

    @staticmethod
    def piled_in(call, function, names, made):
        """The names a call shows that are a pile itself, or whose last binding before the call is made
        from one."""
        shown = set()
        for n in ast.walk(call):
            if not isinstance(n, (ast.Name, ast.Attribute)):
                continue
            name = dotted(n)
            bindings = [b for b in assignments_to(function, name) if b.lineno < call.lineno]
            if name in names or bindings and max(bindings, key=lambda b: b.lineno) in made:
                shown.add(name)
        return shown

    def logs(self, call):
        callee = last(dotted(call.func))
        return callee in LOGGERS or callee in self.main_loggers or callee.startswith("log_")

    def visit_If(self, node):
        """`if valid_loss < best_loss:` under a rank check: rank 0 keeps its own shard's best (AcademiCodec's
        SoundStream, corpus 15)."""
        if not self.by_name:
            return
        if (
            isinstance(node.test, ast.Compare)
            and isinstance(node.test.ops[0], (ast.Lt, ast.Gt, ast.LtE, ast.GtE))
            and self.m.guarded(node)
        ):
            self.report(node, [node.test])

    def metrics_in(self, shown, entry=False):
        """The names of the validation metrics a logged value is made of: `val_loss` itself, the accumulator
        behind a `result["val_loss"] = total_val_loss / n` entry (tango's, corpus 15), and what a message
        string formatted from them holds (`message = "...".format(valid_loss / n)`: AcademiCodec's)."""
        found, seen = set(), set()
        todo = [(expression, entry) for expression in shown]
        while todo:
            expression, entry = todo.pop()
            for n in ast.walk(expression):
                if isinstance(n, ast.JoinedStr) and not entry:
                    # f"Accuracy of the network on the 10000 test images: {acc} %": the text names what
                    # the values are (The-AI-Summer's pytorch-ddp, corpus 33)
                    text = "".join(
                        v.value
                        for v in n.values
                        if isinstance(v, ast.Constant) and isinstance(v.value, str)
                    )
                    if EVAL_TEXT.search(text) and METRIC_WORD.search(text):
                        todo += [
                            (v.value, True) for v in n.values if isinstance(v, ast.FormattedValue)
                        ]
                if isinstance(n, ast.Dict):  # `wandb.log({"val/loss": total / n})`
                    todo += [
                        (v, True)
                        for k, v in zip(n.keys, n.values)
                        if isinstance(k, ast.Constant)
                        and isinstance(k.value, str)
                        and EVAL_METRIC.search(k.value)
                    ]
                if isinstance(n, (ast.Name, ast.Attribute)) and (
                    EVAL_METRIC.search(last(dotted(n)))
                    or entry
                    and METRIC_WORD.search(last(dotted(n)))
                ):
                    found.add(dotted(n))
                key = n.slice if isinstance(n, ast.Subscript) else None
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    if (dotted(n.value), key.value) not in seen:
                        seen.add((dotted(n.value), key.value))
                        todo += [
                            (v, True) for k, v in self.entries(dotted(n.value)) if k == key.value
                        ]
                if isinstance(n, ast.Name) and n.id not in seen:
                    seen.add(n.id)
                    for value in self.m.reductions.results.get(n.id, []):
                        if isinstance(value, ast.JoinedStr) or (
                            isinstance(value, ast.Call)
                            and isinstance(value.func, ast.Attribute)
                            and value.func.attr == "format"
                        ):
                            todo.append((value, entry))
                    todo += [(v, True) for k, v in self.entries(n.id)]
        return found

    def entries(self, holder):
        """(key, value) of every `holder["val_loss"] = value` of the module whose key names a validation
        metric."""
        return [
            (target.slice.value, n.value)
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            for target in n.targets
            if isinstance(target, ast.Subscript)
            and dotted(target.value) == holder
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
            and EVAL_METRIC.search(target.slice.value)
        ]


# What a DistributedDataParallel or DataParallel object answers itself (torch 2.13's dir() of both, public
# names): nn.Module's API and the wrapper's own. Any other attribute belongs to the model inside, and the
# wrapper does not forward it (FSDP1 and DeepSpeed's engine do: they are not in WRAPPED_BY).
WRAPPER_API = frozenset(
    "T_destination add_module apply batched_grad_copy bfloat16 broadcast_bucket_size broadcast_buffers "
    "bucket_bytes_cap bucket_bytes_cap_default bucket_bytes_cap_list buffers call_super_init children compile "
    "cpu cuda device device_ids device_type dim double dump_patches eval extra_repr find_unused_parameters "
    "float forward forward_sync_buffers gather get_buffer get_extra_state get_parameter get_submodule "
    "gradient_as_bucket_view half ipu is_multi_device_module join join_device join_hook join_process_group "
    "load_state_dict logger mixed_precision module modules modules_buffers mtia named_buffers named_children "
    "named_module_buffers named_modules named_parameters no_sync output_device parallel_apply parameters "
    "parameters_to_ignore process_group reducer register_backward_hook register_buffer register_comm_hook "
    "register_forward_hook register_forward_pre_hook register_full_backward_hook "
    "register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook "
    "register_module register_parameter register_state_dict_post_hook register_state_dict_pre_hook replicate "
    "require_backward_grad_sync require_forward_param_sync requires_grad_ scatter set_extra_state "
    "set_submodule share_memory skip_all_reduce_unused_params src_device_obj state_dict static_graph to "
    "to_empty to_kwargs train training type use_side_stream_for_tensor_copies will_sync_module_buffers xpu "
    "zero_grad".split()
)
WRAPPED_BY = {"DistributedDataParallel", "DDP", "DataParallel"}
# nn.Module's methods that return the module itself
SELF_RETURNING = {
    "to",
    "cuda",
    "cpu",
    "xpu",
    "float",
    "half",
    "double",
    "bfloat16",
    "train",
    "eval",
    "requires_grad_",
    "type",
    "to_empty",
}


def wraps(value):
    """Whether an assigned value is a DDP / DataParallel wrap (`DDP(m)`, `DDP(m) if ddp else m`)."""
    if isinstance(value, ast.IfExp):
        return wraps(value.body) or wraps(value.orelse)
    return isinstance(value, ast.Call) and last(dotted(value.func)) in WRAPPED_BY


class WrapperAttribute(Rule):
    """DDL125: `model.generate(...)`, `model.config`, `model.encoder` where `model` was last bound to a DDP or
    DataParallel wrap (or to a model `accelerator.prepare` returned: a DDP under a multi-GPU launch), in the
    same function or module, before the access; or `self.model.X` where a method of the class binds
    `self.model` to a wrap. An access under a test of the wrapper (`hasattr(model, "module")`,
    `isinstance(model, DDP)`) is the script choosing, and is left alone."""

    code = "DDL125"
    # under these, prepare() returns an engine or a module that forwards attributes (or the model itself)
    FORWARDING = re.compile(r"deepspeed|fsdp|fully_shard|megatron|parallelism_config", re.I)

    def begin(self):
        self.bindings = {}  # (scope, name) -> [(position, wrapped, node)]
        # `model.class_weights = w` on the wrapper itself, read back from it (yolor, corpus 17, seen)
        self.stored = {
            dotted(t)
            for n in self.m.nodes
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Attribute)
        }
        self.self_wraps = {}  # class -> {"self.model": [(method, position)] of its wraps}
        self.own_classes = {c.name for c in self.m.nodes if isinstance(c, ast.ClassDef)}
        self.prepare_wraps = (
            not any(self.FORWARDING.search(w) for w in self.m.words | set(self.m.calls))
            and not self.launched_on_deepspeed()
        )
        for node in self.m.nodes:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            pairs = []
            for target in targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Call):
                    if (
                        last(dotted(node.value.func)) == "prepare"
                    ):  # model, opt = accelerator.prepare(...)
                        args = [dotted(a) for a in node.value.args]
                        for t, a in zip(target.elts, args):
                            # a model by its name: `model`, `transformer`, `unet`, `text_encoder` (an SD3
                            # LoRA trainer's `transformer.save_pretrained` on the prepared DDP, corpus 30)
                            model = (
                                bool(PREPARED_MODEL.search(a))
                                and not PREPARED_OTHER.search(a)
                                and not a.lower().endswith("s")
                            )
                            pairs.append((t, model and self.prepare_wraps))
                    else:
                        pairs.extend((t, False) for t in target.elts)
                elif isinstance(target, ast.Tuple):
                    pairs.extend((t, False) for t in target.elts)
                else:
                    value = node.value
                    prepared = (
                        isinstance(value, ast.Call)
                        and last(dotted(value.func)) == "prepare"
                        and len(value.args) == 1
                        and MODEL_NAMES.search(dotted(value.args[0]).rsplit(".", 1)[-1] or "-")
                    )
                    own = (  # the module's own class named DDP (beyond-nanogpt's hand-written one, corpus 33)
                        isinstance(value, ast.Call) and last(dotted(value.func)) in self.own_classes
                    )
                    if (
                        isinstance(value, ast.Call)
                        and isinstance(value.func, ast.Attribute)
                        and value.func.attr in SELF_RETURNING
                        and dotted(value.func.value) == dotted(target)
                    ):
                        # `model = model.to(device)` returns the module itself: still the wrapper where it
                        # was one (the satellite ViT's resume branch after its DDP wrap, corpus 39)
                        pairs.append((target, None))
                        continue
                    pairs.append(
                        (target, wraps(value) and not own or bool(prepared) and self.prepare_wraps)
                    )
            for target, wrapped in pairs:
                name = dotted(target)
                if not name:
                    continue
                if name.startswith("self.") and name.count(".") == 1:
                    cls = next(
                        (p for p in self.m.parents_of(node) if isinstance(p, ast.ClassDef)), None
                    )
                    if cls is not None and wrapped:
                        wrap = (self.function_of(node), (node.lineno, node.col_offset))
                        self.self_wraps.setdefault(cls, {}).setdefault(name, []).append(wrap)
                    continue
                scope = self.function_of(node)
                position = (node.lineno, node.col_offset)
                self.bindings.setdefault((scope, name), []).append((position, wrapped, node))
        # a `.to(device)` holds what the binding before it held that can reach it: not one in another
        # branch of an `if` (BrushNet's LoRA script prepares the unet under --use_peft only, corpus 29, seen)
        for entries in self.bindings.values():
            entries.sort(key=lambda e: e[0])
            for i, (position, wrapped, node) in enumerate(entries):
                if wrapped is None:
                    held = [w for _, w, b in entries[:i] if not self.exclusive(b, node)]
                    entries[i] = (position, bool(held and held[-1]), node)
        return any(w for entries in self.bindings.values() for _, w, _ in entries) or bool(
            self.self_wraps
        )

    def visit_Attribute(self, node):
        if (
            not isinstance(node.ctx, ast.Load)
            or node.attr.startswith("_")
            or node.attr in WRAPPER_API
        ):
            return
        name = dotted(node.value)
        scope = self.function_of(node)
        if not name or getattr(node, "from_import", False):
            return  # `colbert.training.utils.f` read from an import, not the local `colbert` model
        if self.tested(node, name) or self.in_test(node) or f"{name}.{node.attr}" in self.stored:
            return
        if name.startswith("self.") and name.count(".") == 1:
            if self.self_wrapped(name, scope, node):
                self.add(node, fixable=False)
            return
        if self.wrapped_at(name, scope, node, callers=True):
            self.add(node, fixable=False)

    def launched_on_deepspeed(self):
        """Whether every command of the repository that runs this file passes `accelerate launch` a config
        whose distributed_type is DEEPSPEED: prepare() then returns DeepSpeed's engine, which forwards
        attributes (stunning-octo-parakeet's `--config_file config/accelerate_config/deepspeed`, a file with no
        suffix: seven false, corpus 40)."""
        if self.m.root is None or not Path(self.m.path).is_file():
            return False
        named = Project.naming(self.m.path)
        configs = [
            re.search(r"--config_file[= ]+(\S+)", c)
            for c in Project.commands(self.m.root)
            if named.search(c)
        ]
        if not configs or not all(configs):
            return False
        deepspeed = re.compile(r"^\s*distributed_type\s*:\s*['\"]?DEEPSPEED\b", re.M)
        for found in configs:
            config = self.m.root / found.group(1).strip("'\"")
            if not (config.is_file() and deepspeed.search(Project.text(config))):
                return False
        return True

    def self_wrapped(self, name, scope, node):
        """Whether `self.model`, read at `node` in `scope`, holds the class's wrap there: a wrap in __init__ is
        there for every other method; one in another method (timm's prepare_distributed) only for what follows
        it there: the order of calls is the caller's."""
        cls = next((p for p in self.m.parents_of(node) if isinstance(p, ast.ClassDef)), None)
        position = (node.lineno, node.col_offset)
        for method, at in self.self_wraps.get(cls, {}).get(name, []):
            constructor = method is not None and method.name == "__init__" and scope is not method
            if constructor and self.only_before(scope, method, at):
                continue  # a method __init__ alone calls, before its wrap (OpenTransformer's load_model)
            if constructor or scope is method and at < position:
                return True
        return False

    def only_before(self, scope, method, at):
        """Whether every call of `scope` in the module is in `method`, before `at`."""
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        calls = self.m.calls.get(scope.name, [])
        return bool(calls) and all(
            self.function_of(c) is method and (c.lineno, c.col_offset) < at for c in calls
        )

    def visit_Call(self, node):
        """`hasattr(model, "init_params")` or `getattr(model, "no_weight_decay", None)` on the wrapper: False, or
        the default, whatever the model inside has, so the branch the script meant for the model never runs
        (X-VLM's optimizer groups, corpus 26, seen). Not a test of the wrapper itself (`hasattr(model,
        "module")`)."""
        if dotted(node.func) in self.m.project.defined:
            self.handed_to_a_helper(node)
            return
        if dotted(node.func) not in ("hasattr", "getattr") or len(node.args) < 2:
            return
        if dotted(node.func) == "getattr" and len(node.args) < 3:
            return  # getattr without a default raises: the access is the wrapper-attribute case itself
        attr = node.args[1]
        if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
            return
        if attr.value.startswith("_") or attr.value in WRAPPER_API:
            return
        name = dotted(node.args[0])
        if not name or name.startswith("self.") or self.in_test(node):
            return
        if f"{name}.{attr.value}" in self.stored:
            return
        if self.wrapped_at(name, self.function_of(node), node):
            self.add(node, fixable=False)

    def handed_to_a_helper(self, call):
        """A wrapped model handed to a function of another module of the project that reads an attribute of it
        the wrapper lacks, with no test of the wrapper there: SASRec's `evaluate(model, dataset, args)`, whose
        utils.py calls `model.predict(...)` (corpus 42). Reported at the call, with the helper's line."""
        module, name = self.m.project.defined[dotted(call.func)]
        function = next(
            (
                f
                for f in Project.tree(module).body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name
            ),
            None,
        )
        if function is None or self.in_test(call):
            return
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        for index, given in enumerate(call.args[: len(params)]):
            passed = dotted(given)
            if not passed or not self.wrapped_at(passed, self.function_of(call), call):
                continue
            param = params[index]
            text = ast.unparse(function)
            if re.search(rf"\b(hasattr|isinstance|getattr)\({param}\b|\b{param}\.module\b", text):
                continue  # the helper tests or unwraps the wrapper itself
            # on every path through the helper: not under an `if` of its own (CAE's engine reads
            # `model.backward` only where no loss scaler was given: DeepSpeed's engine, not the DDP run; corpus 29)
            branched = {
                id(n) for i in ast.walk(function) if isinstance(i, ast.If) for n in ast.walk(i)
            }
            reads = [
                n
                for n in ast.walk(function)
                if isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Load)
                and dotted(n.value) == param
                and not n.attr.startswith("_")
                and n.attr not in WRAPPER_API
                and id(n) not in branched
            ]
            if reads:
                self.m.add(call, self.code, False, reached_at(self.m.path, module, reads[0].lineno))
                return

    def wrapped_at(self, name, scope, node, callers=False):
        """Whether `name`, read at `node` in `scope`, was last bound to a wrap there (or in a scope around it).
        A parameter is what the callers pass: with `callers`, wrapped where a call of this module hands it a
        wrapped name (peft's `evaluation_loop(model, ...)` given the prepared model), one call deep."""
        position = (node.lineno, node.col_offset)
        while True:  # the innermost function (or the module) that binds the name
            entries = self.bindings.get((scope, name))
            if entries is not None or scope is None:
                break
            params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
            if name in params or name in [a.arg for a in scope.args.kwonlyargs]:
                return callers and self.handed_a_wrap(scope, name, params)
            scope = self.function_of(scope)
        before = [
            (wrapped, binding)
            for at, wrapped, binding in sorted(entries or [], key=lambda e: e[0])
            if at < position and not self.apart(binding, node)
        ]
        if not before:
            return False
        # the last binding, or one in another branch of its `if` (`if args.no_fsdp: model = DDP(model)`
        # `else: model = FSDP(model)`: under --no_fsdp the name holds the DDP wrapper)
        wrapped, last_binding = before[-1]
        return wrapped or any(w and self.apart(b, last_binding) for w, b in before[:-1])

    def handed_a_wrap(self, function, name, params):
        """Whether a call of `function` in this module passes a wrapped name as its parameter `name`."""
        index = params.index(name) if name in params else None
        for call in self.m.calls.get(function.name, []):
            if dotted(call.func) != function.name:
                continue  # `self.f(...)`, `other.f(...)`: not surely this function
            given = [k.value for k in call.keywords if k.arg == name]
            if index is not None and index < len(call.args):
                given.append(call.args[index])
            for value in given:
                passed = dotted(value)
                if passed and self.wrapped_at(passed, self.function_of(call), call):
                    return True
        return False

    def branches(self, node):
        """The `if`s around `node`, each with True where `node` sits in its body, False in its else."""
        sides, child = {}, node
        for parent in self.m.parents_of(node):
            if isinstance(parent, ast.If):
                sides[parent] = child in parent.body
            child = parent
        return sides

    def apart(self, binding, node):
        """Whether a binding and an access sit in different branches of one `if` (a DDP wrap under
        `if args.distributed:`, a DataParallel use under its `elif`): the binding never reaches the access."""
        ours = self.branches(node)
        return any(ours.get(p, side) != side for p, side in self.branches(binding).items())

    def exclusive(self, binding, node):
        """Whether no run reaches both: they sit in different branches of one `if`, or of two `if`s that test
        the same thing (`if args.use_peft:` around the prepare, a later `if args.use_peft: ... else:` around the
        read)."""
        theirs = {ast.unparse(p.test): side for p, side in self.branches(binding).items()}
        return self.apart(binding, node) or any(
            theirs.get(ast.unparse(p.test), side) != side for p, side in self.branches(node).items()
        )

    def other_branch(self, branching, node):
        """The source of the branch of an if (or a conditional expression) that does not hold `node`."""
        if isinstance(branching, ast.IfExp):
            body, orelse = [branching.body], [branching.orelse]
        else:
            body, orelse = branching.body, branching.orelse
        inside = any(node is n for s in body for n in ast.walk(s))
        return "\n".join(ast.unparse(s) for s in (orelse if inside else body))

    def tested(self, node, name):
        """Under a test of the wrapper: `if hasattr(model, "module")`, `... if isinstance(model, DDP) else`,
        `hasattr(model, "embeds") and model.embeds.patch_size`."""
        parent = self.m.parent.get(node)
        while parent is not None:
            if isinstance(parent, ast.BoolOp) and f"hasattr({name}," in ast.unparse(parent):
                return True
            parent = self.m.parent.get(parent)
        for parent in self.m.parents_of(node):
            test = (
                getattr(parent, "test", None) if isinstance(parent, (ast.If, ast.IfExp)) else None
            )
            if test is not None:
                text = ast.unparse(test)
                if name in text and re.search(
                    r"module|isinstance|hasattr|Distributed|DDP|DataParallel|is_parallel", text
                ):
                    return True
                # a flag (`args.distributed`), not torch.distributed's own calls (`get_rank() == 0`)
                flags = text.replace("torch.distributed.", "")
                if re.search(r"distributed|parallel_mode|world_size|num_processes", flags, re.I):
                    return (
                        True  # parler-tts' `if training_args.parallel_mode.value != "distributed":`
                    )
                if f"{name}.module." in self.other_branch(parent, node):
                    return (
                        True  # gns: `sim.module.f(x) if isinstance(device_id, int) else sim.f(x)`
                    )
            if isinstance(parent, ast.ExceptHandler):
                try_ = self.m.parent.get(parent)
                if isinstance(try_, ast.Try) and f"{name}.module." in ast.unparse(try_.body[0]):
                    return True  # VISTA's `try: model.module.clear_cache()` / `except: model.clear_cache()`
        return False


# what makes a module hold buffers, which a DDP forward broadcasts (DDL157)
BUFFER_WORDS = re.compile(
    r"register_buffer|BatchNorm|batch_norm|InstanceNorm\w*\([^)]*track_running_stats|running_mean"
    r"|torchvision\.models|timm\.create_model"
    # timm's create_model imported by name; not a create_model of the project's own (LBNL_dt_scaling's
    # FNO and ViT, whose InstanceNorm2d keeps no running statistics: corpus 35)
    r"|from\s+timm[\w.]*\s+import[^\n]*\bcreate_model\b"
)


def calls_parameter(function, index, name, functions, depth=2):
    """Whether `function` calls its parameter (`model(x)`, `model.forward(x)`), given at position `index` or
    by `name`, itself or through the functions of its module it hands it to (`evaluate(model)` calling
    `run_batch(model, batch)`), `depth` calls deep."""
    params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if index is not None and index < len(params):
        param = params[index]
    elif name in params or name in [a.arg for a in function.args.kwonlyargs]:
        param = name
    else:
        return False
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        if dotted(node.func) in (param, f"{param}.forward"):
            return True
        callee = functions.get(dotted(node.func))
        if depth and callee is not None and callee is not function:
            for i, a in enumerate(node.args):
                if dotted(a) == param and calls_parameter(callee, i, None, functions, depth - 1):
                    return True
            for k in node.keywords:
                if dotted(k.value) == param and calls_parameter(
                    callee, None, k.arg, functions, depth - 1
                ):
                    return True
    return False


class ForwardOnOneRank(WrapperAttribute):
    """DDL157: the DDP wrapper called (`model(x)`: its forward) where only some ranks run it, the evaluation of
    `if rank == 0: validate(model, loader)`, here or in a function of another module of the project it hands
    the wrapper to. Its forward broadcasts rank 0's buffers (broadcast_buffers=True, the default) from the last
    training step on, a collective the other ranks never join: measured on gloo, a model with one BatchNorm1d
    evaluated on rank 0 alone between training steps aborted both processes (gloo::EnforceNotMet, SIGABRT),
    through `model.module` or with broadcast_buffers=False it trained on. Where no module of the repository
    makes buffers (BUFFER_WORDS: nanoGPT's flash attention, a plain MLP), the forward is no collective and the
    others only wait, so it stays quiet; and where a wrap sets broadcast_buffers, or the model is prepared under
    DeepSpeed or FSDP."""

    code = "DDL157"

    def begin(self):
        if any(
            last(dotted(n.func)) in ("DistributedDataParallel", "DDP")
            and any(k.arg == "broadcast_buffers" for k in n.keywords)
            for n in self.m.nodes
            if isinstance(n, ast.Call)
        ):
            return False  # set by hand: buffers synced elsewhere (or off), the wrap's forward is the script's
        if not super().begin() or not self.holds_buffers():
            return False  # no buffers: the forward is no collective (the others only wait)
        self.reported = set()
        # the wraps this rule is about: DDP's (DataParallel runs in one process) and accelerate's prepare
        self.bindings = {
            key: [
                (at, wrapped and not self.data_parallel(node), node)
                for at, wrapped, node in entries
            ]
            for key, entries in self.bindings.items()
        }
        self.functions = {
            f.name: f
            for f in self.m.nodes
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and function_of(self.m, f) is None
        }
        return True

    @staticmethod
    def data_parallel(node):
        value = node.value
        while isinstance(value, ast.IfExp):
            value = value.body if wraps(value.body) else value.orelse
        return isinstance(value, ast.Call) and last(dotted(value.func)) == "DataParallel"

    def visit_Attribute(self, node):
        return  # DDL125's; this rule reads calls

    def one_rank(self, call):
        return (
            self.m.guarded(call, per_node_too=True)
            and not self.m.never_distributed(call)
            and not self.split_by_rank(call)
            and not self.both_sides(call)
        )

    def both_sides(self, node, seen=()):
        """Whether a function around `node` is called on both sides of one rank check (glue-factory's
        `if rank == 0: with capture_outputs(...): training(...)` `else: training(...)`): every rank runs it."""
        child = node
        for function in self.m.parents_of(node):
            if (
                isinstance(function, ast.If)
                and child is not function.test
                and self.m.picks_ranks(function.test)
            ):
                return False  # a rank check of its own picks the ranks, wherever the function runs
            child = function
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if function.name in seen:
                return False
            callers = [c for c in self.m.calls.get(function.name, []) if not is_inside(c, function)]
            sides = {}
            for c in callers:
                check = self.rank_check(c)
                if check is not None:
                    sides.setdefault(check[0], set()).add(check[1])
            if any(len(v) == 2 for v in sides.values()):
                return True
            return any(self.both_sides(c, (*seen, function.name)) for c in callers)
        return False

    def split_by_rank(self, call):
        """After `if i % world_size != rank: continue`: every rank runs its share of the items (build-nanogpt's
        HellaSwag eval, corpus 10), not one rank alone."""
        for parent in [call, *self.m.parents_of(call)]:
            if isinstance(parent, ast.stmt) and self.m.parent.get(parent) is not None:
                for s in siblings(self.m, parent)[0]:
                    if (
                        returns_unless(s)
                        and isinstance(s.body[-1], ast.Continue)
                        and any(
                            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                            for n in ast.walk(s.test)
                        )
                    ):
                        return True
        return False

    def holds_buffers(self):
        """The model may hold buffers: this module, or one of the project's it imports (a package: any of its
        modules, `from models import build_model`), makes a module that has them."""
        if BUFFER_WORDS.search(self.m.text):
            return True
        project = self.m.project
        return any(
            Project.holds_buffers(module) for module in project.imported | project.imported_any
        )

    def visit_Call(self, node):
        name = dotted(node.func)
        if not name or self.in_test(node):
            return
        scope = self.function_of(node)
        forward = name.removesuffix(".forward")
        if forward.startswith("self.") and forward.count(".") == 1:
            # the trainer class's wrap (soundstorm's `self.model`, prepared in __init__ and evaluated under
            # `if self.is_main:` in train_step, corpus 33)
            if self.self_wrapped(forward, scope, node) and self.one_rank(node):
                self.report(node)
            return
        if self.wrapped_at(forward, scope, node, callers=True):
            # a helper's parameter: here where a rank check of the helper's own picks the ranks (vq-vae-2's
            # `if dist.is_primary(): ... model(sample)` in train()), else at the calls that do (below)
            local = self.rank_check(node) is not None or self.m.after_early_exit(node)
            if (local or not self.is_parameter(forward, scope)) and self.one_rank(node):
                self.report(node)
            return
        # a helper handed the wrapper (`validate(model, loader)`), reported at the call that picks the ranks
        if name in self.functions:
            functions, function = self.functions, name
        else:
            target = self.m.project.defined.get(name)
            if target is None:
                return
            module, function = target
            functions = {f.name: f for f in Project.functions_of(module)}
        if function not in functions or not self.one_rank(node):
            return
        given = [(i, None, a) for i, a in enumerate(node.args)]
        given += [(None, k.arg, k.value) for k in node.keywords if k.arg]
        for index, keyword_name, value in given:
            passed = dotted(value)
            if (
                passed
                and self.wrapped_at(passed, scope, node, callers=True)
                and calls_parameter(functions[function], index, keyword_name, functions)
            ):
                self.report(node)
                return

    @staticmethod
    def is_parameter(name, scope):
        return scope is not None and name.split(".")[0] in [
            a.arg for a in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]
        ]

    def report(self, node):
        """Once a rank check: DRAGON's `if rank == 0:` evaluates dev and test through four calls."""
        check = next(
            (
                p
                for p in self.m.parents_of(node)
                if isinstance(p, ast.If) and self.m.picks_ranks(p.test)
            ),
            node,
        )
        if check not in self.reported:
            self.reported.add(check)
            self.add(node, fixable=False)


class EmaFromTheWrapper(WrapperAttribute):
    """DDL186: `update_ema(ema, model)` after `model = DDP(model)`, where update_ema (a function of this module)
    reads the model's named_parameters() (or state_dict()) and looks the EMA's up by those names (VDT's
    train_ddp.py, corpus 36, a copy of DiT's train.py that dropped its `model.module`): KeyError on
    `module.`-prefixed names."""

    code = "DDL186"

    def begin(self):
        if not super().begin():
            return False
        self.updaters = {}
        for f in self.m.nodes:
            if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) or function_of(self.m, f):
                continue
            if "ema" not in f.name.lower():
                continue
            params = [a.arg for a in [*f.args.posonlyargs, *f.args.args]]
            text = ast.unparse(f)
            if re.search(r"['\"]module\.|\.module\b", text):
                continue  # it strips the prefix or unwraps (DiCo's `name.replace("module.", "")`, corpus 36)
            for i, p in enumerate(params):
                if re.search(
                    rf"\b{re.escape(p)}\.(named_parameters|state_dict)\(\)", text
                ) and re.search(r"\w+\[\s*(name|k|key|n)\s*\]", text):
                    self.updaters.setdefault(f.name, set()).add(i)
        return bool(self.updaters)

    def visit_Attribute(self, node):
        return  # DDL125's

    def visit_Call(self, node):
        indexes = self.updaters.get(dotted(node.func))
        if not indexes:
            return
        scope = self.function_of(node)
        for i in indexes:
            if i < len(node.args):
                given = dotted(node.args[i])
                if given and self.wrapped_at(given, scope, node, callers=True):
                    self.add(node, fixable=False)
                    return


def cuda_indexes(joined):
    """The values an f-string puts after "cuda:" (f"cuda:{rank}")."""
    parts = joined.values
    return [
        value.value
        for before, value in zip(parts, parts[1:])
        if isinstance(before, ast.Constant)
        and str(before.value).endswith("cuda:")
        and isinstance(value, ast.FormattedValue)
    ]


def device_indexes(call):
    """The values a call uses as a device index: `.to(i)`, `.cuda(i)`, `set_device(i)`, `torch.device("cuda", i)`,
    `device_ids=[i]`, `output_device=i`, `device=i`."""
    callee, indexed = last(dotted(call.func)), []
    if callee in ("to", "cuda", "set_device", "set_device_index") and call.args:
        indexed.append(call.args[0])
    if callee == "device" and dotted(call.func) in ("torch.device", "device"):
        indexed.extend(call.args[1:2] if len(call.args) > 1 else call.args[:1])
    for name in ("device_ids", "output_device", "device"):
        value = keyword(call, name)
        if isinstance(value, (ast.List, ast.Tuple)):
            indexed.extend(value.elts)
        elif value is not None:
            indexed.append(value)
    return indexed


class HardcodedGpuCount(Rule):
    """DDL126: a device index `rank % 8` (or `% GPUS_PER_NODE` with `GPUS_PER_NODE = 8` written in the module),
    in `.to()`, `.cuda()`, `set_device()`, `device_ids=`, `torch.device()` or an f-string `cuda:{...}`."""

    code = "DDL126"

    def begin(self):
        self.constants = {}
        for node in self.m.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for t in node.targets:
                    if isinstance(t, ast.Name) and type(node.value.value) is int:
                        self.constants[t.id] = node.value.value
        return True

    def written_in(self, node):
        if isinstance(node, ast.Call) and last(dotted(node.func)) in ("int", "str") and node.args:
            return self.written_in(node.args[0])
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
            return False
        count = node.right
        value = (
            count.value if isinstance(count, ast.Constant) else self.constants.get(dotted(count))
        )
        return type(value) is int and value > 1 and "rank" in ast.unparse(node.left).lower()

    def visit_Call(self, node):
        if any(self.written_in(v) for v in device_indexes(node)):
            self.add(node, fixable=False)

    def visit_JoinedStr(self, node):  # f"cuda:{rank % 8}"
        if any(self.written_in(value) for value in cuda_indexes(node)):
            self.add(node, fixable=False)


def pads(call):
    """A `DistributedSampler(...)` that pads: drop_last not set, or set to a literal False."""
    if not (isinstance(call, ast.Call) and last(dotted(call.func)) == "DistributedSampler"):
        return False
    if ast.unparse(keyword(call, "pad") or ast.Constant(None)) == "False":
        return False  # a project's own sampler told not to pad (NVIDIA semantic-segmentation's)
    drop = keyword(call, "drop_last")
    return drop is None or isinstance(drop, ast.Constant) and drop.value is False


def padding_sampler_functions(tree):
    """A module's top-level functions that build a padding DistributedSampler (over the dataset they are handed,
    or one they build for the split they are asked for), themselves or through another such function of the
    module (maskrcnn-benchmark's `make_data_loader` calling
    `make_data_sampler`)."""
    functions = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    calls = {
        f.name: {last(dotted(n.func)) for n in ast.walk(f) if isinstance(n, ast.Call)}
        for f in functions
    }
    found = {f.name for f in functions if any(pads(n) for n in ast.walk(f))}
    for _ in range(3):  # a chain of helpers: one more link each pass
        found |= {name for name, called in calls.items() if called & found}
    return frozenset(found)


def asks_train(call):
    """A call of a sampler helper that asks for the training split or a shuffling sampler: `shuffle=True`,
    `is_train=True`, "train"."""
    said = [*call.args, *(k.value for k in call.keywords)]
    if any(
        isinstance(a, ast.Constant) and isinstance(a.value, str) and EVAL_WORDS.search(a.value)
        for a in said
    ):
        return False
    return any(
        isinstance(a, ast.Constant) and isinstance(a.value, str) and "train" in a.value
        for a in said
    ) or any(
        k.arg
        and ("train" in k.arg or k.arg == "shuffle")
        and isinstance(k.value, ast.Constant)
        and k.value.value is True
        for k in call.keywords
    )


def sampler_classes(scope):
    """`DistributedSampler` and the names a scope binds to that class (`sampler = DistributedSampler`, then
    `sampler(datasets.train)`: slurm-pytorch-ddp-boilerplate's factories.py, corpus 30, seen)."""
    return {"DistributedSampler"} | {
        dotted(t)
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign) and last(dotted(n.value)) == "DistributedSampler"
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def train_sampling(function):
    """The line of a shuffling DistributedSampler a function builds for training, or None: not over or into a
    name that says eval, not shuffle=False (vq-vae-2's data_sampler is asked for it by its caller instead)."""
    parent = {c: n for n in ast.walk(function) for c in ast.iter_child_nodes(n)}
    classes = sampler_classes(function)
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and last(dotted(node.func)) in classes):
            continue
        shuffle = keyword(node, "shuffle")
        if shuffle is not None and not (
            isinstance(shuffle, ast.Constant) and shuffle.value is True
        ):
            continue
        up = parent.get(node)
        while isinstance(up, ast.IfExp):
            up = parent.get(up)
        names = [ast.unparse(t) for t in up.targets] if isinstance(up, ast.Assign) else []
        given = node.args[0] if node.args else keyword(node, "dataset")
        said = " ".join([*names, ast.unparse(given) if given is not None else ""])
        if not EVAL_WORDS.search(said):
            return node.lineno
    return None


def eval_padding(function):
    """The line of a padding DistributedSampler a function builds for an evaluation split, or None: over or into
    a name that says eval (`DistributedSampler(valid_data)`, `val_sampler = ...`), with shuffle=False, or under an
    `if` that picks the eval split (`if split == "val":`, the `else` of `if is_train:`)."""

    def eval_call(call, names, picked):
        shuffle = keyword(call, "shuffle")
        said = " ".join([*names, ast.unparse(call.args[0]) if call.args else ""])
        return (
            picked
            or (isinstance(shuffle, ast.Constant) and shuffle.value is False)
            or bool(EVAL_WORDS.search(said))
        )

    def walk(nodes, picked):
        for node in nodes:
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                negated = "!=" in test or test.startswith("not ") or " not in " in test
                evalish = bool(EVAL_WORDS.search(test))
                trainish = bool(re.search(r"train", test, re.I)) and not evalish
                found = walk(node.body, picked or (evalish and not negated))
                found = found or walk(node.orelse, picked or trainish or (evalish and negated))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            else:
                names = []
                if isinstance(node, ast.Assign):
                    names = [ast.unparse(t) for t in node.targets]
                calls = [n for n in ast.walk(node) if pads(n)]
                found = next((c.lineno for c in calls if eval_call(c, names, picked)), None)
                if found is None:
                    found = walk(
                        [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)], picked
                    )
            if found is not None:
                return found
        return None

    return walk(function.body, False)


class TrimmedEvalSampler(CallRule):
    """DDL161: `DistributedSampler(test_set, ..., drop_last=True)` over an evaluation set (by its name), in a
    distributed script: the set is cut to a multiple of the world size, so some samples are in no rank's share
    and the metric is not the whole set's (LC-Rec's test_ddp.py, corpus 25, seen). DDL127 is the other side:
    without drop_last the sampler pads with repeats."""

    code = "DDL161"

    def check(self, call, name, callee):
        if callee != "DistributedSampler" or not is_true(keyword(call, "drop_last")):
            return
        dataset = call.args[0] if call.args else keyword(call, "dataset")
        said = ast.unparse(dataset) if dataset is not None else ""
        if not names_eval_only(said):
            return
        self.add(call, fixable=False)


class LightningEvalLogUnsynced(Rule):
    """DDL162: `self.log("val_loss", loss)` (or `self.log_dict({...})`) in an evaluation method of a
    LightningModule (validation_step, on_validation_epoch_end, a `_shared_eval` helper: its name says eval
    or val; not a test hook), at epoch level (the default there), without sync_dist=True, in a repository that
    trains with DDP, FSDP or DeepSpeed (a strategy its code, configs or pages name). A torchmetrics Metric object logged
    itself (`self.log("val_acc", self.val_acc)`) reduces itself and is left alone; so is a Trainer told not to
    shard the evaluation (use_distributed_sampler=False). One finding a method: the fix is the same keyword on
    each call. OpenSTL's val_loss, which picks each rank's best checkpoint (corpus 27, seen)."""

    code = "DDL162"
    HOOKS = ("log", "log_dict")

    def begin(self):
        if not any(
            isinstance(n, ast.ClassDef)
            and any(last(dotted(b)) == "LightningModule" for b in n.bases)
            for n in self.m.nodes
        ):
            return False
        said = Project.strategies(self.m.root) if self.m.root is not None else set()
        said |= strategies_in(self.m.text)
        # an evaluation the Trainer is told not to shard may run whole on every rank, unless the project's
        # val_dataloader shards it itself (protein-frame-flow's DistributedSampler, corpus 31)
        if "sampler" in said and not (
            self.m.root is not None and Project.val_loader_shards(self.m.root)
        ):
            return False
        return bool(said - {"sampler"})

    def visit_ClassDef(self, node):
        if not any(last(dotted(b)) == "LightningModule" for b in node.bases):
            return
        self.hooks = set(self.HOOKS) | self.wrappers(node)
        for method in node.body:
            if (
                isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                and EVAL_WORDS.search(method.name)
                # a test hook only where the repository runs trainer.test with a Trainer not set to one device
                # (pdearena's `cli.trainer.test(...)` after its DDP fit, corpus 29): Lightning advises testing
                # on one device, and the repositories of corpus 37 test so (student_project's `gpus=1`) or never
                # (adversarial_insertions): six false findings
                and not (
                    re.search(r"test|predict", method.name)
                    and not (self.m.root is not None and Project.tests_on_several(self.m.root))
                )
            ):
                self.report_first(
                    [c for c in ast.walk(method) if self.unsynced(c) or self.returned(method, c)]
                )

    @staticmethod
    def returned(method, node):
        """Lightning's old API (before 1.0): `validation_epoch_end` returns `{"val_loss": ..., "log": logs}`, which
        Lightning logs, and monitors, as each process computed it from its own shard (both copies of
        mrc-for-flat-nested-ner's span F1, corpus 41). Not where the method gathers or reduces itself."""
        return (
            method.name == "validation_epoch_end"
            and isinstance(node, ast.Return)
            and isinstance(node.value, ast.Dict)
            and any(
                isinstance(k, ast.Constant) and k.value in ("log", "progress_bar")
                for k in node.value.keys
            )
            and not re.search(r"gather|reduce|sync", ast.unparse(method))
        )

    @staticmethod
    def wrappers(cls):
        """The class's own methods that log through `self.log(...)` without a sync unless told
        (protein-frame-flow's `_log_scalar(self, key, value, ..., sync_dist=False, rank_zero_only=True)`,
        corpus 31): a call of one that does not pass sync_dist=True logs unreduced."""
        found = set()
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = method.args
            defaults = dict(
                zip(
                    [a.arg for a in args.args][len(args.args) - len(args.defaults) :], args.defaults
                )
            )
            for call in ast.walk(method):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and dotted(call.func.value) == "self"
                    and call.func.attr == "log"
                ):
                    continue
                sync = keyword(call, "sync_dist")
                value = (call.args[1:2] or [keyword(call, "value")])[0]
                # the value logged is the one the caller hands in (not a metric object of its own:
                # multimodal's _compute_recall logs torchmetrics objects, which sync themselves)
                handed = isinstance(value, ast.Name) and value.id in [a.arg for a in args.args]
                if handed and (
                    sync is None
                    or (isinstance(sync, ast.Name) and not is_true(defaults.get(sync.id)))
                ):
                    found.add(method.name)
        return found

    def unsynced(self, call):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and dotted(call.func.value) == "self"
            and call.func.attr in getattr(self, "hooks", self.HOOKS)
        ):
            return False
        on_epoch = keyword(call, "on_epoch")
        if is_true(keyword(call, "sync_dist")) or (
            isinstance(on_epoch, ast.Constant) and on_epoch.value is False
        ):
            return False  # reduced over the ranks, or a per-step value Lightning does not average
        if call.func.attr != "log_dict":  # self.log(name, value) or a wrapper of it
            value = (call.args[1:2] or [keyword(call, "value")])[0]
            values = [] if value is None else [value]
        else:
            given = (call.args[:1] or [keyword(call, "dictionary")])[0]
            values = self.dict_values(call, given)
        # an attribute of the module (`self.val_acc`): a torchmetrics Metric, which syncs in compute()
        return any(
            not (isinstance(v, ast.Attribute) and dotted(v).startswith("self."))
            and not self.computed(v, call)
            for v in values
        )

    def computed(self, value, call):
        """Whether a logged value is what a metric of the module's compute() returned, which torchmetrics syncs
        over the processes: `self.valid_mse.compute()`, or a name bound to it before the log
        (earth-forecasting-transformer's `valid_mse = self.valid_mse.compute()`, corpus 45, judged false)."""

        def computes(node):
            return any(
                isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "compute"
                and dotted(c.func.value).startswith("self.")
                for c in ast.walk(node)
            )

        if computes(value):
            return True
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        bound = [self.bound_before(call, name) for name in names]
        return bool(bound) and all(v is not None and computes(v) for v in bound)

    def dict_values(self, call, given):
        """The values of the dict `self.log_dict(...)` is given: a dict written there, or one a name of the method
        is bound to; a dict the method gets from a call (`aeloss, log_dict_ae = self.loss(...)`, Open-MAGVIT2's
        validation step, corpus 31) holds the step's tensors, so it stands for itself. A module's attribute (a
        MetricCollection, which syncs in compute()) is left to the caller."""
        if isinstance(given, ast.Dict):
            return given.values
        if not isinstance(given, ast.Name):
            return [] if given is None else [given]
        bindings = [
            n
            for n in ast.walk(self.function_of(call) or self.m.tree)
            if isinstance(n, ast.Assign) and given.id in bound_names(n) and n.lineno < call.lineno
        ]
        if not bindings:
            return []  # a parameter: what the caller hands in is not read here
        value = bindings[-1].value
        if isinstance(value, ast.Dict):
            return value.values
        return [given] if isinstance(value, ast.Call) else []


class PerRankSamplerSeed(CallRule):
    """DDL164: `DistributedSampler(ds, ..., seed=world_size + local_rank)`: a seed that names the rank (or the
    process index), in a sampler that shuffles. The shares then come from different permutations and overlap
    (the contrails solution's loader, corpus 28, seen)."""

    code = "DDL164"

    def check(self, call, name, callee):
        if callee != "DistributedSampler":
            return
        seed = keyword(call, "seed")
        if seed is None and len(call.args) > 4:
            seed = call.args[4]  # DistributedSampler(dataset, num_replicas, rank, shuffle, seed)
        shuffle = keyword(call, "shuffle")
        if len(call.args) > 3 and shuffle is None:
            shuffle = call.args[3]
        if seed is None or (isinstance(shuffle, ast.Constant) and shuffle.value is False):
            return
        if re.search(r"rank|process_index|gpu_id|local_process", ast.unparse(seed), re.I):
            self.add(call, fixable=False)


class UnpreparedOptimizerStep(CallRule):
    """DDL165: `optimizer_d.step()` in a module that builds an Accelerator and prepares an optimizer, where this
    optimizer is handed to no `prepare` (the name, the expression, or the attribute it is bound to): MuseTalk's
    discriminators and their optimizers, built in another module and never prepared (corpus 28, seen). Not where
    a prepare call takes starred or listed arguments (which it prepares cannot be read), nor in a module that
    never runs accelerator.backward."""

    code = "DDL165"

    def begin(self):
        if not self.m.uses_accelerate:
            return False
        self.prepared = self.m.prepared_expressions
        if self.prepared is None:
            return False
        self.reported = set()
        optimizers = {p for p in self.prepared if OPTIMIZER_NAME.search(p.lower())}
        backward = any(
            isinstance(n, ast.Call) and dotted(n.func).endswith("accelerator.backward")
            for n in self.m.nodes
        )
        return bool(optimizers) and backward

    def check(self, call, name, callee):
        if not is_step(call):
            return
        owner = stepped_node(call)
        text = ast.unparse(owner)
        if not OPTIMIZER_NAME.search(text.lower()) or text in self.prepared:
            return
        if self.bound_to_prepared(owner) or text in self.reported:
            return
        self.reported.add(text)
        self.add(call, fixable=False)

    def bound_to_prepared(self, owner):
        """`opt = self.optimizer` where `self.optimizer` was prepared: the same object under another name."""
        name = dotted(owner)
        return any(
            isinstance(n, ast.Assign)
            and any(dotted(t) == name for t in n.targets)
            and ast.unparse(n.value) in self.prepared
            for n in self.m.nodes
        )


class RendezvousOverwritten(Rule):
    """DDL166: `os.environ["MASTER_PORT"] = "12355"` (or MASTER_ADDR) in a script torchrun launches: one that
    reads `os.environ["LOCAL_RANK"]` (which only a launcher sets) or that the repository's commands run with
    torchrun or torch.distributed.launch / run, and that starts no processes of its own (mp.spawn, Process) and
    reads no Slurm variables. Not where the assignment sits under an `if` (a fallback for another launcher) or
    goes through setdefault (a DDP tutorial series copied from pytorch/examples' mp.spawn script, corpus 30)."""

    code = "DDL166"
    KEYS = ("MASTER_ADDR", "MASTER_PORT")

    def begin(self):
        if not self.m.distributed or self.m.spawned or self.m.forks_through_a_helper:
            return False
        if "SLURM" in self.m.text:
            return False
        if any(
            isinstance(c, ast.Call) and last(dotted(c.func)) in (*LAUNCHERS, "Popen")
            for c in self.m.nodes
        ):
            return False
        self.reported = False
        return self.local_rank_read() or self.launched_by_torchrun()

    def local_rank_read(self):
        """`os.environ["LOCAL_RANK"]`, no default: the script counts on a launcher."""
        return any(
            isinstance(n, ast.Subscript)
            and dotted(n.value) == "os.environ"
            and isinstance(n.slice, ast.Constant)
            and n.slice.value == "LOCAL_RANK"
            and isinstance(n.ctx, ast.Load)
            for n in self.m.nodes
        )

    def launched_by_torchrun(self):
        return self.m.launched_with(r"\btorchrun\b|torch\.distributed\.(launch|run)\b")

    def visit_Assign(self, node):
        for target in node.targets:
            if (
                isinstance(target, ast.Subscript)
                and dotted(target.value) == "os.environ"
                and isinstance(target.slice, ast.Constant)
                and target.slice.value in self.KEYS
                and not self.reported
                # `os.environ.get("MASTER_PORT", "12355")`: the launcher's value kept where there is one
                and target.slice.value not in ast.unparse(node.value)
                and not any(isinstance(p, ast.If) for p in self.m.parents_of(node))
            ):
                self.reported = True  # one finding: the two lines are one mistake
                self.add(node, fixable=False)


class PaddedEvalSampler(Rule):
    """DDL127: `DistributedSampler(val_set, ...)` (an eval set by its name, not drop_last=True) in a module
    that reduces or gathers across ranks, with no sign of removing the padding: no slice of the gathered
    results to the set's length (`[: len(dataset)]`), no remainder loader (`len(sampler) * world_size`,
    pytorch/examples' imagenet), no gather_for_metrics."""

    code = "DDL127"
    TRIMMED = re.compile(
        r"\[\s*:\s*len\(|len\([\w.]*sampler\)\s*\*|"
        # np.unique of the labels in a Dice loop is no de-duplication (CBIM's validation)
        r"gather_for_metrics|drop_duplicates|unique\([^)]*(idx|index|indices|ids?\b|uid|key)",
        re.I,
    )
    # the gathered results cut to the set's length: read in the evaluation's own code, not the training step's
    # slices (U2PL's `pred_all[:num_labeled]`)
    SLICED = re.compile(r"\[\s*:\s*\w*(num|n|size|total)\w*\s*\]", re.I)
    # the ranks' results gathered as dicts keyed by sample and merged: a repeat overwrites itself
    # (maskrcnn-benchmark's _accumulate_predictions_from_multiple_gpus)
    MERGED = re.compile(r"all_gather[\s\S]{0,400}?\.update\(")

    def begin(self):
        names = set(self.m.calls)
        # a reducing helper of the module that nothing calls reduces nothing (the landmark retrieval's
        # reduce_mean, defined and never used: corpus 37); an evaluation function nothing here calls may be
        # another module's entry point
        reduced = any(
            reduces(c)
            and not (
                (function := self.function_of(c)) is not None
                and re.search(r"reduce|gather|dist_sum", function.name, re.I)
                and function.name not in self.m.calls
                and function.name not in self.m.passed_functions
            )
            for calls in self.m.calls.values()
            for c in calls
        )
        # the reduction may be a project function's or class's this module calls (SegmenTron's metric)
        reducers = [
            text
            for calls in self.m.calls.values()
            for c in calls
            if (text := self.m.project.reducer(c)) is not None
        ]
        self.helpers = self.m.project.sampler_helpers | padding_sampler_functions(self.m.tree)
        self.eval_helpers = self.m.project.eval_sampler_helpers
        self.helper_calls, self.reported_in = [], set()
        built = "DistributedSampler" in names or any(
            self.runs(c) in self.helpers or self.runs(c) in self.eval_helpers
            for calls in self.m.calls.values()
            for c in calls
        )
        if not (built and (reduced or reducers)):
            return False
        text = "\n".join([self.m.text, *reducers, *self.evaluators()])
        evaluation = [
            ast.unparse(f)
            for f in ast.walk(self.m.tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and EVAL_WORDS.search(f.name)
        ]
        sliced = self.SLICED.search("\n".join([*evaluation, *reducers]))
        return not (self.TRIMMED.search(text) or sliced)

    def evaluators(self):
        """The text of the project's evaluation modules (a file named *eval*) this module imports, or that
        the modules it imports do: DETR's datasets/coco_eval.py, whose merge keeps `np.unique` image ids, reached
        through engine.py (ED-Pose, corpus 17; YOLOS, corpus 16; MOTR, corpus 15: seen)."""
        found = set()
        for module in self.m.project.imported:
            found |= {module} if "eval" in module.name else set()
            for node in Project.tree(module).body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    source = Project.resolve(module, node.module, node.level)
                    if source is not None and "eval" in source.name:
                        found.add(source)
        return [Project.text(m) for m in sorted(found)]

    @staticmethod
    def runs(call):
        """The function a call runs: its own, or the one `partial(get_emb, model=model, ...)` binds, called
        later by the evaluation (hyp_metric's, corpus 42)."""
        if last(dotted(call.func)) == "partial" and call.args:
            return dotted(call.args[0])
        return dotted(call.func)

    def visit_Call(self, node):
        where = self.eval_helpers.get(self.runs(node))
        if where is not None and self.m.distributed:
            # a project function that builds the eval split's padding sampler itself, modules away (NVAE's
            # `train_queue, valid_queue, _ = datasets.get_loaders(args)`): unless this call asks for the train
            # split alone
            said = [ast.unparse(a) for a in node.args] + [ast.unparse(k) for k in node.keywords]
            train = any(re.search(r"train", s, re.I) for s in said)
            if (not train or any(EVAL_WORDS.search(s) for s in said)) and not self.merged_beside(
                node
            ):
                module, line = where
                self.helper_calls.append((node, reached_at(self.m.path, module, line)))
            return
        if dotted(node.func) in self.helpers and self.m.distributed:
            # `make_data_sampler(val_dataset, False, distributed)`, `make_data_loader(cfg, is_train=False)`
            said = [*assigned_to(self.m, node), *map(ast.unparse, node.args)]
            said += [
                k.arg
                for k in node.keywords
                if k.arg and isinstance(k.value, ast.Constant) and k.value.value is False
            ]  # is_train=False
            said += [ast.unparse(k.value) for k in node.keywords]
            if (
                any(EVAL_WORDS.search(x) for x in said)
                or any(re.fullmatch(r"(is_)?train(ing)?", x) for x in said)
            ) and not self.merged_beside(node):
                self.helper_calls.append((node, ""))
            return
        # the set given by position or by keyword (RocWeather's `DistributedSampler(dataset=testset, ...)`,
        # corpus 21, seen)
        dataset = node.args[0] if node.args else keyword(node, "dataset")
        if last(dotted(node.func)) != "DistributedSampler" or dataset is None:
            return
        if not pads(node):
            return  # drop_last=True (or a flag), or pad=False: no repeats, a different choice
        named = assigned_to(self.m, node)
        shuffle = keyword(node, "shuffle")
        if EVAL_WORDS.search(" ".join([*named, ast.unparse(dataset)])) or (
            isinstance(shuffle, ast.Constant) and shuffle.value is False
        ):
            self.add(node, fixable=False)
            function = self.function_of(node)
            self.reported_in.add(function.name if function else None)

    def merged_beside(self, node):
        """Whether the function around `node` hands its data to a project function whose module merges the
        ranks' results by sample (maskrcnn-benchmark's run_test: inference() keys predictions by image id)."""
        scope = self.function_of(node) or self.m.tree
        for call in ast.walk(scope):
            target = (
                self.m.project.defined.get(dotted(call.func))
                if isinstance(call, ast.Call)
                else None
            )
            if target is not None and self.MERGED.search(Project.text(target[0])):
                return True
        return False

    def end(self):
        # once: not again at the call of a helper of this file reported inside
        local = padding_sampler_functions(self.m.tree)
        for call, where in self.helper_calls:
            # a function of this file that reaches a sampler reported here already (CBIM's main_worker)
            if last(dotted(call.func)) not in self.reported_in and not (
                self.reported_in and dotted(call.func) in local
            ):
                self.m.add(call, self.code, False, where)


def sets_requires_grad(node, value):
    """`p.requires_grad = value` or `p.requires_grad_(value)` (`requires_grad_()` is True)."""
    if isinstance(node, ast.Assign):
        return (
            any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is value
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr != "requires_grad_":
            return False
        given = node.args[0] if node.args else keyword(node, "requires_grad")
        return (given is None and value is True) or (
            isinstance(given, ast.Constant) and given.value is value
        )
    return False


class UnfrozenAfterWrap(Rule):
    """DDL129: in one function (or the module), `requires_grad = False` before a DDP wrap and
    `requires_grad = True` after it: the unfrozen parameters are not in DDP's buckets."""

    code = "DDL129"

    def begin(self):
        return bool(set(self.m.calls) & {"DistributedDataParallel", "DDP"})

    def visit_Call(self, node):
        if last(dotted(node.func)) not in ("DistributedDataParallel", "DDP"):
            return
        inside, pending = [], list(ast.iter_child_nodes(self.function_of(node) or self.m.tree))
        while pending:  # the wrap's own function, the bodies of functions nested in it left out
            n = pending.pop()
            inside.append(n)
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pending.extend(ast.iter_child_nodes(n))
        settings = sorted(  # the last requires_grad setting before the wrap is what DDP sees
            (n.lineno, sets_requires_grad(n, False))
            for n in inside
            if (sets_requires_grad(n, False) or sets_requires_grad(n, True))
            and n.lineno < node.lineno
        )
        frozen = bool(settings) and settings[-1][1]
        thawed = sorted(
            (n for n in inside if sets_requires_grad(n, True) and n.lineno > node.lineno),
            key=lambda n: n.lineno,
        )
        if frozen and thawed:
            self.add(thawed[0], fixable=False)


class ForwardOutsideNoSync(Rule):
    """DDL130: `with model.no_sync():` (`accelerator.no_sync(model)`, `accelerator.accumulate(model)`, or a name
    bound to one of them: `context = model.no_sync() if ... else nullcontext()`) whose block calls backward()
    and never names the model, after a call of the model (its forward) earlier in the same function."""

    code = "DDL130"

    def manager_model(self, expr, at):
        if isinstance(expr, ast.IfExp):
            return self.manager_model(expr.body, at) or self.manager_model(expr.orelse, at)
        if isinstance(expr, ast.Name):  # `with context:`: the assignment in the same function
            scope = self.function_of(at) or self.m.tree
            for n in ast.walk(scope):
                if (
                    isinstance(n, ast.Assign)
                    and n.lineno < at.lineno
                    and [dotted(t) for t in n.targets] == [expr.id]
                ):
                    return self.manager_model(n.value, n)
            return None
        if not isinstance(expr, ast.Call):
            return None
        name = dotted(expr.func)
        if last(name) == "no_sync" and not expr.args and isinstance(expr.func, ast.Attribute):
            return dotted(expr.func.value) or None  # model.no_sync()
        if name in ("accelerator.no_sync", "accelerator.accumulate") and expr.args:
            return dotted(expr.args[0]) or None
        return None

    def visit_With(self, node):
        for item in node.items:
            model = self.manager_model(item.context_expr, node)
            if not model:
                continue
            calls = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Call)]
            if not any(
                isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls
            ):
                continue
            if any(
                isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == model
                for s in node.body
                for n in ast.walk(s)
            ):
                continue  # the forward, or a helper handed the model, may be inside
            scope = self.function_of(node) or self.m.tree
            if not any(  # the model called (its forward) before the block, in the same scope
                isinstance(c, ast.Call) and dotted(c.func) == model and c.lineno < node.lineno
                for c in ast.walk(scope)
            ):
                continue  # `accelerator.accumulate(models_to_accumulate)`: a list, whose forwards are not seen
            self.add(node, fixable=False)


class EmaBeforeWrap(Rule):
    """DDL131: in one function, `torch.manual_seed(...)` of a value made from the rank, then an EMA copy of the
    model (`ModelEma(model, ...)`, `ModelEmaV2`, `EMA(model)`, `copy.deepcopy(model)`), then the DDP wrap of the
    same model: the copy keeps this rank's own initialization, which the wrap's broadcast replaces only in the
    model."""

    code = "DDL131"

    def begin(self):
        return bool(set(self.m.calls) & {"DistributedDataParallel", "DDP"})

    def visit_Call(self, node):
        if last(dotted(node.func)) not in ("DistributedDataParallel", "DDP") or not node.args:
            return
        model = dotted(node.args[0])
        scope = self.function_of(node) or self.m.tree
        nodes = [n for n in ast.walk(scope) if hasattr(n, "lineno") and n.lineno < node.lineno]
        ranked = {  # `seed = args.seed + utils.get_rank()`
            dotted(t)
            for n in nodes
            if isinstance(n, ast.Assign) and RANKED_SEED.search(ast.unparse(n.value))
            for t in n.targets
        }
        seeds = sorted(  # (line, seeded per rank) of every torch.manual_seed before the wrap
            (
                n.lineno,
                bool(RANKED_SEED.search(ast.unparse(n.args[0])) or dotted(n.args[0]) in ranked),
            )
            for n in nodes
            if isinstance(n, ast.Call) and dotted(n.func) == "torch.manual_seed" and n.args
        )
        if not model or not any(ranked for _, ranked in seeds):
            return
        built = [  # where the model got its weights: its last assignment before the copy
            n.lineno
            for n in nodes
            if isinstance(n, ast.Assign)
            and model
            in [dotted(e) for t in n.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        ]
        for n in nodes:
            if not isinstance(n, ast.Call):
                continue
            copies = EMA_CALL.search(last(dotted(n.func))) or dotted(n.func) in (
                "copy.deepcopy",
                "deepcopy",
            )
            if not (copies and n.args and dotted(n.args[0]) == model):
                continue
            made = max((line for line in built if line < n.lineno), default=0)
            before = [ranked for line, ranked in seeds if line < made]
            if before and before[-1]:  # the weights were drawn under a per-rank seed
                self.add(n, fixable=False)


# FiD's `opt.global_rank + opt.seed` (corpus 14) and yolov3's `opt.seed + 1 + RANK` as well as `seed + rank`
RANKED_SEED = re.compile(r"\b(get_rank\(\)|\w*rank\b|process_index\b)", re.I)
EMA_CALL = re.compile(r"^(ModelEma\w*|EMA|ExponentialMovingAverage|AveragedModel)$")


TRACKERS = {
    "SummaryWriter",
    "wandb.init",
    "mlflow.start_run",
    "torch.utils.tensorboard.SummaryWriter",
    "tensorboardX.SummaryWriter",
}


class TrackerOnEveryRank(Rule):
    """DDL128: SummaryWriter(...), wandb.init(...), mlflow.start_run(...) in a distributed script with no guard
    that picks one process (an `if` or a conditional expression on the rank, or a function only called under
    one)."""

    code = "DDL128"
    distributed_only = True

    def visit_Call(self, node):
        name = dotted(node.func)
        if name not in TRACKERS and last(name) != "SummaryWriter":
            return
        if any(
            isinstance(p, ast.IfExp) and self.m.picks_ranks(p.test) for p in self.m.parents_of(node)
        ):
            return  # writer = SummaryWriter(...) if rank == 0 else None
        if last(name) == "SummaryWriter" and any(
            PER_RANK.search(ast.unparse(a)) for a in [*node.args, *(k.value for k in node.keywords)]
        ):
            return  # each rank's own folder (NS2NS's `log_dir=".../log_{}".format(..., cfg.rank)`, corpus 45)
        if (
            not self.m.guarded(node)
            and not self.in_test(node)
            and not self.m.callers_elsewhere(node)
        ):
            self.add(node, fixable=False)


SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.GeneratorExp,
    ast.ListComp,
)
SCOPES += (ast.SetComp, ast.DictComp)


def scope_nodes(scope, stops=SCOPES):
    """The nodes of one scope (a function's body, or the module's), not those of the functions, classes,
    lambdas and comprehensions inside it, which have scopes of their own. `stops`: the nodes not entered
    (DEFINITIONS: comprehensions entered too, as code of the function around them)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, stops):
            todo.extend(ast.iter_child_nodes(node))


# what defines code that runs apart from the function around it
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def main_only(test):
    """`rank == 0`, `is_main_process`, `args.local_rank in [-1, 0]`, `RANK == -1` (no process group: one
    process), or any of them `and` another test: a test the other ranks fail."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(main_only(v) for v in test.values)
    if not_distributed(test) and not isinstance(test, ast.UnaryOp):
        return True
    return selects_main(test) or (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.In)
        and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set))
        and any(ast.unparse(e) == "0" for e in test.comparators[0].elts)
        and all(ast.unparse(e) in ("0", "-1") for e in test.comparators[0].elts)
        and mentions_rank(test.left)
    )


def before_in(boolop, node):
    """The operands of `a and b and c` left of the one holding `node`: those evaluated before it."""
    for i, value in enumerate(boolop.values):
        if holds(value, node):
            return boolop.values[:i]
    return []


class BoundOnMainOnly(Rule):
    """DDL144: a name of a function (or of the module) bound only in the body of `if` checks that pass on the
    main process alone, and read after them where every rank runs (CodeT5's `tb_writer`, corpus 14; a `logger`
    made on the main process and used in an else branch, corpus 11): the other ranks stop with
    UnboundLocalError. A read under a rank check, or in code only one process runs, is not reported."""

    code = "DDL144"

    def begin(self):
        if not (self.m.distributed or self.m.uses_accelerate):
            return False
        for scope in [self.m.tree] + [
            n for n in self.m.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]:
            self.scope(scope)
            if not isinstance(scope, ast.Module):
                self.attributes(scope)
        return False

    def attributes(self, method):
        """`self.ema_model` bound only under `if self.is_main:` and read after it in the same method, where every
        rank runs (MAGVIT-2's trainer moves its EMA to the device on every process: AttributeError on the
        others; corpus 29, seen). Only within one method: another method may run on the main process alone. Not
        where the class binds the attribute anywhere else (`self.ema_model = None` first)."""

        def own(node, ctx):
            return (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ctx)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            )

        owner = next((p for p in self.m.parents_of(method) if isinstance(p, ast.ClassDef)), None)
        if owner is None:
            return
        stored = {}
        for node in scope_nodes(method):
            if own(node, ast.Store):
                stored.setdefault(node.attr, []).append(node)
        for attr, bound in stored.items():
            elsewhere = [
                n
                for n in ast.walk(owner)
                if own(n, (ast.Store, ast.Del)) and n.attr == attr and n not in bound
            ]
            branches = [self.main_branch(n, method) for n in bound]
            if (
                elsewhere
                or not all(branches)
                or any(
                    isinstance(n, ast.Call)
                    and last(dotted(n.func)) in ("setattr", "hasattr", "getattr")
                    for n in ast.walk(owner)
                )
            ):
                continue
            loads = [n for n in scope_nodes(method) if own(n, ast.Load) and n.attr == attr]
            for load in sorted(loads, key=lambda n: (n.lineno, n.col_offset)):
                if (
                    load.lineno > max(b.end_lineno for b in branches)
                    and self.main_branch(load, method) is None
                    and not self.m.guarded(load)
                    and not self.under_a_none_test(load)
                ):
                    self.add(load, fixable=False)
                    break

    def main_branch(self, node, scope):
        """The `if` around `node`, within its scope, in whose body only the main process runs it; or None."""
        for parent in self.m.parents_of(node):
            if parent is scope:
                return None
            if isinstance(parent, ast.If) and main_only(parent.test) and _in_body(node, parent):
                return parent
            if (  # `is_main_process and save_checkpoint`: the others never read the right side
                isinstance(parent, ast.BoolOp)
                and isinstance(parent.op, ast.And)
                and any(main_only(v) for v in before_in(parent, node))
            ):
                return parent
        return None

    def under_a_none_test(self, node):
        """Under `if eval_measures is not None:`: a value the main process alone may hold (bts's evaluation,
        corpus 16, whose writer is bound by the same process)."""
        return any(
            isinstance(p, ast.If)
            and any(
                isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.Is, ast.IsNot))
                for n in ast.walk(p.test)
            )
            for p in self.m.parents_of(node)
        )

    def scope(self, scope):
        stores, loads, other = {}, {}, set()
        if not isinstance(scope, ast.Module):
            other |= {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
        for node in scope_nodes(scope):
            if isinstance(node, ast.Name):
                (loads if isinstance(node.ctx, ast.Load) else stores).setdefault(
                    node.id, []
                ).append(node)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                other |= set(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                other |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add(node.name)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                other.add(node.name)
            elif isinstance(node, ast.arg):
                other.add(node.arg)
        for name, bound in stores.items():
            if name in other:
                continue
            branches = [self.main_branch(n, scope) for n in bound]
            if not all(branches):
                continue
            first = min(b.lineno for b in branches)
            for load in sorted(loads.get(name, []), key=lambda n: (n.lineno, n.col_offset)):
                if (
                    load.lineno > first
                    and self.main_branch(load, scope) is None
                    and not self.m.guarded(load)
                    and not self.in_test(load)
                    and not self.under_a_none_test(load)
                ):
                    self.add(load, fixable=False)
                    break


class WrappedThenPrepared(CallRule):
    """DDL145: `model = DDP(model, ...)` then `accelerator.prepare(model, ...)` (LightningDiT's train.py,
    corpus 15): two DDP wrappers on one model."""

    code = "DDL145"

    def check(self, call, name, callee):
        if callee != "prepare" or not self.m.uses_accelerate:
            return
        wrapped = {
            dotted(t)
            for n in self.m.nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and last(dotted(n.value.func)) in ("DistributedDataParallel", "DDP")
            and n.lineno < call.lineno
            for t in n.targets
        }
        if any(dotted(a) in wrapped for a in call.args):
            self.add(call, fixable=False)


class UnpreparedTrainingLoader(Rule):
    """DDL148: under Accelerate, a loop that trains (a backward or a step, here or in a method of this module it
    calls) over a DataLoader that this module builds (`DataLoader(...)` with no sampler, or a project's
    `build_*loader(...)` that builds no sampler) and never hands to `prepare`, or whose prepared copy it binds
    to another name (seed-vc's train_v2.py, corpus 16; `model, optimizer, _ = accelerator.prepare(model,
    optimizer, loader)`, corpus 14). Quiet where the module shards by hand (a DistributedSampler,
    process_index, split_dataset_by_node)."""

    code = "DDL148"
    BUILDER = re.compile(r"loader$", re.I)  # build_dataloader, get_loader, loader

    def begin(self):
        words = self.m.words | set(self.m.calls)
        return self.m.uses_accelerate and not words & {
            "DistributedSampler",
            "process_index",
            "local_process_index",
            "split_dataset_by_node",
            "split_between_processes",
            "skip_first_batches",
        }

    def end(self):
        built = {}
        for n in self.m.nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call):
                name, called = dotted(n.targets[0]), last(dotted(n.value.func))
                if not name or keyword(n.value, "sampler") or keyword(n.value, "batch_sampler"):
                    continue
                if called == "DataLoader" or (
                    self.BUILDER.search(called) and self.builds_a_plain_loader(n.value.func)
                ):
                    built.setdefault(name, n)
        prepared = self.prepared()
        for loop in self.m.nodes:
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            iterated = {
                dotted(n) for n in ast.walk(loop.iter) if isinstance(n, (ast.Name, ast.Attribute))
            }
            loaders = [name for name in iterated if name in built and name not in prepared]
            if loaders and self.trains_deep(loop.body):
                self.add(loop, fixable=False)

    def builds_a_plain_loader(self, func):
        """Whether `build_ft_dataloader(...)` (a function of the project) or `self.create_train_dataloader()`
        (a method of this module) builds a DataLoader, with no sampler and no prepare: not a hook left for a
        subclass (trlx's `create_train_dataloader`, whose body is `pass`)."""
        target = self.m.project.defined.get(dotted(func))
        if target is not None:
            text = Project.source_of(*target)
        else:
            methods = [
                f
                for f in self.m.nodes
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and isinstance(func, ast.Attribute)
                and dotted(func.value) == "self"
                and f.name == func.attr
            ]
            text = "\n".join(ast.unparse(f) for f in methods)
        return "DataLoader(" in text and not re.search(r"Sampler|sampler=|prepare", text)

    def prepared(self):
        """The names a `prepare(...)` call binds its result to, each where it is also the argument in that
        position (`loader = accelerator.prepare(loader)`); a name handed to prepare in any other shape (in a
        list, starred, its result not bound) counts as prepared too, but not one whose prepared copy goes to
        `_` or another name."""
        names = set()
        for n in self.m.nodes:
            if not (
                isinstance(n, ast.Call)
                and last(dotted(n.func)) in ("prepare", "prepare_data_loader")
            ):
                continue
            args = [dotted(a) for a in n.args]
            parent = self.m.parent.get(n)
            targets = None
            if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
                target = parent.targets[0]
                elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                if len(elts) == len(args) and not any(isinstance(e, ast.Starred) for e in elts):
                    targets = [dotted(e) for e in elts]
            for i, arg in enumerate(args):
                if targets is None or targets[i] == arg:
                    names.add(arg)
        return names


class SeedBeforeSpawn(Rule):
    """DDL149: a seed (torch, numpy, random, a seeding helper) or `cudnn.deterministic = ...` in the function
    (or `__main__` block) that calls `mp.spawn(worker, ...)`, before the call, where the worker, and the
    functions of this module it calls, seed nothing (pytorch/examples' imagenet shape: TransGAN, SphereFormer,
    point-transformer; corpora 16 and 17, seen). Module-level seeds run again in each worker: not these."""

    code = "DDL149"
    SEEDS = re.compile(
        r"(manual_seed|seed_everything|set_seed|random\.seed|(fix|set|init|setup)_?(random_|all_)?seeds?)\("
    )

    def visit_Call(self, node):
        name = dotted(node.func)
        spawns = last(name) == "spawn" and (
            "multiprocessing" in name or name.split(".")[0] in ("mp", "torch", "spawn")
        )
        if not spawns or not node.args:
            return
        scope = self.function_of(node) or self.main_block(node)
        if scope is None:
            return
        seeds = [
            n
            for n in ast.walk(scope)
            if getattr(n, "lineno", node.lineno) < node.lineno
            and (
                isinstance(n, ast.Call)
                and (last(dotted(n.func)) in SEEDERS or SEED_HELPER.match(last(dotted(n.func))))
                and SameSeedEveryRank.global_stream(dotted(n.func))
                or isinstance(n, ast.Assign)
                and any(last(dotted(t)) == "deterministic" for t in n.targets)
            )
        ]
        worker = self.worker_text(node.args[0])
        if seeds and worker is not None and not self.SEEDS.search(worker):
            self.report_first(seeds)

    def main_block(self, node):
        for parent in self.m.parents_of(node):
            if isinstance(parent, ast.If) and "__main__" in ast.unparse(parent.test):
                return parent
        return None

    def worker_text(self, worker):
        """The source of the spawned function and of this module's functions it calls by name, or None where
        it is not found (a method, a lambda, a module not the project's)."""
        target = self.m.project.defined.get(dotted(worker))
        if target is not None:
            return Project.source_of(*target)
        functions = {
            f.name: f
            for f in self.m.tree.body
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        found = functions.get(dotted(worker))
        if found is None:
            return None
        called = {dotted(c.func) for c in ast.walk(found) if isinstance(c, ast.Call)}
        return "\n".join(
            ast.unparse(f) for name, f in functions.items() if name in called | {found.name}
        )


class NoSetDevice(Rule):
    """DDL150: `.cuda()` with no index, `.to("cuda")` or `torch.device("cuda")` in a module that wraps its model
    in DDP itself and never calls `torch.cuda.set_device` (nor does a project function it calls, nor does it set
    CUDA_VISIBLE_DEVICES): CMGAN's spawned ranks all building their models on GPU 0,
    AudioClassification-Pytorch's `torch.device("cuda")` (corpus 17, seen). Not under Accelerate, DeepSpeed or
    a device a launcher's setup picks."""

    code = "DDL150"

    def begin(self):
        names, words = set(self.m.calls), self.m.words
        # the process's own script: it joins the group (or spawns the ranks) and wraps; a trainer module whose
        # caller joins may be handed a device set there (PoinTr's runner, Time-Series-Library's exp_*)
        if not (
            self.m.distributed
            and names & {"DistributedDataParallel", "DDP"}
            and names & {"init_process_group", "spawn"}
        ):
            return False
        visible = any(  # a GPU chosen by CUDA_VISIBLE_DEVICES; not "-1", which hides them all for a CPU run
            isinstance(n, ast.Assign)
            and "CUDA_VISIBLE_DEVICES" in ast.unparse(n.targets[0])
            and not (isinstance(n.value, ast.Constant) and n.value.value in ("-1", ""))
            for n in self.m.nodes
        )
        if self.m.uses_accelerate or "set_device" in names | words or visible:
            return False
        if any("deepspeed" in w.lower() for w in names | words):
            return False
        self.defaults = []
        # a module that imports this one sets the device before it builds what this module runs
        # (OpenTransformer's run.py, then `Trainer(...)` of otrans/train/trainer.py: corpus 38)
        if self.m.root is not None and Project.device_set_by_an_importer(
            self.m.root, Path(self.m.path).stem
        ):
            return False
        return not self.m.calls_a_helper_saying(
            "set_device"
        )  # an init_distributed_mode that sets it

    def visit_Call(self, node):
        func, args = node.func, [*node.args, *(k.value for k in node.keywords)]
        default = (
            isinstance(func, ast.Attribute)
            and func.attr == "cuda"
            and not args
            or isinstance(func, ast.Attribute)
            and func.attr == "to"
            and any(isinstance(a, ast.Constant) and a.value == "cuda" for a in args)
            or last(dotted(func)) == "device"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "cuda"
            and not node.keywords
        )
        if default and not self.m.never_distributed(node) and not self.in_test(node):
            self.defaults.append(node)

    def end(self):
        self.report_first(self.defaults)


class CollectiveInOneProcessRun(Rule):
    """DDL151: `dist.barrier()`, `dist.all_reduce(...)` (any collective of torch.distributed) outside every check
    of whether the run is distributed, in a module that joins the group only on some paths: its
    init_process_group under an `if`, or a project helper that returns before joining (`print('Not using
    distributed mode'); return`). TransFG's and Oscar's unconditional reductions, recognize-anything's
    barrier (corpora 16 and 17, seen). Once a file: the first such call."""

    code = "DDL151"
    COLLECTIVES = {
        "barrier",
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "reduce_scatter",
        "gather",
        "scatter",
    }

    def begin(self):
        self.unguarded = []
        joins = [
            n
            for n in self.m.nodes
            if isinstance(n, ast.Call) and last(dotted(n.func)) == "init_process_group"
        ]
        # joined under a test of whether the run is distributed; not `if __name__ == ...`, nor
        # `if not dist.is_initialized():`, which joins whenever it has not yet (tdfo's torchrec)
        optional = any(
            isinstance(p, ast.If)
            and self.asks_distributed(p.test)
            and "is_initialized" not in ast.unparse(p.test)
            for j in joins
            for p in self.m.parents_of(j)
        )
        # or DeiT's init_distributed_mode: "Not using distributed mode"; return
        optional = optional or self.m.calls_a_helper_saying(r"return\s*\n[\s\S]*init_process_group")
        return optional and not self.m.uses_accelerate and not self.refuses_one_process()

    def refuses_one_process(self):
        """The script raises wherever it does not wrap in DDP: `if args.distributed: model = DDP(model)`, every
        other branch of the chain ending in `raise NotImplementedError("Only DistributedDataParallel is
        supported.")` (PCL's, corpus 22, seen). It never runs as one process."""
        for node in self.m.nodes:
            if not isinstance(node, ast.If) or not any(
                isinstance(n, ast.Call) and last(dotted(n.func)) == "DistributedDataParallel"
                for s in node.body
                for n in ast.walk(s)
            ):
                continue
            branch, others = node, []
            while len(branch.orelse) == 1 and isinstance(branch.orelse[0], ast.If):
                branch = branch.orelse[0]
                others.append(branch.body)
            others.append(branch.orelse)
            if all(block and isinstance(block[-1], ast.Raise) for block in others):
                return True
        return False

    def visit_Call(self, node):
        name = dotted(node.func)
        if last(name) not in self.COLLECTIVES:
            return
        if not re.match(r"(torch\.)?dist(ributed)?\.", name):
            return
        for parent in self.m.parents_of(node):
            if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and self.asks_distributed(
                parent.test
            ):
                return
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if self.guarded_function(parent):
                    return
                break
        if not self.m.never_distributed(node) and not self.in_test(node):
            self.unguarded.append(node)

    def guarded_function(self, function):
        """A function that leaves when not distributed (`if not dist.is_initialized(): return x`) before its
        collectives, or whose every call in this module sits under a distributed check."""
        for statement in function.body:
            if (
                isinstance(statement, ast.If)
                and self.asks_distributed(statement.test)
                and any(isinstance(s, ast.Return) for s in statement.body)
            ):
                return True
        calls = [c for c in self.m.calls.get(function.name, []) if not is_inside(c, function)]
        return bool(calls) and all(
            any(
                isinstance(p, ast.If) and self.asks_distributed(p.test)
                for p in self.m.parents_of(c)
            )
            for c in calls
        )

    @staticmethod
    def asks_distributed(test):
        """A test of whether the run is distributed, or of which rank this is: `args.distributed`,
        `dist.is_initialized()`, `world_size > 1`, `local_rank != -1`, `"RANK" in os.environ`."""
        text = ast.unparse(test)
        return (
            bool(
                DISTRIBUTION_WORDS.search(text)
                or not_distributed(test)
                or re.search(r"rank|RANK|environ", text)
            )
            and "__main__" not in text
        )

    def end(self):
        self.report_first(self.unguarded)


class DistributedByGpuCount(Rule):
    """DDL146: `if torch.cuda.device_count() > 1:` (or a name made from it, `nranks = device_count()`) around
    init_process_group or the DDP wrap (RepVGG's main.py, corpus 15; VoiceprintRecognition's trainer, corpus
    14)."""

    code = "DDL146"

    def begin(self):
        self.tests = []
        self.counts = self.m.bound_to("device_count")
        # a script that starts one process a GPU itself (mp.spawn) has as many processes as GPUs
        return self.m.distributed and not self.m.spawned

    def counts_gpus(self, test):
        return (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and any(
                isinstance(c, ast.Call)
                and last(dotted(c.func)) == "device_count"
                or dotted(c) in self.counts
                for c in [test.left, *test.comparators]
            )
        )

    def visit_If(self, node):
        test = node.test
        tests = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        if not any(
            map(self.counts_gpus, tests)
        ) or any(  # `nranks > 1 and self.use_gpu`, not `... and ddp`
            DISTRIBUTED_FLAG.fullmatch(ast.unparse(t)) or WORLD_SIZE.search(ast.unparse(t))
            for t in tests
        ):
            return
        joins = (
            "init_process_group",
            "DistributedDataParallel",
            "DDP",
        )
        if any(
            isinstance(n, ast.Call) and last(dotted(n.func)) in joins
            for statement in node.body
            for n in ast.walk(statement)
        ):
            self.tests.append(node)

    def end(self):
        if self.tests:  # once, at the first: the fix is one test, whatever it guards
            self.add(min(self.tests, key=lambda n: (n.lineno, n.col_offset)), fixable=False)


class GroupPerCall(CallRule):
    """DDL147: `dist.new_group(...)` in a loop, or in a function of this module that is called in one (bts's and
    NeWCRFs' online_eval, corpus 16: a new group at every evaluation)."""

    code = "DDL147"

    def check(self, call, name, callee):
        if callee != "new_group":
            return
        if self.innermost_loop(call) is not None:
            self.add(call, fixable=False)
            return
        function = self.function_of(call)
        sites = self.m.calls.get(function.name, []) if function is not None else []
        if any(
            isinstance(p, (ast.For, ast.While))
            for site in sites
            if not is_inside(site, function)
            for p in self.m.parents_of(site)
        ):
            self.add(call, fixable=False)


class Reductions:
    """Which values of a module are reduced across the ranks: those passed to a collective (all_reduce(x)),
    those made by one (`losses = accelerator.gather_for_metrics(...)`), and, link by link, those made from a
    reduced value (`test_loss += losses.sum().item()`). A value returned by a function of this module that
    reduces, or by one defined elsewhere (which doctor cannot read), may be reduced."""

    def __init__(self, nodes):
        self.defined = {
            n.name: n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self.assigned, self.reduced, self.results = {}, set(), {}
        for node in nodes:
            if isinstance(node, ast.Call) and reduces(node):
                self.reduced.update(dotted(a) for a in node.args)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend")
                and node.args
            ):  # losses.append(accelerator.gather_for_metrics(loss)): losses is made from it
                self.assigned.setdefault(dotted(node.func.value), []).append(node.args[0])
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                        self.assigned.setdefault(dotted(t), []).append(node.value)
                        if isinstance(node, ast.Assign):  # `x = f(...)`, not `x += per_batch(...)`
                            self.results.setdefault(dotted(t), []).append(node.value)
        for _ in range(len(self.assigned)):  # one more link of the chain each pass
            more = {
                name
                for name, values in self.assigned.items()
                if name not in self.reduced
                and any(
                    isinstance(n, ast.Call)
                    and reduces(n)
                    or isinstance(n, (ast.Name, ast.Attribute))
                    and dotted(n) in self.reduced
                    for value in values
                    for n in ast.walk(value)
                )
            }
            if not more:
                break
            self.reduced |= more

    def maybe_reduced(self, name):
        """Reduced, or made by a call that may reduce."""
        if name in self.reduced:
            return True
        for value in self.results.get(name, []):
            call = head_call(
                value
            )  # `evaluate(model)`, `float(evaluate(model))`, `evaluate(model).item()`
            if call is None:
                continue
            function = self.defined.get(last(dotted(call.func)))
            if function is None:
                return True  # defined in another module: it may reduce
            if any(isinstance(n, ast.Call) and reduces(n) for n in ast.walk(function)):
                return True
        return False

    def assigned_unreduced(self, name):
        """Assigned in this module, and not reduced on the way."""
        return name in self.assigned and not self.maybe_reduced(name)


BUILTIN_CALLS = {
    "float",
    "int",
    "sum",
    "len",
    "round",
    "item",
    "mean",
    "tensor",
    "zeros",
    "max",
    "min",
}


def head_call(value):
    """The call whose result a value is, through float(...), int(...), .item(), .mean() and the like; None for
    anything else (arithmetic, a comprehension, a builtin over a generator)."""
    while isinstance(value, ast.Call):
        callee = last(dotted(value.func))
        if callee not in BUILTIN_CALLS:
            return value
        if isinstance(value.func, ast.Attribute):  # x.item(), x.mean()
            value = value.func.value
        elif value.args:  # float(x), round(x)
            value = value.args[0]
        else:
            return None
    return None


def reduces(call):
    """A call that combines the ranks' values: all_reduce, reduce, gather, gather_for_metrics, reduce_mean, a
    project's `torch_dist_sum` ..."""
    callee = last(dotted(call.func)).lower()
    # and the MetricLogger of DeiT, MAE and DETR, whose synchronize_between_processes all-reduces each meter's
    # count and total (VPD's depth validation, corpus 42)
    return (
        "reduce" in callee
        or "gather" in callee
        or "dist_sum" in callee
        or callee == "synchronize_between_processes"
    )


RULE_CLASSES = [
    DeprecatedLauncher,
    DeprecatedAmp,
    DataParallelUse,
    ShuffleWithSampler,
    SamplerWithoutSetEpoch,
    WrappedStateDict,
    WriteOnEveryRank,
    CollectiveUnderRankCheck,
    UnsafeLoad,
    BackwardUnderAccelerate,
    PreparedSchedulerPerEpoch,
    FindUnusedParameters,
    NoDestroyProcessGroup,
    DatasetLengthDenominator,
    ManagerAsStatement,
    UnseededSplit,
    GlobalRankAsDevice,
    GatherInEval,
    AccumulationWithoutNoSync,
    WholeModelSave,
    ClipScaledGradients,
    ReadWithoutBarrier,
    SummedLoss,
    UnreducedEvalLog,
    WrapperAttribute,
    HardcodedGpuCount,
    PaddedEvalSampler,
    TrackerOnEveryRank,
    ForwardOutsideNoSync,
    EmaBeforeWrap,
    LoadWithoutMapLocation,
    UnfrozenAfterWrap,
    SwallowedInit,
    SkipOnLocalCondition,
    StepUnderRankCheck,
    ForwardThroughModule,
    MakedirsOnEveryRank,
    UnevenTrainingBatches,
    DownloadOnEveryRank,
    RmtreeOnEveryRank,
    GpuCountAsWorldSize,
    SameSeedEveryRank,
    SameNoiseEveryRank,
    OneVisibleGpu,
    BoundOnMainOnly,
    WrappedThenPrepared,
    DistributedByGpuCount,
    GroupPerCall,
    UnpreparedTrainingLoader,
    SeedBeforeSpawn,
    NoSetDevice,
    CollectiveInOneProcessRun,
    FsdpPlainScaler,
    FsdpInnerStateDict,
    PreparedSchedulerInOptimizerSteps,
    UnshardedTrainingLoader,
    ForwardOnOneRank,
    FsdpShardNormClip,
    WholeEvalOnEveryRank,
    NeverWrapped,
    TrimmedEvalSampler,
    LightningEvalLogUnsynced,
    LoadIntoWrapper,
    PerRankSamplerSeed,
    UnpreparedOptimizerStep,
    RendezvousOverwritten,
    LossOverWorldSize,
    DestroyInTheParent,
    SummedLossLogged,
    RewrappedAway,
    ResumeReplaysBatches,
    SameSamplesGathered,
    EnvironmentTorchrunNeverSets,
    SchedulerNotResumed,
    OptimizerOverAnUnwrappedModule,
    ResumeWithoutOptimizer,
    DistributedSamplerIntoPrepare,
    LoadOnSomeRanks,
    UpdatedOnSomeRanks,
    AccumulateTwice,
    MeanLossOverSamples,
    ReducedTemporary,
    WandbLogWithoutInit,
    ClipEveryMicroBatch,
    ZeroGradFirstInAccumulate,
    EmaFromTheWrapper,
    WriteGuardedElsewhere,
    ClockNamedRun,
    DiscardedWrapper,
    GatheredBesideLocal,
    AcceleratorMisspelled,
    FSDPAccumulationWithoutNoSync,
    UnseededShuffleBeforeTheShard,
    WeightsChangedOnOneRank,
    EpochsFromTheUnshardedLength,
    LeafLossUnderDDP,
    TrainedThroughAnUnwrappedHolder,
    WorldSizeUnsetOnAnEnvironmentPath,
]


class Qualify(ast.NodeTransformer):
    """Names read as what their imports make them, the way libcst's QualifiedNameProvider resolves them:
    after `from torch.nn.parallel import DistributedDataParallel as Wrap`, `Wrap(model)` is read as
    `torch.nn.parallel.DistributedDataParallel(model)`; after `import torch.distributed as d`, `d.barrier()` is
    `torch.distributed.barrier()`; after `from torch import save as persist`, `persist(...)` is `torch.save(...)`.
    Every rule then matches the qualified name, whatever the script called it. A name bound again after its
    import (an assignment, a parameter, a def) keeps its own meaning; relative imports are left as they are."""

    def visit_Module(self, node):
        self.imported, rebound = {}, set()
        for n in ast.walk(node):
            if isinstance(n, ast.Import):
                for alias in n.names:
                    if (
                        alias.asname
                    ):  # `import torch.distributed as dist`; `import torch` names itself
                        self.imported[alias.asname] = alias.name
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                for alias in n.names:
                    if alias.name != "*":
                        self.imported[alias.asname or alias.name] = f"{n.module}.{alias.name}"
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                rebound.add(n.id)
            elif isinstance(n, ast.arg):
                rebound.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                rebound.add(n.name)
        for name in rebound:
            self.imported.pop(name, None)
        return self.generic_visit(node)

    def visit_Name(self, node):
        qualified = self.imported.get(node.id) if isinstance(node.ctx, ast.Load) else None
        if qualified is None:
            return node
        parts = qualified.split(".")
        new = ast.Name(id=parts[0], ctx=ast.Load())
        for part in parts[1:]:
            new = ast.Attribute(value=new, attr=part, ctx=ast.Load())
        for n in ast.walk(new):
            ast.copy_location(n, node)
        new.qualified_from = node.id  # DDL102 is reported at the import, not again at every use
        for n in ast.walk(new):
            n.from_import = True  # a module path, whatever local names share its first part
        return new


def run_rules(checker, codes=None):
    """Every rule over one module in one walk of its tree: each node goes to the visit_<its type> of every rule
    whose begin() asked for the visits. `codes`: only the rules of these codes."""
    active, handlers, failed = [], {}, set()

    def run(rule, method, *args):
        """A rule's own bug costs that rule's findings on this module, not the others' (RULE_FAILURES)."""
        try:
            return method(*args)
        except Exception as e:  # noqa: BLE001 - reported by main as one error: line
            failed.add(rule)
            RULE_FAILURES.append((rule.code, e))
            return False

    for cls in RULE_CLASSES:
        if codes is not None and cls.code not in codes:
            continue
        rule = cls(checker)
        if not run(rule, rule.begin):
            continue
        active.append(rule)
        for attr in dir(cls):
            if attr.startswith("visit_"):
                handlers.setdefault(attr[len("visit_") :], []).append((rule, getattr(rule, attr)))
    if handlers:
        for node in checker.nodes:
            for rule, handler in handlers.get(type(node).__name__, ()):
                if rule not in failed:
                    run(rule, handler, node)
    for rule in active:
        if rule not in failed:
            run(rule, rule.end)


# (code, exception) of each rule that failed on the module being checked: main reports them as error: lines
RULE_FAILURES = []


def internal_error(e):
    """Where doctor's own code raised: 'AttributeError: ... (doctor.py:9752)'."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if Path(f.filename).name.startswith("doctor")]
    where = f" ({Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else ""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}{where}"


def function_of(checker, node):
    """The function around a node (None at module level)."""
    return next(
        (
            p
            for p in checker.parents_of(node)
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        None,
    )


MPI_COLLECTIVES = {"bcast", "Bcast", "allreduce", "Allreduce", "Barrier", "allgather", "Allgather"}


EPOCHS_SET = re.compile(
    r"set_epoch\(|^\s*(import|from) (pytorch_)?lightning\b|^\s*from transformers import .*Trainer|"
    r"\.prepare\(",
    re.M,
)


class Project:
    """What the modules beside a checked file say about it, read from their text and their trees (never run):
    whether a module that imports this one wraps a model in DDP (an `engine.py` whose `train_one_epoch` gets
    the wrapped model from `main.py`), and which functions of the modules this one imports run a collective
    (improved-diffusion's `dist_util.load_state_dict`, an MPI broadcast). The neighbours are the .py files in
    the file's folder and its parent's (and the parent's subfolders), at most MAX_NEIGHBOURS of them.
    `Project()` alone knows nothing: check_source on a string."""

    MAX_NEIGHBOURS = 400

    def __init__(self, path=None, tree=None):
        self.wrapped_by_importer = False
        # qualified call names: "improved_diffusion.dist_util.load_state_dict", "utils.general.yaml_save"
        self.collective_helpers, self.writer_helpers = set(), set()
        # functions of the imported modules that build a padding DistributedSampler (SegmenTron's
        # `make_data_sampler(dataset, shuffle, distributed)`), reached by name: the eval set's is DDL127's
        self.sampler_helpers = set()
        # qualified call name -> "module.py:line" of the padding eval sampler the call builds, in its module or
        # one it imports, up to three links down (U2PL's get_loader -> build_voc_semi_loader("val")): DDL127's
        self.eval_sampler_helpers = {}
        # the same for a shuffling training sampler (HigherHRNet's make_dataloader(cfg, is_train=True)): DDL105's
        self.train_sampler_helpers = {}
        # qualified call name -> (module path, top-level function or class): what a call of this file runs
        self.defined = {}
        # flags the imported modules set under a rank check (a base class's `self.save_models = False`)
        self.rank_flags = set()
        self.imported = set()  # the paths of the project's modules this one imports
        self.imported_any = set()  # and those of its `import pkg.module` lines
        self.others = ()  # the neighbours, this module left out
        if path is None or tree is None or not Path(path).is_file():
            return
        here = Path(path).resolve()
        neighbours = [n for n in self.neighbours(here.parent) if not self.installed_apart(here, n)]
        self.others = tuple(n for n in neighbours if n != here)
        stem = here.stem
        imports_us = re.compile(
            rf"^\s*(from\s+[\w.]*\b{re.escape(stem)}\s+import|import\s+[\w.]*\b{re.escape(stem)}\b"
            rf"|from\s+[\w.]+\s+import\s+[^\n]*\b{re.escape(stem)}\b)",
            re.M,
        )
        self.wrapped_by_importer = any(
            other != here
            and self.wraps_ddp(other)
            and stem in self.text(other)  # the cheap test first: most neighbours never name us
            and imports_us.search(self.text(other))
            for other in neighbours
        )
        by_name = {}
        for other in neighbours:
            key = other.parent.name if other.name == "__init__.py" else other.stem
            by_name.setdefault(key, other)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                found = self.resolve(here, module, node.level)
                star = found if [a.name for a in node.names] == ["*"] else None
                if star is not None and star != here:
                    # `from segmentron.utils.distributed import *`: its functions, called by bare name;
                    # `from ddpm_torch import *`: what its __init__ takes from its submodules too
                    self.rank_flags |= self.flags_in(star)
                    for name in [*self.spans(star), *Project.reexports(star)]:
                        self.bind(name, *Project.origin(star, name))
                    continue
                for alias in node.names:
                    # `from pkg import dist_util`: a module; `from dist_util import f`: a function of it
                    named = f"{module}.{alias.name}" if module else alias.name
                    target = self.resolve(here, named, node.level) or by_name.get(alias.name)
                    if target is not None and target != here:
                        # as Qualify reads the name: absolute imports qualified, relative ones as written
                        absolute = f"{module}.{alias.name}" if module and not node.level else None
                        self.helpers_of(target, absolute or alias.asname or alias.name)
                    source = found or (by_name.get(module.rsplit(".", 1)[-1]) if module else None)
                    if source is not None and source != here:
                        self.imported.add(source)
                        name = alias.asname or alias.name
                        qualified = name if node.level else f"{module}.{alias.name}"
                        # `from maskrcnn_benchmark.data import make_data_loader`: defined in data/build.py,
                        # which the package's __init__ imports it from
                        self.bind(qualified, *Project.origin(source, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = self.resolve(here, alias.name, 0) or by_name.get(
                        alias.name.rsplit(".", 1)[-1]
                    )
                    if target is not None and target != here:
                        self.imported_any.add(target)
                        self.helpers_of(target, alias.name)

    @staticmethod
    @functools.cache
    def resolve(here, module, level):
        """The file an import names, as Python would find it from the project's root: `from src.utils.dist
        import f` in app/vjepa/train.py is src/utils/dist.py under one of the file's folders up to four levels
        above it (the root the script is run from); `from ..utils import f` counts `level` folders up. None
        for what is not the project's (torch, a package installed elsewhere)."""
        parts = [p for p in module.split(".") if p]
        if not parts:
            return None
        if level:
            bases = [here.parents[level - 1]] if level <= len(here.parents) else []
        else:
            # and lib/ beside them: `sys.path.insert(0, "lib")` (HigherHRNet's _init_paths) is common
            bases = [b for p in list(here.parents)[:5] for b in (p, p / "lib")]
        for base in bases:
            candidate = base.joinpath(*parts)
            for found in (candidate.with_name(candidate.name + ".py"), candidate / "__init__.py"):
                if found.is_file() and found != here and not Project.installed_apart(here, found):
                    return found
        return None

    @staticmethod
    def installed_apart(here, found):
        """`found` is another installed package than `here`'s (`import torch` from a file of lightning_fabric in
        site-packages): not one of the project's modules. Reading torch as the project cost 135 s on
        lightning_fabric checked where it is installed."""
        for installed in ("site-packages", "dist-packages"):
            if installed in found.parts:
                i = found.parts.index(installed)
                return here.parts[: i + 2] != found.parts[: i + 2]
        return False

    def bind(self, qualified, module_path, name):
        """What a call of `qualified` runs: `name` of `module_path`, and the facts about it."""
        if name in self.spans(module_path):
            self.defined[qualified] = (module_path, name)
            self.rank_flags |= self.flags_in(module_path)
        if name in self.collectives_in(module_path):
            self.collective_helpers.add(qualified)
        if name in self.writers_in(module_path):
            self.writer_helpers.add(qualified)
        if name in Project.samplers_in(module_path):
            self.sampler_helpers.add(qualified)
        for kind, found in (
            ("eval", self.eval_sampler_helpers),
            ("train", self.train_sampler_helpers),
        ):
            if name in Project.split_samplers_in(module_path, kind):
                found[qualified] = Project.split_samplers_in(module_path, kind)[name]

    @staticmethod
    def source_of(module_path, name):
        """The text of a module's top-level function or class `name` (empty when it has none)."""
        first, end = Project.spans(module_path).get(name, (0, -1))
        return "\n".join(Project.text(module_path).splitlines()[first - 1 : end])

    @staticmethod
    @functools.cache
    def reexports(module_path):
        """Names a module imports from its own package's modules (`from .utils.train import Trainer` in an
        __init__.py): name -> (the module it comes from, its name there)."""
        found, starred = {}, {}
        package = module_path.parent if module_path.name == "__init__.py" else None
        for node in Project.tree(module_path).body:
            if not isinstance(node, ast.ImportFrom):
                continue
            source = Project.resolve(module_path, node.module or "", node.level)
            # a package's __init__.py may name its own modules absolutely (ml-cvnets' `from
            # engine.training_engine import Trainer` in engine/__init__.py)
            if node.level or source is not None and package in source.parents:
                for alias in node.names:
                    if source is not None and alias.name != "*":
                        found[alias.asname or alias.name] = (source, alias.name)
                    elif source is not None and source != module_path:
                        # `from .train_utils import *` (nanoT5's utils/__init__.py): its public functions
                        # and classes, where no name imported by name shadows them
                        for name in Project.spans(source):
                            if not name.startswith("_"):
                                starred.setdefault(name, (source, name))
        return {**starred, **found}

    @staticmethod
    def origin(module_path, name, hops=3):
        """Where `name` of a module is defined: the module itself, or, one re-export after another (at most
        `hops`), the module of its package it is imported from."""
        while hops and name not in Project.spans(module_path):
            step = Project.reexports(module_path).get(name)
            if step is None:
                break
            module_path, name = step
            hops -= 1
        return module_path, name

    def helpers_of(self, module_path, prefix):
        self.imported.add(module_path)
        # `import distributed as dist` of a package whose __init__ takes data_sampler from its modules
        for name in Project.reexports(module_path):
            self.bind(f"{prefix}.{name}", *Project.origin(module_path, name))
        self.rank_flags |= self.flags_in(module_path)
        for name in self.spans(module_path):
            self.defined[f"{prefix}.{name}"] = (module_path, name)
        for function in self.collectives_in(module_path):
            self.collective_helpers.add(f"{prefix}.{function}")
        for function in self.writers_in(module_path):
            self.writer_helpers.add(f"{prefix}.{function}")
        for function in Project.samplers_in(module_path):
            self.sampler_helpers.add(f"{prefix}.{function}")
        for kind, found in (
            ("eval", self.eval_sampler_helpers),
            ("train", self.train_sampler_helpers),
        ):
            for function, where in Project.split_samplers_in(module_path, kind).items():
                found[f"{prefix}.{function}"] = where

    @property
    def augments(self):
        """Whether a module this one imports draws random data augmentations: a Random* transform, or numpy's
        or random's draws in a dataset's `__getitem__`, a transform's `__call__` or a function named for an
        augmentation (gmflow's FlowAugmentor, SpeechTokenizer's random crop offset; corpus 15). A package's
        __init__ counts with the modules it takes names from (SDFA-Net's `from datasets import ...`, whose
        __init__ imports the KITTI dataset that flips at random; corpus 21, seen)."""
        modules = set(self.imported)
        for module in self.imported:
            if module.name == "__init__.py":
                modules |= {source for source, _ in Project.reexports(module).values()}
        return any(Project.augments_in(m) for m in modules)

    @staticmethod
    @functools.cache
    def noise_methods(module_path):
        """The names of a module's functions named for a loss (`compute_loss`, `p_losses`) that draw Gaussian
        noise (`torch.randn(...)`, `torch.randn_like(x)` with no generator of their own); not `forward` or
        `__call__`, which a step reaches through the model's call, not by name, and whose draws are mostly
        dropout's."""
        tree = Project.qualified_tree(module_path)  # `th.randn_like` is torch's
        functions = [
            f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        drawing = {
            f.name
            for f in functions
            if re.search(r"loss", f.name, re.I)
            and any(
                isinstance(n, ast.Call)
                # Gaussian noise for the data (and its timesteps beside it); not randint alone, which picks
                # indices into each process's own batch (U2PL's anchors, corpus 11)
                and last(dotted(n.func)) in ("randn", "randn_like", "normal")
                and dotted(n.func).startswith("torch.")
                and not keyword(n, "generator")
                for n in ast.walk(f)
            )
        }
        # and a forward that returns one of them: the model's call is then the drawing step
        if any(
            f.name == "forward"
            and any(
                isinstance(n, ast.Call) and dotted(n.func) in {f"self.{d}" for d in drawing}
                for n in ast.walk(f)
            )
            for f in functions
        ):
            drawing.add("forward")
        return frozenset(drawing)

    @staticmethod
    def is_root(folder):
        """A project's root: it holds .git, a packaging file, requirements.txt or a LICENSE."""
        return any((folder / marker).exists() for marker in ROOT_MARKERS)

    @staticmethod
    @functools.cache
    def augments_in(module_path):
        """The names read as their imports make them (`from random import randrange`: random.randrange); a
        dataset's methods draw for its items (RocWeather's `get_images`, which `__getitem__` calls; corpus 21,
        seen)."""
        tree = Project.qualified_tree(module_path)
        datasets = {
            id(f)
            for c in ast.walk(tree)
            if isinstance(c, ast.ClassDef)
            and any(isinstance(f, ast.FunctionDef) and f.name == "__getitem__" for f in c.body)
            for f in c.body
            if getattr(f, "name", "") != "__init__"  # a file list shuffled once, alike by design
        }
        # a sampler's shuffle must be the same on every rank (it splits one permutation): not augmentation
        samplers = {
            id(f)
            for c in ast.walk(tree)
            if isinstance(c, ast.ClassDef) and "sampler" in c.name.lower()
            for f in ast.walk(c)
        }
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if id(function) in samplers:
                continue
            named = function.name in ("__getitem__", "__call__") or re.search(
                r"aug|transform|crop|flip|jitter", function.name, re.I
            )
            drawing = named or id(function) in datasets
            for n in ast.walk(function):
                if not isinstance(n, ast.Call):
                    continue
                name = dotted(n.func)
                if AUGMENTS.match(last(name) or ""):
                    return True
                if (
                    drawing
                    and name.rsplit(".", 1)[0] in ("random", "np.random", "numpy.random")
                    and last(name) not in SEEDERS
                ):
                    return True
                if named and name in TORCH_DRAWS:
                    return True  # LUNA25's rot_flip_yz_2: `torch.rand(2) < 0.5` (corpus 21, seen)
        return False

    @staticmethod
    @functools.cache
    def samplers_in(module_path):
        return padding_sampler_functions(Project.tree(module_path))

    @staticmethod
    def documents_launch(path):
        """Whether the repository around `path` tells its users to launch this file with
        `torch.distributed.launch` (without --use_env, with which the launcher passes no argument): a command in
        a README, a Markdown page or a shell script anywhere in it that names the file. The root is the nearest
        folder above `path` holding .git, else the farthest holding a README, at most four folders up."""
        root = Project.root_of(path)
        named = re.compile(
            rf"(?<![\w-]){re.escape(Path(path).name)}(?!\w)"
        )  # not pretrain.py for train.py
        if root is None:
            return False
        runs = [(page, c) for page, c in Project.page_commands(root) if named.search(c)]
        # where pages in the file's own folder or above it run it, they are its documentation: a page in a
        # folder beside it speaks of its own subproject's train.py (StableAnimator's vendored insightface
        # docs, whose torch.distributed.launch runs a train.py of their own; corpus 34)
        above = {Path(path).resolve().parent, *Path(path).resolve().parents}
        near = [(page, c) for page, c in runs if page.resolve().parent in above]
        return any(
            "torch.distributed.launch" in c and not re.search(r"--use[-_]env", c)
            for _, c in (near or runs)
        )

    @staticmethod
    def python_texts(root):
        """The text of each Python file of the repository (Project.pages'), one after another."""
        return (Project.text(page) for page in Project.pages(root, (".py",)))

    @staticmethod
    @functools.cache
    def asserts_local_is_global(root):
        """Whether a module of the repository asserts that the local rank is the global one (`assert
        args.local_rank == torch.distributed.get_rank()`: Point-BERT's main.py and the repositories built on it,
        corpora 11, 13 and 19, seen): the run is one node's, and its local rank 0 is rank 0."""
        said = re.compile(r"^\s*assert\s+[\w.]*local_rank\s*==\s*[\w.]*get_rank\(\)", re.M)
        return any(said.search(text) for text in Project.python_texts(root))

    @staticmethod
    @functools.cache
    def launches(root):
        """The `torch.distributed.launch` commands of a repository's pages and shell scripts, each with its
        continuation lines (a trailing backslash) joined; not those given --use_env."""
        return tuple(
            c
            for c in Project.commands(root)
            if "torch.distributed.launch" in c and not re.search(r"--use[-_]env", c)
        )

    @staticmethod
    @functools.cache
    def single_node(root):
        """Whether a repository's commands launch distributed runs (torchrun, torch.distributed.launch,
        accelerate launch, deepspeed, --nproc_per_node, `--multiprocessing-distributed --world-size 1`) and none
        of its pages or shell scripts names more than
        one machine (--nnodes other than 1, --node_rank, --num_machines, --master_addr, a hostfile, srun or
        sbatch, "multi-node", "multiple nodes")."""
        commands = Project.commands(root)
        # pytorch/examples' imagenet launch, which MoCo-style research code keeps: `--multiprocessing-distributed
        # --world-size 1 --rank 0`, the world size counting nodes (MoPro's README, corpus 38)
        spawned = r"--multiprocessing[-_]distributed"
        if not any(
            re.search(
                r"torchrun|torch\.distributed\.(launch|run)|accelerate launch|deepspeed|nproc_per_node|"
                + spawned,
                c,
            )
            for c in commands
        ):
            return False
        if any(
            re.search(spawned, c) and not re.search(r"--world[-_]size[= ]+1\b", c) for c in commands
        ):
            return False
        return not Project.names_several_nodes(root)

    @staticmethod
    @functools.cache
    def names_several_nodes(root):
        """Whether one of a repository's pages and shell scripts names more than one machine: --nnodes other than
        1, --node_rank, --num_machines, --master_addr (not a loopback one), a hostfile, "multi-node", "multiple
        nodes", a Slurm job that asks for more than one node, or one that starts its tasks with srun and does not
        ask for one node (MNCDV3's `#SBATCH --nodes=1` asks for one, corpus 32)."""
        several = re.compile(
            # a master address on the loopback is this machine's (TOME's `--master_addr 127.0.0.8`, corpus 36)
            # `--nnodes=1 --node_rank=0` is this machine's (google landmark retrieval's run_test1.sh, corpus 37)
            r"--nnodes[= ]+(?!1\b)\S|--node[_-]rank(?![= ]+[\"']?0\b)|--num_machines[= ]+(?!1\b)\S"
            r"|--master[_-]addr(?![= ]+[\"']?(127\.\d+\.\d+\.\d+|localhost)\b)|hostfile|"
            r"multi-?node|multiple (nodes|machines)|multi-?machine",
            re.I,
        )
        for page in Project.pages(root, (".sh", ".md", ".slurm", ".yaml", ".yml")):
            text = Project.text(page)
            if several.search(text):
                return True
            # `sbatch train.sh` names no machines: the script it submits is a page of its own, read here, and a
            # batch script that asks for no node count gets one node (Slurm's default; SDACD's train.sh,
            # `#SBATCH --gres=gpu:2` and torch.distributed.launch --nproc_per_node=2, corpus 39)
            if re.search(r"\bsrun\b", text) and not re.search(r"(--nodes[= ]|\s-N\s*)1\b", text):
                return True
            if re.search(r"(--nodes[= ]+|#SBATCH\s+-N\s*)(?!1\b)\S", text):
                return True
        return False

    @staticmethod
    @functools.cache
    def meets_on_localhost(root):
        """Whether the repository's code meets its processes on this machine only: a rendezvous address
        written as localhost or 127.0.0.1 (`--dist_url` defaulting to `tcp://localhost:4444`, `MASTER_ADDR =
        "localhost"`), no other host named in its code, pages or scripts (comments aside), and no page naming
        several machines (LLM-guided-Multimodal-MIL's mp.spawn run, corpus 32)."""
        local = re.compile(r"(tcp://|MASTER_ADDR\W+)(localhost|127\.0\.0\.1)\b")
        other = re.compile(
            r"tcp://(?!localhost\b|127\.0\.0\.1\b)\S|MASTER_ADDR\W+(?!localhost\b|127\.)\w"
        )
        found = False
        for page in Project.pages(root, (".py", ".sh", ".md", ".yaml", ".yml")):
            lines = [
                line
                for line in Project.text(page).splitlines()
                if not line.lstrip().startswith("#")
            ]
            text = "\n".join(lines)
            if other.search(text):
                return False
            found = found or bool(local.search(text))
        return found and not Project.names_several_nodes(root)

    @staticmethod
    def root_of(path):
        """The repository around `path`: the nearest folder above it holding .git, else the farthest holding a
        README (any case: speech-processing's `readme.md`, corpus 32), at most five folders up, else the file's
        own folder where it holds a shell script or a requirements file (MNCDV3's `train.sh` beside `train.py`,
        corpus 32); or None."""
        parents = list(Path(path).resolve().parents)[:5]
        roots = [p for p in parents if (p / ".git").exists()]
        roots = roots or [p for p in parents if Project.has_readme(p)][::-1]
        if not roots and parents:
            try:
                if any(
                    f.suffix == ".sh"
                    or f.name in ("requirements.txt", "pyproject.toml", "setup.py")
                    for f in parents[0].iterdir()
                ):
                    roots = parents[:1]
            except OSError:
                pass
        return roots[0] if roots else None

    @staticmethod
    def has_readme(folder):
        try:
            return any(f.name.lower().startswith("readme") for f in folder.iterdir())
        except OSError:
            return False

    @staticmethod
    @functools.cache
    def commands(root):
        """Every shell command of a repository's pages and shell scripts (at most 400 of them) that runs a Python
        file (`python x.py`, `python -m torch.distributed.launch ... x.py`, `torchrun ... x.py`) or module
        (`deepspeed --module pkg.train`), each with its continuation lines (a trailing backslash) joined."""
        return tuple(command for _, command in Project.page_commands(root))

    @staticmethod
    @functools.cache
    def page_commands(root):
        """(page, command) for each of Project.commands."""
        found = []
        for page in Project.pages(root, (".sh", ".md")):
            lines = Project.text(page).splitlines()
            for i, line in enumerate(lines):
                if not re.search(
                    r"\b(python3?|torchrun|accelerate|deepspeed)\b|torch\.distributed", line
                ):
                    continue
                # a backslash then a comment (`python -u -m torch.distributed.launch \ #launch`) continues too,
                # as its writer meant (OpenMatch's train_bert_dist.sh, corpus 41)
                said = re.compile(r"\\\s+#.*$")
                command, j = said.sub("\\\\", line), i
                while command.rstrip().endswith("\\") and j + 1 < len(lines):
                    j += 1
                    command = command.rstrip()[:-1] + " " + said.sub("\\\\", lines[j])
                if re.search(r"\.py\b|(\s-m|--module)[=\s]+\w", command):
                    found.append((page, command))
        return tuple(found)

    @staticmethod
    @functools.cache
    def pages(root, suffixes):
        """A repository's files ending in one of `suffixes` (its pages and shell scripts), at most 400, outside
        hidden folders and installed packages."""
        pages = []
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [
                s
                for s in subfolders
                if not s.startswith(".") and s not in ("node_modules", "venv", "site-packages")
            ]
            pages += [Path(folder, f) for f in files if f.endswith(suffixes)]
            if len(pages) > 400:
                break
        return tuple(pages[:400])

    @staticmethod
    @functools.cache
    def strategies(root):
        """What a repository's code, configs, scripts and pages say of Lightning's distributed training, read in
        up to 5,000 files (Project.pages stops at 400; OpenSTL has 495 Python files): "ddp", "fsdp" or
        "deepspeed" where a strategy is named, "sampler" where the Trainer is told not to shard the evaluation."""
        said, read = set(), 0
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [
                s for s in subfolders if not s.startswith(".") and s not in ("node_modules", "venv")
            ]
            for name in files:
                if name.endswith(REPOSITORY_TEXTS) and read < 5000:
                    read += 1
                    text = Project.text(Path(folder, name))
                    # Python that says neither Lightning nor strategy names its own DDP, not the Trainer's
                    # (omnisafe's `ddp_local_rank` beside a one-device Lightning Trainer, corpus 27)
                    if not name.endswith(".py") or re.search(r"lightning|strategy", text, re.I):
                        said |= strategies_in(text)
        return said

    @staticmethod
    @functools.cache
    def device_set_by_an_importer(root, stem):
        """Whether a Python file of the repository imports a module named `stem` and calls set_device (DDL150)."""
        imports = re.compile(
            rf"^\s*(from\s+[\w.]*\b{re.escape(stem)}\b|import\s+[\w.]*\b{re.escape(stem)}\b)", re.M
        )
        return any(
            "set_device(" in text and imports.search(text) for text in Project.python_texts(root)
        )

    @staticmethod
    @functools.cache
    def tests_on_several(root):
        """Whether a Python file of the repository calls a Lightning trainer's test() (`trainer.test(...)`,
        `cli.trainer.test(...)`) and builds no Trainer set to one device there (`pl.Trainer(gpus=1)`) (DDL162)."""
        return any(
            re.search(r"trainer\.test\(", text)
            and not re.search(r"Trainer\([^)]*\b(gpus|devices)\s*=\s*1\b", text)
            for text in Project.python_texts(root)
        )

    @staticmethod
    @functools.cache
    def seeds_anywhere(root):
        """Whether a Python file of the repository seeds a global stream (random.seed, np.random.seed,
        torch.manual_seed, set_seed, seed_everything, a project's seeding helper)."""
        seeding = re.compile(
            r"\b(manual_seed(_all)?|seed|set_seed|seed_everything|seed_all|random_seed"
            r"|(fix|set|init|setup)_?(random_|all_)?seeds?)\s*\("
        )
        return any(seeding.search(text) for text in Project.python_texts(root))

    @staticmethod
    @functools.cache
    def sets_epochs(root):
        """Whether a Python file of the repository calls set_epoch, or trains through a library whose loop sets
        it on the loader's sampler (Lightning's fit loop: OpenSTL's loaders, corpus 27; accelerate's prepared
        loaders; transformers' Trainer) (DDL105): read once a run."""
        return any(EPOCHS_SET.search(text) for text in Project.python_texts(root))

    @staticmethod
    @functools.cache
    def asks_for_a_sum(root):
        """Whether a Python file of the repository makes a loss with reduction="sum" (DDL181): read once a run."""
        return any(
            re.search(r"reduction\s*=\s*['\"]sum", text) for text in Project.python_texts(root)
        )

    @staticmethod
    @functools.cache
    def offers_option(root, key):
        """Whether a repository's code declares `--key` (or `--key-with-dashes`) as a command-line option."""
        option = re.compile(rf"['\"]--{re.escape(key).replace('_', '[_-]')}['\"]")
        return any(option.search(text) for text in Project.python_texts(root))

    @staticmethod
    @functools.cache
    def numbers_given(root, key):
        """Every whole number a repository's Python (its modules, and the code its pages and notebooks show)
        binds or passes to `key` by that name: a parameter's default (`grad_accum_every = 1,`), a keyword
        (`Trainer(grad_accum_every = 4)` in phenaki's README), an assignment (`accum_iter = 8`)."""
        number = re.compile(rf"(?<![\w.]){re.escape(key)}\s*(?::\s*[\w.\[\], ]+)?=(?!=)\s*(\d+)\b")
        return frozenset(
            found
            for page in Project.pages(root, (".py", ".md", ".ipynb", ".sh"))
            if key in Project.text(page)
            for found in number.findall(Project.text(page))
        )

    @staticmethod
    @functools.cache
    def values_given(root, key):
        """Every value a repository gives `key`: `cfg.key = 1` in its Python, `key: 1` in its configs, `--key 4`
        (or `--key=4`) in its scripts and pages, an argparse default; None where something sets it another way
        (a dict's entry, a parser without a default)."""
        found = set()
        key_ = re.escape(key)
        patterns = (
            rf"\.{key_}\s*=(?!=)\s*([^\s#,)]+)",  # cfg.key = 1, not cfg.key == 0
            rf"^\s*{key_}\s*:\s*([^\s#]+)",  # key: 1
            rf"--{key_}[=\s]+([^\s\\]+)",  # --key 4
            rf"['\"]--{key_}['\"][^)]*?default\s*=\s*([^\s,)]+)",  # add_argument("--key", default=1)
        )
        for page in Project.pages(root, REPOSITORY_TEXTS):
            text = Project.text(page)
            if key not in text:
                continue
            for pattern in patterns:
                found |= set(re.findall(pattern, text, re.M))
        return frozenset(v.strip("'\"") for v in found)

    @staticmethod
    @functools.cache
    def flag_off(root, flag):
        """flag_off_in over the repository's code, configs, scripts and pages."""
        pages = Project.pages(root, REPOSITORY_TEXTS)
        return flag_off_in(((page.suffix, Project.text(page)) for page in pages), flag)

    @staticmethod
    @functools.cache
    def val_loader_shards(root):
        """Whether a `def val_dataloader(...)` of the repository's Python builds a DistributedSampler."""
        method = re.compile(r"def val_dataloader\(.*?(?=\n\s*def |\Z)", re.S)
        return any(
            "DistributedSampler" in body
            for text in Project.python_texts(root)
            if "val_dataloader" in text
            for body in method.findall(text)
        )

    @staticmethod
    @functools.cache
    def words_elsewhere(root, here):
        """Every word of a repository's Python files, pages and shell scripts but the module `here`."""
        return frozenset(
            word
            for page in Project.pages(root, REPOSITORY_TEXTS)
            if page.resolve() != here
            for word in re.findall(r"\w+", Project.text(page))
        )

    @staticmethod
    @functools.cache
    def config_values(root, key):
        """The values a repository's YAML files give `key` (`lr_scheduler: "constant"` -> {"constant"})."""
        if root is None:
            return frozenset()
        said = re.compile(rf"^\s*{re.escape(key)}\s*:\s*['\"]?([\w-]+)", re.M)
        return frozenset(
            value
            for page in Project.pages(root, (".yaml", ".yml"))
            for value in said.findall(Project.text(page))
        )

    @staticmethod
    def naming(path):
        """A pattern for a command that runs this file: its name alone or at the end of a path (`main.py`,
        `tools/main.py`), not inside another name (`main.py` in `my_main.py`, `tools-main.py`)."""
        name = re.escape(Path(path).name)
        pattern = rf"(?<![\w/-]){name}(?!\w)|/{name}\b"
        root = Project.root_of(path)
        # and as a module from the root: `deepspeed --module ochat.training_deepspeed.train`
        if root is not None:
            module = ".".join(Path(path).resolve().relative_to(root).with_suffix("").parts)
            pattern += rf"|(?:\s-m|--module)[=\s]+{re.escape(module)}(?![\w.])"
        return re.compile(pattern)

    @staticmethod
    @functools.cache
    def one_process_only(path):
        """Whether the repository has commands that run this file and each of them starts one process: a
        launcher told one (`--nproc_per_node=1` on one node, `--num_processes 1`, `--num_gpus 1`), or plain
        `python file.py`."""
        root = Project.root_of(path)
        if root is None:
            return False
        named = Project.naming(path)
        commands = Project.page_commands(root)
        runs = [(page, c) for page, c in commands if named.search(c)]
        if not runs:
            return False
        launcher = re.compile(
            ENV_LAUNCHERS
            + r"|mpirun|srun|--launcher[ =](pytorch|slurm)|--distributed|--multiprocessing"
            r"|--world[_-]size|--gpus"
        )
        one = re.compile(
            r"--nproc[_-]per[_-]node[= ]1\b|--num[_-]processes[= ]1\b|--num[_-]gpus[= ]1\b"
        )
        many_nodes = re.compile(r"--nnodes[= ](?!1\b)")
        # a plain `python x.py` in a page that starts processes some other way around it (LBNL_dt_scaling's
        # `cmd="python ..."` run by `srun -l bash -c "$cmd"`, corpus 35; a `--dist_url` the script spawns for)
        around = re.compile(r"\bsrun\b|\bmpirun\b|#SBATCH|--dist[_-]url|--multiprocessing")
        # and no command of the repository starts several processes of a file it does not have: minimind-v's
        # `torchrun --nproc_per_node N train_xxx.py` means each of its trainers (corpus 27)
        files = {p.name for p in Project.pages(root, (".py",))}
        return all(
            (one.search(c) and not many_nodes.search(c))
            if launcher.search(c)
            else not around.search(c) and not around.search(Project.text(page))
            for page, c in runs
        ) and not any(
            launcher.search(c)
            and not (one.search(c) and not many_nodes.search(c))
            and not {Path(f).name for f in re.findall(r"[\w./-]+\.py\b", c)} & files
            for _, c in commands
        )

    @staticmethod
    @functools.cache
    def one_process_flags(path):
        """The flags (as argparse names them: `submission`, `inference_dir`) that the repository's documented
        commands for this file pass only to a one-process run (`CUDA_VISIBLE_DEVICES=0 python main.py
        --submission`), never to a launcher's: gmflow's and unimatch's submission and inference paths (corpora
        14 and 15). Code under `if args.submission:` then runs in one process."""
        root = Project.root_of(path)
        if root is None:
            return frozenset()
        named = Project.naming(path)
        single, launched = set(), set()
        for command in Project.commands(root):
            if not named.search(command):
                continue
            # `--submission`, and `-reinfoselect` (OpenMatch's parser declares single-dash options, corpus 41);
            # not a one-letter `-m` or `-u`
            flags = {
                (double or single).replace("-", "_")
                for double, single in re.findall(
                    r"\s(?:--([A-Za-z][\w-]*)|-([A-Za-z][\w-]{2,}))", command
                )
            }
            distributed = re.search(
                ENV_LAUNCHERS
                + r"|mpirun|srun|nproc_per_node|--launcher[ =](pytorch|slurm)|--distributed"
                r"|--multiprocessing",
                command,
            )
            (launched if distributed else single).update(flags)
        # where no command launches the file distributed, a flag tells no one-process path from the rest
        # (DNABERT's `--do_train` in every command, corpus 23)
        return frozenset(single - launched) if launched else frozenset()

    @staticmethod
    @functools.cache
    def imports_in(module_path):
        """A module's import statements, wherever they are (one walk a run)."""
        return tuple(
            n
            for n in ast.walk(Project.tree(module_path))
            if isinstance(n, (ast.Import, ast.ImportFrom))
        )

    @staticmethod
    @functools.cache
    def own_split_samplers(module_path, kind):
        """What split_samplers_in reads of a module itself, whatever the depth it is reached at (once a run, not
        once a depth): its top-level functions, those that build the sampler themselves (name -> (module,
        line)), and each function's calls."""
        tree = Project.tree(module_path)
        functions = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found = {}
        for f in functions:
            line = eval_padding(f) if kind == "eval" else train_sampling(f)
            if line is not None:
                found[f.name] = (module_path, line)
        calls = {f.name: [n for n in ast.walk(f) if isinstance(n, ast.Call)] for f in functions}
        # a class whose method builds it, called to make the loaders (Retro3D's `Data(config, val=True)`,
        # whose get_data_loader shards the split that is not "train"; corpus 29)
        for c in tree.body if kind == "eval" else ():
            if isinstance(c, ast.ClassDef):
                methods = [
                    m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
                line = next((x for x in map(eval_padding, methods) if x is not None), None)
                if line is not None:
                    found[c.name] = (module_path, line)
        return functions, found, calls

    @staticmethod
    @functools.cache
    def split_samplers_in(module_path, kind="eval", depth=3):
        """A module's top-level functions that build a padding sampler for an evaluation split (eval_padding),
        themselves or through another such function, of this module or of a project module it imports (at most
        `depth` modules down): name -> (the sampler's module, line). `kind="train"`: those that build a
        shuffling training sampler instead (train_sampling), for DDL105."""
        functions, found, calls = Project.own_split_samplers(module_path, kind)
        found = dict(found)
        reached = {}  # a name this module calls -> where its sampler is
        # padding helpers by the name this module calls them: an eval split asked of one is an eval sampler
        # (U2PL's `build_vocloader("val", cfg)`); where, the helper's own line
        padders = {
            name: (module_path, Project.spans(module_path)[name][0])
            for name in Project.samplers_in(module_path)
        }
        for node in Project.imports_in(module_path) if depth else ():
            if isinstance(node, ast.ImportFrom):
                source = Project.resolve(module_path, node.module or "", node.level)
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if source is not None and alias.name != "*":
                        origin, name = Project.origin(source, alias.name)
                        where = Project.split_samplers_in(origin, kind, depth - 1).get(name)
                        if where is not None:
                            reached[bound] = where
                        if name in Project.samplers_in(origin):
                            padders[bound] = (origin, Project.spans(origin)[name][0])
                    named = f"{node.module}.{alias.name}" if node.module else alias.name
                    submodule = Project.resolve(module_path, named, node.level)
                    if submodule is not None and submodule != source:
                        for name, where in Project.split_samplers_in(
                            submodule, kind, depth - 1
                        ).items():
                            reached[f"{bound}.{name}"] = where
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = Project.resolve(module_path, alias.name, 0)
                    if target is not None:
                        for name, where in Project.split_samplers_in(
                            target, kind, depth - 1
                        ).items():
                            reached[f"{alias.asname or alias.name}.{name}"] = where

        def asks_eval(call):
            said = [*call.args, *(k.value for k in call.keywords)]
            return any(
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and EVAL_WORDS.search(a.value)
                for a in said
            ) or any(
                k.arg
                and "train" in k.arg
                and isinstance(k.value, ast.Constant)
                and k.value.value is False
                for k in call.keywords
            )

        asks = asks_eval if kind == "eval" else asks_train
        for f in functions:
            asked = [c for c in calls[f.name] if dotted(c.func) in padders and asks(c)]
            if f.name not in found and asked:
                found[f.name] = padders[dotted(asked[0].func)]
        for _ in range(3):  # a chain of helpers in the module: one more link each pass
            known = {**reached, **found}
            for name, called in calls.items():
                hit = next((known[dotted(c.func)] for c in called if dotted(c.func) in known), None)
                if name not in found and hit is not None:
                    found[name] = hit
        return found

    def makes_accelerator(self, nodes):
        """Whether a name this module binds to a call of a project function (`accelerator =
        get_accelerator(config)`) is prepared with (`accelerator.prepare(...)`), where that function's module
        makes accelerate's Accelerator in it."""
        prepared = {
            dotted(n.func.value)
            for n in nodes
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "prepare"
        }
        for n in nodes:
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
                continue
            if not {dotted(t) for t in n.targets} & prepared:
                continue
            target = self.defined.get(dotted(n.value.func))
            if target is not None and builds_accelerator(list(ast.walk(Project.tree(target[0])))):
                return re.search(r"\bAccelerator\(", Project.source_of(*target)) is not None
        return False

    def reducer(self, call):
        """The text of the project function or class a call runs, when it combines ranks' values (SegmenTron's
        `SegmentationMetric`, whose update() all-reduces; maskrcnn-benchmark's `do_train`), else None. The
        function `partial(f, ...)` binds counts as called (hyp_metric's get_emb, corpus 42)."""
        runs = call.args[0] if last(dotted(call.func)) == "partial" and call.args else call.func
        target = self.defined.get(dotted(runs))
        if target is None:
            return None
        text = Project.source_of(*target)
        combines = re.search(r"all_reduce|all_gather|\breduce\w*\(|\bgather\w*\(", text)
        return text if combines else None

    WRITES = {
        "save",
        "save_pretrained",
        "save_to_disk",
        "dump",
        "safe_dump",
        "savefig",
        "save_image",
        "imwrite",
        "imsave",
        "to_csv",
        "to_json",
        "write_text",
        "write_bytes",
    }

    @staticmethod
    @functools.cache  # one parse per module for the whole run: neighbours are shared
    def tree(module_path):
        """A module's tree, parsed once a run (an empty module when it does not parse)."""
        try:
            return ast.parse(Project.text(module_path))
        except (SyntaxError, ValueError):
            return ast.Module(body=[], type_ignores=[])

    @staticmethod
    @functools.cache
    def qualified_tree(module_path):
        """A module's tree with its names read as its imports make them (Qualify), parsed once a run; a tree of
        its own, since Qualify rewrites it and Project.tree is shared as written."""
        try:
            return Qualify().visit(ast.parse(Project.text(module_path)))
        except (SyntaxError, ValueError):
            return ast.Module(body=[], type_ignores=[])

    @staticmethod
    @functools.cache
    def functions_of(module_path):
        """A module's top-level functions (none when it does not parse)."""
        tree = Project.tree(module_path)
        return tuple(f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)))

    @staticmethod
    @functools.cache
    def spans(module_path):
        """A module's top-level functions and classes: name -> (first line, decorators included; last line)."""
        tree = Project.tree(module_path)
        return {
            d.name: (min([d.lineno] + [x.lineno for x in d.decorator_list]), d.end_lineno)
            for d in tree.body
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }

    @staticmethod
    def is_class(module_path, name):
        return any(
            isinstance(c, ast.ClassDef) and c.name == name for c in Project.tree(module_path).body
        )

    @staticmethod
    @functools.cache
    def inherited(module_path, class_name, method, depth=2):
        """Where `instance.method()` of a project class is defined when the class does not define it: the base
        class of the project's that does, up to `depth` bases up (MVSFormer's `trainer.train()`, a Trainer whose
        BaseTrainer in base/base_trainer.py holds the epoch loop; corpus 45). None when it is not found. The
        bases are read as the module's imports name them (`base.BaseTrainer`), as Project.defined holds them."""
        tree = Project.qualified_tree(module_path)
        cls = next(
            (c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == class_name), None
        )
        if cls is None:
            return None
        if any(
            isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == method
            for m in cls.body
        ):
            return module_path, class_name
        if not depth or not cls.bases:
            return None
        defined = Project(module_path, tree).defined
        for base in cls.bases:
            name = dotted(base)
            target = defined.get(name) or (
                (module_path, name) if Project.is_class(module_path, name) else None
            )
            if target is not None and target != (module_path, class_name):
                found = Project.inherited(target[0], target[1], method, depth - 1)
                if found is not None:
                    return found
        return None

    @staticmethod
    @functools.cache
    def reach(module_path, name, method=None):
        """The line spans a call of `name` runs in its module: its own, and those of the module's top-level
        functions it calls by name, and theirs (parser.py's `get_args` calling `create_experiment_dir`). For a
        class, what constructing it runs (its __init__), or with `method`, what `instance.method()` runs: that
        method and the methods it calls on `self`, not the whole class (EEG-signal's `CheckpointSaver(...)`
        builds a saver; its save() writes later, under a rank check); `method="*"`, every method."""
        spans = Project.spans(module_path)
        called = {  # functions only: a class the helper makes is its own world (a dataset's cache)
            f.name: {dotted(n.func) for n in ast.walk(f) if isinstance(n, ast.Call)}
            for f in Project.functions_of(module_path)
        }
        cls = next(
            (
                c
                for c in Project.tree(module_path).body
                if isinstance(c, ast.ClassDef) and c.name == name
            ),
            None,
        )
        found, pending = [], [name]
        if cls is not None:
            methods = {
                m.name: m
                for m in cls.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            todo, done = [*methods] if method == "*" else [method or "__init__"], set()
            while todo:
                current = methods.get(todo.pop())
                if current is None or current.name in done:
                    continue
                done.add(current.name)
                found.append((current.lineno, current.end_lineno))
                for n in ast.walk(current):
                    if isinstance(n, ast.Call):
                        callee = dotted(n.func)
                        if callee.startswith("self.") and callee.count(".") == 1:
                            todo.append(callee[5:])
                        elif callee in called:
                            pending.append(callee)
            pending = [p for p in pending if p != name]
        names = set(pending)
        while pending:
            for callee in called.get(pending.pop(), ()):
                if callee in called and callee not in names:
                    names.add(callee)
                    pending.append(callee)
        return tuple(found) + tuple(spans[n] for n in sorted(names) if n in spans)

    def joins(self, name):
        """Whether a call of this name runs a function of the project that joins the process group."""
        target = self.defined.get(name)
        return target is not None and target[1] in self.initializers(target[0])

    @staticmethod
    @functools.cache
    def initializers(module_path):
        """A module's top-level functions that call init_process_group (or deepspeed's init_distributed), or
        call one of these (`init_dist(launcher)` calling `_init_dist_pytorch(backend)`), and its classes whose
        constructor calls one."""
        called = {
            f.name: {last(dotted(n.func)) for n in ast.walk(f) if isinstance(n, ast.Call)}
            for f in Project.functions_of(module_path)
        }
        found = {"init_process_group", "init_distributed"}
        for _ in range(3):  # a chain of helpers: one more link each pass
            found |= {name for name, calls in called.items() if calls & found}
        # a class whose constructor joins (CCNet's `engine = Engine(custom_parser=parser)`, corpus 22, seen)
        classes = {
            c.name
            for c in Project.tree(module_path).body
            if isinstance(c, ast.ClassDef)
            for f in c.body
            if isinstance(f, ast.FunctionDef)
            and f.name == "__init__"
            and {last(dotted(n.func)) for n in ast.walk(f) if isinstance(n, ast.Call)} & found
        }
        return frozenset(found & set(called)) | classes

    @staticmethod
    @functools.cache
    def flags_in(module_path):
        nodes = list(ast.walk(Project.tree(module_path)))
        parent = {child: node for node in nodes for child in ast.iter_child_nodes(node)}
        return frozenset(flags_set_under_rank_checks(nodes, parent))

    @staticmethod
    @functools.cache
    def datasets(module_path):
        """A module's top-level classes with a `__getitem__` or `__iter__`: datasets, whose per-sample writes
        (a cached spectrogram) each process makes for the samples its sampler gives it."""
        return frozenset(
            c.name
            for c in Project.tree(module_path).body
            if isinstance(c, ast.ClassDef)
            and any(
                isinstance(f, ast.FunctionDef) and f.name in ("__getitem__", "__iter__")
                for f in c.body
            )
        )

    @staticmethod
    @functools.cache
    def writers_in(module_path):
        """The top-level functions of a module that write a file named by one of their parameters on every
        call (yolov5's `yaml_save(file, data)`, a `save_model(args, model, ...)` that torch.saves under
        args.model_path): no rank check or main-process return inside, no `is_main_process=` handed on. And the
        classes whose constructor does (BiRefNet's `Logger(path)`, a `logging.FileHandler(path, "w")`, corpus 24,
        seen): the call that makes one writes the file."""
        found = set()
        constructors = [
            (c.name, f)
            for c in Project.tree(module_path).body
            if isinstance(c, ast.ClassDef)
            for f in c.body
            if isinstance(f, ast.FunctionDef) and f.name == "__init__"
        ]
        for called, function in [
            (f.name, f) for f in Project.functions_of(module_path)
        ] + constructors:
            if any(mentions_rank(d) or "main" in ast.unparse(d) for d in function.decorator_list):
                continue
            given = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
            if any(
                isinstance(n, ast.If) and mentions_rank(n.test) for n in ast.walk(function)
            ) or any(
                isinstance(n, ast.keyword) and n.arg == "is_main_process"
                for n in ast.walk(function)
            ):
                continue  # it picks its process itself
            for n in ast.walk(function):
                if not isinstance(n, ast.Call):
                    continue
                name = last(dotted(n.func))
                mode = n.args[1] if len(n.args) > 1 else keyword(n, "mode")
                writes = name in Project.WRITES or (
                    name in ("open", "FileHandler")  # truncated: an appending log loses nothing
                    and isinstance(mode, ast.Constant)
                    and isinstance(mode.value, str)
                    and "w" in mode.value
                )
                if name == "save" and not dotted(n.func).startswith("torch"):
                    writes = False  # img.save, a logger's save: not known
                # the path's argument, not the object written: `torch.save(model.state_dict(), "last.pt")`
                # in `def save_last(model)` writes one fixed file, not one its caller names
                if name in ("write_text", "write_bytes") and isinstance(n.func, ast.Attribute):
                    named = [
                        n.func.value
                    ]  # a Path's; not a function of that name (ultra_light_trainer)
                elif name in ("save", "dump", "safe_dump", "save_image"):
                    named = n.args[1:2] + [k.value for k in n.keywords if k.arg == "f"]
                else:
                    named = n.args[:1]
                if writes and any(
                    isinstance(x, ast.Name) and x.id in given
                    for a in named
                    if not PER_RANK.search(
                        ast.unparse(a)
                    )  # MuseTalk's `..._{accelerator.device}_...jpg`
                    for x in ast.walk(a)
                ):
                    found.add(called)
                    break
        return frozenset(found)

    @staticmethod
    @functools.cache
    def collectives_in(module_path):
        """The top-level functions of a module that run a collective themselves on every call: a
        `dist.broadcast(...)` or `MPI.COMM_WORLD.bcast(...)` (an attribute call: a function of the module named
        `gather` is not one) that no `if` inside the function decides on, or one in each branch of an if/else."""
        return Project.collective_functions(Project.functions_of(module_path))

    @staticmethod
    def collective_functions(functions):
        """The names of those of `functions` that run a collective on every call (collectives_in)."""
        found = set()
        for function in functions:
            pending = [(statement, False) for statement in function.body]
            while pending:
                node, conditional = pending.pop()
                if not conditional and Project.is_collective(node):
                    found.add(function.name)
                    break
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    continue
                if (
                    isinstance(node, ast.If)
                    and not conditional
                    and node.orelse
                    and Project.collective_in(node.body)
                    and Project.collective_in(node.orelse)
                ):  # consistency_models' chunked bcast: the root's branch and the others' both broadcast
                    found.add(function.name)
                    break
                decided = isinstance(node, (ast.If, ast.IfExp))
                pending.extend((c, conditional or decided) for c in ast.iter_child_nodes(node))
        return frozenset(found)

    @staticmethod
    def is_collective(node):
        """`dist.all_reduce(...)`, `MPI.COMM_WORLD.bcast(...)`: an attribute call, on the default group. A name
        plotting and NumPy use too (`ax.scatter`, `np.add.reduce`) only on a distributed receiver."""
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in COLLECTIVES | MPI_COLLECTIVES
            and keyword(node, "group") is None
        ):
            return False
        return node.func.attr not in ("scatter", "gather", "reduce", "broadcast") or bool(
            re.search(r"dist|comm|mpi|accelerat|hvd|horovod", dotted(node.func.value), re.I)
        )

    @staticmethod
    def collective_in(statements):
        return any(Project.is_collective(n) for s in statements for n in ast.walk(s))

    @staticmethod
    @functools.cache
    def wraps_ddp(path):
        return bool(re.search(r"DistributedDataParallel|\bDDP\(", Project.text(path)))

    @staticmethod
    @functools.cache
    def holds_buffers(module_path, depth=1):
        """Whether a module of the project makes a module with buffers (a BatchNorm, a registered buffer, a
        torchvision or timm model), which a DDP forward broadcasts: it, any module of its package for a
        package's __init__, or (`depth` imports down) a project module it imports (Satlas's models.py, whose
        model.py holds the BatchNorms)."""
        return Project.says(module_path, BUFFER_WORDS.pattern, depth)

    @staticmethod
    @functools.cache
    def says(module_path, pattern, depth=1):
        """Whether `pattern` is in a module of the project, any module of its package for a package's __init__,
        or (`depth` imports down) a project module it imports."""
        said = re.compile(pattern)
        pages = [module_path]
        if module_path.name == "__init__.py":
            pages += sorted(module_path.parent.rglob("*.py"))[:200]
        if any(said.search(Project.text(page)) for page in pages):
            return True
        if not depth:
            return False
        return any(
            Project.says(found, pattern, depth - 1) for found in Project.imports_of(module_path)
        )

    @staticmethod
    @functools.cache
    def imports_of(module_path):
        """The project modules a module imports, by any of its import statements (`from pkg import mod` and
        `from pkg.mod import f` both reach pkg/mod.py), in the order they appear."""
        found = []
        for node in Project.imports_in(module_path):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module or ''}.{a.name}" for a in node.names]
            else:
                names = [a.name for a in node.names]
            for name in names:
                module = Project.resolve(
                    module_path.resolve(), name.strip("."), getattr(node, "level", 0)
                )
                if module is not None:
                    found.append(module)
        return tuple(found)

    @staticmethod
    @functools.cache  # a directory's files are read once per run, whichever of them is checked
    def text(path):
        try:
            if path.stat().st_size > 2_000_000:
                return ""
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    @staticmethod
    @functools.cache
    def neighbours(home):
        # not above the project's root: a script there would otherwise take the modules of the projects
        # beside it (~/code/other/data.py) for its own `import data`
        bases = (home,) if Project.is_root(home) else (home, home.parent)
        found, folders = [], list(bases)
        for base in bases:
            try:
                folders += sorted(d for d in base.iterdir() if d.is_dir() and d not in folders)
            except OSError:
                pass
        for folder in folders:
            try:
                files = sorted(folder.glob("*.py"))
            except OSError:
                continue
            found.extend(f for f in files if f.is_file())
            if len(found) >= Project.MAX_NEIGHBOURS:
                break
        return tuple(found[: Project.MAX_NEIGHBOURS])


ROOT_MARKERS = (
    ".git",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "LICENSE",
    "LICENSE.md",
)


# The codes a call of another module's function carries back to the call (one_call_away): what goes wrong in
# every process that runs the call. Not the file-level facts (DDL102's spelling, DDL113, a sampler's set_epoch).
REACHED = {
    "DDL198",
    "DDL188",
    "DDL124",
    "DDL164",
    "DDL141",
    "DDL140",
    "DDL139",
    "DDL136",
    "DDL137",
    "DDL138",
    "DDL134",
    "DDL135",
    "DDL107",
    "DDL108",
    "DDL110",
    "DDL117",
    "DDL119",
    "DDL121",
    "DDL123",
    "DDL128",
    "DDL130",
    "DDL131",
    "DDL132",
    "DDL133",
    "DDL181",
}
# a write or a tracker reached through a call that only some ranks make is theirs to make
GUARDABLE = {"DDL107", "DDL128", "DDL132", "DDL137", "DDL139", "DDL140"}


def one_call_away(checker):
    """The mistakes in the functions and classes of the project's other modules that this module calls, each
    reported at its call (the first, where there are several), with where it is: `train_one_epoch(model, ...)`
    whose accumulation in engine.py never uses no_sync, `init_distributed()` in utils.py that swallows the
    process group's failure. The callee's module is checked as run from a distributed script, and, where this
    module wraps its model, as handed the wrapped one. One call deep: what the callee calls in turn is not
    followed."""
    context = (
        checker.distributed,
        bool(set(checker.calls) & {"DistributedDataParallel", "DDP"}),
        checker.uses_accelerate,
        frozenset(
            checker.rank_flags
        ),  # `args.should_save = ... and is_master(args)`, read in the callee
        checker.local_is_global,
        # the caller's evaluation data is sharded: Retro3D's `trainer.val(val_loader)` logs, in
        # utils/trainer.py, the metric of a loader train.py built on a DistributedSampler
        checker.distributed and UnreducedEvalLog(checker).eval_sharded(),
    )
    seen, found = set(), []
    syncs = bool(
        checker.words
        & {"no_sync", "accumulate", "require_backward_grad_sync", "ddp_sync", "no_backward_sync"}
    )
    instances = project_instances(checker)
    # this file reads LOCAL_RANK, itself or through a helper of the project (ml-mdm's get_local_rank, corpus 23)
    # that is not the parser (Point-MAE's get_args sets LOCAL_RANK from the flag)
    reads_local_rank = checker.reads_local_rank or checker.calls_a_helper_saying(
        r"^(?![\s\S]*--local)[\s\S]*[\'\"]LOCAL_RANK[\'\"]"
    )
    for call in checker.nodes:
        if not isinstance(call, ast.Call) or checker.never_distributed(call):
            continue
        for (module, name), method in inherited_targets(called_targets(checker, call, instances)):
            spans = Project.reach(module, name, method)
            dataset = name in Project.datasets(module)
            for f in findings_when_called(module, *context):
                # DDL101 too where this file reads no LOCAL_RANK either: `--local_rank` in utils/parser.py
                carried = (
                    f.code in REACHED
                    or f.code == "DDL101"
                    and not reads_local_rank
                    and not checker.forks_through_a_helper
                )
                inside = any(first <= f.line <= end for first, end in spans)
                if not carried or not inside or (module, f.line, f.code) in seen:
                    continue
                if dataset and f.code in ("DDL107", "DDL132"):
                    continue  # a dataset's per-sample cache file: each sample goes to one process
                if f.code == "DDL119" and syncs:
                    continue  # the caller picks no_sync around the call (wenet's `context = model.no_sync`)
                if f.code == "DDL137" and checker.spawned and function_of(checker, call) is None:
                    continue  # module level: the parent makes the folder before mp.spawn (GPT-SoVITS)
                if f.code in GUARDABLE and (
                    checker.guarded(call, per_node_too=f.code in ("DDL137", "DDL140"))
                    or checker.callers_elsewhere(call, methods_only=True)
                ):
                    continue
                seen.add((module, f.line, f.code))
                where = reached_at(checker.path, module, f.line)
                found.append(
                    Finding(checker.path, call.lineno, call.col_offset, f.code, False, where)
                )
    return found


def called_targets(checker, call, instances):
    """What a call runs in the project's other modules: [((module, function or class), method)]. A function or
    a class by its name (method None: the constructor); `trainer.train()` on a `trainer = Trainer(...)` (or on
    one of the classes a name may hold: `Exp = Exp_Imputation` in one branch, `Exp_Prediction` in the other),
    `early_stopping(loss)` for __call__; `fire.Fire(ChatTrainer)` or `fire.Fire(component=chat_trainer)`, any
    method ("*"), as the command line picks."""
    target = checker.project.defined.get(dotted(call.func))
    if target is not None:
        return [(target, None)]
    func = call.func
    owner, method = (
        (func.value, func.attr) if isinstance(func, ast.Attribute) else (func, "__call__")
    )
    found = [(t, method) for t in instances.get(dotted(owner), ())]
    if not found and last(dotted(call.func)) == "Fire":
        for given in [*call.args, *(k.value for k in call.keywords)]:
            classes = instances.get(dotted(given), ()) or instances.get(
                ("class", dotted(given)), ()
            )
            defined = checker.project.defined.get(dotted(given))
            if defined is not None and Project.is_class(*defined):
                classes = [defined]
            found += [(t, "*") for t in classes]
    return found


def inherited_targets(targets):
    """called_targets with a method the class does not define itself taken from the base class that does."""
    found = []
    for (module, name), method in targets:
        if method and method != "*" and Project.is_class(module, name):
            base = Project.inherited(module, name, method)
            if base is not None:
                module, name = base
        found.append(((module, name), method))
    return found


def project_instances(checker):
    """The names this module binds to an instance of one of the project's classes (`trainer = Trainer(cfg)`,
    `self.runner = ModuleRunner(cfg)`): name -> the (module, class) pairs it may hold, for one_call_away to
    follow a method called on it into the class. A name bound to a class itself (`Exp = Exp_Imputation`) is
    kept under ("class", name), and a call of it makes an instance of each class it may hold."""
    project, found = checker.project, {}

    def classes(node):
        target = project.defined.get(dotted(node))
        if target is not None and Project.is_class(*target):
            return [target]
        return found.get(("class", dotted(node)), [])

    assigns = [n for n in checker.nodes if isinstance(n, ast.Assign)]
    for node in assigns:  # the aliases first: `Exp = Exp_Imputation`
        if isinstance(node.value, (ast.Name, ast.Attribute)):
            for name in node.targets:
                for target in classes(node.value):
                    found.setdefault(("class", dotted(name)), []).append(target)
    for node in assigns:
        if isinstance(node.value, ast.Call):
            for name in node.targets:
                if dotted(name):
                    found.setdefault(dotted(name), []).extend(classes(node.value.func))
    return found


@functools.cache
def findings_when_called(
    module, distributed, ddp, accelerate, rank_flags, local_is_global=False, eval_sharded=False
):
    """Another module's findings, checked as its caller's callee (see one_call_away): `distributed`, the caller
    is a distributed script (otherwise the callee's own module decides, as RT-DETR's `init_distributed` in
    `src/misc/dist.py`, called from a `train.py` that names no process group); `ddp`, the caller wraps its model in
    DDP; `accelerate`, it prepares it with Accelerate; `rank_flags`, the caller's names bound to a rank test."""
    try:
        source = read_source(str(module)).text
        return check_source(
            source,
            str(module),
            neighbours=True,
            called=(distributed, ddp, accelerate, rank_flags, local_is_global, eval_sharded),
        )
    except (OSError, UnicodeError, SyntaxError, ValueError, RecursionError):
        return []


def check_source(source, path="<string>", neighbours=False, called=None):
    """The findings in one file's source, sorted by position. Raises SyntaxError for code that does not parse.
    `neighbours`: read what the modules beside `path` say of it (Project), and carry back the mistakes of the
    other modules' functions it calls (one_call_away); otherwise the file alone. `called`: (wraps in DDP,
    uses Accelerate) of the distributed script whose call reaches this module."""
    tree = Qualify().visit(ast.parse(source, filename=path))
    checker = Checker(path, tree)
    if called is not None:
        checker.distributed = checker.distributed or called[0]
        checker.handed_ddp = called[1]
        checker.uses_accelerate = checker.uses_accelerate or called[2]
        checker.rank_flags = checker.rank_flags | called[3]
        checker.called_local_is_global = len(called) > 4 and called[4]
        checker.called_eval_sharded = len(called) > 5 and called[5]
    if neighbours:
        checker.project = Project(path, tree)
        checker.rank_flags = checker.rank_flags | checker.project.rank_flags
        # an Accelerator a helper of the project makes (distributed-llm-alignment's `accelerator =
        # get_accelerator(config)`, corpus 35): the script is Accelerate's, and distributed
        if not checker.uses_accelerate and checker.project.makes_accelerator(checker.nodes):
            checker.uses_accelerate = checker.distributed = True
        # a script that joins the process group through a helper of its own (`dist_utils.init_dist(...)`)
        checker.distributed = checker.distributed or any(
            checker.project.joins(dotted(c.func)) for c in checker.nodes if isinstance(c, ast.Call)
        )
        # a Hugging Face Trainer script the repository launches in several processes: the Trainer joins the
        # group itself, and what the script does after trainer.train() runs on every rank (multi-gpu-sft's
        # `model.save_pretrained(new_model_id)`, corpus 30)
        checker.distributed = checker.distributed or (
            hf_trainer(checker) and checker.launched_in_processes()
        )
    # a callee's module: only the rules one_call_away carries back to the caller
    run_rules(checker, None if called is None else REACHED | {"DDL101"})
    if neighbours and called is None:
        checker.found += one_call_away(checker)
    if neighbours and called is None and checker.documented_as_one_process:
        checker.found = [f for f in checker.found if f.code not in BETWEEN_PROCESSES]
    lines = physical_lines(source)

    def suppressed(finding):  # a noqa comment, bare or with codes, on the finding's line
        match = NOQA.search(lines[finding.line - 1]) if finding.line <= len(lines) else None
        if match is None or not match.group("codes"):
            return match is not None
        return finding.code in re.split(
            r"[,\s]+", match.group("codes").upper()
        )  # as ruff: exact codes

    if neighbours and checker.found:
        dead = dead_functions(tree, path, checker.root)
        checker.found = [
            f for f in checker.found if not any(a <= f.line <= b for a, b in dead.values())
        ]
    off = switched_off(tree)
    checker.found = [f for f in checker.found if not any(a <= f.line <= b for a, b in off)]
    # one finding a place and code; where a call's finding also says where the mistake is, that one
    unique = {f: f for f in checker.found if not f.via}
    unique.update({f: f for f in checker.found if f.via})
    return sorted(
        (f for f in unique.values() if not suppressed(f)), key=lambda f: (f.line, f.col, f.code)
    )


def switched_off(tree):
    """The (first line, last line) of the blocks a constant test switches off, as Python compiles them away:
    the body of `if 0:` / `if False:` (srgan_cosmo2d's load under `if 0:`, corpus 21, seen), the else of
    `if 1:` / `if True:`. A mistake there is not made."""
    blocks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Constant):
            block = node.orelse if node.test.value else node.body
            if block:
                blocks.append((block[0].lineno, block[-1].end_lineno))
    return blocks


# a Lightning strategy that trains on several processes, or a Trainer told not to shard the evaluation (DDL162)
DISTRIBUTED_STRATEGY = re.compile(
    r"\b(ddp(?![mg])|fsdp|deepspeed)\w*"  # not DDPM's or DDPG's ddp
    r"|trainer\([^)]*\b(?:use_distributed_|replace_)(sampler)(?:_ddp)?\s*=\s*false"
    r"|^\s*(?:use_distributed_|replace_)(sampler)(?:_ddp)?\s*:\s*false",  # a Trainer's, or a config's
    re.M,
)


# a flag for a phase of the work (resume, evaluate, test, load, fine-tune), which a user runs when it comes: not
# "off" because the documented runs leave it out (Checker.flag_off_in_its_runs)
PHASE_FLAGS = re.compile(
    r"resume|eval|test|load|ckpt|checkpoint|pretrain|finetune|predict|infer", re.I
)


def flag_spellings(flag):
    """(a pattern for `--flag` and `--flag-with-dashes`, the compiled `add_argument("--flag", ...)` call)."""
    spelled = re.escape(flag).replace("_", "[_-]")
    return spelled, re.compile(rf"add_argument\(\s*['\"]--{spelled}['\"][^)]*\)")


def flag_off_in(pages, flag):
    """Whether `pages` ((suffix, text) pairs) declare `--flag` once, off by default (declared_off), and nothing
    else in them names the flag: no `--flag` in a script, page or config, no `flag:` or `"flag":` in a config,
    no `args.flag = ...` in the code."""
    spelled, declaration = flag_spellings(flag)
    declared, named = [], 0
    for suffix, text in pages:
        if flag.replace("_", "") not in text.replace("_", "").replace("-", ""):
            continue
        declared += declaration.findall(text)
        rest = declaration.sub("", text)
        if suffix == ".py":
            named += len(re.findall(rf"--{spelled}\b|\.{re.escape(flag)}\s*=(?!=)", rest))
        else:
            named += len(re.findall(rf"--{spelled}\b|\b{re.escape(flag)}['\"]?\s*[:=]", rest))
    return len(declared) == 1 and declared_off(declared[0]) and not named


def declared_off(declaration):
    """Whether an `add_argument(...)` call's text declares its flag off by default: store_true without a true
    default, or a default of False, None, "" or 0."""
    if re.search(r"default\s*=\s*True\b", declaration):
        return False
    return bool(
        re.search(r"action\s*=\s*['\"]store_true['\"]", declaration)
        or re.search(r"default\s*=\s*(False|None|0|''|\"\")\s*[,)]", declaration)
    )


STRATEGY_NAMES = re.compile(r"\b(ddp(?![mg])|fsdp|deepspeed)")


def strategies_in(text):
    """The DISTRIBUTED_STRATEGY words of a text: "ddp", "fsdp", "deepspeed", "sampler". The strategy's name
    is read apart from the sampler's switch, which may hold it in one call (`Trainer(strategy="ddp",
    use_distributed_sampler=False)`)."""
    text = text.lower()
    said = {group for match in DISTRIBUTED_STRATEGY.findall(text) for group in match if group}
    return said | set(STRATEGY_NAMES.findall(text))


# the files of a repository that may name a module's functions: its code, notebooks, configs, scripts and pages
REPOSITORY_TEXTS = (".py", ".ipynb", ".yaml", ".yml", ".json", ".toml", ".cfg", ".sh", ".md")


def dead_functions(tree, path, root):
    """The top-level functions of a script (a module with an `if __name__ == "__main__":` block), or of a module
    other files of its repository import, that never run, as name -> (first line, last line): nothing in the
    module names them but their own body or another such function, nothing decorates them, and no file of the
    repository imports them from it (`from train import f`, `train.f`). A mistake there is not made
    (sngp-segmentation's `self_training_process`, which its scripts never import; corpus 20, seen). Not in a
    module nothing imports (a library's, whose users call it), one imported with `*`, or one that hands its
    functions out by name (`fire.Fire()` with no argument, `globals()`). `root`: the repository's folder."""
    if root is None:
        return {}
    stem = Path(path).stem
    importers = [
        Project.text(page)
        for page in Project.pages(root, REPOSITORY_TEXTS)
        if page.resolve() != Path(path).resolve()
        and re.search(rf"\b{re.escape(stem)}\b", Project.text(page))
    ]
    imports = re.compile(rf"from\s+[\w.]*\b{re.escape(stem)}\s+import\b|\b{re.escape(stem)}\.\w")
    script = any(isinstance(s, ast.If) and "__main__" in ast.unparse(s.test) for s in tree.body)
    if not script and not any(imports.search(text) for text in importers):
        return {}  # a module nothing here imports may be a library's: its users call it
    if any(re.search(rf"\b{re.escape(stem)}\s+import\s+\*", text) for text in importers):
        return {}
    functions = {
        s.name: s
        for s in tree.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.decorator_list
    }
    methods = plain_methods(tree, path, root)  # "Class.name" -> the method
    words = {key: key.rsplit(".", 1)[-1] for key in [*functions, *methods]}
    mentions = {word: set() for word in words.values()}  # a word -> the candidates that name it
    parts = []  # (statement, the candidate it belongs to, or None)
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            for inner in statement.body:
                key = f"{statement.name}.{getattr(inner, 'name', '')}"
                parts.append((inner, key if key in methods else None))
            parts += [(n, None) for n in [*statement.bases, *statement.decorator_list]]
        else:
            parts.append((statement, statement.name if statement in functions.values() else None))
    for statement, owner in parts:
        for n in ast.walk(statement):
            if isinstance(n, ast.Call) and last(dotted(n.func)) in ("Fire", "globals", "locals"):
                return {}
            word = (
                n.id
                if isinstance(n, ast.Name)
                else n.attr
                if isinstance(n, ast.Attribute)
                else n.value
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
                else None
            )
            if word in mentions and (owner is None or word != words[owner]):
                mentions[word].add(owner)

    # what the importers say outside comments: a call commented out (`#     save_train_params(...)`) runs
    # nothing (SLAM-LLM's save_train_params, corpus 43)
    said = [re.sub(r"#[^\n]*", "", text) for text in importers]

    def imported(
        name,
    ):  # any file that names the module and the function (`import pkg.train as t; t.f()`), not a def of its own
        return any(re.search(rf"(?<!def )\b{re.escape(name)}\b", text) for text in said)

    elsewhere = Project.words_elsewhere(root, Path(path).resolve()) if methods else frozenset()
    dead, changed = set(), True
    while changed:
        changed = False
        for key, word in words.items():
            if key in dead or not mentions[word] <= dead:
                continue
            if word in elsewhere if key in methods else imported(word):
                continue
            dead.add(key)
            changed = True
    nodes = {**functions, **methods}
    return {key: (nodes[key].lineno, nodes[key].end_lineno) for key in dead}


def plain_methods(tree, path, root):
    """The methods of a module's own classes that only the module's code calls, as "Class.name" -> the method:
    not decorated, not a dunder, in a class whose bases are this module's classes of the same kind (or none,
    object, ABC), so that no framework calls them by name (nn.Module's forward, Lightning's hooks). MTTOD's
    runner methods nothing calls (corpus 27, seen). None when the repository is too large to read whole (a
    file past Project.pages' 400 could call them)."""
    if len(Project.pages(root, REPOSITORY_TEXTS)) >= 400:
        return {}
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}

    def plain(name, seen=()):
        node = classes.get(name)
        if node is None or name in seen or node.decorator_list:
            return False
        return all(
            dotted(b) in ("object", "ABC", "abc.ABC") or plain(dotted(b), (*seen, name))
            for b in node.bases
        )

    own = {name for name in classes if plain(name)}
    return {
        f"{name}.{m.name}": m
        for name in own
        for m in classes[name].body
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not m.decorator_list
        and not (m.name.startswith("__") and m.name.endswith("__"))
    }


def explain(code):
    if code is None:
        return "\n".join(
            f"{c}  {what}{' (preview)' * (c in PREVIEW)}" for c, (what, _, _, _) in RULES.items()
        )
    what, fix, anchor, why = RULES[code]
    return f"{code}: {what}\n\n{why}\n\nFix: {fix}.\nMore: {GUIDE}#{anchor}\n\n{measured(code)}"


def measured(code):
    """What --explain says of how often the rule was right in public, and whether it runs by default."""
    if code in UNMEASURED:
        return (
            "Measured: not yet; written since the newest never-seen set of public code (guides/doctor.md), "
            f"it is a preview rule until one measures it: run with --preview, `preview = true` or --select {code}."
        )
    if code not in MEASURED:
        return "Measured: no finding yet on the public code it had never seen (guides/doctor.md); runs by default."
    true, judged = MEASURED[code]
    said = f"Measured: right in {true} of {judged} findings ({true / judged:.2f}) on public code it had never seen"
    if code in PREVIEW:
        return (
            f"{said} (guides/doctor.md), under {STABLE}: a preview rule, run with --preview, "
            f"`preview = true` or --select {code}."
        )
    return f"{said} (guides/doctor.md); runs by default."


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one `error:` line and exit 2, not argparse's usage block
        print(f"error: {message}: ddp-doctor --help lists the options", file=sys.stderr)
        sys.exit(2)


def main(argv=None):
    p = Parser(
        prog="ddp-doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("files", nargs="*", help="Python files or directories to check")
    p.add_argument(
        "--explain",
        nargs="?",
        const="",
        metavar="CODE",
        help="the long form of a rule (or list all)",
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help="rewrite the mechanical findings in place (libcst: comments and formatting kept), then "
        "report what is left",
    )
    p.add_argument(
        "--diff", action="store_true", help="print --fix's changes as a unified diff, write nothing"
    )
    p.add_argument(
        "--select",
        metavar="CODES",
        help="report only these codes or prefixes (DDL1,DDL107); replaces [tool.ddp-doctor] select",
    )
    p.add_argument(
        "--ignore",
        metavar="CODES",
        help="never report these codes or prefixes; replaces [tool.ddp-doctor] ignore",
    )
    p.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        help="also run the preview rules, those right less often on public code (--explain marks them); "
        "replaces [tool.ddp-doctor] preview",
    )
    p.add_argument("--output-format", choices=doctor_output.FORMATS, default="text")
    p.add_argument(
        "--statistics", action="store_true", help="one line per code with its count, no findings"
    )
    p.add_argument("--version", action="version", version=f"ddp-doctor {__version__}")
    args = p.parse_args(argv)
    if args.explain is not None:
        code = args.explain.upper() or None
        if code is not None and code not in RULES:
            print(
                f"error: unknown code {args.explain!r}: --explain lists the codes", file=sys.stderr
            )
            return 2
        print(explain(code))
        return 0
    if not args.files:
        print("error: no file given: ddp-doctor train.py", file=sys.stderr)
        return 2
    try:
        command_line = {
            key: doctor_output.parse_prefixes(value, RULES, f"--{key}")
            for key, value in (("select", args.select), ("ignore", args.ignore))
            if value is not None
        }
        if args.preview is not None:
            command_line["preview"] = args.preview
    except doctor_output.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.fix or args.diff:
        try:
            import doctor_fix
        except ImportError as e:
            print(f"error: --fix and --diff need libcst ({e}): make install", file=sys.stderr)
            return 2
    unreadable, findings, changed = 0, [], 0
    for name in python_files(args.files):
        try:
            config = {**doctor_output.project_config(name, RULES)[0], **command_line}

            def check(text, name=name, config=config):
                chosen = config.get("select", []), config.get("ignore", [])
                held = frozenset() if config.get("preview") else PREVIEW
                return [
                    f
                    for f in check_source(text, name, neighbours=True)
                    if doctor_output.selected(f.code, *chosen, preview=held)
                ]

            read = read_source(name)
            source = read.text
            RULE_FAILURES.clear()
            found = check(source)
            for code, e in RULE_FAILURES:
                unreadable += 1
                print(
                    f"error: {name}: {code} failed on it ({internal_error(e)}), so its findings are "
                    "missing; the other rules ran: please report it with the file",
                    file=sys.stderr,
                )
            if args.fix or args.diff:
                try:
                    fixed, done = doctor_fix.fix_source(source, found, uses_accelerate(source))
                except (
                    Exception
                ) as e:  # libcst's parser or a rewrite it refuses: report, fix nothing
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    print(
                        f"error: {name}: cannot rewrite it ({first}); nothing written",
                        file=sys.stderr,
                    )
                    unreadable += 1
                    fixed, done = source, []
                changed += bool(done)
                if args.diff:
                    print(doctor_fix.unified_diff(name, source, fixed), end="")
                    continue
                if done:
                    write_atomically(read, fixed)
                    what = ", ".join(f"{line} {code}" for line, code in done)
                    print(f"fixed: {name}: {what}", file=sys.stderr)
                    found = check(fixed)
        except doctor_output.ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except (OSError, UnicodeError, SyntaxError, ValueError, RecursionError) as e:
            unreadable += 1
            print(f"error: {name}: {why_unchecked(e)}", file=sys.stderr)
            continue
        except Exception as e:  # noqa: BLE001 - doctor's own bug: one line, and the other files are checked
            unreadable += 1
            print(
                f"error: {name}: doctor failed on it ({internal_error(e)}); no findings for it: please "
                "report it with the file",
                file=sys.stderr,
            )
            continue
        findings += found
        if args.output_format == "text" and not args.statistics:
            print(
                doctor_output.render(found, RULES, GUIDE, "text", __version__), end="", flush=True
            )
    if args.statistics:
        print(doctor_output.statistics(findings, RULES), end="")
    elif args.output_format != "text" and not args.diff:
        print(doctor_output.render(findings, RULES, GUIDE, args.output_format, __version__), end="")
    if args.diff:
        return (
            2 if unreadable else (1 if changed else 0)
        )  # as ruff --diff: 1 when there is a change
    return 2 if unreadable else (1 if findings else 0)  # 2: a file could not be checked


def uses_accelerate(source):
    return builds_accelerator(list(ast.walk(ast.parse(source))))


def builds_accelerator(nodes):
    """Whether the module makes Hugging Face's Accelerator: `accelerate.Accelerator(...)`, or a bare
    `Accelerator(...)` in a module that imports accelerate. Not audiotools' `ml.Accelerator` (descript-audio-codec:
    its own DDP wrapper and GradScaler, which it unscales before clipping)."""
    imports = any(
        isinstance(n, ast.ImportFrom)
        and (n.module or "").split(".")[0] == "accelerate"
        or isinstance(n, ast.Import)
        and any(a.name.split(".")[0] == "accelerate" for a in n.names)
        for n in nodes
    )
    return any(
        isinstance(n, ast.Call)
        and last(dotted(n.func)) == "Accelerator"
        and (dotted(n.func).startswith("accelerate.") or "." not in dotted(n.func) and imports)
        for n in nodes
    )


def physical_lines(source):
    """The source's lines as Python numbers them: split at \\n, \\r\\n and \\r only (str.splitlines also
    splits at a form feed, which Python reads as whitespace, and every later line number was off by one)."""
    return re.split(r"\r\n|\r|\n", source)


class NotRegular(OSError):
    """A FIFO, socket or device named *.py: opening a FIFO waits for a writer, forever."""


@dataclass(frozen=True)
class Source:
    path: str
    text: str  # decoded as Python decodes it, newlines as they are in the file
    raw: bytes
    encoding: str  # tokenize's: 'utf-8-sig' for a BOM, a coding cookie's codec
    mtime_ns: int


def read_source(name):
    """A file as Python itself reads it (a BOM, a coding cookie), its bytes kept to compare before a write.
    Only regular files: anything else is refused before it is opened."""
    if not stat.S_ISREG(os.stat(name).st_mode):
        raise NotRegular(0, "not a regular file")
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped for a FIFO after the stat
            raise NotRegular(0, "not a regular file")
        raw = f.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return Source(name, raw.decode(encoding), raw, encoding, info.st_mtime_ns)


class ChangedSinceRead(OSError):
    pass


class CannotWrite(OSError):
    """The fix could not be written (a read-only directory, a full disk): the file is as it was."""


def write_atomically(read, text):
    """Replace a file whole with its fixed text, never harming anything else: the bytes are encoded as the file
    was (a BOM, a coding cookie's codec; newlines are the text's own), written to a new file of a random name
    created exclusively beside the target (a link planted there cannot redirect it), given the target's
    permissions, and renamed over the target; through a symbolic link the target is fixed and the link kept.
    A file that changed since it was read (an editor saved it during the fix) is left as it is: an error."""
    target = os.path.realpath(read.path)
    data = text.encode(read.encoding)
    info = os.stat(target)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.",
            suffix=".doctor-fix",
            dir=os.path.dirname(target),
        )
    except OSError as e:
        raise CannotWrite(
            e.errno, f"cannot write the fix beside it ({e.strerror}); nothing written"
        ) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), stat.S_IMODE(info.st_mode))
            try:
                os.fchown(
                    f.fileno(), info.st_uid, info.st_gid
                )  # root fixing a user's file keeps its owner
            except PermissionError:
                pass  # not root: the file was the user's own anyway
        with open(target, "rb") as f:  # as late as can be: the next step is the rename
            now, mtime = f.read(), os.fstat(f.fileno()).st_mtime_ns
        if now != read.raw or mtime != read.mtime_ns:
            raise ChangedSinceRead(0, "it changed since doctor read it; nothing written: run again")
        os.replace(tmp, target)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def why_unchecked(e):
    """One line on why a file could not be analysed, naming what to do."""
    if isinstance(e, (ChangedSinceRead, CannotWrite)):
        return e.strerror
    if isinstance(e, NotRegular):
        return "is not a regular file (a FIFO, socket or device): skipped, not opened"
    if isinstance(e, (OSError, UnicodeError)):
        return f"cannot read it ({getattr(e, 'strerror', None) or e}): pass a Python file"
    if isinstance(e, RecursionError):  # a valid file nested deeper than ast can walk
        return "is nested too deeply for Python's ast to analyse (a very long expression)"
    if isinstance(e, ValueError) or "null bytes" in str(getattr(e, "msg", "")):
        return "holds a null byte, so it is not Python source: pass the .py file"
    version = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    where = f"{e.lineno}:{e.offset or 0}: " if e.lineno else ""
    return (
        f"{where}not valid {version} ({e.msg}; parsed by {sys.executable}): fix the syntax, or "
        f"run doctor with the Python that runs the script"
    )


def python_files(names):
    """The files named, with directories expanded to their *.py files as flake8 does (hidden directories,
    __pycache__ and virtualenvs skipped)."""
    for name in names:
        path = Path(name)
        if not path.is_dir():
            yield name
            continue
        for file in sorted(path.rglob("*.py")):
            if not file.is_file():  # a FIFO or a socket named *.py: skipped, never opened
                continue
            parts = file.relative_to(path).parts[:-1]
            skipped = any(
                part.startswith(".")
                or part == "__pycache__"
                or (path.joinpath(*parts[: i + 1]) / "pyvenv.cfg").exists()
                for i, part in enumerate(parts)
            )
            if not skipped:
                yield str(file)


if __name__ == "__main__":
    sys.exit(main())
