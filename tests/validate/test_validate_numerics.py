"""The chunked comparisons the runtime checks are made of (device-agnostic; here on the CPU)."""
import math

import pytest
import torch

from kgen.validate.numerics import bitwise_equal, compare, shares_memory


@pytest.mark.parametrize("chunk", [7, 1 << 25])
def test_compare_agrees_with_allclose(chunk):
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(1000, generator=g)
    for scale in (1e-6, 1e-5, 1e-4, 1e-3):
        new = ref + scale * torch.randn(1000, generator=g)
        result = compare(new, ref, 1e-4, 1e-4, chunk=chunk)
        assert result.allclose == torch.allclose(new, ref, atol=1e-4, rtol=1e-4)
        assert result.max_abs == pytest.approx(float((new - ref).abs().max()))
        excess = float(((new - ref).abs() - 1e-4 - 1e-4 * ref.abs()).max())
        assert result.max_excess == pytest.approx(excess, abs=1e-9)
        assert (result.max_excess <= 0) == result.allclose


def test_compare_reports_the_worst_element():
    ref = torch.zeros(100)
    new = ref.clone()
    new[42] = 0.5
    result = compare(new, ref, 1e-4, 1e-4, chunk=10)
    assert result.outside == 1 and result.worst_index == 42 and result.worst_new == 0.5
    assert "1/100 outside" in result.summary()


def test_nan_only_where_the_reference_has_none_fails():
    ref = torch.ones(10)
    new = ref.clone()
    new[3] = math.nan
    result = compare(new, ref, 1e-4, 1e-4)
    assert not result.allclose and result.nan_mismatch == 1
    both = ref.clone()
    both[3] = math.nan
    assert compare(both.clone(), both, 1e-4, 1e-4).allclose   # NaN where the reference has NaN: equal


def test_infinities():
    ref = torch.tensor([math.inf, 1.0, -math.inf])
    assert compare(ref.clone(), ref, 1e-4, 1e-4).allclose
    assert not compare(torch.tensor([math.inf, math.inf, -math.inf]), ref, 1e-4, 1e-4).allclose
    assert not compare(torch.tensor([-math.inf, 1.0, -math.inf]), ref, 1e-4, 1e-4).allclose


def test_relative_error_ignores_tiny_references():
    ref = torch.tensor([1e-9, 1.0])
    new = torch.tensor([2e-9, 1.0 + 1e-6])
    assert compare(new, ref, 1e-4, 1e-4).max_rel == pytest.approx(1e-6, rel=0.1)


def test_mixed_precision_compare_runs_in_float64():
    ref = torch.rand(50, dtype=torch.float64)
    assert compare(ref.float(), ref, 1e-6, 0).allclose
    assert compare(ref.float(), ref, 1e-6, 0).max_abs > 0


def test_bitwise_equal():
    a = torch.randn(100)
    assert bitwise_equal(a, a.clone())
    b = a.clone()
    b[5] = torch.nextafter(b[5], torch.tensor(math.inf))
    assert not bitwise_equal(a, b)
    assert not bitwise_equal(a, a.double())
    assert not bitwise_equal(a, a[:50])
    nan = torch.full((3,), math.nan)
    assert bitwise_equal(nan, nan.clone())
    assert bitwise_equal(a.reshape(10, 10).t(), a.reshape(10, 10).t().contiguous())
    assert bitwise_equal(a, a.clone(), chunk=7)


def test_shares_memory():
    a = torch.randn(10, 10)
    assert shares_memory(a, a)
    assert shares_memory(a, a[3:])
    assert shares_memory(a.t(), a)
    assert not shares_memory(a, a.clone())


def test_fp64_chunks_never_leave_a_lone_last_sample():
    """The float64 arbiter's chunks cover the batch in order, and a last chunk of one sample joins the one before
    it: a GroupNorm with one value per group refuses a batch of one in training (own reference two_groupnorms,
    batch 33 in chunks of 8, fails so on the H100 without the join)."""
    from kgen.validate.stages.arbiter import chunk_bounds

    assert chunk_bounds(33, 8) == [(0, 8), (8, 16), (16, 24), (24, 33)]
    assert chunk_bounds(32, 8) == [(0, 8), (8, 16), (16, 24), (24, 32)]
    assert chunk_bounds(1, 8) == [(0, 1)]
    assert chunk_bounds(9, 8) == [(0, 9)]
    for batch in range(1, 40):
        bounds = chunk_bounds(batch, 4)
        assert bounds[0][0] == 0 and bounds[-1][1] == batch
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert batch == 1 or all(stop - start >= 2 for start, stop in bounds)
