"""A CPU interpreter of a kgen Plan: every step evaluated with PyTorch's own ops (a region's prologue, GroupNorm,
epilogue and reduction; an element-wise step's DAG; a library step as the traced node), so that a plan can be
compared with the reference's forward without building a kernel. It checks the planner's reading of the graph
(operands, their order, constants, parameters read per channel, the peeled bias, the reduction's kind, dims and
keepdim), not the kernels' arithmetic. Batch norm steps are not interpreted (NotImplementedError).
"""
from __future__ import annotations

import math

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.interpreter import Interpreter

from kgen.ref.ir import BatchNormStep, LibraryStep, PointwiseStep, ReduceKind, ReduceOp, RegionStep
from kgen.ref.modes import TrainingFlag

_COMPARE = {"gt": torch.gt, "lt": torch.lt, "ge": torch.ge, "le": torch.le, "eq": torch.eq, "ne": torch.ne}


def _clamp(a, k):
    return torch.clamp(a, None if k["lo"] == -math.inf else k["lo"], None if k["hi"] == math.inf else k["hi"])


# op name -> PyTorch's value of it, from the operands (tensors) and the constants
VALUES = {
    "add": lambda a, k: a[0] + a[1], "sub": lambda a, k: a[0] - a[1], "mul": lambda a, k: a[0] * a[1],
    "div": lambda a, k: a[0] / a[1], "neg": lambda a, k: -a[0], "relu": lambda a, k: torch.relu(a[0]),
    "leaky_relu": lambda a, k: F.leaky_relu(a[0], k["slope"]), "sigmoid": lambda a, k: torch.sigmoid(a[0]),
    "tanh": lambda a, k: torch.tanh(a[0]), "gelu_erf": lambda a, k: F.gelu(a[0]),
    "gelu_tanh": lambda a, k: F.gelu(a[0], approximate="tanh"), "silu": lambda a, k: F.silu(a[0]),
    "hardswish": lambda a, k: F.hardswish(a[0]), "hardsigmoid": lambda a, k: F.hardsigmoid(a[0]),
    "hardtanh": lambda a, k: F.hardtanh(a[0], k["lo"], k["hi"]), "clamp": lambda a, k: _clamp(a[0], k),
    "minimum": lambda a, k: torch.minimum(*torch.broadcast_tensors(a[0], a[1])),
    "maximum": lambda a, k: torch.maximum(*torch.broadcast_tensors(a[0], a[1])),
    "mish": lambda a, k: F.mish(a[0]), "softplus": lambda a, k: F.softplus(a[0], k["beta"], k["threshold"]),
    "exp": lambda a, k: torch.exp(a[0]), "exp2": lambda a, k: torch.exp2(a[0]), "log": lambda a, k: torch.log(a[0]),
    "abs": lambda a, k: torch.abs(a[0]),
    "sqrt": lambda a, k: torch.sqrt(a[0]), "square": lambda a, k: a[0] * a[0],
    "elu": lambda a, k: F.elu(a[0], k["alpha"]), "selu": lambda a, k: F.selu(a[0]),
    "celu": lambda a, k: F.celu(a[0], k["alpha"]), "softsign": lambda a, k: F.softsign(a[0]),
    "logsigmoid": lambda a, k: F.logsigmoid(a[0]), "tanhshrink": lambda a, k: F.tanhshrink(a[0]),
    "threshold": lambda a, k: F.threshold(a[0], k["threshold"], k["value"]),
    "pow": lambda a, k: torch.pow(a[0], k["p"]), "rsqrt": lambda a, k: torch.rsqrt(a[0]),
    "reciprocal": lambda a, k: torch.reciprocal(a[0]), "erf": lambda a, k: torch.erf(a[0]),
    "erfc": lambda a, k: torch.erfc(a[0]), "expm1": lambda a, k: torch.expm1(a[0]),
    "log1p": lambda a, k: torch.log1p(a[0]), "sin": lambda a, k: torch.sin(a[0]), "cos": lambda a, k: torch.cos(a[0]),
    "prelu": lambda a, k: torch.where(a[0] > 0, a[0], a[1] * a[0]),
    "addcdiv": lambda a, k: a[0] + k["value"] * (a[1] / a[2]),
    "addcmul": lambda a, k: a[0] + k["value"] * (a[1] * a[2]),
    "tan": lambda a, k: torch.tan(a[0]), "atan": lambda a, k: torch.atan(a[0]),
    "sinh": lambda a, k: torch.sinh(a[0]), "cosh": lambda a, k: torch.cosh(a[0]),
    "log2": lambda a, k: torch.log2(a[0]), "log10": lambda a, k: torch.log10(a[0]),
    "lerp": lambda a, k: torch.where(a[2].abs() < 0.5, a[0] + a[2] * (a[1] - a[0]),
                                     a[1] - (a[1] - a[0]) * (1 - a[2])),
    "softshrink": lambda a, k: F.softshrink(a[0], k["lambd"]), "hardshrink": lambda a, k: F.hardshrink(a[0], k["lambd"]),
}
for _cmp, _fn in _COMPARE.items():
    VALUES[f"where_{_cmp}"] = lambda a, k, fn=_fn: torch.where(fn(a[0], a[1]), a[2], a[3])


def run_dag(nodes, env: dict, params: list) -> None:
    """Evaluates PwNodes in order into env (node name -> tensor)."""
    # a literal as a 0-dim tensor: float64 in a float64 run (exact), else float32 as the kernels bake it (it promotes
    # no float16 / bfloat16 tensor, and an op of literals alone keeps float32)
    wide = any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in env.values())
    dtype = torch.float64 if wide else torch.float32
    for node in nodes:
        operands = [env[o.ref] if o.is_value else torch.tensor(o.ref, dtype=dtype) if o.is_scalar else
                    params[o.ref] for o in node.operands]
        env[node.name] = VALUES[node.op](operands, node.consts)


def _region_param(tensor, rank: int):
    """A region's parameter as its kernels read it: one value, or C values along dim 1."""
    tensor = tensor.detach()
    return tensor.reshape(()) if tensor.numel() == 1 else tensor.reshape([1, -1] + [1] * (rank - 2))


def _value_param(tensor, rank: int):
    """A tensor another step computes, read per (sample, channel), per sample or per channel: as the reference
    broadcasts it (its shape aligned to the region's rank from the right)."""
    return tensor.reshape((1,) * (rank - tensor.dim()) + tuple(tensor.shape))


def _pointwise_param(param, tensor):
    """An element-wise kernel's parameter as its Function broadcasts it (_read_shape)."""
    tensor = tensor.detach()
    return tensor if param.read_rank == 0 else tensor.reshape([1, -1] + [1] * (param.read_rank - 2))


def _reduced(step: RegionStep, value):
    rank = len(step.shape)
    if step.reduce_kind is ReduceKind.NONE:
        return value
    if step.reduce_kind is ReduceKind.WINDOW:
        pool = {ReduceOp.MAX: (F.max_pool1d, F.max_pool2d, F.max_pool3d),
                ReduceOp.MEAN: (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)}[step.reduce_op][rank - 3]
        return pool(value, tuple(step.window))
    if step.reduce_rank == 2:   # through an (N, C * spatial) view
        value, dims = value.reshape(value.shape[0], -1), (1,)
    elif step.reduce_rank == 3:   # through an (N, C, spatial) view
        value = value.reshape(value.shape[0], value.shape[1], -1)
        dims = {ReduceKind.PLANE: (2,), ReduceKind.SAMPLE: (1, 2)}[step.reduce_kind]
    else:
        dims = {ReduceKind.CHANNEL: (1,), ReduceKind.PLANE: tuple(range(2, rank)),
                ReduceKind.SAMPLE: tuple(range(1, rank))}[step.reduce_kind]
    reduce = {ReduceOp.SUM: torch.sum, ReduceOp.MEAN: torch.mean, ReduceOp.MAX: torch.amax, ReduceOp.MIN: torch.amin,
              ReduceOp.LOGSUMEXP: torch.logsumexp}[step.reduce_op]
    return reduce(value, dims, keepdim=step.keepdim)


def _groupnorm(step: RegionStep, gm, model, z):
    if step.gn_module is not None:
        module = gm.get_submodule(step.gn_module)
        return F.group_norm(z, module.num_groups, module.weight, module.bias, module.eps)
    args = step.gn_args
    weight, bias = (eval(args[k], {"self": model, "torch": torch}) for k in ("weight", "bias"))
    eps = eval(args["eps"], {"self": model})
    # a group count computed in forward (from x's shape: groups_node) is the traced call's value
    groups = args["groups_value"] if args.get("groups_node") else eval(args["groups"], {"self": model})
    return F.group_norm(z, int(groups), weight, bias, float(eps))


def run_plan(plan, model, inputs: list):
    """The plan's output for `inputs` (the reference's forward arguments), every step as PyTorch computes it."""
    gm = plan.ref.gm
    env: dict = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        env[node.name] = inputs[i] if i < len(inputs) else node.args[0]
    interpreter = Interpreter(gm)
    # a region's inner values, read for their shape before the region runs (a per-sample tensor viewed by
    # `h.size(1)`): its input stands for them, as in the emitted forward (ForwardWriter.region_aliases)
    alias = {name: step.input for step in plan.steps if isinstance(step, RegionStep)
             for name in [n.name for n in step.prologue + step.epilogue] + [step.gn] if name != step.output}

    def fetch(argument):
        # One pass over the node's own arguments: a value fetched (torch.min's (values, indices) structseq) is not
        # walked again, which would turn it into a plain tuple without `.values`.
        return torch.fx.node.map_aggregate(argument, lambda v: (env[v.name] if v.name in env else env[alias[v.name]])
                                           if isinstance(v, torch.fx.Node) else
                                           model.training if isinstance(v, TrainingFlag) else v)

    for step in plan.steps:
        if isinstance(step, LibraryStep):
            node = step.node
            module = gm.get_submodule(node.target) if step.drop_bias else None
            bias = module.bias if module is not None else None
            if module is not None:
                module.bias = None   # the region adds it
            env[node.name] = getattr(interpreter, node.op)(node.target, fetch(node.args), fetch(node.kwargs))
            if module is not None:
                module.bias = bias
        elif isinstance(step, RegionStep):
            params = [_value_param(env[p.value], len(step.shape)) if p.value else
                      _region_param(eval(p.expr, {"self": model}), len(step.shape)) for p in step.params]
            values = {step.input: env[step.input]}
            run_dag(step.prologue, values, params)
            z = values[step.prologue[-1].name] if step.prologue else values[step.input]
            values[step.gn] = _groupnorm(step, gm, model, z)
            run_dag(step.epilogue, values, params)
            env[step.output] = _reduced(step, values[step.result])
            for name, value in values.items():   # region values read for their metadata only (x.shape)
                env.setdefault(name, value)
        elif isinstance(step, PointwiseStep):
            params = [_pointwise_param(p, eval(p.expr, {"self": model})) for p in step.params]
            values = {name: env[name] for name in step.inputs}
            run_dag(step.nodes, values, params)
            env[step.output] = values[step.nodes[-1].name]
        elif isinstance(step, BatchNormStep):
            raise NotImplementedError("batch norm steps are not interpreted")
    return fetch(plan.outputs)


def assert_plan_computes_the_references_value(path) -> None:
    """The reference at `path` planned, its plan run step by step (run_plan) equal to the reference's forward in eval
    mode on its own get_inputs() (skipped where the plan has a batch norm step, which is not interpreted); a forward
    that branches on self.training: each mode's plan against the forward in that mode, the same random draws."""
    import pytest

    from kgen.ref.emit import mode_plans
    from kgen.ref.trace import load_reference
    ref = load_reference(path)
    plans = mode_plans(ref)
    if any(isinstance(s, BatchNormStep) for plan in plans for s in plan.steps):
        pytest.skip("batch norm steps are not interpreted")
    for plan in plans:
        _assert_plan_computes(plan, ref, training=bool(plan.ref.training))


def _assert_plan_computes(plan, ref, training: bool) -> None:
    model = ref.model.train(training)
    torch.manual_seed(1)
    inputs = list(ref.namespace["get_inputs"]())
    with torch.no_grad():
        torch.manual_seed(2)
        expected = model(*inputs)
        torch.manual_seed(2)
        got = run_plan(plan, model, inputs)
    flat = lambda v: list(v.values()) if isinstance(v, dict) else list(v) if isinstance(v, (list, tuple)) else [v]
    for want, have in zip(flat(expected), flat(got)):
        if isinstance(want, torch.Tensor) and want.dtype in (torch.float16, torch.bfloat16):
            # the fused steps round once where the reference rounds each op (a conv's bias taken into the region):
            # single values move by ulps near zero, the tensor as a whole by a fraction of one
            assert want.shape == have.shape and want.dtype == have.dtype
            error = float((have.float() - want.float()).nan_to_num().norm())
            assert error <= 2e-2 * float(want.float().nan_to_num().norm()) + 1e-3, error
        elif isinstance(want, torch.Tensor):
            assert want.shape == have.shape
            torch.testing.assert_close(have, want, atol=1e-4, rtol=1e-4, equal_nan=True)
