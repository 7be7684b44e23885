"""The eval-mode trial: both models switched to eval mode (`model.eval()`, what inference runs: dropout off, batch
norms on their running statistics, and whatever a forward does `if not self.training`), one trial forward and backward
with the trials' checks (trials.py), then both back in their mode. A solution that computes the reference's values
only in training mode fails here. The solution runs on the reference's buffers (running statistics...), then gets its
own back: the two models were called a different number of times in training mode (the reference's reproducibility
runs, the solution's determinism runs), each call moving a batch norm's running statistics, and the trial judges
what eval mode computes from a state, not how many calls led to it."""
from __future__ import annotations

import contextlib

import torch

from kgen.validate.checks import skipped
from kgen.validate.context import Context, StageError
from kgen.validate.stages.calls import EVAL_TRIAL, trial_label
from kgen.validate.stages.trials import stage_backward, stage_forward


@contextlib.contextmanager
def eval_mode(ctx: Context):
    modes = ctx.ref_model.training, ctx.new_model.training
    kept = borrow_buffers(ctx.new_model, ctx.ref_model)
    ctx.ref_model.eval()
    ctx.new_model.eval()
    try:
        yield
    finally:
        ctx.ref_model.train(modes[0])
        ctx.new_model.train(modes[1])
        with torch.no_grad():
            for buffer, value in kept:
                buffer.copy_(value)


def borrow_buffers(model: torch.nn.Module, source: torch.nn.Module) -> list:
    """Copies each buffer of `source` into `model`'s of the same name, shape and dtype; returns (buffer, its value
    before) to put back."""
    own = dict(model.named_buffers())
    kept = []
    with torch.no_grad():
        for name, value in source.named_buffers():
            buffer = own.get(name)
            if buffer is not None and buffer.shape == value.shape and buffer.dtype == value.dtype:
                kept.append((buffer, buffer.clone()))
                buffer.copy_(value)
    return kept


def stage_eval_forward(ctx: Context) -> None:
    """The trial's forward; where the reference itself cannot run in eval mode there is nothing to hold the solution
    to there: the trial is skipped, saying so (its backward then skips too)."""
    with eval_mode(ctx):
        try:
            stage_forward(ctx, EVAL_TRIAL)
        except StageError as error:
            if error.kind != "reference":
                raise
            ctx.add(skipped(f"{trial_label(EVAL_TRIAL)} forward", str(error)))


def stage_eval_backward(ctx: Context) -> None:
    with eval_mode(ctx):
        stage_backward(ctx, EVAL_TRIAL)
