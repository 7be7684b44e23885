"""The rounding jitter behind the rounding-sensitivity arbiter (kgen/validate/stages/sensitivity.py): it
perturbs every fresh floating result at the size of a few ulps, forward and backward, and nothing else."""
import torch

from kgen.validate.stages.sensitivity import JITTER_ULPS, RoundingJitter


def test_jitter_moves_fresh_results_by_a_few_ulps_and_leaves_the_rest():
    x = torch.rand(1000) + 1.0
    with RoundingJitter(seed=1) as jitter:
        y = x * 1.0                       # a fresh result: jittered
        view = y[:10]                     # a view: left alone (its values are y's)
        index = torch.argmax(x)           # integers: left alone
    rel = ((y - x) / x).abs()
    assert 0 < rel.max() <= (JITTER_ULPS + 1) * torch.finfo(torch.float32).eps   # + the product's own rounding
    assert (rel > 0).float().mean() > 0.5
    assert torch.equal(view, y[:10]) and index.dtype == torch.int64 and int(index) == int(torch.argmax(x))
    assert jitter.jittered == 1


def test_jitter_reaches_the_backward_and_is_reproducible():
    w = (torch.rand(64, 64) - 0.5).requires_grad_()
    x = torch.rand(8, 64) - 0.5

    def grad(seed):
        with RoundingJitter(seed=seed):
            (g,) = torch.autograd.grad(torch.tanh(x @ w).sum(), [w])
        return g

    (plain,) = torch.autograd.grad(torch.tanh(x @ w).sum(), [w])
    first, again, other = grad(3), grad(3), grad(4)
    assert torch.equal(first, again)
    assert not torch.equal(first, other) and not torch.equal(first, plain)
    assert (first - plain).abs().max() < 1e-4 * plain.abs().max()


def test_jitter_never_writes_an_operand_through_an_undeclared_alias():
    weight = torch.rand(4, 6)
    kept = weight.clone()
    with RoundingJitter(seed=2) as jitter:
        flat = torch.ops.aten._unsafe_view(weight, [24])   # shares weight's storage; its schema says fresh
    assert torch.equal(weight, kept) and flat.data_ptr() == weight.data_ptr()
    assert jitter.jittered == 0


def test_a_reference_failing_under_the_jitter_leaves_the_check_as_it_was():
    from kgen.validate.checks import failed
    from kgen.validate.stages.sensitivity import judge_by_sensitivity

    check = failed("trial 1 (rand) grad w", "max|Δ| 0.3")
    judged = judge_by_sensitivity(check, torch.ones(3), torch.zeros(3), "RuntimeError: boom", 1e-4, 1e-4)
    assert judged.ok is False and "rounding-sensitivity arbiter unavailable: RuntimeError: boom" in judged.detail
