"""kgen's BatchNorm step (batchnorm/train.cuh) beyond what `kgen validate` checks: the running statistics and
num_batches_tracked after several training steps (momentum given and momentum=None), eval mode (running
statistics, the peeled convolution bias moved into the mean) forward and backward, and a switch back to
training. Each reference in tests/ref/references with a batch norm, emitted with `kgen emit --ref`; fresh random
inputs every step. Needs a CUDA device."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.gpu.half_precision import assert_within_half_error as within_half
from tests.solution_loader import import_file

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent.parent
REFERENCES = ["convt_bn_tanh_maxpool_gn_odd", "linear_bn1d_noaffine_relu_gn", "conv3d_bn_silu_scale_avgpool_gn"]


def emitted(name, tmp_path, edit=None):
    """(reference module, solution module) for an own reference, its text first changed by `edit`."""
    reference = ROOT / "tests" / "ref" / "references" / f"{name}.py"
    if edit is not None:
        changed = tmp_path / f"{name}_edited.py"
        changed.write_text(edit(reference.read_text()))
        reference = changed
    solution = tmp_path / f"{name}_solution.py"
    result = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--ref", str(reference), "-o", str(solution)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return import_file(reference), import_file(solution)


def assert_close(actual, expected, exact, what):
    """actual within tolerance of the float32 reference, judged against float64 (`exact`): its error may be
    ten times the reference's own, or 1e-4 of the values' scale (a gradient that is zero in exact
    arithmetic, such as a bias the batch statistics remove, is rounding noise in float32)."""
    exact = exact.to(actual.dtype)
    scale = exact.abs().max().item() + 1e-12
    error = (actual - exact).abs().max().item()
    reference_error = (expected - exact).abs().max().item()
    assert error <= max(10 * reference_error, 1e-4 * scale, 1e-7), \
        f"{what}: max error {error:.3e} against float64, the reference's {reference_error:.3e}, scale {scale:.3e}"


def step(model, x, upstream):
    """One forward and backward; upstream is a tensor or a generator to draw it from (after the forward,
    whose output shape it needs: a second forward would count in the running statistics)."""
    leaf = x.clone().requires_grad_()
    out = model(leaf)
    if isinstance(upstream, torch.Generator):
        upstream = torch.randn(out.shape, device="cuda", generator=upstream)
    out.backward(upstream)
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return out.detach(), leaf.grad, grads, upstream


def compare(ref_model, exact_model, new_model, shape, generator, label):
    x = torch.randn(*shape, device="cuda", generator=generator)
    ref_out, ref_dx, ref_grads, upstream = step(ref_model, x, generator)
    exact_out, exact_dx, exact_grads, _ = step(exact_model, x.double(), upstream.double())
    new_out, new_dx, new_grads, _ = step(new_model, x, upstream)
    assert_close(new_out, ref_out, exact_out, f"{label}: output")
    assert_close(new_dx, ref_dx, exact_dx, f"{label}: input gradient")
    assert set(new_grads) >= {k for k, g in exact_grads.items() if g.abs().max() > 1e-9}, (set(new_grads), set(ref_grads))
    for name, grad in ref_grads.items():
        actual = new_grads.get(name, torch.zeros_like(grad))
        assert_close(actual, grad, exact_grads[name], f"{label}: gradient of {name}")


def fresh_models(ref, sol, init):
    """(reference, its float64 copy, kgen's ModelNew with the reference's state) on the GPU."""
    torch.manual_seed(0)
    ref_model = ref.Model(*init).cuda()
    new_model = sol.ModelNew(*init).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    return ref_model, copy.deepcopy(ref_model).double(), new_model


def assert_same_buffers(ref_model, exact_model, new_model, label):
    ref_buffers, exact_buffers = dict(ref_model.named_buffers()), dict(exact_model.named_buffers())
    new_buffers = dict(new_model.named_buffers())
    assert set(ref_buffers) == set(new_buffers)
    for name, value in ref_buffers.items():
        if value.dtype == torch.long:
            assert torch.equal(new_buffers[name], value), f"{label}: {name}"
        else:
            assert_close(new_buffers[name], value, exact_buffers[name], f"{label}: buffer {name}")


@pytest.mark.parametrize("name", REFERENCES)
def test_running_statistics_and_eval_mode(name, tmp_path):
    ref, sol = emitted(name, tmp_path)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    models = fresh_models(ref, sol, init)
    generator = torch.Generator("cuda").manual_seed(7)
    for i in range(3):
        compare(*models, shape, generator, f"training step {i}")
        assert_same_buffers(*models, f"after training step {i}")
    for m in models:
        m.eval()
    compare(*models, shape, generator, "eval")
    assert_same_buffers(*models, "after eval")
    for m in models:
        m.train()
    compare(*models, shape, generator, "training again")
    assert_same_buffers(*models, "training again")


def test_batch_of_one_value_per_channel_is_refused_like_the_reference(tmp_path):
    ref, sol = emitted("linear_bn1d_noaffine_relu_gn", tmp_path)
    model = sol.ModelNew(*ref.get_init_inputs()).cuda()
    with pytest.raises((ValueError, RuntimeError), match="more than 1 value per channel"):
        model(torch.randn(1, ref.get_init_inputs()[0], device="cuda"))


def test_a_window_other_than_the_emitted_one_takes_the_generic_walk(tmp_path):
    """The file's kernels are unrolled for the 2x2 window it was emitted for; a model whose pooling was
    changed to 3x3 afterwards runs the generic window walk, and still matches the reference (with 11x11
    planes, 3x3 windows leave two rows and columns outside every window)."""
    ref, sol = emitted("convt_bn_tanh_maxpool_gn_odd", tmp_path)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    torch.manual_seed(0)
    ref_model = ref.Model(*init).cuda()
    new_model = sol.ModelNew(*init).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    for m in (ref_model, new_model):
        m.max_pool.kernel_size = 3
        m.max_pool.stride = 3
    exact_model = copy.deepcopy(ref_model).double()
    compare(ref_model, exact_model, new_model, shape, torch.Generator("cuda").manual_seed(3), "3x3 windows")
    assert_same_buffers(ref_model, exact_model, new_model, "3x3 windows")


def no_running_stats(text):
    assert "nn.BatchNorm3d(c_out, momentum=0.3)" in text
    return text.replace("nn.BatchNorm3d(c_out, momentum=0.3)", "nn.BatchNorm3d(c_out, track_running_stats=False)")


def no_pooling(text):
    assert "return self.gn(self.pool(y))" in text
    return text.replace("return self.gn(self.pool(y))", "return self.gn(y)")


# (reference, edit of its text) of each file this suite emits: benchmarks/prebuild_gpu_tests.py builds them first.
EMITTED = [(name, None) for name in REFERENCES] + [("conv3d_bn_silu_scale_avgpool_gn", no_running_stats),
                                                  ("conv3d_bn_silu_scale_avgpool_gn", no_pooling)]


def test_batch_statistics_without_running_ones(tmp_path):
    """track_running_stats=False: batch statistics in training and in eval mode alike, no buffers to update."""
    ref, sol = emitted("conv3d_bn_silu_scale_avgpool_gn", tmp_path, no_running_stats)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    models = fresh_models(ref, sol, init)
    new_model = models[2]
    generator = torch.Generator("cuda").manual_seed(11)
    compare(*models, shape, generator, "training, no running statistics")
    for m in models:
        m.eval()
    compare(*models, shape, generator, "eval, no running statistics")
    assert not dict(new_model.named_buffers())


def test_no_pooling_with_planes_of_4_value_packs(tmp_path):
    """Without the pooling, the step's output is the full tensor and its kernels read and write 4-value packs
    (planes of 6 x 8 x 10 values): forward, backward and the running statistics."""
    ref, sol = emitted("conv3d_bn_silu_scale_avgpool_gn", tmp_path, no_pooling)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    models = fresh_models(ref, sol, init)
    generator = torch.Generator("cuda").manual_seed(5)
    for i in range(2):
        compare(*models, shape, generator, f"no pooling, training step {i}")
        assert_same_buffers(*models, f"no pooling, after training step {i}")
    for m in models:
        m.eval()
    compare(*models, shape, generator, "no pooling, eval")


@pytest.mark.parametrize("window", [2, 3])
def test_max_pooling_ties_go_to_the_first_maximum(window, tmp_path):
    """Integer weights and inputs make the convolution's outputs integers, so pooling windows hold exact ties
    (equal values, hence equal tanh): PyTorch routes a window's gradient to its first maximum, and so must kgen,
    whose backward finds the winner by the x the forward saved (the first value with its bits). 2x2 windows take
    the unrolled kernels, 3x3 the generic walk."""
    ref, sol = emitted("convt_bn_tanh_maxpool_gn_odd", tmp_path)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    torch.manual_seed(0)
    ref_model = ref.Model(*init).cuda()
    with torch.no_grad():
        ref_model.conv_transpose.weight.copy_(torch.randint_like(ref_model.conv_transpose.weight, -1, 2))
        ref_model.conv_transpose.bias.zero_()
    new_model = sol.ModelNew(*init).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    for m in (ref_model, new_model):
        m.max_pool.kernel_size = window
        m.max_pool.stride = window
    exact_model = copy.deepcopy(ref_model).double()
    generator = torch.Generator("cuda").manual_seed(4)
    x = torch.randint(0, 2, shape, device="cuda", generator=generator).float()
    conv = ref_model.conv_transpose(x)
    pooled = torch.nn.functional.max_pool2d(conv, window)
    windows = torch.nn.functional.unfold(conv.reshape(-1, 1, *conv.shape[2:]), window, stride=window)
    ties = (windows == pooled.reshape(-1, 1, windows.shape[-1])).sum(1) > 1
    assert int(ties.sum()) > 100, "the input was meant to have ties"
    ref_out, ref_dx, ref_grads, upstream = step(ref_model, x, generator)
    exact_out, exact_dx, exact_grads, _ = step(exact_model, x.double(), upstream.double())
    new_out, new_dx, new_grads, _ = step(new_model, x, upstream)
    assert_close(new_out, ref_out, exact_out, "ties: output")
    assert_close(new_dx, ref_dx, exact_dx, "ties: input gradient")
    for name, grad in ref_grads.items():
        assert_close(new_grads.get(name, torch.zeros_like(grad)), grad, exact_grads[name], f"ties: gradient of {name}")


HALF_CASES = [(name, None) for name in REFERENCES] + [("conv3d_bn_silu_scale_avgpool_gn", no_pooling)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("name, edit", HALF_CASES, ids=REFERENCES + ["no_pooling"])
def test_half_precision_steps_read_their_own_storage(name, edit, dtype, tmp_path):
    """The model and its input moved to float16 / bfloat16 (KernelBench's --precision): the step's kernels read and
    write that dtype (every bn_ kernel that reads x is the 2-byte instantiation), and the output, every gradient and
    the running statistics stay within twice PyTorch's own half-precision error of float64, over two training steps
    and one in eval mode; fresh inputs each step."""
    ref, sol = emitted(name, tmp_path, edit)
    init = ref.get_init_inputs()
    shape = list(ref.get_inputs()[0].shape)
    torch.manual_seed(0)
    ref_model = ref.Model(*init).cuda()
    with torch.no_grad():   # non-trivial affine parameters where the batch norm has them
        for module in ref_model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.affine:
                module.weight.normal_(1.0, 0.5)
                module.bias.normal_(0.0, 0.5)
    new_model = sol.ModelNew(*init).cuda()
    new_model.load_state_dict(ref_model.state_dict())
    half_model = copy.deepcopy(ref_model).to(dtype)
    exact_model = copy.deepcopy(ref_model).double()
    new_model = new_model.to(dtype)
    generator = torch.Generator("cuda").manual_seed(13)
    storage = "__nv_bfloat16" if dtype == torch.bfloat16 else "__half"
    for label in ("training step 0", "training step 1", "eval"):
        if label == "eval":
            for m in (half_model, exact_model, new_model):
                m.eval()
        x = (torch.randn(*shape, device="cuda", generator=generator) * 2 + 0.5).to(dtype)
        upstream = None
        runs = {}
        for key, model, cast in (("half", half_model, dtype), ("exact", exact_model, torch.float64)):
            leaf = x.to(cast).clone().requires_grad_()
            out = model(leaf)
            if upstream is None:
                upstream = torch.randn(out.shape, device="cuda", generator=generator)
            out.backward(upstream.to(cast))
            runs[key] = (out.detach(), leaf.grad, {n: p.grad.clone() for n, p in model.named_parameters()
                                                   if p.grad is not None})
            model.zero_grad(set_to_none=True)
        leaf = x.clone().requires_grad_()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            out = new_model(leaf)
            out.backward(upstream.to(dtype))
            torch.cuda.synchronize()
        kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        bn_kernels = [k for k in kernels if "bn_" in k and "totals" not in k and "finalize" not in k]
        assert bn_kernels and all(storage in k for k in bn_kernels), bn_kernels
        grads = {n: p.grad.clone() if p.grad is not None else torch.zeros_like(p)
                 for n, p in new_model.named_parameters()}
        new_model.zero_grad(set_to_none=True)
        assert out.dtype == dtype and leaf.grad.dtype == dtype
        within_half(out.detach(), runs["half"][0], runs["exact"][0], dtype, f"{label}: output")
        within_half(leaf.grad, runs["half"][1], runs["exact"][1], dtype, f"{label}: input gradient")
        for n, g in runs["exact"][2].items():
            within_half(grads[n], runs["half"][2][n], g, dtype, f"{label}: gradient of {n}")
        buffers = dict(new_model.named_buffers())
        for n, value in half_model.named_buffers():
            if value.dtype != torch.long:
                within_half(buffers[n], value, dict(exact_model.named_buffers())[n], dtype, f"{label}: buffer {n}")
