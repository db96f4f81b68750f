"""The learning rate of every optimizer step, for torch's LambdaLR.

The formulas are those of Hugging Face transformers' get_constant_schedule_with_warmup and
get_cosine_schedule_with_warmup: a linear warm-up from 0, then constant or half a cosine down to 0 at the last step.
A function of the optimizer step alone, so a resumed run (which restores the scheduler's step from its checkpoint)
continues on exactly the uninterrupted run's rates.
"""

import math


def lr_lambda(args, steps_per_epoch):
    """The factor on --lr at optimizer step `step` (counted from 0), for the run the flags describe: its length is
    --max-steps or --epochs x `steps_per_epoch`, whichever ends first."""
    kind, warmup = args.lr_schedule, args.warmup_steps
    total = min(args.max_steps, args.epochs * steps_per_epoch)

    def factor(step):
        if step < warmup:
            return step / warmup
        if kind == "constant":
            return 1.0
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor
