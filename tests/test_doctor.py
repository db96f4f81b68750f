"""scripts/tools/doctor.py: every rule has a case it must catch and a correct neighbour it must leave alone; a
third-party-shaped script with planted mistakes gets a finding at each mistake's line; this project's own rungs
and examples are clean; bad input is one line and exit 2."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import doctor
import pytest

from conftest import ROOT

DOCTOR = [sys.executable, str(ROOT / "scripts" / "tools" / "doctor.py")]

# code: (a script that has the mistake, the same script done right)
CASES = {
    "DDL101": (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n",
        "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n",
    ),
    "DDL102": (
        "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        "import torch\nscaler = torch.amp.GradScaler('cuda')\n",
    ),
    "DDL103": (
        "import torch\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.nn.Linear(2, 2))\n",
    ),
    "DDL104": (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "s = DistributedSampler(ds)\nloader = DataLoader(ds, shuffle=True, sampler=s)\ns.set_epoch(0)\n",
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s)\ns.set_epoch(0)\n",
    ),
    "DDL105": (
        "from torch.utils.data import DataLoader, DistributedSampler\ndef train(loader):\n"
        "    for x in loader:\n        step(x)\nsampler = DistributedSampler(ds)\n"
        "loader = DataLoader(ds, sampler=sampler)\nfor epoch in range(3):\n    train(loader)\n",
        "from torch.utils.data import DataLoader, DistributedSampler\ndef train(loader):\n"
        "    for x in loader:\n        step(x)\nsampler = DistributedSampler(ds)\n"
        "loader = DataLoader(ds, sampler=sampler)\nfor epoch in range(3):\n"
        "    sampler.set_epoch(epoch)\n    train(loader)\n",
    ),
    "DDL106": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "if rank == 0:\n    torch.save(model.state_dict(), 'w.pt')\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "if rank == 0:\n    torch.save(model.module.state_dict(), 'w.pt')\n",
    ),
    "DDL107": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "torch.save(net.state_dict(), 'w.pt')\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "if dist.get_rank() == 0:\n    torch.save(net.state_dict(), 'w.pt')\ndist.destroy_process_group()\n",
    ),
    "DDL108": (
        "import torch.distributed as dist\nif rank == 0:\n    dist.all_reduce(t)\n    print(t)\n",
        "import torch.distributed as dist\ndist.all_reduce(t)\nif rank == 0:\n    print(t)\n",
    ),
    "DDL109": (
        "import torch\nstate = torch.load('ckpt.pt', weights_only=False)\n",
        "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')\n",
    ),
    "DDL110": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\nloss = f(x)\nloss.backward()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\nloss = f(x)\n"
        "accelerator.backward(loss)\n",
    ),
    "DDL111": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\nscheduler = StepLR(opt, 1)\n"
        "model, opt, scheduler = accelerator.prepare(model, opt, scheduler)\n"
        "for epoch in range(3):\n    train(model)\n    scheduler.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\nscheduler = StepLR(opt, 1)\n"
        "model, opt, scheduler = accelerator.prepare(model, opt, scheduler)\n"
        "for epoch in range(3):\n    for batch in train_loader:\n        step(batch)\n"
        "        scheduler.step()\n",
    ),
    "DDL112": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net, find_unused_parameters=True)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n",
    ),
    "DDL113": (
        "import torch.distributed as dist\ndist.init_process_group('gloo')\ntrain()\n",
        "import torch.distributed as dist\ndist.init_process_group('gloo')\ntrain()\n"
        "dist.destroy_process_group()\n",
    ),
    "DDL114": (
        "from torch.utils.data import DistributedSampler\nsampler = DistributedSampler(ds)\n"
        "sampler.set_epoch(0)\nloss = total / len(test_loader.dataset)\n",
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "sampler = DistributedSampler(ds)\nsampler.set_epoch(0)\ndist.all_reduce(total)\n"
        "loss = total / len(test_loader.dataset)\n",
    ),
    "DDL115": (
        "import torch\nmodel.no_sync()\nloss.backward()\ntorch.autocast('cuda', dtype=torch.bfloat16)\n",
        "import torch\nwith model.no_sync():\n    loss.backward()\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n",
    ),
    "DDL116": (
        "import torch\nfrom torch.utils.data import random_split\nimport torch.distributed as dist\n"
        "dist.init_process_group('gloo')\ntrain, test = random_split(data, [0.8, 0.2])\n"
        "dist.destroy_process_group()\n",
        "import torch\nfrom torch.utils.data import random_split\nimport torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "train, test = random_split(data, [0.8, 0.2], generator=torch.Generator().manual_seed(0))\n"
        "dist.destroy_process_group()\n",
    ),
    "DDL117": (
        "import os\nimport torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "rank = int(os.environ['RANK'])\ntorch.cuda.set_device(rank)\nmodel = Net().to(rank)\n"
        "dist.destroy_process_group()\n",
        "import os\nimport torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "rank = int(os.environ['RANK'])\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "torch.cuda.set_device(local_rank)\nmodel = Net().to(local_rank)\ndist.destroy_process_group()\n",
    ),
    "DDL118": (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "def evaluate(model, loader):\n    for x, y in loader:\n        with torch.no_grad():\n"
        "            pred = model(x).argmax(-1)\n        pred, y = accelerator.gather((pred, y))\n"
        "        metric.add_batch(predictions=pred, references=y)\n",
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "def evaluate(model, loader):\n    for x, y in loader:\n        with torch.no_grad():\n"
        "            pred = model(x).argmax(-1)\n        pred, y = accelerator.gather_for_metrics((pred, y))\n"
        "        metric.add_batch(predictions=pred, references=y)\n",
    ),
    "DDL119": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "for step, batch in enumerate(loader):\n    accelerator.backward(model(batch).loss / 4)\n"
        "    if step % 4 == 3:\n        optimizer.step()\n        optimizer.zero_grad()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "for step, batch in enumerate(loader):\n    with accelerator.accumulate(model):\n"
        "        accelerator.backward(model(batch).loss)\n        optimizer.step()\n"
        "        optimizer.zero_grad()\n",
    ),
    "DDL120": (
        "import torch\ntorch.save(model, 'model.pt')\n",
        "import torch\ntorch.save(model.state_dict(), 'model.pt')\n",
    ),
    "DDL121": (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "accelerator.backward(loss)\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "accelerator.backward(loss)\naccelerator.clip_grad_norm_(model.parameters(), 1.0)\n",
    ),
    "DDL122": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "if dist.get_rank() == 0:\n    torch.save(model.module.state_dict(), args.save)\n"
        "model.module.load_state_dict(torch.load(args.save))\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "if dist.get_rank() == 0:\n    torch.save(model.module.state_dict(), args.save)\n"
        "dist.barrier()\nmodel.module.load_state_dict(torch.load(args.save))\n"
        "dist.destroy_process_group()\n",
    ),
    "DDL123": (
        "import torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x, y in loader:\n"
        "    F.cross_entropy(model(x), y, reduction='sum').backward()\n",
        "import torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x, y in loader:\n    F.cross_entropy(model(x), y).backward()\n",
    ),
    "DDL125": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nout = model.generate(prompt)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nout = model.module.generate(prompt)\nmodel.train()\n",
    ),
    "DDL126": (
        "import torch\nimport torch.distributed as dist\n"
        "torch.cuda.set_device(dist.get_rank() % 8)\n",
        "import torch\nimport torch.distributed as dist\n"
        "torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())\n",
    ),
    "DDL127": (
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "dist.init_process_group()\nval_sampler = DistributedSampler(val_set, shuffle=False)\n"
        "dist.all_reduce(correct)\n",
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler, Subset\n"
        "dist.init_process_group()\nval_shard = Subset(val_set, range(rank, len(val_set), world))\n"
        "dist.all_reduce(correct)\n",
    ),
    "DDL128": (
        "import torch.distributed as dist\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "dist.init_process_group()\nwriter = SummaryWriter('runs')\n",
        "import torch.distributed as dist\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "dist.init_process_group()\nif dist.get_rank() == 0:\n    writer = SummaryWriter('runs')\n",
    ),
    "DDL132": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "model.load_state_dict(torch.load(args.resume))\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "model.load_state_dict(torch.load(args.resume, map_location=device))\n"
        "if dist.get_rank() == 0:\n    print(torch.load('best.pt'))\n"
        "backbone.load_state_dict(torch.load(args.pretrained))\n"
        "if args.gpu is None:\n    ckpt = torch.load(args.resume)\n"
        "else:\n    ckpt = torch.load(args.resume, map_location=f'cuda:{args.gpu}')\n",
    ),
    "DDL133": (
        "import torch.distributed as dist\ndef init_distributed():\n    try:\n"
        "        dist.init_process_group('nccl')\n    except Exception as e:\n"
        "        print(f'distributed training not available {e}')\n        return 1, 0\n"
        "    return dist.get_world_size(), dist.get_rank()\n",
        "import sys\nimport torch.distributed as dist\ndef init_distributed():\n    try:\n"
        "        dist.init_process_group('nccl')\n    except Exception as e:\n"
        "        print(f'error: cannot join the process group: {e}')\n        sys.exit(2)\n"
        "    try:\n        dist.init_process_group('gloo')\n    except RuntimeError:\n"
        "        log.exception('init')\n        raise\n"
        "    try:\n        dist.init_process_group('gloo')\n    except KeyError:\n        pass\n"
        "    return dist.get_world_size(), dist.get_rank()\n",
    ),
    "DDL134": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "for x, y in loader:\n    with torch.autocast('cuda'):\n        loss = model(x, y)\n"
        "        if torch.isnan(loss):\n            continue\n    loss.backward()\n    opt.step()\n",
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "for x, y in loader:\n    loss = model(x, y)\n    bad = (~torch.isfinite(loss)).float()\n"
        "    dist.all_reduce(bad, op=dist.ReduceOp.MAX)\n    if bad.item():\n        continue\n"
        "    loss.backward()\n    opt.step()\n"
        "for x in val_loader:\n    if torch.isnan(x).any():\n        continue\n    print(model(x))\n",
    ),
    "DDL135": (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor epoch in range(9):\n    train(model)\n"
        "    if dist.get_rank() == 0:\n        scheduler.step()\n        save(model)\n",
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor epoch in range(9):\n    train(model)\n    scheduler.step()\n"
        "    if dist.get_rank() == 0:\n        save(model)\n        print(scheduler.get_last_lr())\n",
    ),
    "DDL136": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "def train(model, loader, opt):\n    bare = model.module\n    for x, y in loader:\n"
        "        loss = loss_fn(bare.encoder(x), y)\n        loss.backward()\n        opt.step()\n",
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "def train(model, loader, opt):\n    for x, y in loader:\n        out = model(x)\n"
        "        loss = model.module.get_loss_acc(out, y)\n        loss.backward()\n        opt.step()\n"
        "        if dist.get_rank() == 0:\n            print(model.module.encoder(x[:1]))\n"
        "        with torch.no_grad():\n            model.module(x)\n",
    ),
    "DDL137": (
        "import os\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "if not os.path.exists(out):\n    os.makedirs(out)\n",
        "import os\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "os.makedirs(out, exist_ok=True)\nos.makedirs(f'{out}/rank{dist.get_rank()}')\n"
        "if dist.get_rank() == 0:\n    os.mkdir(run_dir)\ntry:\n    os.mkdir(lock)\nexcept FileExistsError:\n"
        "    pass\n",
    ),
    "DDL138": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "accelerator.even_batches = False\nfor batch in loader:\n    accelerator.backward(model(batch))\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "for batch in loader:\n    accelerator.backward(model(batch))\n"
        "accelerator.even_batches = True\n",
    ),
    "DDL139": (
        "import torch.distributed as dist\nfrom torchvision import datasets\ndist.init_process_group()\n"
        "train_set = datasets.CIFAR10('./data', train=True, download=True)\n",
        "import torch.distributed as dist\nfrom torchvision import datasets\ndist.init_process_group()\n"
        "if dist.get_rank() == 0:\n    datasets.CIFAR10('./data', download=True)\ndist.barrier()\n"
        "train_set = datasets.CIFAR10('./data', train=True)\n"
        "with FileLock('data.lock'):\n    test_set = datasets.MNIST('./data', download=True)\n",
    ),
    "DDL140": (
        "import shutil\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "shutil.rmtree(save_dir, ignore_errors=True)\nos.makedirs(save_dir, exist_ok=True)\n",
        "import shutil\nimport tempfile\nimport torch.distributed as dist\ndist.init_process_group()\n"
        "if dist.get_rank() == 0:\n    shutil.rmtree(save_dir, ignore_errors=True)\ndist.barrier()\n"
        "tmp_dir = tempfile.mkdtemp()\nshutil.rmtree(tmp_dir)\n"
        "shutil.rmtree(f'{save_dir}/rank{dist.get_rank()}')\n",
    ),
    "DDL141": (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "dist.init_process_group('nccl', world_size=torch.cuda.device_count(), rank=local_rank)\n",
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def worker(rank, world_size):\n"
        "    dist.init_process_group('nccl', world_size=world_size, rank=rank)\n"
        "world_size = torch.cuda.device_count()\n"
        "mp.spawn(worker, args=(world_size,), nprocs=world_size)\n",
    ),
    "DDL142": (
        "import random\nimport torch\nimport torch.distributed as dist\nfrom torchvision import transforms\n"
        "dist.init_process_group()\ntorch.manual_seed(SEED)\nrandom.seed(SEED)\n"
        "aug = transforms.Compose([transforms.RandomResizedCrop(32), transforms.AutoAugment()])\n",
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "from torchvision import transforms\n"
        "def worker(rank, world):\n    dist.init_process_group('gloo', rank=rank, world_size=world)\n"
        "    torch.manual_seed(SEED)  # the same initial weights\n    model = Net()\n"
        "    torch.manual_seed(SEED + rank)  # every rank its own augmentations\n"
        "    aug = transforms.RandomResizedCrop(32)\n"
        "    split = random_split(ds, [9, 1], generator=torch.Generator().manual_seed(0))\n"
        "if __name__ == '__main__':\n    torch.manual_seed(SEED)\n    mp.spawn(worker, args=(2,), nprocs=2)\n",
    ),
    "DDL143": (
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch.distributed as dist\n"
        "dist.init_process_group('nccl')\n",
        "import os\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0,1,2,3'\nos.environ['CUDA_VISIBLE_DEVICES'] = args.gpus\n"
        "def worker(rank):\n    os.environ['CUDA_VISIBLE_DEVICES'] = str(rank)\n"
        "    dist.init_process_group('nccl', rank=rank, world_size=4)\n"
        "mp.spawn(worker, nprocs=4)\n",
    ),
    "DDL131": (
        "import torch\nimport torch.distributed as dist\nfrom timm.utils import ModelEma\n"
        "torch.manual_seed(args.seed + dist.get_rank())\nmodel = Net().cuda()\nema = ModelEma(model)\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n",
        "import torch\nimport torch.distributed as dist\nfrom timm.utils import ModelEma\n"
        "torch.manual_seed(args.seed + dist.get_rank())\nmodel = Net().cuda()\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\nema = ModelEma(model.module)\n",
    ),
    "DDL130": (
        "import contextlib\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "for i, (x, y) in enumerate(loader):\n    loss = F.cross_entropy(model(x), y)\n"
        "    with model.no_sync() if (i + 1) % 4 else contextlib.nullcontext():\n"
        "        (loss / 4).backward()\n",
        "import contextlib\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "for i, (x, y) in enumerate(loader):\n"
        "    with model.no_sync() if (i + 1) % 4 else contextlib.nullcontext():\n"
        "        loss = F.cross_entropy(model(x), y)\n        (loss / 4).backward()\n",
    ),
    "DDL129": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "for p in model.backbone.parameters():\n    p.requires_grad = False\nmodel = DDP(model)\n"
        "for p in model.module.backbone.parameters():\n    p.requires_grad = True\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(model)\nfor p in model.module.backbone.parameters():\n    p.requires_grad = False\n"
        "for p in model.module.backbone.parameters():\n    p.requires_grad = True\n",
    ),
    "DDL124": (
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "dist.init_process_group()\ntest_sampler = DistributedSampler(test_set, shuffle=False)\n"
        "test_loss = sum(loss_fn(model(x), y).item() for x, y in test_loader)\n"
        "if dist.get_rank() == 0:\n    print(test_loss)\ndist.destroy_process_group()\n",
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "dist.init_process_group()\ntest_sampler = DistributedSampler(test_set, shuffle=False)\n"
        "test_loss = sum(loss_fn(model(x), y) for x, y in test_loader)\ndist.all_reduce(test_loss)\n"
        "if dist.get_rank() == 0:\n    print(test_loss)\ndist.destroy_process_group()\n",
    ),
    "DDL144": (
        "import torch.distributed as dist\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "dist.init_process_group()\ndef train(loader):\n    if dist.get_rank() == 0:\n"
        "        writer = SummaryWriter()\n    for step, loss in enumerate(loader):\n"
        "        writer.add_scalar('loss', loss, step)\ndist.destroy_process_group()\n",
        "import torch.distributed as dist\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "dist.init_process_group()\ndef train(loader):\n"
        "    writer = SummaryWriter() if dist.get_rank() == 0 else None\n"
        "    for step, loss in enumerate(loader):\n        if writer is not None:\n"
        "            writer.add_scalar('loss', loss, step)\ndist.destroy_process_group()\n",
    ),
    "DDL145": (
        "from accelerate import Accelerator\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "accelerator = Accelerator()\nmodel = DDP(model.to(accelerator.device))\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\n",
    ),
    "DDL146": (
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "if torch.cuda.device_count() > 1:\n    dist.init_process_group('nccl')\n"
        "    model = DistributedDataParallel(model)\n",
        "import os\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "if int(os.environ.get('WORLD_SIZE', 1)) > 1:\n    dist.init_process_group('nccl')\n"
        "    model = DistributedDataParallel(model)\n",
    ),
    "DDL147": (
        "import torch.distributed as dist\ndist.init_process_group('nccl')\ndef evaluate(x):\n"
        "    group = dist.new_group([0, 1])\n    dist.all_reduce(x, group=group)\n"
        "for step in range(100):\n    evaluate(x)\ndist.destroy_process_group()\n",
        "import torch.distributed as dist\ndist.init_process_group('nccl')\ngroup = dist.new_group([0, 1])\n"
        "def evaluate(x):\n    dist.all_reduce(x, group=group)\n"
        "for step in range(100):\n    evaluate(x)\ndist.destroy_process_group()\n",
    ),
    "DDL151": (
        "import os\nimport torch.distributed as dist\nif 'WORLD_SIZE' in os.environ:\n"
        "    dist.init_process_group('nccl')\nfor epoch in range(9):\n    train(epoch)\n    dist.barrier()\n"
        "if dist.is_initialized():\n    dist.destroy_process_group()\n",
        "import os\nimport torch.distributed as dist\nif 'WORLD_SIZE' in os.environ:\n"
        "    dist.init_process_group('nccl')\nfor epoch in range(9):\n    train(epoch)\n"
        "    if dist.is_initialized():\n        dist.barrier()\n"
        "if dist.is_initialized():\n    dist.destroy_process_group()\n",
    ),
    "DDL150": (
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "def main(rank, world_size):\n    dist.init_process_group('nccl', rank=rank, world_size=world_size)\n"
        "    model = DistributedDataParallel(Net().cuda(), device_ids=[rank])\n"
        "    dist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "def main(rank, world_size):\n    dist.init_process_group('nccl', rank=rank, world_size=world_size)\n"
        "    torch.cuda.set_device(rank)\n"
        "    model = DistributedDataParallel(Net().cuda(), device_ids=[rank])\n"
        "    dist.destroy_process_group()\n",
    ),
    "DDL149": (
        "import random\nimport torch\nimport torch.multiprocessing as mp\n"
        "def worker(rank, args):\n    train(rank, args)\n"
        "def main(args):\n    random.seed(args.seed)\n    torch.manual_seed(args.seed)\n"
        "    mp.spawn(worker, args=(args,), nprocs=2)\n",
        "import random\nimport torch\nimport torch.multiprocessing as mp\n"
        "def worker(rank, args):\n    random.seed(args.seed)\n    torch.manual_seed(args.seed)\n"
        "    train(rank, args)\n"
        "def main(args):\n    mp.spawn(worker, args=(args,), nprocs=2)\n",
    ),
    "DDL152": (
        "import torch\nfrom accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
        "accelerator = Accelerator()\nset_seed(args.seed)\nfor x in loader:\n"
        "    noise = torch.randn_like(x)\n    accelerator.backward(model(x + noise).sum())\n",
        "import torch\nfrom accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
        "accelerator = Accelerator()\nset_seed(args.seed, device_specific=True)\nfor x in loader:\n"
        "    noise = torch.randn_like(x)\n    accelerator.backward(model(x + noise).sum())\n",
    ),
    "DDL153": (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(net)\nscaler = torch.amp.GradScaler('cuda')\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
        "model = FSDP(net)\nscaler = ShardedGradScaler()\n",
    ),
    "DDL154": (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(net)\nstate = model.module.state_dict()\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "from torch.distributed.fsdp import FullStateDictConfig, StateDictType\n"
        "model = FSDP(net)\nconfig = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)\n"
        "with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):\n"
        "    state = model.state_dict()\n",
    ),
    "DDL155": (
        "from accelerate import Accelerator\nfrom transformers import get_scheduler\n"
        "accelerator = Accelerator()\n"
        "lr_scheduler = get_scheduler('cosine', optimizer, num_warmup_steps=100,\n"
        "    num_training_steps=args.max_train_steps)\n"
        "model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)\n",
        "from accelerate import Accelerator\nfrom transformers import get_scheduler\n"
        "accelerator = Accelerator()\n"
        "lr_scheduler = get_scheduler('cosine', optimizer, num_warmup_steps=100 * accelerator.num_processes,\n"
        "    num_training_steps=args.max_train_steps * accelerator.num_processes)\n"
        "model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)\n",
    ),
    "DDL156": (
        "import torch\nfrom torch.utils.data import DataLoader, RandomSampler\n"
        "torch.distributed.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(net)\n"
        "loader = DataLoader(ds, sampler=RandomSampler(ds), batch_size=32)\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(net)\n"
        "loader = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=32)\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n",
    ),
    "DDL157": (
        "import torch\nfrom torch import nn\ntorch.distributed.init_process_group('nccl')\n"
        "model = torch.nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\n"
        "if torch.distributed.get_rank() == 0:\n    model.eval()\n    print(model(x))\n",
        "import torch\nfrom torch import nn\ntorch.distributed.init_process_group('nccl')\n"
        "model = torch.nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\n"
        "if torch.distributed.get_rank() == 0:\n    model.module.eval()\n    print(model.module(x))\n",
    ),
    "DDL158": (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(net)\nloss.backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(net)\nloss.backward()\nmodel.clip_grad_norm_(1.0)\n",
    ),
    "DDL159": (
        "import torch\nfrom torch.utils.data import DataLoader\ntorch.distributed.init_process_group('nccl')\n"
        "model = torch.nn.parallel.DistributedDataParallel(net)\n"
        "val_loader = DataLoader(val_set, batch_size=64, shuffle=False)\nvalidate(val_loader, model)\n",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(net)\n"
        "val_loader = DataLoader(val_set, batch_size=64, sampler=DistributedSampler(val_set, shuffle=False))\n"
        "validate(val_loader, model)\n",
    ),
    "DDL160": (
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\n"
        "loader = DataLoader(train_set, sampler=DistributedSampler(train_set))\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n"
        "loader = DataLoader(train_set, sampler=DistributedSampler(train_set))\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n",
    ),
    "DDL161": (
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\n"
        "sampler = DistributedSampler(test_set, shuffle=False, drop_last=True)\n"
        "test_loader = DataLoader(test_set, sampler=sampler)\n",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler, Subset\n"
        "torch.distributed.init_process_group('nccl')\n"
        "sampler = DistributedSampler(train_set, drop_last=True)\n"
        "rank, world_size = torch.distributed.get_rank(), torch.distributed.get_world_size()\n"
        "test_loader = DataLoader(Subset(test_set, range(rank, len(test_set), world_size)))\n",
    ),
    "DDL162": (
        "import lightning as L\nclass Net(L.LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        self.log('val_loss', self.loss(batch), on_epoch=True)\n"
        "trainer = L.Trainer(devices=4, strategy='ddp')\n",
        "import lightning as L\nclass Net(L.LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n"
        "        self.log('val_loss', self.loss(batch), on_epoch=True, sync_dist=True)\n"
        "        self.log('val_acc', self.val_acc)\n"
        "trainer = L.Trainer(devices=4, strategy='ddp')\n",
    ),
    "DDL198": (
        "import os\nimport torch\nimport torch.distributed as dist\ndef init_distributed_mode(args):\n"
        "    if 'RANK' in os.environ and 'WORLD_SIZE' in os.environ:\n"
        "        args.rank = int(os.environ['RANK'])\n        args.world_size = int(os.environ['WORLD_SIZE'])\n"
        "    elif 'SLURM_PROCID' in os.environ:\n        args.rank = int(os.environ['SLURM_PROCID'])\n"
        "    else:\n        args.distributed = False\n        return\n"
        "    dist.init_process_group('nccl', world_size=args.world_size, rank=args.rank)\n",
        "import os\nimport torch\nimport torch.distributed as dist\ndef init_distributed_mode(args):\n"
        "    if 'RANK' in os.environ and 'WORLD_SIZE' in os.environ:\n"
        "        args.rank = int(os.environ['RANK'])\n        args.world_size = int(os.environ['WORLD_SIZE'])\n"
        "    elif 'SLURM_PROCID' in os.environ:\n        args.rank = int(os.environ['SLURM_PROCID'])\n"
        "        args.world_size = int(os.environ['SLURM_NTASKS'])\n"
        "    else:\n        args.distributed = False\n        return\n"
        "    dist.init_process_group('nccl', world_size=args.world_size, rank=args.rank)\n",
    ),
    "DDL197": (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "class Trainer:\n    def __init__(self, model):\n        self.model = model\n"
        "        self.rf = RectifiedFlow(self.model)\n"
        "    def setup(self, rank):\n        dist.init_process_group('nccl')\n"
        "        self.model = DDP(self.model, device_ids=[rank])\n"
        "    def step(self, x):\n        loss = self.rf.forward_pass(x)\n        loss.backward()\n",
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "class Trainer:\n    def __init__(self, model):\n        self.model = model\n"
        "    def setup(self, rank):\n        dist.init_process_group('nccl')\n"
        "        self.model = DDP(self.model, device_ids=[rank])\n"
        "        self.rf = RectifiedFlow(self.model)\n"
        "    def step(self, x):\n        loss = self.rf.forward_pass(x)\n        loss.backward()\n",
    ),
    "DDL196": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x in loader:\n    out = model(x)\n"
        "    if out.numel() == 0:\n        loss = torch.tensor(0.0, requires_grad=True)\n"
        "    else:\n        loss = out.mean()\n    loss.backward()\n    optimizer.step()\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x in loader:\n    out = model(x)\n"
        "    if out.numel() == 0:\n        loss = out.sum() * 0\n"
        "    else:\n        loss = out.mean()\n    loss.backward()\n    optimizer.step()\n",
    ),
    "DDL195": (
        "import math\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "num_epochs = math.ceil(args.num_iters / len(train_dataloader))\n"
        "model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)\n"
        "for epoch in range(num_epochs):\n    for batch in train_dataloader:\n"
        "        accelerator.backward(model(batch).mean())\n        optimizer.step()\n",
        "import math\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "num_epochs = math.ceil(args.num_iters / len(train_dataloader))\n"
        "model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)\n"
        "num_epochs = math.ceil(args.num_iters / len(train_dataloader))\n"
        "for epoch in range(num_epochs):\n    for batch in train_dataloader:\n"
        "        accelerator.backward(model(batch).mean())\n        optimizer.step()\n",
    ),
    "DDL194": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)\n"
        "for step, batch in enumerate(loader):\n    accelerator.backward(unet(batch).mean())\n"
        "    optimizer.step()\n    ema.step(unet.parameters())\n"
        "    if step % 500 == 0 and accelerator.is_main_process:\n"
        "        ema.copy_to(unet.parameters())\n        save(unet)\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)\n"
        "for step, batch in enumerate(loader):\n    accelerator.backward(unet(batch).mean())\n"
        "    optimizer.step()\n    ema.step(unet.parameters())\n"
        "    if step % 500 == 0 and accelerator.is_main_process:\n        ema.store(unet.parameters())\n"
        "        ema.copy_to(unet.parameters())\n        save(unet)\n        ema.restore(unet.parameters())\n",
    ),
    "DDL193": (
        "import random\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "class EndlessSampler:\n    def __init__(self, dataset):\n        self.order = list(range(len(dataset)))\n"
        "    def __iter__(self):\n        while True:\n            random.shuffle(self.order)\n"
        "            yield from self.order\n"
        "accelerator = Accelerator()\n"
        "loader = DataLoader(data, batch_size=8, sampler=EndlessSampler(data))\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
        "import random\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\n"
        "class EndlessSampler:\n    def __init__(self, dataset):\n        self.order = list(range(len(dataset)))\n"
        "    def __iter__(self):\n        while True:\n            random.shuffle(self.order)\n"
        "            yield from self.order\n"
        "from accelerate.utils import set_seed\nset_seed(0)\naccelerator = Accelerator()\n"
        "loader = DataLoader(data, batch_size=8, sampler=EndlessSampler(data))\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
    ),
    "DDL192": (
        "import torch.distributed as dist\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "dist.init_process_group('nccl')\nmodel = FSDP(net)\n"
        "for step, (x, y) in enumerate(loader):\n    (model(x) - y).pow(2).mean().backward()\n"
        "    if (step + 1) % 4 == 0:\n        optimizer.step()\n        optimizer.zero_grad()\n"
        "dist.destroy_process_group()\n",
        "import contextlib\nimport torch.distributed as dist\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "dist.init_process_group('nccl')\nmodel = FSDP(net)\n"
        "for step, (x, y) in enumerate(loader):\n    last = (step + 1) % 4 == 0\n"
        "    with contextlib.nullcontext() if last else model.no_sync():\n"
        "        (model(x) - y).pow(2).mean().backward()\n"
        "    if last:\n        optimizer.step()\n        optimizer.zero_grad()\n"
        "dist.destroy_process_group()\n",
    ),
    "DDL191": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for batch in loader:\n    loss = model(batch) / accelerator.num_process\n"
        "    accelerator.backward(loss)\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for batch in loader:\n    loss = model(batch) / accelerator.num_processes\n"
        "    accelerator.backward(loss)\n",
    ),
    "DDL190": (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, loader = accelerator.prepare(model, loader)\nfor batch in loader:\n"
        "    predictions = model(batch['x']).argmax(-1)\n"
        "    labels = accelerator.gather(batch['y'])\n    metric.add_batch(predictions, labels)\n",
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, loader = accelerator.prepare(model, loader)\nfor batch in loader:\n"
        "    predictions = model(batch['x']).argmax(-1)\n"
        "    predictions, labels = accelerator.gather_for_metrics((predictions, batch['y']))\n"
        "    metric.add_batch(predictions, labels)\n",
    ),
    "DDL189": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "model = Net().to(local_rank)\n"
        "torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])\n"
        "for x in loader:\n    model(x).sum().backward()\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "model = Net().to(local_rank)\n"
        "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])\n"
        "for x in loader:\n    model(x).sum().backward()\ndist.destroy_process_group()\n",
    ),
    "DDL188": (
        "import os\nimport time\nimport torch\nimport torch.distributed as dist\n"
        "dist.init_process_group('nccl')\nout = os.path.join('runs', time.strftime('%Y-%m-%d-%H-%M'))\n"
        "if dist.get_rank() == 0:\n    os.makedirs(out)\ndist.barrier()\n"
        "log = open(os.path.join(out, 'train.log'), 'a')\ndist.destroy_process_group()\n",
        "import os\nimport time\nimport torch\nimport torch.distributed as dist\n"
        "dist.init_process_group('nccl')\nstamp = [time.strftime('%Y-%m-%d-%H-%M')]\n"
        "dist.broadcast_object_list(stamp, src=0)\nout = os.path.join('runs', stamp[0])\n"
        "if dist.get_rank() == 0:\n    os.makedirs(out)\ndist.barrier()\n"
        "log = open(os.path.join(out, 'train.log'), 'a')\ndist.destroy_process_group()\n",
    ),
    "DDL163": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "torch.distributed.init_process_group('nccl')\nmodel = DDP(net)\n"
        "def save(path):\n    torch.save(model.module.state_dict(), path)\n"
        "def load(path):\n    model.load_state_dict(torch.load(path, map_location='cpu'))\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "torch.distributed.init_process_group('nccl')\nmodel = DDP(net)\n"
        "def save(path):\n    torch.save(model.module.state_dict(), path)\n"
        "def load(path):\n    model.module.load_state_dict(torch.load(path, map_location='cpu'))\n",
    ),
    "DDL164": (
        "import torch\nfrom torch.utils.data import DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\nrank = torch.distributed.get_rank()\n"
        "sampler = DistributedSampler(train_set, shuffle=True, seed=42 + rank)\n",
        "import torch\nfrom torch.utils.data import DistributedSampler\n"
        "torch.distributed.init_process_group('nccl')\nrank = torch.distributed.get_rank()\n"
        "sampler = DistributedSampler(train_set, shuffle=True, seed=42)\n"
        "eval_sampler = DistributedSampler(val_set, shuffle=False, seed=42 + rank)\n",
    ),
    "DDL165": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "gen, opt_g, loader = accelerator.prepare(gen, opt_g, loader)\nfor x in loader:\n"
        "    accelerator.backward(disc(gen(x)).mean())\n    opt_d.step()\n    opt_g.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "gen, disc, opt_g, opt_d, loader = accelerator.prepare(gen, disc, opt_g, opt_d, loader)\n"
        "for x in loader:\n    accelerator.backward(disc(gen(x)).mean())\n    opt_d.step()\n"
        "    opt_g.step()\n",
    ),
    "DDL166": (
        "import os\nimport torch.distributed as dist\n"
        "def ddp_setup():\n    os.environ['MASTER_ADDR'] = 'localhost'\n"
        "    os.environ['MASTER_PORT'] = '12355'\n    dist.init_process_group('nccl')\n"
        "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n",
        "import os\nimport torch.distributed as dist\n"
        "def ddp_setup():\n    os.environ.setdefault('MASTER_PORT', '12355')  # torchrun's wins\n"
        "    dist.init_process_group('nccl')\n"
        "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n",
    ),
    "DDL167": (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x, y in loader:\n    loss = loss_fn(model(x), y) / dist.get_world_size()\n"
        "    loss.backward()\n    optimizer.step()\n",
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(net)\nfor x, y in loader:\n    loss = loss_fn(model(x), y)  # DDP averages\n"
        "    loss.backward()\n    optimizer.step()\n"
        "    shown = loss.detach() / dist.get_world_size()\n",
    ),
    "DDL168": (
        "import torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def cleanup():\n    dist.destroy_process_group()\n"
        "def main(rank, world):\n    dist.init_process_group('gloo', rank=rank, world_size=world)\n"
        "    train(rank)\n"
        "if __name__ == '__main__':\n    mp.spawn(main, args=(2,), nprocs=2)\n    cleanup()\n",
        "import torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def cleanup():\n    dist.destroy_process_group()\n"
        "def main(rank, world):\n    dist.init_process_group('gloo', rank=rank, world_size=world)\n"
        "    train(rank)\n    cleanup()  # in each worker, which joined\n"
        "if __name__ == '__main__':\n    mp.spawn(main, args=(2,), nprocs=2)\n",
    ),
    "DDL169": (
        "import torch.distributed as dist\n"
        "for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n"
        "    total_loss = loss.detach()\n    dist.all_reduce(total_loss)\n"
        "    if dist.get_rank() == 0:\n        print('loss', total_loss.item())\n",
        "import torch.distributed as dist\n"
        "for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n"
        "    total_loss = loss.detach()\n    dist.all_reduce(total_loss)\n"
        "    if dist.get_rank() == 0:\n        print('loss', total_loss.item() / dist.get_world_size())\n",
    ),
    "DDL170": (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(Net().cuda())\nmodel = Net().cuda()  # made again: the wrapped one is left behind\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n",
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = Net().cuda()\nmodel = DDP(model)\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\nmodel = model.module\n",
    ),
    "DDL187": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "for epoch in range(10):\n    loss = train_one_epoch(model)\n"
        "    if dist.get_rank() == 0:\n        runner.save_parameters(f'epoch{epoch}')\n"
        "    if loss < best:\n        best = loss\n        runner.save_parameters('best')\n"
        "dist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "for epoch in range(10):\n    loss = train_one_epoch(model)\n"
        "    if dist.get_rank() == 0:\n        runner.save_parameters(f'epoch{epoch}')\n"
        "    if loss < best and dist.get_rank() == 0:\n        best = loss\n"
        "        runner.save_parameters('best')\ndist.destroy_process_group()\n",
    ),
    "DDL186": (
        "import torch\nimport torch.distributed as dist\nfrom collections import OrderedDict\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group('nccl')\n\n\n"
        "def update_ema(ema, model, decay=0.999):\n    ema_params = OrderedDict(ema.named_parameters())\n"
        "    for name, param in model.named_parameters():\n        ema_params[name].mul_(decay)\n\n\n"
        "model = DDP(net)\nfor x in loader:\n    model(x).sum().backward()\n    update_ema(ema, model)\n"
        "dist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\nfrom collections import OrderedDict\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group('nccl')\n\n\n"
        "def update_ema(ema, model, decay=0.999):\n    ema_params = OrderedDict(ema.named_parameters())\n"
        "    for name, param in model.named_parameters():\n        ema_params[name].mul_(decay)\n\n\n"
        "model = DDP(net)\nfor x in loader:\n    model(x).sum().backward()\n"
        "    update_ema(ema, model.module)\ndist.destroy_process_group()\n",
    ),
    "DDL185": (
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n        optimizer.zero_grad()\n"
        "        accelerator.backward(model(batch))\n        optimizer.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n"
        "        accelerator.backward(model(batch))\n        optimizer.step()\n        optimizer.zero_grad()\n",
    ),
    "DDL184": (
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n"
        "        accelerator.backward(model(batch))\n"
        "        accelerator.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=4)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n"
        "        accelerator.backward(model(batch))\n        if accelerator.sync_gradients:\n"
        "            accelerator.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n",
    ),
    "DDL183": (
        "import torch.distributed as dist\nimport wandb\ndist.init_process_group('nccl')\n"
        "if dist.get_rank() == 0:\n    wandb.init(project='p')\nfor step in range(9):\n"
        "    wandb.log({'loss': train_step()})\ndist.destroy_process_group()\n",
        "import torch.distributed as dist\nimport wandb\ndist.init_process_group('nccl')\n"
        "if dist.get_rank() == 0:\n    wandb.init(project='p')\nfor step in range(9):\n"
        "    loss = train_step()\n    if dist.get_rank() == 0:\n        wandb.log({'loss': loss})\n"
        "dist.destroy_process_group()\n",
    ),
    "DDL182": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "total = train_epoch()\ndist.all_reduce(torch.tensor(total).to('cuda'))\n"
        "print(total / dist.get_world_size())\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "total = torch.tensor(train_epoch()).to('cuda')\ndist.all_reduce(total)\n"
        "print(total.item() / dist.get_world_size())\ndist.destroy_process_group()\n",
    ),
    "DDL181": (
        "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
        "dist.init_process_group('nccl')\n\n\ndef train(model, loader, rank):\n"
        "    sums = torch.zeros(2).to(rank)\n    for data, target in loader:\n"
        "        loss = F.cross_entropy(model(data), target)\n        loss.backward()\n"
        "        sums[0] += loss.item()\n        sums[1] += len(data)\n"
        "    dist.all_reduce(sums)\n    return sums[0] / sums[1]\n",
        "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
        "dist.init_process_group('nccl')\n\n\ndef train(model, loader, rank):\n"
        "    sums = torch.zeros(2).to(rank)\n    for data, target in loader:\n"
        "        loss = F.cross_entropy(model(data), target, reduction='sum')\n        loss.backward()\n"
        "        sums[0] += loss.item()\n        sums[1] += len(data)\n"
        "    dist.all_reduce(sums)\n    return sums[0] / sums[1]\n",
    ),
    "DDL180": (
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=2)\n"
        "for x in loader:\n    with accelerator.accumulate(controlnet), accelerator.accumulate(unet):\n"
        "        accelerator.backward(loss(controlnet, unet, x))\n        optimizer.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(gradient_accumulation_steps=2)\n"
        "for x in loader:\n    with accelerator.accumulate(controlnet, unet):\n"
        "        accelerator.backward(loss(controlnet, unet, x))\n        optimizer.step()\n",
    ),
    "DDL179": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\nbest = float('inf')\n"
        "for epoch in range(9):\n    loss = evaluate(model)\n    if loss < best:\n        save_full_state(model)\n"
        "    if dist.get_rank() == 0 and loss < best:\n        best = loss\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\nbest = float('inf')\n"
        "for epoch in range(9):\n    loss = evaluate(model)\n    if loss < best:\n        save_full_state(model)\n"
        "    if loss < best:\n        best = loss\ndist.destroy_process_group()\n",
    ),
    "DDL178": (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group('nccl')\n"
        "model = DDP(Net())\nif dist.get_rank() == 0:\n"
        "    model.load_state_dict(torch.load('last.pt', map_location='cpu'))\n"
        "train(model)\ndist.destroy_process_group()\n",
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group('nccl')\n"
        "model = Net()\nif dist.get_rank() == 0:\n"
        "    model.load_state_dict(torch.load('last.pt', map_location='cpu'))\n"
        "model = DDP(model)\ntrain(model)\ndist.destroy_process_group()\n",
    ),
    "DDL177": (
        "from accelerate import Accelerator\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "accelerator = Accelerator()\nsampler = DistributedSampler(ds) if distributed else None\n"
        "loader = DataLoader(ds, batch_size=8, sampler=sampler)\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\n",
        "from accelerate import Accelerator\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "accelerator = Accelerator()\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\n",
    ),
    "DDL176": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nif args.resume:\n"
        "    state = torch.load(args.resume)\n    model.load_state_dict(state['model'])\n"
        "    start_epoch = state['epoch'] + 1\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nif args.resume:\n"
        "    state = torch.load(args.resume)\n    model.load_state_dict(state['model'])\n"
        "    optimizer.load_state_dict(state['optimizer'])\n    start_epoch = state['epoch'] + 1\n",
    ),
    "DDL175": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "generator = DDP(Generator().cuda())\ndiscriminator = Discriminator().cuda()\n"
        "opt_g = torch.optim.Adam(generator.parameters())\n"
        "opt_d = torch.optim.Adam(discriminator.parameters())\nfor x in loader:\n"
        "    d_loss(discriminator, generator, x).backward()\n    opt_d.step()\n"
        "    g_loss(discriminator, generator, x).backward()\n    opt_g.step()\n",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "generator = DDP(Generator().cuda())\ndiscriminator = DDP(Discriminator().cuda())\n"
        "opt_g = torch.optim.Adam(generator.parameters())\n"
        "opt_d = torch.optim.Adam(discriminator.parameters())\nfor x in loader:\n"
        "    d_loss(discriminator, generator, x).backward()\n    opt_d.step()\n"
        "    g_loss(discriminator, generator, x).backward()\n    opt_g.step()\n",
    ),
    "DDL174": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nstate = torch.load('last.pt')\n"
        "optimizer.load_state_dict(state['optimizer'])\n"
        "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)\n"
        "for epoch in range(state['epoch'] + 1, 9):\n    train_one_epoch(model, optimizer)\n"
        "    scheduler.step()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nstate = torch.load('last.pt')\n"
        "optimizer.load_state_dict(state['optimizer'])\n"
        "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)\n"
        "scheduler.load_state_dict(state['scheduler'])\n"
        "for epoch in range(state['epoch'] + 1, 9):\n    train_one_epoch(model, optimizer)\n"
        "    scheduler.step()\n",
    ),
    "DDL173": (
        "import os\nimport torch.distributed as dist\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "node_rank = int(os.environ['NODE_RANK'])\ndist.init_process_group('nccl')\n",
        "import os\nimport torch.distributed as dist\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "node_rank = int(os.environ['GROUP_RANK'])\ndist.init_process_group('nccl')\n",
    ),
    "DDL172": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "torch.manual_seed(0)\ndef sample_for_fid(net, n):\n    z = torch.randn(n, 128, device='cuda')\n"
        "    out = [torch.empty(n, 3, 32, 32, device='cuda') for _ in range(dist.get_world_size())]\n"
        "    dist.all_gather(out, net(z))\n    return torch.cat(out)\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "torch.manual_seed(0 + dist.get_rank())\ndef sample_for_fid(net, n):\n"
        "    z = torch.randn(n, 128, device='cuda')\n"
        "    out = [torch.empty(n, 3, 32, 32, device='cuda') for _ in range(dist.get_world_size())]\n"
        "    dist.all_gather(out, net(z))\n    return torch.cat(out)\n",
    ),
    "DDL171": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "if resume:\n    accelerator.load_state(resume)\nfor epoch in range(first_epoch, epochs):\n"
        "    for step, batch in enumerate(loader):\n        accelerator.backward(model(batch).loss)\n"
        "        optimizer.step()\n        if step % 500 == 0:\n"
        "            accelerator.save_state(f'out/checkpoint-{step}')\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "if resume:\n    accelerator.load_state(resume)\nfor epoch in range(first_epoch, epochs):\n"
        "    for step, batch in enumerate(loader):\n"
        "        if epoch == first_epoch and step < resume_step:\n            continue\n"
        "        accelerator.backward(model(batch).loss)\n"
        "        optimizer.step()\n        if step % 500 == 0:\n"
        "            accelerator.save_state(f'out/checkpoint-{step}')\n",
    ),
    "DDL148": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
        "model, optimizer = accelerator.prepare(model, optimizer)\nfor x, y in loader:\n"
        "    accelerator.backward(loss_fn(model(x), y))\n    optimizer.step()\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "loader = DataLoader(ds, batch_size=32, shuffle=True)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\nfor x, y in loader:\n"
        "    accelerator.backward(loss_fn(model(x), y))\n    optimizer.step()\n",
    ),
}


def codes(source):
    return [f.code for f in doctor.check_source(source, "fixture.py")]


@pytest.mark.parametrize("code", sorted(CASES))
def test_every_rule_catches_its_mistake_and_passes_the_fix(code):
    bad, good = CASES[code]
    assert code in codes(bad), (code, codes(bad))
    assert code not in codes(good), (code, codes(good))


def test_every_rule_has_a_fixture_an_explanation_and_a_guide_section():
    guide = (ROOT / "guides" / "your-script.md").read_text()
    assert set(CASES) == set(doctor.RULES)
    for code, (_, _, anchor, why) in doctor.RULES.items():
        assert len(why) > 80 and doctor.explain(code).startswith(code)
        heading = anchor.replace("-", " ")
        assert any(
            heading
            in line.lower()
            .replace("-", " ")
            .replace(",", "")
            .replace(".", "")
            .replace(":", "")  # GitHub's anchors drop it too
            .replace("`", "")
            .replace("'", "")
            .translate(str.maketrans("", "", "()="))  # and these
            for line in guide.splitlines()
            if line.startswith("#")
        ), (code, anchor)


def test_a_save_in_a_helper_called_only_under_a_rank_check_is_guarded():
    """Issue 23: DDL107 was wrong 7 times in 7 on public scripts: each torch.save sat in a helper
    (`save_checkpoint`, `_save_snapshot`) that pytorch/examples call only under a rank check. A function whose
    every call in the module is guarded (recursively) is guarded; one unguarded call is not."""
    helper = (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')\n"
        "def save_checkpoint(state):\n    torch.save(state, 'ckpt.pt')\n"
        "class Trainer:\n    def _save_snapshot(self):\n        save_checkpoint(self.model.state_dict())\n"
        "    def train(self):\n        if self.gpu_id == 0 and self.epoch % 10 == 0:\n"
        "            self._save_snapshot()\n"
        "dist.destroy_process_group()\n"
    )
    assert codes(helper) == []
    assert codes(helper + "save_checkpoint({})\n") == ["DDL107"]  # and one call on every rank
    assert codes(helper.replace("if self.gpu_id == 0 and", "if")) == ["DDL107"]


def test_legitimate_patterns_are_left_alone():
    # rank 0 first, then the others: one barrier each
    assert (
        codes(
            "import torch.distributed as dist\nif not is_main:\n    dist.barrier()\nbuild()\n"
            "if is_main:\n    dist.barrier()\n"
        )
        == []
    )
    assert (
        codes(
            "import torch.distributed as dist\nif rank in evens:\n    dist.all_reduce(x, group=g)\n"
        )
        == []
    )
    assert codes("import torch\nmodel = torch.nn.DataParallel(net)  # noqa: DDL103\n") == []


# Shapes that real scripts use correctly and that an earlier doctor flagged (the corpus in guides/doctor.md, and
# 2,693 files of accelerate, Lightning, diffusers, timm and pytorch/examples read for tracebacks)
CORRECT_IN_PUBLIC_CODE = {
    "an eval sampler needs no set_epoch (pytorch/examples FSDP/T5_training.py)": (
        "from torch.utils.data import DistributedSampler\nimport torch.distributed as dist\n"
        "val_sampler = DistributedSampler(val_dataset, rank=rank, num_replicas=world_size)\n"
    ),
    "set_epoch in another module's train() (the same script)": (
        "from torch.utils.data import DistributedSampler\nfrom utils import train\n"
        "sampler1 = DistributedSampler(train_dataset, shuffle=True)\n"
        "for epoch in range(3):\n    train(model, loader, epoch, sampler=sampler1)\n"
    ),
    "a prepared scheduler stepped per update (accelerate's autoregressive accumulation)": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, opt, lr_scheduler = accelerator.prepare(model, opt, lr_scheduler)\n"
        "for epoch in range(3):\n    for update_step in range(total_updates):\n"
        "        opt.step()\n        lr_scheduler.step()\n"
    ),
    "--local_rank kept beside LOCAL_RANK from the environment (diffusers)": (
        "import argparse, os\np = argparse.ArgumentParser()\n"
        "p.add_argument('--local_rank', type=int, default=-1)\n"
        "env_local_rank = int(os.environ.get('LOCAL_RANK', -1))\n"
    ),
    "clipping in the fp32 branch beside an AMP one (minGPT-ddp)": (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nif use_amp:\n"
        "    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(params, 1.0)\nelse:\n    loss.backward()\n"
        "    torch.nn.utils.clip_grad_norm_(params, 1.0)\n"
    ),
    "unscale_ before clipping (nanoGPT)": (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nscaler.scale(loss).backward()\n"
        "scaler.unscale_(optimizer)\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    ),
    "torch.device(x) alone checks that x names a device (diffusers)": (
        "import torch\ntry:\n    torch.device(arg)\n    ok = True\nexcept RuntimeError:\n    ok = False\n"
    ),
    "rank % device_count() is a local index (diffusers' gligen)": (
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "local_rank = dist.get_rank() % torch.cuda.device_count()\ntorch.cuda.set_device(local_rank)\n"
        "model = Net().to(local_rank)\ndist.destroy_process_group()\n"
    ),
    "a test of gather itself is not an evaluation (accelerate's test scripts)": (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "def _test_resume(accelerator):\n    for step in range(3):\n"
        "        batches = accelerator.gather(batch)\n"
    ),
    "gather with its own truncation of the repeats (accelerate's multi_process_metrics)": (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nsamples_seen = 0\n"
        "for step, batch in enumerate(eval_dataloader):\n    with torch.no_grad():\n"
        "        out = model(batch)\n    preds = accelerator.gather(out)\n"
        "    preds = preds[: len(eval_dataloader.dataset) - samples_seen]\n"
    ),
    "accumulation with require_backward_grad_sync (nanoGPT)": (
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "for step in range(100):\n    for micro_step in range(accum):\n"
        "        model.require_backward_grad_sync = micro_step == accum - 1\n"
        "        model(x).backward()\n    if step % 1 == 0:\n        optimizer.step()\n"
    ),
}


@pytest.mark.parametrize("shape", sorted(CORRECT_IN_PUBLIC_CODE))
def test_shapes_public_scripts_use_correctly_are_left_alone(shape):
    assert codes(CORRECT_IN_PUBLIC_CODE[shape]) == []


PLANTED = """\
import argparse
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)  # DDL101
    args = parser.parse_args()
    print(f"local rank {args.local_rank}")
    dist.init_process_group("nccl")  # DDL113
    model = DDP(Net().cuda(), find_unused_parameters=True)  # DDL112 DDL150
    sampler = DistributedSampler(train_set)  # DDL105
    loader = DataLoader(train_set, batch_size=64, shuffle=True, sampler=sampler)  # DDL104
    scaler = torch.cuda.amp.GradScaler()  # DDL102
    for epoch in range(10):
        for data, target in loader:
            loss = model(data).sum()
            scaler.scale(loss).backward()
        if dist.get_rank() == 0:
            dist.barrier()  # DDL108
    correct = 0
    for data, target in test_loader:
        correct += (model(data).argmax(1) == target).sum().item()
    accuracy = correct / len(test_loader.dataset)  # DDL114
    torch.save(model.state_dict(), "model.pt")  # DDL106 DDL107
    state = torch.load("model.pt", weights_only=False)  # DDL109
"""


@pytest.mark.launch
def test_a_third_party_script_gets_a_finding_at_each_planted_mistake(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PLANTED)
    planted = {
        (n, code)
        for n, line in enumerate(PLANTED.splitlines(), 1)
        if "# DDL" in line
        for code in line.split("# ")[-1].split()
    }
    for preview in (["--preview"], []):  # by default, the rules that are not preview rules
        proc = subprocess.run(
            [*DOCTOR, *preview, str(script)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 1, proc.stderr
        found = {(int(line.split(":")[1]), line.split()[1]) for line in proc.stdout.splitlines()}
        expected = {(n, c) for n, c in planted if preview or c not in doctor.PREVIEW}
        assert expected <= found, sorted(expected - found)
        assert found <= expected, sorted(found - expected)  # and nothing else
    for line in proc.stdout.splitlines():  # flake8's shape: path:line:col: CODE message (guide)
        assert line.startswith(f"{script}:") and "guides/your-script.md#" in line


@pytest.mark.launch
def test_the_project_is_clean_and_bad_input_is_one_line(tmp_path):
    files = sorted(str(p) for p in (ROOT / "scripts").glob("[0-9]_*.py"))
    files += sorted(str(p) for p in (ROOT / "guides" / "examples").glob("*.py"))
    files += sorted(str(p) for p in (ROOT / "scripts" / "labs").glob("*.py"))
    proc = subprocess.run([*DOCTOR, *files], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    (tmp_path / "broken.py").write_text("def f(:\n")
    for bad in (
        [str(tmp_path / "broken.py")],
        [str(tmp_path / "missing.py")],
        [],
        ["--explain", "DDL999"],
    ):
        proc = subprocess.run([*DOCTOR, *bad], capture_output=True, text=True, timeout=60)
        assert (
            proc.returncode == 2
            and proc.stderr.startswith("error: ")
            and proc.stderr.count("\n") == 1
        ), bad
    proc = subprocess.run(
        [*DOCTOR, "--explain", "ddl105"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "set_epoch" in proc.stdout


def test_files_doctor_cannot_analyse_are_one_line_each_and_the_rest_are_still_checked(
    tmp_path, capsys
):
    """Issue 23/26: a valid file with a 400-term `+` chain was a RecursionError traceback with exit 1 (which
    means findings); `good.py bad.py` stopped at bad.py without good.py's findings; a directory was refused; a
    null byte gave `file:None:0:`; Python 3.12 syntax was "not valid Python" without saying which parsed it."""
    # 400 terms are read since the rules share one iterative walk (issue 33); 1,000 still exceed ast's recursion
    assert doctor.check_source("x = " + " + ".join(['"a"'] * 400) + "\n") == []
    (tmp_path / "deep.py").write_text("x = " + " + ".join(['"a"'] * 1000) + "\n")
    (tmp_path / "null.py").write_bytes(b"import os\x00\n")
    (tmp_path / "py312.py").write_text("type Vector = list[float]\n")
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "train.py").write_text(
        "from torch.utils.data import DistributedSampler\nsampler = DistributedSampler(range(8))\n"
    )
    (tmp_path / "pkg" / ".venv").mkdir()
    (tmp_path / "pkg" / ".venv" / "lib.py").write_text("this is not python(\n")
    files = [tmp_path / "deep.py", tmp_path / "null.py", tmp_path / "py312.py", tmp_path / "pkg"]
    assert doctor.main(["--preview", *map(str, files)]) == 2  # DDL105 is a preview rule
    out, err = capsys.readouterr()
    errors = err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("error: ") for line in errors), err
    assert "deep.py: is nested too deeply" in errors[0]
    assert "null.py: holds a null byte" in errors[1]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert "py312.py: 1:" in errors[2] and f"not valid Python {version}" in errors[2]
    assert sys.executable in errors[2]
    # the directory's file was checked (DDL105: no set_epoch); the virtualenv's was not
    assert out.startswith(f"{pkg / 'train.py'}:2:") and "DDL105" in out and "lib.py" not in err


FIXTURES = ROOT / "tests" / "doctor_fixtures"
# each file: its rule's mistake in a script that runs on a CPU (python FILE); these two fail before the fix
FAILS_UNFIXED = {"ddl104_shuffle_and_sampler.py": "mutually exclusive", "ddl106": "Unexpected key"}
# one process imports torch once (a launch costs ~2 s) and forks a child for each fixture: a second gloo group
# in one process, after the first was destroyed, hung at its end in 1 of 17 to 1 of 49 runs here (ddl106 then
# the fixed ddl115); a fixture that hangs prints where it is and ends its child
RUNNER = """
import faulthandler, os, runpy, sys
import torch.distributed as dist
import torch.distributed.nn
for path in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        faulthandler.dump_traceback_later(60, exit=True)
        try:
            runpy.run_path(path, run_name="__main__")
            print("RAN", path)
        except BaseException as e:
            print("FAILED", path, type(e).__name__, str(e).replace(chr(10), " ")[:300])
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        print("HUNG", path)
        sys.exit(1)
"""


def run_fixtures(paths):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return {
        Path(line.split()[1]).name: line
        for line in proc.stdout.splitlines()
        if line.startswith(("RAN ", "FAILED "))
    }


def test_fix_rewrites_the_mechanical_findings_keeps_the_rest_and_the_fixed_scripts_run(
    tmp_path, capsys
):
    """Issue 23: --diff shows the rewrite and writes nothing; --fix writes it; every fixed fixture then passes
    doctor, keeps its comments, and runs (the two that raised before no longer do)."""
    for fixture in FIXTURES.glob("*.py"):
        shutil.copy(fixture, tmp_path / fixture.name)
    files = sorted(tmp_path.glob("*.py"))
    before = {f.name: f.read_text() for f in files}
    assert len(before) >= 6
    for f in files:  # each fixture has its own rule's finding
        assert f.name[:6].upper() in codes(before[f.name]), f.name

    assert (
        doctor.main(["--diff", "--preview", str(tmp_path)]) == 1
    )  # DDL106's fixture: a preview rule
    diff = capsys.readouterr().out
    assert {f.name: f.read_text() for f in files} == before  # nothing written
    for line in (
        '+scaler = torch.amp.GradScaler("cuda", init_scale=2.0**10, enabled=use_amp)',
        '+with torch.amp.autocast("cuda", enabled=use_amp):',
        "+from torch.amp import GradScaler, autocast",
        "-    shuffle=True,",
        "+    torch.save(model.module.state_dict(), path)",
        "+        with model.no_sync():",
        "+            model(x).sum().backward()",
        '+        with torch.autocast("cpu", dtype=torch.bfloat16):',
        "+            loss = model(x).float().sum()",
        "+        pred, y = accelerator.gather_for_metrics((pred, y))  # every process's predictions",
    ):
        assert line in diff.splitlines(), line
    assert "+            loss.backward()" not in diff  # the backward stays out of autocast

    assert doctor.main(["--fix", "--preview", str(tmp_path)]) == 0  # nothing left to report
    out, err = capsys.readouterr()
    assert out == "" and err.count("fixed: ") == len(files), err
    for f in files:
        after = f.read_text()
        assert codes(after) == [], (f.name, codes(after))
        comments = [line[line.index("#") :] for line in before[f.name].splitlines() if "#" in line]
        assert comments and all(c in after for c in comments), f.name  # every comment kept

    unfixed = run_fixtures(FIXTURES / name for name in sorted(before))
    fixed = run_fixtures(files)
    for name in before:
        failure = next((why for key, why in FAILS_UNFIXED.items() if name.startswith(key)), None)
        if failure:
            assert unfixed[name].startswith("FAILED") and failure in unfixed[name], unfixed[name]
        assert fixed[name].startswith("RAN"), fixed[name]


def test_fix_leaves_an_ambiguous_block_alone_and_needs_no_change_on_clean_code(tmp_path, capsys):
    """A manager called as a statement with nothing after it, or with a `return` after it, is reported but not
    rewritten: which lines the `with` should hold is not clear."""
    source = (
        "import torch\ndef step(model, x):\n    model.no_sync()\n    return model(x).sum()\n"
        "def other(model):\n    model.no_sync()\n"
    )
    path = tmp_path / "ambiguous.py"
    path.write_text(source)
    assert doctor.main(["--fix", str(path)]) == 1
    out, err = capsys.readouterr()
    assert path.read_text() == source and out.count("DDL115") == 2 and "fixed:" not in err
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\nprint(torch.ones(2))\n")
    assert doctor.main(["--diff", str(clean)]) == 0 and capsys.readouterr().out == ""


NEVER_SEEN = "## Code it had never seen"


def corpus_table(text):
    """The rows of a corpus table as (repo, path, commit, findings, misses), each checked for its shape, and the
    verdicts of its findings as (code, verdict)."""
    rows, verdicts = [], []
    for row in [line for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]:
        number, repo, path, commit, findings, misses = row.strip("| ").split(" | ")
        assert re.fullmatch(r"`[0-9a-f]{40}`", commit), row
        assert "/" in repo and path.startswith("`") and misses
        for finding in findings.split("<br>") if findings != "none" else []:
            line, code, verdict = re.match(r"(\d+) (DDL\d+): \*\*(\w+)\*\*, .+", finding).groups()
            assert code in doctor.RULES and verdict in ("true", "false", "stale"), finding
            verdicts.append((code, verdict))
        rows.append((repo, path, commit, findings, misses))
    return rows, verdicts


def test_the_corpus_table_adds_up_to_the_precision_it_states():
    """guides/doctor.md: 25+ public files, each at a full commit, every finding with a verdict; the precision
    printed is the one the verdicts give, and it is at least 0.9 (issue 23)."""
    page = (ROOT / "guides" / "doctor.md").read_text().split(NEVER_SEEN)[0]
    rows, verdicts = corpus_table(page)
    assert len(rows) >= 25
    true = [v for _, v in verdicts].count("true")
    stated = re.search(r"Precision: (\d+) true of (\d+) findings = (0\.\d+)", page).groups()
    assert (int(stated[0]), int(stated[1])) == (true, len(verdicts))
    assert float(stated[2]) == round(true / len(verdicts), 3) >= 0.9


def test_the_never_seen_table_adds_up_to_the_precision_and_recall_it_states():
    """guides/doctor.md's second table (issue 33, item 5): 25+ files from 8+ repositories none of which the first
    table uses; the precision overall, without DDL113 and per rule, and the recall, are what its rows give."""
    first, second = (ROOT / "guides" / "doctor.md").read_text().split(NEVER_SEEN)
    second = second.split("\n## ")[0]
    rows, verdicts = corpus_table(second)
    repos = {repo for repo, *_ in rows}
    assert len(rows) >= 25 and len(repos) >= 8
    assert not repos & {repo for repo, *_ in corpus_table(first)[0]}
    heading = re.match(r": (\d+) files from (\d+) repositories", second).groups()
    assert (int(heading[0]), int(heading[1])) == (len(rows), len(repos))

    def tally(pairs):
        return [v for _, v in pairs].count("true"), len(pairs)

    stated = re.search(r"Precision: (\d+) true of (\d+) findings = (0\.\d+)", second).groups()
    assert (int(stated[0]), int(stated[1])) == tally(verdicts)
    assert float(stated[2]) == round(tally(verdicts)[0] / len(verdicts), 3)
    without = [(c, v) for c, v in verdicts if c != "DDL113"]
    stated = re.search(r"without DDL113, (\d+) true of (\d+) = (0\.\d+)", second).groups()
    assert (int(stated[0]), int(stated[1])) == tally(without)
    assert float(stated[2]) == round(tally(without)[0] / len(without), 3) >= 0.9
    per_rule = dict(
        re.findall(r"(DDL\d+) (\d+ of \d+)", re.split(r"\.\s", second.split("Per rule:")[1])[0])
    )
    codes = sorted({c for c, _ in verdicts})
    counts = {c: tally([p for p in verdicts if p[0] == c]) for c in codes}
    assert per_rule == {c: f"{true} of {n}" for c, (true, n) in counts.items()}
    # recall: every miss is named in its row; found + missed is what the page states
    misses = sum(
        len(m.split("<br>")) for *_, m in rows if m != "-" and not m.startswith("none known")
    )
    found, total, ratio = re.search(r"Recall: (\d+) of (\d+) = (0\.\d+)", second).groups()
    assert int(total) - int(found) == misses and float(ratio) == round(int(found) / int(total), 3)
    assert re.search(rf"Missed, {misses}:", second)


def test_a_file_fix_cannot_rewrite_is_one_line_and_stays_as_it_was(tmp_path, capsys, monkeypatch):
    """Never a traceback: where libcst gives up (its parser, its recursion), --fix says so in one line, writes
    nothing and still reports the file's findings."""
    import doctor_fix

    def gives_up(*args):
        raise RecursionError("maximum recursion depth exceeded\nwhile calling a Python object")

    monkeypatch.setattr(doctor_fix, "fix_source", gives_up)
    source = CASES["DDL104"][0]
    path = tmp_path / "train.py"
    path.write_text(source)
    assert doctor.main(["--fix", str(path)]) == 2
    out, err = capsys.readouterr()
    assert (
        err
        == f"error: {path}: cannot rewrite it (maximum recursion depth exceeded); nothing written\n"
    )
    assert path.read_text() == source and "DDL104" in out


def test_the_four_later_never_seen_sets_add_up_to_what_the_page_states():
    """guides/doctor.md's corpora 3 to 6 (issue 33, item 5 measured again): each 25+ files, every finding with
    a verdict, the stated precision (with and without DDL113) the one the rows give, and no repository used by
    an earlier table or another set."""
    page = (ROOT / "guides" / "doctor.md").read_text()
    earlier, later = page.split("## Forty-four more sets it had never seen")
    later = later.split("\n## ")[0]
    seen = {repo for repo, *_ in corpus_table(earlier)[0]}
    parts = re.split(r"\n### Corpus \d+: ", later)[1:]
    assert len(parts) == 44
    for part in parts:
        files, repos = map(int, re.match(r"(\d+) files from (\d+) repositories", part).groups())
        rows, verdicts = corpus_table(part)
        names = {repo for repo, *_ in rows}
        assert (len(rows), len(names)) == (files, repos) and files >= 25
        assert not names & seen, names & seen
        seen |= names
        true = [v for _, v in verdicts].count("true")
        without = [v for c, v in verdicts if c != "DDL113"]
        stated = re.search(
            r"Precision: (\d+) true of (\d+) findings = (0\.\d+); without DDL113 (\d+) of (\d+) = (0\.\d+)",
            part,
        ).groups()
        assert (int(stated[0]), int(stated[1])) == (true, len(verdicts))
        assert (int(stated[3]), int(stated[4])) == (without.count("true"), len(without))
        assert float(stated[5]) == round(without.count("true") / len(without), 3)


def test_each_rules_measured_precision_is_what_the_never_seen_tables_give():
    """doctor.MEASURED, which decides the preview rules, is the recount of every first verdict in
    guides/doctor.md's never-seen tables (the 28 files and the twenty sets after them); a preview rule is one
    right less than STABLE of the time there."""
    never_seen = (ROOT / "guides" / "doctor.md").read_text().split(NEVER_SEEN)[1]
    never_seen = never_seen.split("\n## Run it again")[0]
    counts = {}
    for code, verdict in corpus_table(never_seen)[1]:
        if verdict != "stale":
            true, judged = counts.get(code, (0, 0))
            counts[code] = (true + (verdict == "true"), judged + 1)
    assert doctor.MEASURED == counts
    measured_low = {c for c, (t, n) in counts.items() if t / n < doctor.STABLE}
    assert doctor.PREVIEW == measured_low | doctor.UNMEASURED
    assert not doctor.UNMEASURED & set(counts)  # a rule no set has met yet
    assert sum(n for _, n in counts.values()) > 1300


def test_the_default_and_preview_table_is_what_doctor_runs():
    """guides/doctor.md's table of the rules: each one's count and whether it runs by default are doctor's."""
    page = (ROOT / "guides" / "doctor.md").read_text()
    section = page.split("### Default and preview rules")[1].split("\n\n`--explain` lists")[0]
    rows = [
        line.strip("| ").split(" | ") for line in section.splitlines() if line.startswith("| DDL")
    ]
    assert [code for code, *_ in rows] == sorted(doctor.RULES)
    for code, what, right, precision, runs in rows:
        assert what.replace("\\|", "|") == doctor.RULES[code][0]
        assert runs == ("preview" if code in doctor.PREVIEW else "default")
        if code in doctor.MEASURED:
            true, judged = doctor.MEASURED[code]
            assert (right, precision) == (f"{true} of {judged}", f"{true / judged:.2f}")
        else:
            assert (right, precision) == ("none yet", "-")
    default = [c for c in doctor.MEASURED if c not in doctor.PREVIEW and c != "DDL113"]
    true, judged = (sum(doctor.MEASURED[c][i] for c in default) for i in (0, 1))
    assert f"right in {true} of {judged} ({true / judged:.3f}) without DDL113" in section
    assert f"the {len(doctor.RULES) - len(doctor.PREVIEW)} rules that" in section
    assert f"the other {len(doctor.PREVIEW)} are preview rules" in section
