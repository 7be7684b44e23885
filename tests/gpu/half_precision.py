"""The bar the half-precision GPU tests hold kgen's results to: no further from float64 than twice PyTorch's own
float16 / bfloat16 run is, plus one rounding of the dtype at the result's magnitude."""
import torch


def assert_within_half_error(new, half, exact, dtype, what):
    """new (kgen's result) against half (PyTorch's at `dtype`), both judged by their distance to exact (float64)."""
    exact = exact.double()
    err_new = (new.double() - exact).abs().max().item()
    err_half = (half.double() - exact).abs().max().item()
    ulp = torch.finfo(dtype).eps * max(exact.abs().max().item(), 1e-6)
    assert err_new <= 2 * err_half + ulp, f"{what}: kgen {err_new:.3g} from float64, PyTorch at {dtype} {err_half:.3g}"
