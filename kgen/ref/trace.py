"""Reference file -> traced graph with shapes (the first room of `kgen emit --ref`).

The reference is a KernelBench file: `Model`, `get_inputs`, `get_init_inputs`. It is executed in a fresh
module namespace, `Model(*get_init_inputs())` is built on the CPU (parameters are never needed here, only
the module tree), and its forward is traced with torch.fx. Shapes are propagated with meta tensors
(`get_inputs()` runs under `torch.device("meta")`, so a 7.5 GB input costs nothing).

Every failure is a `RefError`: one line, naming the file (and the source line where there is one).
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import operator
import re
import traceback
import types
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp
from torch.nn.modules.lazy import LazyModuleMixin

from kgen.ref.carried import (REFERENCE_MODULE, bound_names, check_carried_inputs, free_names, init_source,
                              input_functions, own_functions_called, prelude_source, rename_shadowing, returning)
from kgen.ref.errors import RefError
from kgen.ref.errors import first_line as _short
from kgen.ref.graph import copied, meta_device, op_text
from kgen.ref.concrete import UntraceablePython, guard_none_arguments, none_arguments
from kgen.ref.modes import mark_training_flags, training_flags
from kgen.ref.guards import (GuardTracer, dtype_mismatch, out_of_place_function, read_through_a_view_later,
                             refusal, writes_caller)
from kgen.ref.rewrite import after_shapes, assigned, may_return_operand, prelu_as_function


@dataclass
class Reference:
    path: Path
    text: str
    sha256: str
    namespace: dict
    model: torch.nn.Module                 # built on the CPU with get_init_inputs()
    init_args: list
    input_shapes: list                     # get_inputs() shapes (tensors) or None for a non-tensor input
    graph: torch.fx.Graph
    gm: torch.fx.GraphModule
    init_source: str                       # Model.__init__, rewritten for ModelNew
    forward_lines: dict = field(default_factory=dict)   # node name -> source line text of the reference
    forward_line_numbers: dict = field(default_factory=dict)   # node name -> that line's number in the file
    prelude: str = ""                      # the reference's top-level definitions that ModelNew's code reads
    constants: dict = field(default_factory=dict)       # fx's tensor constants (torch.tensor(0.5) in forward)
    input_values: list = field(default_factory=list)   # get_inputs()'s non-tensor values (None for a tensor)
    input_source: str = ""                 # get_inputs and get_init_inputs as the reference defines them
    # A forward that branches on self.training (modes.py): the mode this graph was traced in, and the Reference of
    # the other mode's graph (the same model, namespace and carried code). None, None: one graph serves both modes.
    training: bool | None = None
    other_mode: "Reference | None" = None


def load_reference(path: str | Path, init_args: list | None = None) -> Reference:
    """The reference traced and shape-propagated. `init_args`: the arguments Model is built with instead of
    get_init_inputs()'s (a preset's --groups); the emitted file's get_init_inputs then returns them."""
    path = Path(path)
    given_init = init_args is not None
    if not path.is_file():
        raise RefError(f"{path}: no such file")
    text = path.read_text()
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as error:
        raise RefError(f"{path}:{error.lineno}: syntax error: {error.msg}") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise RefError(f"{path}: not a KernelBench reference: missing {', '.join(missing)}")
    module = types.ModuleType(REFERENCE_MODULE)
    module.__file__ = str(path)
    try:
        exec(compile(tree, str(path), "exec"), module.__dict__)
    except Exception as error:  # the reference's own top-level code failed
        raise RefError(f"{path}: executing the reference failed: {type(error).__name__}: {_short(error)}") from None
    ns = module.__dict__
    try:
        init_args = list(ns["get_init_inputs"]()) if init_args is None else list(init_args)
        torch.manual_seed(0)
        model = ns["Model"](*init_args)
    except Exception as error:
        raise RefError(f"{path}: Model(*get_init_inputs()) failed: {type(error).__name__}: {_short(error)}") from None
    lazy = next((name for name, m in model.named_modules() if isinstance(m, LazyModuleMixin)
                 and m.has_uninitialized_params()), None)
    if lazy is not None:
        raise RefError(f"{path}: `self.{lazy}` ({type(model.get_submodule(lazy)).__name__}) has no parameters until "
                       "its first call, so kgen cannot give ModelNew the same ones: give it its input size (the "
                       "module it stands for, e.g. nn.Conv2d with in_channels)")
    try:
        with meta_device():
            inputs = list(ns["get_inputs"]())
    except Exception as error:
        raise RefError(f"{path}: get_inputs() failed: {type(error).__name__}: {_short(error)}") from None
    # tracing adds fx's tensor constants to the model itself
    own_attributes = set(vars(model)) | set(model._parameters) | set(model._buffers) | set(model._modules)
    try:
        absent = none_arguments(model, inputs)   # forward's `cond=None` that get_inputs() leaves out
        mode = model.training
        traced = _traced(model, inputs, absent, path)
        model.train(not mode)
        other = _traced(model, inputs, absent, path)
        model.train(mode)
    except UntraceablePython as error:
        raise RefError(str(error)) from None
    except Exception as error:
        raise RefError(f"{_traced_line(error, path)}: torch.fx cannot trace Model.forward: {type(error).__name__}: "
                       f"{_short(error)}{_trace_hint(error)}") from None
    # one graph for both modes where only `self.training` arguments differ, else one a mode (modes.py)
    flags = training_flags(traced[0].graph, other[0].graph, mode)
    graphs = [(*traced, flags or [], mode)] + ([(*other, [], not mode)] if flags is None else [])
    for gm, tracer, mode_flags, graph_mode in graphs:
        _prepare(gm, tracer, mode_flags, graph_mode, inputs, path)
    functions = input_functions(tree)
    if given_init:
        functions = [f for f in functions if f.name != "get_init_inputs"] + [returning("get_init_inputs", init_args)]
    called = set().union(*(own_functions_called(gm) for gm, *_ in graphs))
    prelude = prelude_source(tree, set().union(*(free_names(f) for f in functions)) | called)
    input_source = "\n\n\n".join(ast.unparse(f) for f in functions)
    check_carried_inputs(prelude, input_source, inputs, path)
    names = set().union(*(bound_names(s) for s in tree.body))
    for gm, *_ in graphs:
        after_shapes(gm)   # after the flags: `training=self.training` is no constant False
        rename_shadowing(gm, names)
    gm = graphs[0][0]
    ref = Reference(
        path=path, text=text, sha256=hashlib.sha256(text.encode()).hexdigest(), namespace=ns, model=model,
        init_args=init_args,
        input_shapes=[list(t.shape) if isinstance(t, torch.Tensor) else None for t in inputs],
        input_values=[None if isinstance(t, torch.Tensor) else t for t in inputs],
        graph=gm.graph, gm=gm, init_source=init_source(tree, path),
        forward_lines=_forward_lines(gm, path), forward_line_numbers=_forward_line_numbers(gm, path),
        prelude=prelude, input_source=input_source, constants=_tensor_constants(gm, own_attributes),
        training=None if flags is not None else mode,
    )
    if flags is None:
        other_gm = graphs[1][0]
        ref.other_mode = replace(ref, graph=other_gm.graph, gm=other_gm, training=not mode,
                                 forward_lines=_forward_lines(other_gm, path),
                                 forward_line_numbers=_forward_line_numbers(other_gm, path),
                                 constants=_tensor_constants(other_gm, own_attributes))
    return ref


def _traced(model: torch.nn.Module, inputs: list, absent: dict, path: Path) -> tuple:
    """(GraphModule, its GuardTracer) of forward in the model's current mode."""
    tracer = shape_aware(GuardTracer(), inputs, path)
    tracer.record_stack_traces = True
    gm = torch.fx.GraphModule(model, tracer.trace(model, concrete_args=absent or None))
    guard_none_arguments(gm.graph, absent, path)
    return gm, tracer


def _prepare(gm: torch.fx.GraphModule, tracer: GuardTracer, flags: list, mode: bool, inputs: list,
             path: Path) -> None:
    """One traced graph made plannable: refusals, in-place ops out of place, shapes (node.meta), the flags."""
    refuse_custom_functions(gm.graph, path)   # its forward runs without autograd: named as what it is
    node, why = refusal(gm.graph, tracer)
    if why:
        raise RefError(f"{located(node, path) if node is not None else path}: {why}")
    normalize_tensor_keywords(gm.graph)
    resolve_inplace(gm, path)
    prelu_as_function(gm)
    # Shapes in eval mode: they are the same, and a BatchNorm with momentum=None reads num_batches_tracked
    # (.item()) in training mode, which a meta tensor cannot give.
    meta_gm = copied(gm).to("meta").eval()
    failed = _shape_failure(meta_gm, inputs)
    if failed is not None:
        node, error = failed
        where = located(node, path) if node is not None else str(path)
        why = dtype_mismatch(node, meta_gm) if node is not None else ""
        raise RefError(f"{where}: {why}" if why else f"{where}: running Model.forward on the reference's input shapes "
                       f"failed: {type(error).__name__}: {_short(error)}")
    # ShapeProp annotated the copy; carry the metadata over to the graph we plan from.
    for node, meta_node in zip(gm.graph.nodes, meta_gm.graph.nodes):
        node.meta.update(meta_node.meta)
    refuse_dtype_mismatch(gm, meta_gm, path)
    resolve_inplace(gm, path, augmented=True)   # `y += 1` where the shapes show y is a tensor
    mark_training_flags(gm.graph, flags, mode)   # after the shapes: PyTorch's ops take only a real bool


def _traced_line(error: BaseException, path: Path) -> str:
    """`path:LINE: `source`` of the reference's innermost line the trace failed in, or the path."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    if not frames:
        return str(path)
    return f"{path}:{frames[-1].lineno}: `{(frames[-1].line or '').strip()}`"


def _trace_hint(error: BaseException) -> str:
    """What to write instead, for the trace failures with a known cause."""
    if "module is not installed as a submodule" in str(error):
        return (" (a module kept outside the model's modules, e.g. in a plain list: nn.ModuleList registers it, its "
                "parameters then the model's)")
    if "descriptor" in str(error) and "'Proxy'" in str(error):
        return " (a Tensor method called unbound, torch.Tensor.relu(x): write x.relu() or torch.relu(x))"
    return ""


def shape_aware(tracer: GuardTracer, inputs: list, path: Path) -> GuardTracer:
    """`tracer` answering Python's questions about shapes from the reference's inputs (concrete.py)."""
    tracer.meta_inputs = inputs
    tracer.path = str(path)
    return tracer


# What a node whose result depends on its input's values gets in place of a meta value (and the nodes that read it):
# no shape, so the planner keeps them as the reference's own PyTorch calls (`y[y > 0.5]`, `torch.nonzero`, `.item()`).
DATA_DEPENDENT = object()


def _data_dependent(error: BaseException) -> bool:
    """Whether an op failed on meta tensors because its result's shape or value needs the data."""
    text = str(error)
    return type(error).__name__ == "DataDependentOutputException" or any(
        words in text for words in ("cannot be called on meta tensors", "data-independent implementation",
                                    "data-dependent"))


def _shape_failure(meta_gm: torch.fx.GraphModule, inputs: list):
    """None where the shapes propagate, else (the node that failed or None, the op's own error). ShapeProp prints
    the traceback and re-raises a RuntimeError naming the node with all its metadata; the user needs the op's
    message and the source line. A node whose result needs the data, and what reads it, get no shape (no error)."""
    prop = ShapeProp(meta_gm)
    failing = {}

    def run_node(node, _run=prop.run_node):
        failing["node"] = node
        if any(prop.env.get(a) is DATA_DEPENDENT for a in node.all_input_nodes):
            return DATA_DEPENDENT
        try:
            return _run(node)
        except Exception as error:
            if not _data_dependent(error.__context__ or error):
                raise
            return DATA_DEPENDENT   # a value of the data (a mask's selection, .item()): no shape, a library step

    prop.run_node = run_node
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            prop.propagate(*[t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs])
    except Exception as error:  # the reference's own op failed at these shapes
        return failing.get("node"), error.__context__ or error
    return None


def refuse_dtype_mismatch(gm: torch.fx.GraphModule, meta_gm: torch.fx.GraphModule, path: Path) -> None:
    """Parameters of one dtype fed inputs of another (a model made `.half()` in __init__, float32 get_inputs()): the
    meta tensors propagate some such ops (GroupNorm) that PyTorch refuses on a real device, so the reference itself
    cannot run, and a file planned from it would compute something else."""
    for node, meta_node in zip(gm.graph.nodes, meta_gm.graph.nodes):
        if why := dtype_mismatch(meta_node, meta_gm):
            raise RefError(f"{located(node, path)}: {why}")


# ---- custom autograd Functions ---------------------------------------------------------------------------
# fx traces a torch.autograd.Function's forward like any Python code: the ops inside it enter the graph and its
# own backward is lost, so a plan from them would differentiate the forward instead (a straight-through estimator
# would get other gradients). A graph node made inside such a forward is refused.

def _function_forwards() -> list:
    """(class name, file, first line, last line) of the forward of every torch.autograd.Function subclass loaded."""
    spans, pending = [], list(torch.autograd.Function.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        code = getattr(cls.__dict__.get("forward"), "__code__", None)
        if isinstance(cls.__dict__.get("forward"), staticmethod):
            code = getattr(cls.__dict__["forward"].__func__, "__code__", None)
        if code is not None:
            lines = [line for _, _, line in code.co_lines() if line is not None] or [code.co_firstlineno]
            spans.append((cls.__name__, code.co_filename, code.co_firstlineno, max(lines)))
    return spans


def refuse_custom_functions(graph: torch.fx.Graph, path: Path) -> None:
    spans = None
    for node in graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        if "in forward" not in trace:
            continue
        spans = _function_forwards() if spans is None else spans
        for name, filename, first, last in spans:
            for line in re.findall(rf'File "{re.escape(filename)}", line (\d+), in forward', trace):
                if first <= int(line) <= last:
                    raise RefError(f"{located(node, path)}: a custom torch.autograd.Function (`{name}`): fx traces its "
                                   "forward but not its backward, so kgen cannot plan it; kgen plans references whose "
                                   "gradients are autograd's own")


# ---- tensors passed by keyword -------------------------------------------------------------------------

def normalize_tensor_keywords(graph: torch.fx.Graph) -> None:
    """`torch.sigmoid(input=y)`, `self.gn(input=y)`, `torch.add(y, other=z)`: the tensor operands moved to the
    positions the planner reads them from."""
    for node in graph.nodes:
        if node.op not in ("call_function", "call_module"):
            continue
        kwargs = dict(node.kwargs)
        args = list(node.args)
        if not args and "input" in kwargs:
            args.append(kwargs.pop("input"))
        if len(args) == 1 and "other" in kwargs:
            args.append(kwargs.pop("other"))
        node.args, node.kwargs = tuple(args), kwargs


# ---- in-place ops ------------------------------------------------------------------------------------
# `nn.ReLU(inplace=True)`, `F.relu(x, inplace=True)`, `x.relu_()`, `x += 1`: the op overwrites its operand,
# so every LATER use of the operand reads the op's result (in `y = relu_(x); return y + x` both terms are
# relu(x)). The planner works on values, not memory: each such op is rewritten to its out-of-place form and
# the later uses of its operand are pointed at its result, which is what the reference computes. An
# in-place op on a view (`x[:, :4].relu_()` also changes x) cannot be told apart this way: a RefError.

_VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
                 "transpose", "permute", "narrow", "expand", "expand_as", "t", "select", "split", "chunk",
                 "unbind", "as_strided", "__getitem__", "movedim", "swapaxes", "diagonal", "unfold"}
_VIEW_FUNCTIONS = {operator.getitem, torch.flatten, torch.reshape, torch.transpose, torch.permute, torch.squeeze,
                   torch.unsqueeze, torch.narrow, torch.split, torch.chunk, torch.t, torch.select, torch.unbind,
                   torch.movedim, torch.swapaxes, torch.diagonal}
_INPLACE_OPERATORS = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
                      operator.itruediv: operator.truediv, operator.setitem: assigned}


def _is_view(node: torch.fx.Node) -> bool:
    return ((node.op == "call_method" and node.target in _VIEW_METHODS)
            or (node.op == "call_function" and node.target in _VIEW_FUNCTIONS))


def _inplace(node: torch.fx.Node, gm: torch.fx.GraphModule) -> bool:
    if node.op == "call_module":
        return bool(getattr(gm.get_submodule(node.target), "inplace", False))
    if node.op == "call_function":
        return node.target in _INPLACE_OPERATORS or bool(node.kwargs.get("inplace", False)) or \
            out_of_place_function(node.target) is not None
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.startswith("_")
    return False


def _item_augmented(node: torch.fx.Node) -> bool:
    """Whether `node` is the `+=` of `y[i] += v`: Python reads the item (a view no other op reads), adds out of place
    as the proxy records it, and assigns the sum back to y[i] (an item assignment, made out of place as `assigned`
    by the first pass): the value is the reference's, with no write through the view."""
    item = node.args[0]
    if not (item.op == "call_function" and item.target is operator.getitem and set(item.users) == {node}):
        return False
    users = list(node.users)
    return len(users) == 1 and users[0].op == "call_function" and users[0].target is assigned and \
        users[0].args[0] is item.args[0] and users[0].args[1] == item.args[1] and users[0].args[2] is node


def resolve_inplace(gm: torch.fx.GraphModule, path: Path, augmented: bool = False) -> None:
    """Rewrites the graph's in-place ops as out-of-place ones whose result later uses of the operand read (with
    `augmented`, once the shapes are known: the `y += 1` of a tensor y, which guards.GuardTracer marked)."""
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    for node in list(gm.graph.nodes):
        if not node.args or not isinstance(operand := node.args[0], torch.fx.Node) or not (
                node.meta.get("augmented") and tensor_shape(operand) is not None if augmented else _inplace(node, gm)):
            continue
        if augmented and _item_augmented(node):
            continue   # `y[i] += v`: Python writes the sum back with y[i] = ..., planned out of place already
        where = located(node, path)
        what = node.meta.get("augmented") or getattr(node.target, "__name__", node.target)   # relu_, not <built-in..>
        if read_through_a_view_later(node, operand, order, _is_view):
            raise RefError(f"{where}: in-place `{what}` on a tensor that has views: kgen cannot plan "
                           f"writes through aliases; write it out of place")
        if node.op == "call_method" and not callable(getattr(torch.Tensor, node.target[:-1], None)):
            raise RefError(f"{where}: in-place `{what}` has no out-of-place form (Tensor.{node.target[:-1]}) kgen "
                           f"could plan it by: write it out of place")
        if outside := writes_caller(operand, gm, _is_view):
            raise RefError(f"{where}: in-place `{what}` writes {outside}, which the caller sees: kgen cannot plan "
                           f"writes outside forward; write it out of place")
        if node.meta.get("grad_disabled") and not operand.meta.get("grad_disabled"):
            raise RefError(f"{where}: in-place `{what}` with autograd off on a tensor made with it on: its gradient "
                           f"passes the write as if nothing changed, which kgen cannot plan; write it out of place")
        # An op that may return its operand itself (x.contiguous(), nn.Identity, a cast to its own dtype): the
        # write reaches the other name too wherever that name is read after it.
        def read_later(value) -> bool:
            return any(order[u] > order[node] for u in value.users if u is not node)

        base = operand.args[0] if operand.args and isinstance(operand.args[0], torch.fx.Node) else None
        if (base is not None and may_return_operand(operand, gm) and read_later(base)) or \
                any(may_return_operand(u, gm) and order[u] < order[node] and read_later(u)
                    for u in operand.users if u is not node):
            raise RefError(f"{where}: in-place `{what}` on a tensor that may share its storage with another "
                           f"name read later (x.contiguous(), nn.Identity, a cast to its own dtype): kgen cannot "
                           f"plan writes through aliases; write it out of place")
        for user in list(operand.users):
            if user is not node and order[user] > order[node]:
                user.replace_input_with(operand, node)
        if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
            node.target = _INPLACE_OPERATORS[node.target]
        elif node.op == "call_function":
            node.target = out_of_place_function(node.target) or node.target
            node.kwargs = {k: v for k, v in node.kwargs.items() if k != "inplace"}
        elif node.op == "call_method":
            node.target = node.target[:-1]
        # call_module: the module keeps inplace=True; only the values it reads and writes were rewired
    gm.graph.lint()
    gm.recompile()


def _source_location(node: torch.fx.Node, path: Path) -> tuple[int, str] | None:
    """(line number, source text) of the reference's line a node was traced from (fx records the stack: the
    outermost frame in the reference, the line of Model.forward itself where a helper or submodule made the op)."""
    trace = (node.meta.get("stack_trace") or "").splitlines()
    for i, part in enumerate(trace[:-1]):
        found = re.match(rf'File "{re.escape(str(path))}", line (\d+)', part.strip())
        if found:
            return int(found.group(1)), trace[i + 1].strip()
    return None


def _source_line(node: torch.fx.Node, path: Path) -> str:
    location = _source_location(node, path)
    return location[1] if location else ""


def located(node: torch.fx.Node, path: Path, modules: dict | None = None) -> str:
    """Where an error about `node` points the user, in the reference's terms: `path:LINE: `source line``; for an op
    with no line of the reference (one kgen or fx made), the path and the op as it would be written there."""
    location = _source_location(node, path)
    if location is not None:
        return f"{path}:{location[0]}: `{location[1]}`"
    return f"{path}: {op_text(node, modules)} in Model.forward"


def _tensor_constants(gm: torch.fx.GraphModule, own_attributes: set) -> dict:
    """fx's attributes for tensors made in forward (`torch.tensor(0.5)` becomes `self._tensor_constant0`), which
    the model itself did not have: name -> the tensor, for ModelNew to register as buffers."""
    found = {}
    for node in gm.graph.nodes:
        if node.op != "get_attr" or node.target in own_attributes or not node.target.startswith("_tensor_constant"):
            continue
        value = getattr(gm, node.target, None)
        if isinstance(value, torch.Tensor):
            found[node.target] = value.detach().clone()
    return found


def _forward_lines(gm: torch.fx.GraphModule, path: Path) -> dict:
    """node name -> the reference's source line it came from (fx records the stack trace)."""
    return {node.name: line for node in gm.graph.nodes if (line := _source_line(node, path))}


def _forward_line_numbers(gm: torch.fx.GraphModule, path: Path) -> dict:
    """node name -> the number of that line in the reference (errors say `path:LINE:`)."""
    return {node.name: location[0] for node in gm.graph.nodes if (location := _source_location(node, path))}


def tensor_shape(node) -> list | None:
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    if meta is None or not hasattr(meta, "shape"):
        return None
    return list(meta.shape)


def tensor_dtype(node):
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return getattr(meta, "dtype", None)
