"""Python values a reference's forward computes from its tensors' shapes while torch.fx traces it, and the guards that
keep the emitted file to them.

torch.fx traces with proxies that carry no values, so Python that needs one stops the trace: guided diffusion's
`while len(emb_out.shape) < len(h.shape): emb_out = emb_out[..., None]` ("'len' is not supported in symbolic
tracing"), stable diffusion's attention `w_ * (int(c) ** (-0.5))` with `b, c, h, w = q.shape`, `if x.dim() == 3:`,
`for i in range(x.size(0)):`. These values come from shapes, which the reference's get_inputs() fixes. So the tracer
(guards.GuardTracer, with this mixin) answers them: the graph traced so far runs on meta tensors (a meta copy of the
model, the reference's input shapes) up to the value asked for, and Python gets that number, bool or length.

What was answered is then a fact the emitted file assumes. Each answer adds a guard to the graph where the
reference's Python read it: `torch._assert(len(shape) == 2, "kgen: ...")` (`int(c)`: `c == 64`; `if x.dim() == 3`:
the comparison's truth). ModelNew checks it as the reference reaches it, so a call with other shapes that would
take another path through the reference's Python is refused in one line, naming the reference's line, rather than
computed as the traced shapes would. Shapes that the graph keeps symbolic (a `view(n, c, h * w)` of `x.shape`) stay
free. A value of a tensor's data (`if x.sum() > 0`) has no meta answer: the trace fails as before, saying so.
"""
from __future__ import annotations

import builtins
import contextlib
import operator
import re
import traceback

import torch
import torch.fx

from kgen.ref.graph import copied

# Words KernelBench's static checker rejects anywhere in a solution (kgen.emit.static_rule_violation): a guard's
# message quotes no source line that holds one.
STATIC_WORDS = re.compile(r"\b(try|except|pass)\b")

# node.meta keys: a guard's torch._assert (its words: planned as a library step the emitted forward always runs, one
# line of --explain) and the ops that compute what it checks (len, ==, not: no line of their own)
GUARD = "kgen_guard"
GUARD_PART = "kgen_guard_part"


class UntraceablePython(torch.fx.proxy.TraceError):
    """Python that kgen cannot trace, said in one line (the user's line and what to do): `if` on a tensor's values
    (no shape answers it)."""


class ConcreteValues:
    """Mixin for a torch.fx.Tracer: bool(), iter(), len(), int(), float() and index use of a proxy answered from a
    meta run of the graph so far, each answer guarded (once per value). The tracer is given `meta_inputs` (the
    reference's inputs as meta tensors, forward's order) and `path` (the reference, for the guards' words); without
    meta_inputs it behaves as torch.fx's."""

    meta_inputs: list | None = None
    path: str = "the reference"

    # ---- torch.fx.Tracer hooks, and the proxy's (guards._Concrete) ----
    def to_bool(self, obj):
        value = self.concrete(obj)
        if isinstance(value, torch.Tensor):
            raise UntraceablePython(f"{self._reference_line(quoted=True) or 'Model.forward'}: Python branches on "
                                    "the values of a tensor (data-dependent control flow): kgen plans one graph for "
                                    "every input; write the choice with torch.where")
        if not isinstance(value, (bool, int)):
            self.unanswered()
            return super().to_bool(obj)
        if self._first(obj, "bool"):
            self._part(obj)   # the reference's condition, which only the guard reads now
            check = obj if value else self._part(self.create_proxy("call_function", operator.not_, (obj,), {}))
            self.guard(check, f"a condition that is {bool(value)}")
        return bool(value)

    def iter(self, obj):
        value = self.concrete(obj)
        if not _sized(value):
            self.unanswered()
            return super().iter(obj)
        self.guard_length(obj, len(value))
        return iter([obj[i] for i in range(len(value))])

    def unanswered(self) -> None:
        """Where a meta run failed on an op (not on a data-dependent value), the reference itself fails at its input
        shapes before this line: said so, rather than torch.fx's words for a value it cannot read."""
        error = getattr(self, "meta_failure", None)
        if error is None:
            return
        text = str(error).strip().splitlines()
        raise UntraceablePython(f"{self._reference_line(quoted=True) or 'Model.forward'}: running Model.forward on "
                                f"the reference's input shapes up to this line failed: {type(error).__name__}: "
                                f"{text[0] if text else ''}")

    def length(self, obj) -> int:
        value = self.concrete(obj)
        if not _sized(value):
            self.unanswered()
            raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                               "recorded, please call torch.fx.wrap('len') at module scope")
        self.guard_length(obj, len(value))
        return len(value)

    def number(self, obj, kind: type):
        value = self.concrete(obj)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.unanswered()
            raise TypeError(f"{kind.__name__}() of a traced value that is not a shape: kgen cannot read it while "
                            "tracing")
        if self._first(obj, "value"):
            self.guard(self._part(self.create_proxy("call_function", operator.eq, (obj, value), {})),
                       f"the value {value!r}")
        return kind(value)

    # ---- the answers ----
    def concrete(self, obj):
        """The value of proxy `obj` at the reference's input shapes, or None where there is none (no meta inputs,
        a value of a tensor's data, an op meta tensors cannot run)."""
        self.meta_failure = None
        if self.meta_inputs is None or not isinstance(obj, torch.fx.Proxy):
            return None
        owners = self.__dict__.setdefault("_meta_owners", {})   # meta copies, made once a trace
        try:
            return _run_until(self.root, self.graph, obj.node, self.meta_inputs, owners)
        except Exception as error:   # no answer: the trace fails, saying why where the reference itself failed
            self.meta_failure = error.__context__ or error
            return None

    def guard_length(self, obj, n: int) -> None:
        if self._first(obj, "len"):
            length = self._part(self.create_proxy("call_function", builtins.len, (obj,), {}))
            self.guard(self._part(self.create_proxy("call_function", operator.eq, (length, n), {})),
                       f"a length of {n}")

    def guard(self, check, fact: str) -> None:
        """torch._assert(check), its message naming the reference's line that read `fact`."""
        where = self._reference_line()
        message = (f"kgen: {where or 'the reference'} read {fact} from the shapes this file was planned for; these "
                   "inputs give another: emit the file again from a reference whose get_inputs() gives them")
        node = self.create_proxy("call_function", torch._assert, (check, message), {}).node
        node.meta[GUARD] = f"{where or 'the reference'}: {fact}"

    def _first(self, obj, kind: str) -> bool:
        """Whether this value (a node, or an attribute of one: each `x.shape` is a node of its own) is asked for
        the first time as `kind`: it is guarded once."""
        key = (obj.root.node, obj.attr) if isinstance(obj, torch.fx.proxy.Attribute) else obj.node
        seen = self.__dict__.setdefault("_guarded", set())
        if (key, kind) in seen:
            return False
        seen.add((key, kind))
        return True

    @staticmethod
    def _part(proxy):
        proxy.node.meta[GUARD_PART] = True
        return proxy

    def _reference_line(self, quoted: bool = False) -> str:
        """The reference's innermost frame now on the stack (the line whose Python asks), or "": "PATH:LINE: `source`"
        for an error (`quoted`), else "PATH:LINE (`source`)" for a guard's message, which is in the emitted file:
        there a source line holding a word KernelBench's static checker rejects is named, not quoted."""
        for frame in reversed(traceback.extract_stack()):
            if frame.filename == str(self.path):
                source = (frame.line or "").strip()
                if quoted:
                    return f"{self.path}:{frame.lineno}: `{source}`"
                return f"{self.path}:{frame.lineno}" + ("" if STATIC_WORDS.search(source) else f" (`{source}`)")
        return ""


def _sized(value) -> bool:
    """A sequence of values, or a tensor of at least one dimension (len and iteration over its first)."""
    return isinstance(value, (tuple, list, torch.Size)) or (isinstance(value, torch.Tensor) and value.dim() > 0)


def _run_until(root, graph: torch.fx.Graph, target: torch.fx.Node, meta_inputs: list, owners: dict):
    """The value of `target` when the nodes of `graph` up to it run on meta tensors: a copy of those nodes, their
    modules and attributes moved to meta (kept in `owners` by target, for the next question), run by torch.fx's
    Interpreter on `meta_inputs`."""
    partial = torch.fx.Graph()
    env: dict = {}
    nodes = []
    for node in graph.nodes:
        env[node] = partial.node_copy(node, lambda n: env[n])
        nodes.append(node)
        if node is target:
            break
    partial.output(env[target])
    with _untraced():   # the model's attributes as they are, not the tracer's proxies for them
        for n in nodes:
            if n.op in ("call_module", "get_attr") and n.target not in owners:
                owners[n.target] = _meta_attribute(root, n.target)
        used = {n.target: owners[n.target] for n in nodes if n.op in ("call_module", "get_attr")}
        return torch.fx.Interpreter(torch.fx.GraphModule(used, partial)).run(*meta_inputs)


def _untraced():
    """torch.fx's patches of nn.Module.__call__ and __getattr__ lifted while the meta run calls modules (torch.fx's
    own context for that; where a torch lacks it, the modules' calls would be traced: no answer)."""
    revert = getattr(torch.fx._symbolic_trace, "_maybe_revert_all_patches", None)
    return revert() if revert is not None else contextlib.nullcontext()


def _meta_attribute(root, target: str):
    """A module (a deep copy) or tensor of `root` on the meta device."""
    value = root
    for atom in target.split("."):
        value = getattr(value, atom)
    if isinstance(value, torch.nn.Module):
        return copied(value).to("meta")
    if isinstance(value, torch.Tensor):
        return value.detach().to("meta")
    return value


# ---- forward's optional arguments get_inputs() leaves out -----------------------------------------------------

def none_arguments(model, inputs: list) -> dict:
    """{name: None} of forward's positional parameters past those get_inputs() gives whose default is None
    (`cond=None`): traced as torch.fx's concrete arguments, so that `if cond is not None:` takes the path the
    reference's inputs take (a proxy is never None)."""
    import inspect
    parameters = [p for p in list(inspect.signature(type(model).forward).parameters.values())[1:]
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return {p.name: None for p in parameters[len(inputs):] if p.default is None}


def guard_none_arguments(graph: torch.fx.Graph, names: dict, path) -> None:
    """After a trace with `names` concrete: each placeholder named as forward names it (torch.fx renamed it
    `cond_1`), and torch.fx's private check that it is None replaced by a guard of kgen's (`torch._assert(cond is
    None, ...)`), which the emitted file can call."""
    check_none = getattr(torch.fx._symbolic_trace, "_assert_is_none", None)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for node in placeholders:
        original = next((name for name in names if str(node.target) != name and
                         str(node.target).startswith(name + "_")), None)
        if original is not None:
            node.target = original
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not check_none:
            continue
        argument = node.args[0]
        name = str(argument.target) if isinstance(argument, torch.fx.Node) else "an argument"
        with graph.inserting_before(node):
            check = graph.call_function(operator.is_, (argument, None))
            check.meta[GUARD_PART] = True
            message = (f"kgen: {path}: forward's argument `{name}` is None in the reference's get_inputs(), and this "
                       f"file was planned so; this call gives one: emit the file again from a reference whose "
                       "get_inputs() passes it")
            guard = graph.call_function(torch._assert, (check, message))
            guard.meta[GUARD] = f"{path}: `{name}` is None (get_inputs() leaves it out)"
        graph.erase_node(node)
