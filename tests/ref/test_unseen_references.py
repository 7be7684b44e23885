"""References written as people write models, none of them tuned for (tests/ref/unseen/: functional and torch.group_norm,
a Model without __init__, library ops after a region (cumsum, topk, sort, einsum, softmax, interpolate, attention),
time embeddings and per-sample scales, ModuleList loops, chunk, where, buffers, in-place modules, channels-last and
bfloat16 inputs, Python numbers among the inputs, Python that reads shapes (guided diffusion's ResBlock, stable
diffusion's VAE blocks), optional arguments get_inputs() leaves out, checkpointed blocks): each emits, passes KernelBench's static rules, plans at least one
region, its ModelNew builds with the reference's state (CPU, the CUDA build stubbed out), and its plan interpreted
with PyTorch's ops computes the reference's value."""
from pathlib import Path

import pytest
import torch

from kgen.emit import static_rule_violation
from kgen.ref.emit import emit_reference
from tests.ref.test_emitted_python import load_emitted, load_reference_module

UNSEEN = sorted((Path(__file__).parent / "unseen").glob("*.py"))


@pytest.mark.parametrize("path", UNSEEN, ids=lambda p: p.stem)
def test_an_unseen_reference_emits_and_builds_with_its_state(path, monkeypatch):
    text, _, lines = emit_reference(str(path))
    assert static_rule_violation(text) is None
    assert any(line.lstrip().startswith("kgen region") for line in lines), lines
    solution = load_emitted(text, monkeypatch)
    reference = load_reference_module(path)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    ours = solution.ModelNew(*init)
    torch.manual_seed(0)
    theirs = reference.Model(*init)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict(), strict=True)


@pytest.mark.parametrize("path", UNSEEN, ids=lambda p: p.stem)
def test_an_unseen_references_plan_computes_its_value(path):
    """The plan run step by step with PyTorch's ops (tests/ref/plan_interpreter.py) equals the reference's forward:
    the planner's reading of the graph (operands, constants, per-channel parameters, reductions) on CPU."""
    from tests.ref.plan_interpreter import assert_plan_computes_the_references_value
    assert_plan_computes_the_references_value(path)
