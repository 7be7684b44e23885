"""Calling the models: the trials' inputs and seeds, random upstream gradients, and one forward+backward
that returns the outputs and every gradient (of the floating inputs and the trainable parameters)."""
from __future__ import annotations

from typing import Callable

import torch

from kgen.validate.context import Context, tensors_of

INPUT_KINDS = ("rand", "3+2*randn")   # the reference's distribution, then a shifted and scaled one
EVAL_TRIAL = -1   # the trial run with both models in eval mode (stages/modes.py), on the reference's distribution


def trial_kind(trial: int) -> str:
    return INPUT_KINDS[0] if trial == EVAL_TRIAL else INPUT_KINDS[trial % len(INPUT_KINDS)]


def trial_seed(ctx: Context, trial: int) -> int:
    return ctx.seed + (999_000 if trial == EVAL_TRIAL else 1000 * (trial + 1))


def trial_label(trial: int) -> str:
    return f"eval mode ({trial_kind(trial)})" if trial == EVAL_TRIAL else f"trial {trial + 1} ({trial_kind(trial)})"


def upstream_for(ctx: Context, seed: int, draw_dtype: torch.dtype | None = None) -> Callable[[list], list]:
    """A function giving the same random upstream gradients for outputs of the same shapes: drawn in
    `draw_dtype` (default: each output's own dtype), then cast to the output's dtype. An integer or bool output
    (an argmax's indices) has no gradient: zeros of its dtype stand in its place, and draw nothing."""
    def upstream(outs: list) -> list:
        generator = torch.Generator(device=ctx.device)
        generator.manual_seed(seed)
        return [torch.randn(o.shape, generator=generator, device=o.device, dtype=draw_dtype or o.dtype).to(o.dtype)
                if o.is_floating_point() else torch.zeros_like(o) for o in outs]
    return upstream


def upstream_like(upstream: Callable[[list], list], outs: list) -> Callable[[list], list]:
    """The upstream gradients `upstream` gives for `outs` (the reference's outputs, in their dtypes), cast to
    whatever outputs they are asked for (the float64 reference's): the same values, rounded as the reference's
    were."""
    drawn = upstream(outs)
    return lambda others: [g.to(o.dtype) for g, o in zip(drawn, others)]


def forward_backward(ctx: Context, model, inputs: list, upstream: Callable, want_grads: bool, autocast: bool = True):
    """Outputs (detached) and, if asked, {name: gradient} for the floating inputs and every trainable
    parameter (each in its parameter's or input's dtype); gradients are None if the outputs do not require grad
    at all. The forward runs under --autocast (unless `autocast` is False: the float64 truth), the backward
    outside it, as in training."""
    leaves = [x for x in tensors_of(inputs) if x.is_floating_point()]
    for x in leaves:
        x.requires_grad_(want_grads)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    with torch.set_grad_enabled(want_grads):
        outs = ctx.run(model, inputs, same_draws=True, autocast=autocast)
    if not want_grads:
        return outs, None
    touts = tensors_of(outs)
    diff = [(o, g) for o, g in zip(touts, upstream(touts)) if o.requires_grad]
    if not diff:
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in outs], None
    grads = torch.autograd.grad([o for o, _ in diff], leaves + [p for _, p in named],
                                grad_outputs=[g for _, g in diff], allow_unused=True)
    ctx.sync()
    del diff
    names = [f"input[{i}]" for i in range(len(leaves))] + [n for n, _ in named]
    for x in leaves:
        x.requires_grad_(False)
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outs], dict(zip(names, grads))
