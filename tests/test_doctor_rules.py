"""The mistakes doctor missed and the findings it got wrong on code it had never seen (issue 33, item 2): for
each, a script written here in the shape seen in public code (not copied from it) with the mistake, and the
same script done right. The bad one must get the code, the good one must not."""

import doctor
import pytest

DDP_HEAD = (
    "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "dist.init_process_group('gloo')\n"
)
DDP_TAIL = "dist.destroy_process_group()\n"
ACCELERATE_HEAD = (
    "import torch\nimport torch.nn.functional as F\nfrom accelerate import Accelerator\n"
    "accelerator = Accelerator()\n"
)

# name: (code, the mistake, done right)
PAIRS = {
    # -- corpus 9 (seen): a trainer clearing its save folder in every process; the GPU count as world size -----
    "rmtree of the save folder in a base trainer's __init__, on every rank": (
        "DDL140",
        DDP_HEAD + "import shutil\nclass BaseTrainer:\n    def __init__(self, config, model):\n"
        "        self.save_dir = config['save_dir']\n        if not config['resume']:\n"
        "            shutil.rmtree(self.save_dir, ignore_errors=True)\n"
        "        os.makedirs(self.save_dir, exist_ok=True)\n        self.model = DDP(model)\n"
        "trainer = BaseTrainer(config, net)\n" + DDP_TAIL,
        DDP_HEAD + "import shutil\nclass BaseTrainer:\n    def __init__(self, config, model):\n"
        "        self.save_dir = config['save_dir']\n"
        "        if not config['resume'] and dist.get_rank() == 0:\n"
        "            shutil.rmtree(self.save_dir, ignore_errors=True)\n        dist.barrier()\n"
        "        os.makedirs(self.save_dir, exist_ok=True)\n        self.model = DDP(model)\n"
        "trainer = BaseTrainer(config, net)\n" + DDP_TAIL,
    ),
    # -- corpus 10 (seen): a summed loss in a function named for both; an eval set named run together ----------
    "a summed training loss in a function that trains and evaluates": (
        "DDL123",
        DDP_HEAD + "def train_eval_ddp(model, loader):\n    model = DDP(model)\n"
        "    loss_function = torch.nn.CrossEntropyLoss(reduction='sum').to(0)\n"
        "    for x, y in loader:\n        loss = loss_function(model(x), y)\n        loss.backward()\n"
        + DDP_TAIL,
        DDP_HEAD + "def train_ddp(model, loader):\n    model = DDP(model)\n"
        "    loss_function = torch.nn.CrossEntropyLoss().to(0)\n"
        "    for x, y in loader:\n        loss = loss_function(model(x), y)\n        loss.backward()\n"
        "def evaluate_ddp(model, loader):\n    loss_function = torch.nn.CrossEntropyLoss(reduction='sum')\n"
        "    return sum(loss_function(model(x), y).item() for x, y in loader)\n" + DDP_TAIL,
    ),
    "a padding sampler over an eval set whose name runs together (valset)": (
        "DDL127",
        DDP_HEAD + "valsampler = torch.utils.data.distributed.DistributedSampler(valset)\n"
        "valloader = DataLoader(valset, sampler=valsampler)\n"
        "for x in valloader:\n    results += metric(x)\ndist.reduce(results, dst=0)\n" + DDP_TAIL,
        DDP_HEAD + "trainsampler = torch.utils.data.distributed.DistributedSampler(trainset)\n"
        "valshard = torch.utils.data.Subset(valset, range(rank, len(valset), world))\n"
        "for x in DataLoader(valshard):\n    results += metric(x)\ndist.reduce(results, dst=0)\n"
        "interval_sampler = DistributedSampler(interval_set)\n" + DDP_TAIL,
    ),
    "COCO's evaluator.accumulate() is not accelerate's accumulate()": (
        "DDL119",
        DDP_HEAD + "model = DDP(net)\naccumulated = 0\nfor x, y in loader:\n"
        "    F.cross_entropy(model(x), y).backward()\n    accumulated += 1\n"
        "    if accumulated == args.accumulation_steps:\n        optimizer.step()\n"
        "        accumulated = 0\ncoco_evaluator.accumulate()\n" + DDP_TAIL,
        DDP_HEAD + "import contextlib\nmodel = DDP(net)\naccumulated = 0\nfor x, y in loader:\n"
        "    last = accumulated + 1 == args.accumulation_steps\n"
        "    with contextlib.nullcontext() if last else model.no_sync():\n"
        "        F.cross_entropy(model(x), y).backward()\n    accumulated += 1\n"
        "    if accumulated == args.accumulation_steps:\n        optimizer.step()\n"
        "        accumulated = 0\ncoco_evaluator.accumulate()\n" + DDP_TAIL,
    ),
    "a step method's loop over micro-batches under Accelerate": (
        "DDL119",
        ACCELERATE_HEAD + "class Trainer:\n    def train_step(self):\n"
        "        for _ in range(self.grad_accum_every):\n            loss = self.model(next(self.dl))\n"
        "            self.accelerator.backward(loss / self.grad_accum_every)\n"
        "        self.optim.step()\n        self.optim.zero_grad()\n",
        ACCELERATE_HEAD + "class Trainer:\n    def train_step(self):\n"
        "        for _ in range(self.grad_accum_every):\n"
        "            with self.accelerator.accumulate(self.model):\n"
        "                loss = self.model(next(self.dl))\n"
        "                self.accelerator.backward(loss)\n"
        "                self.optim.step()\n                self.optim.zero_grad()\n",
    ),
    # corpus 10's false findings (seen), each fixed at the rule
    "a gather on rank 0 paired with the others' gather in the else": (
        "DDL108",
        DDP_HEAD + "if dist.get_rank() == 0:\n    parts = [torch.zeros(3) for _ in range(world)]\n"
        "    dist.gather(chunk, parts)\n" + DDP_TAIL,
        DDP_HEAD + "if dist.get_rank() == 0:\n    parts = [torch.zeros(3) for _ in range(world)]\n"
        "    dist.gather(chunk, parts)\nelse:  # send results to the main process\n"
        "    dist.gather(chunk)\n" + DDP_TAIL,
    ),
    "another library's Accelerator that unscales before clipping is not Hugging Face's": (
        "DDL121",
        "import torch\nfrom accelerate import Accelerator\naccel = Accelerator()\n"
        "accel.backward(loss)\naccel.scaler.unscale_(optimizer)\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "import torch\nimport argbind\nfrom audiotools import ml\n"
        "Accelerator = argbind.bind(ml.Accelerator, without_prefix=True)\naccel = Accelerator()\n"
        "accel.backward(loss)\naccel.scaler.unscale_(optimizer)\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    ),
    "a trainer's save called by rank 0 when parallel, and in the single-process else": (
        "DDL107",
        DDP_HEAD + "class Engine:\n    def save(self):\n"
        "        torch.save(self.model.state_dict(), f'model_{self.epoch}.pth')\n"
        "parallel = bool(args.parallel_training)\nfor epoch in range(9):\n    trainer.train()\n"
        "    trainer.save()\n" + DDP_TAIL,
        DDP_HEAD + "class Engine:\n    def save(self):\n"
        "        torch.save(self.model.state_dict(), f'model_{self.epoch}.pth')\n"
        "parallel = bool(args.parallel_training)\nfor epoch in range(9):\n    trainer.train()\n"
        "    if (parallel == True):\n        if (rank == 0):\n            trainer.save()\n"
        "    else:\n        trainer.save()\n" + DDP_TAIL,
    ),
    "rank 0 alone testing on the whole test set divides by its length": (
        "DDL114",
        DDP_HEAD + "train_sampler = DistributedSampler(train_set)\n"
        "test_sampler = DistributedSampler(test_set)\n"
        "test_loader = DataLoader(test_set, sampler=test_sampler)\n"
        "def test(model, test_loader):\n    correct = 0\n    for x, y in test_loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n"
        "    print(correct / len(test_loader.dataset))\n"
        "for epoch in range(9):\n    train_sampler.set_epoch(epoch)\n    if dist.get_rank() == 0:\n"
        "        test(model, test_loader)\n" + DDP_TAIL,
        DDP_HEAD + "train_sampler = DistributedSampler(train_set)\n"
        "test_loader = DataLoader(test_set)\n"
        "def test(model, test_loader):\n    correct = 0\n    for x, y in test_loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n"
        "    print(correct / len(test_loader.dataset))\n"
        "for epoch in range(9):\n    train_sampler.set_epoch(epoch)\n    if dist.get_rank() == 0:\n"
        "        test(model, test_loader)\n" + DDP_TAIL,
    ),
    "a write in the function mp.spawn runs, also called directly when not distributed": (
        "DDL107",
        "import torch\nimport torch.multiprocessing as mp\nfrom shutil import copyfile\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def run(rank, world_size, args):\n    if world_size > 1:\n        setup_dist(rank, world_size)\n"
        "    model = DDP(get_model())\n    with open(f'{args.exp_dir}/model.txt', 'w') as f:\n"
        "        print(model, file=f)\n"
        "    copyfile(src=args.exp_dir / 'best.pt', dst=args.exp_dir / 'best-stage1.pt')\n"
        "def main():\n    args = get_parser().parse_args()\n    if args.world_size > 1:\n"
        "        mp.spawn(run, args=(args.world_size, args), nprocs=args.world_size)\n"
        "    else:\n        run(rank=0, world_size=1, args=args)\n",
        "import torch\nimport uuid\nimport torch.multiprocessing as mp\nfrom shutil import copyfile\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def run(rank, world_size, args):\n    if world_size > 1:\n        setup_dist(rank, world_size)\n"
        "    model = DDP(get_model())\n    if rank == 0:\n"
        "        with open(f'{args.exp_dir}/model.txt', 'w') as f:\n            print(model, file=f)\n"
        "        copyfile(src=args.exp_dir / 'best.pt', dst=args.exp_dir / 'best-stage1.pt')\n"
        "    torch.save(batch, f'{args.exp_dir}/batch-{uuid.uuid4()}.pt')\n"
        "def main():\n    args = get_parser().parse_args()\n    if args.world_size > 1:\n"
        "        mp.spawn(run, args=(args.world_size, args), nprocs=args.world_size)\n"
        "    else:\n        run(rank=0, world_size=1, args=args)\n",
    ),
    "a function of the script handed the prepared model calls generate on it": (
        "DDL125",
        ACCELERATE_HEAD
        + "def evaluation_loop(model, loader, accelerator):\n    for batch in loader:\n"
        "        tokens = model.generate(batch['input_features'], max_new_tokens=255)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for epoch in range(3):\n    evaluation_loop(model, loader, accelerator)\n",
        ACCELERATE_HEAD
        + "def evaluation_loop(model, loader, accelerator):\n    for batch in loader:\n"
        "        tokens = model.generate(batch['input_features'], max_new_tokens=255)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for epoch in range(3):\n"
        "    evaluation_loop(accelerator.unwrap_model(model), loader, accelerator)\n",
    ),
    "early stopping fed each rank's own validation loss": (
        "DDL134",
        DDP_HEAD
        + "def vali(model, loader):\n    losses = [F.mse_loss(model(x), y).item() for x, y in loader]\n"
        "    return sum(losses) / len(losses)\nmodel = DDP(net)\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n    vali_loss = vali(model, vali_loader)\n"
        "    early_stopping(vali_loss, model, path)\n    if early_stopping.early_stop:\n        break\n"
        + DDP_TAIL,
        DDP_HEAD
        + "def vali(model, loader):\n    losses = [F.mse_loss(model(x), y).item() for x, y in loader]\n"
        "    mean = torch.tensor(sum(losses) / len(losses))\n"
        "    dist.all_reduce(mean)  # every rank stops at the same epoch\n"
        "    return mean.item() / dist.get_world_size()\nmodel = DDP(net)\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n    vali_loss = vali(model, vali_loader)\n"
        "    early_stopping(vali_loss, model, path)\n    if early_stopping.early_stop:\n        break\n"
        + DDP_TAIL,
    ),
    "an early-stopping count kept on rank 0 alone": (
        "DDL134",
        DDP_HEAD + "model = DDP(net)\nbest, bad = 0.0, 0\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    if dist.get_rank() == 0:\n        acc = evaluate(model)\n"
        "        if acc > best:\n            best, bad = acc, 0\n"
        "        else:\n            bad += 1\n"
        "    if bad >= 7:\n        break\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nbest, bad = 0.0, 0\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    acc = evaluate(model)  # every rank counts the same epochs\n"
        "    if acc > best:\n        best, bad = acc, 0\n"
        "    else:\n        bad += 1\n"
        "    if bad >= 7:\n        break\n" + DDP_TAIL,
    ),
    "a method that returns the early-stopping count it keeps on rank 0": (
        "DDL134",
        DDP_HEAD + "class Saver:\n    def __init__(self, rank):\n"
        "        self.rank, self.best, self.bad = rank, 0.0, 0\n"
        "    def save(self, acc):\n        if self.rank < 1:\n"
        "            if acc > self.best:\n                self.best, self.bad = acc, 0\n"
        "            self.bad += 1\n        return self.bad >= 7\n"
        "model = DDP(net)\nsaver = Saver(dist.get_rank())\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    stop = saver.save(evaluate(model))\n    if stop:\n        break\n" + DDP_TAIL,
        DDP_HEAD + "class Saver:\n    def __init__(self, rank):\n"
        "        self.rank, self.best, self.bad = rank, 0.0, 0\n"
        "    def save(self, acc):\n"
        "        if acc > self.best:\n            self.best, self.bad = acc, 0\n"
        "        self.bad += 1\n        if self.rank < 1:\n            print(self.best)\n"
        "        return self.bad >= 7\n"
        "model = DDP(net)\nsaver = Saver(dist.get_rank())\nfor epoch in range(99):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    stop = saver.save(evaluate(model))\n    if stop:\n        break\n" + DDP_TAIL,
    ),
    "a pathlib folder made after an exists() check on every rank": (
        "DDL137",
        ACCELERATE_HEAD + "from pathlib import Path\nclass_images_dir = Path(args.class_data_dir)\n"
        "if not class_images_dir.exists():\n    class_images_dir.mkdir(parents=True)\n",
        ACCELERATE_HEAD + "from pathlib import Path\nclass_images_dir = Path(args.class_data_dir)\n"
        "class_images_dir.mkdir(parents=True, exist_ok=True)\n"
        "if accelerator.is_main_process:\n    Path(args.output_dir).mkdir()\n"
        "Path(f'cache/rank{accelerator.process_index}').mkdir()\n",
    ),
    "samples saved by every rank for a written-out list of models": (
        "DDL107",
        ACCELERATE_HEAD + "from torchvision.utils import save_image\n"
        "to_evaluate = ((vae, str(steps)),)\nif use_ema:\n"
        "    to_evaluate = ((ema, f'{steps}.ema'),) + to_evaluate\n"
        "for model, filename in to_evaluate:\n    save_image(model(x), f'results/{filename}.png')\n",
        ACCELERATE_HEAD + "from torchvision.utils import save_image\n"
        "for i, image in enumerate(accelerator.prepare(loader)):\n"
        "    save_image(model(image), f'results/{i}.png')\n"
        "if accelerator.is_main_process:\n    for model, filename in ((vae, 'vae'), (ema, 'ema')):\n"
        "        save_image(model(x), f'results/{filename}.png')\n",
    ),
    "a DDP wrap in one branch, FSDP in the other, then a model method in a function": (
        "DDL125",
        DDP_HEAD + "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "def train(model, loader, args):\n    if args.gradient_checkpointing:\n"
        "        model.gradient_checkpointing_enable()\n    for x in loader:\n        model(x).backward()\n"
        "if args.no_fsdp:\n    model = DDP(model.to(device))\nelse:\n    model = FSDP(model)\n"
        "train(model, loader, args)\n" + DDP_TAIL,
        DDP_HEAD + "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "def train(model, loader, args):\n    for x in loader:\n        model(x).backward()\n"
        "if args.gradient_checkpointing:\n    model.gradient_checkpointing_enable()\n"
        "if args.no_fsdp:\n    model = DDP(model.to(device))\nelse:\n    model = FSDP(model)\n"
        "train(model, loader, args)\n" + DDP_TAIL,
    ),
    "a batch skipped on what this process's batch holds": (
        "DDL134",
        DDP_HEAD + "model = DDP(net)\nfor iteration, (images, targets, _) in enumerate(loader):\n"
        "    if any(len(target) < 1 for target in targets):\n        continue\n"
        "    loss = sum(model(images, targets).values())\n    loss.backward()\n    optimizer.step()\n"
        + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nfor iteration, (images, targets, _) in enumerate(loader):\n"
        "    if iteration < start_iter:\n        continue  # every rank resumes at the same step\n"
        "    loss = sum(model(images, targets).values())\n    loss.backward()\n    optimizer.step()\n"
        "for images, targets in val_loader:\n    if images is None:\n        continue\n"
        "    print(model(images))\n" + DDP_TAIL,
    ),
    "every rank seeded alike after the group is up, with random augmentations": (
        "DDL142",
        DDP_HEAD + "import numpy as np\nimport random\nfrom torchvision import transforms\n"
        "model = DDP(net)\nSEED = 308184653\ntorch.manual_seed(SEED)\nnp.random.seed(SEED)\n"
        "random.seed(SEED)\ntrain_transform = transforms.Compose([transforms.RandomResizedCrop(224),"
        " transforms.AutoAugment()])\n" + DDP_TAIL,
        DDP_HEAD + "import numpy as np\nimport random\nfrom torchvision import transforms\n"
        "model = DDP(net)\nseed = SEED + dist.get_rank()\ntorch.manual_seed(seed)\n"
        "np.random.seed(seed)\nrandom.seed(seed)\n"
        "train_transform = transforms.Compose([transforms.RandomResizedCrop(224),"
        " transforms.AutoAugment()])\n" + DDP_TAIL,
    ),
    # corpus 11's false findings (seen), each fixed at the rule
    "a save in the single-process else of a DIST_TRAIN flag": (
        "DDL106",
        DDP_HEAD + "model = DDP(net)\ntorch.save(model.state_dict(), 'w.pth')\n" + DDP_TAIL,
        DDP_HEAD + "if cfg.MODEL.DIST_TRAIN:\n    model = DDP(net)\n"
        "    if dist.get_rank() == 0:\n        torch.save(model.module.state_dict(), 'w.pth')\n"
        "else:\n    model = net\n    torch.save(model.state_dict(), 'w.pth')\n" + DDP_TAIL,
    ),
    "a --local_rank handed out by the script's own launcher": (
        "DDL101",
        "import argparse\nimport torch.distributed as dist\np = argparse.ArgumentParser()\n"
        "p.add_argument('--local_rank', type=int, default=0)\nargs = p.parse_args()\n"
        "torch.cuda.set_device(args.local_rank)\ndist.init_process_group('nccl')\n",
        "import argparse\nimport torch.distributed as dist\nfrom torch.multiprocessing import Process\n"
        "p = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int, default=0)\n"
        "def init_processes(rank, size, fn, args):\n    dist.init_process_group('nccl', rank=rank)\n"
        "    fn(args)\nif __name__ == '__main__':\n    args = p.parse_args()\n"
        "    for rank in range(2):\n        args.local_rank = rank\n"
        "        Process(target=init_processes, args=(rank, 2, main, args)).start()\n",
    ),
    "a folder made at module level or in __main__ before the script starts its processes": (
        "DDL137",
        "import os\nimport torch.distributed as dist\ndef worker(rank):\n"
        "    dist.init_process_group('gloo', rank=rank, world_size=2)\n"
        "    if not os.path.exists('checkpoints'):\n        os.makedirs('checkpoints')\n",
        "import os\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "from torch.multiprocessing import Process\nif not os.path.exists('logs'):\n    os.makedirs('logs')\n"
        "def worker(rank):\n    dist.init_process_group('gloo', rank=rank, world_size=2)\n"
        "if __name__ == '__main__':\n    if not os.path.exists(args.save):\n        os.makedirs(args.save)\n"
        "    Process(target=worker, args=(0,)).start()\n    mp.spawn(worker, nprocs=2)\n",
    ),
    "a worker_init_fn's seed is each worker's own": (
        "DDL142",
        DDP_HEAD
        + "import random\nfrom torchvision import transforms\nrandom.seed(args.manual_seed)\n"
        "aug = transforms.RandomCrop(32)\n" + DDP_TAIL,
        DDP_HEAD + "import random\nfrom torchvision import transforms\n"
        "def worker_init_fn(worker_id):\n    random.seed(args.manual_seed + worker_id)\n"
        "aug = transforms.RandomCrop(32)\n" + DDP_TAIL,
    ),
    # corpus 45 (seen): arcface-pytorch seeds every rank alike, then each loader's workers per rank
    "the loaders' workers seeded per rank through partial(worker_init_fn, rank=rank)": (
        "DDL142",
        DDP_HEAD + "from functools import partial\nfrom torchvision import transforms\n"
        "torch.manual_seed(11)\naug = transforms.RandomCrop(32)\n"
        "loader = torch.utils.data.DataLoader(ds, num_workers=4, worker_init_fn=worker_init_fn)\n"
        + DDP_TAIL,
        DDP_HEAD + "from functools import partial\nfrom torchvision import transforms\n"
        "torch.manual_seed(11)\naug = transforms.RandomCrop(32)\nloader = torch.utils.data.DataLoader(ds, "
        "num_workers=4, worker_init_fn=partial(worker_init_fn, rank=rank, seed=11))\n" + DDP_TAIL,
    ),
    "a --world_size flag's default as the world size of a launched script": (
        "DDL141",
        "import argparse\nimport torch\nimport torch.distributed as dist\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', default=0, type=int)\n"
        "parser.add_argument('--world_size', default=4, type=int)\nargs = parser.parse_args()\n"
        "dist.init_process_group(backend='nccl', world_size=args.world_size)\n",
        "import argparse\nimport os\nimport torch\nimport torch.distributed as dist\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--world_size', default=1, type=int)\n"
        "args = parser.parse_args()\nargs.world_size = int(os.environ.get('WORLD_SIZE', args.world_size))\n"
        "dist.init_process_group(backend='nccl', world_size=args.world_size)\n",
    ),
    # corpus 12's false findings (seen), each fixed at the rule
    "local rank 0 is rank 0 where the script makes the local rank the global one": (
        "DDL107",
        DDP_HEAD.replace("dist.init_process_group('gloo')\n", "")
        + "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "dist.init_process_group('nccl', init_method='env://')\nmodel = DDP(net)\n"
        "if local_rank == 0:\n    torch.save(model.module.state_dict(), 'model.pt')\n" + DDP_TAIL,
        DDP_HEAD.replace("dist.init_process_group('gloo')\n", "")
        + "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "dist.init_process_group('nccl', rank=local_rank, world_size=world_size)\nmodel = DDP(net)\n"
        "if local_rank == 0:\n    torch.save(model.module.state_dict(), 'model.pt')\n" + DDP_TAIL,
    ),
    "accelerate's unscale_gradients() before a torch clip": (
        "DDL121",
        ACCELERATE_HEAD + "accelerator.backward(loss)\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        ACCELERATE_HEAD + "accelerator.backward(loss)\naccelerator.unscale_gradients()\n"
        "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    ),
    "an attribute read in the else of is_parallel(model)": (
        "DDL125",
        DDP_HEAD + "model = DDP(net)\ndet_idx = model.model.detector_index\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\n"
        "det = model.module.model[0] if is_parallel(model) else model.model[0]\n" + DDP_TAIL,
    ),
    "the GPU count bound in the function that starts the group, not a parameter of the same name": (
        "DDL141",
        "import torch\nimport torch.distributed as dist\n"
        "def setup(rank):\n    world_size = torch.cuda.device_count()\n"
        "    dist.init_process_group('nccl', rank=rank, world_size=world_size)\n",
        # SEA-RAFT's ddp_utils (corpus 27, seen): init_ddp counts the GPUs for mp.spawn in its caller;
        # setup_ddp's world_size is what that caller passes
        "import torch\nimport torch.distributed as dist\n"
        "def init_ddp():\n    world_size = torch.cuda.device_count()\n    return world_size\n"
        "def setup_ddp(rank, world_size):\n"
        "    dist.init_process_group('nccl', rank=rank, world_size=world_size)\n",
    ),
    "the leftover micro-batches' step after the loop is the same accumulation, reported once": (
        "DDL119",
        DDP_HEAD + "model = DDP(net)\ndef train_epoch(model, loader):\n"
        "    for step, x in enumerate(loader):\n        model(x).sum().backward()\n"
        "        if step % accumulation_steps == 0:\n            optimizer.step()\n"
        "    if last_step % accumulation_steps != 0:\n        optimizer.step()\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\ndef train_epoch(model, loader):\n"
        "    for step, x in enumerate(loader):\n        with model.no_sync():\n"
        "            model(x).sum().backward()\n"
        "        if step % accumulation_steps == 0:\n            optimizer.step()\n" + DDP_TAIL,
    ),
    "a backward inside the step's own branch accumulates nothing": (
        "DDL119",
        DDP_HEAD + "model = DDP(net)\nfor i, x in enumerate(loader):\n    loss = model(x)\n"
        "    loss.backward()\n    if (i + 1) % accum == 0:\n        optimizer.step()\n"
        "        optimizer.zero_grad()\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nfor i, x in enumerate(loader):\n    loss = model(x)\n"
        "    if (i + 1) % step_iteration == 0:\n        optimizer.zero_grad()\n"
        "        loss.backward()\n        optimizer.step()\n" + DDP_TAIL,
    ),
    "the GPU count as the world size of a torch.distributed.launch script": (
        "DDL141",
        "import torch\nimport torch.distributed as dist\nimport argparse\n"
        "p = argparse.ArgumentParser()\np.add_argument('--local-rank', type=int)\nargs = p.parse_args()\n"
        "args.world_size = torch.cuda.device_count()\n"
        "dist.init_process_group('nccl', init_method='env://', world_size=args.world_size,\n"
        "                        rank=args.local_rank)\n"
        "sampler = torch.utils.data.DistributedSampler(ds, num_replicas=args.world_size)\n"
        + DDP_TAIL,
        "import torch\nimport torch.distributed as dist\nimport os\n"
        "dist.init_process_group('nccl')\nworld_size = dist.get_world_size()\n"
        "ngpus = torch.cuda.device_count()\nprint(f'{world_size} processes, {ngpus} GPUs here')\n"
        "sampler = torch.utils.data.DistributedSampler(ds, num_replicas=world_size)\n" + DDP_TAIL,
    ),
    # -- a summed training loss under DDP / Accelerate (a VAE migrated with the guide) ----------------------
    "summed loss under DDP": (
        "DDL123",
        DDP_HEAD + "model = DDP(Vae())\n"
        "def elbo(recon, x, mu, logvar):\n"
        "    bce = F.binary_cross_entropy(recon, x, reduction='sum')\n"
        "    return bce - 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
        "for x in loader:\n    loss = elbo(*model(x), x)\n    loss.backward()\n"
        "    optimizer.step()\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(Vae())\n"
        "def elbo(recon, x, mu, logvar):\n"
        "    bce = F.binary_cross_entropy(recon, x, reduction='sum')\n"
        "    return bce - 0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
        "for x in loader:\n    loss = elbo(*model(x), x) * dist.get_world_size()\n"
        "    loss.backward()\n    optimizer.step()\n" + DDP_TAIL,
    ),
    "summed loss under Accelerate": (
        "DDL123",
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "criterion = torch.nn.MSELoss(reduction='sum')\n"
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    accelerator.backward(loss)\n"
        "    optimizer.step()\n",
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "criterion = torch.nn.MSELoss(reduction='sum')\n"
        "for x, y in loader:\n    loss = criterion(model(x), y)\n"
        "    loss *= accelerator.num_processes  # DDP averages: the sum over the global batch\n"
        "    accelerator.backward(loss)\n    optimizer.step()\n",
    ),
    "a summed evaluation loss is not a training loss": (
        "DDL123",
        DDP_HEAD + "model = DDP(net)\nfor x, y in loader:\n"
        "    F.cross_entropy(model(x), y, reduction='sum').backward()\n" + DDP_TAIL,
        DDP_HEAD
        + "model = DDP(net)\nfor x, y in loader:\n    F.cross_entropy(model(x), y).backward()\n"
        "def test(model, loader):\n    total = 0.0\n    for x, y in loader:\n"
        "        total += F.cross_entropy(model(x), y, reduction='sum').item()\n"
        "    with torch.no_grad():\n        s = F.cross_entropy(model(x), y, reduction='sum')\n"
        + DDP_TAIL,
    ),
    # -- the global rank as a device, assigned in a tuple (a Siamese network migrated with the guide) ------
    "tuple-assigned global rank as a device": (
        "DDL117",
        DDP_HEAD + "rank, world_size = dist.get_rank(), dist.get_world_size()\n"
        "model = DDP(net.to(rank), device_ids=[rank])\n" + DDP_TAIL,
        DDP_HEAD + "import os\n"
        "local_rank, world_size = int(os.environ['LOCAL_RANK']), dist.get_world_size()\n"
        "model = DDP(net.to(local_rank), device_ids=[local_rank])\n" + DDP_TAIL,
    ),
    # -- shuffle=True through a kwargs dict beside a sampler (pytorch/examples' loader-kwargs style) -------
    "shuffle=True in a kwargs dict literal": (
        "DDL104",
        DDP_HEAD + "loader_kwargs = {'batch_size': 64, 'shuffle': True}\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler, **loader_kwargs)\n"
        "sampler.set_epoch(0)\n" + DDP_TAIL,
        DDP_HEAD + "loader_kwargs = {'batch_size': 64}\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler, **loader_kwargs)\n"
        "sampler.set_epoch(0)\n" + DDP_TAIL,
    ),
    "shuffle=True merged into the kwargs by update()": (
        "DDL104",
        DDP_HEAD + "train_kwargs = {'batch_size': 64}\n"
        "if use_cuda:\n    extra = dict(num_workers=1, pin_memory=True, shuffle=True)\n"
        "    train_kwargs.update(extra)\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler, **train_kwargs)\n"
        "sampler.set_epoch(0)\n" + DDP_TAIL,
        DDP_HEAD + "train_kwargs = {'batch_size': 64}\n"
        "if use_cuda:\n    extra = dict(num_workers=1, pin_memory=True)\n"
        "    train_kwargs.update(extra)\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler, **train_kwargs)\n"
        "sampler.set_epoch(0)\n" + DDP_TAIL,
    ),
    # -- DDL108: a barrier on each side of a rank check, written as a context manager ----------------------
    "torch_distributed_zero_first-style manager": (
        "DDL108",
        DDP_HEAD + "from contextlib import contextmanager\n@contextmanager\n"
        "def main_first(local_rank):\n    if local_rank not in [-1, 0]:\n        dist.barrier()\n"
        "    yield\n" + DDP_TAIL,
        DDP_HEAD + "from contextlib import contextmanager\n@contextmanager\n"
        "def main_first(local_rank):\n    if local_rank not in [-1, 0]:\n        dist.barrier()\n"
        "    yield\n    if local_rank == 0:\n        dist.barrier()\n" + DDP_TAIL,
    ),
    "`if RANK != -1:` means distributed: every rank enters": (
        "DDL108",
        DDP_HEAD
        + "RANK = int(os.getenv('RANK', -1))\nif RANK == 0:\n    dist.all_reduce(t)\n"
        + DDP_TAIL,
        DDP_HEAD + "RANK = int(os.getenv('RANK', -1))\nif RANK != -1:\n    dist.all_reduce(t)\n"
        "if RANK == -1 or dist.get_world_size() == 1:\n    print(t)\n" + DDP_TAIL,
    ),
    # -- DDL107: per-rank file names and a function that returns unless main ------------------------------
    "a per-rank file name is one file per process": (
        "DDL107",
        DDP_HEAD + "rank = dist.get_rank()\ntorch.save(queue, 'queue.pt')\n" + DDP_TAIL,
        DDP_HEAD + "rank = dist.get_rank()\ntorch.save(queue, 'queue' + str(rank) + '.pt')\n"
        "torch.save(state, f'{out}/shard_{rank}.pt')\n" + DDP_TAIL,
    ),
    "a per-rank file name bound to a variable first is one file per process": (
        "DDL107",
        DDP_HEAD + "def train(args):\n    path = os.path.join(args.out, 'queue.pth')\n"
        "    torch.save({'queue': queue}, path)\n" + DDP_TAIL,
        DDP_HEAD
        + "def train(args):\n    path = os.path.join(args.out, 'queue' + str(args.rank) + '.pth')\n"
        "    for epoch in range(3):\n        torch.save({'queue': queue}, path)\n" + DDP_TAIL,
    ),
    "a save after `if not is_main: return`": (
        "DDL107",
        DDP_HEAD + "def save_model(model, path):\n    model = model.module\n"
        "    torch.save(model.state_dict(), path)\nsave_model(model, 'w.pt')\n" + DDP_TAIL,
        DDP_HEAD + "def save_model(model, path):\n    if dist.get_rank() != 0:\n        return\n"
        "    torch.save(model.module.state_dict(), path)\nsave_model(model, 'w.pt')\n" + DDP_TAIL,
    ),
    "a save hook passed to accelerate is called where accelerate decides": (
        "DDL107",
        ACCELERATE_HEAD + "def save_model_hook(models, weights, output_dir):\n"
        "    for model in models:\n        model.save_pretrained(output_dir)\n"
        "save_model_hook(models, [], 'out')\n",
        ACCELERATE_HEAD + "def save_model_hook(models, weights, output_dir):\n"
        "    for model in models:\n        model.save_pretrained(output_dir)\n"
        "accelerator.register_save_state_pre_hook(save_model_hook)\n",
    ),
    "one file per item of the rank's own work is not one file": (
        "DDL107",
        ACCELERATE_HEAD + "import json\nwith open(out / 'results.json', 'w') as f:\n"
        "    json.dump(results, f)\n",
        ACCELERATE_HEAD + "import json\nfor item in queue_items:\n    name = item.hash\n"
        "    with (out / f'{name}.json').open('w') as f:\n        json.dump(item.caption, f)\n"
        "    with open(out / f'{item.id}.txt', 'w') as g:\n        json.dump(item.text, g)\n"
        "def test_config(tmp):\n    with open(tmp / 'c.json', 'w') as f:\n        json.dump({}, f)\n"
        "json.dump(results, handle_from_elsewhere)\n",
    ),
    # -- DDL107: every rank writing one file through a library call --------------------------------------
    "pickle or yaml dumped on every rank, the handle opened in the call": (
        "DDL107",
        DDP_HEAD + "import os\nimport pickle\nimport ruamel_yaml as yaml\n"
        "pickle.dump(params, open(os.path.join(params.dump_path, 'params.pkl'), 'wb'))\n"
        "yaml.dump(config, open(os.path.join(args.output_dir, 'config.yaml'), 'w'))\n" + DDP_TAIL,
        DDP_HEAD + "import os\nimport pickle\nimport ruamel_yaml as yaml\n"
        "if dist.get_rank() == 0:\n"
        "    pickle.dump(params, open(os.path.join(params.dump_path, 'params.pkl'), 'wb'))\n"
        "    yaml.dump(config, open(os.path.join(args.output_dir, 'config.yaml'), 'w'))\n"
        + DDP_TAIL,
    ),
    "save_pretrained on every rank": (
        "DDL107",
        ACCELERATE_HEAD + "model = accelerator.prepare(model)\n"
        "accelerator.unwrap_model(model).save_pretrained(args.output_dir)\n",
        ACCELERATE_HEAD + "model = accelerator.prepare(model)\n"
        "accelerator.unwrap_model(model).save_pretrained(\n"
        "    args.output_dir, is_main_process=accelerator.is_main_process, save_function=accelerator.save\n)\n"
        "if accelerator.is_main_process:\n    tokenizer.save_pretrained(args.output_dir)\n",
    ),
    "to_csv on every rank": (
        "DDL107",
        DDP_HEAD
        + "import pandas as pd\npd.DataFrame(rows).to_csv('results.csv', index=False)\n"
        + DDP_TAIL,
        DDP_HEAD + "import pandas as pd\nif dist.get_rank() == 0:\n"
        "    pd.DataFrame(rows).to_csv('results.csv', index=False)\n"
        "csv_text = pd.DataFrame(rows).to_csv()\n" + DDP_TAIL,
    ),
    "json.dump on every rank": (
        "DDL107",
        DDP_HEAD
        + "import json\nwith open('metrics.json', 'w') as f:\n    json.dump(metrics, f)\n"
        + DDP_TAIL,
        DDP_HEAD
        + "import json\nif dist.get_rank() == 0:\n    with open('metrics.json', 'w') as f:\n"
        "        json.dump(metrics, f)\n"
        "with open(f'metrics_rank{dist.get_rank()}.json', 'w') as f:\n    json.dump(metrics, f)\n"
        + DDP_TAIL,
    ),
    "one save per node: rank % ngpus_per_node == 0": (
        "DDL107",
        DDP_HEAD + "def save_checkpoint(state, filename='checkpoint.pth.tar'):\n"
        "    torch.save(state, filename)\n"
        "if not distributed or (distributed and args.rank % ngpus_per_node == 0):\n"
        "    save_checkpoint({'epoch': epoch})\n" + DDP_TAIL,
        DDP_HEAD + "def save_checkpoint(state, filename='checkpoint.pth.tar'):\n"
        "    torch.save(state, filename)\n"
        "if not distributed or (distributed and args.rank == 0):\n"
        "    save_checkpoint({'epoch': epoch})\n" + DDP_TAIL,
    ),
    # -- DDL102: the old-API fallback after the new one was tried -----------------------------------------
    "torch.cuda.amp as the fallback of torch.amp": (
        "DDL102",
        "import torch\nfrom torch.cuda.amp import GradScaler\nscaler = GradScaler()\n",
        "import torch\ntry:\n    from torch.amp import GradScaler\n    scaler = GradScaler('cuda')\n"
        "except ImportError:  # torch < 2.3\n    from torch.cuda.amp import GradScaler\n"
        "    scaler = GradScaler()\n"
        "if hasattr(torch, 'amp'):\n    autocast = torch.amp.autocast('cuda')\nelse:\n"
        "    autocast = torch.cuda.amp.autocast()\n"
        "scaler = torch.amp.GradScaler('cuda') if TORCH_GE_2_4 else torch.cuda.amp.GradScaler()\n",
    ),
    # -- DDL119: the accumulation shapes it did not know ---------------------------------------------------
    "accumulation by `ni - last_opt_step >= accumulate`": (
        "DDL119",
        DDP_HEAD
        + "model = DDP(net)\nfor i, (x, y) in enumerate(loader):\n    ni = i + nb * epoch\n"
        "    scaler.scale(model(x).sum()).backward()\n    if ni - last_opt_step >= accumulate:\n"
        "        scaler.step(optimizer)\n        scaler.update()\n        last_opt_step = ni\n"
        + DDP_TAIL,
        DDP_HEAD
        + "model = DDP(net)\nfor i, (x, y) in enumerate(loader):\n    ni = i + nb * epoch\n"
        "    step_now = ni - last_opt_step >= accumulate\n"
        "    with (contextlib.nullcontext() if step_now else model.no_sync()):\n"
        "        scaler.scale(model(x).sum()).backward()\n    if step_now:\n"
        "        scaler.step(optimizer)\n        scaler.update()\n        last_opt_step = ni\n"
        + DDP_TAIL,
    ),
    "the step inside a loss-scaler call": (
        "DDL119",
        "import util.misc as misc\ndef train_one_epoch(model, loader, optimizer, loss_scaler):\n"
        "    for it, (x, _) in enumerate(loader):\n        loss = model(x) / accum_iter\n"
        "        loss_scaler(loss, optimizer, update_grad=(it + 1) % accum_iter == 0)\n"
        "        misc.all_reduce_mean(loss.item())\n",
        "import util.misc as misc\ndef train_one_epoch(model, loader, optimizer, loss_scaler):\n"
        "    for it, (x, _) in enumerate(loader):\n        loss = model(x) / accum_iter\n"
        "        last = (it + 1) % accum_iter == 0\n"
        "        with (contextlib.nullcontext() if last else model.no_sync()):\n"
        "            loss_scaler(loss, optimizer, update_grad=last)\n"
        "        misc.all_reduce_mean(loss.item())\n",
    ),
    "`continue` until the last micro-batch": (
        "DDL119",
        DDP_HEAD + "model = DDP(net)\nfor i, x in enumerate(loader):\n"
        "    (model(x).sum() / accum).backward()\n    if (i + 1) % accum != 0:\n        continue\n"
        "    optimizer.step()\n    optimizer.zero_grad()\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nfor i, x in enumerate(loader):\n"
        "    sync = (i + 1) % accum == 0\n"
        "    with (contextlib.nullcontext() if sync else model.no_sync()):\n"
        "        (model(x).sum() / accum).backward()\n    if not sync:\n        continue\n"
        "    optimizer.step()\n    optimizer.zero_grad()\n" + DDP_TAIL,
    ),
    "an inner loop over micro-batches": (
        "DDL119",
        DDP_HEAD + "model = DDP(net)\nfor batch in loader:\n    for micro in batch.chunk(4):\n"
        "        (model(micro).sum() / 4).backward()\n    optimizer.step()\n    optimizer.zero_grad()\n"
        + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nfor batch in loader:\n    micros = batch.chunk(4)\n"
        "    with model.no_sync():\n        for micro in micros[:-1]:\n"
        "            (model(micro).sum() / 4).backward()\n    (model(micros[-1]).sum() / 4).backward()\n"
        "    optimizer.step()\n    optimizer.zero_grad()\n" + DDP_TAIL,
    ),
    "no_sync taken as a value, not called (accelerate's autoregressive accumulation)": (
        "DDL119",
        ACCELERATE_HEAD + "model, optimizer = accelerator.prepare(model, optimizer)\n"
        "for batches in groups:\n    for i, batch in enumerate(batches):\n"
        "        accelerator.backward(model(batch).loss)\n    optimizer.step()\n",
        ACCELERATE_HEAD + "model, optimizer = accelerator.prepare(model, optimizer)\n"
        "for batches in groups:\n    for i, batch in enumerate(batches):\n"
        "        ctx = model.no_sync if i < len(batches) - 1 else contextlib.nullcontext\n"
        "        with ctx():\n            accelerator.backward(model(batch).loss)\n"
        "    optimizer.step()\n",
    ),
    "a model made here and never wrapped all-reduces nothing": (
        "DDL119",
        "import torch.distributed as dist\ndef train_one_epoch(model, loader, optimizer, accum):\n"
        "    for step, x in enumerate(loader):\n        (model(x).sum() / accum).backward()\n"
        "        if (step + 1) % accum == 0:\n            optimizer.step()\n"
        "    return dist.get_world_size()\n",
        "import torch.distributed as dist\ndef main():\n    net = Net()\n"
        "    for task in range(tasks):\n        for x in loader:\n"
        "            (net(x).sum() / tasks).backward()\n        optimizer.step()\n"
        "    return dist.get_world_size()\n",
    ),
    "a training loop whose DDP wrap is in another module": (
        "DDL119",
        "import torch.distributed as dist\ndef train_one_epoch(model, loader, optimizer, accum):\n"
        "    for step, x in enumerate(loader):\n        (model(x).sum() / accum).backward()\n"
        "        if (step + 1) % accum == 0:\n            optimizer.step()\n"
        "            optimizer.zero_grad()\n    return dist.get_world_size()\n",
        "import torch.distributed as dist\ndef train_one_epoch(model, loader, optimizer, accum):\n"
        "    for step, x in enumerate(loader):\n        last = (step + 1) % accum == 0\n"
        "        with (contextlib.nullcontext() if last else model.no_sync()):\n"
        "            (model(x).sum() / accum).backward()\n        if last:\n"
        "            optimizer.step()\n            optimizer.zero_grad()\n"
        "    return dist.get_world_size()\n",
    ),
    # -- DDL114: a reduce elsewhere in the file no longer hides the test's denominator; a progress line is
    # -- not a metric ---------------------------------------------------------------------------------------
    "a test sum divided by the whole set beside a training-loss reduce": (
        "DDL114",
        DDP_HEAD + "sampler = DistributedSampler(test_set, shuffle=False)\nsampler.set_epoch(0)\n"
        "dist.all_reduce(train_loss)\ntest_loss = 0.0\nfor x, y in test_loader:\n"
        "    test_loss += F.nll_loss(model(x), y, reduction='sum').item()\n"
        "test_loss /= len(test_loader.dataset)\n" + DDP_TAIL,
        DDP_HEAD + "sampler = DistributedSampler(test_set, shuffle=False)\nsampler.set_epoch(0)\n"
        "dist.all_reduce(train_loss)\ntest_loss = torch.zeros(())\nfor x, y in test_loader:\n"
        "    test_loss += F.nll_loss(model(x), y, reduction='sum')\ndist.all_reduce(test_loss)\n"
        "test_loss /= len(test_loader.dataset)\n"
        "print(f'[{seen}/{len(train_loader.dataset)}] loss {loss.item():.4f}')\n" + DDP_TAIL,
    ),
    # -- a validation loss of one rank's shard, logged by rank 0 -------------------------------------------
    "validation loss logged by rank 0 without a reduction": (
        "DDL124",
        DDP_HEAD
        + "val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set, shuffle=False))\n"
        "def validate(model):\n    total, n = 0.0, 0\n    with torch.no_grad():\n"
        "        for x, y in val_loader:\n"
        "            total += F.cross_entropy(model(x), y, reduction='sum').item()\n"
        "            n += len(y)\n    return total / n\n"
        "val_loss = validate(model)\nif dist.get_rank() == 0:\n    print(f'val loss {val_loss:.4f}')\n"
        + DDP_TAIL,
        DDP_HEAD
        + "val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set, shuffle=False))\n"
        "def validate(model):\n    sums = torch.zeros(2)\n    with torch.no_grad():\n"
        "        for x, y in val_loader:\n"
        "            sums[0] += F.cross_entropy(model(x), y, reduction='sum')\n"
        "            sums[1] += len(y)\n    dist.all_reduce(sums)\n    return (sums[0] / sums[1]).item()\n"
        "val_loss = validate(model)\nif dist.get_rank() == 0:\n    print(f'val loss {val_loss:.4f}')\n"
        + DDP_TAIL,
    ),
    # -- DDL125: the model's own attributes through the wrapper (llm.c's sampling block) ---------------------
    "a method of the model called through the DDP wrapper": (
        "DDL125",
        DDP_HEAD
        + "model = GPT(config)\nraw = model\nif ddp:\n    model = DDP(model, device_ids=[0])\n"
        "for step in range(10):\n    loss = model(x, y)\n"
        "    if master_process:\n        out = model.generate(idx, 32)\n        enc = model.tokenizer\n"
        + DDP_TAIL,
        DDP_HEAD
        + "model = GPT(config)\nraw = model\nif ddp:\n    model = DDP(model, device_ids=[0])\n"
        "for step in range(10):\n    loss = model(x, y)\n    model.train()\n"
        "    if master_process:\n        out = raw.generate(idx, 32)\n"
        "        cfg = model.module.config if hasattr(model, 'module') else model.config\n"
        "def sample(model):\n    return model.generate(idx)\n" + DDP_TAIL,
    ),
    "an attribute through a wrapper kept on self": (
        "DDL125",
        DDP_HEAD
        + "class Trainer:\n    def __init__(self, model):\n        self.model = DDP(model)\n"
        "    def sample(self):\n        return self.model.generate(self.idx)\n" + DDP_TAIL,
        DDP_HEAD
        + "class Trainer:\n    def __init__(self, model):\n        self.model = DDP(model)\n"
        "    def sample(self):\n        return self.model.module.generate(self.idx)\n" + DDP_TAIL,
    ),
    "an attribute of a model accelerate prepared": (
        "DDL125",
        ACCELERATE_HEAD + "model, optimizer = accelerator.prepare(model, optimizer)\n"
        "model.config.use_cache = False\n",
        ACCELERATE_HEAD + "model, optimizer = accelerator.prepare(model, optimizer)\n"
        "accelerator.unwrap_model(model).config.use_cache = False\nmodel.eval()\n",
    ),
    "a model's attribute tested on the DDP wrapper (X-VLM's optimizer groups, corpus 26, seen)": (
        "DDL125",
        DDP_HEAD + "model = DDP(net)\nif hasattr(model, 'init_params'):\n"
        "    groups = model.module.init_params\n" + DDP_TAIL,
        DDP_HEAD + "model = DDP(net)\nif hasattr(model.module, 'init_params'):\n"
        "    groups = model.module.init_params\nwrapped = hasattr(model, 'module')\n"
        "wd = getattr(model.module, 'no_weight_decay', None)\n" + DDP_TAIL,
    ),
    "a name bound to the model again after the wrap is the model": (
        "DDL125",
        DDP_HEAD + "model = DDP(model)\nmodel.decode(z)\n" + DDP_TAIL,
        DDP_HEAD
        + "model.decode(z)\nmodel = DDP(model)\nmodel = model.module\nmodel.decode(z)\n"
        + DDP_TAIL,
    ),
    # -- DDL126: a GPU count written in (improved-diffusion's dist_util) -----------------------------------
    "a GPU count written in": (
        "DDL126",
        DDP_HEAD + "GPUS_PER_NODE = 8\nrank = dist.get_rank()\n"
        "device = torch.device(f'cuda:{rank % GPUS_PER_NODE}')\n" + DDP_TAIL,
        DDP_HEAD + "import os\nrank = dist.get_rank()\n"
        "device = torch.device(f'cuda:{int(os.environ[\"LOCAL_RANK\"])}')\n"
        "gpu = rank % torch.cuda.device_count()\nshard = rank % 8\n" + DDP_TAIL,
    ),
    # -- what a second never-seen set read (corpus 3 in doctor.md) ------------------------------------------
    "a save under local_rank == 0 is one per node": (
        "DDL107",
        DDP_HEAD + "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "if local_rank == 0:\n    torch.save(model.state_dict(), 'snapshot.pt')\n" + DDP_TAIL,
        DDP_HEAD + "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'snapshot.pt')\n"
        "if local_rank == 0:\n    print('saved')\n" + DDP_TAIL,
    ),
    "a save in the function mp.spawn runs is on every rank": (
        "DDL107",
        DDP_HEAD + "import torch.multiprocessing as mp\n"
        "def train(rank, world):\n    torch.save(model.state_dict(), 'w.pth')\n"
        "def run(fn, world):\n    mp.spawn(fn, args=(world,), nprocs=world)\nrun(train, 2)\n"
        + DDP_TAIL,
        DDP_HEAD + "import torch.multiprocessing as mp\n"
        "def train(rank, world):\n    if rank == 0:\n        torch.save(model.state_dict(), 'w.pth')\n"
        "def on_save(state):\n    torch.save(state, 'hook.pth')\n"
        "accelerator.register_save_state_pre_hook(on_save)\n"
        "def run(fn, world):\n    mp.spawn(fn, args=(world,), nprocs=world)\nrun(train, 2)\n"
        + DDP_TAIL,
    ),
    "a method a rank decorator guards, and a save into memory, write no file": (
        "DDL107",
        DDP_HEAD
        + "class Runner:\n    def save(self):\n        torch.save(self.state, 'ckpt.pth')\n"
        + DDP_TAIL,
        DDP_HEAD + "import io\nclass Runner:\n    @main_process\n    def save(self):\n"
        "        torch.save(self.state, 'ckpt.pth')\n"
        "    def upload(self):\n        buffer = io.BytesIO()\n        torch.save(self.state, buffer)\n"
        + DDP_TAIL,
    ),
    "every rank writing a yaml through open(..., 'w'), numpy or matplotlib": (
        "DDL107",
        DDP_HEAD + "import numpy as np\nwith open('hyp.yaml', 'w') as f:\n    f.write(text)\n"
        "np.save('preds.npy', preds)\n" + DDP_TAIL,
        DDP_HEAD + "import numpy as np\nif dist.get_rank() == 0:\n"
        "    with open('hyp.yaml', 'w') as f:\n        f.write(text)\n"
        "    np.save('preds.npy', preds)\nwith open('log.txt', 'a') as f:\n    f.write(line)\n"
        "def save_yaml(path, data):\n    with open(path, 'w') as f:\n        f.write(data)\n"
        + DDP_TAIL,
    ),
    "accumulation on a model a project helper wrapped (smart_DDP)": (
        "DDL119",
        DDP_HEAD.replace("dist.init_process_group('gloo')\n", "")
        + "model = smart_DDP(model)\nfor i, (x, y) in enumerate(loader):\n"
        "    loss(model(x), y).backward()\n    if i - last_step >= accumulate:\n"
        "        optimizer.step()\n        last_step = i\n",
        DDP_HEAD.replace("dist.init_process_group('gloo')\n", "")
        + "model = smart_DDP(model)\nfor i, (x, y) in enumerate(loader):\n"
        "    loss(model(x), y).backward()\n    optimizer.step()\n"
        "    if x.size(0) % world_size != 0:\n        continue\n",
    ),
    "an FSDP script accumulates without no_sync on purpose": (
        "DDL119",
        DDP_HEAD + "model = DDP(model)\nfor i, batch in enumerate(loader):\n"
        "    model(batch).backward()\n    if (i + 1) % accum == 0:\n        optimizer.step()\n",
        DDP_HEAD.replace("dist.init_process_group('gloo')\n", "")
        + "if cfg.enable_fsdp:\n    model = wrap(model)\nfor i, batch in enumerate(loader):\n"
        "    model(batch).backward()\n    if (i + 1) % accum == 0:\n        optimizer.step()\n"
        "dist.get_rank()\n",
    ),
    "a padded eval sampler whose metrics are all-reduced": (
        "DDL127",
        DDP_HEAD + "val_sampler = DistributedSampler(val_data)\n"
        "val_loader = DataLoader(val_data, sampler=val_sampler)\ndist.all_reduce(intersection)\n"
        + DDP_TAIL,
        DDP_HEAD + "val_sampler = DistributedSampler(val_data)\n"
        "val_loader = DataLoader(val_data, sampler=val_sampler)\ndist.all_reduce(intersection)\n"
        "if len(val_loader.sampler) * world_size < len(val_data):\n    aux = Subset(val_data, rest)\n"
        "train_sampler = DistributedSampler(train_data, drop_last=True)\n" + DDP_TAIL,
    ),
    "a tracker on every rank": (
        "DDL128",
        DDP_HEAD + "import wandb\nwandb.init(project='x')\n" + DDP_TAIL,
        DDP_HEAD + "import wandb\nwriter = SummaryWriter(d) if dist.get_rank() == 0 else None\n"
        "if dist.get_rank() == 0:\n    wandb.init(project='x')\n"
        "class TbLogger:\n    def __init__(self, d):\n        self.w = SummaryWriter(d)\n"
        + DDP_TAIL,
    ),
    # -- from reading corpus 4 (36 public files, 19 repositories) -------------------------------------------
    "a dataset's .shuffle() without a seed on every rank": (
        "DDL116",
        "import os\nworld_size = int(os.environ.get('WORLD_SIZE', 1))\n"
        "train_data = data['train'].shuffle().map(tokenize)\n",
        "import os\nworld_size = int(os.environ.get('WORLD_SIZE', 1))\n"
        "train_data = data['train'].shuffle(seed=42).map(tokenize)\nrandom.shuffle(items)\n",
    ),
    "a context bound to a name, accelerate's accumulate, the forward in a helper handed the model": (
        "DDL130",
        ACCELERATE_HEAD + "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
        "for batch in loader:\n    loss = model(**batch).loss\n"
        "    with accelerator.accumulate(model):\n        accelerator.backward(loss)\n"
        "        opt.step()\n",
        ACCELERATE_HEAD + "model, opt, loader = accelerator.prepare(model, opt, loader)\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n"
        "        loss = compute_loss(model, batch)\n        accelerator.backward(loss)\n"
        "        opt.step()\n",
    ),
    "an EMA copied before the wrap, seeded per rank; after the wrap, or seeded alike, is the same copy": (
        "DDL131",
        DDP_HEAD + "from timm.utils import ModelEma\nseed = args.seed + dist.get_rank()\n"
        "torch.manual_seed(seed)\nmodel = create_model(args.model).cuda()\n"
        "model_ema = ModelEma(model, decay=0.9999)\nmodel = DDP(model, device_ids=[args.gpu])\n"
        + DDP_TAIL,
        DDP_HEAD
        + "import copy\nfrom timm.utils import ModelEma\nseed = args.seed + dist.get_rank()\n"
        "torch.manual_seed(args.seed)\nmodel = create_model(args.model).cuda()\n"
        "torch.manual_seed(seed)\nteacher = copy.deepcopy(model)\nmodel = DDP(model, device_ids=[args.gpu])\n"
        "model_ema = ModelEma(model.module, decay=0.9999)\n" + DDP_TAIL,
    ),
    "unfrozen before the wrap, frozen after, is what DDP registers": (
        "DDL129",
        DDP_HEAD + "def build(module):\n    module.requires_grad_(False)\n    ddp = DDP(module)\n"
        "    module.requires_grad_(True)\n    return ddp\n" + DDP_TAIL,
        DDP_HEAD
        + "def build(module):\n    module.requires_grad_(False)\n    module.requires_grad_(True)\n"
        "    ddp = DDP(module)\n    module.requires_grad_(False)\n    module.requires_grad_(True)\n"
        "    return ddp\n" + DDP_TAIL,
    ),
    "a save in a method called only under the main process, a write in the launcher": (
        "DDL107",
        DDP_HEAD + "import torch.multiprocessing as mp\nclass Trainer:\n"
        "    def save(self, m):\n        torch.save(self.state, f'model-{m}.pt')\n"
        "    def train(self):\n        self.save('last')\n" + DDP_TAIL,
        DDP_HEAD + "import torch.multiprocessing as mp\nclass Trainer:\n"
        "    def save(self, m):\n        torch.save(self.state, f'model-{m}.pt')\n"
        "    def train(self):\n        if self.accelerator.is_main_process:\n            self.save('last')\n"
        "def main():\n    with open('options.json', 'w') as f:\n        f.write(text)\n"
        "    mp.spawn(worker, nprocs=2)\n" + DDP_TAIL,
    ),
    "a flag made from the rank test guards as the test does": (
        "DDL107",
        DDP_HEAD + "args.should_save = args.logs is not None\nif args.should_save:\n"
        "    torch.save(state, 'epoch_latest.pt')\n" + DDP_TAIL,
        DDP_HEAD + "args.should_save = args.logs is not None and dist.get_rank() == 0\n"
        "if args.should_save:\n    torch.save(state, 'epoch_latest.pt')\n" + DDP_TAIL,
    ),
    "the initial weights saved before the wrap are not the wrapper's": (
        "DDL106",
        DDP_HEAD + "model = DDP(model)\nif dist.get_rank() == 0:\n"
        "    torch.save(model.state_dict(), 'init.pt')\n" + DDP_TAIL,
        DDP_HEAD + "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'init.pt')\n"
        "dist.barrier()\nmodel = DDP(model)\n" + DDP_TAIL,
    ),
    "a rank that prefers LOCAL_RANK is the local index": (
        "DDL117",
        DDP_HEAD
        + "import os\nrank = int(os.environ['RANK'])\ntorch.cuda.set_device(rank)\n"
        + DDP_TAIL,
        DDP_HEAD
        + "import os\nif 'LOCAL_RANK' in os.environ:\n    rank = int(os.environ['LOCAL_RANK'])\n"
        "else:\n    rank = int(os.environ['RANK'])\ntorch.cuda.set_device(rank)\n" + DDP_TAIL,
    ),
    "accumulation over an inner loop of accelerator.backward, a mode switch is not a count": (
        "DDL119",
        ACCELERATE_HEAD + "model, self.opt = accelerator.prepare(model, opt)\nwhile step < total:\n"
        "    for _ in range(accumulate_every):\n        accelerator.backward(model(next(dl)))\n"
        "    self.opt.step()\n",
        DDP_HEAD + "model = DDP(model)\nfor x in loader:\n    if args.accum_freq == 1:\n"
        "        model(x).backward()\n        optimizer.step()\n" + DDP_TAIL,
    ),
    "a padded eval sampler behind a conditional expression": (
        "DDL127",
        DDP_HEAD + "val_sampler = DistributedSampler(valset) if distributed else None\n"
        "reduced = reduce_tensor(loss.data, n_gpus)\n" + DDP_TAIL,
        DDP_HEAD
        + "val_sampler = DistributedSampler(valset, drop_last=True) if distributed else None\n"
        "reduced = reduce_tensor(loss.data, n_gpus)\n" + DDP_TAIL,
    ),
    # -- from reading corpus 6 (31 public files, 16 repositories) -------------------------------------------
    "both spellings of the launcher's argument parse": (
        "DDL101",
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"
        "args = p.parse_args()\ndevice = args.local_rank\n",
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--local-rank', type=int)\n"
        "p.add_argument('--local_rank', type=int)\nargs = p.parse_args()\ndevice = args.local_rank\n",
    ),
    "an MPI-style root worker guards; devnull and the __main__ launcher write no shared file": (
        "DDL107",
        DDP_HEAD + "import os\ndef save_model(path):\n    torch.save(state, path)\n"
        "save_model('dalle.pt')\n" + DDP_TAIL,
        DDP_HEAD + "import os, yaml\nimport torch.multiprocessing as mp\ndef save_model(path):\n"
        "    if not distr_backend.is_root_worker():\n        return\n    torch.save(state, path)\n"
        "save_model('dalle.pt')\nwith open(os.devnull, 'w') as f:\n    f.write('quiet')\n"
        "if __name__ == '__main__':\n    with open('cfg.yaml', 'w') as f:\n        yaml.dump(cfg, f)\n"
        "    mp.spawn(main, nprocs=2)\n" + DDP_TAIL,
    ),
    "set_epoch through a subscript is set_epoch": (
        "DDL105",
        DDP_HEAD + "sampler = {'train': DistributedSampler(train_set)}\n" + DDP_TAIL,
        DDP_HEAD + "sampler = {'train': DistributedSampler(train_set)}\n"
        "for epoch in range(3):\n    sampler['train'].set_epoch(epoch)\n" + DDP_TAIL,
    ),
    # -- corpus 27 (seen): every rank creating the same memmap anew ------------------------------------------
    "a memmap every rank opens with mode='w+'": (
        "DDL107",
        DDP_HEAD + "from numpy.lib.format import open_memmap\n"
        "pairs = open_memmap('pairs.npy', dtype='int', mode='w+', shape=(8, 2))\n" + DDP_TAIL,
        DDP_HEAD + "import numpy as np\nfrom numpy.lib.format import open_memmap\n"
        "pairs = open_memmap('pairs.npy', dtype='int', mode='r')\n"
        "if dist.get_rank() == 0:\n    mine = np.memmap('pairs.bin', 'int32', 'w+', shape=(8,))\n"
        + DDP_TAIL,
    ),
    # -- corpus 29 (seen): every rank writing the same Hugging Face dataset cache -------------------------------
    "a dataset's save_to_disk on every rank": (
        "DDL107",
        DDP_HEAD
        + "tokenized = dataset.map(tokenize)\ntokenized.save_to_disk('cache/tokenized')\n"
        + DDP_TAIL,
        DDP_HEAD + "tokenized = dataset.map(tokenize)\nif dist.get_rank() == 0:\n"
        "    tokenized.save_to_disk('cache/tokenized')\ndist.barrier()\n" + DDP_TAIL,
    ),
    # -- from reading corpus 5 (31 public files, 18 repositories) -------------------------------------------
    "`distributed = local_rank >= 0` is not a rank pick; a ddp_sync helper is no_sync": (
        "DDL108",
        DDP_HEAD + "if args.local_rank == 0:\n    dist.barrier()\n" + DDP_TAIL,
        DDP_HEAD
        + "distributed = args.local_rank >= 0\nif distributed:\n    dist.barrier()\n"
        + DDP_TAIL,
    ),
    "accumulation inside a project's ddp_sync context is synchronised once": (
        "DDL119",
        DDP_HEAD + "ddp = DDP(net)\nfor i in range(rounds):\n    ddp(x).backward()\n"
        "    if (i + 1) % rounds == 0:\n        optimizer.step()\n" + DDP_TAIL,
        DDP_HEAD + "ddp = DDP(net)\nfor i in range(rounds):\n"
        "    with misc.ddp_sync(ddp, i == rounds - 1):\n        ddp(x).backward()\n"
        "    if (i + 1) % rounds == 0:\n        optimizer.step()\n" + DDP_TAIL,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_mistake_is_found_and_the_right_shape_is_left_alone(name):
    code, bad, good = PAIRS[name]
    found = [f.code for f in doctor.check_source(bad)]
    assert code in found, (name, found)
    left = [f.code for f in doctor.check_source(good)]
    assert code not in left, (name, left)


def test_every_new_finding_is_reported_without_a_fix_that_changes_the_program():
    """The kwargs-dict shuffle is reported, not rewritten: the fix would have to edit the dict, which another
    loader may share."""
    (finding,) = [
        f
        for f in doctor.check_source(PAIRS["shuffle=True in a kwargs dict literal"][1])
        if f.code == "DDL104"
    ]
    assert not finding.fixable
    fallback = PAIRS["torch.cuda.amp as the fallback of torch.amp"][2]
    assert (
        doctor.check_source(fallback) == []
    )  # nothing for --fix to turn into the call that failed


# name: (code, a script that imports what it uses under another name)
ALIASED = {
    "DDP imported as Wrap": (
        "DDL112",
        "from torch.nn.parallel import DistributedDataParallel as Wrap\n"
        "model = Wrap(net, find_unused_parameters=True)\n",
    ),
    "a wrapped state_dict through the alias": (
        "DDL106",
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as Wrap\nmodel = Wrap(net)\n"
        "if rank == 0:\n    torch.save(model.state_dict(), 'w.pt')\n",
    ),
    "a collective imported under another name": (
        "DDL108",
        "from torch.distributed import all_reduce as sum_over_ranks\nif rank == 0:\n"
        "    sum_over_ranks(t)\n",
    ),
    "torch.distributed under a name of its own": (
        "DDL108",
        "import torch.distributed as comm\nif comm.get_rank() == 0:\n    comm.all_reduce(t)\n",
    ),
    "torch.save imported as persist": (
        "DDL107",
        "import torch.distributed as dist\nfrom torch import save as persist\n"
        "dist.init_process_group()\npersist(net.state_dict(), 'w.pt')\ndist.destroy_process_group()\n",
    ),
    "a sampler imported under another name": (
        "DDL105",
        "from torch.utils.data import DataLoader\nfrom torch.utils.data.distributed import "
        "DistributedSampler as Shard\nsampler = Shard(train_set)\n"
        "loader = DataLoader(train_set, sampler=sampler)\nfor epoch in range(3):\n"
        "    for x in loader:\n        step(x)\n",
    ),
}


@pytest.mark.parametrize("name", sorted(ALIASED))
def test_names_are_read_as_their_imports_make_them(name):
    """Qualified names (issue 33, item 1): whatever the script calls an import, the rule sees what it is."""
    code, source = ALIASED[name]
    assert code in [f.code for f in doctor.check_source(source)], name


def test_a_name_bound_again_after_its_import_is_the_scripts_own():
    _, source = ALIASED["a collective imported under another name"]
    shadowed = source.replace("\nif rank == 0:", "\nsum_over_ranks = print\nif rank == 0:")
    assert shadowed != source and doctor.check_source(shadowed) == []


def test_every_code_is_one_rule_class_and_every_class_one_code():
    """Issue 33, item 1: the registry is the list of classes; each owns one code (14 codes once shared one
    visitor)."""
    owners = [cls.code for cls in doctor.RULE_CLASSES]
    assert sorted(owners) == sorted(doctor.RULES) and len(set(owners)) == len(owners)
    assert all(cls.__doc__ and cls.__doc__.startswith(cls.code) for cls in doctor.RULE_CLASSES)


def test_a_progress_line_is_not_a_metric():
    """DDL114 fired on `len(loader.dataset)` anywhere; only a division by it is a metric."""
    source = (
        DDP_HEAD + "sampler = DistributedSampler(train_set)\nsampler.set_epoch(0)\n"
        "for i, (x, y) in enumerate(train_loader):\n"
        "    print(f'[{i * len(x)}/{len(train_loader.dataset)}]')\n"
        "    steps = len(train_loader.dataset) // batch_size\n" + DDP_TAIL
    )
    assert doctor.check_source(source) == []
    divided = source.replace("// batch_size", "/ batch_size\n    acc = correct / len(x.dataset)")
    assert [f.code for f in doctor.check_source(divided)] == ["DDL114"]


def test_an_epoch_loss_divided_by_the_length_of_the_set_the_sampler_shards():
    """DDL114, corpus 30: SRGAN-with-distributed-training hands `train_set` to its own `prepare(rank,
    world_size, dataset)`, which builds the DistributedSampler over it, and divides each rank's running loss by
    `len(train_set)`: 1/world_size of the mean. Not the length of a set nothing shards."""
    script = (
        DDP_HEAD + "def prepare(rank, world_size, dataset):\n"
        "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)\n"
        "    return DataLoader(dataset, sampler=sampler)\n"
        "loader = prepare(0, 2, train_set)\nrunning_loss = 0.0\n"
        "for x, y in loader:\n    running_loss += model(x).sum().item()\n"
        "losses.append({value} / len({name}))\n" + DDP_TAIL
    )
    rows = (  # the last: an epoch count (pytorch-ddpm-ddp's resume), no metric
        ("running_loss", "train_set", True),
        ("running_loss", "other_set", False),
        ("start_step * batch_size", "train_set", False),
    )
    assert_found("DDL114", script, ("value", "name"), rows)


def test_a_model_prepared_in_a_tuple_by_any_model_name():
    """DDL125, corpus 30: an SD3 LoRA trainer prepares `transformer, optimizer, train_dataloader, lr_scheduler`
    and calls `transformer.save_pretrained(...)` on the DDP wrapper (an AttributeError on several GPUs); the
    diffusers scripts' `unet.config`, `text_encoder.text_model` the same way. Not an optimizer or a scheduler
    named for the model it steps (`optimizer_generator`), nor an EMA copy (no gradients: never wrapped)."""
    script = (
        ACCELERATE_HEAD
        + "{name}, optimizer, loader = accelerator.prepare({name}, optimizer, loader)\n"
        "for x in loader:\n    accelerator.backward({name}(x).mean())\n    optimizer.step()\n"
        "{name}.save_pretrained('out')\n"
    )
    assert_found(
        "DDL125",
        script,
        ("name",),
        (
            ("transformer", True),
            ("unet", True),
            ("text_encoder", True),
            ("model", True),
            ("optimizer_generator", False),
            ("ema_model", False),
        ),
    )


def test_a_set_epoch_given_a_value_that_never_moves():
    """DDL105, corpus 30: CuiJiali-CV's pytorch-ddp calls `train_dl.sampler.set_epoch(global_step)` each epoch,
    with `global_step = 0` before the loop and never counted: every epoch shuffles as the first. Found for a
    constant too; not for the loop's own counter, a value the loop counts, or a global another function counts."""
    script = (
        DDP_HEAD + "step = 0\nsampler = DistributedSampler(train_set)\n"
        "loader = DataLoader(train_set, sampler=sampler)\n"
        "def train():\n{declare}    for epoch in range(9):\n        sampler.set_epoch({value})\n"
        "        for x, y in loader:\n            loss_fn(model(x), y).backward()\n{count}"
        + DDP_TAIL
    )
    assert_found(
        "DDL105",
        script,
        ("declare", "value", "count"),
        (
            ("    step = 0\n", "step", "", True),
            ("", "0", "", True),
            ("", "epoch", "", False),
            ("    step = 0\n", "step", "            step += 1\n", False),
            ("    global step\n", "step", "", False),
        ),
    )


def codes_of(template, **fields):
    """The codes doctor finds in a script template filled with `fields`."""
    return [f.code for f in doctor.check_source(template.format(**fields))]


def assert_found(code, template, names, rows):
    """Each row: the values of `names` to fill the template with, then whether doctor finds `code` in it."""
    for *values, expected in rows:
        fields = dict(zip(names, values))
        found = codes_of(template, **fields)
        assert (code in found) == expected, (fields, found)


def check_in_project(tmp_path, files, name, where=False):
    """doctor's command line on one file of a small project written to tmp_path: the neighbours are read.
    The codes found, or with `where`, (line, code) pairs."""
    for file, text in files.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(text)
    path = tmp_path / name
    source = path.read_text()
    found = doctor.check_source(source, str(path), neighbours=True)
    return {(f.line, f.code) for f in found} if where else [f.code for f in found]


def assert_found_in_project(tmp_path, code, files, name, rows):
    """Each row: a value for `name`'s template's one field, then whether doctor finds `code` in that file of the
    project `files` (the template is files[name])."""
    for i, (value, expected) in enumerate(rows):
        written = {**files, name: files[name].format(value)}
        found = check_in_project(tmp_path / f"p{i}", written, name)
        assert (code in found) is expected, (value, found)


ENGINE = (  # ConvNeXt's shape: the accumulation in engine.py, the DDP wrap in main.py
    "def train_one_epoch(model, loader, optimizer, update_freq):\n"
    "    for i, (x, y) in enumerate(loader):\n"
    "        loss = model(x).sum() / update_freq\n        loss.backward()\n"
    "        if (i + 1) % update_freq == 0:\n            optimizer.step()\n"
    "            optimizer.zero_grad()\n"
)


def test_accumulation_in_a_module_whose_importer_wraps_the_model_in_ddp(tmp_path):
    main = (
        DDP_HEAD + "from engine import train_one_epoch\nmodel = DDP(net)\n"
        "train_one_epoch(model, loader, optimizer, 4)\n" + DDP_TAIL
    )
    assert "DDL119" in check_in_project(
        tmp_path / "a", {"engine.py": ENGINE, "main.py": main}, "engine.py"
    )
    plain = (
        "import torch\nfrom engine import train_one_epoch\ntrain_one_epoch(net, loader, opt, 4)\n"
    )
    assert "DDL119" not in check_in_project(
        tmp_path / "b" / "p", {"engine.py": ENGINE, "main.py": plain}, "engine.py"
    )
    # the file alone (check_source on a string) knows nothing of its neighbours
    assert "DDL119" not in [f.code for f in doctor.check_source(ENGINE)]


HELPERS = (  # improved-diffusion's dist_util: a load that broadcasts over MPI
    "from mpi4py import MPI\n"
    "def load_state_dict(path):\n    data = None\n"
    "    if MPI.COMM_WORLD.Get_rank() == 0:\n        data = open(path, 'rb').read()\n"
    "    return MPI.COMM_WORLD.bcast(data)\n"
    "def dev():\n    return 'cuda'\n"
)


def test_a_collective_behind_a_helper_of_another_module_under_a_rank_check(tmp_path):
    bad = (
        "import torch.distributed as dist\nfrom . import dist_util\n"
        "def resume(model, path):\n    if dist.get_rank() == 0:\n"
        "        model.load_state_dict(dist_util.load_state_dict(path))\n"
    )
    good = (
        "import torch.distributed as dist\nfrom . import dist_util\n"
        "def resume(model, path):\n    model.load_state_dict(dist_util.load_state_dict(path))\n"
        "    if dist.get_rank() == 0:\n        print(dist_util.dev())\n"
    )
    pkg = {"pkg/__init__.py": "", "pkg/dist_util.py": HELPERS}
    assert "DDL108" in check_in_project(
        tmp_path / "a", {**pkg, "pkg/train_util.py": bad}, "pkg/train_util.py"
    )
    assert "DDL108" not in check_in_project(
        tmp_path / "b" / "p", {**pkg, "pkg/train_util.py": good}, "pkg/train_util.py"
    )
    absolute = bad.replace("from . import dist_util", "from pkg import dist_util")
    assert "DDL108" in check_in_project(
        tmp_path / "c" / "p", {**pkg, "pkg/train_util.py": absolute}, "pkg/train_util.py"
    )
    # consistency_models' chunked load: the root broadcasts in one branch, the others in the other
    chunked = (
        "from mpi4py import MPI\n"
        "def load_state_dict(path):\n"
        "    if MPI.COMM_WORLD.Get_rank() == 0:\n        data = open(path, 'rb').read()\n"
        "        MPI.COMM_WORLD.bcast(len(data))\n"
        "    else:\n        n = MPI.COMM_WORLD.bcast(None)\n        data = b''\n"
        "    return data\n"
        "def dev():\n    if MPI.COMM_WORLD.Get_rank() == 0:\n        MPI.COMM_WORLD.bcast(1)\n"
        "    return 'cuda'\n"
    )
    pkg = {"pkg/__init__.py": "", "pkg/dist_util.py": chunked}
    assert "DDL108" in check_in_project(
        tmp_path / "d" / "p", {**pkg, "pkg/train_util.py": bad}, "pkg/train_util.py"
    )
    # a broadcast in one branch only is decided by the if: not a collective on every call
    assert "DDL108" not in check_in_project(
        tmp_path / "e" / "p", {**pkg, "pkg/train_util.py": good}, "pkg/train_util.py"
    )


GENERAL = (  # yolov5's utils/general.py shape: a helper that writes the file it is handed
    "import yaml\n"
    "def yaml_save(file, data):\n    with open(file, 'w') as f:\n        yaml.safe_dump(data, f)\n"
    "def save_on_main(path, obj, rank):\n    if rank == 0:\n        open(path, 'w').write(obj)\n"
)


def test_a_write_behind_a_helper_of_another_module_on_every_rank(tmp_path):
    bad = (
        DDP_HEAD + "from utils.general import yaml_save\nrank = dist.get_rank()\n"
        "yaml_save(save_dir / 'hyp.yaml', hyp)\n" + DDP_TAIL
    )
    good = (
        DDP_HEAD + "from utils.general import yaml_save, save_on_main\nrank = dist.get_rank()\n"
        "if rank == 0:\n    yaml_save(save_dir / 'hyp.yaml', hyp)\n"
        "yaml_save(f'{out}/preds_{rank}.yaml', preds)\nsave_on_main(path, text, rank)\n" + DDP_TAIL
    )
    project = {"utils/__init__.py": "", "utils/general.py": GENERAL}
    assert "DDL107" in check_in_project(
        tmp_path / "a" / "p", {**project, "train.py": bad}, "train.py"
    )
    assert "DDL107" not in check_in_project(
        tmp_path / "b" / "p", {**project, "train.py": good}, "train.py"
    )


LOGGERS = (  # BiRefNet's utils.Logger: a class whose constructor truncates the file it is handed
    "import logging\n"
    "class Logger:\n    def __init__(self, path='log.txt'):\n"
    "        self.handler = logging.FileHandler(path, 'w')\n"
    "class Appender:\n    def __init__(self, path):\n        self.handler = logging.FileHandler(path)\n"
)


def test_a_log_file_every_rank_truncates_through_a_class_or_basic_config(tmp_path):
    bad = (
        DDP_HEAD + "from utils import Logger\nlogger = Logger(os.path.join(ckpt_dir, 'log.txt'))\n"
        "logging.basicConfig(filename='train.log', filemode='w')\n" + DDP_TAIL
    )
    good = (
        DDP_HEAD + "from utils import Logger, Appender\nrank = dist.get_rank()\n"
        "if rank == 0:\n    logger = Logger(os.path.join(ckpt_dir, 'log.txt'))\n"
        "log = Logger(f'log_{rank}.txt')\nmore = Appender('all.log')\n"
        "logging.basicConfig(filename=f'train_{rank}.log', filemode='w')\n"
        "logging.basicConfig(filename='train.log', "
        "level=logging.INFO if rank == 0 else logging.WARN)\n" + DDP_TAIL
    )
    project = {"utils.py": LOGGERS}
    found = check_in_project(tmp_path / "a" / "p", {**project, "train.py": bad}, "train.py")
    assert found.count("DDL107") == 2
    assert "DDL107" not in check_in_project(
        tmp_path / "b" / "p", {**project, "train.py": good}, "train.py"
    )


UTILS = (  # msn's and jepa's init_distributed, a save helper, a dataset caching its features
    "import torch\nimport torch.distributed as dist\n"
    "def init_distributed():\n    try:\n        dist.init_process_group('nccl')\n"
    "    except Exception as e:\n        print(f'distributed training not available {e}')\n"
    "        return 1, 0\n    return dist.get_world_size(), dist.get_rank()\n"
    "def save_last(model, args):\n    torch.save(model.state_dict(), 'last.pt')\n"
    "def save_if_asked(model, args):\n    if args.should_save:\n"
    "        torch.save(model.state_dict(), 'last.pt')\n"
    "class Features(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
    "        torch.save(self.compute(i), 'cache.pt')\n        return self.items[i]\n"
)


def test_a_mistake_one_call_away_is_reported_at_the_call_with_where_it_is(tmp_path):
    main = (
        DDP_HEAD
        + "from engine import train_one_epoch\nfrom utils import init_distributed, save_last\n"
        "world_size, rank = init_distributed()\nmodel = DDP(net)\n"
        "train_one_epoch(model, loader, optimizer, 4)\nsave_last(model, args)\n" + DDP_TAIL
    )
    files = {"engine.py": ENGINE, "utils.py": UTILS, "main.py": main}
    found = doctor.check_source(main, str(write_project(tmp_path / "a", files)), neighbours=True)
    reached = {(f.code, f.via) for f in found if f.via}
    assert reached == {
        ("DDL133", "utils.py:5"),
        ("DDL119", "engine.py:5"),
        ("DDL107", "utils.py:11"),
    }
    line = next(str(f) for f in found if f.code == "DDL119")
    assert "(in engine.py:5, which this call runs)" in line
    assert all(not f.fixable for f in found if f.via)  # reported, never rewritten in another module


def test_a_call_some_ranks_make_or_a_plain_script_reaches_no_finding(tmp_path):
    # the write under a rank check, a rank flag the callee reads, a dataset's per-sample cache, a
    # one-process mode the script asserts off when distributed, and a script that is not distributed
    guarded = (
        DDP_HEAD + "from utils import save_last, save_if_asked, Features\nmodel = DDP(net)\n"
        "args.should_save = args.out is not None and dist.get_rank() == 0\n"
        "if dist.get_rank() == 0:\n    save_last(model, args)\nsave_if_asked(model, args)\n"
        "data = Features()\n"
        "if int(os.environ.get('LOCAL_RANK', -1)) != -1:\n    assert not args.evolve\n"
        "if not args.evolve:\n    print('train')\nelse:\n    save_last(model, args)\n" + DDP_TAIL
    )
    plain = (
        "import torch\nfrom engine import train_one_epoch\ntrain_one_epoch(net, loader, opt, 4)\n"
    )
    files = {"engine.py": ENGINE, "utils.py": UTILS}
    for name, text in (("guarded", guarded), ("plain", plain)):
        path = write_project(tmp_path / name, {**files, "main.py": text})
        found = doctor.check_source(text, str(path), neighbours=True)
        assert [f.code for f in found] == [], name
    # a retried init is not swallowed: the loop gives up by raising
    retried = UTILS.replace("    try:\n", "    for attempt in range(3):\n      try:\n", 1)
    assert "DDL133" not in [
        f.code for f in doctor.check_source(retried.replace("\n    except", "\n      except"))
    ]


def write_project(tmp_path, files):
    """The files of a small project written to tmp_path; the path of its main.py."""
    for file, text in files.items():
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text(text)
    return tmp_path / "main.py"


def test_a_collective_after_rank_zero_alone_went_on_is_reached_by_rank_zero_alone():
    bad = (
        ACCELERATE_HEAD
        + "def save(path):\n    if not accelerator.is_main_process:\n        return\n"
        "    torch.save(state, path)\n    accelerator.wait_for_everyone()\n"
    )
    good = (
        ACCELERATE_HEAD + "def save(path):\n    accelerator.wait_for_everyone()\n"
        "    if not accelerator.is_main_process:\n        return\n    torch.save(state, path)\n"
        "def evaluate(args):\n    if not args.fsdp_eval and not accelerator.is_main_process:\n"
        "        return\n    if args.fsdp_eval:\n        accelerator.wait_for_everyone()\n"
    )
    assert [f.code for f in doctor.check_source(bad)] == ["DDL108"]
    assert [f.code for f in doctor.check_source(good)] == []


def test_a_loop_left_by_rank_zero_alone_and_a_checkpoint_helper_loading_without_map_location():
    stop = (
        DDP_HEAD + "model = DDP(net)\nfor epoch in range(9):\n    for x in loader:\n"
        "        model(x).sum().backward()\n        opt.step()\n"
        "    if dist.get_rank() == 0 and early_stopping.early_stop:\n        break\n" + DDP_TAIL
    )
    agreed = stop.replace(
        "    if dist.get_rank() == 0 and early_stopping.early_stop:\n",
        "    flag = torch.tensor(float(early_stopping.early_stop))\n    dist.broadcast(flag, 0)\n"
        "    if flag.item():\n",
    )
    assert [f.code for f in doctor.check_source(stop)] == ["DDL134"]
    assert [f.code for f in doctor.check_source(agreed)] == []
    helper = (
        DDP_HEAD
        + "def load_checkpoint(path, model):\n    model.load_state_dict(torch.load(path))\n"
        "def load_pretrained(path, model):\n    model.load_state_dict(torch.load(path))\n"
        + DDP_TAIL
    )
    assert [(f.code, f.line) for f in doctor.check_source(helper)] == [("DDL132", 8)]


def test_what_corpus_8_taught_each_on_a_bad_and_a_good_script(tmp_path):
    # accumulation counted to a named length (Point-MAE, torchdrug), in a trainer's method (StudioGAN)
    counted = (
        DDP_HEAD + "model = DDP(net)\nclass Trainer:\n    def run(self, loader):\n"
        "        for i, x in enumerate(loader):\n            self.model(x).sum().backward()\n"
        "            if num_iter == config.step_per_update:\n                self.optimizer.step()\n"
        + DDP_TAIL
    )
    assert "DDL119" in [f.code for f in doctor.check_source(counted)]
    assert "DDL119" not in [
        f.code for f in doctor.check_source(counted.replace("step_per_update", "max_iters"))
    ]
    # a log file handler that truncates and a tokenizer saved on every rank; the else of `if distributed:`
    # is one process
    writes = (
        DDP_HEAD
        + "import logging\nh = logging.FileHandler(os.path.join(out, 'train.log'), mode='w')\n"
        "tokenizer.save(str(tokenizer_path))\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(writes)] == ["DDL107", "DDL107"]
    # corpus 15 (seen): a log that appends, where the other ranks log warnings only (CodeXGLUE's run_lm)
    appended = writes.replace(", mode='w')", ")")
    assert [f.code for f in doctor.check_source(appended)] == ["DDL107", "DDL107"]
    quiet = (
        "logging.basicConfig(level=logging.INFO if args.local_rank in [-1, 0] else logging.WARN)\n"
    )
    assert [f.code for f in doctor.check_source(appended + quiet)] == ["DDL107"]
    assert [f.code for f in doctor.check_source(writes + quiet)] == ["DDL107", "DDL107"]
    alone = (
        DDP_HEAD
        + "if args.distributed:\n    if dist.get_rank() == 0:\n        torch.save(s, 'a.pt')\n"
        "else:\n    torch.save(s, 'a.pt')\n"
        "log_writer = None\nif dist.get_rank() == 0:\n    log_writer = SummaryWriter(out)\n"
        "if log_writer is not None:\n    torch.save(s, 'b.pt')\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(alone)] == []
    # a trainer's `def load`, and a load of the path the script saves its state to
    loads = (
        DDP_HEAD
        + "class T:\n    def load(self, num):\n        return torch.load(self.model_name(num))\n"
        "state = torch.load(model_filename)\nfor epoch in range(9):\n"
        "    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), model_filename)\n"
        + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(loads)] == ["DDL132", "DDL132"]
    # a padding eval sampler whose metrics a project's `torch_dist_sum` reduces (PyTorch-Encoding)
    summed = (
        DDP_HEAD + "val_sampler = DistributedSampler(valset, shuffle=False)\n"
        "metrics = utils.torch_dist_sum(gpu, *metric.get_all())\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(summed)] == ["DDL127"]
    # a launcher that starts its processes with mp.Process runs once: its writes are not every rank's
    launcher = (
        DDP_HEAD + "import torch.multiprocessing as mp\ndef main():\n"
        "    torch.save(cfg, 'config.pt')\n    p = mp.Process(target=run, args=(0,))\n    p.start()\n"
        + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(launcher)] == []


PARSER = (  # Point-MAE's utils/parser.py: --local_rank only, and folders made on every rank
    "import argparse\nimport os\n"
    "def get_args():\n    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--local_rank', type=int, default=0)\n    args = parser.parse_args()\n"
    "    if 'LOCAL_RANK' not in os.environ:\n        os.environ['LOCAL_RANK'] = str(args.local_rank)\n"
    "    create_dirs(args)\n    return args\n"
    "def create_dirs(args):\n    if not os.path.exists(args.out):\n        os.makedirs(args.out)\n"
)
DIST_UTILS = (  # a helper of the project joins the process group, through another helper
    "import torch.distributed as dist\ndef init_dist(launcher):\n    _init_pytorch('nccl')\n"
    "def _init_pytorch(backend):\n    dist.init_process_group(backend)\n"
)


def test_a_script_that_joins_through_a_helper_gets_what_its_parser_helper_does(tmp_path):
    main = (
        "from utils import parser, dist_utils\nargs = parser.get_args()\n"
        "dist_utils.init_dist(args.launcher)\n"
    )
    files = {"utils/__init__.py": "", "utils/parser.py": PARSER, "utils/dist_utils.py": DIST_UTILS}
    path = write_project(tmp_path / "a", {**files, "main.py": main})
    found = doctor.check_source(main, str(path), neighbours=True)
    assert {(f.code, f.via) for f in found} == {
        ("DDL101", "utils/parser.py:5"),
        ("DDL137", "utils/parser.py:13"),
    }
    # reading LOCAL_RANK's value is torchrun's way: the flag is a leftover; a plain script makes no race
    reads = main + "import os\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
    path = write_project(tmp_path / "b", {**files, "main.py": reads})
    assert [f.code for f in doctor.check_source(reads, str(path), neighbours=True)] == ["DDL137"]
    plain = "from utils import parser\nargs = parser.get_args()\n"
    path = write_project(tmp_path / "c", {**files, "main.py": plain})
    assert [f.code for f in doctor.check_source(plain, str(path), neighbours=True)] == ["DDL101"]


def test_what_corpus_9_taught_each_on_a_bad_and_a_good_script():
    # rank 0 alone returns before the training the others go on to (doctr's --test-only), or leaves the
    # epoch loop whose training is a call of the script's own
    returns = (
        DDP_HEAD + "def main(args):\n    model = DDP(net)\n    rank = dist.get_rank()\n"
        "    if rank == 0 and args.test_only:\n        evaluate(model)\n        return\n"
        "    for epoch in range(9):\n        fit_one_epoch(model, loader)\n"
        "        if rank == 0:\n            if early_stopper.early_stop(val_loss):\n                break\n"
        + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(returns)] == ["DDL134", "DDL134"]
    others = returns.replace(
        "rank == 0 and args.test_only", "rank != 0 and args.test_only"
    ).replace(
        "        if rank == 0:\n            if early", "        if True:\n            if early"
    )
    assert [f.code for f in doctor.check_source(others)] == []
    # an imported module's path whose first part is also the model's name (ColBERT's `colbert`); an
    # attribute read in the branch the script takes when not distributed (parler-tts); a forward through
    # .module followed by the wrapper's own forward (generative-recommenders); `"RANK" in os.environ`
    chosen = (
        DDP_HEAD + "from colbert.utils.amp import MixedPrecisionManager\n"
        "def train(args, net, loader, opt):\n    colbert = DDP(net)\n"
        "    amp = MixedPrecisionManager(args.amp)\n"
        "    if args.parallel_mode != 'distributed':\n        out = colbert.text_encoder(x)\n"
        "    for ids, y in loader:\n        emb = colbert.module.get_item_embeddings(ids)\n"
        "        loss = colbert(emb, y)\n        loss.backward()\n        opt.step()\n"
        "if 'RANK' in os.environ:\n    dist.barrier()\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(chosen)] == []
    # map_location=None is no map_location
    loads = DDP_HEAD + "ckpt = torch.load(args.resume, map_location=None)\n" + DDP_TAIL
    assert [f.code for f in doctor.check_source(loads)] == ["DDL132"]
    # a hook defined inside a function that returns early on every rank but 0 (OLMo's trace hook)
    hook = (
        DDP_HEAD
        + "def setup_hooks(model, step):\n    if dist.get_rank() != 0:\n        return []\n"
        "    def save_hook(module, args, output):\n        torch.save(output, f'trace{step}.pt')\n"
        "    return [model.register_forward_hook(functools.partial(save_hook))]\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(hook)] == []


def test_a_padding_eval_sampler_built_by_a_helper_of_another_module(tmp_path):
    """Corpus 10 (seen): SegmenTron's train.py calls `make_data_sampler(val_dataset, False, distributed)`, a
    function of segmentron/utils/distributed.py (star-imported) that returns `DistributedSampler(dataset,
    shuffle=shuffle)`, and its metric class all-reduces the padded duplicates (score.py). Corpora 9 and 10 had
    ten such samplers built in another module; doctor had read none of them."""
    helpers = (
        "import torch.utils.data as data\nfrom torch.utils.data import DistributedSampler\n"
        "def make_data_sampler(dataset, shuffle, distributed):\n    if distributed:\n"
        "        return DistributedSampler(dataset, shuffle=shuffle)\n"
        "    return data.SequentialSampler(dataset)\n"
        "def make_loader(dataset, batch, distributed):\n"
        "    return data.DataLoader(dataset, batch, sampler=make_data_sampler(dataset, 0, distributed))\n"
        "def dataset_builder(args, config):\n    dataset = build_dataset_from_cfg(config)\n"
        "    sampler = DistributedSampler(dataset, shuffle=config.subset == 'train')\n"
        "    return sampler, data.DataLoader(dataset, sampler=sampler)\n"
    )
    score = (
        "import torch.distributed as dist\nclass SegmentationMetric:\n"
        "    def update(self, pred, target):\n        correct = (pred == target).sum()\n"
        "        dist.all_reduce(correct)\n        self.correct += correct\n"
    )
    train = (
        "import torch.distributed as dist\nfrom seg.utils.distributed import *\n"
        "from seg.utils.score import SegmentationMetric\ndist.init_process_group()\n"
        "train_sampler = make_data_sampler(train_dataset, shuffle=True, distributed=True)\n"
        "{val}\nmetric = SegmentationMetric()\nfor x, y in val_loader:\n    metric.update(model(x), y)\n"
        "dist.destroy_process_group()\n"
    )
    pkg = {
        "seg/__init__.py": "",
        "seg/utils/__init__.py": "",
        "seg/utils/distributed.py": helpers,
        "seg/utils/score.py": score,
    }
    bad = [
        "val_sampler = make_data_sampler(val_dataset, False, True)",
        "val_loader = make_loader(val_dataset, 32, True)",
        # Point-BERT (corpus 11, seen): the helper builds the split's dataset itself
        "_, val_loader = dataset_builder(args, config.dataset.val)",
    ]
    for i, line in enumerate(bad):
        files = {**pkg, "tools/train.py": train.format(val=line)}
        assert "DDL127" in check_in_project(tmp_path / f"bad{i}", files, "tools/train.py"), line
    good = [
        "val_loader = DataLoader(Subset(val_dataset, range(rank, len(val_dataset), world)))",
        "test_sampler = make_data_sampler(test_dataset, False, False)\n"
        "results = results[: len(test_dataset)]",  # the padding trimmed after the gather
    ]
    for i, line in enumerate(good):
        files = {**pkg, "tools/train.py": train.format(val=line)}
        assert "DDL127" not in check_in_project(tmp_path / f"good{i}", files, "tools/train.py"), (
            line
        )
    # no reduction anywhere: the padding is not counted twice (a shard's metric is another mistake)
    files = {**pkg, "seg/utils/score.py": score.replace("dist.all_reduce(correct)", "pass")}
    files["tools/train.py"] = train.format(val=bad[0])
    assert "DDL127" not in check_in_project(tmp_path / "unreduced", files, "tools/train.py")


def test_a_local_rank_argument_beside_a_helper_that_reads_local_rank(tmp_path):
    """Corpus 11 (seen): DUSt3R declares `--local_rank` and never needs it, since croco's
    init_distributed_mode reads LOCAL_RANK from the environment: torchrun works. Without that helper (or with one
    that reads a config's field of that name), the same parser is the deprecated launcher's argument."""
    train = (
        "import argparse\nimport torch.distributed as dist\nfrom utils import misc\n"
        "p = argparse.ArgumentParser()\np.add_argument('--local_rank', default=-1, type=int)\n"
        "args = p.parse_args()\nmisc.init_distributed_mode(args)\ndevice = args.local_rank\n"
    )
    helper = (
        "import os\nimport torch.distributed as dist\ndef init_distributed_mode(args):\n"
        "    args.gpu = int(os.environ['{var}'])\n    dist.init_process_group('nccl')\n"
    )
    good = {
        "utils/__init__.py": "",
        "utils/misc.py": helper.format(var="LOCAL_RANK"),
        "train.py": train,
    }
    assert "DDL101" not in check_in_project(tmp_path / "good", good, "train.py")
    bad = {**good, "utils/misc.py": helper.format(var="SLURM_PROCID")}
    assert "DDL101" in check_in_project(tmp_path / "bad", bad, "train.py")
    # RepVGG's (corpus 15, seen): a helper that reads a config's LOCAL_RANK field reads no environment
    field = helper.replace("int(os.environ['{var}'])", "args.config.LOCAL_RANK")
    bad = {**good, "utils/misc.py": field}
    assert "DDL101" in check_in_project(tmp_path / "field", bad, "train.py")


def test_names_a_package_takes_from_its_modules_are_followed_there(tmp_path):
    """Corpora 10 and 11 (seen): `from maskrcnn_benchmark.data import make_data_loader` is defined in data/build.py,
    which the package's __init__ imports it from; `from ddpm_torch import *` brings utils/train.py's Trainer,
    whose accumulation never uses no_sync. A loader whose predictions a project function merges by sample id
    (maskrcnn-benchmark's inference) has no repeats left to count."""
    build = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def make_data_sampler(dataset, shuffle, distributed):\n"
        "    return DistributedSampler(dataset, shuffle=shuffle)\n"
        "def make_data_loader(cfg, is_train=True, is_distributed=False):\n"
        "    ds = build_dataset(cfg, is_train)\n"
        "    return DataLoader(ds, sampler=make_data_sampler(ds, is_train, is_distributed))\n"
    )
    engine = (
        "import torch.distributed as dist\ndef do_train(model, loader, val_loader):\n"
        "    for x in val_loader:\n        loss = model(x)\n        dist.all_reduce(loss)\n"
    )
    inference = (
        "from .comm import all_gather\ndef inference(model, loader):\n"
        "    predictions = {i: model(x) for i, x in loader}\n"
        "    merged = {}\n    for p in all_gather(predictions):\n        merged.update(p)\n    return merged\n"
    )
    trainer = (
        "class Trainer:\n    def __init__(self, model, optimizer, accum):\n"
        "        self.model, self.optimizer, self.accum = model, optimizer, accum\n"
        "    def step(self, x, i):\n        self.model(x).backward()\n"
        "        if (i + 1) % self.accum == 0:\n            self.optimizer.step()\n"
    )
    files = {
        "pkg/__init__.py": "from .data import make_data_loader\nfrom .utils.train import Trainer\n",
        "pkg/data/__init__.py": "from .build import make_data_loader\n",
        "pkg/data/build.py": build,
        "pkg/utils/__init__.py": "",
        "pkg/utils/train.py": trainer,
        "pkg/engine.py": engine,
        "pkg/inference.py": inference,
        "pkg/comm.py": "import torch.distributed as dist\ndef all_gather(x):\n    return [x]\n",
    }
    train = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from pkg.data import make_data_loader\nfrom pkg.engine import do_train\n"
        "from pkg.inference import inference\nfrom pkg import *\ndist.init_process_group('nccl')\n"
        "model = DDP(net)\n"
        "def train():\n    val_loader = make_data_loader(cfg, is_train=False, is_distributed=True)\n"
        "    do_train(model, loader, val_loader)\n"
        "def run_test():\n    loader = make_data_loader(cfg, is_train=False, is_distributed=True)\n"
        "    inference(model, loader)\n"
        "trainer = Trainer(model, optimizer, 4)\ntrainer.step(x, 0)\n"
    )
    lines = check_in_project(
        tmp_path, {**files, "tools/train.py": train}, "tools/train.py", where=True
    )
    assert (11, "DDL127") in lines, lines  # the validation loss over the padding's repeats
    assert not any(code == "DDL127" and line == 14 for line, code in lines), lines  # merged by id
    # Trainer, through `from pkg import *` and its __init__: at the call of the method that accumulates
    assert (17, "DDL119") in lines and (16, "DDL119") not in lines, lines


def test_an_eval_loader_whose_padding_sampler_is_built_modules_away(tmp_path):
    """Corpora 11 and 12 (seen): the eval split's padding DistributedSampler built in a data module that the
    training file reaches through one to three calls, with no eval word at the call (NVAE's
    `train_queue, valid_queue, _ = datasets.get_loaders(args)`, AttentiveNAS's `build_data_loader(args)`, U2PL's
    `get_loader(cfg)` -> `build_vocloader("val", cfg)` in another module). Reported at the call, with where the
    sampler is; not where the eval loader drops its last partial batch, nor where only the train split is built
    there."""
    loaders = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def build_loader(split, dataset):\n"
        "    sampler = DistributedSampler(dataset)\n"
        "    return DataLoader(dataset, sampler=sampler)\n"
        "def build_val(dataset):\n"
        "    if True:\n"
        "        val_sampler = DistributedSampler(dataset{drop})\n"
        "    return DataLoader(dataset, sampler=val_sampler)\n"
    )
    builder = (
        "from .loaders import build_loader, build_val\n"
        "def get_loaders(cfg):\n"
        "    train = build_loader('train', cfg.train)\n"
        "    {val}\n"
        "    return train, val\n"
    )
    train = (
        DDP_HEAD + "import numpy as np\nfrom data.builder import get_loaders\n"
        "labeled = batch[:num_labeled]  # a training slice, no trimming of gathered results\n"
        "train_loader, val_loader = get_loaders(cfg)\n"
        "def validate(model, loader):\n"
        "    correct = torch.zeros(1)\n"
        "    for x, y in loader:\n"
        "        labels = np.unique(y)\n"
        "        correct += (model(x).argmax(1) == y).sum()\n"
        "    dist.all_reduce(correct)\n"
        "    return correct\n"
        "validate(model, val_loader)\n" + DDP_TAIL
    )
    cases = {  # builder's val line, the sampler's drop_last: whether DDL127 is reported at the call
        "a sampler in a function that builds the val split": ("val = build_val(cfg.val)", "", True),
        "a split-asking helper asked for val": ("val = build_loader('val', cfg.val)", "", True),
        "drop_last=True: no repeats": ("val = build_val(cfg.val)", ", drop_last=True", False),
        "only the train split goes through the sampler": ("val = None", "", False),
    }
    for i, (case, (val, drop, expected)) in enumerate(cases.items()):
        files = {
            "data/__init__.py": "",
            "data/loaders.py": loaders.format(drop=drop),
            "data/builder.py": builder.format(val=val),
            "train.py": train,
        }
        found = check_in_project(tmp_path / f"p{i}", files, "train.py", where=True)
        assert ((10, "DDL127") in found) is expected, (case, found)
    # where: the module and line of the sampler the call reaches
    found = doctor.check_source(train, str(tmp_path / "p0" / "train.py"), neighbours=True)
    assert [f.via for f in found if f.code == "DDL127"] == ["data/loaders.py:7"], found
    # DDL124 reads the same helpers: a metric rank 0 logs from its own shard of that val loader
    logged = (
        DDP_HEAD + "from data.builder import get_loaders\n"
        "train_loader, val_loader = get_loaders(cfg)\n"
        "def validate(model, loader):\n"
        "    correct = 0\n"
        "    for x, y in loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n"
        "    return correct / len(loader)\n"
        "val_acc = validate(model, val_loader)\n"
        "if dist.get_rank() == 0:\n    print(val_acc)\n" + DDP_TAIL
    )
    for i, (val, expected) in enumerate(
        [("val = build_val(cfg.val)", True), ("val = None", False)]
    ):
        files = {
            "data/__init__.py": "",
            "data/loaders.py": loaders.format(drop=""),
            "data/builder.py": builder.format(val=val),
            "train.py": logged,
        }
        found = check_in_project(tmp_path / f"q{i}", files, "train.py")
        assert ("DDL124" in found) is expected, (val, found)
    reduced = logged.replace(
        "    return correct", "    dist.all_reduce(correct)\n    return correct"
    )
    files["data/builder.py"] = builder.format(val="val = build_val(cfg.val)")
    files["train.py"] = reduced
    assert "DDL124" not in check_in_project(tmp_path / "q9", files, "train.py")


def test_a_local_rank_flag_the_documented_launcher_breaks_even_beside_a_local_rank_read(tmp_path):
    """Corpora 11 to 13 (seen): U2PL, imaginaire, seg-gdkd and sam-hq read LOCAL_RANK (so torchrun works) but
    declare `--local_rank` alone for a strict parse_args(), and their README or shell scripts launch with
    `python -m torch.distributed.launch`, whose torch 2 form passes `--local-rank=N`: argparse rejects it and
    the documented launch dies at start. Not reported where nothing documents that launcher, where both
    spellings are declared, or where parse_known_args() lets the argument pass."""
    script = (
        "import argparse, os\nimport torch.distributed as dist\n"
        "parser = argparse.ArgumentParser()\n{declare}\n"
        "args = parser.{parse}()\n"
        "local_rank = int(os.environ.get('LOCAL_RANK', args.local_rank or 0))\n"
        "dist.init_process_group('nccl')\ndist.destroy_process_group()\n"
    )
    launch = "python -m torch.distributed.launch --nproc_per_node=8 tools/train.py\n"
    one = "parser.add_argument('--local_rank', type=int, default=0)"
    both = one + "\nparser.add_argument('--local-rank', type=int, default=0)"
    cases = [  # (README's launch line, the declaration, the parse, reported)
        (launch, one, "parse_args", True),
        ("torchrun --nproc_per_node=8 tools/train.py\n", one, "parse_args", False),
        # the launch of another script of the repository, or one given --use_env (no argument passed)
        (launch.replace("train.py", "eval.py"), one, "parse_args", False),
        (launch.replace("launch", "launch --use_env"), one, "parse_args", False),
        (launch.replace("launch", "launch \\\n  --nnodes=1"), one, "parse_args", True),
        (launch, both, "parse_args", False),
        (launch, one, "parse_known_args", False),
    ]
    for i, (readme, declare, parse, expected) in enumerate(cases):
        project = tmp_path / f"repo{i}"
        (project / ".git").mkdir(parents=True)
        files = {"README.md": readme, "tools/train.py": script.format(declare=declare, parse=parse)}
        found = check_in_project(project, files, "tools/train.py")
        assert ("DDL101" in found) is expected, (readme, declare, parse, found)


def test_a_rank_check_one_side_of_an_or_guards_nothing_and_an_accelerate_trainer_runs_everywhere():
    """Corpus 13 (seen): audiolm-pytorch's trainers clear the results folder under
    `if self.is_main and force is True or (not exists(force) and asked())`: `and` binds first, so the second
    side holds on every rank; and the rmtree sits in the __init__ of a trainer class that makes the
    Accelerator, which every process constructs (doctor read it as a method whose callers might guard it).
    `if rank == 0 or not distributed:` still guards: its other side is the one-process run."""
    trainer = (
        "import shutil\nfrom accelerate import Accelerator\n"
        "class Trainer:\n"
        "    def __init__(self, folder, force=None):\n"
        "        self.accelerator = Accelerator()\n"
        "        self.is_main = self.accelerator.is_main_process\n"
        "        if {test}:\n"
        "            shutil.rmtree(folder)\n"
        "        self.accelerator.wait_for_everyone()\n"
    )
    for test, expected in [
        ("self.is_main and force is True or (force is None and asked())", ["DDL140"]),
        ("self.is_main and force is True or not self.accelerator.use_distributed", []),
        ("self.is_main and (force is True or asked())", []),
    ]:
        found = [f.code for f in doctor.check_source(trainer.format(test=test))]
        assert found == expected, (test, found)


def test_a_method_called_on_an_instance_is_followed_into_its_class_and_a_constructor_runs_init_alone(
    tmp_path,
):
    """Corpus 13 (seen): a class's whole body was carried to the line that constructs it, so EEG-signal's
    `CheckpointSaver(...)` was reported for the save() that runs later under a rank check, while the mistakes
    in `exp.train()`, a method of an instance of the project's own class, went unread. Now constructing runs
    __init__ (and what it calls on self), `obj.method()` runs that method, `obj(...)` its __call__, and
    `fire.Fire(component=obj)` any method the command line names (ChatLM-mini-Chinese, corpus 12)."""
    trainer = (
        "import os, torch\nimport torch.distributed as dist\n"
        "class Saver:\n"
        "    def __init__(self, path):\n        self.path = path\n"
        "    def save(self, model):\n        torch.save(model.state_dict(), self.path)\n"
        "class Exp:\n"
        "    def __init__(self, args):\n        self.args = args\n"
        "    def train(self, model):\n        self.prepare()\n"
        "    def prepare(self):\n        os.makedirs('checkpoints')\n"
        "    def __call__(self, model):\n        torch.save(model.state_dict(), 'best.pt')\n"
    )
    script = DDP_HEAD + "from trainer import Saver, Exp\nimport fire\n{body}\n" + DDP_TAIL
    cases = {
        "saver = Saver('model.pt')": [],  # builds a saver: nothing written yet
        "saver = Saver('model.pt')\nif dist.get_rank() == 0:\n    saver.save(model)": [],
        "saver = Saver('model.pt')\nsaver.save(model)": ["DDL107"],
        "exp = Exp(args)\nexp.train(model)": ["DDL137"],  # two methods down, through self.prepare()
        "exp = Exp(args)\nexp(model)": ["DDL107"],
        "exp = Exp(args)\nfire.Fire(component=exp)": ["DDL107", "DDL137"],
        "fire.Fire(Exp)": ["DDL107", "DDL137"],
        # a name that holds one class or another, by branch (Radar-Lei/competition's `Exp = Exp_Imputation`)
        "Runner = Saver\nif args.x:\n    Runner = Exp\nrun = Runner(args)\nrun.train(model)": [
            "DDL137"
        ],
    }
    for i, (body, expected) in enumerate(cases.items()):
        files = {"trainer.py": trainer, "train.py": script.format(body=body)}
        found = check_in_project(tmp_path / f"p{i}", files, "train.py")
        assert sorted(set(found) - {"DDL113"}) == expected, (body, found)


def test_a_sampler_built_beside_one_that_gets_set_epoch_and_never_gets_it_itself():
    """Corpus 13 (seen): TorchSemiSeg's two unlabeled loaders come from the helper that builds the labeled one,
    each with its DistributedSampler, and only the labeled sampler gets set_epoch: the unlabeled ones give the
    same order every epoch (and CutMix mixes each image with itself). Corpus 35: HSI_domain_adaptation builds
    source and target DistributedSamplers side by side and gives only `source_loader.sampler` its epoch. Not
    where each sampler (or its loader) gets it, where the other sampler is handed on (to a function that may
    call it), or for an eval sampler."""
    helper_built = (
        DDP_HEAD + "loader, sampler = get_train_loader(cfg, 'labeled')\n"
        "u_loader, u_sampler = get_train_loader(cfg, 'unlabeled')\n"
        "val_loader, val_sampler = get_train_loader(cfg, 'val')\n"
        "for epoch in range(10):\n    sampler.set_epoch(epoch)\n{more}\n"
        "    for x in zip(loader, u_loader):\n        pass\n" + DDP_TAIL
    )
    side_by_side = (
        DDP_HEAD
        + "def build_loader(ds, sampler):\n    return DataLoader(ds, batch_size=8, sampler=sampler)\n"
        "def main():\n    source_sampler = DistributedSampler(source, shuffle=True)\n"
        "    target_sampler = DistributedSampler(target, shuffle=True)\n"
        "    val_sampler = DistributedSampler(val, shuffle=True)\n"
        "    source_loader = build_loader(source, sampler=source_sampler)\n"
        "    target_loader = build_loader(target, sampler=target_sampler)\n"
        "    val_loader = build_loader(val, sampler=val_sampler)\n"
        "    for epoch in range(10):\n        source_loader.sampler.set_epoch(epoch)\n{more}"
        "        for x, y in zip(source_loader, target_loader):\n            step(x, y)\n"
        "main()\n" + DDP_TAIL
    )
    for script, line, fixes in (
        (helper_built, 8, ("    u_sampler.set_epoch(epoch)", "    step(u_sampler)")),
        (
            side_by_side,
            11,
            (
                "        target_loader.sampler.set_epoch(epoch)\n",
                "        target_sampler.set_epoch(epoch)\n",
                "        reshuffle(target_sampler)\n",
            ),
        ),
    ):
        bad = doctor.check_source(script.format(more=""))
        assert [(f.line, f.code) for f in bad] == [(line, "DDL105")], bad
        for more in fixes:
            assert doctor.check_source(script.format(more=more)) == [], more


def test_a_collective_on_a_tensor_made_in_its_own_call():
    """DDL182 (SSL-for-2D-Turbulence, corpus 35): `dist.all_reduce(torch.tensor(x).to(device))` reduces a tensor
    nothing keeps, so `x` stays this rank's. Not a tensor bound first, nor a signal of constants or of the rank
    (`all_reduce(torch.tensor([0], device=d))`, which only pairs a collective)."""
    script = DDP_HEAD + "total_loss, seen = run()\n{line}\nprint(total_loss / seen)\n" + DDP_TAIL
    for line, expected in (
        ("dist.all_reduce(torch.tensor([total_loss, seen]).to('cuda'))", ["DDL182"]),
        ("dist.reduce(torch.tensor(total_loss), 0)", ["DDL182"]),
        ("loss = dist.all_reduce(torch.tensor(total_loss, device='cuda')).item()", ["DDL182"]),
        ("t = torch.tensor([total_loss, seen]).to('cuda')\ndist.all_reduce(t)", []),
        ("dist.all_reduce(torch.tensor([0], device='cuda'))", []),
        ("dist.all_reduce(torch.tensor([local_rank], device=device))", []),
    ):
        found = [f.code for f in doctor.check_source(script.format(line=line))]
        assert found == expected, (line, found)


def test_wandb_log_on_ranks_that_never_called_wandb_init():
    """DDL183 (tango, corpus 35): wandb.init under `accelerator.is_main_process`, wandb.log under a flag alone:
    the other ranks raise at their first log. Not where an init runs on every rank (a disabled one in the else
    branch), nor a log in a function only the main process calls, nor where `wandb` is a name of the script's
    own (minimind-v's, None on the other ranks), nor under a flag the init's block sets."""
    script = (
        "import wandb\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "if accelerator.is_main_process:\n    wandb.init(project='p')\n{other}"
        "for step in range(9):\n    loss = train_step()\n{log}"
    )
    helper = "def report(loss):\n    wandb.log({'loss': loss})\n"
    for other, log, expected in (
        ("", "    if args.with_tracking:\n        wandb.log({'loss': loss})\n", [(9, "DDL183")]),
        (helper, "    if accelerator.is_main_process:\n        report(loss)\n", []),
        ("else:\n    wandb.init(mode='disabled')\n", "    wandb.log({'loss': loss})\n", []),
        (
            "wandb = wandb if accelerator.is_main_process else None\n",
            "    if wandb:\n        wandb.log({})\n",
            [],
        ),
    ):
        source = script.format(other=other, log=log)
        found = [(f.line, f.code) for f in doctor.check_source(source) if f.code == "DDL183"]
        assert found == expected, (other, log, found)
    # a flag the init's block sets (bsq-vit's `with_wandb = True`, corpus 31): the log runs where the init did
    flagged = script.replace(
        "wandb.init(project='p')\n", "wandb.init(project='p')\n    with_wandb = True\n"
    )
    flagged = flagged.format(
        other="", log="    if with_wandb:\n        wandb.log({'loss': loss})\n"
    )
    assert [f.code for f in doctor.check_source(flagged) if f.code == "DDL183"] == []


def test_wandb_log_without_init_in_a_script_the_repository_runs_as_one_process(tmp_path):
    """DDL183 is quiet where every command of the repository that runs the file starts one process (DMD2's
    `python main/edm/test_folder_edm.py`, corpus 29); reported where one launches it in several."""
    script = (
        "import wandb\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
        "if accelerator.is_main_process:\n    wandb.init(project='p')\nwandb.log({'fid': 1.0})\n"
    )
    for command, expected in (
        ("python evaluate.py --folder runs\n", []),
        ("accelerate launch evaluate.py --folder runs\n", ["DDL183"]),
    ):
        files = {"README.md": "", "run.sh": command, "evaluate.py": script}
        found = check_in_project(tmp_path / command.split()[0], files, "evaluate.py")
        assert [c for c in found if c == "DDL183"] == expected, (command, found)


def test_gradients_clipped_at_every_micro_batch_of_an_accumulation():
    """DDL184 (distributed-llm-alignment, corpus 35): a clip in the accumulate() block clips each partial sum
    (measured: another gradient than one clip a cycle). Reported for torch's clip too; not under
    `if accelerator.sync_gradients:`, not outside the block, not where the Accelerator accumulates nothing
    (no gradient_accumulation_steps, or 1)."""
    script = (
        "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator({steps})\n"
        "for batch in loader:\n    with accelerator.accumulate(model):\n"
        "        accelerator.backward(model(batch))\n{clip}        optimizer.step()\n"
    )
    clip = "        accelerator.clip_grad_norm_(model.parameters(), 1.0)\n"
    for steps, line, expected in (
        ("gradient_accumulation_steps=8", clip, [(7, "DDL184")]),
        ("gradient_accumulation_steps=args.accum", clip, [(7, "DDL184")]),
        (
            "gradient_accumulation_steps=8",
            "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
            [(7, "DDL184")],
        ),
        (
            "gradient_accumulation_steps=8",
            "        if accelerator.sync_gradients:\n    " + clip,
            [],
        ),
        ("gradient_accumulation_steps=1", clip, []),
        ("", clip, []),
    ):
        source = script.format(steps=steps, clip=line)
        found = [(f.line, f.code) for f in doctor.check_source(source) if f.code == "DDL184"]
        assert found == expected, (steps, line, found)


def test_zero_grad_before_the_backward_inside_an_accumulation():
    """DDL185 (supervoice-flow, corpus 36): zero_grad() first in the accumulate() block zeroes at the cycle's
    last micro-batch (measured: the step's gradient 2.0 against 5.0). Not after the step, not outside the
    block, not where the Accelerator accumulates nothing."""
    script = (
        "from accelerate import Accelerator\naccelerator = Accelerator({steps})\n"
        "for batch in loader:\n{before}    with accelerator.accumulate(model):\n{first}"
        "        accelerator.backward(model(batch))\n        optimizer.step()\n{last}"
    )
    zero = "        optimizer.zero_grad()\n"
    for steps, before, first, last, expected in (
        ("gradient_accumulation_steps=4", "", zero, "", [(5, "DDL185")]),
        ("gradient_accumulation_steps=4", "", "", zero, []),
        ("gradient_accumulation_steps=4", "    optimizer.zero_grad()\n", "", "", []),
        ("", "", zero, "", []),
    ):
        source = script.format(steps=steps, before=before, first=first, last=last)
        found = [(f.line, f.code) for f in doctor.check_source(source) if f.code == "DDL185"]
        assert found == expected, (steps, before, first, last, found)


def test_a_forward_helper_handed_the_module_inside_the_wrapper():
    """DDL136 (index-tts-lora, corpus 36): `forward_unified(self.model.module, batch)` runs the forward on the
    module inside the DDP wrapper, so the backward of its loss all-reduces nothing. Not a helper handed the
    wrapper, not one whose name says no forward."""
    script = (
        DDP_HEAD + "model = DDP(net)\ndef step(batch):\n{guard}    out = {call}\n"
        "    out['loss'].backward()\n    optimizer.step()\n" + DDP_TAIL
    )
    for guard, call, expected in (
        ("", "forward_unified(model.module, batch)", ["DDL136"]),
        ("", "forward_unified(model, batch)", []),
        ("", "count_parameters(model.module)", []),
    ):
        found = [f.code for f in doctor.check_source(script.format(guard=guard, call=call))]
        assert found == expected, (call, found)


def test_an_ema_update_that_strips_the_wrappers_prefix():
    """DDL186 is quiet where the update strips `module.` from the names (DiCo's, corpus 36) or unwraps."""
    script = (
        DDP_HEAD
        + "from collections import OrderedDict\n\n\ndef update_ema(ema, model, decay=0.999):\n"
        "    ema_params = OrderedDict(ema.named_parameters())\n"
        "    for name, param in model.named_parameters():\n{line}"
        "        ema_params[name].mul_(decay)\n\n\nmodel = DDP(net)\nupdate_ema(ema, model)\n"
        + DDP_TAIL
    )
    for line, expected in (
        ("", ["DDL186"]),
        ("        name = name.replace('module.', '')\n", []),
    ):
        found = [f.code for f in doctor.check_source(script.format(line=line))]
        assert found == expected, (line, found)


def test_a_training_step_method_called_through_the_wrappers_module():
    """Corpus 13 (seen): P5 runs `results = self.model.module.train_step(batch)` then `loss.backward()` on its
    DDP model: the forward inside train_step skips DDP's, so nothing is all-reduced and each process trains its
    own copy. Not where the step goes through the wrapper itself."""
    script = (
        DDP_HEAD + "model = DDP(net)\ndef train(loader, optimizer):\n    for batch in loader:\n"
        "        results = {call}(batch)\n        results['loss'].backward()\n"
        "        optimizer.step()\n" + DDP_TAIL
    )
    bad = doctor.check_source(script.format(call="model.module.train_step"))
    assert [f.code for f in bad] == ["DDL136"], bad
    assert doctor.check_source(script.format(call="model")) == []
    # corpus 26 (seen): DeepCORO-CLIP's `encoder = model.module if hasattr(model, "module") else model`, then
    # `encoder.get_tokens(videos)` for the loss
    either = script.format(call="encoder.get_tokens").replace(
        "    for batch in loader:\n",
        "    encoder = model.module if hasattr(model, 'module') else model\n    for batch in loader:\n",
    )
    assert [f.code for f in doctor.check_source(either)] == ["DDL136"]
    # Hugging Face's `model_to_resize.resize_token_embeddings(len(tokenizer))`: a set-up, no forward (corpus 23)
    resized = either.replace("encoder.get_tokens(batch)", "model(batch)").replace(
        "    for batch in loader:\n",
        "    encoder.resize_token_embeddings(n)\n    for batch in loader:\n",
    )
    assert doctor.check_source(resized) == []


def test_a_loss_computed_on_the_unwrapped_model_or_in_a_function_the_backward_takes():
    """DDL136, corpus 25 (seen): ILQL's `accelerator.unwrap_model(model).get_loss(items)` before
    `accelerator.backward(loss)`, and OpenVLA-OFT's `action_head.module.predict_action(...)` in a
    `run_forward_pass` whose loss the training function's backward takes. Not through the prepared model, nor
    a helper no backward takes."""
    accelerate = (
        ACCELERATE_HEAD + "model, optim, loader = accelerator.prepare(model, optim, loader)\n"
        "def train():\n    for items in loader:\n        loss = {call}(items)\n"
        "        accelerator.backward(loss)\n        optim.step()\n"
    )
    bad = doctor.check_source(accelerate.format(call="accelerator.unwrap_model(model).get_loss"))
    assert [f.code for f in bad] == ["DDL136"], bad
    assert doctor.check_source(accelerate.format(call="model")) == []
    # a frozen VAE unwrapped for its latents, and the model unwrapped to be saved (show-o's, tango's: corpora
    # 14 and 15, seen): no loss of theirs goes to the backward
    frozen = (
        accelerate.format(call="model").replace(
            "        loss = model(items)\n",
            "        latents = accelerator.unwrap_model(vae).encode(items)\n"
            "        loss = model(latents)\n",
        )
        + "    model = accelerator.unwrap_model(model)\n    model.embed_tokens(x)\n"
    )
    assert doctor.check_source(frozen) == []
    helper = (
        DDP_HEAD + "action_head = DDP(head)\ndef run_forward_pass(batch):\n"
        "    hidden = vla(batch)\n    return F.l1_loss({call}(hidden), batch['actions'])\n"
        "def finetune(loader, optimizer):\n    for batch in loader:\n"
        "        loss = {step}(batch)\n        loss.backward()\n        optimizer.step()\n"
        + DDP_TAIL
    )
    bare = "action_head.module.predict_action"
    bad = doctor.check_source(helper.format(call=bare, step="run_forward_pass"))
    assert [f.code for f in bad] == ["DDL136"], bad
    assert doctor.check_source(helper.format(call="action_head", step="run_forward_pass")) == []
    assert doctor.check_source(helper.format(call=bare, step="vla")) == []
    evaluation = helper.format(call=bare, step="run_forward_pass").replace(
        "def run_forward_pass", "@torch.no_grad()\ndef run_forward_pass"
    )
    assert doctor.check_source(evaluation) == []


def test_apex_ddp_is_no_mixed_precision():
    """Corpora 12 and 13 (seen): `from apex.parallel import DistributedDataParallel` then
    `DistributedDataParallel(model)` was reported as deprecated mixed precision (DDL102) and judged false twice:
    it is apex's DDP wrapper. apex's amp still is."""
    ddp = "import apex\nmodel = apex.parallel.DistributedDataParallel(model)\n"
    assert [f.code for f in doctor.check_source(ddp)] == []
    amp = "from apex import amp\nmodel, opt = amp.initialize(model, opt, opt_level='O1')\n"
    assert {f.code for f in doctor.check_source(amp)} == {"DDL102"}
    # corpus 26 (seen): MS-G3D's `# import apex`, then `apex.amp.initialize(...)` under --half: a NameError
    spelled = "{}if half:\n    model, opt = apex.amp.initialize(model, opt, opt_level='O1')\n"
    assert [f.code for f in doctor.check_source(spelled.format("import apex\n"))] == ["DDL102"]
    assert doctor.check_source(spelled.format("# import apex\n")) == []


def test_code_after_a_refusal_to_run_distributed_and_what_only_it_calls():
    """Corpus 13 (seen): PoinTr's test_net starts with `if args.distributed: raise NotImplementedError()`, and
    test() is called from test_net alone: their makedirs run in one process. A function mp.spawn is handed is
    still every rank's, even when the script also calls it directly where it is not distributed."""
    script = (
        DDP_HEAD + "import os\n"
        "def test(args):\n    os.makedirs('results')\n"
        "def test_net(args):\n    if args.distributed:\n        raise NotImplementedError()\n"
        "    os.makedirs('vis')\n    test(args)\n"
        "test_net(args)\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(script)] == []
    spawned = (
        DDP_HEAD + "import os\nimport torch.multiprocessing as mp\n"
        "def worker(rank, args):\n    os.makedirs('results')\n"
        "if args.distributed:\n    mp.spawn(worker, args=(args,), nprocs=2)\nelse:\n    worker(0, args)\n"
        + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(spawned)] == ["DDL137"]


def test_a_training_sampler_built_modules_away_that_never_gets_set_epoch(tmp_path):
    """Corpus 14 (seen): ViT-pytorch's get_loader, HigherHRNet's make_dataloader (under lib/, which its
    _init_paths puts on sys.path) and vq-vae-2's `dist.data_sampler(ds, shuffle=True, ...)` (re-exported by the
    package's __init__) build the DistributedSampler; the script that runs the epochs never calls set_epoch.
    Reported at the call, with where the sampler is. Not where the script or the function the loop hands the
    loader to calls set_epoch, nor for the eval split's loader."""
    build = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def make_dataloader(cfg, is_train=True):\n"
        "    dataset = build_dataset(cfg, is_train)\n"
        "    if is_train:\n        sampler = DistributedSampler(dataset)\n"
        "    else:\n        sampler = None\n"
        "    return DataLoader(dataset, sampler=sampler)\n"
    )
    trainer = (
        "def do_train(loader, model, epoch):\n    {body}\n    for x in loader:\n        model(x)\n"
    )
    script = (
        DDP_HEAD + "from dataset.build import make_dataloader\nfrom core.trainer import do_train\n"
        "train_loader = make_dataloader(cfg, is_train=True)\n"
        "valid_loader = make_dataloader(cfg, is_train=False)\n"
        "for epoch in range(10):\n    {loop}do_train(train_loader, model, epoch)\n" + DDP_TAIL
    )
    cases = [  # (the loop's set_epoch, do_train's, reported)
        ("", "pass", True),
        ("train_loader.sampler.set_epoch(epoch)\n    ", "pass", False),
        ("", "loader.sampler.set_epoch(epoch)", False),
    ]
    for i, (loop, body, expected) in enumerate(cases):
        files = {
            "lib/dataset/__init__.py": "",
            "lib/dataset/build.py": build,
            "lib/core/__init__.py": "",
            "lib/core/trainer.py": trainer.format(body=body),
            "tools/train.py": script.format(loop=loop),
        }
        found = check_in_project(tmp_path / f"p{i}", files, "tools/train.py", where=True)
        assert ((9, "DDL105") in found) is expected, (loop, body, found)
        assert (10, "DDL105") not in found  # the valid loader


def test_rank_0_leaving_the_training_loop_or_the_run_under_an_outer_main_only_check():
    """Corpora 12 and 14 (seen): CodeBERT's `if global_rank == 0 and global_step == train_steps: ...; return`
    inside the step loop (the others train on into an all-reduce rank 0 never joins), CLAP's `if is_master(args):
    ... if exists(log_path): return -1` before the process group forms, open_lm's NaN check on the master. Not
    where every rank leaves, nor rank 0's return from an evaluation loop that trains nothing."""
    loop = (
        DDP_HEAD + "model = DDP(net)\ndef train(args, loader, optimizer):\n"
        "    for step, (x, y) in enumerate(loader):\n"
        "        F.mse_loss(model(x), y).backward()\n        optimizer.step()\n"
        "        if {test}:\n            save(model)\n            return\n" + DDP_TAIL
    )
    found = doctor.check_source(loop.format(test="dist.get_rank() == 0 and step == args.last"))
    assert [f.code for f in found] == ["DDL134"], found
    assert doctor.check_source(loop.format(test="step == args.last")) == []
    cases = {  # an outer main-only `if` around the return: reported; rank 0 leaving an eval loop: not
        "    if dist.get_rank() == 0:\n        if os.path.exists(args.log):\n            return -1\n"
        "    for x, y in loader:\n        F.mse_loss(model(x), y).backward()\n        optimizer.step()\n": [
            "DDL134"
        ],
        "    for x, y in loader:\n        if dist.get_rank() == 0:\n            print(model(x))\n"
        "            return\n": [],
    }
    for body, expected in cases.items():
        source = f"{DDP_HEAD}import os\nmodel = DDP(net)\ndef run(args, loader, optimizer):\n{body}{DDP_TAIL}"
        assert [f.code for f in doctor.check_source(source)] == expected, body


def test_what_corpus_14_said_was_not_a_mistake_is_left_alone():
    """Corpus 14 (seen), four false findings: DROID-SLAM's `if gpu == 0:` where `init_process_group(rank=gpu)`
    (gpu is the rank); FiD's `torch.manual_seed(opt.global_rank + opt.seed)`; CodeT5's same seed with a
    RandomSampler only where it runs without a DistributedSampler; AutoTimes's load in the else of
    `if self.args.use_multi_gpu:`. Each beside the shape that is still the mistake."""
    holder = (
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def train(gpu, args):\n    dist.init_process_group('nccl', world_size=2, rank={rank})\n"
        "    model = torch.nn.parallel.DistributedDataParallel(net)\n"
        "    for step in range(10):\n        if step % 5 == 0 and gpu == 0:\n"
        "            torch.save(model.module.state_dict(), 'ckpt.pth')\n"
        "    dist.destroy_process_group()\nmp.spawn(train, nprocs=2, args=(args,))\n"
    )
    assert doctor.check_source(holder.format(rank="gpu")) == []
    # gpu is then the local index, and the node's rank is added to it: one writer a node, not one a job
    found = doctor.check_source(holder.format(rank="args.node * 2 + gpu"))
    assert [f.code for f in found] == ["DDL107"], found
    seeded = (
        DDP_HEAD + "from torch.utils.data import RandomSampler\ntorch.manual_seed({seed})\n"
        "{sampler}\nloader = DataLoader(ds, sampler=sampler)\n" + DDP_TAIL
    )
    cases = {  # (seed, sampler): the codes found
        ("opt.seed", "sampler = RandomSampler(ds)"): [
            "DDL142"
        ],  # contriever: every rank the same batches
        ("opt.global_rank + opt.seed", "sampler = RandomSampler(ds)"): [],
        (
            "args.seed",
            "sampler = RandomSampler(ds) if args.local_rank == -1 else DistributedSampler(ds)",
        ): [],
    }
    for (seed, sampler), expected in cases.items():
        source = seeded.format(seed=seed, sampler=sampler)
        found = [f.code for f in doctor.check_source(source) if f.code == "DDL142"]
        assert found == expected, (seed, sampler)
    branch = (
        DDP_HEAD + "class Exp:\n    def load(self, path):\n        if self.args.use_multi_gpu:\n"
        "            dist.barrier()\n            return torch.load(path, map_location='cpu')\n"
        "        else:\n            return torch.load(path)\n" + DDP_TAIL
    )
    assert doctor.check_source(branch) == []
    found = doctor.check_source(
        branch.replace("return torch.load(path)\n", "pass\n", 1).replace("map_location='cpu'", "")
    )
    assert [f.code for f in found] == ["DDL132"], found


def test_rank_0_skipping_its_own_evaluation_with_continue_skips_no_training():
    """Corpora 12 and 14 (seen): masr's and VoiceprintRecognition's `if local_rank == 0: if self.stop_eval:
    continue` skips rank 0's evaluation, which ends in `self.model.train()` (a mode switch, not training): no
    collective is skipped. A train call after it still is one."""
    source = (
        DDP_HEAD + "model = DDP(net)\nfor epoch in range(3):\n    train_epoch(model, loader)\n"
        "    if dist.get_rank() == 0:\n        if stop_eval:\n            continue\n"
        "        evaluate(model)\n        model.train()\n{after}" + DDP_TAIL
    )
    assert doctor.check_source(source.format(after="")) == []
    found = doctor.check_source(source.format(after="    train_epoch(model, extra_loader)\n"))
    assert [f.code for f in found] == ["DDL134"], found


def test_a_name_bound_on_the_main_process_alone_and_read_on_every_rank():
    """Corpora 10, 11 and 14 (seen): CodeT5's `if args.local_rank in [-1, 0]: tb_writer = SummaryWriter(...)`
    read by every rank at its evaluation; the Hub `repo` or `repo_name` made on the main process and pushed to
    by every rank at the end (a boft dreambooth example, distil-whisper). Not where the read is under the same
    check, on the far side of `is_main_process and`, in a one-process branch (`RANK == -1`), or where the other
    ranks bind it too."""
    script = (
        DDP_HEAD + "from torch.utils.tensorboard import SummaryWriter\ndef main(args):\n"
        "    if args.local_rank in [-1, 0]:\n        tb_writer = SummaryWriter(args.out)\n{other}"
        "    for epoch in range(3):\n        loss = train_epoch(args)\n{read}" + DDP_TAIL
    )
    use = "tb_writer.add_scalar('loss', loss, epoch)"
    cases = {
        ("", f"        if args.data_num == -1:\n            {use}\n"): ["DDL144"],
        ("", f"        if args.local_rank in [-1, 0] and epoch % 2 == 0:\n            {use}\n"): [],
        ("", f"        if dist.get_rank() == 0 and {use}:\n            pass\n"): [],
        ("", f"        if args.local_rank == -1:\n            {use}\n"): [],
        # bts's (corpus 16): a value only the main process holds, tested where the writer is read
        ("", f"        if measures is not None:\n            {use}\n"): [],
        (
            "    else:\n        tb_writer = None\n",
            f"        if tb_writer:\n            {use}\n",
        ): [],
    }
    for (other, read), expected in cases.items():
        found = [f.code for f in doctor.check_source(script.format(other=other, read=read))]
        assert found == expected, (other, read, found)


def test_what_corpus_15_taught_about_seeds_and_the_projects_data(tmp_path):
    """Corpus 15 (seen): esvit seeds through its own `utils.fix_random_seeds(args.seed)`, gmflow and
    SpeechTokenizer draw their crops in a dataset module the script imports: every rank then draws the same
    augmentations. A sampler's shuffle is not augmentation (it must be the same on every rank), a helper given
    the rank seeds per rank, and a project beside this one is not this one's (`import data` of ~/code/other)."""
    script = (
        "import torch\nimport torch.distributed as dist\nimport utils\nfrom {module} import Pairs\n"
        "dist.init_process_group('nccl')\nutils.{seed}\n"
        "loader = torch.utils.data.DataLoader(Pairs(), num_workers=4)\ndist.destroy_process_group()\n"
    )
    dataset = (
        "import random\nclass Pairs:\n    def __getitem__(self, i):\n"
        "        start = random.randint(0, 100)\n        return self.items[i][start:start + 10]\n"
    )
    sampler = (
        "import random\nclass Pairs:\n    def __getitem__(self, i):\n        return self.items[i]\n"
        "class BucketSampler:\n    def __call__(self):\n        random.shuffle(self.buckets)\n"
    )
    plain = "def fix_random_seeds(s):\n    pass\n"
    ranked = (
        "import torch.distributed as dist\ndef fix_random_seeds(s):\n    s += dist.get_rank()\n"
    )
    cases = {  # (data module, seeding call, the helper): DDL142 expected
        (dataset, "fix_random_seeds(args.seed)", plain): True,
        (dataset, "fix_random_seeds(args.seed + dist.get_rank())", plain): False,
        (dataset, "fix_random_seeds(args.seed + 1 + RANK)", plain): False,  # yolov3's
        (
            dataset,
            "fix_random_seeds(args.seed)",
            ranked,
        ): False,  # MOTIP's set_seed adds the rank itself
        (sampler, "fix_random_seeds(args.seed)", plain): False,
    }
    for i, ((data, seed, helper), expected) in enumerate(cases.items()):
        project = tmp_path / f"p{i}" / "proj"
        files = {"LICENSE": "", "utils.py": helper, "data.py": data}
        files["train.py"] = script.format(module="data", seed=seed)
        found = check_in_project(project, files, "train.py")
        assert ("DDL142" in found) is expected, (seed, found)
    # the same script at its project's root, its data module in a project beside it: not read
    files = {"LICENSE": "", "utils.py": "def fix_random_seeds(s):\n    pass\n"}
    files["train.py"] = script.format(module="data", seed="fix_random_seeds(args.seed)")
    (tmp_path / "beside").mkdir()
    (tmp_path / "beside" / "data.py").write_text(dataset)
    assert "DDL142" not in check_in_project(tmp_path / "mine", files, "train.py")


def test_what_corpus_15_taught_about_ranks_made_local_or_global():
    """Corpus 15 (seen): MeloTTS's `init_process_group(rank=local_rank)` makes the global rank the local one
    (one node): `.cuda(rank)` after `rank = dist.get_rank()` is then its own GPU; elsewhere the global rank as a
    device is reported once, where it is first used (it was 18 findings on one name). CodeXGLUE's
    `args.local_rank += args.node_index * args.gpu_per_node` makes the local rank global: a `local_rank in
    [-1, 0]` guard is then rank 0's."""
    uses = "rank = dist.get_rank()\nnet.cuda(rank)\nx = x.cuda(rank)\ny = y.cuda(rank)\n" + DDP_TAIL
    single = (
        "import torch.distributed as dist\ndist.init_process_group('nccl', rank={rank})\n" + uses
    )
    assert doctor.check_source(single.format(rank="local_rank")) == []
    found = doctor.check_source(single.format(rank="int(os.environ['RANK'])"))
    assert [(f.line, f.code) for f in found] == [(4, "DDL117")], found
    made = (
        DDP_HEAD + "model = DDP(net)\ntorch.cuda.set_device(args.local_rank)\n{offset}"
        "for epoch in range(3):\n    if args.local_rank in [-1, 0]:\n"
        "        torch.save(model.module.state_dict(), 'last.pt')\n" + DDP_TAIL
    )
    assert (
        doctor.check_source(made.format(offset="args.local_rank += args.node * args.gpus\n")) == []
    )
    found = doctor.check_source(made.format(offset=""))
    assert [f.code for f in found] == ["DDL107"], found


def test_what_corpus_15_taught_about_reads_resumes_and_one_process_commands(tmp_path):
    """Corpus 15 (seen): CodeXGLUE reads `idx_file` when it resumes in main() and writes a variable of that
    name in train(): two paths, and no order between them (DDL122 was 0 true in 4 on such pairs). univnet
    resumes from `chkpt_path` with no map_location. gmflow's submission branch (`if args.submission:`) is run by
    its scripts as `CUDA_VISIBLE_DEVICES=0 python main.py --submission`, never by the launcher."""
    write = (
        "def train(args):\n    if dist.get_rank() == 0:\n        open(idx_file, 'w').write('1')\n"
    )
    read = "def main(args):\n    with open(idx_file) as f:\n        start = f.read()\n"
    assert doctor.check_source(DDP_HEAD + read + write + DDP_TAIL) == []
    same = (
        "def train(args):\n    if dist.get_rank() == 0:\n        open(idx_file, 'w').write('1')\n"
    )
    same += "    with open(idx_file) as f:\n        start = f.read()\n"
    assert [f.code for f in doctor.check_source(DDP_HEAD + same + DDP_TAIL)] == ["DDL122"]
    load = DDP_HEAD + "model = DDP(net)\nstate = torch.load(chkpt_path{mapped})\n" + DDP_TAIL
    assert [f.code for f in doctor.check_source(load.format(mapped=""))] == ["DDL132"]
    assert doctor.check_source(load.format(mapped=", map_location='cpu'")) == []
    main = (
        DDP_HEAD + "import os\nmodel = DDP(net)\nif args.submission:\n"
        "    os.makedirs(args.output_path)\n    raise SystemExit\n" + DDP_TAIL
    )
    train = "python -m torch.distributed.launch --nproc_per_node=4 --use_env main.py --launcher pytorch\n"
    for submit, expected in (
        ("CUDA_VISIBLE_DEVICES=0 python main.py \\\n--submission --output_path out\n", []),
        ("torchrun --nproc_per_node=2 main.py --submission\n", ["DDL137"]),
    ):
        project = tmp_path / str(len(expected))
        files = {"README.md": "", "main.py": main, "scripts/train.sh": train}
        files["scripts/submission.sh"] = submit
        assert check_in_project(project, files, "main.py") == expected, submit


def test_a_validation_metric_kept_in_a_dict_or_a_best_check_without_a_reduction():
    """Corpus 15 (seen): tango sums its validation loss on its prepared (sharded) loader, puts
    `total_val_loss / len(eval_dataloader)` in `result["val_loss"]` and logs the dict on the main process, six
    lines in all; AcademiCodec's rank 0 keeps `if valid_rec_loss < best_val_loss:` over its own shard. Reported
    once a metric, where it is first shown; not once the sums are reduced."""
    tango = (
        ACCELERATE_HEAD + "model, eval_dataloader = accelerator.prepare(model, eval_dataloader)\n"
        "total_val_loss = 0\nfor batch in eval_dataloader:\n"
        "    total_val_loss += model(batch).detach().float()\n{reduce}"
        "if accelerator.is_main_process:\n    result = {{}}\n"
        "    result['val_loss'] = round(total_val_loss.item() / len(eval_dataloader), 4)\n"
        "    wandb.log(result)\n    logger.info(result)\n"
    )
    best = (
        DDP_HEAD + "val_sampler = DistributedSampler(valid_set)\nvalid_rec_loss = 0.0\n"
        "for x in valid_loader:\n    valid_rec_loss += F.mse_loss(model(x), x).item()\n{reduce}"
        "if dist.get_rank() == 0:\n    if valid_rec_loss < best_val_loss:\n"
        "        best_val_loss = valid_rec_loss\n" + DDP_TAIL
    )
    all_reduce = "valid_rec_loss = torch.tensor(valid_rec_loss)\ndist.all_reduce(valid_rec_loss)\n"
    cases = [  # (script, its reduction, the findings: the padding sampler stays, under a reduction)
        (tango, "", [(12, "DDL124")]),
        (tango, "total_val_loss = accelerator.reduce(total_val_loss)\n", []),
        (best, "", [(12, "DDL124")]),
        (best, all_reduce, [(7, "DDL127")]),
    ]
    for script, reduce, expected in cases:
        found = doctor.check_source(script.format(reduce=reduce))
        assert [(f.line, f.code) for f in found] == expected, (reduce, found)


def test_a_validation_metric_logged_in_another_module_from_the_sharded_loader_it_is_handed(
    tmp_path,
):
    """Corpus 29 (seen): PSED's training script shards its validation set with a DistributedSampler and hands
    the loader to a method in another module, which logs `epoch_val_loss` on rank 0 unreduced; Retro3D's
    `Data(config, val=True)` shards the split that is not "train" in a method of its class, and
    `trainer.val(val_loader)` in utils/trainer.py logs `add_scalar("valid_loss", ...)` under a rank check.
    Reported at the call, with where the log is; not where the loader is whole or the sums are reduced."""
    trainer = (
        "import torch\nimport torch.distributed as dist\n"
        "class Trainer:\n"
        "    def __init__(self, model, writer, rank):\n"
        "        self.model, self.writer, self.rank = model, writer, rank\n"
        "    def val(self, loader, step):\n"
        "        total, count = 0.0, 0\n"
        "        for x, y in loader:\n"
        "            total += self.model(x).sum().item()\n"
        "            count += len(x)\n"
        "{reduce}"
        "        {name} = total / count\n"
        "        if self.rank == 0:\n"
        "            {log}\n"
    )
    data = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "class Data:\n"
        "    def __init__(self, sets):\n"
        "        self.loaders = {{mode: self.loader(sets[mode], mode) for mode in sets}}\n"
        "    def loader(self, dataset, mode):\n"
        "        if mode == 'train':\n"
        "            sampler = DistributedSampler(dataset, shuffle=True)\n"
        "        else:\n"
        "            sampler = {sampler}\n"
        "        return DataLoader(dataset, sampler=sampler)\n"
    )
    main = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "from trainer import Trainer\nfrom data import Data\n"
        "dist.init_process_group('gloo')\n"
        "model = DDP(torch.nn.Linear(2, 1))\n"
        "{loader}\n"
        "trainer = Trainer(model, None, dist.get_rank())\n"
        "trainer.val(val_loader, 0)\n"
        "dist.destroy_process_group()\n"
    )
    sharded = "val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set, shuffle=False))"
    whole = "val_loader = DataLoader(val_set)"
    by_class = "val_loader = Data(sets).loaders['val']"
    shard = "DistributedSampler(dataset, shuffle=False)"
    reduce = (
        "        t = torch.tensor([total, count])\n        dist.all_reduce(t)\n"
        "        total, count = t.tolist()\n"
    )
    printed = ("epoch_val_loss", "print(f'{epoch_val_loss:.3f}')")
    tagged = ("mean_loss", "self.writer.add_scalar('valid_loss', mean_loss, step)")
    keyed = ("mean_loss", "self.writer.log({'val/loss': mean_loss})")
    unnamed = ("mean_loss", "print(mean_loss)")
    cases = [  # (the caller's loader, the data class's eval sampler, the log, the reduction, found)
        (sharded, shard, printed, "", True),
        (sharded, shard, tagged, "", True),
        (sharded, shard, keyed, "", True),
        (sharded, shard, unnamed, "", False),  # nothing names it a validation metric
        (sharded, shard, printed, reduce, False),
        (whole, shard, printed, "", False),
        (by_class, shard, printed, "", True),
        (by_class, "None", printed, "", False),
    ]
    for i, (loader, sampler, (name, log), reduced, expected) in enumerate(cases):
        files = {
            "trainer.py": trainer.format(reduce=reduced, name=name, log=log),
            "data.py": data.format(sampler=sampler),
            "main.py": main.format(loader=loader),
        }
        found = check_in_project(tmp_path / str(i), files, "main.py", where=True)
        assert ((11, "DDL124") in found) is expected, (loader, sampler, log, reduced, found)
    path = tmp_path / "0" / "main.py"
    found = doctor.check_source(path.read_text(), str(path), neighbours=True)
    assert [f.via for f in found if f.code == "DDL124"] == ["trainer.py:13"], found
    # Retro3D's stop: `early_stop = trainer.save_models()`, a count kept on rank 0 in the other module
    keeps = (
        "class Saver:\n    def __init__(self, rank):\n        self.rank, self.bad = rank, 0\n"
        "    def save_models(self):\n        if self.rank < 1:\n            self.bad += 1\n"
        "        return self.bad >= 7\n"
    )
    stops = main.format(loader=whole).replace(
        "trainer.val(val_loader, 0)\n",
        "for epoch in range(9):\n    trainer.val(val_loader, 0)\n"
        "    loss = model(x).sum()\n    loss.backward()\n"
        "    early_stop = saver.save_models()\n    if early_stop:\n        break\n",
    )
    stops = stops.replace("from data import Data\n", "from saver import Saver\n")
    stops = stops.replace("trainer = ", "saver = Saver(dist.get_rank())\ntrainer = ")
    for i, (body, expected) in enumerate(
        [(keeps, True), (keeps.replace("if self.rank < 1", "if True"), False)]
    ):
        files = {"trainer.py": trainer.format(reduce="", name="x", log="pass"), "saver.py": body}
        files["main.py"] = stops
        found = check_in_project(tmp_path / f"s{i}", files, "main.py", where=True)
        assert ((17, "DDL134") in found) is expected, (body, found)


def test_a_hugging_face_trainer_script_the_repository_launches_in_processes_is_distributed(
    tmp_path,
):
    """Corpus 30: multi-gpu-sft's README runs its SFTTrainer script with `accelerate launch`, and after
    `trainer.train()` the script calls `model.save_pretrained(new_model_id)` on every process. The script names
    no process group (the Trainer joins it), so only the repository's commands say it runs in several. Not when
    the commands run it as one process, nor under the Trainer's own main-process test."""
    script = (
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "from trl import SFTTrainer\n"
        "model = AutoModelForCausalLM.from_pretrained('m')\n"
        "trainer = SFTTrainer(model=model, args=TrainingArguments('out'), train_dataset=data)\n"
        "trainer.train()\n"
        "{guard}model.save_pretrained('final')\n"
    )
    cases = [  # (the README's command, the guard, whether DDL107 is found)
        ("accelerate launch --config_file zero1.yaml train.py --bf16", "", True),
        ("torchrun --nproc_per_node=4 train.py", "", True),
        ("accelerate launch --num_processes 1 train.py", "", False),
        ("python train.py --bf16", "", False),
        ("accelerate launch train.py", "if trainer.is_world_process_zero():\n    ", False),
    ]
    for i, (command, guard, expected) in enumerate(cases):
        files = {"README.md": f"```\n{command}\n```\n", "train.py": script.format(guard=guard)}
        found = check_in_project(tmp_path / str(i), files, "train.py", where=True)
        assert ((6 + bool(guard), "DDL107") in found) is expected, (command, guard, found)


def test_a_write_after_an_assert_that_only_the_main_process_gets_there_or_made_main_first():
    """Corpus 28 (seen), FastChat's train_flant5.py: `if dist.get_rank() != 0: dist.barrier()`, then, where
    the preprocessed file is missing, `if not os.path.exists(d): os.mkdir(d)` and `assert dist.get_rank() == 0`
    before the write: rank 0 makes the folder and writes while the others wait, and they find both made."""
    script = (
        DDP_HEAD + "import os\n"
        "def load(path):\n"
        "{first}"
        "    if not os.path.exists('cache'):\n        os.mkdir('cache')\n"
        "{asserted}"
        "    torch.save(build(), path)\n"
        "load('cache/data.pt')\n" + DDP_TAIL
    )
    first = "    if dist.get_rank() != 0:\n        dist.barrier()\n"
    asserted = "    assert dist.get_rank() == 0, 'only the first process writes'\n"
    cases = [  # (the main-first barrier, the assert, the codes found)
        (first, asserted, []),
        ("", asserted, ["DDL137"]),
        (first, "", ["DDL107"]),
        ("", "", ["DDL107", "DDL137"]),
    ]
    for before, asserts, expected in cases:
        found = codes_of(script.replace("{first}", before).replace("{asserted}", asserts))
        assert sorted(c for c in found if c in ("DDL107", "DDL137")) == expected, (
            before,
            asserts,
            found,
        )


def test_corpus_30s_false_findings_are_left_alone(tmp_path):
    """Corpus 30's judges counted these false, each now quiet, and the mistake beside each still found.
    Action-Recognition-Study: `if args.show_model and rank == 0: return` leaves on the main process, so the
    validate(model) after it runs on every rank (DDL157). The DDP tutorial series loads its snapshot in a
    method __init__ calls before the wrap (DDL163). A tutorial commits data/FashionMNIST, so its download=True
    finds the files (DDL139). CuiJiali-CV's pytorch-ddp draws noise for a picture on rank 0 alone (DDL152)."""
    worker = (
        DDP_HEAD + "from torch import nn\n"
        "def validate(model, loader):\n    return sum(model(x).sum().item() for x in loader)\n"
        "def main_worker(rank, args):\n"
        "    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\n"
        "    if args.show_model and {test}:\n        print(model)\n        return 0\n"
        "    for epoch in range(3):\n        print(validate(model, val_loader))\n" + DDP_TAIL
    )
    assert "DDL157" not in codes_of(worker, test="rank == 0")
    assert "DDL157" in codes_of(worker, test="rank != 0")  # then rank 0 alone goes on
    trainer = (
        DDP_HEAD + "class Trainer:\n    def __init__(self, model, path):\n"
        "        self.model = model\n{load}"
        "        self.model = DDP(self.model)\n"
        "    def _load_snapshot(self, path):\n"
        "        self.model.load_state_dict(torch.load(path, weights_only=True)['MODEL'])\n"
        "    def _save_snapshot(self, path):\n"
        "        torch.save({{'MODEL': self.model.module.state_dict()}}, path)\n{after}" + DDP_TAIL
    )
    before = "        self._load_snapshot(path)\n"
    later = "    def resume(self, path):\n        self._load_snapshot(path)\n"
    assert "DDL163" not in codes_of(trainer, load=before, after="")
    assert "DDL163" in codes_of(trainer, load="", after=later)
    download = (
        DDP_HEAD + "from torchvision import datasets\n"
        "train_data = datasets.FashionMNIST(root='data', train=True, download=True)\n" + DDP_TAIL
    )
    for i, (folder, expected) in enumerate(
        [("data/FashionMNIST/raw", False), ("data/other", True), (None, True)]
    ):
        project = tmp_path / str(i)
        files = {"README.md": "", "train.py": download}
        if folder:
            files[f"{folder}/x.gz"] = ""
        assert ("DDL139" in check_in_project(project, files, "train.py")) is expected, folder
    picture = (
        DDP_HEAD + "torch.manual_seed(0)\nmodel = DDP(net)\nrank = dist.get_rank()\n"
        "for epoch in range(9):\n    for x in loader:\n        loss = model(x).sum()\n"
        "        loss.backward()\n"
        "    {test}\n        z = torch.randn(8, 4)\n        save_image(model(z), 'syn.png')\n"
        + DDP_TAIL
    )
    assert "DDL152" not in codes_of(picture, test="if rank == 0 and epoch % 5 == 0:")
    assert "DDL152" in codes_of(picture, test="if epoch % 5 == 0:")


def test_the_rendezvous_a_torchrun_script_overwrites(tmp_path):
    """DDL166, corpus 30: a DDP tutorial series' torchrun script sets MASTER_ADDR and MASTER_PORT as the mp.spawn
    script it was copied from does; under torchrun the workers then connect to a port where nothing listens
    (measured: two gloo workers timed out at localhost:12355, and joined at once without the lines). Quiet for
    setdefault, a fallback under an `if`, a script that spawns its own processes, and one that reads Slurm's
    variables; found where the repository's commands run it with torchrun though it reads no LOCAL_RANK."""
    script = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "{spawn}def ddp_setup():\n{setting}"
        "    dist.init_process_group('nccl')\n{local}ddp_setup()\n"
    )
    overwrite = (
        "    os.environ['MASTER_ADDR'] = 'localhost'\n    os.environ['MASTER_PORT'] = '12355'\n"
    )
    local = "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    rows = [  # (setting, local rank read, spawn, found)
        (overwrite, local, "", True),
        ("    os.environ.setdefault('MASTER_PORT', '12355')\n", local, "", False),
        ("    os.environ['MASTER_PORT'] = os.environ.get('MASTER_PORT', '1')\n", local, "", False),
        (
            "    if 'MASTER_PORT' not in os.environ:\n        os.environ['MASTER_PORT'] = '1'\n",
            local,
            "",
            False,
        ),
        (overwrite, "", "", False),
        (overwrite.replace("'localhost'", "os.environ['SLURM_NODELIST']"), local, "", False),
        (
            overwrite,
            local,
            "import torch.multiprocessing as mp\nmp.spawn(ddp_setup, nprocs=2)\n",
            False,
        ),
    ]
    assert_found("DDL166", script, ("setting", "local", "spawn"), rows)
    # no LOCAL_RANK read, but the README launches it with torchrun
    files = {
        "README.md": "```\ntorchrun --nproc_per_node=2 train.py\n```\n",
        "train.py": script.format(setting=overwrite, local="", spawn=""),
    }
    assert (5, "DDL166") in check_in_project(tmp_path / "t", files, "train.py", where=True)
    assert "DDL166" in doctor.PREVIEW  # 1 of 2 on corpus 32, its first never-seen set


def test_a_loss_divided_by_the_world_size_before_its_backward():
    """DDL167, corpus 30: haozhi1817's pytorch-ddp engine divides its loss by the world size and backwards
    `scaler.scale(loss)` on a DDP model, which averages the gradients already: every step world_size times
    smaller. Found through a name, in place, under a scaler or accelerator.backward; not for a division by the
    accumulation count, one for the log after the backward, or where the script all-reduces gradients itself."""
    script = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "dist.init_process_group('nccl')\nworld_size = dist.get_world_size()\nmodel = DDP(net)\n"
        "for x, y in loader:\n    loss = loss_fn(model(x), y)\n{step}{extra}"
    )
    rows = [  # (the step, anything else, found)
        ("    loss = loss / world_size\n    loss.backward()\n", "", True),
        ("    loss /= world_size\n    loss.backward()\n", "", True),
        ("    (loss / world_size).backward()\n", "", True),
        ("    scaler.scale(loss / dist.get_world_size()).backward()\n", "", True),
        ("    loss = loss / accum_steps\n    loss.backward()\n", "", False),
        ("    loss.backward()\n    shown = loss.item() / world_size\n", "", False),
        (
            "    loss = loss / world_size\n    loss.backward()\n",
            "    for p in model.parameters():\n        dist.all_reduce(p.grad)\n",
            False,
        ),
    ]
    assert_found("DDL167", script, ("step", "extra"), rows)
    prepared = (
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for x, y in loader:\n    loss = loss_fn(model(x), y)\n"
        "    accelerator.backward(loss / accelerator.num_processes)\n    optimizer.step()\n"
    )
    assert "DDL167" in codes_of(prepared)
    assert "DDL167" not in codes_of(prepared.replace(" / accelerator.num_processes", ""))


def test_the_group_destroyed_in_the_process_that_spawned_the_workers():
    """DDL168, corpus 30: pytorch-ddpm-ddp's `__main__` calls `cleanup()` (destroy_process_group) after
    `mp.spawn` returns, in the parent, which never joined (torch 2.13 raises there, measured: "Process group
    cannot be None"). Found directly or through the helper; not where the parent joined first, nor in the
    one-process branch."""
    script = (
        "import torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def cleanup():\n    dist.destroy_process_group()\n"
        "def main(rank):\n    dist.init_process_group('gloo')\n    train(rank)\n"
        "if __name__ == '__main__':\n{joined}    if gpus > 1:\n"
        "        mp.spawn(main, nprocs=gpus)\n        {after}\n    else:\n        main(0)\n"
    )
    assert_found(
        "DDL168",
        script,
        ("joined", "after"),
        (
            ("", "cleanup()", True),
            ("", "dist.destroy_process_group()", True),
            ("", "print('done')", False),
            ("    dist.init_process_group('gloo', rank=0, world_size=1)\n", "cleanup()", False),
        ),
    )


def test_a_loss_summed_over_the_ranks_and_logged_as_it_is():
    """DDL169, corpus 30: haozhi1817's pytorch-ddp engine `dist.reduce`s each entry of its loss dict to rank 0
    with op SUM and writes `v.item()` to TensorBoard: world_size times the mean. Not with op AVG, not where the
    value is divided after, and not for a sum of counts (no loss)."""
    script = (
        DDP_HEAD + "def summary(step, loss_dict):\n"
        "    for k, v in {held}.items():\n"
        "        dist.reduce(tensor=v, dst=0, op={op})\n{after}"
        "        if dist.get_rank() == 0:\n            writer.add_scalar(k, v.item(), step)\n"
        + DDP_TAIL
    )
    assert_found(
        "DDL169",
        script,
        ("held", "op", "after"),
        (
            ("loss_dict", "dist.ReduceOp.SUM", "", True),
            ("loss_dict", "dist.ReduceOp.AVG", "", False),
            ("loss_dict", "dist.ReduceOp.SUM", "        v /= dist.get_world_size()\n", False),
            ("counts", "dist.ReduceOp.SUM", "", False),
        ),
    )
    # all_reduce's op is its second argument; the functional collectives name it reduceOp (dzorlu's
    # `funcol.all_reduce(log_loss, reduceOp=reduceOp, group=dp_mesh)` with reduceOp "AVG", corpus 30)
    reduced = (
        DDP_HEAD + "import torch.distributed._functional_collectives as funcol\n"
        "total_loss = loss.detach()\ntotal_loss = {call}\n"
        "if dist.get_rank() == 0:\n    print(total_loss.item())\n" + DDP_TAIL
    )
    assert_found(
        "DDL169",
        reduced.replace("total_loss = {call}", "{call}"),
        ("call",),
        (
            ("dist.all_reduce(total_loss)", True),
            ("dist.all_reduce(total_loss, dist.ReduceOp.AVG)", False),
        ),
    )
    assert_found(
        "DDL169",
        reduced,
        ("call",),
        (("funcol.all_reduce(total_loss, reduceOp=how, group=g)", False),),
    )


def test_the_wrapped_models_name_bound_again_to_a_plain_model_that_trains():
    """DDL170, corpus 30: an ESM-2 fine-tuning script wraps its model in DDP, then loads it again with
    from_pretrained under the same name and trains that one, with no all-reduce. Not the other branch of the
    `if` that wrapped, not a binding made from the wrapper, not one after the training."""
    script = (
        DDP_HEAD + "model = Net()\n{wrap}{again}"
        "for x, y in loader:\n    loss_fn(model(x), y).backward()\n    optimizer.step()\n{after}"
        + DDP_TAIL
    )
    assert_found(
        "DDL170",
        script,
        ("wrap", "again", "after"),
        (
            ("model = DDP(model)\n", "model = Net.from_pretrained('m')\n", "", True),
            ("if ddp:\n    model = DDP(model)\nelse:\n    model = Net()\n", "", "", False),
            ("model = DDP(model)\n", "model = torch.compile(model)\n", "", False),
            ("model = DDP(model)\n", "", "model = Net.from_pretrained('best')\n", False),
        ),
    )


def test_a_skip_on_what_the_model_returned_for_this_processs_batch():
    """Corpus 15 (seen): VoiceCraft's `out = self.model(cur_batch)`, `if out == None: continue` skips the
    all-reduces the other ranks make for that micro-batch. Not a skip on a step counter. (Rank 0 alone raising
    inside the loop is not reported: the judge of the re-read counted it false, since torchrun's agent then
    stops the other workers.)"""
    skip = (
        DDP_HEAD + "model = DDP(net)\nfor step, batch in enumerate(loader):\n"
        "    out = model(batch)\n    if {test}:\n        continue\n"
        "    out['loss'].backward()\n    optimizer.step()\n" + DDP_TAIL
    )
    for test, expected in (("out == None", ["DDL134"]), ("step % 10 == 0", [])):
        found = [f.code for f in doctor.check_source(skip.format(test=test))]
        assert found == expected, (test, found)


def test_whether_to_run_distributed_decided_by_the_gpu_count():
    """Corpora 14 and 15 (seen): RepVGG wraps in DDP under `if torch.cuda.device_count() > 1:`, the voiceprint
    trainer joins the group under `if nranks > 1 and self.use_gpu:` with `nranks = device_count()`: reported
    once, at the first test. A script that starts one process a GPU itself (mp.spawn) has as many processes as
    GPUs, and a test that also asks the launcher is the launcher's."""
    script = (
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\nnranks = torch.cuda.device_count()\n"
        "def run(rank, use_gpu):\n    if {test}:\n        dist.init_process_group('nccl')\n"
        "    if {test}:\n        model = DDP(net)\n    dist.destroy_process_group()\n{start}"
    )
    cases = [
        ("nranks > 1 and use_gpu", "run(0, True)\n", [(7, "DDL146")]),
        ("torch.cuda.device_count() > 1", "run(0, True)\n", [(7, "DDL146")]),
        ("nranks > 1 and args.distributed", "run(0, True)\n", []),
        ("nranks > 1", "mp.spawn(run, args=(True,), nprocs=nranks)\n", []),
    ]
    for test, start, expected in cases:
        found = doctor.check_source(script.format(test=test, start=start))
        assert [(f.line, f.code) for f in found] == expected, (test, found)


def test_what_corpus_16_taught_about_fallbacks_and_the_first_process_of_a_node():
    """Corpus 16 (seen): DataParallel as the one-process fallback of a script that wraps in DDP when launched
    (judged false by three judges of four over corpora 15 and 16); VISTA's `try: model.module.clear_cache()`
    with the bare model in the except, and its `else:` save of the unwrapped model beside `.module`'s; bts's
    NaN `return -1` under `if not args.multiprocessing_distributed or args.rank % ngpus == 0:` (one process of
    the job, then: the others train on into the next all-reduce)."""
    fallback = (
        DDP_HEAD
        + "if args.distributed:\n    model = DDP(net)\nelse:\n    model = torch.nn.DataParallel(net)\n"
    )
    assert doctor.check_source(fallback + DDP_TAIL) == []
    alone = "import torch\nmodel = torch.nn.DataParallel(net)\n"
    assert [f.code for f in doctor.check_source(alone)] == ["DDL103"]
    wrapped = DDP_HEAD + "model = DDP(net)\n{body}" + DDP_TAIL
    cases = [
        (
            "try:\n    model.module.clear_cache()\nexcept AttributeError:\n    model.clear_cache()\n",
            [],
        ),
        ("model.clear_cache()\n", ["DDL125"]),
        (
            "if dist.get_world_size() > 1:\n    torch.save(model.module.state_dict(), 'm.pt')\n"
            "else:\n    torch.save(model.state_dict(), 'm.pt')\n",
            ["DDL107", "DDL107"],  # every rank's saves (no rank check), but no DDL106
        ),
        ("torch.save(model.state_dict(), 'm.pt')\n", ["DDL106", "DDL107"]),
    ]
    for body, expected in cases:
        found = [f.code for f in doctor.check_source(wrapped.format(body=body))]
        assert found == expected, (body, found)
    nan = (
        DDP_HEAD + "model = DDP(net)\ndef main_worker(gpu, ngpus_per_node, args):\n"
        "    for step, (x, y) in enumerate(loader):\n        loss = F.mse_loss(model(x), y)\n"
        "        loss.backward()\n        optimizer.step()\n"
        "        if not args.multiprocessing_distributed or args.rank % ngpus_per_node == 0:\n"
        "            if torch.isnan(loss):\n                return -1\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(nan)] == ["DDL134"]


def test_rank_0_alone_exiting_cleanly_inside_the_training_loop():
    """Corpus 16 (seen): seed-vc's trainer, `if self.iters >= self.max_steps and
    self.accelerator.is_main_process: self._save_checkpoint(epoch); exit()`, the training in a method the loop
    calls: rank 0 ends with success, so torchrun's agent stops no one, and the others wait in the next
    all-reduce. Not an `exit(1)` (the agent then stops them all), nor an exit every rank makes."""
    script = (
        ACCELERATE_HEAD + "class Trainer:\n    def step(self, batch):\n"
        "        self.accelerator.backward(self.model(batch))\n        self.optimizer.step()\n"
        "    def fit(self):\n        for i, batch in enumerate(self.loader):\n"
        "            self.step(batch)\n            if {test}:\n                exit({code})\n"
    )
    cases = [
        ("self.iters >= self.max_steps and self.accelerator.is_main_process", "", ["DDL134"]),
        ("self.iters >= self.max_steps and self.accelerator.is_main_process", "1", []),
        ("self.iters >= self.max_steps", "", []),
    ]
    for test, code, expected in cases:
        found = [f.code for f in doctor.check_source(script.format(test=test, code=code))]
        assert found == expected, (test, code, found)


def test_per_rank_loads_copied_state_dicts_and_samplers_told_not_to_pad():
    """Corpora 15 and 16 (seen), each on a bad and a good script: arcface_torch loads
    `checkpoint_gpu_{rank}.pt`, which each rank saved from its own GPU (DDL132 quiet); SoundStream saves
    `best_model = net.state_dict().copy()` (a state dict, not the model: DDL120 quiet); NVIDIA's
    semantic-segmentation builds its own `DistributedSampler(val_set, pad=False)` (DDL127 quiet)."""
    loaded = DDP_HEAD + "model = DDP(net)\nstate = torch.load(os.path.join(out, {}))\n" + DDP_TAIL
    saved = (
        DDP_HEAD + "def main():\n    best_model = {}\n"
        "    if dist.get_rank() == 0:\n        torch.save(best_model, 'best.pt')\n" + DDP_TAIL
    )
    padded = (
        DDP_HEAD + "val_sampler = DistributedSampler(valset, shuffle=False{})\n"
        "metrics = utils.torch_dist_sum(gpu, *metric.get_all())\n" + DDP_TAIL
    )
    cases = [  # (script, the bad shape, the good one, the code the bad one gets)
        (loaded, "'checkpoint_last.pt'", "f'checkpoint_gpu_{rank}.pt'", "DDL132"),
        (saved, "model", "model.state_dict().copy()", "DDL120"),
        (padded, "", ", pad=False", "DDL127"),
    ]
    for script, bad, good, code in cases:
        assert [f.code for f in doctor.check_source(script.format(bad))] == [code], bad
        assert [f.code for f in doctor.check_source(script.format(good))] == [], good


def test_accumulation_a_package_runs_for_its_caller(tmp_path):
    """Corpus 16 (seen): the accumulation that all-reduces every micro-batch sits in the project's trainer,
    which the entry point imports through its package: flow_matching's `update_grad=apply_update` with
    `apply_update = (i + 1) % accum_iter == 0` a line before; nanoT5's `from .train_utils import *` in
    utils/__init__.py; ml-cvnets' `from engine.training_engine import Trainer` in engine/__init__.py and
    `scaler.step(optimizer=self.optimizer)`. Each with no_sync in the trainer as the good shape."""
    main = (
        DDP_HEAD
        + "from engine import Trainer\nfrom utils import train_one_epoch\nmodel = DDP(net)\n"
        "train_one_epoch(model, loader, optimizer, scaler, 4)\ntrainer = Trainer(model)\ntrainer.run()\n"
        + DDP_TAIL
    )
    scaled = (
        "def train_one_epoch(model, loader, optimizer, loss_scaler, accum_iter):\n"
        "    for i, x in enumerate(loader):\n        loss = model(x).sum() / accum_iter\n"
        "        apply_update = (i + 1) % accum_iter == 0\n"
        "        loss_scaler(loss, optimizer, update_grad=apply_update)\n"
    )
    trainer = (
        "class Trainer:\n    def __init__(self, model):\n        self.model = model\n"
        "    def run(self):\n        for i, x in enumerate(self.loader):\n"
        "            self.scaler.scale(self.model(x).sum()).backward()\n"
        "            if (i + 1) % self.accum_freq == 0:\n"
        "                self.scaler.step(optimizer=self.optimizer)\n"
    )
    files = {
        "train.py": main,
        "utils/__init__.py": "from .train_utils import *\n",
        "utils/train_utils.py": scaled,
        "engine/__init__.py": "from engine.training_engine import Trainer\n",
        "engine/training_engine.py": trainer,
    }
    found = check_in_project(tmp_path / "bad", files, "train.py", where=True)
    assert found == {(10, "DDL119"), (12, "DDL119")}
    synced = {
        **files,
        "utils/train_utils.py": scaled.replace(
            "        loss_scaler(", "        with model.no_sync():\n            loss_scaler("
        ),
        "engine/training_engine.py": trainer.replace(
            "self.model(x)", "self.model.no_sync() and self.model(x)"
        ),
    }
    assert check_in_project(tmp_path / "good", synced, "train.py") == []


def test_a_training_loader_accelerate_never_shards(tmp_path):
    """DDL148, from corpora 14 and 16 (seen): x-flux prepares `deepcopy(train_dataloader)` into `_` and trains
    on the original; seed-vc trains on a project builder's loader that it never prepares. A hook for a
    subclass (trlx's `create_train_dataloader`, body `pass`) and a loader built with its own sampler are not
    reported."""
    loop = (
        "for x in train_loader:\n    accelerator.backward(model(x).sum())\n    optimizer.step()\n"
    )
    cases = [
        (
            "model, optimizer, _ = accelerator.prepare(model, optimizer, deepcopy(train_loader))\n",
            1,
        ),
        ("model, optimizer, loader = accelerator.prepare(model, optimizer, train_loader)\n", 1),
        (
            "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n",
            0,
        ),
        ("train_loader = accelerator.prepare(train_loader)\n", 0),
    ]
    for prepare, expected in cases:
        script = (
            ACCELERATE_HEAD
            + "train_loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
            + prepare
            + loop
        )
        found = [f.code for f in doctor.check_source(script)]
        assert found.count("DDL148") == expected, (prepare, found)
    sampled = ACCELERATE_HEAD + "train_loader = DataLoader(ds, sampler=s)\n" + loop
    assert "DDL148" not in [f.code for f in doctor.check_source(sampled)]
    helper = "def build_loader(ds):\n    return DataLoader(ds, batch_size=8, shuffle=True)\n"
    main = (
        ACCELERATE_HEAD + "from data import build_loader\ntrain_loader = build_loader(ds)\n" + loop
    )
    files = {"train.py": main, "data.py": "from torch.utils.data import DataLoader\n" + helper}
    assert "DDL148" in check_in_project(tmp_path / "bad", files, "train.py")
    hook = (
        ACCELERATE_HEAD + "class Trainer:\n    def create_train_dataloader(self):\n        pass\n"
        "    def learn(self):\n        train_loader = self.create_train_dataloader()\n"
        "        for x in train_loader:\n            accelerator.backward(model(x).sum())\n"
    )
    assert "DDL148" not in [f.code for f in doctor.check_source(hook)]


def test_what_corpus_17_taught_each_on_a_bad_and_a_good_script(tmp_path):
    """Corpus 17 (seen): training statistics gathered under no_grad for the log are no evaluation (DDL118:
    14 false findings in one PPO script); `args.local_rank == -1 or get_rank() == 0` is rank 0 (DDL107); the
    run's settings dumped by every rank are the same bytes (DDL107); an attribute set on the wrapper is read
    back from it (DDL125); seeds set in mp.spawn's parent reach no worker (DDL149)."""
    stats = (
        ACCELERATE_HEAD + "for batch in loader:\n    accelerator.backward(model(batch).sum())\n"
        "    with torch.no_grad():\n{body}"
    )
    logged = "        writer.add_scalar('kl', accelerator.gather(kl.mean()).mean().item(), step)\n"
    looped = "        for x in loader:\n            p = accelerator.gather(model(x))\n"
    assert "DDL118" not in [f.code for f in doctor.check_source(stats.format(body=logged))]
    assert "DDL118" in [f.code for f in doctor.check_source(stats.format(body=looped))]
    guarded = (
        DDP_HEAD + "from torch.distributed import get_rank\nmodel = DDP(net)\n"
        "if {test}:\n    torch.save(model.module.state_dict(), 'm.pt')\n" + DDP_TAIL
    )
    assert [
        f.code
        for f in doctor.check_source(
            guarded.format(test="args.local_rank == -1 or get_rank() == 0")
        )
    ] == []
    assert [
        f.code for f in doctor.check_source(guarded.format(test="args.fp16 or get_rank() == 0"))
    ] == ["DDL107"]
    dumped = (
        DDP_HEAD
        + "import yaml\nwith open(out / 'x.yaml', 'w') as f:\n    yaml.dump({}, f)\n"
        + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(dumped.format("hyp"))] == []
    assert [f.code for f in doctor.check_source(dumped.format("results"))] == ["DDL107"]
    stored = DDP_HEAD + "model = DDP(net)\n{}w = model.class_weights\n" + DDP_TAIL
    assert [f.code for f in doctor.check_source(stored.format(""))] == ["DDL125"]
    assert [f.code for f in doctor.check_source(stored.format("model.class_weights = cw\n"))] == []
    spawned = (
        "import torch\nimport torch.multiprocessing as mp\n{module}def worker(rank, args):\n{seeded}"
        "    train(rank, args)\nif __name__ == '__main__':\n{main}    mp.spawn(worker, args=(args,), nprocs=2)\n"
    )
    seed = "torch.manual_seed(0)\n"
    cases = [
        ("", "", "    " + seed, ["DDL149"]),  # the parent's seed
        ("", "    " + seed, "    " + seed, []),  # the worker seeds too
        (seed, "", "", []),  # at module level: each worker runs it again on import
    ]
    for module, seeded, main, expected in cases:
        script = spawned.format(module=module, seeded=seeded, main=main)
        assert [f.code for f in doctor.check_source(script)] == expected, script


def test_what_corpus_17_taught_about_the_projects_own_classes_and_pages(tmp_path):
    """Corpus 17 (seen): a project's own DistributedDataParallel whose state_dict is the module's (DDL106,
    sentiment-discovery); DETR's coco_eval.py, whose merge keeps unique image ids, two imports away (DDL127,
    ED-Pose); a global rank as the device in a repository whose pages launch on one machine only (DDL117,
    DEIM)."""
    own = (
        "class DistributedDataParallel:\n    def state_dict(self, prefix=''):\n"
        "        return self.module.state_dict(prefix=prefix)\n"
    )
    main = (
        DDP_HEAD.replace("from torch.nn.parallel import DistributedDataParallel as DDP\n", "")
        + "from model import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'm.pt')\n" + DDP_TAIL
    )
    found = check_in_project(tmp_path / "own", {"train.py": main, "model.py": own}, "train.py")
    assert "DDL106" not in found
    found = check_in_project(
        tmp_path / "torch",
        {"train.py": main, "model.py": own.replace("self.module.", "super().")},
        "train.py",
    )
    assert "DDL106" in found
    evaluated = (
        DDP_HEAD
        + "from engine import evaluate\nval_sampler = DistributedSampler(dataset_val, shuffle=False)\n"
        "stats = evaluate(model, val_sampler)\n" + DDP_TAIL
    )
    engine = "import torch.distributed as dist\nfrom datasets.coco_eval import CocoEvaluator\n"
    merge = (
        "import numpy as np\nimport torch.distributed as dist\ndef merge(img_ids):\n"
        "    dist.all_gather_object(all_ids, img_ids)\n    return np.unique(all_ids, return_index=True)\n"
    )
    files = {
        "main.py": evaluated,
        "engine.py": engine + "def evaluate(model, s):\n    dist.all_reduce(x)\n",
        "datasets/coco_eval.py": merge,
    }
    assert "DDL127" not in check_in_project(tmp_path / "dedup", files, "main.py")
    plain = {
        **files,
        "datasets/coco_eval.py": merge.replace("np.unique(all_ids, return_index=True)", "all_ids"),
    }
    assert "DDL127" in check_in_project(tmp_path / "repeats", plain, "main.py")
    device = DDP_HEAD + "rank = dist.get_rank()\ntorch.cuda.set_device(rank)\n" + DDP_TAIL
    one = {"train.py": device, "README.md": "torchrun --nproc_per_node=4 train.py\n"}
    assert "DDL117" not in check_in_project(tmp_path / "one", one, "train.py")
    two = {**one, "README.md": "torchrun --nnodes=2 --node_rank=$R --nproc_per_node=4 train.py\n"}
    assert "DDL117" in check_in_project(tmp_path / "two", two, "train.py")
    # corpus 37 (seen): `--nnodes=1 --node_rank=0` names this machine alone
    zero = {**one, "run.sh": "torchrun --nnodes=1 --node_rank=0 --nproc_per_node=2 train.py\n"}
    assert "DDL117" not in check_in_project(tmp_path / "zero", zero, "train.py")


def test_a_flag_made_from_a_rank_flag_and_a_branch_after_an_assert_of_one_process():
    """Corpus 17 (seen): AdaBins' `should_write = not args.distributed or args.rank == 0`, then `should_log =
    should_write and logging` guarding wandb.init (DDL128); yolor's `--evolve` branch, which begins with
    `assert opt.local_rank == -1` and then writes its results file (DDL107)."""
    chained = (
        DDP_HEAD + "import wandb\nshould_write = not args.distributed or args.rank == 0\n"
        "should_log = {flag}\nif should_log:\n    wandb.init(project='p')\n" + DDP_TAIL
    )
    assert [
        f.code for f in doctor.check_source(chained.format(flag="should_write and logging"))
    ] == []
    assert [f.code for f in doctor.check_source(chained.format(flag="args.logging"))] == ["DDL128"]
    evolve = DDP_HEAD + "if opt.evolve:\n{check}    torch.save(results, 'evolve.pt')\n" + DDP_TAIL
    asserted = "    assert opt.local_rank == -1, 'DDP mode not implemented for --evolve'\n"
    assert [f.code for f in doctor.check_source(evolve.format(check=asserted))] == []
    assert [f.code for f in doctor.check_source(evolve.format(check=""))] == ["DDL107"]


def test_the_default_gpu_in_a_script_that_never_sets_its_device(tmp_path):
    """DDL150, from corpus 17 (seen): CMGAN's spawned ranks build their models with `.cuda()` and no
    set_device, AudioClassification-Pytorch's `torch.device("cuda")`; not where a project helper the script
    calls sets the device, nor in a trainer module whose caller joins the group, nor where
    CUDA_VISIBLE_DEVICES is "-1" for a CPU run only."""
    script = (
        DDP_HEAD + "from utils import init_dist\n{setup}{hide}device = torch.device('cuda')\n"
        "model = DDP(Net().to(device), device_ids=[local_rank])\n" + DDP_TAIL
    )
    helper = "import torch\ndef init_dist(rank):\n    {body}\n"
    cases = [
        ("", "", "pass", ["DDL150"]),
        ("init_dist(local_rank)\n", "", "torch.cuda.set_device(rank)", []),
        ("", "os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n", "pass", ["DDL150"]),
        ("", "os.environ['CUDA_VISIBLE_DEVICES'] = str(local_rank)\n", "pass", []),
    ]
    for i, (setup, hide, body, expected) in enumerate(cases):
        files = {
            "train.py": script.format(setup=setup, hide=hide),
            "utils.py": helper.format(body=body),
        }
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert [c for c in found if c == "DDL150"] == expected, (setup, hide, body, found)
    trainer = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n" + (
        "def fit(net):\n    model = DDP(net.cuda())\n"
    )
    assert "DDL150" not in [f.code for f in doctor.check_source(trainer)]


def test_a_sampler_built_in_a_helper_that_returns_the_train_and_test_loaders(tmp_path):
    """DDL105, from corpus 17 (seen): CMGAN's `train_ds, test_ds = dataloader.load_data(...)`, whose helper
    builds a shuffling DistributedSampler for each, handed to a Trainer that keeps it as `self.train_ds` and
    loops over it without set_epoch; the good shape calls `self.train_ds.sampler.set_epoch(epoch)`."""
    data = (
        "from torch.utils.data import DataLoader, DistributedSampler\ndef load_data(root, batch_size):\n"
        "    train = DataLoader(ds, sampler=DistributedSampler(ds), batch_size=batch_size)\n"
        "    test = DataLoader(ts, sampler=DistributedSampler(ts), batch_size=batch_size)\n"
        "    return train, test\n"
    )
    main = (
        DDP_HEAD
        + "from data import dataloader\nclass Trainer:\n    def __init__(self, train_ds):\n"
        "        self.train_ds = train_ds\n    def train(self):\n        for epoch in range(9):\n"
        "{epoch}            for batch in self.train_ds:\n                step(batch)\n"
        "train_ds, test_ds = dataloader.load_data(root, 8)\nTrainer(train_ds).train()\n" + DDP_TAIL
    )
    files = {"train.py": main.format(epoch=""), "data/dataloader.py": data, "data/__init__.py": ""}
    assert "DDL105" in check_in_project(tmp_path / "bad", files, "train.py")
    epoch = "            self.train_ds.sampler.set_epoch(epoch)\n"
    files["train.py"] = main.format(epoch=epoch)
    assert "DDL105" not in check_in_project(tmp_path / "good", files, "train.py")


def test_a_sampler_class_bound_to_a_name_in_a_factory_of_another_module(tmp_path):
    """DDL105, corpus 30 (seen): slurm-pytorch-ddp-boilerplate's factories.py binds `sampler =
    DistributedSampler` and builds the train loader with `sampler(datasets.train)`; its trainer.py, which
    neither joins the group nor wraps (main.py does), runs the epochs over it without set_epoch. The good
    shape sets the epoch in the loop; a factory that builds no sampler is no finding."""
    factory = (
        "import torch.distributed as dist\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "def get_training_objects():\n    sampler = None\n    if dist.is_initialized():\n"
        "        sampler = {cls}\n"
        "    train_loader = DataLoader(train_set, shuffle=False,\n"
        "                              sampler=sampler(train_set) if sampler is not None else None)\n"
        "    return Items(train_loader)\n"
    )
    trainer = (
        "from factories import get_training_objects\ndef train(items, epoch):\n"
        "    for x, y in items.train_loader:\n        loss_fn(model(x), y).backward()\n"
        "        optimizer.step()\ndef training_loop():\n"
        "    training_items = get_training_objects()\n    for epoch in range(9):\n"
        "{epoch}        {call}\n"
    )
    epoch = "        training_items.train_loader.sampler.set_epoch(epoch)\n"
    trains = "train(items=training_items, epoch=epoch)"
    # a data module's demo loop that only looks at the batches is no training (OpenSTL's, corpus 27)
    looks = "print(training_items)"
    for cls, line, call, expected in (
        ("DistributedSampler", "", trains, True),
        ("DistributedSampler", epoch, trains, False),
        ("SequentialSampler", "", trains, False),
        ("DistributedSampler", "", looks, False),
    ):
        files = {
            "trainer.py": trainer.format(epoch=line, call=call),
            "factories.py": factory.format(cls=cls),
        }
        found = check_in_project(tmp_path / f"{cls}{bool(line)}{len(call)}", files, "trainer.py")
        assert ("DDL105" in found) is expected, (cls, line, call, found)


def test_an_accelerate_resume_that_trains_the_saved_batches_again():
    """DDL171, corpus 30 (seen): index-tts's GPT trainer and an SD3 trainer save their state every N steps,
    inside the batch loop, and resume with load_state into a loop that starts at the epoch's first batch. Not
    where the loader skips (skip_first_batches, a `continue` below the resumed step), nor where the state is
    saved once an epoch, after the batch loop, nor without a load_state."""
    head = (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "{load}for epoch in range(start_epoch, epochs):\n{skip}    for step, batch in enumerate({loader}):\n"
        "{cont}        accelerator.backward(model(batch).loss)\n        optimizer.step()\n{save}"
    )
    load = "if args.resume:\n    accelerator.load_state(args.resume)\n"
    inside = "        if step % 500 == 0:\n            accelerator.save_state(f'out/ckpt-{step}')\n"
    after = "    accelerator.save_state(f'out/epoch-{epoch}')\n"
    skipped = "    batches = accelerator.skip_first_batches(loader, resume_step) if epoch == start_epoch else loader\n"
    cont = "        if args.resume and step < resume_step:\n            continue\n"
    for (load_, skip, loader, cont_, save), expected in (
        ((load, "", "loader", "", inside), True),
        ((load, "", "loader", cont, inside), False),
        ((load, skipped, "batches", "", inside), False),
        ((load, "", "loader", "", after), False),
        (("", "", "loader", "", inside), False),
    ):
        source = head.format(load=load_, skip=skip, loader=loader, cont=cont_, save=save)
        found = [f.code for f in doctor.check_source(source, "train.py")]
        assert ("DDL171" in found) is expected, (source, found)


def test_samples_drawn_from_one_seed_on_every_rank_then_gathered():
    """DDL172, corpus 30 (seen): CuiJiali-CV's pytorch-ddp seeds every rank with args['seed'], then each rank
    draws `torch.randn` for its share of the FID's samples and gathers them: world-size copies of one rank's.
    Not with the rank in the seed, a generator of its own, the draw under a rank check, no gather, or the draw
    in the training step (DDL152's)."""
    script = (
        DDP_HEAD + "torch.manual_seed({seed})\nmodel = DDP(Net())\n"
        "def fid_samples(net):\n    s = []\n    for _ in range(50):\n{draw}"
        "        s.append(net(z))\n    s = torch.cat(s)\n{gather}    return out\n"
        "for x, y in loader:\n    F.mse_loss(model(x), y).backward()\n    optimizer.step()\n"
        + DDP_TAIL
    )
    draw = "        z = torch.randn(64, 128)\n"
    gather = "    out = [torch.empty_like(s) for _ in range(2)]\n    dist.all_gather(out, s)\n"
    ranked = "        if dist.get_rank() == 0:\n            z = torch.randn(64, 128)\n"
    own = "        z = torch.randn(64, 128, generator=g)\n"
    assert_found(
        "DDL172",
        script,
        ("seed", "draw", "gather"),
        (
            ("0", draw, gather, True),
            ("0 + dist.get_rank()", draw, gather, False),
            ("0", own, gather, False),
            ("0", ranked, gather, False),
            ("0", draw, "    out = s\n", False),
        ),
    )


def test_apex_under_a_flag_that_is_off_by_default_and_that_no_command_passes(tmp_path):
    """DDL102, corpus 30 (seen): howardlau1999's pytorch-ddp-template imports APEX's amp and calls
    amp.initialize only under `if args.fp16:`, a store_true flag that run.sh never passes; judged false there and
    in corpora 12, 18 and 21 in the same shape. Still reported where the flag is on by default, where a script
    of the repository passes it, or where the amp is not under the flag."""
    script = (
        "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--fp16', {declared})\nargs = parser.parse_args()\n"
        "model = Net().cuda()\n{guard}    from apex import amp\n"
        "    model, optimizer = amp.initialize(model, optimizer, opt_level='O1')\n"
    )
    on = "if args.fp16:\n"
    for i, (declared, guard, run, expected) in enumerate(
        (
            ("action='store_true'", on, "python -m torch.distributed.launch ddp.py\n", False),
            ("type=str, default=''", on, "python -m torch.distributed.launch ddp.py\n", False),
            ("action='store_true'", on, "python -m torch.distributed.launch ddp.py --fp16\n", True),
            ("type=bool, default=True", on, "python -m torch.distributed.launch ddp.py\n", True),
            (
                "action='store_true'",
                "if True:\n",
                "python -m torch.distributed.launch ddp.py\n",
                True,
            ),
        )
    ):
        files = {
            "ddp.py": script.format(declared=declared, guard=guard),
            "run.sh": run,
            ".git/HEAD": "ref: refs/heads/main\n",
        }
        found = check_in_project(tmp_path / str(i), files, "ddp.py")
        assert ("DDL102" in found) is expected, (declared, guard, run, found)


def test_a_write_under_a_flag_another_module_declares_off_and_no_script_passes(tmp_path):
    """Any rule, corpus 31 (seen): LESS's evaluation writes `prediction.txt` on every rank only under
    `if args.save_pred:`, a store_true flag its utils/init.py declares and scripts/train.sh never passes
    (judged false twice; the reader tagged the mistake [config]). Reported where a script passes the flag, where
    the code sets it, or where the flag is on by default."""
    train = (
        DDP_HEAD + "from utils.init import get_args\nargs = get_args()\nmodel = DDP(Net())\n"
        "for x, y in loader:\n    F.mse_loss(model(x), y).backward()\n    optimizer.step()\n"
        "{set}if args.save_pred:\n    np.savetxt('prediction.txt', info_list)\n" + DDP_TAIL
    )
    init = (
        "import argparse\ndef get_args():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--save_pred', {declared})\n    return p.parse_args()\n"
    )
    run = "python -m torch.distributed.launch --nproc_per_node 2 scripts/train.py --batch_size 7{extra}\n"
    for i, (declared, extra, set_, expected) in enumerate(
        (
            ("action='store_true'", "", "", False),
            ("action='store_true'", " --save_pred", "", True),
            ("action='store_true'", "", "args.save_pred = True\n", True),
            ("type=bool, default=True", "", "", True),
        )
    ):
        files = {
            ".git/HEAD": "",
            "scripts/train.py": train.format(set=set_),
            "scripts/utils/__init__.py": "",
            "scripts/utils/init.py": init.format(declared=declared),
            "scripts/train.sh": run.format(extra=extra),
        }
        found = check_in_project(tmp_path / str(i), files, "scripts/train.py")
        assert ("DDL107" in found) is expected, (declared, extra, set_, found)


def test_a_training_loop_left_on_a_wall_clock_limit_each_rank_reads_alone():
    """DDL134, corpus 31 (seen): nGPT's `if time.time() - tlaunch > time_limit_seconds: break` in its DDP
    training loop: the ranks cross the limit at different steps, and those still in the loop wait in the next
    all-reduce. Not where the decision is broadcast or all-reduced first, nor a limit on the step count."""
    script = (
        DDP_HEAD + "import time\nmodel = DDP(Net())\ntlaunch = time.time()\n"
        "for x, y in loader:\n    F.mse_loss(model(x), y).backward()\n    optimizer.step()\n"
        "{agree}    if {test}:\n        break\n" + DDP_TAIL
    )
    over = "time.time() - tlaunch > limit"
    agree = (
        "    stop = torch.tensor(float(time.time() - tlaunch > limit))\n"
        "    dist.all_reduce(stop, op=dist.ReduceOp.MAX)\n"
    )
    assert_found(
        "DDL134",
        script,
        ("agree", "test"),
        (
            ("", over, True),
            ("", "time.perf_counter() - t0 > limit", True),
            (agree, "stop.item() > 0", False),
            ("", "step >= max_steps", False),
        ),
    )


def test_node_rank_read_from_the_environment_under_torchrun(tmp_path):
    """DDL173, corpus 31 (seen): gcr_lerobot_2's fsdp_train.py reads `os.environ["NODE_RANK"]`, which torchrun
    (its mpi.sh) never sets: KeyError on every rank. Quiet with a default, where a script exports the variable
    or sets it on the command, and where nothing launches the file with torchrun."""
    script = "import os\nimport torch.distributed as dist\nnode_rank = {read}\ndist.init_process_group('nccl')\n"
    subscript, default = "int(os.environ['NODE_RANK'])", "int(os.environ.get('NODE_RANK', 0))"
    run = "torchrun --nnodes=1 --nproc_per_node=2 train.py\n"
    for i, (read, sh, expected) in enumerate(
        (
            (subscript, run, True),
            (default, run, False),
            (subscript, "export NODE_RANK=0\n" + run, False),
            (subscript, "NODE_RANK=0 " + run, False),
            (subscript, "python train.py\n", False),
        )
    ):
        files = {".git/HEAD": "", "train.py": script.format(read=read), "run.sh": sh}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert ("DDL173" in found) is expected, (read, sh, found)


def test_a_resume_that_restores_the_optimizer_and_builds_the_scheduler_anew(tmp_path):
    """DDL174, corpus 31 (seen): gpt2-fsdp's checkpoint_handler.py restores the optimizer's state on resume
    and train_fsdp.py builds its StepLR anew, so the decay starts over. Quiet where the scheduler's state is
    loaded too, where it is built with last_epoch, stepped to a position it is given, or caught up in a loop of
    its own, and where nothing restores the optimizer (no resume)."""
    train = (
        DDP_HEAD + "from checkpoint_handler import load_checkpoint\nmodel = DDP(Net())\n"
        "optimizer = torch.optim.AdamW(model.parameters())\nstart = load_checkpoint(model, optimizer)\n"
        "scheduler = StepLR(optimizer, step_size=1, gamma=0.1{kw})\n{catch}"
        "for epoch in range(start, 9):\n    for x, y in loader:\n"
        "        F.mse_loss(model(x), y).backward()\n        optimizer.step()\n    scheduler.step({arg})\n"
        + DDP_TAIL
    )
    handler = (
        "import torch\ndef load_checkpoint(model, optimizer):\n    state = torch.load('ckpt.pt')\n"
        "    model.load_state_dict(state['model'])\n    {optimizer}\n{scheduler}    return state['epoch'] + 1\n"
    )
    restores = "optimizer.load_state_dict(state['optimizer'])"
    catch = "for _ in range(start):\n    scheduler.step()\n"
    for i, (kw, catch_, arg, optimizer, scheduler, expected) in enumerate(
        (
            ("", "", "", restores, "", True),
            ("", "", "", restores, "    scheduler_state = state['scheduler']\n", True),
            (", last_epoch=start - 1", "", "", restores, "", False),
            ("", "", "epoch", restores, "", False),
            ("", catch, "", restores, "", False),
            ("", "", "", "pass", "", False),
        )
    ):
        files = {
            ".git/HEAD": "",
            "train.py": train.format(kw=kw, catch=catch_, arg=arg),
            "checkpoint_handler.py": handler.format(optimizer=optimizer, scheduler=scheduler),
        }
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert ("DDL174" in found) is expected, (i, found)
    files["checkpoint_handler.py"] = handler.format(
        optimizer=restores, scheduler="    scheduler.load_state_dict(state['scheduler'])\n"
    )
    files["train.py"] = train.format(kw="", catch="", arg="")
    assert "DDL174" not in check_in_project(tmp_path / "loaded", files, "train.py")


def test_an_optimizer_over_a_module_no_ddp_wraps():
    """DDL175, corpus 31 (seen): bsq-vit wraps its tokenizer in DDP and steps a second optimizer over
    `criterion.discriminator`, which nothing wraps, through `scaler.step(opt_g if i == 0 else opt_d)`. Not a
    module the script wraps, its `.module` or a name bound to it, `self` (a
    LightningModule's configure_optimizers), an optimizer never stepped, nor a script that all-reduces the
    gradients by hand."""
    script = (
        DDP_HEAD + "model = DDP(Tokenizer().cuda())\nmodel_without_ddp = model.module\n"
        "criterion = GANLoss().cuda()\nopt_g = torch.optim.AdamW(model.parameters())\n"
        "opt_d = torch.optim.AdamW({params})\nfor i, x in enumerate(loader):\n"
        "    criterion(model(x), i).backward()\n{sync}    scaler.step(opt_g if i % 2 == 0 else {stepped})\n"
        + DDP_TAIL
    )
    sync = "    for p in criterion.parameters():\n        dist.all_reduce(p.grad)\n"
    assert_found(
        "DDL175",
        script,
        ("params", "sync", "stepped"),
        (
            ("criterion.discriminator.parameters()", "", "opt_d", True),
            ("param_groups(criterion.discriminator, wd=0.05)", "", "opt_d", True),
            ("model_without_ddp.head.parameters()", "", "opt_d", False),
            ("model.module.parameters()", "", "opt_d", False),
            ("criterion.discriminator.parameters()", sync, "opt_d", False),
            ("criterion.discriminator.parameters()", "", "opt_g", False),
        ),
    )


def test_a_resume_that_restores_the_weights_and_the_step_but_no_optimizer(tmp_path):
    """DDL176, corpus 31 (seen): Switti's utils/fsdp.py load_model_state restores the weights and
    `metadata["iter"]`, and nothing in the project restores the AdamW state; MMaDA reads `global_step` from its
    checkpoint folder's name. Quiet where the optimizer's state is loaded too (here or in the helper), where
    accelerate's load_state restores it, where the step is not read back, and with no stateful optimizer."""
    train = (
        DDP_HEAD + "from utils.fsdp import load_model_state\nmodel = DDP(Net())\n"
        "optimizer = torch.optim.{opt}(model.parameters())\nstart_it = load_model_state(args, model)\n"
        "for it in range(start_it, 99):\n    F.mse_loss(model(x), y).backward()\n    optimizer.step()\n"
        + DDP_TAIL
    )
    helper = (
        "import torch\ndef load_model_state(args, model):\n    metadata = torch.load('metadata.pt')\n"
        "    model.load_state_dict(torch.load('model.pt'))\n{extra}    start_iter = {read}\n"
        "    return start_iter\n"
    )
    keyed = "metadata['iter'] + 1"
    restores = "    args.optimizer.load_state_dict(torch.load('optimizer.pt'))\n"
    for i, (opt, extra, read, expected) in enumerate(
        (
            ("AdamW", "", keyed, True),
            ("AdamW", restores, keyed, False),
            ("AdamW", "", "0", False),
            ("ASGD", "", keyed, False),
        )
    ):
        files = {
            ".git/HEAD": "",
            "train.py": train.format(opt=opt),
            "utils/__init__.py": "",
            "utils/fsdp.py": helper.format(extra=extra, read=read),
        }
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert ("DDL176" in found) is expected, (i, found)
    named = (
        ACCELERATE_HEAD + "optimizer = torch.optim.AdamW(model.parameters())\n"
        "model, optimizer = accelerator.prepare(model, optimizer)\nif resume:\n"
        "    global_step = int(os.path.basename(path).split('-')[1])\n"
        "    model.load_state_dict(torch.load(f'{{path}}/model.bin'))\n{load}"
    )
    assert "DDL176" in codes_of(named, load="")
    assert "DDL176" not in codes_of(named, load="    accelerator.load_state(path)\n")


def test_what_corpus_32_said_of_an_unread_local_rank_flag_and_an_fsdp_fallback(tmp_path):
    """DDL101 and DDL103, corpus 32 (seen): pangu-pytorch-demo, KelpChallenge and a MIL trainer parse
    `--local_rank` and never read it (torchrun runs them as they are: judged false three times), while
    a script that reads `args.local_rank` for its device is still reported; visual-recognition-memory's
    DataParallel is the one-process fallback beside its FSDP wrap (judged false), as beside a DDP wrap."""
    script = (
        "import argparse\nimport torch\nimport torch.distributed as dist\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=0)\n"
        "args = parser.parse_args()\ndist.init_process_group('nccl')\n{use}"
    )
    unread = "device = torch.device('cuda', dist.get_rank() % torch.cuda.device_count())\n"
    read = "device = torch.device('cuda', args.local_rank)\n"
    written = "args.local_rank = 0\n" + unread
    for i, (use, other, expected) in enumerate(
        (
            (unread, "", False),
            (read, "", True),
            (written, "", False),
            (unread, "x = args.local_rank\n", True),
        )
    ):
        files = {".git/HEAD": "", "train.py": script.format(use=use), "other.py": other}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert ("DDL101" in found) is expected, (use, other, found)
    fallback = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "if distributed:\n    model = FSDP(net)\nelse:\n    model = torch.nn.DataParallel(net)\n"
    )
    assert "DDL103" not in [f.code for f in doctor.check_source(fallback)]
    alone = "import torch\nmodel = torch.nn.DataParallel(net)\n"
    assert [f.code for f in doctor.check_source(alone)] == ["DDL103"]


def test_one_process_skipping_a_batch_on_its_own_exception_or_its_own_sample():
    """DDL134, corpora 16 and 17 (seen): LatentSync's `try: ...audio features... except Exception: continue`
    before the DDP backward; co-tracker's `batch, gotit = batch` then `if not all(gotit): continue`. Not an
    iterator restarted on StopIteration, nor an exception handled without leaving the pass."""
    loop = (
        DDP_HEAD + "model = DDP(net)\nfor step, batch in enumerate(loader):\n{body}"
        "    loss = model(batch).sum()\n    loss.backward()\n    optimizer.step()\n" + DDP_TAIL
    )
    cases = [
        (
            "    try:\n        feats = encode(batch)\n    except Exception as e:\n        continue\n",
            ["DDL134"],
        ),
        (
            "    try:\n        feats = encode(batch)\n    except StopIteration:\n        continue\n",
            [],
        ),
        (
            "    try:\n        feats = encode(batch)\n    except Exception:\n        feats = None\n",
            [],
        ),
        ("    batch, gotit = batch\n    if not all(gotit):\n        continue\n", ["DDL134"]),
    ]
    for body, expected in cases:
        assert [f.code for f in doctor.check_source(loop.format(body=body))] == expected, body


def test_accumulation_inside_fabric_no_backward_sync_is_not_reported():
    """DDL119, corpus 25 (seen): alphafold3-pytorch's trainer accumulates inside Lightning Fabric's
    `fabric.no_backward_sync(model, enabled=is_accumulating)`, Fabric's no_sync."""
    loop = (
        DDP_HEAD + "model = DDP(net)\nfor step, batch in enumerate(loader):\n"
        "    is_accumulating = (step + 1) % grad_accum_every != 0\n"
        "    {manager}\n        loss = model(batch).sum()\n        loss.backward()\n"
        "    if not is_accumulating:\n        optimizer.step()\n        optimizer.zero_grad()\n"
        + DDP_TAIL
    )
    synced = loop.format(manager="with fabric.no_backward_sync(model, enabled=is_accumulating):")
    plain = loop.format(manager="if True:")
    assert "DDL119" not in [f.code for f in doctor.check_source(synced)]
    assert "DDL119" in [f.code for f in doctor.check_source(plain)]


def test_one_process_recovering_from_its_own_out_of_memory_error():
    """DDL134, corpora 24 and 25 (seen): fairseq's "attempting to recover from OOM" (SpanBERT's and Uni-Core's
    trainers, OpenNMT's "batch removed"): the rank that ran out zeroes its gradients and goes on, having skipped
    the backward the others all-reduce in. Not where the handler raises again, nor where it raises whenever the
    run is distributed."""
    loop = (
        DDP_HEAD + "model = DDP(net)\nfor i, sample in enumerate(samples):\n"
        "    try:\n        loss = model(sample).sum()\n        loss.backward()\n"
        "    except RuntimeError as e:\n        if 'out of memory' in str(e):\n"
        "            print('attempting to recover from OOM')\n{extra}"
        "            optimizer.zero_grad()\n        else:\n            raise e\n"
        "optimizer.step()\n" + DDP_TAIL
    )
    cases = [
        ("", ["DDL134"]),
        ("            if raise_oom:\n                raise e\n", ["DDL134"]),
        ("            if world_size > 1:\n                raise e\n", []),
        ("            raise e\n", []),
    ]
    # the advice logged under the test, then raised whatever the error was
    logged = loop.replace("        else:\n            raise e\n", "        raise\n")
    assert "DDL134" not in [f.code for f in doctor.check_source(logged.format(extra=""))]
    for extra, expected in cases:
        found = [f.code for f in doctor.check_source(loop.format(extra=extra))]
        assert [c for c in found if c == "DDL134"] == expected, (extra, found)


def test_a_collective_a_one_process_run_reaches(tmp_path):
    """DDL151, from corpora 16 and 17 (seen): TransFG's and Oscar's reductions and recognize-anything's
    barrier, with no check, in scripts that join the group only when launched (`if args.local_rank != -1:`,
    or an init helper that returns before joining). Not where every path joins (`if not
    dist.is_initialized():`), nor a function that returns early when not distributed."""
    script = (
        "import torch\nimport torch.distributed as dist\n{join}def reduce_mean(t):\n{early}"
        "    dist.all_reduce(t)\n    return t / dist.get_world_size()\nprint(reduce_mean(loss))\n"
        "dist.destroy_process_group()\n"
    )
    launched = "if args.local_rank != -1:\n    dist.init_process_group('nccl')\n"
    always = "if not dist.is_initialized():\n    dist.init_process_group('nccl')\n"
    early = "    if args.local_rank == -1:\n        return t\n"
    cases = [(launched, "", ["DDL151"]), (always, "", []), (launched, early, [])]
    for join, guard, expected in cases:
        found = [f.code for f in doctor.check_source(script.format(join=join, early=guard))]
        assert [c for c in found if c == "DDL151"] == expected, (join, guard, found)
    helper = (
        "import torch.distributed as dist\ndef init_distributed_mode(args):\n"
        "    if 'RANK' not in os.environ:\n        print('Not using distributed mode')\n        return\n"
        "    dist.init_process_group('nccl')\n"
    )
    main = (
        "import torch.distributed as dist\nfrom utils import init_distributed_mode\n"
        "init_distributed_mode(args)\nfor epoch in range(9):\n    train(epoch)\n    dist.barrier()\n"
    )
    files = {"train.py": main, "utils.py": helper}
    assert "DDL151" in check_in_project(tmp_path, files, "train.py")


def test_a_project_function_that_tests_the_rank_guards_as_the_test_would(tmp_path):
    """Corpus 18 (seen): ANCE's `if is_first_worker():` (`return not dist.is_initialized() or
    dist.get_rank() == 0`) and sssegmentation's `ismainprocess()` around the saves; a helper that returns
    something else guards nothing."""
    main = (
        DDP_HEAD + "from utils import {name}\nmodel = DDP(net)\nif {name}():\n"
        "    torch.save(model.module.state_dict(), 'm.pt')\n" + DDP_TAIL
    )
    helpers = (
        "import os\nimport torch.distributed as dist\n"
        "def is_first_worker():\n    return not dist.is_initialized() or dist.get_rank() == 0\n"
        "def ismainprocess():\n    return str(os.environ['RANK']) in ['0']\n"
        "def should_save():\n    return os.path.exists('flag')\n"
    )
    for name, expected in (
        ("is_first_worker", []),
        ("ismainprocess", []),
        ("should_save", ["DDL107"]),
    ):
        files = {"train.py": main.format(name=name), "utils.py": helpers}
        found = check_in_project(tmp_path / name, files, "train.py")
        assert [c for c in found if c == "DDL107"] == expected, (name, found)


def test_once_a_file_rules_report_the_first_line_in_the_source():
    """DDL150 and DDL151 report one finding a file, at the first line that shows the mistake: the rules visit
    the tree breadth first, so a call nested in a loop would otherwise lose to a later one at module level."""
    collective = (
        "import torch.distributed as dist\nif args.local_rank != -1:\n    dist.init_process_group('nccl')\n"
        "for epoch in range(9):\n    dist.barrier()\ndist.all_reduce(t)\n"
    )
    assert [(f.code, f.line) for f in doctor.check_source(collective)] == [
        ("DDL113", 3),
        ("DDL151", 5),
    ]
    device = DDP_HEAD + "for x in loader:\n    x = x.cuda()\nmodel = DDP(Net().cuda())\n" + DDP_TAIL
    assert [(f.code, f.line) for f in doctor.check_source(device)] == [("DDL150", 8)]


def test_the_else_of_the_branch_that_joins_the_group_runs_as_one_process():
    """Corpus 18 (seen): VL-BERT's `if args.dist:` joins the group and wraps DDP; its `else:` is the run of one
    process (a RandomSampler, a SummaryWriter, the config copied to the output folder). An `else` that joins too
    (`if args.slurm: init_process_group(...) else: init_process_group(...)`) is not."""
    script = (
        "import shutil\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "if args.{flag}:\n    dist.init_process_group('nccl')\n    model = DDP(net)\n"
        "else:\n{other}    model = net\n    shutil.copy(args.cfg, out)\n"
        "    torch.save(model.state_dict(), 'm.pt')\ndist.destroy_process_group()\n"
    )
    for flag, other, expected in (
        ("dist", "", []),
        ("dist", "    dist.init_process_group('gloo')\n", ["DDL107", "DDL107"]),
        ("slurm", "    dist.init_process_group('gloo')\n", ["DDL107", "DDL107"]),
    ):
        found = doctor.check_source(script.format(flag=flag, other=other))
        assert [f.code for f in found if f.code == "DDL107"] == expected, (flag, other, found)


def test_noise_drawn_in_the_training_step_of_a_script_seeded_alike():
    """Corpus 19 (seen), and corpora 10-18's readers (six scripts, five of them diffusion training): the same
    seed on every rank and `torch.randn_like` / `torch.randint` in the step give every rank the same noise and
    timesteps. Not: a seed with the rank; a seed rank 0 alone sets; a seed from hash() of a string (salted per
    process); torch.cuda.manual_seed alone with a draw on the CPU; a draw outside the training step; a draw
    from a generator of its own; an unseeded script."""
    head = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "dist.init_process_group('nccl')\nrank = dist.get_rank()\nmodel = DDP(net)\n{seed}"
        "for x in loader:\n    {draw}\n    loss = model(x + noise).sum()\n    loss.backward()\n"
        "dist.destroy_process_group()\n"
    )
    cases = [
        ("torch.manual_seed(args.seed)\n", "noise = torch.randn_like(x)", ["DDL152"]),
        ("torch.manual_seed(0)\n", "noise = torch.randint(0, 9, (4,))", ["DDL152"]),
        ("torch.manual_seed(args.seed + rank)\n", "noise = torch.randn_like(x)", []),
        ("if rank == 0:\n    torch.manual_seed(0)\n", "noise = torch.randn_like(x)", []),
        (
            "seed = hash(args.name) % 2**32\ntorch.manual_seed(seed)\n",
            "noise = torch.randn_like(x)",
            [],
        ),
        ("torch.cuda.manual_seed(0)\n", "noise = torch.randn(4, 8)", []),
        ("torch.cuda.manual_seed(0)\n", "noise = torch.randn(4, 8, device=x.device)", ["DDL152"]),
        ("torch.manual_seed(0)\n", "noise = torch.randn_like(x, generator=g)", []),
        ("", "noise = torch.randn_like(x)", []),
    ]
    for seed, draw, expected in cases:
        found = doctor.check_source(head.format(seed=seed, draw=draw))
        assert [f.code for f in found if f.code == "DDL152"] == expected, (seed, draw)
    outside = head.format(
        seed="torch.manual_seed(0)\nfixed = torch.randn(4)\n", draw="noise = fixed"
    )
    assert "DDL152" not in [f.code for f in doctor.check_source(outside)]
    # written after corpus 19, a preview rule until corpus 20 measured it (1 of 2)
    assert "DDL152" in doctor.PREVIEW


def test_a_local_rank_argument_the_script_hands_its_own_processes():
    """Corpus 19 (seen): LSGM parses --local_rank and sets it itself for each `Process(target=
    utils.init_processes, ...)` it starts: no launcher passes it, deprecated or not."""
    script = (
        "import argparse\nfrom multiprocessing import Process\nimport utils\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=0)\n"
        "args = parser.parse_args()\ndevice = args.local_rank\n{start}"
    )
    own = (
        "for rank in range(2):\n    args.local_rank = rank\n"
        "    Process(target=utils.init_processes, args=(args,)).start()\n"
    )
    assert "DDL101" not in [f.code for f in doctor.check_source(script.format(start=own))]
    assert "DDL101" in [
        f.code for f in doctor.check_source(script.format(start="utils.init_processes(args)\n"))
    ]


def test_an_attribute_read_where_the_other_branch_reads_it_through_module():
    """Corpus 19 (seen): gns picks `simulator.module.predict(...)` under DDP and `simulator.predict(...)` on the
    CPU, where the simulator is not wrapped; the script chooses, whatever its test reads."""
    script = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "sim = DDP(Simulator())\n{use}"
    )
    chosen = [
        "out = sim.module.predict(x) if isinstance(device_id, int) else sim.predict(x)\n",
        "if device == 'cuda':\n    sim.module.save('m.pt')\nelse:\n    sim.save('m.pt')\n",
    ]
    for use in chosen:
        assert "DDL125" not in [f.code for f in doctor.check_source(script.format(use=use))], use
    plain = "out = sim.predict(x) if isinstance(device_id, int) else None\n"
    assert "DDL125" in [f.code for f in doctor.check_source(script.format(use=plain))]


def test_a_sampler_whose_epoch_a_trainer_module_sets(tmp_path):
    """Corpus 19 (seen): foundation-model-stack's train.py builds the DistributedSampler and hands the loader
    to `trainer.train(...)`, whose epoch loop calls `data.sampler.set_epoch(epoch)`; a trainer that does not
    leaves the finding."""
    main = (
        "from torch.utils.data import DataLoader, DistributedSampler\nfrom fms import trainer\n"
        "sampler = DistributedSampler(ds, shuffle=True)\nloader = DataLoader(ds, sampler=sampler)\n"
        "trainer.train(model, loader, epochs=3)\n"
    )
    for epoch_line, expected in (("        data.sampler.set_epoch(epoch)\n", []), ("", ["DDL105"])):
        helper = (
            (
                "def one_epoch(model, data, epoch):\n" + epoch_line + "        for x in data:\n"
                "            model(x).sum().backward()\n"
                "def train(model, data, epochs):\n    for epoch in range(epochs):\n"
                "        one_epoch(model, data, epoch)\n"
            )
            .replace("        data.sampler", "    data.sampler")
            .replace("        for x", "    for x")
        )
        helper = helper.replace("            model(x)", "        model(x)")
        files = {"train.py": main, "fms/__init__.py": "", "fms/trainer.py": helper}
        found = check_in_project(tmp_path / str(bool(expected)), files, "train.py")
        assert [c for c in found if c == "DDL105"] == expected, (epoch_line, found)


def test_a_repository_that_asserts_its_local_rank_is_the_global_one(tmp_path):
    """Corpora 11, 13 and 19 (seen): Point-BERT's main.py asserts `args.local_rank == dist.get_rank()` and its
    runner saves under `if args.local_rank == 0`: one writer in the job, not one a node."""
    runner = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def run_net(args, net):\n    model = DDP(net)\n    if args.local_rank == 0:\n"
        "        torch.save(model.module.state_dict(), 'ckpt.pth')\n"
    )
    for assertion, expected in (
        ("    assert args.local_rank == torch.distributed.get_rank()\n", []),
        ("", ["DDL107"]),
    ):
        main = (
            "import torch\nfrom tools import run_net\ndef main(args):\n"
            + assertion
            + "    run_net(args, net)\n"
        )
        files = {
            ".git/HEAD": "",
            "main.py": main,
            "tools/__init__.py": "",
            "tools/runner.py": runner,
        }
        found = check_in_project(tmp_path / str(bool(expected)), files, "tools/runner.py")
        assert [c for c in found if c == "DDL107"] == expected, (assertion, found)


def test_a_function_of_a_script_that_nothing_runs_makes_no_mistake(tmp_path):
    """Corpus 20 (seen): sngp-segmentation's `self_training_process` and a distillation script's `main()` are
    defined and never called (its `__main__` calls `main_distill()`): their lines never run. A function the
    script calls, a function called only from one that runs, one another module imports, one a decorator
    registers, and every function of a module that is no script (no `__main__` block) are still checked."""
    script = (
        "import torch\n\ndef old_main():\n    helper()\n\ndef helper():\n"
        "    state = torch.load('ckpt.pt', weights_only=False)\n\ndef main():\n    pass\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    library = script.replace("if __name__ == '__main__':\n    main()\n", "")
    cases = [
        ({}, script, []),  # old_main and helper never run
        ({}, script.replace("def main():\n    pass", "def main():\n    old_main()"), ["DDL109"]),
        ({"eval.py": "from train import helper\nhelper()\n"}, script, ["DDL109"]),
        ({}, script.replace("def helper():", "@register\ndef helper():"), ["DDL109"]),
        ({}, script.replace("if __name__ == '__main__':\n    main()\n", ""), ["DDL109"]),
        # a module the repository's scripts import: what none of them names never runs
        ({"run.py": "from train import main\nmain()\n"}, library, []),
        ({"run.py": "import train as t\nt.old_main()\n"}, library, ["DDL109"]),
        ({"run.py": "from train import *\nmain()\n"}, library, ["DDL109"]),
    ]
    for i, (others, train, expected) in enumerate(cases):
        files = {".git/HEAD": "", "train.py": train, **others}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert found == expected, (i, found)


def test_transformers_trainers_main_process_flags_guard_the_save():
    """Corpus 20 (seen): BabyLM's trainer saves under `if self.args.should_save:` and transformers' Trainer
    under `self.is_world_process_zero()`, both true on the main process only; a flag of one's own named
    `should_save` (every N epochs, every rank) guards nothing."""
    script = (
        DDP_HEAD
        + "model = DDP(net)\n{guard}\n    torch.save(model.module.state_dict(), 'm.pt')\n"
        + DDP_TAIL
    )
    for guard, expected in (
        ("if self.args.should_save:", []),
        ("if trainer.is_world_process_zero():", []),
        ("should_save = epoch % 5 == 0\nif should_save:", ["DDL107"]),
        ("if utils.should_save_checkpoint(step):", ["DDL107"]),  # lerobot's: every N steps
    ):
        found = [f.code for f in doctor.check_source(script.format(guard=guard))]
        assert [c for c in found if c == "DDL107"] == expected, (guard, found)


def test_what_corpus_20_taught_the_rank_checks_and_the_sampler(tmp_path):
    """Corpus 20 (seen), three false findings: sngp-segmentation's `device = rank % torch.cuda.device_count()`
    then `if device == 0:` around a folder it makes (one process a node, not every rank: DDL137 holds that
    safe), and babylm's DistributedSampler in a method of a subclass of transformers' Trainer, whose epoch
    loop sets the sampler's epoch. Each beside the shape that is still the mistake."""
    folder = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "def main():\n    rank = int(os.environ['RANK'])\n    dist.init_process_group('nccl')\n"
        "    {bind}\n    if device == 0:\n        os.mkdir('checkpoints')\n"
        "    dist.destroy_process_group()\n"
    )
    assert (
        doctor.check_source(folder.format(bind="device = rank % torch.cuda.device_count()")) == []
    )
    # a device index from elsewhere picks no process: every rank makes the folder
    found = doctor.check_source(folder.format(bind="device = torch.cuda.current_device()"))
    assert [f.code for f in found] == ["DDL137"], found
    # the local rank is one writer a node: a file saved under it is still once per node (DDL107)
    saved = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def main():\n    rank = int(os.environ['RANK'])\n    dist.init_process_group('nccl')\n"
        "    device = rank % torch.cuda.device_count()\n    model = DDP(net)\n"
        "    if device == 0:\n        torch.save(model.module.state_dict(), 'ckpt.pth')\n"
        "    dist.destroy_process_group()\n"
    )
    assert [f.code for f in doctor.check_source(saved)] == ["DDL107"]
    trainer = (
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "{imports}\nclass CustomTrainer({base}):\n    def _get_train_sampler(self):\n"
        "        return DistributedSampler(self.train_dataset, num_replicas=self.args.world_size,\n"
        "                                  rank=self.args.process_index)\n"
    )
    library = trainer.format(imports="from transformers import Trainer", base="Trainer")
    assert doctor.check_source(library) == []
    # a trainer of the project's own sets no epoch unless it says so
    own = trainer.format(imports="from mytrainers import BaseTrainer", base="BaseTrainer")
    assert [f.code for f in doctor.check_source(own)] == ["DDL105"]


def test_an_amp_import_the_script_never_uses_is_not_deprecated_mixed_precision():
    """Corpus 21 (seen): RocWeather's `import torch.cuda.amp as amp` and VITS-accelerate's `from torch.cuda.amp
    import autocast, GradScaler`, never used (fp32, or Accelerate's own autocast). An import that is used is
    reported once, at the import, not again at each use."""
    cases = {  # source: the DDL102 lines
        "import torch.cuda.amp as amp\nx = 1\n": [],
        "from torch.cuda.amp import autocast, GradScaler\nx = 1\n": [],
        "from torch.cuda import amp, Stream\ns = Stream()\n": [],
        "import torch.cuda.amp as amp\nscaler = amp.GradScaler()\nwith amp.autocast():\n    pass\n": [
            1
        ],
        "from torch.cuda.amp import autocast, GradScaler\nscaler = GradScaler()\n": [1],
        "from torch.cuda import amp\nwith amp.autocast():\n    pass\n": [1],
        "import torch\nwith torch.cuda.amp.autocast():\n    pass\n": [2],
        "import torch.cuda.amp\nx = 1\n": [1],
    }
    for source, lines in cases.items():
        found = [f.line for f in doctor.check_source(source) if f.code == "DDL102"]
        assert found == lines, source


def test_a_block_a_constant_test_switches_off_is_not_run():
    """Corpus 21 (seen): srgan_cosmo2d's `if 0:` around a `torch.load` of the best checkpoint on every rank.
    Python compiles such a block away; the same load under a real test is reported."""
    load = "model.load_state_dict(torch.load('best.pth'))"
    script = (
        DDP_HEAD
        + "model = DDP(net)\nif rank == 0:\n    torch.save(model.module.state_dict(), 'best.pth')\n"
        "if {test}:\n    {body}\n{other}" + DDP_TAIL
    )
    for test, body, other, expected in (
        ("0", load, "", []),
        ("False", load, "", []),
        ("True", "pass", f"else:\n    {load}\n", []),
        ("args.resume", load, "", ["DDL122", "DDL132"]),
        ("True", load, "", ["DDL122", "DDL132"]),
    ):
        source = script.format(test=test, body=body, other=other)
        found = [f.code for f in doctor.check_source(source)]
        assert sorted(c for c in found if c in ("DDL122", "DDL132")) == expected, (test, found)


def test_a_padded_eval_sampler_given_its_set_by_keyword():
    """Corpus 21 (seen): RocWeather's `test_sampler = DistributedSampler(dataset=testset, shuffle=False)`, its
    validation means reduced over the ranks: the set named by keyword, not by position, is the same padded
    evaluation; with drop_last=True it is not."""
    script = (
        DDP_HEAD + "test_sampler = DistributedSampler(dataset=testset, shuffle=False{drop})\n"
        "loader = DataLoader(testset, sampler=test_sampler)\n"
        "def validate(model):\n    val_loss = sum(model(x).mean() for x in loader)\n"
        "    dist.reduce(val_loss, 0, op=dist.ReduceOp.AVG)\n    return val_loss\n" + DDP_TAIL
    )
    assert "DDL127" in [f.code for f in doctor.check_source(script.format(drop=""))]
    found = [f.code for f in doctor.check_source(script.format(drop=", drop_last=True"))]
    assert "DDL127" not in found, found


def test_seeds_alike_where_the_dataset_module_draws_its_augmentations(tmp_path):
    """Corpus 21 (seen): RocWeather seeds every rank with args.seed and its dataset module crops with
    `from random import randrange` in a method `__getitem__` calls; LUNA25 flips with `torch.rand` in a
    function named for the flip. A seed with the rank, a dataset that only shuffles its file list in
    `__init__`, and a dataset's `torch.randn` feature placeholder are not reported."""
    main = (
        "import torch\nimport torch.distributed as dist\nfrom data import TrainData\n"
        "dist.init_process_group('nccl')\ntorch.manual_seed({seed})\n"
        "sampler = torch.utils.data.DistributedSampler(TrainData())\n"
        "dist.destroy_process_group()\n"
    )
    crops = (
        "from random import randrange\nclass TrainData:\n    def get_images(self, i):\n"
        "        x = randrange(0, 10)\n        return x\n"
        "    def __getitem__(self, i):\n        return self.get_images(i)\n"
    )
    flips = (
        "import torch\ndef rot_flip(x):\n    dims = torch.where(torch.rand(2) < 0.5)[0].tolist()\n"
        "    return x.flip(dims)\nclass TrainData:\n    def __getitem__(self, i):\n        return i\n"
    )
    listed = (
        "import random\nimport torch\nclass TrainData:\n    def __init__(self):\n"
        "        self.files = list(range(9))\n        random.shuffle(self.files)\n"
        "    def features(self, n):\n        return torch.randn(1024, n)\n"
        "    def __getitem__(self, i):\n        return self.files[i]\n"
    )
    cases = (
        (crops, "args.seed", ["DDL142"]),
        (flips, "args.seed", ["DDL142"]),
        (crops, "args.seed + dist.get_rank()", []),
        (listed, "args.seed", []),
    )
    for i, (data, seed, expected) in enumerate(cases):
        files = {"train.py": main.format(seed=seed), "data.py": data}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert [c for c in found if c == "DDL142"] == expected, (i, found)


def test_fsdp_needs_its_own_scaler_and_its_own_state_dict(tmp_path):
    """Corpus 21 (seen), four misses: chinese_pretrain's `torch.amp.GradScaler` beside an FSDP1 wrap made in the
    env.py it imports, simsiam's MAE-style NativeScaler (a project class that makes a GradScaler), and the
    leukemia script's and simsiam's `model.module.state_dict()` of an FSDP1 model. ShardedGradScaler, FSDP2's
    fully_shard, FSDP's own state_dict() and a DDP model's `.module` are not reported; DDL106 no longer asks
    an FSDP model for `.module`."""
    fsdp = "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    cases = {  # source: the codes of the two rules (and DDL106) found
        fsdp + "model = FSDP(net)\nscaler = torch.cuda.amp.GradScaler()\n": ["DDL153"],
        fsdp + "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
        "model = FSDP(net)\nscaler = ShardedGradScaler()\n": [],
        "import torch\nfrom torch.distributed.fsdp import fully_shard\nfully_shard(net)\n"
        "scaler = torch.amp.GradScaler('cuda')\n": [],
        fsdp + "model = FSDP(net)\nmodel_without_ddp = model.module\n"
        "torch.save(model_without_ddp.state_dict(), 'm.pt')\n": ["DDL154"],
        fsdp + "model = FSDP(net)\ntorch.save({'model': model.module.state_dict()}, 'm.pt')\n": [
            "DDL154"
        ],
        fsdp + "model = FSDP(net)\nif rank == 0:\n    torch.save(model.state_dict(), 'm.pt')\n": [],
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(net)\n"
        "state = model.module.state_dict()\nscaler = torch.amp.GradScaler('cuda')\n": [],
        # the script picks its scaler by whether FSDP is on (llama-recipes), or asserts it is off (open_lm)
        fsdp + "model = FSDP(net) if args.fsdp else net\nif args.fp16 and not args.fsdp:\n"
        "    scaler = torch.amp.GradScaler('cuda')\n": [],
        fsdp + "model = FSDP(net)\nif args.precision == 'amp':\n    assert not args.fsdp\n"
        "    scaler = torch.amp.GradScaler('cuda')\n": [],
    }
    for source, expected in cases.items():
        found = [
            f.code for f in doctor.check_source(source) if f.code in ("DDL106", "DDL153", "DDL154")
        ]
        assert found == expected, (source, found)
    # the wrap in a module the script imports; the scaler made by a project class
    env = fsdp + "def setup(model):\n    return FSDP(model)\n"
    main = (
        "import torch\nimport torch.distributed as dist\nfrom env import setup\nfrom misc import Scaler\n"
        "dist.init_process_group('nccl')\nmodel = setup(net)\nscaler = {scaler}\n"
        "dist.destroy_process_group()\n"
    )
    helper = (
        "import torch\nfrom torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
        "class Scaler:\n    def __init__(self):\n        self.s = torch.amp.GradScaler()\n"
        "def make_scaler(fsdp):\n    return ShardedGradScaler() if fsdp else torch.amp.GradScaler()\n"
    )
    main = main.replace("from misc import Scaler", "from misc import Scaler, make_scaler")
    for i, (scaler, expected) in enumerate(
        (
            ("torch.amp.GradScaler('cuda')", ["DDL153"]),
            ("Scaler()", ["DDL153"]),
            ("make_scaler(True)", []),
            ("None", []),
        )
    ):
        files = {"train.py": main.format(scaler=scaler), "env.py": env, "misc.py": helper}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert [c for c in found if c == "DDL153"] == expected, (scaler, found)
    assert {"DDL153", "DDL154"} <= doctor.PREVIEW


def test_a_sharded_state_dict_gathered_on_rank_0_alone():
    """Step 4 -> 7's first pitfall, as a rule: FSDP1's `model.state_dict()` (a full state dict by default),
    its full_optim_state_dict, and torch.distributed.checkpoint's get_model_state_dict gather the shards, a
    collective: under `if rank == 0:` the other ranks never join it. Taken on every rank and saved on rank 0,
    or a DDP model's state dict under the check, it is not reported."""
    fsdp = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"
        "dist.init_process_group('nccl')\nmodel = FSDP(net)\n"
    )
    cases = {
        "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'm.pt')\n": ["DDL108"],
        "if dist.get_rank() == 0:\n    torch.save(get_model_state_dict(model), 'm.pt')\n": [
            "DDL108"
        ],
        "if dist.get_rank() == 0:\n    state = FSDP.full_optim_state_dict(model, optimizer)\n": [
            "DDL108"
        ],
        "state = get_model_state_dict(model)\nif dist.get_rank() == 0:\n    torch.save(state, 'm.pt')\n": [],
        "state = model.state_dict()\nif dist.get_rank() == 0:\n    torch.save(state, 'm.pt')\n": [],
        # open_lm: the DDP run's state dict, in the branch of a test on FSDP that runs without it
        "if dist.get_rank() == 0:\n    state = cpu_state if args.fsdp else model.state_dict()\n": [],
    }
    for body, expected in cases.items():
        found = [
            f.code for f in doctor.check_source(fsdp + body + "dist.destroy_process_group()\n")
        ]
        assert [c for c in found if c == "DDL108"] == expected, (body, found)
    ddp = fsdp.replace("FullyShardedDataParallel as FSDP", "FullyShardedDataParallel").replace(
        "model = FSDP(net)", "model = torch.nn.parallel.DistributedDataParallel(net)"
    )
    body = "if dist.get_rank() == 0:\n    torch.save(model.module.state_dict(), 'm.pt')\n"
    assert "DDL108" not in [f.code for f in doctor.check_source(ddp + body)]
    # Lumina: rank 0 reads the plain model's state dict before a helper wraps it (the name is FSDP's only in
    # another function)
    lumina = fsdp.replace(
        "model = FSDP(net)\n", "def setup(model):\n    model = FSDP(model)\n    return model\n"
    )
    body = "def main():\n    model = build()\n    if dist.get_rank() == 0:\n        keys = model.state_dict()\n"
    assert "DDL108" not in [f.code for f in doctor.check_source(lumina + body)]


def test_a_script_that_joins_through_a_class_of_its_project_is_distributed(tmp_path):
    """Corpus 22 (seen): CCNet's train.py makes `engine = Engine(custom_parser=parser)`, whose constructor in
    engine.py calls init_process_group; every rank then makes the snapshot folder without exist_ok. A class
    whose constructor joins no group leaves the script one process."""
    main = (
        "import os\nfrom engine import Engine\nengine = Engine()\n"
        "if not os.path.exists('snapshots'):\n    os.makedirs('snapshots')\n"
    )
    for joins, expected in ((True, ["DDL137"]), (False, [])):
        call = "dist.init_process_group('nccl')" if joins else "self.rank = 0"
        engine = (
            "import torch.distributed as dist\nclass Engine:\n    def __init__(self):\n"
            f"        {call}\n"
        )
        files = {"train.py": main, "engine.py": engine}
        found = check_in_project(tmp_path / str(joins), files, "train.py")
        assert [c for c in found if c == "DDL137"] == expected, (joins, found)


def test_what_corpus_22_said_of_the_local_rank_flag_and_the_one_process_run(tmp_path):
    """Corpus 22 (seen), three false findings of default rules: RoboFlamingo's `--local-rank` whose value the
    script binds again from the environment (`args.local_rank, args.rank, args.world_size =
    world_info_from_env()`), LISA's `--local_rank` that the DeepSpeed launcher its README runs passes, and
    PCL's all-reduce in a script that raises wherever it does not wrap in DDP. Each beside the shape that is
    still the mistake."""
    flag = (
        "import argparse\nimport torch.distributed as dist\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local-rank', default=0, type=int)\nargs = parser.parse_args()\n{bind}"
        "device = args.local_rank\n"
        "dist.init_process_group('nccl')\ndist.destroy_process_group()\n"
    )
    bound = "args.local_rank, args.rank, args.world_size = world_info_from_env()\n"
    assert "DDL101" not in [f.code for f in doctor.check_source(flag.format(bind=bound))]
    assert "DDL101" in [f.code for f in doctor.check_source(flag.format(bind=""))]
    for launcher, expected in (("deepspeed --master_port=24999", []), ("python", ["DDL101"])):
        files = {
            ".git/HEAD": "",
            "README.md": f"```\n{launcher} train_ds.py --epochs 10\n```\n",
            "train_ds.py": flag.format(bind=""),
        }
        found = check_in_project(tmp_path / launcher.split()[0], files, "train_ds.py")
        assert [c for c in found if c == "DDL101"] == expected, (launcher, found)
    refuses = (
        "import torch\nimport torch.distributed as dist\n"
        "if args.distributed:\n    dist.init_process_group('nccl')\n"
        "    model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "elif args.gpu is not None:\n    model = model.cuda(args.gpu)\n{gpu}"
        "else:\n    raise NotImplementedError('Only DistributedDataParallel is supported.')\n"
        "dist.all_reduce(features)\n"
    )
    raised = "    raise NotImplementedError('Only DistributedDataParallel is supported.')\n"
    for gpu, expected in ((raised, []), ("", ["DDL151"])):  # the one-GPU branch runs on, or raises
        found = doctor.check_source(refuses.format(gpu=gpu))
        assert [f.code for f in found if f.code == "DDL151"] == expected, gpu


def test_a_folder_set_to_none_on_the_other_ranks_guards_its_writes():
    """Corpus 22 (seen): SE(3) diffusion sets `self.ckpt_dir = None` under `if rank not in [0, -1]:` and saves
    under `if self.ckpt_dir is not None:`: rank 0 alone writes. Set to None on every rank, it guards nothing."""
    script = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "class Experiment:\n    def __init__(self, ckpt_dir):\n        self.ckpt_dir = ckpt_dir\n"
        "        dist.init_process_group('nccl')\n        self.model = DDP(net)\n"
        "        {test}\n            self.ckpt_dir = None\n"
        "    def train(self):\n        if self.ckpt_dir is not None:\n"
        "            torch.save(self.model.module.state_dict(), self.ckpt_dir + '/step.pth')\n"
        "        dist.destroy_process_group()\n"
    )
    ranked = script.format(test="if dist.get_rank() not in [0, -1]:")
    assert "DDL107" not in [f.code for f in doctor.check_source(ranked)]
    everyone = script.format(test="if not ckpt_dir:")
    assert "DDL107" in [f.code for f in doctor.check_source(everyone)]


def test_what_corpora_21_and_22_taught_about_seeds_after_they_were_measured(tmp_path):
    """Corpora 21 and 22 (seen): CurricularFace seeds alike in `main_worker`, the function mp.spawn starts on
    every rank (a "worker" in its name is not a DataLoader worker's); retinaface_pytorch's `setup_seed` runs
    only in the `__main__` block before mp.spawn (the spawned ranks are not seeded: DDL149's, not DDL142's);
    SDFA-Net's random flips are in a dataset its `datasets` package's __init__ imports."""
    spawned = (
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "from torchvision import transforms\n"
        "def setup_seed(seed):\n    torch.manual_seed(seed)\n"
        "def {name}(gpu, args):\n{seed_here}"
        "    dist.init_process_group('nccl', rank=gpu, world_size=2)\n"
        "    flip = transforms.RandomHorizontalFlip()\n    dist.destroy_process_group()\n"
        "if __name__ == '__main__':\n{seed_there}    if args.distributed:\n"
        "        mp.spawn({name}, nprocs=2, args=(args,))\n    else:\n        {name}(0, args)\n"
    )
    cases = {  # (the spawned function, its seeding, the launcher's): DDL142 found
        ("main_worker", "    torch.manual_seed(args.seed)\n", ""): True,
        ("main_worker", "    setup_seed(args.seed)\n", ""): True,
        ("main_worker", "    setup_seed(args.seed + args.rank)\n", ""): False,
        ("main_worker", "", "    setup_seed(args.seed)\n"): False,
        (
            "seed_worker",
            "    torch.manual_seed(args.seed)\n",
            "",
        ): True,  # spawned: a rank, not a worker
    }
    for (name, here, there), expected in cases.items():
        source = spawned.format(name=name, seed_here=here, seed_there=there)
        found = [f.code for f in doctor.check_source(source) if f.code == "DDL142"]
        assert found == ["DDL142"] * expected, (name, here, there)
    # a DataLoader worker's own seeding is each worker's: not alike
    worker = (
        DDP_HEAD + "from torchvision import transforms\nflip = transforms.RandomHorizontalFlip()\n"
        "def seed_worker(worker_id):\n    torch.manual_seed(worker_id)\n"
        "loader = DataLoader(ds, worker_init_fn=seed_worker)\n" + DDP_TAIL
    )
    assert [f.code for f in doctor.check_source(worker) if f.code == "DDL142"] == []
    script = (
        DDP_HEAD + "from datasets import get_dataset\ntorch.manual_seed(args.seed)\n"
        "loader = DataLoader(get_dataset(), sampler=DistributedSampler(get_dataset()))\n" + DDP_TAIL
    )
    kitti = "import random\nclass Kitti:\n    def __getitem__(self, i):\n        return {draw}\n"
    for draw, expected in (("random.uniform(0, 1) > 0.5", True), ("self.items[i]", False)):
        files = {
            "LICENSE": "",
            "train.py": script,
            "datasets/__init__.py": "from .build import get_dataset\nfrom .kitti import Kitti\n",
            "datasets/build.py": "def get_dataset():\n    return None\n",
            "datasets/kitti.py": kitti.format(draw=draw),
        }
        found = check_in_project(tmp_path / draw[:6], files, "train.py")
        assert ("DDL142" in found) is expected, (draw, found)


def test_noise_drawn_in_the_projects_loss_method_is_the_training_steps(tmp_path):
    """Corpus 22 (seen): a diffusion policy's training step is `loss = self.model.compute_loss(batch)` (or
    `loss = rdt(...)`, whose forward returns it), and the Gaussian noise is drawn there, in a module the script
    imports: with every rank seeded alike, every rank draws the same noise. Not a randint alone (indices into
    each rank's own batch), not a seed with the rank, not an EMA's step."""
    script = (
        ACCELERATE_HEAD + "from accelerate.utils import set_seed\nfrom policy import Policy\n"
        "set_seed({seed})\nmodel = Policy()\nema_model = Policy()\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for batch in loader:\n    loss = {step}\n    accelerator.backward(loss)\n"
        "    optimizer.step()\n    ema_model.step(model)\n"
    )
    policy = (
        "import torch as th\nclass Policy(th.nn.Module):\n    def compute_loss(self, batch):\n"
        "        noise = {draw}\n        return ((batch - noise) ** 2).mean()\n"
        "    def forward(self, batch):\n        return self.compute_loss(batch)\n"
    )
    gauss, index = "th.randn_like(batch)", "th.randint(0, 10, (4,))"
    cases = {  # (seed, step, draw): where DDL152 is found (the script's line)
        ("42", "model.compute_loss(batch)", gauss): [12],
        ("42", "model(batch)", gauss): [12],
        ("42", "model.compute_loss(batch)", index): [],
        ("42", "model(batch)", index): [],
        ("42, device_specific=True", "model.compute_loss(batch)", gauss): [],
        ("42 + accelerator.process_index", "model(batch)", gauss): [],
    }
    for i, ((seed, step, draw), expected) in enumerate(cases.items()):
        files = {
            "LICENSE": "",
            "train.py": script.format(seed=seed, step=step),
            "policy.py": policy.format(draw=draw),
        }
        found = check_in_project(tmp_path / f"p{i}", files, "train.py", where=True)
        assert sorted(line for line, code in found if code == "DDL152") == expected, (
            seed,
            step,
            draw,
        )


def test_a_tracker_started_on_every_accelerate_process():
    """Corpus 21 (seen): audio_flow's `wandb.init(...)` under `if wandb_log:` in an Accelerate script: every
    process starts its own run. Accelerate's own trackers (init_trackers) and a main-process guard are one."""
    script = ACCELERATE_HEAD + "import wandb\nmodel = accelerator.prepare(model)\n{start}"
    cases = {
        "if wandb_log:\n    wandb.init(project='p')\n": ["DDL128"],
        "if wandb_log and accelerator.is_main_process:\n    wandb.init(project='p')\n": [],
        "accelerator.init_trackers('p')\n": [],
    }
    for start, expected in cases.items():
        found = [f.code for f in doctor.check_source(script.format(start=start))]
        assert found == expected, (start, found)


def test_a_prepared_scheduler_sized_in_optimizer_steps():
    """DDL155 (corpora 22 and 23's Hallo and Text-To-Video-Finetuning, from diffusers' older scripts): the
    scheduler given to accelerator.prepare steps once per process at each optimizer step, so a total counted in
    optimizer steps (`max_train_steps * gradient_accumulation_steps`) ends 1/N of the way through. Not when the
    count is scaled by the process count or made from a loader's length, not a constant schedule, not with
    split_batches or step_scheduler_with_optimizer=False, not a scheduler kept out of prepare."""
    script = (
        "import torch\nfrom accelerate import Accelerator\nfrom diffusers.optimization import get_scheduler\n"
        "def main(cfg, lr_scheduler='cosine'):\n    accelerator = Accelerator({options})\n"
        "    total = {total}\n"
        "    lr_scheduler = get_scheduler({name}, optimizer=optimizer, num_warmup_steps=10,\n"
        "        num_training_steps=total)\n"
        "    {prepared} = accelerator.prepare(model, optimizer, loader{scheduler})\n"
    )
    bad = {
        "options": "gradient_accumulation_steps=cfg.gas",
        "total": "cfg.max_train_steps * cfg.gas",
        "name": "cfg.lr_scheduler",
        "prepared": "model, optimizer, loader, lr_scheduler",
        "scheduler": ", lr_scheduler",
    }
    cases = [
        ({}, ["DDL155"]),
        ({"name": "lr_scheduler"}, ["DDL155"]),  # the parameter's default, cosine, decays
        ({"total": "cfg.max_train_steps * accelerator.num_processes"}, []),
        ({"total": "cfg.epochs * len(loader) // cfg.gas"}, []),
        # minLLMTrain (corpus 33): divided by the process count, the schedule ends after 1/N of the run
        ({"total": "cfg.epochs * len(loader) // cfg.gas // accelerator.num_processes"}, ["DDL155"]),
        ({"name": "'constant'"}, []),
        ({"options": "split_batches=True"}, []),
        ({"options": "step_scheduler_with_optimizer=False"}, []),
        ({"prepared": "model, optimizer, loader", "scheduler": ""}, []),
    ]
    for change, expected in cases:
        source = script.format(**{**bad, **change})
        found = [f.code for f in doctor.check_source(source) if f.code == "DDL155"]
        assert found == expected, (change, found)
    # Tune-A-Video's `lr_scheduler: str = "constant"`: constant as the script runs by default
    source = script.format(**{**bad, "name": "lr_scheduler"}).replace("'cosine'", "'constant'")
    assert [f.code for f in doctor.check_source(source) if f.code == "DDL155"] == []


def test_a_prepared_scheduler_whose_configs_keep_it_constant(tmp_path):
    """Hallo's and Moore-AnimateAnyone's `get_scheduler(cfg.solver.lr_scheduler, ...)` (corpora 13 and 22): every
    YAML config of the repository sets `lr_scheduler: "constant"`, so stepping it faster changes nothing; a
    config that decays makes it DDL155."""
    script = (
        "from accelerate import Accelerator\nfrom diffusers.optimization import get_scheduler\n"
        "accelerator = Accelerator()\nlr_scheduler = get_scheduler(cfg.solver.lr_scheduler, optimizer,\n"
        "    num_warmup_steps=1, num_training_steps=cfg.solver.max_train_steps)\n"
        "model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)\n"
    )
    for second, expected in (('"constant"', []), ("cosine", ["DDL155"])):
        files = {
            "README.md": "",
            "train.py": script,
            "configs/stage1.yaml": 'solver:\n  lr_scheduler: "constant"\n',
            "configs/stage2.yaml": f"solver:\n  lr_scheduler: {second}\n",
        }
        found = check_in_project(tmp_path / second.strip('"'), files, "train.py")
        assert [c for c in found if c == "DDL155"] == expected, (second, found)


def test_what_corpus_23_said_of_the_local_rank_flag(tmp_path):
    """Corpus 23 (seen), the default rules' three false findings, all DDL101's: ChatGLM-Finetuning's README runs
    `CUDA_VISIBLE_DEVICES=0,1 deepspeed ... train.py`, openchat's `deepspeed --module
    ochat.training_deepspeed.train` (DeepSpeed's launcher passes --local_rank either way); ml-mdm's
    `--local-rank`, declared in config.py, is a leftover where the script reads LOCAL_RANK through a helper of
    its own. Each beside the shape that is still the mistake."""
    flag = (
        "import argparse\nimport torch.distributed as dist\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--local_rank', default=0, type=int)\nargs = parser.parse_args()\n"
        "device = args.local_rank\ndist.init_process_group('nccl')\ndist.destroy_process_group()\n"
    )
    commands = {
        "CUDA_VISIBLE_DEVICES=0,1 deepspeed --master_port 520 pkg/train.py": [],
        "deepspeed --num_gpus=8 --module pkg.train --epochs 5": [],
        "deepspeed --num_gpus=8 --module other.train --epochs 5": ["DDL101"],  # another file
        "CUDA_VISIBLE_DEVICES=0,1 python -m torch.distributed.launch pkg/train.py": ["DDL101"],
    }
    for i, (command, expected) in enumerate(commands.items()):
        files = {".git/HEAD": "", "README.md": f"```\n{command}\n```\n", "pkg/train.py": flag}
        found = check_in_project(tmp_path / f"c{i}", files, "pkg/train.py")
        assert [c for c in found if c == "DDL101"] == expected, (command, found)
    script = (
        "import torch.distributed as dist\nfrom config import get_arguments\n{helper}"
        "args = get_arguments()\n{call}device = args.local_rank\ndist.init_process_group('nccl')\n"
        "dist.destroy_process_group()\n"
    )
    config = (
        "import argparse\ndef get_arguments():\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--local-rank', type=int, default=0, help='for debugging')\n"
        "    return parser.parse_args()\n"
    )
    dist_helper = (
        "import os\ndef get_local_rank():\n    return int(os.environ.get('LOCAL_RANK', '0'))\n"
    )
    cases = {
        ("from distributed import get_local_rank\n", "local_rank = get_local_rank()\n"): [],
        ("", ""): ["DDL101"],
    }
    for i, ((helper, call), expected) in enumerate(cases.items()):
        files = {
            ".git/HEAD": "",  # the repository, whose train.py reads the flag config.py parses
            "train.py": script.format(helper=helper, call=call),
            "config.py": config,
            "distributed.py": dist_helper,
        }
        found = check_in_project(tmp_path / f"h{i}", files, "train.py")
        assert [c for c in found if c == "DDL101"] == expected, (helper, found)


def test_find_unused_parameters_beside_a_static_graph():
    """Corpus 23 (seen): SEDD's `DDP(model, find_unused_parameters=True, static_graph=True)`: a static graph
    finds the unused parameters once, in the first iteration, so the flag costs no walk of the graph a step."""
    wrap = (
        DDP_HEAD
        + "model = DDP(net, device_ids=[0], find_unused_parameters=True{more})\n{after}"
        + DDP_TAIL
    )
    cases = {
        ("", ""): ["DDL112"],
        (", static_graph=True", ""): [],
        ("", "model._set_static_graph()\n"): [],
    }
    for (more, after), expected in cases.items():
        found = [f.code for f in doctor.check_source(wrap.format(more=more, after=after))]
        assert found == expected, (more, after, found)


def test_what_dragon_said_of_a_local_rank_that_is_the_global_one():
    """Corpus 23 (seen): DRAGON counts its local rank against the whole job's ranks (`for p_rank in
    range(args.world_size): if args.local_rank != p_rank: barrier()`), so it runs on one node and its `local_rank
    in [-1, 0]` guard is rank 0's; its evaluation asserts `args.world_size == 1` before it runs, so what only the
    evaluation and the guarded training call write is written once. Each beside the shape still reported."""
    script = (
        DDP_HEAD + "import json\ndef evaluate_split(path):\n    json.dump({{}}, open(path, 'w'))\n"
        "def train(args):\n{turns}    if args.local_rank in [-1, 0]:\n"
        "        torch.save(model.state_dict(), 'model.pt')\n        evaluate_split('dev.json')\n"
        "def evaluate(args):\n    evaluate_split('test.json')\n"
        "if args.mode == 'train':\n    train(args)\nelse:\n{check}    evaluate(args)\n" + DDP_TAIL
    )
    turns = (  # one rank at a time builds the data: every rank meets world_size barriers
        "    for p_rank in range(args.world_size):\n        if args.local_rank != p_rank:\n"
        "            dist.barrier()\n        build_cache()\n        if args.local_rank == p_rank:\n"
        "            dist.barrier()\n"
    )
    cases = {
        (turns, "    assert args.world_size == 1\n"): [],
        ("", "    assert args.world_size == 1\n"): ["DDL107", "DDL107"],  # one writer a node
        (turns, ""): ["DDL107"],  # evaluate() on every rank
    }
    for (turn, check), expected in cases.items():
        found = [f.code for f in doctor.check_source(script.format(turns=turn, check=check))]
        assert found == expected, (turn, check, found)


def test_a_function_that_sets_its_rank_to_minus_one_runs_as_one_process():
    """Corpus 23 (seen): TAPE's run_eval and run_embed begin with `local_rank = -1  # TAPE does not support
    torch.distributed.launch for evaluation`, so their loaders, writes and samplers are a one-process run's."""
    script = (
        DDP_HEAD + "import json\ndef run_eval(args):\n{bind}"
        "    sampler = DistributedSampler(valid_set, shuffle=False)\n"
        "    loader = DataLoader(valid_set, sampler=sampler)\n    correct = evaluate(model, loader)\n"
        "    dist.all_reduce(correct)\n    json.dump({{'acc': correct.item()}}, open('results.json', 'w'))\n"
        + DDP_TAIL
    )
    found = [f.code for f in doctor.check_source(script.format(bind=""))]
    assert found == ["DDL127", "DDL107"], found
    assert doctor.check_source(script.format(bind="    local_rank = -1\n")) == []


def test_what_corpus_23_said_of_tests_that_every_rank_answers_alike():
    """Corpus 23 (seen): multiple physics pretraining sets `params['log_to_wandb'] = (global_rank == 0) and
    params['log_to_wandb']` and starts wandb under `if self.params.log_to_wandb:` (rank 0's); ml-mdm returns
    early `if not "MASTER_ADDR" in os.environ or world_size == 1:` and Satlas reduces `if is_distributed:`
    (`rank is not None`): the launcher's address and "distributed or not" are the same on every rank, so what
    follows is no collective some ranks skip. Each beside the shape still reported."""
    keyed = (
        DDP_HEAD + "import wandb\nparams['log_to_wandb'] = {flag}\n"
        "class Trainer:\n    def train(self):\n        if self.params.log_to_wandb:\n"
        "            wandb.init(project='p')\nTrainer().train()\n" + DDP_TAIL
    )
    cases = {"(dist.get_rank() == 0) and params['log_to_wandb']": [], "args.wandb": ["DDL128"]}
    for flag, expected in cases.items():
        found = [f.code for f in doctor.check_source(keyed.format(flag=flag))]
        assert found == expected, (flag, found)
    early = (
        "import os\nimport torch.distributed as dist\ndef init(world_size):\n"
        "    if {test}:\n        return\n    dist.init_process_group('nccl')\n    dist.barrier()\n"
        "init(2)\ndist.destroy_process_group()\n"
    )
    tests = {
        "not 'MASTER_ADDR' in os.environ or world_size == 1": [],
        "int(os.environ['RANK']) != 0": ["DDL108"],
    }
    for test, expected in tests.items():
        assert codes_of(early, test=test) == expected, test
    flagged = (
        DDP_HEAD + "is_distributed = {value}\nfor step in range(10):\n    loss = train_step()\n"
        "    if is_distributed:\n        dist.all_reduce(loss)\n" + DDP_TAIL
    )
    for value, expected in (("rank is not None", []), ("rank == 0", ["DDL108"])):
        found = [f.code for f in doctor.check_source(flagged.format(value=value))]
        assert found == expected, (value, found)


def test_a_flag_of_one_process_commands_where_none_launches_the_file(tmp_path):
    """Corpus 23 (seen): every documented command of DNABERT runs `python run_pretrain.py --do_train ...` in one
    process, and none launches it distributed: `--do_train` then says nothing of a one-process path, and the
    DistributedSampler under `if args.do_train:` is still one without set_epoch. Where a launch command beside
    them leaves the flag out (gmflow's `--submission`), it does."""
    script = (
        DDP_HEAD + "if args.do_train:\n    sampler = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, sampler=sampler)\n    for epoch in range(3):\n"
        "        for x in loader:\n            pass\n" + DDP_TAIL
    )
    readmes = {
        "python train.py --do_train --epochs 3\n": ["DDL105"],
        "python train.py --do_train --epochs 3\ntorchrun --nproc_per_node 8 train.py --epochs 3\n": [],
    }
    for i, (readme, expected) in enumerate(readmes.items()):
        files = {".git/HEAD": "", "README.md": f"```\n{readme}```\n", "train.py": script}
        found = check_in_project(tmp_path / f"r{i}", files, "train.py")
        assert [c for c in found if c == "DDL105"] == expected, (readme, found)


def test_a_file_named_for_each_processs_clock():
    """Corpus 18 (seen): ERNIE opens `"loss.{}".format(datetime.datetime.now())` on every rank: each process's
    clock to the microsecond, so each writes its own file. strftime's seconds are shared: one file."""
    script = (
        DDP_HEAD + "import datetime\nwith open('loss.{{}}'.format({stamp}), 'w') as fout:\n"
        "    fout.write('0.1')\n" + DDP_TAIL
    )
    stamps = {
        "datetime.datetime.now()": [],
        "datetime.datetime.now().strftime('%H%M%S')": ["DDL107"],
    }
    for stamp, expected in stamps.items():
        assert codes_of(script, stamp=stamp) == expected, stamp


def test_a_ddp_loop_over_a_loader_that_shuffles_the_whole_dataset(tmp_path):
    """DDL156 (Satlas, corpus 23): a DDP script trains over `DataLoader(data, sampler=RandomSampler(data))` and
    shards nothing, so every rank iterates the whole dataset. Not where the dataset is made per rank (FiD's
    examples loaded with the rank, corpus 14), nor where a project module it comes from splits by rank
    (contriever's data.load_data, corpus 13), nor with a DistributedSampler, nor for an eval loader."""
    script = (
        DDP_HEAD + "from torch.utils.data import RandomSampler\nmodel = DDP(net)\n{data}"
        "train_sampler = RandomSampler(train_data)\n"
        "loader = DataLoader(train_data, sampler=train_sampler, batch_size=8)\n"
        "for epoch in range(3):\n    for x, y in loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n" + DDP_TAIL
    )
    cases = {
        "train_data = load_examples(path)\n": ["DDL156"],
        "examples = load_examples(path, global_rank=rank, world_size=world)\n"
        "train_data = Examples(examples)\n": [],
    }
    for data, expected in cases.items():
        found = [
            f.code for f in doctor.check_source(script.format(data=data)) if f.code == "DDL156"
        ]
        assert found == expected, (data, found)
    files_split = (
        "import torch.distributed as dist\ndef load_data(path):\n    return load_dataset(path)\n"
        "def load_dataset(path):\n    files = sorted(path)\n    return files[dist.get_rank()::2]\n"
    )
    plain = "def load_data(path):\n    return sorted(path)\n"
    for module, expected in ((files_split, []), (plain, ["DDL156"])):
        files = {
            "LICENSE": "",
            "data.py": module,
            "train.py": script.format(data="import data\ntrain_data = data.load_data(path)\n"),
        }
        found = check_in_project(tmp_path / str(len(expected)), files, "train.py")
        assert [c for c in found if c == "DDL156"] == expected, (module, found)
    evaluated = script.replace(
        "        F.mse_loss(model(x), y).backward()\n        optimizer.step()\n",
        "        print(model(x))\n",
    )
    assert "DDL156" not in [f.code for f in doctor.check_source(evaluated.format(data=""))]


def test_a_ddp_loop_over_a_helpers_loader_told_to_shuffle(tmp_path):
    """DDL156 through a project helper whose DataLoader takes `shuffle=shuffle` (rDL-SIM's get_loader_SR,
    corpus 34): reported where the call hands it True, not where it hands nothing true (the default False)."""
    loader = (
        "from torch.utils.data import DataLoader\n\n\ndef get_loader(mode, batch_size, shuffle=False):\n"
        "    return DataLoader(make_dataset(mode), batch_size=batch_size, shuffle=shuffle)\n"
    )
    train = (
        DDP_HEAD + "from loaders import get_loader\nmodel = DDP(net)\n"
        "train_loader = get_loader('train', 8, {shuffle})\nfor epoch in range(3):\n"
        "    for x, y in train_loader:\n        F.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n" + DDP_TAIL
    )
    for shuffle, expected in (("True", ["DDL156"]), ("False", [])):
        files = {"README.md": "", "loaders.py": loader, "train.py": train.format(shuffle=shuffle)}
        found = check_in_project(tmp_path / shuffle, files, "train.py")
        assert [c for c in found if c == "DDL156"] == expected, (shuffle, found)


def test_a_set_epoch_in_a_helper_that_is_never_handed_the_sampler():
    """Corpus 23 (seen): SEDD's `cycle_loader(dataloader, sampler=None)` sets the epoch of the sampler it is
    handed, and its only call, `cycle_loader(DataLoader(train_set, sampler=train_sampler))`, hands none: the
    DistributedSampler never gets an epoch. Handed it, it does."""
    script = (
        DDP_HEAD + "import numpy as np\ndef cycle_loader(dataloader, sampler=None):\n    while 1:\n"
        "        if sampler is not None:\n            sampler.set_epoch(np.random.randint(0, 100000))\n"
        "        for data in dataloader:\n            yield data\n"
        "train_sampler = DistributedSampler(train_set)\n"
        "train_loader = cycle_loader(DataLoader(train_set, sampler=train_sampler){handed})\n"
        + DDP_TAIL
    )
    for handed, expected in (
        ("", ["DDL105"]),
        (", train_sampler", []),
        (", sampler=train_sampler", []),
    ):
        found = [f.code for f in doctor.check_source(script.format(handed=handed))]
        assert found == expected, (handed, found)


def test_the_ddp_wrapper_run_by_rank_zero_alone():
    """DDL157 (corpora 10 to 23, seen: Satlas, DRAGON, vq-vae-2, YOLOP, ogb): the DDP wrapper's forward run under
    `if rank == 0:`, here or in a helper handed the wrapper, broadcasts its buffers, which the other ranks never
    join (a BatchNorm model aborted gloo, measured). Not through `model.module`, not with broadcast_buffers set,
    not for a model with no buffers, not under a DataParallel wrap (one process), not where every rank runs its
    share (`if i % world != rank: continue`), not in a function both sides of a rank check call."""
    script = (
        DDP_HEAD + "from torch import nn\nrank = dist.get_rank()\n"
        "def validate(model, loader):\n    model.eval()\n"
        "    return sum(model(x).sum().item() for x in loader)\n"
        "net = {net}\nmodel = {wrap}\nfor epoch in range(3):\n"
        "    for x in train_loader:\n        model(x).sum().backward()\n"
        "    if rank == 0:\n        print(validate({given}, val_loader))\n" + DDP_TAIL
    )
    bn = "nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))"
    cases = {
        (bn, "DDP(net)", "model"): ["DDL157"],
        (bn, "DDP(net)", "model.module"): [],
        (bn, "DDP(net, broadcast_buffers=False)", "model"): [],
        ("nn.Linear(4, 8)", "DDP(net)", "model"): [],
        (bn, "nn.DataParallel(net)", "model"): [],
    }
    for (net, wrap, given), expected in cases.items():
        found = codes_of(script, net=net, wrap=wrap, given=given)
        assert [c for c in found if c == "DDL157"] == expected, (net, wrap, given, found)
    # the helper's own rank check: reported at the forward (vq-vae-2's sample on the primary process)
    inside = (
        DDP_HEAD + "from torch import nn\n"
        "def train(model, loader):\n    for i, x in enumerate(loader):\n"
        "        model(x).sum().backward()\n"
        "        if dist.get_rank() == 0 and i % 100 == 0:\n            sample = model(x[:8])\n"
        "model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\ntrain(model, loader)\n"
        + DDP_TAIL
    )
    assert [(f.line, f.code) for f in doctor.check_source(inside) if f.code == "DDL157"] == [
        (12, "DDL157")
    ]
    shared = (
        DDP_HEAD + "from torch import nn\nrank, world = dist.get_rank(), dist.get_world_size()\n"
        "model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\n"
        "for i, x in enumerate(examples):\n    if i % world != rank:\n        continue\n"
        "    print(model(x))\n" + DDP_TAIL
    )
    assert "DDL157" not in codes_of(shared)
    both = (
        DDP_HEAD + "from torch import nn\n"
        "def training(rank):\n    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))\n"
        "    model(x).sum().backward()\n"
        "def main_worker(rank):\n    if rank == 0:\n        with capture_outputs('log.txt'):\n"
        "            training(rank)\n    else:\n        training(rank)\n" + DDP_TAIL
    )
    assert "DDL157" not in codes_of(both)
    # a create_model of the script's own makes no buffers (LBNL_dt_scaling, corpus 35); timm's does
    for head, expected in (
        ("def create_model():\n    return nn.Linear(4, 8)\n", []),
        ("from timm import create_model\n", ["DDL157"]),
    ):
        own = head + script.format(net="create_model()", wrap="DDP(net)", given="model")
        assert [c for c in codes_of(own) if c == "DDL157"] == expected, (head, codes_of(own))


def test_a_trainer_classs_prepared_model_run_by_the_main_process_alone():
    """DDL157 on a trainer class (soundstorm's, corpus 33): `self.model` prepared in __init__ and run under
    `if self.is_main:` in a later method broadcasts its buffers on one rank. Not through
    `self.accelerator.unwrap_model(self.model)`, not where every process runs it."""
    script = (
        "import torch\nfrom torch import nn\nfrom accelerate import Accelerator\n"
        "class Trainer:\n    def __init__(self, loader):\n        self.accelerator = Accelerator()\n"
        "        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))\n"
        "        self.model, self.opt = self.accelerator.prepare(model, torch.optim.SGD(model.parameters()))\n"
        "    @property\n    def is_main(self):\n        return self.accelerator.is_main_process\n"
        "    def train_step(self, x):\n        self.accelerator.backward(self.model(x).sum())\n"
        "        self.opt.step()\n{guard}        with torch.no_grad():\n"
        "            {pad}print({model}(x))\n"
    )
    for guard, model, expected in (
        ("        if self.is_main:\n    ", "self.model", [(17, "DDL157")]),
        ("        if self.is_main:\n    ", "self.accelerator.unwrap_model(self.model)", []),
        ("", "self.model", []),
    ):
        source = script.format(guard=guard, model=model, pad="    " if guard else "")
        found = [(f.line, f.code) for f in doctor.check_source(source) if f.code == "DDL157"]
        assert found == expected, (guard, model, found)


def test_a_mean_loss_added_up_and_divided_by_the_samples():
    """DDL181 (learn-pytorch-ddp, arawxx's ConvNextV2, corpus 33): the FSDP tutorial's two slots, a batch mean
    in one and the batch's size in the other, then their quotient: the mean over the batch size. Reported for
    a functional loss, a loss module bound in the module, a model output's .loss, and names instead of slots;
    not for reduction='sum', a scaled add, a batch count, or a loss the function cannot tell."""
    script = (
        "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
        "from torch import nn\ndist.init_process_group('nccl')\ncriterion = nn.{module}\n\n\n"
        "def run(model, loader, rank):\n    total, seen = 0.0, 0\n    for data, target in loader:\n"
        "        loss = {loss}\n        total += {added}\n        seen += {count}\n"
        "    return total / seen\n"
    )
    base = {
        "module": "CrossEntropyLoss()",
        "loss": "F.mse_loss(model(data), target)",
        "added": "loss.item()",
        "count": "data.size(0)",
    }
    cases = [
        ({}, ["DDL181"]),
        ({"loss": "criterion(model(data), target)"}, ["DDL181"]),
        ({"loss": "model(data, labels=target).loss"}, ["DDL181"]),
        ({"loss": "criterion(model(data), target) / 4"}, ["DDL181"]),
        ({"count": "len(data)"}, ["DDL181"]),
        ({"count": "target.shape[0]"}, ["DDL181"]),
        ({"added": "float(loss)"}, ["DDL181"]),
        ({"loss": "F.mse_loss(model(data), target, reduction='sum')"}, []),
        (
            {
                "module": "CrossEntropyLoss(reduction='sum')",
                "loss": "criterion(model(data), target)",
            },
            [],
        ),
        ({"added": "loss.item() * data.size(0)"}, []),
        ({"count": "1"}, []),
        ({"loss": "model(data)"}, []),
    ]
    for change, expected in cases:
        source = script.format(**{**base, **change})
        found = [f.code for f in doctor.check_source(source) if f.code == "DDL181"]
        assert found == expected, (change, found)
    # the loss module handed in, where the repository never asks for a sum (arawxx's `criteria`)
    handed = script.format(**base).replace("def run(model,", "def run(criteria, model,")
    handed = handed.replace("F.mse_loss(model(data), target)", "criteria(model(data), target)")
    assert [
        f.code for f in doctor.check_source(handed) if f.code == "DDL181"
    ] == []  # no project: unknown


def test_a_mean_loss_module_handed_to_another_modules_loop(tmp_path):
    """DDL181 one module away (arawxx's run.py hands `criteria = nn.CrossEntropyLoss()` to flow/train.py):
    reported at the call; not where a file of the repository asks for reduction='sum'."""
    loop = (
        "import torch\nimport torch.distributed as dist\n\n\ndef train(model, loader, rank, criteria):\n"
        "    sums = torch.zeros(2).to(rank)\n    for x, y in loader:\n"
        "        loss = criteria(model(x), y)\n        sums[0] += loss.item()\n        sums[1] += len(x)\n"
        "    dist.all_reduce(sums)\n    return sums[0] / sums[1]\n"
    )
    main = (
        "import torch.distributed as dist\nfrom torch import nn\nfrom loop import train\n"
        "dist.init_process_group('nccl')\ncriteria = nn.CrossEntropyLoss({reduction})\n"
        "print(train(model, loader, 0, criteria))\ndist.destroy_process_group()\n"
    )
    for reduction, expected in (("", [(6, "DDL181")]), ("reduction='sum'", [])):
        files = {"README.md": "", "loop.py": loop, "main.py": main.format(reduction=reduction)}
        found = check_in_project(tmp_path / (reduction or "mean"), files, "main.py", where=True)
        assert sorted(f for f in found if f[1] == "DDL181") == expected, (reduction, found)


def test_a_helpers_distributed_sampler_handed_to_a_helpers_accelerator(tmp_path):
    """DDL177 where the project's helpers make both (distributed-llm-alignment, corpus 35): `accelerator =
    get_accelerator(cfg)` is accelerate's, since the helper's module makes an Accelerator, and
    `get_distributed_sampler(ds, accelerator)` returns a DistributedSampler, so the loader `prepare` shards again
    is reported. Not where the helper returns a plain sampler, nor where the "accelerator" is a helper's object
    of another kind."""
    utils = (
        "import torch\nfrom accelerate import Accelerator\n\n\ndef get_accelerator(cfg):\n"
        "    return {accelerator}\n\n\ndef get_distributed_sampler(ds, accelerator):\n"
        "    return {sampler}\n"
    )
    train = (
        "from torch.utils.data import DataLoader\nfrom utils import get_accelerator, get_distributed_sampler\n"
        "accelerator = get_accelerator(cfg)\nsampler = get_distributed_sampler(ds, accelerator)\n"
        "loader = DataLoader(ds, batch_size=8, sampler=sampler)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for batch in loader:\n    accelerator.backward(model(batch))\n    optimizer.step()\n"
    )
    distributed = "torch.utils.data.distributed.DistributedSampler(ds, shuffle=True)"
    for accelerator, sampler, expected in (
        ("Accelerator()", distributed, [(6, "DDL177")]),
        ("Accelerator()", "torch.utils.data.RandomSampler(ds)", []),
        ("object()", distributed, []),
    ):
        files = {
            "README.md": "",
            "utils.py": utils.format(accelerator=accelerator, sampler=sampler),
            "train.py": train,
        }
        found = check_in_project(
            tmp_path / f"{accelerator[:6]}{len(sampler)}", files, "train.py", True
        )
        assert sorted(f for f in found if f[1] == "DDL177") == expected, (
            accelerator,
            sampler,
            found,
        )


def test_the_ddp_wrapper_handed_to_another_modules_evaluation_by_rank_zero_alone(tmp_path):
    """DDL157 one module away (Satlas's `satlas.model.evaluate.evaluate(model=model, ...)` under
    `if is_primary:`): reported at the call, where the function of the other module runs the parameter it is
    handed, and the models the project makes hold buffers."""
    evaluate = (
        "import torch\ndef evaluate(model, loader):\n    with torch.no_grad():\n"
        "        return [run(model, x) for x in loader]\n"
        "def run(net, x):\n    return net(x)\n"
        "def summary(model, loader):\n    return sum(p.numel() for p in model.parameters())\n"
    )
    train = (
        DDP_HEAD + "import evaluate\nfrom models import build\nmodel = DDP(build())\n"
        "for x in loader:\n    model(x).sum().backward()\n"
        "if dist.get_rank() == 0:\n    print(evaluate.{function}(model=model, loader=val_loader))\n"
        + DDP_TAIL
    )
    models = {
        "buffers": "from torch import nn\ndef build():\n    return nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n",
        "none": "from torch import nn\ndef build():\n    return nn.Linear(4, 4)\n",
    }
    for function, model, expected in (
        ("evaluate", "buffers", [(13, "DDL157")]),
        ("summary", "buffers", []),
        ("evaluate", "none", []),
    ):
        files = {
            "LICENSE": "",
            "evaluate.py": evaluate,
            "models.py": models[model],
            "train.py": train.format(function=function),
        }
        found = check_in_project(tmp_path / f"{function}-{model}", files, "train.py", where=True)
        assert sorted(f for f in found if f[1] == "DDL157") == expected, (function, model, found)


def test_a_norm_clip_of_an_fsdp1_models_shards(tmp_path):
    """DDL158 (moshi-finetune, corpus 24, seen): torch.nn.utils.clip_grad_norm_ over a FullyShardedDataParallel
    model's parameters clips each rank's shard by its own norm (0.756 and 1.422 where the norm was 1.611,
    measured). Wrapped here, or by a project function that wraps in FSDP1. Not the wrapper's own
    clip_grad_norm_, not under fully_shard (FSDP2), not in the branch that runs without FSDP."""
    script = (
        DDP_HEAD
        + "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard\n"
        "{wrap}\nfor x, y in loader:\n    F.mse_loss(model(x), y).backward()\n"
        "    {clip}\n    optimizer.step()\n" + DDP_TAIL
    )
    plain_clip = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
    cases = {
        ("model = FSDP(net)", plain_clip): ["DDL158"],
        ("model = FSDP(net)", "model.clip_grad_norm_(1.0)"): [],
        ("fully_shard(net)\nmodel = net", plain_clip): [],
        (
            "model = FSDP(net)",
            "if not args.fsdp:\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        ): [],
    }
    for (wrap, clip), expected in cases.items():
        found = codes_of(script, wrap=wrap, clip=clip)
        assert [c for c in found if c == "DDL158"] == expected, (wrap, clip, found)
    wrapping = {
        "fsdp": "from torch.distributed.fsdp import FullyShardedDataParallel\n"
        "def get_model(args):\n    return FullyShardedDataParallel(build(args))\n",
        "plain": "def get_model(args):\n    return build(args)\n",
    }
    for kind, module in wrapping.items():
        files = {
            "LICENSE": "",
            "wrapped.py": module,
            "train.py": script.format(
                wrap="from wrapped import get_model\nmodel = get_model(args)", clip=plain_clip
            ).replace(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard\n",
                "",
            ),
        }
        found = check_in_project(tmp_path / kind, files, "train.py")
        assert [c for c in found if c == "DDL158"] == (["DDL158"] if kind == "fsdp" else []), (
            kind,
            found,
        )


def test_what_corpus_24_taught_the_default_rules(tmp_path):
    """Corpus 24 (seen): the default rules' three false findings. DDL110 leaves the `loss.backward()` of the
    branch whose other side calls accelerator.backward (BiRefNet's `if args.use_accelerate:`); DDL102 leaves
    torch.cuda.amp under a torch version test whose else uses the new spelling (speechbrain); DDL101 leaves a
    `--local_rank` where a project function the script calls forks the ranks itself and sets it (DeBERTa)."""
    backward = (
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for x, y in loader:\n    loss = F.mse_loss(model(x), y)\n{step}    optimizer.step()\n"
    )
    branches = "    if args.use_accelerate:\n        accelerator.backward(loss)\n    else:\n        loss.backward()\n"
    assert "DDL110" not in codes_of(backward, step=branches)
    assert "DDL110" in codes_of(backward, step="    loss.backward()\n")
    scaler = (
        "import torch\nfrom packaging import version\n"
        "if version.parse(torch.__version__) < version.parse('2.4.0'):\n"
        "    scaler = torch.cuda.amp.GradScaler(enabled=True)\nelse:\n    scaler = {new}\n"
    )
    assert "DDL102" not in codes_of(scaler, new="torch.GradScaler('cuda', enabled=True)")
    assert "DDL102" in codes_of(scaler, new="None")
    launcher = {
        "fork": "import os\ndef initialize_distributed(args):\n    for r in range(args.n_gpu):\n"
        "        args.local_rank = r\n        if os.fork() == 0:\n            break\n",
        "plain": "import os\ndef initialize_distributed(args):\n"
        "    args.rank = int(os.environ.get('RANK', 0))\n",
    }
    train = (
        "import argparse\nimport torch\nfrom dist_launcher import initialize_distributed\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "args = parser.parse_args()\ninitialize_distributed(args)\n"
        "torch.distributed.init_process_group('nccl')\ntorch.cuda.set_device(args.local_rank)\n"
        "torch.distributed.destroy_process_group()\n"
    )
    for kind, module in launcher.items():
        files = {"LICENSE": "", "dist_launcher.py": module, "train.py": train}
        found = check_in_project(tmp_path / kind, files, "train.py")
        assert ("DDL101" in found) == (kind == "plain"), (kind, found)


def test_an_evaluation_every_rank_runs_over_the_whole_set():
    """DDL159 (FKD, corpus 23; LeViT, corpus 24; seen): a DDP script's evaluation over a loader that nothing
    shards, run on every rank. Quiet with a DistributedSampler, under a rank check, over a dataset made per rank,
    and where `--dist-eval` picks the sampler and is on by default or the choice is `if args.distributed:`."""
    script = (
        DDP_HEAD + "import argparse\nfrom torch.utils.data import SequentialSampler\n"
        "parser = argparse.ArgumentParser()\n{flag}args = parser.parse_args()\n"
        "model = DDP(net)\n{choice}"
        "val_loader = DataLoader(dataset_val, batch_size=64, sampler=sampler_val)\n"
        "for epoch in range(3):\n    {call}\n" + DDP_TAIL
    )
    option = "parser.add_argument('--dist-eval', action='store_true', default={default})\n"
    picked = (
        "if args.{test}:\n    sampler_val = DistributedSampler(dataset_val, shuffle=False)\n"
        "else:\n    sampler_val = SequentialSampler(dataset_val)\n"
    )
    plain = "sampler_val = SequentialSampler(dataset_val)\n"
    cases = {
        (
            option.format(default=False),
            picked.format(test="dist_eval"),
            "evaluate(val_loader, model)",
        ): ["DDL159"],
        (
            option.format(default=True),
            picked.format(test="dist_eval"),
            "evaluate(val_loader, model)",
        ): [],
        ("", picked.format(test="distributed"), "evaluate(val_loader, model)"): [],
        ("", plain, "evaluate(val_loader, model)"): ["DDL159"],
        ("", plain, "if dist.get_rank() == 0:\n        evaluate(val_loader, model.module)"): [],
        (
            "",
            "sampler_val = DistributedSampler(dataset_val, shuffle=False)\n",
            "evaluate(val_loader, model)",
        ): [],
        # corpus 26 (seen): sugar's `--validate`, each rank over its own checkpoints
        (
            "",
            plain,
            "for i in range(args.gpu, len(weights), ngpus_per_node):\n"
            "        model.load_state_dict(torch.load(weights[i]))\n"
            "        evaluate(val_loader, model)",
        ): [],
    }
    for (flag, choice, call), expected in cases.items():
        found = codes_of(script, flag=flag, choice=choice, call=call)
        assert [c for c in found if c == "DDL159"] == expected, (flag, choice, call, found)
    per_rank = script.format(
        flag="",
        choice="dataset_val = ValSet(rank=dist.get_rank())\n" + plain,
        call="evaluate(val_loader, model)",
    )
    assert "DDL159" not in codes_of(per_rank)


def test_sharded_training_data_for_a_model_nothing_wraps(tmp_path):
    """DDL160 (FrozenBiLM, corpus 24, seen): the training set sharded with a DistributedSampler, a backward and an
    optimizer step, and no wrap nor gradient all-reduce anywhere: each rank trains its own copy. Quiet beside a
    project helper that all-reduces the gradients (NVIDIA's apply_gradient_allreduce: radtts, flowtron), and
    where the only DistributedSampler is the evaluation's; a helper that all-reduces a metric is no sync."""
    train = (
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "from helpers import init_distributed, {imported}\n"
        "init_distributed()\n{wrap}"
        "loader = DataLoader({data}, sampler=DistributedSampler({data}))\nfor x, y in loader:\n"
        "    loss_fn(model(x), y).backward()\n    optimizer.step()\n"
    )
    helpers = (
        "import torch.distributed as dist\ndef init_distributed():\n    dist.init_process_group('nccl')\n"
        "def reduce_metric(t):\n    dist.all_reduce(t)\n    return t\n"
        "def apply_gradient_allreduce(module):\n    return module\n"
    )
    cases = {
        ("reduce_metric", "", "train_set"): ["DDL160"],
        ("apply_gradient_allreduce", "model = apply_gradient_allreduce(model)\n", "train_set"): [],
        (
            "reduce_metric",
            "model = torch.nn.parallel.DistributedDataParallel(model)\n",
            "train_set",
        ): [],
        ("reduce_metric", "", "val_set"): [],
    }
    for (imported, wrap, data), expected in cases.items():
        files = {
            "LICENSE": "",
            "helpers.py": helpers
            if imported != "reduce_metric"
            else helpers.replace("def apply_gradient_allreduce(module):\n    return module\n", ""),
            "train.py": train.format(imported=imported, wrap=wrap, data=data),
        }
        found = check_in_project(tmp_path / f"{imported}{len(wrap)}{data}", files, "train.py")
        assert [c for c in found if c == "DDL160"] == expected, (imported, wrap, data, found)
    # corpus 30, PaliGemma 2's fine-tuning: "DDP" in what it prints is no wrap
    said = train.format(
        imported="reduce_metric", wrap="print('DDP on rank', 0)\n", data="train_set"
    )
    files = {"LICENSE": "", "helpers.py": helpers, "train.py": said}
    assert "DDL160" in check_in_project(tmp_path / "said", files, "train.py")


def test_sharded_training_data_for_a_model_a_project_function_trains_unwrapped(tmp_path):
    """DDL160 (Pangu, corpus 25, seen): the backward and the step in a function of another module the script
    calls, and the only gradient all-reduce of the project in a helper nothing calls; quiet where the training
    function calls it."""
    train = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "from sample import train\nfrom utils_dist import init_dist\ninit_dist()\n"
        "loader = DataLoader(train_set, sampler=DistributedSampler(train_set))\n"
        "model = train(model, loader, optimizer)\n"
    )
    sample = (
        "from utils_dist import gather_grad\ndef train(model, loader, optimizer):\n"
        "    for x, y in loader:\n        loss_fn(model(x), y).backward()\n{sync}"
        "        optimizer.step()\n    return model\n"
    )
    utils = (
        "import torch.distributed as dist\ndef init_dist():\n    dist.init_process_group('nccl')\n"
        "def gather_grad(params):\n    for p in params:\n        dist.all_reduce(p.grad.data)\n"
    )
    for sync, expected in (("", ["DDL160"]), ("        gather_grad(model.parameters())\n", [])):
        files = {
            "LICENSE": "",
            "utils_dist.py": utils,
            "sample.py": sample.format(sync=sync),
            "train.py": train,
        }
        found = check_in_project(tmp_path / f"p{len(sync)}", files, "train.py")
        assert [c for c in found if c == "DDL160"] == expected, (sync, found)


def test_another_installed_package_is_not_the_projects_module(tmp_path):
    """A file checked where it is installed (site-packages/pkg/train.py) reads its own package's modules, not
    another installed package's (`import torch` there resolved to torch/__init__.py, and lightning_fabric took
    135 s against 10 s): a collective behind a helper of its own package is reported, one behind another
    package's is that package's business."""
    other = "import torch.distributed as dist\ndef sync():\n    dist.barrier()\n"
    train = (
        "import torch.distributed as dist\nfrom {module} import sync\n"
        "dist.init_process_group('nccl')\nif dist.get_rank() == 0:\n    sync()\n"
        "dist.destroy_process_group()\n"
    )
    for module, expected in (("pkg.helpers", True), ("other", False)):
        root = tmp_path / module / "lib" / "site-packages"
        files = {
            "pkg/__init__.py": "",
            "pkg/helpers.py": other,
            "other/__init__.py": other,
            "pkg/train.py": train.format(module=module),
        }
        found = check_in_project(root, files, "pkg/train.py")
        assert ("DDL108" in found) == expected, (module, found)


def test_one_accumulation_is_one_finding_at_its_first_step():
    """DDL119, corpus 27 (seen): minimind-v's step for the leftover micro-batches after the loop was reported as a
    second finding of the same accumulation; now one finding a function, at the loop's step."""
    script = (
        DDP_HEAD + "model = DDP(net)\ndef train_epoch(model, loader):\n"
        "    for step, x in enumerate(loader):\n        model(x).sum().backward()\n"
        "        if step % accumulation_steps == 0:\n            optimizer.step()\n"
        "    if last_step % accumulation_steps != 0:\n        optimizer.step()\n" + DDP_TAIL
    )
    found = [(f.line, f.code) for f in doctor.check_source(script) if f.code == "DDL119"]
    assert found == [(11, "DDL119")], found


def test_a_collective_behind_a_helper_of_the_same_module_under_a_rank_check():
    """DDL108, corpus 27 (seen): the WaveNet ASR's `reduce_tensor` (a function of the script that all-reduces)
    called under `if local_rank == 0`: rank 0 waits alone in the all-reduce. Called on every rank, or on each
    side of the check, it is a collective every rank takes."""
    script = (
        DDP_HEAD + "def reduce_tensor(t):\n    rt = t.clone()\n    dist.all_reduce(rt)\n"
        "    return rt / dist.get_world_size()\n{body}" + DDP_TAIL
    )
    under = "if args.local_rank == 0:\n    print(reduce_tensor(loss))\n"
    every = "loss = reduce_tensor(loss)\nif args.local_rank == 0:\n    print(loss)\n"
    both = (
        "if args.local_rank == 0:\n    print(reduce_tensor(loss))\nelse:\n    reduce_tensor(loss)\n"
    )
    assert "DDL108" in codes_of(script, body=under)
    assert "DDL108" not in codes_of(script, body=every)
    assert "DDL108" not in codes_of(script, body=both)


def test_a_method_of_a_scripts_own_class_that_nothing_calls_makes_no_mistake(tmp_path):
    """Corpus 27 (seen): MTTOD's runner has training methods that nothing calls (`_train_epoch`, and
    `train_epoch_fs`, called only from `train_fs`, which nothing calls): their lines never run. A method the
    script calls, one another file names, one of a class with a framework's base (whose hooks it calls by name),
    and a decorated one are still checked."""
    script = (
        "import torch\n\nclass Runner{base}:\n    def train(self):\n        self.step()\n\n"
        "    def step(self):\n        pass\n\n    def train_fs(self):\n        self.epoch_fs()\n\n"
        "{decorator}    def epoch_fs(self):\n"
        "        state = torch.load('ckpt.pt', weights_only=False)\n\n"
        "if __name__ == '__main__':\n    Runner().train()\n"
    )
    plain = {"base": "", "decorator": ""}
    cases = [
        ({}, plain, []),  # train_fs and epoch_fs never run
        ({}, {**plain, "base": "(object)"}, []),
        ({"tools.py": "def go(runner):\n    runner.train_fs()\n"}, plain, ["DDL109"]),
        ({}, {**plain, "base": "(pl.LightningModule)"}, ["DDL109"]),
        ({}, {**plain, "decorator": "    @torch.no_grad()\n"}, ["DDL109"]),
    ]
    for i, (others, fields, expected) in enumerate(cases):
        files = {".git/HEAD": "", "train.py": script.format(**fields), **others}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert found == expected, (i, found)
    called = script.format(**plain).replace("Runner().train()", "Runner().train_fs()")
    found = check_in_project(tmp_path / "called", {".git/HEAD": "", "train.py": called}, "train.py")
    assert found == ["DDL109"], found


def test_a_lightning_validation_metric_logged_without_sync_dist(tmp_path):
    """DDL162, corpus 27 (seen): OpenSTL's `self.log('val_loss', loss, on_epoch=True)` in validation_step, in a
    repository whose experiment runs Lightning's "ddp" strategy from another module: each rank's shard's mean,
    which each rank's ModelCheckpoint reads. Quiet where the repository names no multi-process strategy (DDPM's
    name is not one), where the Trainer leaves the evaluation unsharded, for a per-step value, and outside an
    evaluation method."""
    method = (
        "import pytorch_lightning as pl\nclass Base(pl.LightningModule):\n"
        "    def {name}(self, batch, batch_idx):\n        loss = self.criterion(self(batch), batch)\n"
        "        self.log('{key}', loss{extra})\n        return loss\n"
    )
    experiment = (
        "import pytorch_lightning as pl\ndef run(strategy='{strategy}'):\n    pl.Trainer({kw})\n"
    )
    cases = [
        ({}, {"strategy": "ddp", "kw": "strategy=strategy"}, True),
        ({}, {"strategy": "auto", "kw": "strategy=strategy"}, False),  # one process
        ({"name": "training_step", "key": "train_loss"}, {"strategy": "ddp", "kw": ""}, False),
        ({"extra": ", sync_dist=True"}, {"strategy": "ddp", "kw": ""}, False),
        ({"extra": ", on_step=True, on_epoch=False"}, {"strategy": "ddp", "kw": ""}, False),
        (
            {},
            {
                "strategy": "ddp",
                "kw": f"strategy=strategy, use_distributed_sampler={False}",
            },
            False,
        ),
    ]
    for i, (fields, run, expected) in enumerate(cases):
        fields = {"name": "validation_step", "key": "val_loss", "extra": "", **fields}
        files = {
            ".git/HEAD": "",
            "pkg/__init__.py": "",
            "pkg/methods.py": method.format(**fields),
            "pkg/exp.py": experiment.format(**run),
            "README.md": "A DDPM trained with Lightning.\n",
        }
        found = check_in_project(tmp_path / str(i), files, "pkg/methods.py")
        assert ("DDL162" in found) == expected, (i, found)
    # omnisafe (corpus 27): the project's own torch DDP (`ddp_local_rank`, in code that never names Lightning)
    # beside a one-device Lightning Trainer is not a strategy of the Trainer
    fields = {"name": "validation_step", "key": "val_loss", "extra": ""}
    files = {
        ".git/HEAD": "",
        "pkg/__init__.py": "",
        "pkg/methods.py": method.format(**fields),
        "pkg/exp.py": experiment.format(strategy="auto", kw="devices=[0]"),
        "pkg/rl.py": "import os\nddp_local_rank = int(os.environ['LOCAL_RANK'])\n",
    }
    assert "DDL162" not in check_in_project(tmp_path / "own", files, "pkg/methods.py")


def test_a_lightning_validation_dict_or_a_logging_wrapper_without_sync_dist(tmp_path):
    """DDL162, corpus 31 (seen): Open-MAGVIT2's `aeloss, log_dict_ae = self.loss(...)` then
    `self.log_dict(log_dict_ae, on_epoch=True)` in its validation step; protein-frame-flow's
    `self._log_scalar(key, value, on_epoch=True)`, a method that calls `self.log(..., sync_dist=sync_dist)` with
    sync_dist False by default, in a repository whose Trainer has use_distributed_sampler=False but whose
    val_dataloader shards with a DistributedSampler itself. Quiet with sync_dist=True passed, for a dict of
    the module's metric objects, and where the val loader is not sharded."""
    module = (
        "import pytorch_lightning as pl\nclass Net(pl.LightningModule):\n"
        "    def _log_scalar(self, key, value, on_epoch=False, sync_dist=False):\n"
        "        self.log(key, value, on_epoch=on_epoch, sync_dist=sync_dist)\n"
        "    def validation_step(self, batch, batch_idx):\n{body}"
        "    def val_dataloader(self):\n        return DataLoader(self.valid, {sampler})\n"
    )
    experiment = "import pytorch_lightning as pl\npl.Trainer(strategy='ddp', use_distributed_sampler=False)\n"
    pair = "        loss, logs = self.loss(batch)\n        self.log_dict(logs, on_epoch=True)\n"
    metrics = "        logs = {'acc': self.val_acc}\n        self.log_dict(logs, on_epoch=True)\n"
    wrapped = "        self._log_scalar('valid/rmsd', self.rmsd(batch), on_epoch=True)\n"
    synced = (
        "        self._log_scalar('valid/rmsd', self.rmsd(batch), on_epoch=True, sync_dist=True)\n"
    )
    sharded, whole = "sampler=DistributedSampler(self.valid, shuffle=False)", "shuffle=False"
    for i, (body, sampler, expected) in enumerate(
        (
            (pair, sharded, True),
            (wrapped, sharded, True),
            (synced, sharded, False),
            (metrics, sharded, False),
            (pair, whole, False),
        )
    ):
        files = {
            ".git/HEAD": "",
            "net.py": module.format(body=body, sampler=sampler),
            "train.py": experiment,
        }
        found = check_in_project(tmp_path / str(i), files, "net.py")
        assert ("DDL162" in found) == expected, (i, found)


def test_a_sampler_handed_to_a_helper_that_only_builds_the_loader(tmp_path):
    """DDL105, corpus 27 (seen): the fasterrcnn pipeline hands its training DistributedSampler to
    `create_train_loader` of its datasets.py, which only builds the DataLoader; nothing sets the epoch. Handed
    to a function that sets it (pytorch/examples' FSDP train()), or to one doctor cannot read, it is quiet."""
    train = (
        "import torch.distributed as dist\nfrom torch.utils.data import DistributedSampler\n"
        "from {module} import {helper}\ndist.init_process_group('nccl')\n"
        "sampler = DistributedSampler(train_dataset)\nloader = {helper}(train_dataset, 16, sampler)\n"
        "for epoch in range(3):\n    train_one_epoch(model, loader)\ndist.destroy_process_group()\n"
    )
    helpers = (
        "from torch.utils.data import DataLoader\n"
        "def create_train_loader(dataset, batch_size, sampler=None):\n"
        "    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)\n"
        "def epoch_loader(dataset, batch_size, sampler=None):\n    sampler.set_epoch(0)\n"
        "    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)\n"
    )
    for module, helper, expected in (
        ("datasets", "create_train_loader", True),
        ("datasets", "epoch_loader", False),
        ("somewhere_else", "create_train_loader", False),
    ):
        files = {".git/HEAD": "", "datasets.py": helpers, "train.py": train.format(**locals())}
        found = check_in_project(tmp_path / helper / module, files, "train.py")
        assert ("DDL105" in found) == expected, (module, helper, found)


def test_micro_steps_in_contexts_a_function_makes_from_the_model():
    """DDL119, corpus 27 (seen): self-rewarding-lm runs each micro-step in `with forward_context():`, the
    contexts yielded by `model_forward_contexts(accelerator, model, steps)` from an installed package of its
    author's (no_sync for all but the last), which doctor cannot read. Contexts made from something else, or a
    loop that never enters them, are still an accumulation without no_sync."""
    script = (
        ACCELERATE_HEAD + "from helpers import contexts\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "while True:\n    for ctx in contexts({given}, 4):\n        with {entered}:\n"
        "            accelerator.backward(model(next(loader)).mean())\n    optimizer.step()\n"
    )
    for given, entered, expected in (
        ("accelerator, model", "ctx()", []),
        ("accelerator, model", "torch.no_grad()", ["DDL119"]),
        ("loader", "ctx()", ["DDL119"]),
    ):
        found = codes_of(script, given=given, entered=entered)
        assert [c for c in found if c == "DDL119"] == expected, (given, entered, found)


def test_a_checkpoint_of_the_unwrapped_model_loaded_into_the_wrapper():
    """DDL163, corpus 27 (seen): MeshGPT's trainer saves `self.unwrapped_model.state_dict()` (a property that
    unwraps) and loads the file into the prepared `self.model`: under several processes the wrapper's keys
    start with `module.` and the load fails. Quiet where the load goes into the unwrapped model, where the
    wrapper's own state dict is saved too (the keys then match one of the two), and for a load before the wrap."""
    trainer = (
        ACCELERATE_HEAD + "class Trainer:\n    def __init__(self, model, optimizer):\n"
        "{before}        self.model, self.optimizer = accelerator.prepare(model, optimizer)\n"
        "    @property\n    def unwrapped_model(self):\n"
        "        return accelerator.unwrap_model(self.model)\n"
        "    def save(self, path):\n        pkg = dict(model={saved}.state_dict())\n"
        "        torch.save(pkg, path)\n"
        "    def load(self, path):\n        pkg = torch.load(path, weights_only=True)\n"
        "        {loaded}.load_state_dict(pkg['model'])\n"
    )
    plain = {"before": "", "saved": "self.unwrapped_model", "loaded": "self.model"}
    for fields, expected in (
        (plain, ["DDL163"]),
        ({**plain, "loaded": "self.unwrapped_model"}, []),
        ({**plain, "saved": "self.model"}, []),
    ):
        found = codes_of(trainer, **fields)
        assert [c for c in found if c == "DDL163"] == expected, (fields, found)
    early = (
        DDP_HEAD
        + "def main(path):\n    model = Net()\n    model.load_state_dict(torch.load(path))\n"
        "    model = DDP(model)\n    torch.save(model.module.state_dict(), path)\n" + DDP_TAIL
    )
    assert "DDL163" not in codes_of(early)
    rebound = (  # the migrated quickstart: the plain network made again, then its file loaded back
        DDP_HEAD + "model = DDP(Net())\ntorch.save(model.module.state_dict(), 'm.pt')\n"
        "model = Net()\nmodel.load_state_dict(torch.load('m.pt'))\n" + DDP_TAIL
    )
    assert "DDL163" not in codes_of(rebound)
    assert "DDL163" in codes_of(rebound.replace("model = Net()\n", ""))
    # RIR-DM (corpus 32): a class whose name holds "DDP" (ConditionalDDPM) does not wrap
    ddpm = rebound.replace("model = Net()\n", "model = ConditionalDDPM()\n")
    assert "DDL163" not in codes_of(ddpm)


def test_a_file_named_by_the_runs_counters_is_one_file_for_every_rank():
    """DDL107, corpus 28: ChartReformer writes `output_dir/train_state.json` on every rank, with `output_dir =
    f"step_{completed_steps}"` bound in its training loop and `f"epoch_{epoch}"` in its epoch loop: the same name
    on every rank, not one file per item of the rank's own data. A name made from the batch (an item of this
    rank's shard) or from a range of the rank's own items is still each rank's own."""
    script = (
        ACCELERATE_HEAD + "import json\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "{loop}\n    {name}\n    with open(out + '/state.json', 'w') as f:\n        json.dump(state, f)\n"
    )
    assert_found(
        "DDL107",
        script,
        ("loop", "name"),
        (
            ("for step, batch in enumerate(loader):", "out = f'step_{completed}'", True),
            ("for epoch in range(epochs):", "out = f'epoch_{epoch}'", True),
            ("for step, batch in enumerate(loader):", "out = batch['name']", False),
            (
                "for i in range(accelerator.process_index, n, accelerator.num_processes):",
                "out = f'item_{i}'",
                False,
            ),
        ),
    )


def test_one_writer_a_node_is_the_jobs_one_writer_where_the_repository_runs_on_one_machine(
    tmp_path,
):
    """DDL107, corpora 25, 27 and 28: `if local_rank == 0: torch.save(...)` in a repository whose every launch is
    one machine's (`torchrun --nproc_per_node=4`: the RSNA solution's run scripts) writes once; the judges
    counted it false. Where a page names several nodes (`--nnodes=2`), the node's first process on each of them
    writes the same file."""
    train = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl')\n"
        "model = DDP(net)\nif local_rank == 0:\n    torch.save(model.module.state_dict(), 'best.pth')\n"
        "dist.destroy_process_group()\n"
    )
    for launch, expected in (
        ("torchrun --nproc_per_node=4 train.py\n", False),
        ("torchrun --nnodes=2 --nproc_per_node=4 train.py\n", True),
    ):
        files = {".git/HEAD": "", "run.sh": launch, "train.py": train}
        found = check_in_project(tmp_path / str(expected), files, "train.py")
        assert ("DDL107" in found) == expected, (launch, found)


def test_what_corpus_32_taught_of_one_machine(tmp_path):
    """DDL107, corpus 32 (seen): a one-writer-a-node guard in repositories that run on one machine, which the
    judges counted false: a Slurm job asking for one node (`#SBATCH --nodes=1`, MNCDV3), an mp.spawn run that
    meets on `tcp://localhost` (LLM-guided-Multimodal-MIL), a repository found by its lower-case `readme.md`
    five folders up (speech-processing) or, with neither .git nor README, by the shell script beside the file.
    Where a page asks for two nodes, or the code names another host, the guard's writes are still found."""
    train = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "local_rank = int(os.environ['LOCAL_RANK'])\ndist.init_process_group('nccl', init_method=URL)\n"
        "model = DDP(net)\nif local_rank == 0:\n    torch.save(model.module.state_dict(), 'best.pth')\n"
        "dist.destroy_process_group()\n"
    )
    slurm = "#!/bin/bash\n#SBATCH --nodes={n}\n#SBATCH --gres=gpu:4\nsrun torchrun --nproc_per_node=4 train.py\n"
    spawn = "python train.py --dist_url {url}\n"
    cases = (
        ({"train.sh": slurm.format(n=1)}, "train.py", False),
        ({"train.sh": slurm.format(n=2)}, "train.py", True),
        (
            {
                "run.sh": spawn.format(url="tcp://localhost:4444"),
                "cfg.py": "URL = 'tcp://localhost:4444'\n",
            },
            "train.py",
            False,
        ),
        (
            {
                "run.sh": spawn.format(url="tcp://10.0.0.1:4444"),
                "cfg.py": "URL = 'tcp://localhost:4444'\n",
            },
            "train.py",
            True,
        ),
        ({"readme.md": "torchrun --nproc_per_node=4 a/b/c/train.py\n"}, "a/b/c/train.py", False),
        (
            {"readme.md": "torchrun --nnodes=2 --nproc_per_node=4 a/b/c/train.py\n"},
            "a/b/c/train.py",
            True,
        ),
        # a master address on the loopback is this machine's (TOME's `--master_addr 127.0.0.8`, corpus 36)
        (
            {"run.sh": "torchrun --nproc_per_node=4 --master_addr 127.0.0.8 train.py\n"},
            "train.py",
            False,
        ),
        (
            {"run.sh": "torchrun --nproc_per_node=4 --master_addr 10.1.2.3 train.py\n"},
            "train.py",
            True,
        ),
    )
    for i, (pages, where, expected) in enumerate(cases):
        files = {**pages, where: train}
        found = check_in_project(tmp_path / str(i), files, where)
        assert ("DDL107" in found) == expected, (pages, found)
    # DDL143: a GPU pinned in an entry point whose trainer (another module) calls accelerate, which the
    # repository's scripts launch in two processes after `nohup`
    entry = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nfrom trainer import Trainer\nTrainer().train()\n"
    for launch, expected in (
        ("nohup accelerate launch --num_processes 2 train.py &\n", True),
        ("nohup accelerate launch --num_processes 1 train.py &\n", False),
    ):
        files = {".git/HEAD": "", "run.sh": launch, "train.py": entry}
        found = check_in_project(tmp_path / f"pin{expected}", files, "train.py")
        assert ("DDL143" in found) == expected, (launch, found)


def test_what_corpus_28_taught_the_accumulation_rule(tmp_path):
    """DDL119, corpus 28 (seen), both default-rule findings judged false: MuseTalk's accumulation steps its
    discriminator's optimizer, never prepared (its backward all-reduces nothing), and the repository's
    accelerate configs launch DeepSpeed alone; the RSNA solution's `i % cfg.grad_accumulation` is 1 in its only
    config and no option offers another count. A prepared optimizer, a multi-GPU config, or a count a
    command-line option offers (minimind-v's `--accumulation_steps`, default 1, judged true) are still found."""
    accelerate = (
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for step, x in enumerate(loader):\n    accelerator.backward(disc(x).mean())\n"
        "    if (step + 1) % accum == 0:\n        {stepped}.step()\n"
    )
    for stepped, expected in (("optimizer_d", []), ("optimizer", ["DDL119"])):
        found = codes_of(accelerate, stepped=stepped)
        assert [c for c in found if c == "DDL119"] == expected, (stepped, found)
    for kind, expected in (("DEEPSPEED", []), ("MULTI_GPU", ["DDL119"])):
        files = {
            ".git/HEAD": "",
            "configs/gpu.yaml": f"distributed_type: {kind}\nnum_processes: 2\n",
            "train.py": accelerate.format(stepped="optimizer"),
        }
        found = check_in_project(tmp_path / kind, files, "train.py")
        assert [c for c in found if c == "DDL119"] == expected, (kind, found)
    ddp = (
        DDP_HEAD + "from configs import cfg\nmodel = DDP(net)\nfor i, x in enumerate(loader):\n"
        "    model(x).sum().backward()\n    if i % cfg.grad_accumulation == 0:\n"
        "        optimizer.step()\n" + DDP_TAIL
    )
    for config, option, expected in (
        ("cfg.grad_accumulation = 1\n", "", []),
        ("cfg.grad_accumulation = 4\n", "", ["DDL119"]),
        (
            "cfg.grad_accumulation = 1\n",
            "p.add_argument('--grad_accumulation', default=1)\n",
            ["DDL119"],
        ),
        (
            "cfg.grad_accumulation = 1\n",
            "p.add_argument('--grad_accumulation', default=1)\n# torchrun train.py --grad_accumulation 8\n",
            ["DDL119"],
        ),
    ):
        files = {
            ".git/HEAD": "",
            "run.md": option,
            "configs/__init__.py": "class C: pass\ncfg = C()\n" + config,
            "opts.py": option,
            "train.py": ddp,
        }
        found = check_in_project(tmp_path / f"{config[-2]}{len(option)}", files, "train.py")
        assert [c for c in found if c == "DDL119"] == expected, (config, option, found)


def test_a_torch_scheduler_sized_in_optimizer_steps_and_prepared():
    """DDL155, corpus 28 (seen), two full mistakes: Voicebox's `CosineAnnealingLR(optim, T_max=num_train_steps)`
    and LTX-Video's schedulers, made by a `_create_scheduler` method, go through accelerator.prepare, which steps
    them once per process at every optimizer step: with N processes the schedule ends after 1/N of the run.
    Sized from the loader's length (the unsharded count, as accelerate intends) on every path, it is right."""
    script = (
        ACCELERATE_HEAD + "from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR\n"
        "class Trainer:\n    def __init__(self, model, optim, dataset, num_train_steps=None, epochs=None):\n"
        "        if epochs:\n            self.steps = len(dataset) // 8 * epochs\n"
        "        else:\n            self.steps = {other}\n"
        "        self.scheduler = {made}\n"
        "        self.model, self.optim, self.scheduler = accelerator.prepare(model, optim, self.scheduler)\n"
        "    def make(self, optim):\n        return LinearLR(optim, 1.0, 0.1, total_iters=self.steps)\n"
    )
    assert_found(
        "DDL155",
        script,
        ("made", "other"),
        (
            ("CosineAnnealingLR(optim, T_max=self.steps)", "num_train_steps", True),
            ("self.make(optim)", "num_train_steps", True),
            ("CosineAnnealingLR(optim, T_max=self.steps)", "len(dataset) // 8", False),
            (
                "torch.optim.lr_scheduler.StepLR(optim, step_size=self.steps)",
                "num_train_steps",
                False,
            ),
        ),
    )


def test_a_training_sampler_seeded_per_rank(tmp_path):
    """DDL164, corpus 28 (seen): the contrails solution's `DistributedSampler(..., shuffle=True, seed=world_size +
    local_rank)` in its data/loader.py: each rank strides through its own permutation, so the shares overlap. It
    is reported there and at the call of the loader's helper in the training module."""
    loader = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def define_loaders(dataset, world_size, local_rank):\n"
        "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=local_rank, shuffle=True, "
        "seed={seed})\n    return DataLoader(dataset, sampler=sampler)\n"
    )
    train = (
        "import torch.distributed as dist\nfrom data.loader import define_loaders\n"
        "dist.init_process_group('nccl')\nloader = define_loaders(dataset, 2, local_rank)\n"
        "for epoch in range(3):\n    loader.sampler.set_epoch(epoch)\ndist.destroy_process_group()\n"
    )
    for seed, expected in (("world_size + local_rank", True), ("42", False)):
        files = {
            ".git/HEAD": "",
            "data/__init__.py": "",
            "data/loader.py": loader.format(seed=seed),
            "train.py": train,
        }
        for name in ("data/loader.py", "train.py"):
            found = check_in_project(tmp_path / seed.replace(" ", ""), files, name)
            assert ("DDL164" in found) == expected, (seed, name, found)


def test_an_optimizer_stepped_under_accelerate_that_prepare_never_saw():
    """DDL165, corpus 28 (seen): MuseTalk prepares its generator and its optimizer, and steps its discriminators'
    optimizers, which it never prepares: those models train a separate copy in each process. An optimizer
    prepared under another name, bound again to a name, or stepped through a GradScaler is the prepared one."""
    script = (
        ACCELERATE_HEAD + "class Trainer:\n    def __init__(self, net, disc, optimizer, opt_d):\n"
        "        self.net, self.optim = accelerator.prepare(net, optimizer)\n"
        "        self.opt_d = opt_d\n    def step(self, x):\n"
        "        accelerator.backward(self.net(x).mean())\n        {step}\n"
    )
    assert_found(
        "DDL165",
        script,
        ("step",),
        (
            ("self.opt_d.step()", True),
            ("self.optim.step()", False),
            ("opt = self.optim\n        opt.step()", False),
            ("scaler.step(self.optim)", False),
            ("scaler.step(self.opt_d)", True),
        ),
    )


def test_a_main_process_flag_spelled_as_a_constant():
    """DDL144, corpus 28 (seen): LTX-Video's trainer binds `comfy_path` under `if IS_MAIN_PROCESS:` (a module
    constant, `os.environ.get("LOCAL_RANK", "0") == "0"`) and every process returns it: UnboundLocalError on the
    others. Bound on every process, it is not reported."""
    script = (
        ACCELERATE_HEAD + "import os\nIS_MAIN_PROCESS = os.environ.get('LOCAL_RANK', '0') == '0'\n"
        "def train():\n{bound}    if IS_MAIN_PROCESS:\n        path = save()\n"
        "    accelerator.end_training()\n    return path\n"
    )
    assert "DDL144" in codes_of(script, bound="")
    assert "DDL144" not in codes_of(script, bound="    path = None\n")


def test_an_accumulation_whose_backward_and_step_are_a_helpers_methods():
    """DDL119, corpus 28 (seen, a full mistake its reader listed): R-ESM calls
    `training_scheduler.loss_scale_and_backward(loss)` on every micro-batch of its DDP model and
    `training_scheduler.step_and_lr_schedule(...)` under `if (batch_idx + 1) % accum_iter == 0:`. A step under a
    test no accumulation count names (a log interval), or with no backward before it, is not one."""
    script = (
        DDP_HEAD + "model = DDP(net)\ndef train_one_epoch(model, loader, sched, accum_iter):\n"
        "    for batch_idx, x in enumerate(loader):\n        loss = model(x).mean()\n"
        "        {backward}\n        if (batch_idx + 1) % {count} == 0:\n"
        "            sched.step_and_lr_schedule(batch_idx)\n" + DDP_TAIL
    )
    assert_found(
        "DDL119",
        script,
        ("backward", "count"),
        (
            ("sched.loss_scale_and_backward(loss)", "accum_iter", True),
            ("sched.loss_scale_and_backward(loss)", "log_every", False),
            ("print(loss)", "accum_iter", False),
        ),
    )


def test_a_file_named_by_each_processs_device_is_its_own(tmp_path):
    """DDL107, corpus 28 (seen): MuseTalk's validation helper writes `sample_{step}_{accelerator.device}_....jpg`,
    one file a process (each its own GPU); a helper that writes one shared name is still one file for all."""
    helper = (
        "import cv2\ndef save_images(image, save_dir, step, accelerator):\n"
        "    cv2.imwrite(f'{{save_dir}}/sample_{{step}}{suffix}.jpg', image)\n"
    )
    train = (
        ACCELERATE_HEAD + "from utils import save_images\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for step, x in enumerate(loader):\n    save_images(model(x), 'out', step, accelerator)\n"
    )
    for suffix, expected in (("_{accelerator.device}", False), ("", True)):
        files = {".git/HEAD": "", "utils.py": helper.format(suffix=suffix), "train.py": train}
        found = check_in_project(tmp_path / str(expected), files, "train.py")
        assert ("DDL107" in found) == expected, (suffix, found)


def test_accelerates_own_clip_under_any_name():
    """DDL121, corpus 28 (seen): LTX-Video's trainer clips with `self._accelerator.clip_grad_norm_(...)`, which
    unscales first; torch's own clip in the same script is still reported."""
    script = (
        ACCELERATE_HEAD + "class Trainer:\n    def step(self, loss):\n"
        "        self._accelerator.backward(loss)\n        {clip}(self.params, 1.0)\n"
    )
    assert "DDL121" not in codes_of(script, clip="self._accelerator.clip_grad_norm_")
    assert "DDL121" in codes_of(script, clip="torch.nn.utils.clip_grad_norm_")


def test_an_attribute_bound_on_the_main_process_and_read_on_every_rank():
    """DDL144, corpus 29 (seen, a full mistake its reader listed): MAGVIT-2's trainer makes `self.ema_model` under
    `if self.is_main:` and then runs `self.ema_model.to(self.device)` on every process. Bound first on every rank
    (`self.ema_model = None`), read under the same check, or read in another method, it is not reported."""
    script = (
        ACCELERATE_HEAD
        + "class Trainer:\n    def __init__(self, model):\n        self.model = model\n"
        "{before}        if accelerator.is_main_process:\n            self.ema_model = EMA(model)\n"
        "{after}\n    def save(self):\n        torch.save(self.ema_model.state_dict(), 'ema.pt')\n"
    )
    assert_found(
        "DDL144",
        script,
        ("before", "after"),
        (
            ("", "        self.ema_model.to(accelerator.device)\n", True),
            (
                "        self.ema_model = None\n",
                "        self.ema_model.to(accelerator.device)\n",
                False,
            ),
            (
                "",
                "        if accelerator.is_main_process:\n            self.ema_model.to(accelerator.device)\n",
                False,
            ),
            ("", "        pass\n", False),
        ),
    )


def test_a_scheduler_stepped_by_the_main_process_alone_under_accelerate():
    """DDL135, corpus 29 (seen, a full mistake its reader listed): RPG steps its scheduler under `if
    accelerator.is_main_process:`; every other process keeps the first learning rate and the replicas drift.
    Stepped on every process, or an EMA updated by the main process alone, it is not reported."""
    script = (
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for x in loader:\n    accelerator.backward(model(x).mean())\n    optimizer.step()\n"
        "{step}"
    )
    assert_found(
        "DDL135",
        script,
        ("step",),
        (
            ("    if accelerator.is_main_process:\n        scheduler.step()\n", True),
            ("    scheduler.step()\n", False),
            ("    if accelerator.is_main_process:\n        ema.step()\n", False),
        ),
    )


def test_what_corpus_33_taught_the_unreduced_eval_rule(tmp_path):
    """DDL124, corpus 33 (seen): The-AI-Summer's pytorch-ddp evaluates on a DistributedSampler shard and prints
    `f'Accuracy of the network on the 10000 test images: {acc} %'`, where `setup_for_distributed(rank == 0)`
    (DeiT's, in a helper module) made print() rank 0's alone: rank 0's quarter reported as the whole test set.
    Quiet where print runs on every rank as it is, and where the accuracy is all-reduced first."""
    misc = (
        "import builtins\nimport torch.distributed as dist\ndef setup_for_distributed(is_master):\n"
        "    builtin_print = builtins.print\n    def print(*a, **k):\n        if is_master:\n"
        "            builtin_print(*a, **k)\n    builtins.print = print\n"
        "def init_distributed_mode():\n    dist.init_process_group('nccl')\n"
        "    setup_for_distributed(dist.get_rank() == 0)\n"
    )
    train = (
        "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader, "
        "DistributedSampler\nimport misc\n"
        "misc.init_distributed_mode()\ntest_loader = DataLoader(testset, sampler=DistributedSampler(testset))\n"
        "def test(net):\n    correct = total = 0\n    for x, y in test_loader:\n"
        "        correct += (net(x).argmax(1) == y).sum().item()\n        total += y.size(0)\n"
        "    acc = 100 * correct // total\n{reduce}"
        "    print(f'Accuracy of the network on the 10000 test images: {{acc}} %')\n"
        "test(net)\ndist.destroy_process_group()\n"
    )
    reduced = "    acc = torch.tensor(acc)\n    dist.all_reduce(acc)\n"
    for i, (helper, reduce, expected) in enumerate(
        (
            (misc, "", True),
            (misc.replace("setup_for_distributed(dist", "(dist"), "", False),
            (misc, reduced, False),
        )
    ):
        files = {".git/HEAD": "", "misc.py": helper, "train.py": train.format(reduce=reduce)}
        found = check_in_project(tmp_path / str(i), files, "train.py")
        assert ("DDL124" in found) == expected, (i, found)


def test_what_corpus_33_taught_the_accumulation_rule(tmp_path):
    """DDL119, corpus 33 (seen): soundstorm's `for _ in range(self.grad_accum_every):` with the parameter's
    default 1 nothing in the repository overrides, which both judges counted false (every micro-batch steps).
    Where the README's example passes another (phenaki's `grad_accum_every = 4`, judged true), it is found."""
    trainer = (
        ACCELERATE_HEAD
        + "class Trainer:\n    def __init__(self, model, opt, dl, grad_accum_every = 1):\n"
        "        self.grad_accum_every = grad_accum_every\n"
        "        self.model, self.opt, self.dl = accelerator.prepare(model, opt, dl)\n"
        "    def train_step(self):\n        for _ in range(self.grad_accum_every):\n"
        "            accelerator.backward(self.model(next(self.dl)))\n        self.opt.step()\n"
    )
    for readme, expected in (
        ("Trainer(model, opt, dl)\n", []),
        ("Trainer(model, opt, dl, grad_accum_every = 4)\n", ["DDL119"]),
    ):
        files = {".git/HEAD": "", "README.md": f"```python\n{readme}```\n", "trainer.py": trainer}
        found = check_in_project(tmp_path / str(len(expected)), files, "trainer.py")
        assert [c for c in found if c == "DDL119"] == expected, (readme, found)


def test_what_corpus_33_taught_of_a_rank_flag_and_a_wrapper_of_the_scripts_own():
    """Corpus 33 (seen), two findings both judges counted false: fsdp-for-transformer's `main_worker =
    (local_rank == 0 and rank == 0)` then `if args.save_model and main_worker: torch.save(...)` (DDL107: a flag
    whose name holds "main" but no rank word was not read as a rank test); beyond-nanogpt's own `class DDP`,
    whose `synchronize()` the script calls (DDL125 took it for torch's wrapper)."""
    flag = (
        DDP_HEAD + "main_worker = (local_rank == 0 and rank == 0)\nmodel = DDP(net)\n"
        "if args.save_model and {guard}:\n    torch.save(model.module.state_dict(), 'm.pt')\n"
        + DDP_TAIL
    )
    assert "DDL107" not in codes_of(flag, guard="main_worker")
    assert "DDL107" in codes_of(flag, guard="True")
    own = (
        DDP_HEAD.replace("from torch.nn.parallel import DistributedDataParallel as DDP\n", "")
        + "class DDP(torch.nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
        "        self.m = m\n    def synchronize(self):\n        pass\n"
        "ddp_model = DDP(net)\nddp_model.synchronize()\n" + DDP_TAIL
    )
    assert "DDL125" not in codes_of(own)
    torch_ddp = DDP_HEAD + "ddp_model = DDP(net)\nddp_model.synchronize()\n" + DDP_TAIL
    assert "DDL125" in codes_of(torch_ddp)


def test_a_prepared_vae_whose_state_dict_is_bound_then_saved():
    """DDL106, corpus 33 (seen): phenaki's trainer prepares `self.vae` with accelerate, then `state_dict =
    self.vae.state_dict()` and `torch.save(state_dict, model_path)`: the wrapper's `module.` keys, which its own
    load() (into the unwrapped VAE) cannot take. A model prepared under another name than "model", and a state
    dict bound to a name before the save, are read; the unwrapped model's is not reported."""
    trainer = (
        ACCELERATE_HEAD + "class Trainer:\n    def __init__(self, vae, optim, dl):\n"
        "        self.vae, self.optim, self.dl = accelerator.prepare(vae, optim, dl)\n"
        "    def save(self, path):\n        state_dict = {owner}.state_dict()\n"
        "        torch.save(state_dict, path)\n"
    )
    assert "DDL106" in codes_of(trainer, owner="self.vae")
    assert "DDL106" not in codes_of(trainer, owner="accelerator.unwrap_model(self.vae)")
    # champ (corpus 29): a helper's parameter, handed the unwrapped model by every call of it
    helper = (
        ACCELERATE_HEAD + "model, opt = accelerator.prepare(model, opt)\n"
        "def save_checkpoint(model, path):\n    state_dict = model.state_dict()\n"
        "    torch.save(state_dict, path)\nsave_checkpoint({given}, 'm.pt')\n"
    )
    assert "DDL106" not in codes_of(helper, given="accelerator.unwrap_model(model)")
    assert "DDL106" in codes_of(helper, given="model")


def test_a_checkpoint_loaded_on_rank_0_alone_after_the_wrap():
    """DDL178, corpus 33 (seen): pytorch-ddp-example's `load_model(model=model, ...)`, called after the DDP wrap,
    loads the checkpoint under `if dist.get_rank() == 0:` and training goes on: the other ranks keep their
    fresh weights. Quiet where the best weights are loaded back on rank 0 for its final report (corpus 26's
    Person_reID and group-activity trainers), and where the load comes before the wrap."""
    helper = (
        DDP_HEAD + "def load_model(model, path):\n    if dist.get_rank() == 0:\n"
        "        model.load_state_dict(torch.load(path, map_location='cpu'))\n"
        "model = DDP(Net())\nload_model(model=model, path='last.pt')\n{after}" + DDP_TAIL
    )
    assert "DDL178" in codes_of(helper, after="train(model, loader)\n")
    assert "DDL178" not in codes_of(helper, after="report(model)\n")
    early = helper.replace("model = DDP(Net())\n", "model = Net()\n").replace(
        "load_model(model=model, path='last.pt')\n",
        "load_model(model=model, path='last.pt')\nmodel = DDP(model)\n",
    )
    assert "DDL178" not in codes_of(early, after="train(model, loader)\n")


def test_what_corpus_34_taught_of_flags_and_launch_pages(tmp_path):
    """Corpus 34 (seen), default-rule findings both judges counted false. DDL102 under `if args.use_amp:`, a flag
    this file declares off and its own runs (scripts/train.sh) never pass, while predict.py declares its own and
    another script passes it there (Time-LLM; SimXNS's `--fp16` likewise). DDL101 from a vendored subproject's
    page (StableAnimator's insightface docs), whose `torch.distributed.launch ... train.py` runs its own
    train.py, where the repository's own scripts run this one with accelerate."""
    train = (
        "import argparse\nimport torch\nimport torch.distributed as dist\n"
        "p = argparse.ArgumentParser()\np.add_argument('--use_amp', action='store_true', default=False)\n"
        "args = p.parse_args()\ndist.init_process_group('nccl')\nif args.use_amp:\n"
        "    scaler = torch.cuda.amp.GradScaler()\ndist.destroy_process_group()\n"
    )
    predict = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--use_amp', action='store_true')\n"
    for run, expected in (("", False), (" --use_amp", True)):
        files = {
            ".git/HEAD": "",
            "train.py": train,
            "predict.py": predict,
            "scripts/train.sh": f"accelerate launch --num_processes 2 train.py{run}\n",
            "scripts/predict.sh": "python predict.py --use_amp\n",
        }
        found = check_in_project(tmp_path / f"amp{expected}", files, "train.py")
        assert ("DDL102" in found) == expected, (run, found)
    flag = (
        "import argparse\nimport os\np = argparse.ArgumentParser()\n"
        "p.add_argument('--local_rank', type=int, default=-1)\nargs = p.parse_args()\n"
        "env_local_rank = int(os.environ.get('LOCAL_RANK', -1))\n"
        "if env_local_rank != -1 and env_local_rank != args.local_rank:\n"
        "    args.local_rank = env_local_rank\n"
    )
    vendored = "python -m torch.distributed.launch --nproc_per_node=8 train.py configs/ms1m\n"
    for pages, expected in (
        (
            {
                "vendor/helper/docs/speed.md": vendored,
                "command_train.sh": "accelerate launch train.py\n",
            },
            False,
        ),
        ({"command_train.sh": vendored}, True),
    ):
        files = {".git/HEAD": "", "train.py": flag, **pages}
        found = check_in_project(tmp_path / f"launch{expected}", files, "train.py")
        assert ("DDL101" in found) == expected, (pages, found)


def test_what_corpus_34_taught_of_seeds_logs_and_loads(tmp_path):
    """Corpus 34 (seen), findings both judges counted false. DDL142: `torch.manual_seed(42)` inside the
    log_validation only the main process calls (AniPortrait, JoyHallo). DDL152 and DDL142: `if args.seed is not
    None: set_seed(args.seed)` where `--seed` defaults to None and the repository's run of the script passes
    none (S3Diff, StableAnimator): no rank is seeded. DDL107: a log every rank opens for appending, to which only
    rank 0 logs (rDL-SIM). DDL163: a load helper every call hands `model.module` (EVP)."""
    seeded = (
        ACCELERATE_HEAD + "import argparse\nfrom accelerate.utils import set_seed\n"
        "from torchvision import transforms\np = argparse.ArgumentParser()\n"
        "p.add_argument('--seed', type=int, default=None)\nargs = p.parse_args()\n"
        "aug = transforms.RandomResizedCrop(64)\nif args.seed is not None:\n    set_seed(args.seed)\n"
        "model, opt, loader = accelerator.prepare(model, opt, loader)\nfor x in loader:\n"
        "    noise = torch.randn_like(x)\n    accelerator.backward(model(aug(x) + noise).mean())\n"
        "    opt.step()\n"
    )
    for run, expected in (("", set()), (" --seed 42", {"DDL142", "DDL152"})):
        files = {
            ".git/HEAD": "",
            "train.py": seeded,
            "run.sh": f"accelerate launch train.py{run}\n",
        }
        found = set(check_in_project(tmp_path / f"seed{len(run)}", files, "train.py"))
        assert found & {"DDL142", "DDL152"} == expected, (run, found)
    validation = (
        DDP_HEAD + "from torchvision import transforms\naug = transforms.RandomResizedCrop(64)\n"
        "def log_validation(model):\n    torch.manual_seed(42)\n    sample(model)\n"
        "model = DDP(net)\nif dist.get_rank() == 0:\n    log_validation(model)\n" + DDP_TAIL
    )
    assert "DDL142" not in codes_of(validation)
    assert "DDL142" in codes_of(validation.replace("if dist.get_rank() == 0:\n    ", ""))
    log = (
        DDP_HEAD
        + "import logging\nh = logging.FileHandler('log.txt')\nlogging.getLogger().addHandler(h)\n"
        "if dist.get_rank() == 0:\n    logging.info('start')\n{more}" + DDP_TAIL
    )
    assert "DDL107" not in codes_of(log, more="")
    assert "DDL107" in codes_of(log, more="logging.info('every rank')\n")
    helper = (
        DDP_HEAD + "def load_model(path, model):\n    model.load_state_dict(torch.load(path))\n"
        "def save(model):\n    torch.save(model.module.state_dict(), 'm.pt')\n"
        "model = DDP(net)\nload_model('m.pt', {given})\nsave(model)\n" + DDP_TAIL
    )
    assert "DDL163" not in codes_of(helper, given="model.module")


def test_a_value_only_rank_0_updates_then_every_rank_tests():
    """DDL179, corpora 33 and 34 (seen): DUSTGaussian's `global_step += 1` under `if args.local_rank == 0:`,
    then `if global_step == 3000: model.switch_state_machine(...)` on every rank. Quiet where the test only
    prints, and where the guard holds the letters of "rank" but tests no rank (SimXNS's
    `iteration_reranker_step`) or compares strings (SwinTrack's `'--distributed_node_rank'`)."""
    script = (
        DDP_HEAD
        + "global_step = 1\nfor batch in loader:\n    if global_step == 3000:\n        {act}\n"
        "    train_step(batch)\n    if {guard}:\n        global_step += 1\n" + DDP_TAIL
    )
    bad = {"act": "model.switch_state_machine('joint')", "guard": "args.local_rank == 0"}
    assert "DDL179" in codes_of(script, **bad)
    assert "DDL179" not in codes_of(script, **{**bad, "act": "print(global_step, loss.item())"})
    for guard in (
        "step % args.iteration_step > args.iteration_reranker_step",
        "arg in ('--node_rank',)",
    ):
        assert "DDL179" not in codes_of(script, **{**bad, "guard": guard})


def test_an_evaluation_piled_up_from_a_sharded_loader():
    """DDL124, corpus 31 (seen): the loader's shard shows only in how it is made or fed its epoch (dtmol's
    `self.eval_ds.dataloader.sampler.set_epoch(epoch)`, LESS's helper that gives every split a
    DistributedSampler), and the per-batch values pile up in Python lists under names no metric word marks
    (`rmsds += rmsd.tolist()`, `iou_cum += iou`), then rank 0 logs their mean. Quiet where the piles are
    all-reduced, where every rank logs with its rank in the line, and where a later message reuses the name."""
    script = (
        DDP_HEAD + "import numpy as np\nmodel = DDP(net)\n"
        "def get_loader(dataset, split):\n    sampler = DistributedSampler(dataset)\n"
        "    return DataLoader(dataset, sampler=sampler)\n"
        "train_loader = get_loader(train_set, 'train')\nval_loader = get_loader(val_set, 'val')\n"
        "def evaluate(model, val_loader):\n    rmsds, iou_cum = [], 0\n    for batch in val_loader:\n"
        "        rmsd, iou = model(batch)\n        rmsds += rmsd.tolist()\n        iou_cum += iou\n"
        "    mean_rmsd = np.mean(rmsds)\n{reduce}    msg = f'mean rmsd {{mean_rmsd:.4f}}'\n"
        "    if dist.get_rank() == 0:\n        logger.info({shown})\n"
        "for epoch in range(10):\n    train_loader.sampler.set_epoch(epoch)\n    evaluate(model, val_loader)\n"
        + DDP_TAIL
    )
    bad = {"reduce": "", "shown": "msg"}
    assert "DDL124" in codes_of(script, **bad)
    assert "DDL124" in codes_of(script, **{**bad, "shown": "iou_cum / len(val_loader)"})
    reduced = "    t = torch.tensor([mean_rmsd])\n    dist.all_reduce(t)\n"
    assert "DDL124" not in codes_of(script, **{**bad, "reduce": reduced})
    assert "DDL124" not in codes_of(script, **{**bad, "shown": "f'rank {dist.get_rank()}: {msg}'"})
    rebound = "    msg = 'evaluated'\n"
    assert "DDL124" not in codes_of(
        script.replace("    if dist.get_rank()", rebound + "    if dist.get_rank()"), **bad
    )
    # a helper whose sampler is the training split's alone: the validation loader is whole on every rank
    whole = script.replace(
        "    sampler = DistributedSampler(dataset)\n",
        "    sampler = DistributedSampler(dataset) if split == 'train' else None\n",
    )
    assert "DDL124" not in codes_of(whole, **bad)
    # the epoch given to the evaluation loader's own sampler says it is sharded, with no helper in sight
    epoched = script.replace(
        "    sampler = DistributedSampler(dataset)\n", "    sampler = make_sampler(dataset)\n"
    )
    assert "DDL124" not in codes_of(epoched, **bad)
    epoched = epoched.replace(
        "    evaluate(model", "    val_loader.sampler.set_epoch(epoch)\n    evaluate(model"
    )
    assert "DDL124" in codes_of(epoched, **bad)


def test_a_set_epoch_made_once_before_a_loop_of_steps():
    """DDL105, corpus 31 (seen): gcr_lerobot_2 sets the epoch only in its resume branch, then draws every batch
    with next() from a cycled loader in `while step < cfg.steps:`: every pass after the first repeats the first
    order. Its `list(sampler)` (reading the order) no longer hides the sampler. Quiet where the loop over steps
    sets the epoch when one rolls over, and where the set_epoch is a function's that iterates the loader itself
    (its caller runs it once an epoch)."""
    script = (
        DDP_HEAD + "model = DDP(net)\ndef train(cfg, step):\n"
        "    sampler = DistributedSampler(dataset, shuffle=True)\n"
        "    loader = DataLoader(dataset, sampler=sampler)\n    it = cycle(loader)\n"
        "    if cfg.resume:\n        sampler.set_epoch(0)\n        order = list(sampler)\n"
        "    while step < cfg.steps:\n        batch = next(it)\n{roll}"
        "        F.mse_loss(model(batch), batch).backward()\n        step += 1\n" + DDP_TAIL
    )
    assert codes_of(script, roll="").count("DDL105") == 1
    roll = (
        "        if step % len(loader) == 0:\n            sampler.set_epoch(step // len(loader))\n"
    )
    assert "DDL105" not in codes_of(script, roll=roll)
    per_epoch = (
        DDP_HEAD + "model = DDP(net)\nsampler = DistributedSampler(dataset)\n"
        "loader = DataLoader(dataset, sampler=sampler)\n"
        "def train_one_epoch(epoch):\n    sampler.set_epoch(epoch)\n    for batch in loader:\n"
        "        F.mse_loss(model(batch), batch).backward()\n"
        "for epoch in range(10):\n    train_one_epoch(epoch)\n" + DDP_TAIL
    )
    assert "DDL105" not in codes_of(per_epoch)


def test_a_sampler_helper_whose_loader_is_handed_on_in_a_repository_that_never_sets_an_epoch(
    tmp_path,
):
    """DDL105, corpus 29 (seen): DiffuSeq's load_data_text builds a DistributedSampler and returns an endless
    generator over its loader, which train.py hands to a training class; no Python file of the repository calls
    set_epoch. Reported at the call, with where the sampler is. Quiet where any file of the repository sets an
    epoch (the class may), and in a data module that returns the loader (OpenSTL's, corpus 27)."""
    data = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def load_data(dataset, split='train'):\n    sampler = DistributedSampler(dataset)\n"
        "    loader = DataLoader(dataset, sampler=sampler)\n    while True:\n        yield from loader\n"
    )
    script = (
        DDP_HEAD + "from data import load_data\nfrom loop import TrainLoop\nmodel = DDP(net)\n"
        "data = load_data(train_set, split='train')\nTrainLoop(model=model, data=data).run_loop()\n"
        + DDP_TAIL
    )
    for i, (loop, expected) in enumerate(
        (
            ("def step(data): next(data)\n", True),
            ("def step(data): data.sampler.set_epoch(1)\n", False),
        )
    ):
        module = "from data import load_data\ndef train_data(ds):\n    data = load_data(ds)\n    return data\n"
        files = {
            ".git/HEAD": "",
            "data.py": data,
            "loop.py": loop,
            "train.py": script,
            "datamodule.py": module,
        }
        found = check_in_project(tmp_path / f"d{i}", files, "train.py", where=True)
        assert ((10, "DDL105") in found) is expected, (loop, found)
        # a data module that hands the loader back to its caller runs no process group itself
        assert "DDL105" not in check_in_project(tmp_path / f"d{i}", files, "datamodule.py")


def test_a_batch_skipped_in_a_loop_handed_a_ddp_model():
    """DDL134, corpus 27 (seen): IMS-Toucan's train loop is handed `net`, and only `isinstance(net,
    DistributedDataParallel)` shows its caller wrapped it; a NaN loss skips the batch on that rank alone."""
    loop = (
        "import torch\n\ndef train_loop(net, loader, optimizer):\n"
        "    if {test}:\n        model = net.module\n    else:\n        model = net\n"
        "    for batch in loader:\n        loss = net(batch)\n"
        "        if torch.isnan(loss):\n            continue\n"
        "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
    )
    assert "DDL134" in codes_of(
        loop, test="isinstance(net, torch.nn.parallel.DistributedDataParallel)"
    )
    assert "DDL134" not in codes_of(loop, test="hasattr(net, 'module')")


def test_a_save_guarded_in_one_place_and_made_on_every_rank_in_another():
    """DDL187, corpus 32 (seen): scope-recommendation saves `self.actor_critic.save_parameters(...)` under
    `if self.accelerator.is_main_process:` after each epoch, then again for the best loss with no check. Quiet
    for the saves every process must make (accelerate's save_state), for a helper that checks the rank itself,
    and for a file named by the rank."""
    script = (
        ACCELERATE_HEAD + "{helper}for epoch in range(10):\n    loss = train_one_epoch(model)\n"
        "    if accelerator.is_main_process:\n        {call}('epoch')\n"
        "    if loss < best:\n        best = loss\n        {call}({path})\n"
    )
    bad = {"helper": "", "call": "self.actor_critic.save_parameters", "path": "'best'"}
    assert "DDL187" in codes_of(script, **bad)
    assert "DDL187" not in codes_of(script, **{**bad, "call": "accelerator.save_state"})
    assert "DDL187" not in codes_of(script, **{**bad, "path": "f'best{accelerator.process_index}'"})
    writes = "def save_model(path):\n    torch.save(model.state_dict(), path)\n"
    checks = "def save_model(path):\n    if accelerator.is_main_process:\n        torch.save(model, path)\n"
    assert "DDL187" in codes_of(script, **{**bad, "helper": writes, "call": "save_model"})
    assert "DDL187" not in codes_of(script, **{**bad, "helper": checks, "call": "save_model"})


def test_a_run_folder_named_by_each_ranks_clock_that_rank_0_makes_and_every_rank_uses(tmp_path):
    """DDL188, corpus 37 (seen): BDCI's create_logger names the run folder `time.strftime('%Y-%m-%d-%H-%M')`,
    makes it on the main process and opens the FileHandler in it on every rank; CryoET's averaged checkpoint,
    named from `datetime.now()`, is written on rank 0 and loaded on every rank after a barrier. Reported at the
    stamp, and at the call of a helper that does it. Quiet where rank 0's stamp is broadcast, where the path
    names the rank, and where only rank 0 uses it."""
    script = (
        DDP_HEAD + "import os\nfrom datetime import datetime\n"
        "def run(args):\n    stamp = datetime.now().strftime('%y%m%d_%H%M')\n"
        "    path = os.path.join(args.out, f'{{stamp}}_avg.pt')\n"
        "    if dist.get_rank() == 0:\n        average_checkpoints(args.best, output_path=path)\n"
        "    dist.barrier()\n    {use}\n" + DDP_TAIL
    )
    assert "DDL188" in codes_of(script, use="model.load_state_dict(torch.load(path))")
    assert "DDL188" not in codes_of(script, use="print(path)")
    ranked = "torch.load(path + str(dist.get_rank()))"
    assert "DDL188" not in codes_of(script, use=ranked)
    sent = "obj = [path]\n    dist.broadcast_object_list(obj, src=0)\n    torch.load(obj[0])"
    assert "DDL188" not in codes_of(script, use=sent)
    helper = (
        "import os\nimport time\nimport logging\nimport torch.distributed as dist\n"
        "def create_logger(config):\n"
        "    output_path = os.path.join(config.output_dir, time.strftime('%Y-%m-%d-%H-%M'))\n"
        "    if dist.get_rank() == 0:\n        os.makedirs(output_path, exist_ok=True)\n"
        "    dist.barrier()\n"
        "    return logging.FileHandler(os.path.join(output_path, 'train.log'))\n"
    )
    main = DDP_HEAD + "import utils\nhandler = utils.create_logger(config)\n" + DDP_TAIL
    files = {".git/HEAD": "", "utils.py": helper, "train.py": main}
    found = check_in_project(tmp_path / "bdci", files, "train.py", where=True)
    assert (8, "DDL188") in found, found


def test_a_lightning_test_hook_is_not_a_validation_metric(tmp_path):
    """DDL162, corpus 37 (seen): student_project's and adversarial_insertions' test_epoch_end logs, whose tests
    the repositories run with `gpus=1` (Lightning advises trainer.test on one device): six false findings.
    The validation hooks of the same modules are still reported, and a test hook where the repository tests with
    the trainer it fits with (pdearena's, corpus 29: judged true)."""
    module = (
        "import pytorch_lightning as pl\nclass Lit(pl.LightningModule):\n"
        "    def {hook}(self, outputs):\n        self.log('my_metric', sum(outputs) / len(outputs))\n"
        "trainer = pl.Trainer(gpus=2, accelerator='ddp')\n"
    )
    assert "DDL162" in codes_of(module, hook="validation_epoch_end")
    assert "DDL162" not in codes_of(module, hook="test_epoch_end")
    assert "DDL162" not in codes_of(module, hook="on_test_epoch_end")
    # pdearena (corpus 29, seen): its train script tests with the DDP trainer it fitted with
    for i, (tester, expected) in enumerate(
        (
            ("trainer = pl.Trainer(gpus=1)\ntrainer.test(model)\n", False),
            ("cli.trainer.test(ckpt_path='best')\n", True),
        )
    ):
        files = {
            ".git/HEAD": "",
            "model.py": module.format(hook="test_epoch_end"),
            "test.py": tester,
        }
        found = check_in_project(tmp_path / f"t{i}", files, "model.py")
        assert ("DDL162" in found) is expected, (tester, found)


def test_a_save_through_a_module_helper_that_writes_on_the_main_process_alone(tmp_path):
    """DDL187, corpus 37 (seen): PhysioNet's `misc.save_model(...)`, guarded in one place and not in another,
    writes through `save_on_master`, which checks the rank itself. A module's helper is read as a helper."""
    misc = "import torch\ndef save_model(args, model):\n    {body}\n"
    script = (
        DDP_HEAD + "import misc\nfor epoch in range(3):\n    if dist.get_rank() == 0:\n"
        "        misc.save_model(args, model)\nmisc.save_model(args, model)\n" + DDP_TAIL
    )
    for i, (body, expected) in enumerate(
        (("torch.save(model.state_dict(), 'm.pt')", True), ("save_on_master(model, 'm.pt')", False))
    ):
        files = {".git/HEAD": "", "misc.py": misc.format(body=body), "train.py": script}
        found = check_in_project(tmp_path / f"m{i}", files, "train.py")
        assert ("DDL187" in found) is expected, (body, found)


def test_a_table_rank_0_writes_and_every_rank_reads_without_a_barrier():
    """DDL122, corpus 37 (seen): the RSNA solution's `oof_df.to_csv(path)` under `if dist.get_rank() == 0:`,
    then `pd.read_csv(path)` on every rank with no barrier between. Quiet with the barrier."""
    script = (
        DDP_HEAD + "import pandas as pd\nimport numpy as np\nif dist.get_rank() == 0:\n"
        "    {write}\n{barrier}df = {read}\n" + DDP_TAIL
    )
    for write, read in (
        ("oof.to_csv('oof.csv', index=False)", "pd.read_csv('oof.csv')"),
        ("np.save('emb.npy', emb)", "np.load('emb.npy')"),
    ):
        assert "DDL122" in codes_of(script, write=write, read=read, barrier="")
        assert "DDL122" not in codes_of(script, write=write, read=read, barrier="dist.barrier()\n")


def test_timms_own_distributed_sampler_never_given_its_epoch():
    """DDL105, corpus 37 (seen): accelerate_timm's `timm.data.create_loader(..., is_training=True,
    distributed=accelerator.use_distributed)` builds timm's own DistributedSampler, behind a PrefetchLoader that
    accelerator.prepare leaves as it is; the script never sets an epoch. Quiet where it does
    (`loader.sampler.set_epoch(epoch)`, timm's own train.py), for the evaluation loader, and for a loader
    without the prefetcher, which prepare() takes over."""
    script = (
        ACCELERATE_HEAD + "import timm\n"
        "loader = timm.data.create_loader(ds, is_training={training}, use_prefetcher={prefetch},\n"
        "    distributed=accelerator.use_distributed)\nmodel, opt, loader = accelerator.prepare(model, opt, loader)\n"
        "for epoch in range(3):\n{epoch}    for x in loader:\n        accelerator.backward(model(x))\n"
    )
    set_it = "    loader.sampler.set_epoch(epoch)\n"
    assert_found(
        "DDL105",
        script,
        ("training", "prefetch", "epoch"),
        (
            ("True", "True", "", True),
            ("True", "True", set_it, False),
            ("False", "True", "", False),
            ("True", "False", "", False),
        ),
    )


def test_a_metric_fed_a_gathered_tensor_and_a_local_one():
    """DDL190, corpus 37 (seen): AnswerExtract gathers the labels (`labels_gathered = accelerator.gather(labels)`)
    and hands them with this rank's predictions to its metric helper. Quiet where the other value is made from
    the gathered one (dynamic_beta's `tau = ema.update_tau(margin_global)`, corpus 35), where both are gathered,
    and for a print."""
    script = (
        ACCELERATE_HEAD + "for batch in loader:\n    predictions = {made}\n"
        "    labels_gathered = accelerator.gather(batch['labels'])\n{more}"
        "    {call}(predictions, labels_gathered)\n"
    )
    made = "model.crf.decode(model(batch))"
    derived = "    predictions = ema.update_tau(labels_gathered)\n"
    both = "    predictions = accelerator.gather(predictions)\n"
    assert_found(
        "DDL190",
        script,
        ("made", "more", "call"),
        (
            (made, "", "get_labels", True),
            (made, derived, "get_labels", False),
            (made, both, "get_labels", False),
            (made, "", "print", False),
        ),
    )


def test_a_reduction_in_a_function_nothing_calls_is_no_reduction():
    """DDL127, corpus 37 (seen): the landmark retrieval's train_demo.py defines `reduce_mean` (an all_reduce)
    and never calls it; its validation shard's loss is never reduced, so no padded repeat enters a reduction.
    Reported once the function is called."""
    script = (
        DDP_HEAD + "def reduce_mean(t, n):\n    dist.all_reduce(t)\n    return t / n\n"
        "val_sampler = DistributedSampler(val_set)\nval_loader = DataLoader(val_set, sampler=val_sampler)\n"
        "for x, y in val_loader:\n    loss = F.mse_loss(model(x), y)\n{use}" + DDP_TAIL
    )
    assert "DDL127" not in codes_of(script, use="")
    assert "DDL127" in codes_of(script, use="    loss = reduce_mean(loss, 2)\n")


def test_an_evaluation_function_returning_its_shards_score_to_a_rank_0_log():
    """DDL124, corpus 37 (seen): AI-system-work-4's `evaluate(model, dataloader, ...)` piles its predictions and
    returns a BLEU over them; the training loop hands it the DistributedSampler's val_loader and prints the score
    under `if rank == 0:`. Quiet in the --eval_only branch, whose val_loader is whole, and where the score is
    all-reduced."""
    script = (
        DDP_HEAD + "import numpy as np\ndef evaluate(model, dataloader):\n    scores = []\n"
        "    for batch in dataloader:\n        scores.append(model(batch).item())\n"
        "    return float(np.mean(scores))\n"
        "def main(rank):\n    model = DDP(net)\n{loader}"
        "    score = evaluate(model, val_loader)\n{reduce}    if rank == 0:\n        print(score)\n"
        + DDP_TAIL
    )
    sharded = "    val_loader = DataLoader(val_set, sampler=DistributedSampler(val_set))\n"
    whole = sharded + "    val_loader = DataLoader(val_set, batch_size=8)\n"
    reduced = "    t = torch.tensor(score)\n    dist.all_reduce(t)\n"
    assert_found(
        "DDL124",
        script,
        ("loader", "reduce"),
        ((sharded, "", True), (whole, "", False), (sharded, reduced, False)),
    )


def test_an_accelerator_attribute_accelerate_does_not_have():
    """DDL191, corpus 38 (seen): xRAG's `range(accelerator.num_process)` (the attribute is num_processes), which
    raises AttributeError at the first multi-GPU step. Quiet for the real names, for an attribute the script
    sets on the accelerator itself, and for an object named accelerator that is no Accelerator."""
    script = (
        ACCELERATE_HEAD + "{own}if accelerator.use_distributed:\n"
        "    parts = [x for _ in range(accelerator.{name})]\n"
    )
    assert "DDL191" in codes_of(script, own="", name="num_process")
    assert "DDL191" not in codes_of(script, own="", name="num_processes")
    assert "DDL191" not in codes_of(script, own="accelerator.num_process = 2\n", name="num_process")
    other = script.replace("accelerator = Accelerator()", "accelerator = args.accelerator")
    assert "DDL191" not in codes_of(other, own="", name="num_process")


def test_what_corpus_38_taught_about_single_node_launches_and_rank_guards(tmp_path):
    """Corpus 38 (seen): MoPro's README launches pytorch/examples-style, `--multiprocessing-distributed
    --world-size 1 --rank 0` (the world size counts nodes), so its `args.rank % ngpus_per_node == 0` save is the
    job's one writer (DDL107, judged false); PersonReID-YouReID guards its saves with `'RANK' not in
    os.environ or int(os.environ['RANK']) == 0`, one process or rank 0 (DDL107 and DDL137, judged false)."""
    script = (
        DDP_HEAD
        + "import torch.multiprocessing as mp\ndef main_worker(gpu, ngpus_per_node, args):\n"
        "    model = DDP(net)\n    if args.rank % ngpus_per_node == 0:\n"
        "        torch.save(model.module.state_dict(), 'checkpoint.pt')\n"
        "mp.spawn(main_worker, nprocs=4, args=(4, args))\n" + DDP_TAIL
    )
    for i, (size, host, expected) in enumerate(
        (("1", "localhost", False), ("2", "10.1.1.20", True))
    ):
        readme = (
            f"python train.py --dist-url 'tcp://{host}:10001' --multiprocessing-distributed "
            f"--world-size {size} --rank 0\n"
        )
        files = {".git/HEAD": "", "train.py": script, "README.md": readme}
        found = check_in_project(tmp_path / f"n{i}", files, "train.py")
        assert ("DDL107" in found) is expected, (size, found)
    guarded = (
        DDP_HEAD
        + "import os\nif {test}:\n    os.makedirs('out')\n    torch.save(state, 'out/m.pt')\n"
        + DDP_TAIL
    )
    one_or_main = "'RANK' not in os.environ or int(os.environ['RANK']) == 0"
    assert not {"DDL107", "DDL137"} & set(codes_of(guarded, test=one_or_main))
    assert {"DDL107", "DDL137"} <= set(codes_of(guarded, test="'RANK' in os.environ"))


def test_a_method_the_constructor_calls_before_its_wrap_reads_the_plain_model():
    """DDL125, corpus 38 (seen): OpenTransformer's Trainer.__init__ calls `self.load_model(...)`, which reads
    `self.model.encoder`, before it wraps `self.model` in DDP: the read is the plain model's. Reported where
    another method (the training step) reads it after the wrap."""
    trainer = (
        DDP_HEAD
        + "class Trainer:\n    def __init__(self, model, path):\n        self.model = model\n"
        "        {load}        self.model = DDP(self.model)\n"
        "    def load_model(self, path):\n        self.model.encoder.load_state_dict(torch.load(path))\n"
        "{later}" + DDP_TAIL
    )
    early = {"load": "self.load_model(path)\n", "later": ""}
    assert "DDL125" not in codes_of(trainer, **early)
    later = "    def resume(self, path):\n        self.load_model(path)\n"
    assert "DDL125" in codes_of(trainer, **{**early, "later": later})


def test_a_trainer_module_whose_importer_sets_the_device(tmp_path):
    """DDL150, corpus 38 (seen): OpenTransformer's trainer.py joins the group and wraps in DDP, and its
    `.cuda()` follows `torch.cuda.set_device(local_rank)` in run.py, which imports the trainer and builds it
    after. Reported where no module of the repository that imports it sets the device."""
    trainer = (
        DDP_HEAD + "class Trainer:\n    def __init__(self, model):\n"
        "        self.model = DDP(model.cuda())\n"
    )
    for i, (run, expected) in enumerate(
        (
            (
                "import torch\nfrom pkg.trainer import Trainer\ntorch.cuda.set_device(0)\nTrainer(m)\n",
                False,
            ),
            ("import torch\nfrom pkg.trainer import Trainer\nTrainer(m)\n", True),
        )
    ):
        files = {".git/HEAD": "", "pkg/__init__.py": "", "pkg/trainer.py": trainer, "run.py": run}
        found = check_in_project(tmp_path / f"t{i}", files, "pkg/trainer.py")
        assert ("DDL150" in found) is expected, (run, found)


SHUFFLING_SAMPLER = (  # an endless sampler of the project that reshuffles with random's global stream
    "import random\nclass EndlessSampler:\n    def __init__(self, dataset):\n"
    "        self.order = list(range(len(dataset)))\n        random.shuffle(self.order)\n"
    "    def __iter__(self):\n        while True:\n            random.shuffle(self.order)\n"
    "            yield from self.order\n"
    "def get_sampler(dataset):\n    return EndlessSampler(dataset)\n"
)


def test_an_unseeded_sampler_a_helper_of_another_module_returns_under_prepare(tmp_path):
    """DDL193, corpora 32 and 36 (seen): mini_music_tagging's and Speech_flow's InfiniteSampler shuffle with
    random's stream in each process, and accelerator.prepare deals the loader's batches out by process; the
    script seeds nothing, so each process draws its own order. Reported at the call that makes the sampler,
    through a helper of another module too; not where the script seeds the stream alike first."""
    train = (
        ACCELERATE_HEAD + "from torch.utils.data import DataLoader\n{seed}"
        "from samplers import {name}\nsampler = {name}(data)\n"
        "loader = DataLoader(data, batch_size=8, sampler=sampler)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
    )
    for i, name in enumerate(("EndlessSampler", "get_sampler")):
        for seed, expected in (
            ("", True),
            ("from accelerate.utils import set_seed\nset_seed(0)\n", False),
        ):
            files = {
                ".git/HEAD": "",
                "samplers.py": SHUFFLING_SAMPLER,
                "train.py": train.format(seed=seed, name=name),
            }
            found = check_in_project(tmp_path / f"t{i}{expected}", files, "train.py", where=True)
            assert ((7 + seed.count("\n"), "DDL193") in found) is expected, (name, seed, found)


def test_a_dataset_shuffled_in_its_constructor_under_a_distributed_sampler():
    """DDL193: a dataset whose __init__ shuffles its file list with numpy's global stream (rnnt_whisper's
    AudioDataset, corpus 32, seen), under a DistributedSampler that splits the indexes of that list as if it
    were alike on every rank. Not with a generator of its own seeded alike, nor with the stream seeded."""
    script = (
        DDP_HEAD + "import numpy as np\nclass Clips(torch.utils.data.Dataset):\n"
        "    def __init__(self, files):\n        self.files = list(files)\n        {shuffle}\n"
        "    def __len__(self):\n        return len(self.files)\n"
        "    def __getitem__(self, i):\n        return self.files[i]\n"
        "{seed}data = Clips(paths)\nsampler = DistributedSampler(data)\n"
        "loader = DataLoader(data, batch_size=8, sampler=sampler)\n" + DDP_TAIL
    )
    bad = {"shuffle": "np.random.shuffle(self.files)", "seed": ""}
    assert "DDL193" in codes_of(script, **bad)
    assert "DDL193" not in codes_of(script, **{**bad, "seed": "np.random.seed(0)\n"})
    own = "np.random.default_rng(0).shuffle(self.files)"
    assert "DDL193" not in codes_of(script, **{**bad, "shuffle": own})


def test_a_sampler_that_shuffles_then_takes_its_rank_share_and_a_seed_elsewhere(tmp_path):
    """DDL193 under raw DDP: a sampler that shuffles with random's stream, then slices the order by its rank
    (each process slices its own order). Not one that takes its share first and shuffles it after (X-VLM's
    file shards, corpus 26, seen), nor in a repository whose main script seeds the stream (Dialog_Extension,
    corpus 27, seen)."""
    sampler = (
        "import random\nclass ShardSampler(torch.utils.data.Sampler):\n"
        "    def __init__(self, n, rank, world):\n        self.n, self.rank, self.world = n, rank, world\n"
        "    def __iter__(self):\n        order = list(range(self.n))\n{body}"
        "        return iter(order)\n"
    )
    script = (
        DDP_HEAD
        + sampler
        + "loader = DataLoader(data, sampler=ShardSampler(len(data), r, w))\n"
        + DDP_TAIL
    )
    before = "        random.shuffle(order)\n        order = order[self.rank :: self.world]\n"
    after = "        order = order[self.rank :: self.world]\n        random.shuffle(order)\n"
    assert "DDL193" in codes_of(script, body=before)
    assert "DDL193" not in codes_of(script, body=after)
    files = {".git/HEAD": "", "runner.py": script.format(body=before)}
    assert "DDL193" in check_in_project(tmp_path / "a", files, "runner.py")
    seeded = {**files, "main.py": "import random\nimport runner\nrandom.seed(0)\n"}
    assert "DDL193" not in check_in_project(tmp_path / "b", seeded, "runner.py")


def test_what_corpus_39_taught_about_slurm_batch_scripts_wrappers_and_node_writers(tmp_path):
    """Corpus 39 (seen). SDACD's README says `sbatch train.sh`, and train.sh asks for no node count (Slurm's
    default is one node) before `torch.distributed.launch --nproc_per_node=2`: its `local_rank == 0` saves are the
    job's one writer (DDL107, twelve judged false); a batch script asking for two nodes, or one starting its
    tasks with srun and no node count, names several. The satellite ViT's `model = model.to(device)` after
    its DDP wrap still holds the wrapper, so `model.save_model(...)` after it is the wrapper's (DDL125). MissM's
    `if local_rank == 0: torch.save(..., best)` then every rank's `torch.load(best)` with no barrier (DDL122)."""
    script = (
        DDP_HEAD + "local_rank = int(os.environ['LOCAL_RANK'])\nmodel = DDP(net)\n"
        "if local_rank == 0:\n    torch.save(model.module.state_dict(), 'model.pt')\n" + DDP_TAIL
    )
    launch = "python -m torch.distributed.launch --nproc_per_node=2 train.py\n"
    for i, (batch, expected) in enumerate(
        (
            ("#!/bin/bash\n#SBATCH --gres=gpu:2\n#SBATCH -t 5-1:30:00\n", False),
            ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:2\n", True),
            ("#!/bin/bash\n#SBATCH --gres=gpu:2\nsrun ", True),
        )
    ):
        files = {
            ".git/HEAD": "",
            "train.py": script,
            "README.md": "sbatch train.sh\n",
            "train.sh": batch + launch,
        }
        found = check_in_project(tmp_path / f"s{i}", files, "train.py")
        assert ("DDL107" in found) is expected, (batch, found)
    moved = (
        DDP_HEAD + "model = DDP(net)\nif args.resume:\n    model = model.to(device)\n"
        "if dist.get_rank() == 0:\n    model.save_model(epoch)\n" + DDP_TAIL
    )
    assert "DDL125" in codes_of(moved)
    assert "DDL125" not in codes_of(moved.replace("model = DDP(net)", "model = net"))
    best = (
        DDP_HEAD + "local_rank = int(os.environ['LOCAL_RANK'])\nmodel = DDP(net)\n"
        "if local_rank == 0:\n    torch.save(model.state_dict(), 'best.pt')\n{barrier}"
        "model.load_state_dict(torch.load('best.pt', map_location='cpu'))\n" + DDP_TAIL
    )
    assert_found("DDL122", best, ["barrier"], [("", True), ("dist.barrier()\n", False)])


def test_what_corpus_39_taught_the_loss_amp_and_gather_rules():
    """Corpus 39 (seen): HEIST's `F.mse_loss(..., reduction='sum') / high_mask.sum()`, a sum divided by the
    rank's own count, a mean that DDP's average keeps (DDL123, three judged false); a parameter annotated
    `scaler: torch.cuda.amp.GradScaler`, which calls nothing (DDL102, judged false); MissM's evaluation, whose
    loss reads the local `labels` eight lines above the line that gathers them (DDL190, judged false); and
    torch.distributed's own `get_rank() == 0` is no test of a `distributed` flag, so a custom method read
    through the wrapper under it is still reported (DDL125)."""
    summed = (
        DDP_HEAD + "model = DDP(net)\nfor x, y, mask in loader:\n"
        "    loss = F.mse_loss(model(x) * mask, y * mask, reduction='sum'){divided}\n"
        "    loss.backward()\n" + DDP_TAIL
    )
    assert_found("DDL123", summed, ["divided"], [("", True), (" / mask.sum()", False)])
    annotated = (
        "import torch\ndef train_step(model, scaler{annotation}):\n"
        "    scaler.scale(model(x).sum()).backward()\n"
    )
    assert "DDL102" not in codes_of(annotated, annotation=": torch.cuda.amp.GradScaler")
    assert "DDL102" in codes_of(annotated + "scaler = torch.cuda.amp.GradScaler()\n", annotation="")
    evaluated = (
        DDP_HEAD + "def gather(t):\n    out = [torch.zeros_like(t) for _ in range(2)]\n"
        "    dist.all_gather(out, t)\n    return torch.cat(out)\n"
        "for x, batch in loader:\n    labels = batch['label'].to(device)\n    outputs = model(x)\n"
        "    loss = criterion(outputs, labels)\n    preds = gather(outputs.argmax(1))\n"
        "    {gathered} = gather(labels)\n    metric.update(preds, {used})\n" + DDP_TAIL
    )
    assert "DDL190" not in codes_of(evaluated, gathered="labels", used="labels")
    mixed = evaluated.replace(
        "outputs = model(x)\n", "outputs = model(x)\n    y = batch['y'].to(device)\n"
    )
    assert "DDL190" in codes_of(mixed, gathered="labels", used="y")
    guarded = (
        DDP_HEAD
        + "model = DDP(net)\nif dist.get_rank() == 0:\n    model.save_model(epoch)\n"
        + DDP_TAIL
    )
    assert "DDL125" in codes_of(guarded)
    assert "DDL125" not in codes_of(guarded.replace("dist.get_rank() == 0", "args.distributed"))


def test_a_continue_rank_zero_alone_takes_past_the_loops_break():
    """DDL134, corpus 39 (seen): speech_llm's `if step % save_every == 0 and accelerator.is_main_process:
    continue` before `if step == training_steps: break`. At a last step that is also a save step, rank 0 skips
    the break and trains on into an all-reduce the others, gone, never join. Not a continue every rank takes."""
    script = (
        ACCELERATE_HEAD
        + "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n"
        "for step, batch in enumerate(loader):\n    accelerator.backward(model(batch).mean())\n"
        "    optimizer.step()\n    if step % 100 == 0{who}:\n        continue\n"
        "    if step == 1000:\n        break\n"
    )
    assert_found(
        "DDL134", script, ["who"], [(" and accelerator.is_main_process", True), ("", False)]
    )


def test_what_corpus_40_taught_about_own_accelerators_deepspeed_configs_and_gpu_index(tmp_path):
    """Corpus 40 (seen). VoxCPM's `from voxcpm.training import Accelerator`, a class of its own with rank,
    barrier and all_reduce (DDL191, six judged false); and accelerate's `get_logger`, no Accelerator either.
    stunning-octo-parakeet's `accelerate launch --config_file config/accelerate_config/deepspeed` (a file with
    no suffix, distributed_type DEEPSPEED): prepare() returns DeepSpeed's engine, which forwards attributes
    (DDL125, seven judged false). monosdf's `self.GPU_INDEX == 0`, its local rank, is a rank check (DDL107, seven
    judged false in its single-node repository)."""
    own = (
        "from {module} import Accelerator\n{logger}accelerator = Accelerator()\n"
        "model = accelerator.prepare(model)\naccelerator.barrier()\n"
    )
    assert "DDL191" in codes_of(own, module="accelerate", logger="")
    assert "DDL191" not in codes_of(own, module="voxcpm.training", logger="")
    logged = "from accelerate.logging import get_logger\nlogger = get_logger(__name__)\nlogger.warning('x')\n"
    assert "DDL191" not in codes_of(logged)
    trainer = (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer = accelerator.prepare(model, optimizer)\nmodel.language_model.train()\n"
    )
    for i, (config, expected) in enumerate(
        (("distributed_type: DEEPSPEED\n", False), ("distributed_type: MULTI_GPU\n", True))
    ):
        files = {
            ".git/HEAD": "",
            "train.py": trainer,
            "run.sh": "accelerate launch --config_file configs/launch --num_processes 8 train.py\n",
            "configs/launch": "compute_environment: LOCAL_MACHINE\n" + config,
        }
        found = check_in_project(tmp_path / f"d{i}", files, "train.py")
        assert ("DDL125" in found) is expected, (config, found)
    saved = (
        DDP_HEAD
        + "class Trainer:\n    def __init__(self, gpu_index):\n        self.GPU_INDEX = gpu_index\n"
        "        self.model = DDP(net)\n    def run(self):\n        if {test}:\n"
        "            torch.save(self.model.module.state_dict(), 'last.pt')\n" + DDP_TAIL
    )
    assert "DDL107" not in codes_of(saved, test="self.GPU_INDEX == 0")
    assert "DDL107" in codes_of(saved, test="self.epoch % 10 == 0")


def test_what_corpus_41_taught_about_one_process_modes_and_launch_scripts(tmp_path):
    """Corpus 41 (seen). OpenMatch's `-reinfoselect` mode, a single-dash option its pages run in one process
    only, while its distributed script's lines end in `\\ # comment` (continuations as their writer meant):
    the writes of that mode were twelve false findings. Its else of `if args.local_rank != -1:` is the
    one-process run. Amdg's `set_fp16`, called under `if self.config.fp16:` only, a flag off by default that
    no run passes: its APEX lines were two false default findings."""
    main = (
        DDP_HEAD + "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('-reinfoselect', action='store_true', default=False)\n"
        "args = parser.parse_args()\nmodel = DDP(net)\n"
        "def train_rl(args, model):\n    torch.save(model.module.state_dict(), args.save)\n"
        "if args.reinfoselect:\n    train_rl(args, model)\n" + DDP_TAIL
    )
    dist_script = (
        "python -u -m torch.distributed.launch \\ # start the ranks\n"
        "--nproc_per_node=4 train.py \\ # the file\n    -task ranking\n"
    )
    for i, (page, expected) in enumerate(
        (
            (
                "```\nCUDA_VISIBLE_DEVICES=0 python train.py \\\n    -reinfoselect -task x\n```\n",
                [],
            ),
            ("```\ntorchrun --nproc_per_node 2 train.py -reinfoselect\n```\n", ["DDL107"]),
        )
    ):
        files = {".git/HEAD": "", "train.py": main, "dist.sh": dist_script, "README.md": page}
        found = check_in_project(tmp_path / f"m{i}", files, "train.py")
        assert [c for c in found if c == "DDL107"] == expected, (page, found)
    beside = (
        DDP_HEAD + "model = DDP(net)\nif args.local_rank != -1:\n"
        "    torch.save(rows, f'res_{{args.local_rank}}.txt')\n{other}" + DDP_TAIL
    )
    assert_found(
        "DDL107",
        beside,
        ["other"],
        [
            ("else:\n    torch.save(rows, 'res.txt')\n", False),
            ("torch.save(rows, 'res.txt')\n", True),
        ],
    )
    trainer = (
        "import argparse\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--fp16', type=bool, default=False)\nconfig = parser.parse_args()\n"
        "class Trainer:\n    def set_fp16(self, model, optimizer):\n"
        "        from apex import amp\n"
        "        return amp.initialize(model, optimizer, opt_level='O1')\n"
        "    def train(self, model, optimizer):\n        dist.init_process_group('nccl')\n"
        "        model = DistributedDataParallel(model)\n"
        "        if self.config.fp16:\n            self.set_fp16(model, optimizer)\n"
        "Trainer().train(model, optimizer)\n"
    )
    for i, (flags, expected) in enumerate((("--lr 1", False), ("--lr 1 --fp16 True", True))):
        files = {
            ".git/HEAD": "",
            "trainer.py": trainer,
            "train.sh": f"torchrun --nproc_per_node 8 trainer.py {flags}\n",
        }
        found = check_in_project(tmp_path / f"t{i}", files, "trainer.py")
        assert ("DDL102" in found) is expected, (flags, found)


def test_what_corpus_41_taught_about_saves_helpers_and_lightning(tmp_path):
    """Corpus 41 (seen). Long-Context-Biencoder's own `save_pretrained`, which saves on the main process (DDL107,
    false); OpenMatch's `if args.n_gpu > 1:` around its unwrapped save, where each DDP process has n_gpu = 1
    and saves the wrapper (DDL106, missed); TransformerCVAE's `prepare_dataset(..., make_test=True)`, whose
    training sampler never gets an epoch (DDL105, missed); translate_vi_en_bidir's helper that wraps in FSDP
    under the alias `FSDP` (DDL158, missed); mrc-for-flat-nested-ner's `validation_epoch_end` returning its
    span F1 for Lightning to log, each rank's own (DDL162, missed in both copies)."""
    own = (
        ACCELERATE_HEAD + "class Embedder(torch.nn.Module):\n"
        "    def save_pretrained(self, path):\n        if {test}:\n"
        "            torch.save(self.model.state_dict(), path + '/model.bin')\n"
        "model = accelerator.prepare(Embedder())\nfor step in range(10):\n"
        "    model.save_pretrained('out')\n"
    )
    assert_found(
        "DDL107",
        own,
        ["test"],
        [("self.accelerator.is_main_process", False), ("step % 2 == 0", True)],
    )
    for n_gpu, expected in (("1", True), ("torch.cuda.device_count()", False)):
        found = codes_of(
            DDP_HEAD + "args.n_gpu = {n_gpu}\nif args.local_rank != -1:\n"
            "    model = DDP(model, device_ids=[args.local_rank])\n"
            "for epoch in range(3):\n    train(model)\n    if args.local_rank in [-1, 0]:\n"
            "        if args.n_gpu > 1:\n            torch.save(model.module.state_dict(), 'm.bin')\n"
            "        else:\n            torch.save(model.state_dict(), 'm.bin')\n" + DDP_TAIL,
            n_gpu=n_gpu,
        )
        assert ("DDL106" in found) is expected, (n_gpu, found)
    helper = (
        "from torch.utils.data import DataLoader, DistributedSampler\n"
        "def prepare_dataset(train_set, test_set, make_test=False, local_rank=None):\n"
        "    sampler = DistributedSampler(train_set, shuffle=True)\n"
        "    loaders = [DataLoader(train_set, sampler=sampler)]\n"
        "    if make_test:\n        loaders.append(DataLoader(test_set))\n    return loaders\n"
    )
    script = (
        DDP_HEAD + "from data.util import *\nmodel = DDP(net)\n"
        "train_loader, test_loader = prepare_dataset(a, b, make_test={flag}, local_rank=rank)\n"
        "for epoch in range(3):\n    for x in train_loader:\n        model(x).sum().backward()\n"
        + DDP_TAIL
    )
    for flag in ("True", "False"):
        files = {
            ".git/HEAD": "",
            "data/__init__.py": "",
            "data/util.py": helper,
            "train.py": script.format(flag=flag),
        }
        assert "DDL105" in check_in_project(tmp_path / flag, files, "train.py"), flag
    wrapping = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as {alias}\n"
        "def wrap_model_with_fsdp(model, config):\n    return {call}(model)\n"
    )
    clip = (
        "import torch\nimport torch.distributed as dist\nfrom utils import wrap_model_with_fsdp\n"
        "dist.init_process_group('nccl')\nmodel = wrap_model_with_fsdp(build(), config)\n"
        "model = torch.compile(model)\nfor x in loader:\n    model(x).sum().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    optimizer.step()\n"
    )
    for alias, call, expected in (("FSDP", "FSDP", True), ("FSDP", "Wrapper", False)):
        files = {
            ".git/HEAD": "",
            "utils.py": wrapping.format(alias=alias, call=call),
            "train.py": clip,
        }
        found = check_in_project(tmp_path / f"{alias}{call}", files, "train.py")
        assert ("DDL158" in found) is expected, (call, found)
    lightning = (
        "import pytorch_lightning as pl\nclass NER(pl.LightningModule):\n"
        "    def validation_epoch_end(self, outputs):\n"
        "        counts = torch.stack([x['stats'] for x in outputs]).sum(0)\n{reduce}"
        "        f1 = counts[0] / (counts[0] + counts[1])\n"
        "        return {{'val_loss': f1, 'log': {{'span_f1': f1}}}}\n"
        "trainer = pl.Trainer(accelerator='gpu', devices=2, strategy='ddp')\n"
    )
    assert_found(
        "DDL162",
        lightning,
        ["reduce"],
        [("", True), ("        counts = self.all_gather(counts).sum(0)\n", False)],
    )


def test_what_corpus_42_taught_the_default_rules():
    """Corpus 42 (seen). Relation-DETR's Accelerator(step_scheduler_with_optimizer=False), whose prepared
    per-epoch scheduler steps once a call (DDL111, judged false); style-transfer's `try: from apex import amp`
    that nothing in the file reads (DDL102, judged false)."""
    stepped = (
        "from accelerate import Accelerator\naccelerator = Accelerator({kw})\n"
        "model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)\n"
        "for epoch in range(10):\n    train(model)\n    scheduler.step()\n"
    )
    assert_found(
        "DDL111", stepped, ["kw"], [("", True), ("step_scheduler_with_optimizer=False", False)]
    )
    imported = "try:\n    from apex import amp\nexcept ImportError:\n    amp = None\n{use}"
    assert_found(
        "DDL102",
        imported,
        ["use"],
        [("x = 1\n", False), ("model, opt = amp.initialize(model, opt)\n", True)],
    )


def test_what_corpus_42_taught_about_evaluations_helpers_and_downloads(tmp_path):
    """Corpus 42 (seen). VPD's validation reduced by DeiT's MetricLogger.synchronize_between_processes over a
    padding sampler, and hyp_metric's `partial(get_emb, ...)` whose helper pads and all-gathers (DDL127, both
    missed); Accelerator-Simple-Template's accuracy logged by accelerate's get_logger, main process only (DDL124,
    missed); SASRec's DDP model handed to a helper that calls `model.predict` (DDL125, missed); US3L's dataset
    class that downloads by default (DDL139, missed)."""
    logger = (
        DDP_HEAD + "model = DDP(net)\nval_sampler = DistributedSampler(val_set, shuffle=False)\n"
        "def validate(loader):\n    meters = MetricLogger()\n    for x in loader:\n"
        "        meters.update(loss=model(x).item())\n    {sync}\n    return meters\n" + DDP_TAIL
    )
    assert_found(
        "DDL127",
        logger,
        ["sync"],
        [("meters.synchronize_between_processes()", True), ("print(meters)", False)],
    )
    helpers = (
        "import torch\nimport torch.distributed as dist\n"
        "def get_emb(model, ds, ds_type='eval', world_size=1):\n"
        "    ds_eval = ds(ds_type)\n    sampler = torch.utils.data.distributed.DistributedSampler(ds_eval)\n"
        "    x = torch.cat([model(b) for b in DataLoader(ds_eval, sampler=sampler)])\n"
        "    xs = [torch.zeros_like(x) for _ in range(world_size)]\n"
        "    dist.all_gather(xs, x)\n    return torch.cat(xs)\n"
        "def get_train(model, ds):\n    return model(ds('train'))\n"
    )
    train = (
        "import torch.distributed as dist\nfrom functools import partial\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from helpers import get_emb, get_train\ndist.init_process_group('nccl')\nmodel = DDP(net)\n"
        "emb = partial({}, model=model, ds=Data, world_size=2)\nx = emb()\n"
    )
    files = {".git/HEAD": "", "helpers.py": helpers, "train.py": train}
    # the helper that pads and gathers, and one that does neither
    assert_found_in_project(
        tmp_path / "partial", "DDL127", files, "train.py", [("get_emb", True), ("get_train", False)]
    )
    accuracy = (
        "from accelerate import Accelerator\nfrom accelerate.logging import get_logger\n"
        "logger = {made}\naccelerator = Accelerator()\n"
        "model, test_loader = accelerator.prepare(model, test_loader)\n"
        "correct = 0\ntotal = 0\nfor x, y in test_loader:\n"
        "    correct += (model(x).argmax(1) == y).sum().item()\n    total += y.size(0)\n"
        "val_acc = 100 * correct / total\n"
        "logger.info('val accuracy {{}}'.format(val_acc), main_process_only=True)\n"
    )
    assert_found(
        "DDL124",
        accuracy,
        ["made"],
        [("get_logger(__name__)", True), ("logging.getLogger(__name__)", False)],
    )
    utils = (
        "def evaluate(model, dataset, args):\n    return model.predict(dataset.users)\n"
        "def evaluate_safe(model, dataset, args):\n"
        "    inner = model.module if hasattr(model, 'module') else model\n"
        "    return inner.predict(dataset.users)\n"
    )
    main = (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from utils import *\ndist.init_process_group('nccl')\nmodel = DDP(SASRec())\n"
        "for epoch in range(3):\n    train(model)\n    result = {}(model, dataset, args)\n"
        "dist.destroy_process_group()\n"
    )
    rows = [("evaluate", True), ("evaluate_safe", False)]  # reads model.predict; unwraps first
    assert_found_in_project(
        tmp_path / "helper",
        "DDL125",
        {".git/HEAD": "", "utils.py": utils, "main.py": main},
        "main.py",
        rows,
    )
    dataset = (
        "import torchvision\nclass DATASET(torchvision.datasets.VisionDataset):\n"
        "    def __init__(self, transform, mode, root='./data', download=True):\n"
        "        super().__init__(root, transform=transform)\n"
        "        if download:\n            self.download()\n"
    )
    script = (
        DDP_HEAD + "from datasets.cifar10 import DATASET as cifar10_dataset\n"
        "train_dataset = cifar10_dataset({})\n"
        "sampler = DistributedSampler(train_dataset)\n" + DDP_TAIL
    )
    files = {
        ".git/HEAD": "",
        "datasets/__init__.py": "",
        "datasets/cifar10.py": dataset,
        "train.py": script,
    }
    rows = [
        ("transform=t, mode='train'", True),
        ("transform=t, mode='train', download=False", False),
        ("t, 'train', './data', False", False),
    ]
    assert_found_in_project(tmp_path / "download", "DDL139", files, "train.py", rows)


def test_what_corpus_43_taught_about_one_process_branches_and_commented_calls(tmp_path):
    """Corpus 43 (seen). TAP_ASR's `if self.config.is_use_DDP:` and SLAM-LLM's `if train_config.enable_fsdp:
    ... elif train_config.enable_ddp: ... else:` leave their else to the one-process run (DDL107, judged false
    there). A function whose only call is commented out never runs (SLAM-LLM's save_train_params)."""
    branches = (
        DDP_HEAD + "model = DDP(net)\nif cfg.{flag}:\n"
        "    if dist.get_rank() == 0:\n        torch.save(model.module.state_dict(), 'best.pt')\n"
        "else:\n    torch.save(model.state_dict(), 'best.pt')\n" + DDP_TAIL
    )
    assert_found(
        "DDL107",
        branches,
        ["flag"],
        [("is_use_DDP", False), ("enable_ddp", False), ("enable_fsdp", False), ("save_best", True)],
    )
    utils = (
        DDP_HEAD + "def save_params(cfg):\n    torch.save(cfg, 'train_params.pt')\n"
        "def train(model):\n    model(1).backward()\n" + DDP_TAIL
    )
    caller = "import utils\nutils.train(model)\n{call}utils.save_params(cfg)\n"
    for i, (call, expected) in enumerate((("# ", False), ("", True))):
        files = {".git/HEAD": "", "utils.py": utils, "finetune.py": caller.format(call=call)}
        found = check_in_project(tmp_path / str(i), files, "utils.py")
        assert ("DDL107" in found) is expected, (call, found)


def test_what_corpus_44_taught_about_ema_copies_into_a_fresh_model():
    """Corpus 44 (seen): Drivingdojo's `unet_ckpt = UNet...from_pretrained(...)` then
    `ema_unet.copy_to(unet_ckpt.parameters())` on the main process writes the EMA into a model loaded for the
    checkpoint, not into the trained one (DDL194, judged false)."""
    copied = (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)\n"
        "for step, batch in enumerate(loader):\n    accelerator.backward(unet(batch).mean())\n"
        "    optimizer.step()\n    ema.step(unet.parameters())\n"
        "    if step % 500 == 0 and accelerator.is_main_process:\n{made}"
        "        ema.copy_to({target}.parameters())\n        save({target})\n"
    )
    assert_found(
        "DDL194",
        copied,
        ["made", "target"],
        [
            ("", "unet", True),
            (
                "        unet_ckpt = UNet.from_pretrained(path, subfolder='unet')\n",
                "unet_ckpt",
                False,
            ),
        ],
    )


def test_what_corpus_44_taught_about_schedulers_told_the_epoch():
    """Corpus 44 (seen): eP-ALM's prepared timm scheduler stepped with the epoch it should be at
    (`lr_scheduler.step(epoch + warmup_steps)`) sets the same rate however many processes step it (DDL111, judged
    false); a plain `scheduler.step()` in the epoch loop compounds."""
    stepped = (
        "from accelerate import Accelerator\naccelerator = Accelerator()\n"
        "model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)\n"
        "for epoch in range(10):\n    train(model)\n    lr_scheduler.step({given})\n"
    )
    assert_found(
        "DDL111",
        stepped,
        ["given"],
        [("", True), ("epoch + warmup_steps", False), ("epoch=epoch", False)],
    )


def test_the_slurm_path_that_leaves_the_world_size_at_its_default_is_found_from_the_calling_script(
    tmp_path,
):
    """Corpus 44 (seen, five repositories): DETR's init_distributed_mode in util/misc.py sets the rank from
    SLURM_PROCID and leaves args.world_size at the flag's default; the script that calls it gets the finding at
    the call (DDL198). Not where the project's submitit launcher sets `args.world_size` first (DETR's own
    run_with_submitit.py), nor where the Slurm branch reads SLURM_NTASKS, nor where the repository launches the
    script with torchrun and never with srun itself (corpus 46, judged false twice)."""
    helper = (
        "import os\nimport torch.distributed as dist\ndef init_distributed_mode(args):\n"
        "    if 'RANK' in os.environ and 'WORLD_SIZE' in os.environ:\n"
        "        args.rank = int(os.environ['RANK'])\n        args.world_size = int(os.environ['WORLD_SIZE'])\n"
        "    elif 'SLURM_PROCID' in os.environ:\n        args.rank = int(os.environ['SLURM_PROCID'])\n{}"
        "    else:\n        args.distributed = False\n        return\n"
        "    dist.init_process_group('nccl', init_method=args.dist_url, world_size=args.world_size,\n"
        "                            rank=args.rank)\n"
    )
    main = (
        "import argparse\nfrom util import misc\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--world_size', default=1, type=int)\n"
        "parser.add_argument('--dist_url', default='env://')\nargs = parser.parse_args()\n"
        "misc.init_distributed_mode(args)\n"
    )
    submitit = (
        "import submitit\nclass Trainer:\n    def __call__(self):\n"
        "        job_env = submitit.JobEnvironment()\n        self.args.world_size = job_env.num_tasks\n"
    )
    torchrun = "torchrun --nproc_per_node=8 main.py --epochs 10\n"
    srun = "#!/bin/bash\n#SBATCH --ntasks=16\nsrun python main.py --epochs 10\n"
    for i, (slurm_branch, extra, expected) in enumerate(
        [
            ("", {}, True),
            ("        args.world_size = int(os.environ['SLURM_NTASKS'])\n", {}, False),
            ("", {"run_with_submitit.py": submitit}, False),
            # corpus 46's judges: the documented runs take the environment's branch
            ("", {"train.sh": torchrun}, False),
            ("", {"train.sh": torchrun, "slurm.sh": srun}, True),
            ("", {"train.sh": torchrun.replace("main.py", "tools/main.py")}, True),
        ]
    ):
        files = {
            ".git/HEAD": "",
            "main.py": main,
            "util/misc.py": helper.format(slurm_branch),
            **extra,
        }
        found = check_in_project(tmp_path / f"p{i}", files, "main.py", where=True)
        assert ((7, "DDL198") in found) == expected, (i, found)


def test_what_corpus_45_taught_about_a_metric_computed_before_its_log(tmp_path):
    """Corpus 45 (seen): earth-forecasting-transformer's validation_epoch_end logs `valid_mse`, bound to
    `self.valid_mse.compute()`: torchmetrics syncs compute() over the processes (DDL162, judged false twice). A
    loss the step computes itself is still each rank's own."""
    files = {
        ".git/HEAD": "",
        "pkg/__init__.py": "",
        "pkg/methods.py": "import pytorch_lightning as pl\nclass Base(pl.LightningModule):\n"
        "    def validation_epoch_end(self, outputs):\n{}",
        "pkg/exp.py": "import pytorch_lightning as pl\ndef run():\n    pl.Trainer(strategy='ddp')\n",
    }
    logged = "        value = {}\n        self.log('val_mse', {}, on_epoch=True)\n"
    assert_found_in_project(
        tmp_path,
        "DDL162",
        files,
        "pkg/methods.py",
        [
            (logged.format("self.criterion(outputs)", "value"), True),
            (logged.format("self.valid_mse.compute()", "value"), False),
            (logged.format("self.valid_mse.compute()", "-value['avg']"), False),
            (logged.format("None", "self.valid_mse.compute()"), False),
        ],
    )


def test_what_corpus_45_taught_about_keys_given_the_wrappers_prefix():
    """Corpus 45 (seen): ArcFace_PyTorch's resume copies the saved unwrapped keys into a new dict as
    `'module.' + k` before it loads them into the DDP-wrapped model, so the keys match (DDL163, judged false
    twice). The same load of the file's own dict is still found."""
    trainer = (
        ACCELERATE_HEAD + "class Trainer:\n    def __init__(self, model, optimizer):\n"
        "        self.model, self.optimizer = accelerator.prepare(model, optimizer)\n"
        "    def save(self, path):\n        pkg = dict(model=accelerator.unwrap_model(self.model).state_dict())\n"
        "        torch.save(pkg, path)\n"
        "    def load(self, path):\n        pkg = torch.load(path, weights_only=True)\n"
        "        renamed = {{}}\n        for k, v in pkg['model'].items():\n"
        "            renamed[{key}] = v\n        self.model.load_state_dict({loaded})\n"
    )
    assert_found(
        "DDL163",
        trainer,
        ["key", "loaded"],
        [
            ("k", "pkg['model']", True),
            ("'module.' + k", "renamed", False),
            ("f'module.{k}'", "renamed", False),
        ],
    )


def test_what_corpus_45_taught_about_a_writer_in_each_ranks_own_folder():
    """Corpus 45 (seen): NS2NS's `SummaryWriter(log_dir="{}/log_{}".format(out, cfg.rank))` on every rank writes
    each rank's events to a folder of its own, on purpose (DDL128, judged false). One folder for all is found."""
    script = (
        DDP_HEAD
        + "from torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter({given})\n"
    )
    assert_found(
        "DDL128",
        script,
        ["given"],
        [
            ("log_dir='runs/exp'", True),
            ("log_dir='{}/log_{}'.format(out, cfg.rank)", False),
            ("f'runs/rank{dist.get_rank()}'", False),
        ],
    )


def test_what_corpus_45_taught_about_a_step_function_that_returns_before_its_backward(tmp_path):
    """Corpus 45 (seen): ADL's `train()` returns when its batch has no valid pixel (`if mask.sum() == 0:`) and
    ROMP's `train_step` when its loss is NaN, each called once a batch: that rank skips the backward whose
    all-reduce the others wait in (DDL134). Not a return on a flag every rank reads alike, not one after the
    tested value was all-reduced, not a function no loop calls."""
    script = (
        DDP_HEAD + "def train_step(model, optimizer, images, target, args):\n"
        "    mask = target > 0\n{skip}    loss = F.mse_loss(model(images)[mask], target[mask])\n{after}"
        "    loss.backward()\n    optimizer.step()\n    return loss.item()\n"
        "model = DDP(net)\nfor images, target in loader:\n    train_step(model, optimizer, images, target, args)\n"
        + DDP_TAIL
    )
    nan = "    if torch.isnan(loss):\n        return 0.0\n"
    assert_found(
        "DDL134",
        script,
        ["skip", "after"],
        [
            ("", nan, True),
            ("    if mask.sum() == 0:\n        return 0.0\n", "", True),
            ("    if args.dry_run:\n        return 0.0\n", "", False),
            ("", "    dist.all_reduce(loss)\n" + nan, False),
            ("", "", False),
        ],
    )
    alone = script.replace("for images, target in loader:\n    train_step", "train_step")
    assert "DDL134" not in codes_of(alone, skip="", after=nan)
    # ROMP: the trainer's base class, in another module, makes the wrapper
    files = {
        ".git/HEAD": "",
        "base.py": "import torch\nclass Base:\n    def __init__(self, model):\n"
        "        self.model = torch.nn.parallel.DistributedDataParallel(model)\n",
        "train.py": "import torch\nfrom base import Base\nclass Trainer(Base):\n"
        "    def train_step(self, batch):\n        loss = self.model(batch).mean()\n"
        "        if torch.isnan(loss):\n            return loss\n        loss.backward()\n"
        "        self.optimizer.step()\n        return loss\n"
        "    def train(self):\n        for batch in self.loader:\n            self.train_step(batch)\n",
    }
    assert "DDL134" in check_in_project(tmp_path, files, "train.py")


def test_a_method_the_class_inherits_is_followed_into_its_base_class(tmp_path):
    """Corpus 45 (seen): MVSFormer's train.py calls `trainer.train()` on a Trainer whose BaseTrainer, in
    base/base_trainer.py, holds the epoch loop and breaks out of it on an early-stopping count kept under
    `if self.rank == 0:`: rank 0 leaves, the others wait in the next epoch's all-reduce (DDL134, carried to the
    call). Where the Trainer defines train() itself, its own loop is the one read."""
    base = (
        "class BaseTrainer:\n    def train(self):\n        bad = 0\n"
        "        for epoch in range(self.epochs):\n            result = self._train_epoch(epoch)\n"
        "            if self.rank == 0:\n                bad += 1\n"
        "                if bad > self.early_stop:\n                    break\n"
    )
    files = {
        ".git/HEAD": "",
        "base/__init__.py": "from .base_trainer import BaseTrainer\n",
        "base/base_trainer.py": base,
        "trainer.py": "from base import BaseTrainer\nclass Trainer(BaseTrainer):\n{}"
        "    def _train_epoch(self, epoch):\n        for x in self.loader:\n"
        "            self.model(x).mean().backward()\n            self.optimizer.step()\n",
        "train.py": "import torch\nimport torch.distributed as dist\nfrom trainer import Trainer\n"
        "dist.init_process_group('nccl')\nmodel = torch.nn.parallel.DistributedDataParallel(net)\n"
        "trainer = Trainer(model)\ntrainer.train()\ndist.destroy_process_group()\n",
    }
    own = "    def train(self):\n        for epoch in range(self.epochs):\n            self._train_epoch(epoch)\n"
    for i, (method, expected) in enumerate([("", True), (own, False)]):
        written = {**files, "trainer.py": files["trainer.py"].format(method)}
        found = check_in_project(tmp_path / str(i), written, "train.py", where=True)
        assert ((7, "DDL134") in found) == expected, (i, found)


def test_what_corpus_46_taught_about_a_file_every_command_runs_as_one_process(tmp_path):
    """Corpus 46 (seen): Jarvisgivemeasuit's only command is `torchrun --nproc_per_node=1 ...`, and VenusWSL's
    `python src/train.py`: the judges called what processes do to each other (one file written by every rank,
    an evaluation every rank repeats, a batch one rank skips) false there. A command that starts more, one
    that starts several of a file the repository does not have (a placeholder for each), or a script that
    spawns its own processes, keeps them."""
    script = (
        DDP_HEAD + "model = DDP(net)\nfor x in loader:\n    model(x).mean().backward()\n"
        "    optimizer.step()\ntorch.save(model.module.state_dict(), 'classifier.pt')\n" + DDP_TAIL
    )
    spawned = (
        "import torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
        "def run(rank):\n    dist.init_process_group('gloo', rank=rank, world_size=2)\n"
        "    torch.save(net.state_dict(), 'classifier.pt')\n    dist.destroy_process_group()\n"
        "mp.spawn(run, nprocs=2)\n"
    )
    for i, (command, source, expected) in enumerate(
        [
            ("torchrun --nproc_per_node=1 train.py --epochs 3", script, False),
            ("python train.py --epochs 3", script, False),
            ("torchrun --nproc_per_node=4 train.py --epochs 3", script, True),
            ("torchrun --nnodes=2 --nproc_per_node=1 train.py", script, True),
            ("", script, True),
            ("python train.py --epochs 3", spawned, True),
            # corpus 27: minimind-v's README starts every trainer with `torchrun ... train_xxx.py`
            ("python train.py --epochs 3\ntorchrun --nproc_per_node N train_xxx.py", script, True),
        ]
    ):
        files = {".git/HEAD": "", "README.md": f"```\n{command}\n```\n", "train.py": source}
        assert ("DDL107" in check_in_project(tmp_path / str(i), files, "train.py")) == expected, i


def test_what_corpus_46_taught_about_apex_under_a_flag_no_command_passes(tmp_path):
    """Corpus 46 (seen): UVC's and HRKD's `from apex import amp` is read only under `if args.fp16:`, a
    store_true flag no command of the repository passes: no documented run reaches APEX (DDL102, judged false
    twice). A command that passes --fp16, or a use outside the flag, keeps it."""
    script = (
        "import argparse\nfrom apex import amp\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--fp16', action='store_true')\nargs = parser.parse_args()\n"
        "if args.fp16:\n    model, optimizer = amp.initialize(model, optimizer)\n{extra}"
    )
    for i, (command, extra, expected) in enumerate(
        [
            ("python train.py --epochs 3", "", False),
            ("python train.py --epochs 3 --fp16", "", True),
            (
                "python train.py --epochs 3",
                "with amp.scale_loss(loss, optimizer) as scaled:\n    pass\n",
                True,
            ),
        ]
    ):
        files = {
            ".git/HEAD": "",
            "README.md": f"```\n{command}\n```\n",
            "train.py": script.format(extra=extra),
        }
        assert ("DDL102" in check_in_project(tmp_path / str(i), files, "train.py")) == expected, i


def test_what_corpus_46_taught_about_a_branch_on_a_choice_no_command_makes(tmp_path):
    """Corpus 46 (seen): InNOutRobustness downloads CIFAR-100 on every rank under `if hps.dataset ==
    'cifar100':`, but its --dataset defaults to cifar10 and its torchrun script passes `--dataset cifar10`: no
    documented run takes the branch (DDL139, judged false twice). A command that picks it, fills the value from
    a variable, or leaves the choice at its default (cutmix's README, whose judge counted it true, corpus 43),
    keeps it."""
    script = (
        DDP_HEAD
        + "import argparse\nfrom torchvision import datasets\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--dataset', type=str, default='cifar10')\nhps = parser.parse_args()\n"
        "if hps.dataset == 'cifar100':\n    train_set = datasets.CIFAR100('data', train=True, download=True)\n"
        + DDP_TAIL
    )
    for i, (given, expected) in enumerate(
        [("cifar10", False), ("cifar100", True), ("$DATASET", True), ("", True), (None, True)]
    ):
        command = f"torchrun --nproc_per_node 4 train.py --dataset {given}".removesuffix(
            " --dataset "
        )
        readme = (
            "" if given is None else command + "\n"
        )  # "": a command that leaves it at its default
        files = {".git/HEAD": "", "README.md": f"```\n{readme}```\n", "train.py": script}
        assert ("DDL139" in check_in_project(tmp_path / str(i), files, "train.py")) == expected, i
