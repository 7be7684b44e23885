"""Plan -> the template context of one solution file (the third room of `kgen emit --ref`).

For every region: its two functors (functors.py) and the order in which its parameters go to the kernels; for every
element-wise and batch norm step the same; ModelNew.__init__ is the reference's own (same modules, same RNG draws) and
its forward is forward_writer.py's.
"""
from __future__ import annotations

from kgen.ref import functors, op_calls, ops
from kgen.ref.forward_writer import ForwardWriter, faithful_switch, forward_arguments, literal, renamed_arguments
from kgen.ref.ir import BatchNormStep, LibraryStep, Plan, PointwiseStep, ReduceKind, ReduceOp, RegionStep
from kgen.ref.rewrite import assigned
from kgen.ref.plan_dtype import cpp_dtype, python_dtype
from kgen.specs.base import DEFAULT_AUTOGRAD


def region_context(step: RegionStep) -> dict:
    labels = [p.label for p in step.params]
    x = step.input
    z = step.prologue[-1].name if step.prologue else None
    prologue, pro_slots = functors.prologue_functor(f"Region{step.index}Prologue", step.prologue, x, z, labels,
                                                    moments=bool(step.conv_fused))
    epilogue, epi_slots = functors.epilogue_functor(f"Region{step.index}Epilogue", step.prologue, step.epilogue,
                                                    x, z, step.gn, step.result, labels, cheap=not step.faithful)
    return {
        "index": step.index, "prologue": prologue, "epilogue": epilogue,
        "reduce_kind": step.reduce_kind.cpp, "reduce_op": step.reduce_op.cpp, "keepdim": step.keepdim,
        "reduce_rank": step.reduce_rank,
        # the backward reads the forward's output (a logsumexp's): only then is it saved
        "reads_out": reads_output(step),
        "rank": len(step.shape), "affine": step.affine, "channels_last": step.channels_last,
        "nhwc": reads_channels_last(step), "conv_fused": step.conv_fused, "faithful": step.faithful,
        "faithful_switch": faithful_switch(step),
        "input_as_it_lies": input_as_it_lies(step),
        "rows_half": rows_half(step),
        # the output's dtype where a float32 cast lies inside the region (plan_dtype.py), else the common rule
        "out_dtype": python_dtype(step.out_dtype) if step.out_dtype else "_out_dtype(x, params, True)",
        "out_dtype_cpp": cpp_dtype(step.out_dtype) if step.out_dtype else "kgen_region_out_dtype(x, params)",
        "params": [{"label": p.label, "shape": list(p.shape)} for p in step.params],
        # merged samples (RegionStep.merged): the tensors other steps compute, and which parameters vary along channels
        "merged": step.merged, "per_sample": [p.label for p in step.params if p.per_sample],
        "along_channels": [p.along_channels for p in step.params],
        "prologue_slots": [k for k, _ in sorted(pro_slots.items(), key=lambda kv: kv[1])],
        "epilogue_slots": [k for k, _ in sorted(epi_slots.items(), key=lambda kv: kv[1])],
        "summary": describe_region(step),
    }


def reads_output(step: RegionStep) -> bool:
    """Whether the region's backward kernels read its forward output (a logsumexp reduction's, in its derivative);
    no other region saves it, so that an in-place change of the output before the backward is allowed, as it is
    after PyTorch's GroupNorm and activations."""
    return step.reduce_op is ReduceOp.LOGSUMEXP and step.reduce_kind is not ReduceKind.NONE


def rows_half(step: RegionStep) -> bool:
    """Whether the region's bindings try the rows kernels on x's own float16 / bfloat16 (rows_half_applies): a Linear's
    output (rank 2 as traced), no reduction or one over each sample's values; other regions do not instantiate them."""
    return len(step.shape) == 2 and step.reduce_kind in (ReduceKind.NONE, ReduceKind.CHANNEL, ReduceKind.SAMPLE) \
        and not step.conv_fused


def pointwise_context(step: PointwiseStep) -> dict:
    labels = [p.label for p in step.params]
    linear = functors.linear_gradients(step.nodes, step.inputs, step.output)
    struct, slots = functors.pointwise_functor(f"Pointwise{step.index}Op", step.nodes, step.inputs, step.output,
                                               labels, backward=linear is None)
    return {"index": step.index, "functor": struct, "inputs": len(step.inputs),
            "params": [{"label": p.label, "shape": list(p.shape)} for p in step.params],
            "param_ranks": [p.read_rank for p in step.params],
            "slots": [k for k, _ in sorted(slots.items(), key=lambda kv: kv[1])],
            "autocast_float32": ops.autocast_float32(step.nodes),
            "linear": linear,
            "summary": describe_pointwise(step)}


def describe_pointwise(step: PointwiseStep) -> str:
    text = " -> ".join(n.op for n in step.nodes)
    if len(step.inputs) > 1:
        text += f" of {len(step.inputs)} tensors"
    for name in step.broadcast:
        shape = step.input_shapes[step.inputs.index(name)]
        text += f" ({name} {list(shape)} broadcast to {list(step.shape)})"
    return text


def batchnorm_context(step: BatchNormStep) -> dict:
    labels = [p.label for p in step.params]
    result = step.nodes[-1].name if step.nodes else None
    struct, slots = functors.prologue_functor(f"BatchNorm{step.index}Op", step.nodes, step.bn, result, labels)
    window_size = 1
    for k in step.window:
        window_size *= int(k)
    pool = step.pool_op is not None
    return {"index": step.index, "functor": struct, "pool": pool, "pool_op": (step.pool_op or ReduceOp.MAX).cpp,
            "window": "x".join(map(str, step.window)), "window_size": window_size if pool else 0,
            "monotone": non_decreasing(functors.needed(step.nodes, result) if result else []),
            "ranks": list(step.ranks),
            "params": [{"label": p.label, "shape": list(p.shape)} for p in step.params],
            "slots": [k for k, _ in sorted(slots.items(), key=lambda kv: kv[1])],
            "autocast_float32": ops.autocast_float32(step.nodes),
            "summary": describe_batchnorm(step)}


# Unary ops that never decrease and give no NaN for a number: max(F(y_i)) == F(max(y_i)).
_NON_DECREASING = {"relu", "sigmoid", "tanh", "hardsigmoid", "hardtanh", "clamp", "softsign", "logsigmoid",
                   "tanhshrink", "exp"}


def non_decreasing(nodes) -> bool:
    """Whether a chain of element-wise nodes (each reading one value, the one before it) is a non-decreasing
    function of its input: the ops above, leaky_relu / elu with a non-negative slope, adding a scalar,
    subtracting one, multiplying or dividing by a positive one."""
    for node in nodes:
        values = [o for o in node.operands if o.is_value]
        if len(values) != 1 or any(o.is_param for o in node.operands):
            return False
        scalars = [o.ref for o in node.operands if o.is_scalar]
        first_is_value = node.operands[0].is_value
        ok = (node.op in _NON_DECREASING or
              (node.op == "leaky_relu" and float(node.consts.get("slope", -1.0)) >= 0.0) or
              (node.op == "elu" and float(node.consts.get("alpha", -1.0)) >= 0.0) or
              node.op == "add" or (node.op == "sub" and first_is_value) or
              (node.op == "mul" and scalars and scalars[0] > 0.0) or
              (node.op == "div" and first_is_value and scalars and scalars[0] > 0.0))
        if not ok:
            return False
    return True


def describe_batchnorm(step: BatchNormStep) -> str:
    parts = [step.bn_type] + [n.op for n in step.nodes]
    text = " -> ".join(parts)
    if step.pool_op is not None:
        text += f" -> {step.pool_op.word} over windows " + "x".join(map(str, step.window))
    if step.conv_bias:
        text += f" ({step.conv_bias_name or step.conv_bias} peeled: it only shifts the batch mean)"
    return text


def reads_channels_last(step: RegionStep) -> bool:
    """Whether a region's entry points read a channels-last input as it lies (groupnorm/nhwc/): a region without a
    reduction over 4-d or 5-d tensors (a model run channels-last; --conv fast makes its conv's output so), unless
    kgen's own conv feeds it (its output is kgen's layout)."""
    return step.channels_last or (step.reduce_kind is ReduceKind.NONE and len(step.shape) in (4, 5)
                                  and not step.conv_fused and not step.merged)


def input_as_it_lies(step: RegionStep) -> str:
    """When the region's entry points read a channels-last input as it lies rather than an NCHW copy, as their dispatch
    in bindings.cu.j2 decides: "always", "unfaithful" (at the calls where a switch leaves the region unfaithful) or
    "never". What region_input is told, so that the copy it makes once is the one the kernels would make."""
    if step.channels_last or (reads_channels_last(step) and not step.faithful):
        return "always"
    return "unfaithful" if reads_channels_last(step) and step.faithful_switch else "never"


def describe_region(step: RegionStep) -> str:
    pro = " -> ".join(n.op for n in step.prologue)
    epi = " -> ".join(n.op for n in step.epilogue)
    parts = [p for p in (pro, "GroupNorm" + ("" if step.affine else " (affine=False)"), epi) if p]
    text = " -> ".join(parts)
    if step.reduce_kind is not ReduceKind.NONE:
        text += f" -> {step.reduce_op.word} over {_REDUCE_WORDS[step.reduce_kind]}"
        if step.window:
            text += " " + "x".join(map(str, step.window))
    return text


_REDUCE_WORDS = {ReduceKind.CHANNEL: "channels", ReduceKind.PLANE: "spatial dims",
                 ReduceKind.SAMPLE: "all but the batch", ReduceKind.WINDOW: "windows"}


def baked_constants(plan: Plan) -> dict:
    """Attributes of the model whose values the kernels bake in as literals: the constants of module ops
    (nn.Hardtanh's min_val...) and float attributes of the model equal to a constant the kernels use
    (self.clamp_min...). ModelNew checks them at construction, so a model built with other values fails
    loudly instead of computing with the emitted ones."""
    nodes = []
    for step in plan.steps:
        if isinstance(step, RegionStep):
            nodes += step.prologue + step.epilogue
        elif isinstance(step, (PointwiseStep, BatchNormStep)):
            nodes += step.nodes
    found = {}
    values = set()
    for node in nodes:
        values |= {float(v) for v in node.consts.values()}
        values |= {float(o.ref) for o in node.operands if o.is_scalar}
        if node.module:
            for key, value in node.consts.items():
                attr = op_calls.MODULE_CONSTANT_ATTRS.get(key)
                if attr is not None:
                    found[f"{node.module}.{attr}"] = float(value)
    for name, value in sorted(vars(plan.ref.model).items()):
        if isinstance(value, float) and value in values:
            found[name] = value
        elif type(value) is int and _read_as_constant(name, float(value), nodes):
            found[name] = float(value)
    return found


def _read_as_constant(name: str, value: float, nodes) -> bool:
    """Whether an int attribute of the model is what a node's baked constant came from: the node's source line reads
    `self.<name>` and the node uses that value (`y * self.k`). An int equal to a constant by chance (in_channels = 3
    beside hardswish's 3) is not checked: unlike a float, an int often is."""
    for node in nodes:
        used = {float(v) for v in node.consts.values()} | {float(o.ref) for o in node.operands if o.is_scalar}
        if value in used and reads_attribute(node.line or "", name):
            return True
    return False


def reads_attribute(line: str, name: str) -> bool:
    """Whether a source line reads `self.<name>` as a whole word (`self.k`, not `self.k2` nor `myself.k`)."""
    text = f"self.{name}"
    start = line.find(text)
    while start >= 0:
        end = start + len(text)
        if not _word_character(line[start - 1:start]) and not _word_character(line[end:end + 1]):
            return True
        start = line.find(text, start + 1)
    return False


def _word_character(c: str) -> bool:
    return c.isalnum() or c == "_"


def init_extra(plan: Plan) -> list[str]:
    """Statements ModelNew.__init__ runs after the reference's own: fx's tensor constants (`torch.tensor(0.5)` in
    forward) as non-persistent buffers, so the kernels can read them on the model's device and the state_dict
    stays the reference's."""
    lines = []
    for name, tensor in plan.ref.constants.items():
        lines.append(f"self.register_buffer({name!r}, torch.tensor({literal(tensor.tolist())}, dtype={tensor.dtype}), "
                     "persistent=False)")
    return lines


def solution_context(plan: Plan, autograd: str = DEFAULT_AUTOGRAD) -> dict:
    """The templates' context; `autograd`: "cpp" (each region, but one kgen's wgmma conv feeds, and each element-wise
    step one C++ autograd node: ref/autograd.cpp.j2) or "python" (each step an autograd.Function in the file)."""
    ref = plan.ref
    regions = [region_context(s) for s in plan.steps if isinstance(s, RegionStep)]
    for region in regions:
        region["cpp"] = autograd == "cpp" and not region["conv_fused"]
    pointwise = [pointwise_context(s) for s in plan.steps if isinstance(s, PointwiseStep)]
    for step in pointwise:
        step["cpp"] = autograd == "cpp"
    batchnorms = [batchnorm_context(s) for s in plan.steps if isinstance(s, BatchNormStep)]
    writer = ForwardWriter(plan, autograd)
    placeholders = forward_arguments(ref, writer)
    return {
        "regions": regions,
        "pointwise": pointwise,
        "batchnorms": batchnorms,
        "init_source": ref.init_source,
        "init_extra": init_extra(plan),
        "prelude": ref.prelude,
        "forward_args": placeholders,
        "forward_lines": renamed_arguments(ref) + writer.lines(),
        "input_source": ref.input_source,
        "baked_constants": baked_constants(plan),
        "channels_last": any(isinstance(s, RegionStep) and s.channels_last for s in plan.steps),
        "nhwc": any(isinstance(s, RegionStep) and reads_channels_last(s) for s in plan.steps),
        "conv_fused": any(isinstance(s, RegionStep) and s.conv_fused for s in plan.steps),
        "peels_bias": bool(writer.half_kept_biases()),
        "assigns": any(isinstance(s, LibraryStep) and s.node.target is assigned for s in plan.steps),
        "imports_math": any(isinstance(s, LibraryStep) and s.node.op == "call_function" and
                            getattr(s.node.target, "__module__", None) == "math" for s in plan.steps),
    }



def mode_solution_context(plans: list, autograd: str = DEFAULT_AUTOGRAD) -> dict:
    """The templates' context of a file's plans (emit.mode_plans): one plan's, or for a forward that branches on
    self.training the two modes' merged: every step of both (numbered apart), and a forward that runs the model's
    mode's statements."""
    contexts = [solution_context(plan, autograd) for plan in plans]
    if len(contexts) == 1:
        return contexts[0]
    first, second = contexts
    merged = dict(first)
    for key in ("regions", "pointwise", "batchnorms"):
        merged[key] = first[key] + second[key]
    merged["init_extra"] = list(dict.fromkeys(first["init_extra"] + second["init_extra"]))
    merged["baked_constants"] = {**first["baked_constants"], **second["baked_constants"]}
    for key in ("channels_last", "nhwc", "conv_fused", "peels_bias", "assigns", "imports_math"):
        merged[key] = first[key] or second[key]
    renamed = len(renamed_arguments(plans[0].ref))
    test = "self.training" if plans[0].ref.training else "not self.training"
    merged["forward_lines"] = (first["forward_lines"][:renamed] +
                               ["# the reference computes something else in each mode: a plan each (kgen/ref/modes.py)",
                                f"if {test}:"] +
                               ["    " + line.replace("\n", "\n    ") for line in first["forward_lines"][renamed:]] +
                               second["forward_lines"][renamed:])
    return merged
