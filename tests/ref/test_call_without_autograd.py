"""Each kgen step of an emitted forward (with `--autograd python`: each region a Python Function too) goes through `_call`: its autograd Function where grad mode is on, its forward
alone where it is off (inference pays no Function.apply). On the CPU, the extension stubbed by one that records what
it is asked: the same entry points run either way, the outputs are the same, and only the grad-mode call makes a graph
whose backward reaches the kernels' backward entry points."""
import types

import torch
import torch.utils.cpp_extension

from kgen.ref.emit import emit_reference

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 4)

    def forward(self, x, skip):
        return torch.relu(self.norm(x)) * torch.sigmoid(skip)


def get_inputs():
    return [torch.randn(2, 4, 3, 5), torch.randn(2, 4, 3, 5)]


def get_init_inputs():
    return []
'''


class RecordingExtension:
    """Stands in for the built extension: every entry point records its name and returns tensors of the right
    shapes (the region's output x * 2, an element-wise step's its first input + 1; gradients ones)."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def entry(*args):
            self.calls.append(name)
            if name.startswith("region") and name.endswith("_forward"):
                x = args[0]
                return x * 2, torch.zeros(x.shape[0], args[5], 2), torch.ones(x.shape[0], args[5]), None
            if name.startswith("region") and name.endswith("_backward"):
                dout, x, weight = args[0], args[1], args[2]
                return torch.ones_like(x), torch.ones_like(weight), torch.ones_like(weight), [], []
            if name.startswith("pointwise") and name.endswith("_forward"):
                return args[0][0] + 1
            if name.startswith("pointwise") and name.endswith("_backward"):
                return [torch.ones_like(t) for t in args[1]] + [[]]
            raise AssertionError(f"unexpected entry point {name}")
        return entry


def test_steps_run_their_forward_alone_without_grad_and_through_autograd_with_it(tmp_path, monkeypatch):
    path = tmp_path / "ref_call.py"
    path.write_text(REFERENCE)
    text, _, _ = emit_reference(str(path), autograd="python")
    assert "_call(_Region0, " in text and ".apply(" not in text.split("class ModelNew")[1]
    ext = RecordingExtension()
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: ext)
    module = types.ModuleType("emitted_call")
    exec(compile(text, "emitted_call.py", "exec"), module.__dict__)
    functions = [getattr(module, n) for n in dir(module) if n.startswith(("_Region", "_Pointwise"))]
    assert len(functions) >= 2
    model = module.ModelNew()
    x, skip = torch.randn(2, 4, 3, 5), torch.randn(2, 4, 3, 5)

    for f in functions:   # no Function.apply without grad
        monkeypatch.setattr(f, "apply", classmethod(lambda cls, *a: (_ for _ in ()).throw(AssertionError(cls))))
    with torch.no_grad():
        plain = model(x, skip)
    assert plain.grad_fn is None and "region0_forward" in ext.calls
    forward_calls = list(ext.calls)
    monkeypatch.undo()
    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: ext)

    ext.calls.clear()
    leaf = x.clone().requires_grad_(True)
    graded = model(leaf, skip)
    assert ext.calls == forward_calls   # the same entry points, in the same order
    assert torch.equal(graded.detach(), plain)
    assert graded.grad_fn is not None
    graded.sum().backward()
    assert "region0_backward" in ext.calls and leaf.grad is not None
