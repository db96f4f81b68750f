"""Accelerate's own checkpointing and tracking in your script (guides/your-script.md, section D): `save_state` /
`load_state` with a registered step counter, `skip_first_batches` for a resume in the middle of an epoch, and
`log_with` / `init_trackers` / `log` / `end_training` for TensorBoard. digits_accelerate.py's model and data.

    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml guides/examples/digits_accelerate_resume.py \
        --output-dir out/guide/resumed --stop-at 30          # stops after step 30, as a preempted job would
    accelerate launch --config_file accelerate_configs/cpu_2proc.yaml guides/examples/digits_accelerate_resume.py \
        --output-dir out/guide/resumed --resume              # continues at step 31, mid epoch 2

The resumed run ends on the uninterrupted run's weights: the shuffled order is a function of the seed and the
epoch (a seedable sampler), so the resumed epoch is the same, and its first batches are skipped.
"""

import argparse

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration, set_seed
from digits_accelerate import Net, digits
from torch.utils.data import DataLoader


class Progress:
    """The loop's position, saved and loaded by accelerate with the model (register_for_checkpointing)."""

    def __init__(self):
        self.step = 0

    def state_dict(self):
        return {"step": self.step}

    def load_state_dict(self, state):
        self.step = state["step"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--output-dir", required=True, help="checkpoints/, the TensorBoard runs, the model"
    )
    parser.add_argument(
        "--stop-at", type=int, default=0, help="save the state and stop after this step"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue from the newest saved state"
    )
    args = parser.parse_args()

    accelerator = Accelerator(
        cpu=not torch.cuda.is_available(),
        log_with="tensorboard",  # accelerate's trackers: init_trackers, log, end_training
        project_config=ProjectConfiguration(  # save_state() numbers its checkpoints, keeps 2
            project_dir=args.output_dir, automatic_checkpoint_naming=True, total_limit=2
        ),
        dataloader_config=DataLoaderConfiguration(
            use_seedable_sampler=True
        ),  # order = seed + epoch
    )
    accelerator.init_trackers("digits", config={"batch_size": args.batch_size, "seed": args.seed})
    set_seed(args.seed)  # the same initial weights in every process

    train_dataset, _ = digits()
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True)
    model = Net(
        dropout=0
    )  # no dropout: nothing random but the order, which the sampler makes repeatable
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    progress = Progress()
    accelerator.register_for_checkpointing(progress)

    if args.resume:
        accelerator.load_state()  # the newest checkpoint: weights, optimizer, RNG, sampler, `progress`
    start_epoch, skip = divmod(progress.step, len(train_loader))
    for epoch in range(start_epoch, args.epochs):
        train_loader.set_epoch(epoch)  # the seedable sampler's order for this epoch
        batches = accelerator.skip_first_batches(train_loader, skip) if skip else train_loader
        skip = 0  # only the resumed epoch starts in the middle
        for data, target in batches:
            loss = F.nll_loss(model(data), target)
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            progress.step += 1
            accelerator.log({"train/loss": loss.item()}, step=progress.step)
            if progress.step == args.stop_at:
                accelerator.save_state()  # checkpoints/checkpoint_N (pickle: load only your own)
                accelerator.print(f"stopped after step {progress.step}: run again with --resume")
                del model  # (as at the end)
                accelerator.free_memory()
                accelerator.end_training()
                return
    accelerator.wait_for_everyone()
    accelerator.save_model(model, args.output_dir)  # model.safetensors, the bare model's keys
    accelerator.print(f"done: {progress.step} steps -> {args.output_dir}")
    del model  # its reducer holds the group: destroy_process_group frees it only after this
    accelerator.free_memory()  # and accelerate's own references to it
    accelerator.end_training()


if __name__ == "__main__":
    main()
