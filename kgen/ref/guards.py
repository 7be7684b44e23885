"""What a traced graph does not show, and kgen must refuse rather than plan as if it were not there.

- Autocast switched on inside forward (`with torch.autocast(...)`): the context manager runs while fx traces but
  leaves no node, so the graph reads as if those ops ran in float32 (ModelNew's values would differ). Autograd
  switched off (`with torch.no_grad():`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`, a decorated
  helper) is no refusal: `GuardTracer` marks the nodes made while it was off (`grad_disabled`), and
  rewrite.detach_grad_disabled detaches their values where ops outside read them, as the reference's carry no
  gradient (a teacher branch, a target computed without autograd).
- An in-place op whose operand is a model input or a parameter / buffer (`x.mul_(0.5)` on forward's argument,
  `self.buf.add_(1)`), directly or through ops that may return their operand itself: the reference writes a
  tensor its caller (or the next call) sees. kgen's plan computes values, not writes, so ModelNew would leave the
  caller's tensor as it was, and a harness that runs the reference first and ModelNew on the same inputs after
  would hand ModelNew other inputs.
- Forward writing the model's own state (`self.buf.mul_(0.9)`, `self.steps += 1`): a buffer that is no proxy
  runs eagerly while fx traces, so the graph holds one snapshot (a `_tensor_constant`) where the reference reads
  a value that changes from call to call. `GuardTracer` compares the parameters' and buffers' version counters and
  the modules' number attributes before and after the trace.
- `y += 1` (and -=, *=, /=, ...): fx's Proxy has no __iadd__, so Python falls back to `y = y + 1` and the graph
  loses that the tensor y named was overwritten (`z = y; y += 1; return z + y` reads the new y twice in
  PyTorch). `GuardTracer` records the out-of-place op marked `augmented`; trace.resolve_inplace treats it, where
  the shapes show a tensor operand, as the in-place op it is (on a Python number it is the plain op).
- Parameters of another dtype than their op's input (`Model(...).half()` in __init__, float32 get_inputs()): the
  reference itself cannot run, yet meta tensors propagate some such ops (a GroupNorm), and the kernels would read
  the parameters as float32. `dtype_mismatch` names the op.
"""
from __future__ import annotations

import contextlib
import operator
from unittest import mock

import torch
import torch.fx
import torch.nn.functional as F
from torch.amp.autocast_mode import autocast

from kgen.ref import op_calls
from kgen.ref.concrete import ConcreteValues
from kgen.ref.graph import op_text
from kgen.ref.rewrite import may_return_operand


AUGMENTED = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "floordiv": "//=", "mod": "%=", "pow": "**=",
             "and_": "&=", "or_": "|=", "xor": "^=", "lshift": "<<=", "rshift": ">>=", "matmul": "@="}


class _Concrete:
    """len(), int(), float() and index use of a proxy, answered from the reference's shapes (concrete.ConcreteValues)."""

    def __len__(self):
        return self.tracer.length(self)

    def __int__(self):
        return self.tracer.number(self, int)

    def __index__(self):
        return self.tracer.number(self, int)

    def __float__(self):
        return self.tracer.number(self, float)

    def __setitem__(self, index, value):
        # recorded as operator.setitem, an in-place write that trace.resolve_inplace makes out of place (assigned)
        self.tracer.create_proxy("call_function", operator.setitem, (self, index, value), {})


class _ConcreteAttribute(_Concrete, torch.fx.proxy.Attribute):
    """torch.fx's attribute proxy (`x.shape`, before it is known to be a method call), with _Concrete's answers."""


class _AugmentedProxy(_Concrete, torch.fx.Proxy):
    """A Proxy whose `+=` (etc.) records the out-of-place op with meta["augmented"] = "+=" (the statement), and whose
    attributes and values Python asks for are _Concrete."""

    def __getattr__(self, k):
        return _ConcreteAttribute(self, k)


_AugmentedProxy.__name__ = _AugmentedProxy.__qualname__ = "Proxy"   # fx's errors name them as they did
_ConcreteAttribute.__name__ = _ConcreteAttribute.__qualname__ = "Attribute"


def _augmented(name: str, symbol: str):
    def method(self, other):
        proxy = self.tracer.create_proxy("call_function", getattr(operator, name), (self, other), {})
        proxy.node.meta["augmented"] = symbol
        return proxy
    return method


for _name, _symbol in AUGMENTED.items():
    setattr(_AugmentedProxy, f"__i{_name.rstrip('_')}__", _augmented(_name, _symbol))


# Factories whose size may be given as separate numbers (`torch.zeros(n, c, h, w)`), which the trace keeps as nodes
# (GuardTracer._size_factory).
SIZE_VARARG_FACTORIES = ("zeros", "ones", "empty", "rand", "randn")


class GuardTracer(ConcreteValues, torch.fx.Tracer):
    """torch.fx's tracer that marks every node made while autograd was not in the mode the trace began in, records
    augmented assignments (`y += 1`) as such, and answers Python's questions about shapes (concrete.py)."""

    def proxy(self, node):
        return _AugmentedProxy(node, self)

    def _modes(self) -> tuple:
        return torch.is_grad_enabled(), self._autocast > 0

    def trace(self, root, concrete_args=None):
        # autocast is counted as entered, not read from torch.is_autocast_enabled: on a machine without CUDA,
        # torch.autocast("cuda") disables itself, and the reference would run it enabled on the GPU.
        self._autocast = 0
        self._grad_mode = self._modes()
        before = _state(root)
        enter, leave = autocast.__enter__, autocast.__exit__

        def entered(context):
            self._autocast += 1
            return enter(context)

        def left(context, *exc):
            self._autocast -= 1
            return leave(context, *exc)

        with mock.patch.object(autocast, "__enter__", entered), mock.patch.object(autocast, "__exit__", left), \
                contextlib.ExitStack() as factories:
            for name in SIZE_VARARG_FACTORIES:
                factories.enter_context(mock.patch.object(torch, name, self._size_factory(getattr(torch, name))))
            graph = super().trace(root, concrete_args)
        after = _state(root)
        self.state_writes = [n for n in before if after.get(n) is not before[n] and after.get(n) != before[n]]
        return graph

    def _size_factory(self, factory):
        """`factory` (torch.zeros...) as the trace calls it: a size given as separate numbers one of which is a traced
        shape (`torch.zeros(x.shape[0], 4, device=x.device)`) becomes a node of the factory with the size as one tuple,
        symbolic as the reference computes it; PyTorch's parser takes no proxy among those numbers."""
        def call(*size, **kwargs):
            if size and any(isinstance(s, torch.fx.Proxy) for s in size) and \
                    all(isinstance(s, (int, torch.fx.Proxy)) for s in size):
                return self.create_proxy("call_function", factory, (tuple(size),), kwargs)
            return factory(*size, **kwargs)
        return call

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        (grad, cast), (began_grad, began_cast) = self._modes(), self._grad_mode
        if cast != began_cast or (grad and not began_grad):
            node.meta["grad_mode_changed"] = True
        elif began_grad and not grad:
            node.meta["grad_disabled"] = True
        return node


def _state(root) -> dict:
    """The version counter of every parameter and buffer, and every number attribute of every module."""
    if not isinstance(root, torch.nn.Module):
        return {}
    state = {f"self.{name}": t._version for name, t in root.named_parameters()}
    state.update({f"self.{name}": t._version for name, t in root.named_buffers()})
    for prefix, module in root.named_modules():
        state.update({f"self.{prefix + '.' if prefix else ''}{key}": value for key, value in vars(module).items()
                      if isinstance(value, (int, float, complex)) and key != "training"})
    return state


def refusal(graph: torch.fx.Graph, tracer: GuardTracer) -> tuple:
    """Why kgen cannot plan the traced forward although fx traced it: (the first op traced with autocast switched, or
    None; the reason, '' when it can), for the caller to say where."""
    switched = next((n for n in graph.nodes if n.meta.get("grad_mode_changed")), None)
    if switched is not None:
        return switched, ("runs with autocast switched (torch.autocast), which fx does not record: kgen cannot plan "
                          "it; compute it without the switch")
    if tracer.state_writes:
        return None, (f"Model.forward writes {', '.join(f'`{n}`' for n in tracer.state_writes)}, state of the model "
                      "that fx reads once while tracing: kgen cannot plan a forward that changes the model; keep such "
                      "state outside Model")
    return None, ""


# ---- parameters of another dtype than their op's input ----------------------------------------------------
# Ops that compute with the model's parameters in the dtype of their input: PyTorch refuses a parameter of another
# floating dtype (element-wise ops promote instead, and normalisations take float32 parameters beside a float16 or
# bfloat16 input: mixed precision; GroupNorm only on the CPU, its CUDA kernel refuses the mix, and kgen's regions
# compute it as the CPU kernel does: float32 statistics, an output of the input's dtype).
PARAMETER_FUNCTIONS = {F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d,
                       F.linear, F.bilinear, F.prelu, torch.prelu, torch.matmul, torch.mm, torch.bmm, torch.addmm,
                       operator.matmul}
NORM_FUNCTIONS = {F.group_norm, torch.group_norm, F.batch_norm, F.layer_norm, F.instance_norm}
PARAMETER_METHODS = {"matmul", "mm", "bmm"}
_NORMS = (torch.nn.GroupNorm, torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm,
          torch.nn.modules.instancenorm._InstanceNorm)


def dtype_mismatch(node: torch.fx.Node, gm: torch.fx.GraphModule) -> str:
    """Why the op cannot run as the reference wrote it, where its parameters (a module's own, or the get_attr tensors
    a function reads) are of another floating dtype than its input (found in the shapes' metadata); else ''."""
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        params = [t for t in (*module.parameters(recurse=False), *module.buffers(recurse=False))
                  if t.is_floating_point()]
        inputs, norm, what = _tensor_arguments(node), isinstance(module, _NORMS), op_text(node, {node.target: module})
    elif (node.op == "call_function" and node.target in PARAMETER_FUNCTIONS | NORM_FUNCTIONS) or \
            (node.op == "call_method" and node.target in PARAMETER_METHODS):
        attributes = [a for a in _tensor_arguments(node) if a.op == "get_attr"]
        params = [t for a in attributes if isinstance(t := _attribute(gm, a.target), torch.Tensor)
                  and t.is_floating_point()]
        inputs = [a for a in _tensor_arguments(node) if a.op != "get_attr"]
        norm, what = node.op == "call_function" and node.target in NORM_FUNCTIONS, op_text(node)
    else:
        return ""
    held = sorted({t.dtype for t in params}, key=str)
    fed = sorted({d for a in inputs if (d := _dtype(a)) is not None and d.is_floating_point}, key=str)
    mixed_precision = norm and held == [torch.float32] and set(fed) <= {torch.float16, torch.bfloat16}
    if not held or not fed or held == fed or mixed_precision:
        return ""
    held_text, fed_text = " and ".join(map(_dtype_name, held)), " and ".join(map(_dtype_name, fed))
    return (f"{what} has {held_text} parameters and its input is {fed_text}: PyTorch refuses the mix, so the reference "
            f"itself cannot run; build the model in its inputs' dtype (no `.half()` or `.to(...)` in __init__) "
            f"or have get_inputs() return {held_text} tensors")


def _tensor_arguments(node: torch.fx.Node) -> list:
    return [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.fx.Node)]


def _attribute(gm: torch.fx.GraphModule, target: str):
    owner = gm
    for part in target.split("."):
        owner = getattr(owner, part, None)
    return owner


def _dtype(node: torch.fx.Node):
    return getattr(node.meta.get("tensor_meta"), "dtype", None)


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def writes_caller(operand: torch.fx.Node, gm: torch.fx.GraphModule, is_view=lambda node: False) -> str:
    """What an in-place op on `operand` writes outside forward ("the model input `x`", "the parameter or buffer
    `self.w`"), following views and ops that may return their operand itself; '' for a value forward made."""
    while True:
        if operand.op == "placeholder":
            return f"the model input `{operand.target}`"
        if operand.op == "get_attr":
            return f"the parameter or buffer `self.{operand.target}`"
        if not ((is_view(operand) or may_return_operand(operand, gm)) and operand.args
                and isinstance(operand.args[0], torch.fx.Node)):
            return ""
        operand = operand.args[0]


def out_of_place_function(target):
    """The out-of-place spelling of an in-place function kgen fuses (`torch.relu_` and `F.relu_` -> F.relu,
    `F.elu_` -> F.elu, `torch.clamp_` -> torch.clamp, `torch.sigmoid_` -> F.sigmoid): the function of the same name
    less its trailing underscore, in F or torch, that the op table knows; else None."""
    name = getattr(target, "__name__", "")
    if not name.endswith("_") or name.startswith("_"):
        return None
    for namespace in (F, torch):
        function = getattr(namespace, name[:-1], None)
        if function is not None and function in op_calls.FUNCTIONS:
            return function
    return None


def read_through_a_view_later(node: torch.fx.Node, operand: torch.fx.Node, order: dict, is_view) -> bool:
    """Whether a name other than `operand` that shares its storage through views (its base, the base's base, any
    view of any of them) is read after the in-place `node`: then the write reaches a value the planner, which works
    on values, would read unchanged. A view written in place whose base is never read again is plain data."""
    base = operand
    while is_view(base) and base.args and isinstance(base.args[0], torch.fx.Node):
        base = base.args[0]
    family, pending = set(), [base]
    while pending:
        member = pending.pop()
        if member in family:
            continue
        family.add(member)
        pending += [u for u in member.users if is_view(u) and u.args and u.args[0] is member]
    return any(order[u] > order[node] for member in family - {operand} for u in member.users if u is not node)
