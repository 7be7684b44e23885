"""Python that reads shapes while Model.forward runs (kgen/ref/concrete.py): answered from the reference's input
shapes while fx traces, each answer a guard in the emitted forward. The file computes the reference's values where
the guards hold (other batch sizes included, where only ranks were read), refuses in one line naming the
reference's line where an answer would differ, and a branch on a tensor's values stays a one-line refusal."""
import re
from pathlib import Path

import pytest
import torch

from kgen.emit import static_rule_violation
from kgen.ref.emit import emit_reference
from kgen.ref.errors import RefError
from kgen.ref.plan import make_plan
from kgen.ref.trace import load_reference
from tests.ref.emulated_ext import emulated_ext
from tests.ref.test_emitted_glue import check_emitted_python
from tests.ref.test_emitted_python import load_emitted, load_reference_module

HERE = Path(__file__).parent
SHAPES_READ = HERE / "references" / "gn_shape_read_by_python.py"
ADM = HERE / "unseen" / "adm_resblock_scale_shift.py"
VAE_ATTENTION = HERE / "unseen" / "sd_vae_attn_block.py"


def guards(path) -> list[str]:
    return [line for line in emit_reference(str(path))[2] if line.startswith("shape guard:")]


def test_each_value_python_read_is_one_guard_naming_its_line():
    found = guards(SHAPES_READ)
    expected = [(15, "if x.dim() == 3:", "a condition that is False"),
                (17, "scale = int(x.shape[-1]) ** -0.5", "the value 5"),
                (19, "for _ in range(len(x.shape) - 3):", "a length of 4"),
                (22, "for size in x.shape[2:]:", "a length of 2")]
    assert len(found) == len(expected), found
    for line, (number, source, fact) in zip(found, expected):
        assert f"gn_shape_read_by_python.py:{number} (`{source}`): {fact}" in line, line


def test_references_that_fx_alone_cannot_trace_now_plan():
    """guided diffusion's `while len(emb_out.shape) < len(h.shape)` and stable diffusion's `int(c) ** (-0.5)`."""
    assert [g.split("): ")[-1] for g in guards(ADM)] == ["a length of 2 (concrete.py)", "a length of 4 (concrete.py)",
                                                       "a length of 3 (concrete.py)", "a length of 4 (concrete.py)"]
    assert [g.split("): ")[-1] for g in guards(VAE_ATTENTION)] == ["the value 64 (concrete.py)"]


@pytest.mark.parametrize("path, shapes", [(SHAPES_READ, [(3, 8, 6, 5)]), (VAE_ATTENTION, [(3, 64, 8, 12)])],
                         ids=["batch 3", "attention batch 3 other plane"])
def test_shapes_the_guards_leave_free_compute_the_references_values(path, shapes, monkeypatch):
    """Only ranks, the last size, the channels were read: another batch, another plane, the reference's values
    and gradients (float64)."""
    check_emitted_python(path, emit_reference(str(path))[0], monkeypatch, shapes=shapes)


UNET = HERE / "unseen" / "mini_diffusion_unet.py"


@pytest.mark.parametrize("path, shapes", [(ADM, [(5, 64, 16, 16), (5, 128)]), (ADM, [(2, 64, 12, 20), (2, 128)]),
                                          (UNET, [(2, 3, 16, 16), (2,)]), (UNET, [(3, 3, 24, 24), (3,)])],
                         ids=["resblock batch 5", "resblock other plane", "unet", "unet batch 3 other size"])
def test_guided_diffusion_at_shapes_its_len_reads_leave_free(path, shapes, monkeypatch):
    """GroupNorm32 runs in float32 whatever the model's dtype (no float64 copy of these references runs), so float32:
    the emitted file's output, input gradients and parameter gradients within float32 rounding of the reference's
    (the UNet: 8 regions, ResBlocks with scale-shift norm, an attention block that reads sizes through math.sqrt)."""
    solution = load_emitted(emit_reference(str(path))[0], monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(path)), solution)
    reference = load_reference_module(path)
    torch.manual_seed(0)
    theirs = reference.Model()
    ours = solution.ModelNew()
    ours.load_state_dict(theirs.state_dict())
    inputs = [torch.randn(s) for s in shapes]
    results = []
    for model in (theirs, ours):
        leaves = [x.clone().requires_grad_() for x in inputs]
        out = model(*leaves)
        out.backward(torch.ones_like(out))
        results.append([out.detach()] + [x.grad for x in leaves] + [p.grad for p in model.parameters()])
    for got, want in zip(results[1], results[0]):
        assert float((got - want).norm()) <= 1e-5 * float(want.norm()) + 1e-6


@pytest.mark.parametrize("shape, line, fact", [((2, 8, 6, 7), 17, "the value 5"),
                                               ((2, 8, 6), 15, "a condition that is False")],
                         ids=["last size", "rank"])
def test_a_call_where_an_answer_differs_is_refused_naming_the_line(shape, line, fact, monkeypatch):
    solution = load_emitted(emit_reference(str(SHAPES_READ))[0], monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(SHAPES_READ)), solution)
    reference = load_reference_module(SHAPES_READ)
    model = solution.ModelNew()
    x = torch.randn(shape, dtype=torch.float64)
    reference.Model().double()(x)   # the reference itself runs there, on another path through its Python
    with pytest.raises(AssertionError, match=re.escape(f"gn_shape_read_by_python.py:{line} (") + ".*" + fact):
        model.double()(x)


def test_a_branch_on_a_tensors_values_is_refused_in_the_users_words():
    path = HERE / "bad" / "branch_on_tensor_values.py"
    with pytest.raises(RefError) as info:
        emit_reference(str(path))
    assert str(info.value) == (f"{path}:12: `if y.sum() > 0:`: Python branches on the values of a tensor "
                               "(data-dependent control flow): kgen plans one graph for every input; write the "
                               "choice with torch.where")


def test_references_that_read_no_value_trace_as_before():
    """No guard where Python reads nothing: the bundled references' plans carry none."""
    for path in sorted((HERE.parents[1] / "kgen" / "specs" / "references").glob("*.py")):
        assert not guards(path), path


def test_an_optional_argument_get_inputs_leaves_out_is_traced_as_none_and_guarded(monkeypatch):
    """`forward(self, x, cond=None)` with `if cond is not None:` and get_inputs() giving x alone: the path without
    cond (a proxy is never None), the argument kept by its name and default, a call that passes it refused."""
    path = HERE / "unseen" / "gn_optional_cond_none.py"
    text, _, lines = emit_reference(str(path))
    assert any(line.startswith("shape guard:") and "`cond` is None" in line for line in lines), lines
    assert "    def forward(self, x, cond=None, *, eps=1e-05):" in text
    solution = load_emitted(text, monkeypatch)
    solution._ext = emulated_ext(make_plan(load_reference(path)), solution)
    model = solution.ModelNew().double()
    x = torch.randn(3, 16, 50, dtype=torch.float64)
    assert model(x).shape == (3, 16, 50) and model(x, None).shape == (3, 16, 50)
    with pytest.raises(AssertionError, match="forward's argument `cond` is None in the reference's get_inputs()"):
        model(x, torch.randn(3, 8, dtype=torch.float64))


def test_a_guard_quotes_no_line_with_a_word_kernelbenchs_checker_rejects(tmp_path):
    """The guard's message is in the emitted file: a reference line holding `pass` (a comment) is named, not quoted."""
    path = tmp_path / "model.py"
    path.write_text(SHAPES_READ.read_text().replace("if x.dim() == 3:", "if x.dim() == 3:  # 4-D inputs pass as they are"))
    text = emit_reference(str(path))[0]
    assert static_rule_violation(text) is None
    assert f"kgen: {path}:15 read a condition that is False" in text


ZERO_PAD = HERE / "unseen" / "gn_zero_channel_pad_shortcut.py"


def test_a_factory_sized_by_separate_traced_numbers_stays_symbolic(monkeypatch):
    """`torch.zeros(n, extra, height, width)` with n, height, width read off x.shape: PyTorch's parser takes no proxy
    among separate numbers (torch.fx alone fails there); the trace makes it a node of torch.zeros with the size as one
    tuple, so the shortcut's zero channels follow the input's batch and plane, no guard."""
    text, _, lines = emit_reference(str(ZERO_PAD))
    assert "torch.zeros((" in text and not [g for g in lines if g.startswith("shape guard:")]
    check_emitted_python(ZERO_PAD, text, monkeypatch, shapes=[(2, 16, 7, 9)])
