"""An emitted file's extension emulated with PyTorch's ops on the CPU, so that the file's own Python (ModelNew's
forward, each step's autograd Function, the arguments it passes its kernels, the parameter gradients it assembles
from their rows, the peeled biases, the library calls between the steps) runs forward and backward without a GPU.

Each region's entry points take and return what the kernels do (ref/bindings.cu.j2): the forward
(out, mean, rstd, aux) with the reduced dims dropped, the backward (dx, dweight, dbias, dprologue (Kp, C),
depilogue (Ke, C)); each element-wise step's forward and backward likewise (pointwise<i>_forward, _backward). The
values come from the plan's own step (tests/ref/plan_interpreter.py's DAG evaluation), the gradients from autograd
through it, so the file's glue is checked against the reference, not the kernels' arithmetic (the GPU tests do
that). A batch norm step's entry points likewise (the statistics of the batch or the running ones, which a
training call updates in place). A file's regions and element-wise steps made as C++ autograd nodes
(ref/autograd.cpp.j2, the default) get `region<i>` and `pointwise<i>` too: the node's own work (its output's shape and
dtype, the kept dims, what it saves, the inputs' gradients summed back where they broadcast, the parameters' gradients
from the kernels' rows) done in Python around those entry points. Files with kgen's conv are not emulated (NotEmulated).
"""
from __future__ import annotations

import dataclasses
import types

import torch
import torch.nn.functional as F

from kgen.ref.codegen import pointwise_context, reads_output, region_context
from kgen.ref.ir import BatchNormStep, PointwiseStep, ReduceKind, ReduceOp, RegionStep
from tests.ref.plan_interpreter import _reduced, run_dag


class NotEmulated(Exception):
    """The file has a step this emulation does not take."""


def emulated_ext(plans, module) -> types.SimpleNamespace:
    """The stand-in for `module._ext`: entry points for every region and element-wise step of `plans` (the plan the
    file was emitted from, or a list: each mode's, emit.mode_plans), with the functors' parameter slots read from the
    file's own Function classes."""
    ext = types.SimpleNamespace(region_input=_region_input)
    for step in [s for plan in (plans if isinstance(plans, list) else [plans]) for s in plan.steps]:
        if isinstance(step, RegionStep):
            if step.conv_fused:
                raise NotEmulated("kgen's conv")
            cls = getattr(module, f"_Region{step.index}", None)
            context = region_context(step)
            pro = cls.PROLOGUE if cls is not None else context["prologue_slots"]
            epi = cls.EPILOGUE if cls is not None else context["epilogue_slots"]
            forward, backward = _region_entries(step, pro, epi)
            if step.merged:
                forward, backward = _merged_entries(forward, backward, [step.params[k].along_channels for k in pro],
                                                    [step.params[k].along_channels for k in epi])
            setattr(ext, f"region{step.index}_forward", forward)
            setattr(ext, f"region{step.index}_backward" + ("_summed" if step.merged else ""), backward)
            if cls is None:   # the region is a C++ autograd node
                setattr(ext, f"region{step.index}", _node_entry(ext, step, context))
        elif isinstance(step, BatchNormStep):
            cls = getattr(module, f"_BatchNorm{step.index}")
            forward, backward = _batchnorm_entries(step, cls.SLOTS)
            setattr(ext, f"batchnorm{step.index}_forward", forward)
            setattr(ext, f"batchnorm{step.index}_backward", backward)
        elif isinstance(step, PointwiseStep):
            cls = getattr(module, f"_Pointwise{step.index}", None)
            context = pointwise_context(step)
            forward, backward = _pointwise_entries(step, cls.SLOTS if cls is not None else context["slots"])
            setattr(ext, f"pointwise{step.index}_forward", forward)
            setattr(ext, f"pointwise{step.index}_backward", backward)
            if cls is None:   # the step is a C++ autograd node
                setattr(ext, f"pointwise{step.index}", _pointwise_node_entry(ext, step, context))
    return ext


def _region_input(x, channels_last: bool):
    """bindings.cu.j2's region_input: x where it lies channels-last and the region reads it so, else its NCHW copy."""
    return x if channels_last and _is_channels_last(x) else x.contiguous()


def _is_channels_last(x) -> bool:
    """groupnorm/nhwc/host.cuh's is_channels_last: (N, C, *spatial) with channel stride 1, the spatial dims dense
    outside it, the batch outside those; an NCHW-contiguous x is not."""
    if not 3 <= x.dim() <= 5 or x.is_contiguous():
        return False
    expected = x.size(1)
    if x.size(1) != 1 and x.stride(1) != 1:
        return False
    for d in range(x.dim() - 1, 1, -1):
        if x.size(d) != 1 and x.stride(d) != expected:
            return False
        expected *= x.size(d)
    return x.size(0) == 1 or x.stride(0) == expected


def _per_channel(t, rank: int):
    """A functor's parameter as its kernels read it: one value, or C values along dim 1."""
    return t.reshape(()) if t.numel() == 1 else t.reshape([1, -1] + [1] * (rank - 2))


def _rows(grads, channels: int, dtype):
    """The kernels' gradient rows (K, C): a one-value parameter's per-channel shares, summed by the caller."""
    rows = [g if g is not None else torch.zeros(channels, dtype=dtype) for g in grads]
    return torch.stack(rows) if rows else torch.zeros(0, channels, dtype=dtype)


def _merged_entries(forward, backward, along_pro: list, along_epi: list):
    """A merged region's entry points (groupnorm/merged.cuh, bindings.cu.j2): the kernels' on x's samples merged into
    channels, every parameter one value per merged channel; out viewed back; the backward (region<i>_backward_summed)
    dx as x, then dweight, dbias and each functor parameter's gradient summed from its row to the parameter's values
    (merged::param_grads: over the samples, over the channels, or whole; a per-(sample, channel) one as it is)."""
    def merged(x):
        return x.reshape(1, x.shape[0] * x.shape[1], *x.shape[2:])

    def per_channel(p, along, n, c):
        if p is None or p.numel() == 1:
            return p
        if p.numel() == n * c:   # per (sample, channel), or merged already (as the forward returns them)
            return p.reshape(n * c)
        return p.reshape(-1, c if along else 1).expand(n, c).reshape(n * c)

    def summed(row, numel, along, n, c):
        if row is None or numel == n * c:
            return row
        if numel == 1:
            return row.sum().reshape(1)
        return row.reshape(n, c).sum(0) if along else row.reshape(n, c).sum(1)

    def merged_forward(x, weight, bias, prologue, epilogue, groups, eps, window, *rest):
        n, c = x.shape[:2]
        params = [per_channel(weight, True, n, c), per_channel(bias, True, n, c)]
        params += [per_channel(p, a, n, c) for p, a in zip(prologue, along_pro)]
        params += [per_channel(p, a, n, c) for p, a in zip(epilogue, along_epi)]
        pro, epi = params[2:2 + len(prologue)], params[2 + len(prologue):]
        out, *others = forward(merged(x), params[0], params[1], pro, epi, n * groups, eps, window, *rest)
        # then the merged parameters, which the backward takes as they are (merged::append_merged)
        return [out.reshape(n, c, *out.shape[2:])] + others + params

    def merged_backward(dout, x, weight, bias, prologue, epilogue, mean, rstd, out, aux, groups, window, *rest):
        *rest, pro_numels, epi_numels = rest
        n, c = x.shape[:2]
        d = backward(merged(dout), merged(x), per_channel(weight, True, n, c),
                     per_channel(bias, True, n, c), [per_channel(p, a, n, c) for p, a in zip(prologue, along_pro)],
                     [per_channel(p, a, n, c) for p, a in zip(epilogue, along_epi)], mean, rstd,
                     None if out is None else merged(out), aux,
                     n * groups, window, *rest)
        rows = [(d[1], c, True), (d[2], c, True)]
        rows += [(d[3][k], numel, a) for k, (numel, a) in enumerate(zip(pro_numels, along_pro))]
        rows += [(d[4][k], numel, a) for k, (numel, a) in enumerate(zip(epi_numels, along_epi))]
        return [d[0].reshape(x.shape)] + [summed(row, numel, a, n, c) for row, numel, a in rows]

    return merged_forward, merged_backward


_ROUNDING = {torch.bfloat16: 1, torch.float16: 2}   # kgen_rounding_of: any other dtype 0


def _node_dtype(expr, x, params):
    """The node's output dtype: plan_dtype.cpp_dtype's expression (a float32 cast inside the region), else
    kgen_region_out_dtype (float32 under autocast; x's dtype promoted with each parameter's that has dims)."""
    if expr is None:
        return _promoted(x, params, True)
    kind = expr[0]
    if kind == "x":
        return x.dtype
    if kind == "float32":
        return torch.float32
    if kind == "param":
        return params[expr[1]].dtype
    if kind == "gn":
        return torch.float32 if torch.is_autocast_enabled(x.device.type) else _node_dtype(expr[1], x, params)
    return torch.promote_types(_node_dtype(expr[1], x, params), _node_dtype(expr[2], x, params))


def _kept_dims(y, context: dict, rank: int):
    """The C++ node's keepdim reshape (ref/autograd.cpp.j2)."""
    rank = context["reduce_rank"] or rank
    if context["reduce_kind"] == "kChannel":
        return y.unsqueeze(1)
    if context["reduce_kind"] == "kPlane":
        return y.reshape(list(y.shape) + [1] * (rank - y.dim()))
    return y.reshape([y.shape[0]] + [1] * (rank - 1))


def _node_param_grad(row, param):
    """kgen_add_param_grad: a row summed for a one-value parameter (a merged region's rows come already of the
    parameter's values)."""
    return row.sum().reshape(param.shape) if param.numel() == 1 and row.numel() != 1 else row.reshape(param.shape)


def _node_entry(ext, step: RegionStep, context: dict):
    """`region<i>(x, weight, bias, groups, eps, window, [faithful,] params)` of ref/autograd.cpp.j2: the region's
    entry points (looked up on `ext` at each call, so that a test may wrap them) run without autograd, and where grad
    mode is on and a tensor requires grad, the output gets a node whose backward calls the backward entry point and
    sums the parameters' rows into their gradients."""
    index, switch = step.index, bool(context["faithful_switch"])
    pro, epi = context["prologue_slots"], context["epilogue_slots"]

    def run(x, weight, bias, groups, eps, window, faithful, grad, params):
        read = x
        if not x.is_contiguous():
            read = ext.region_input(x, {"always": True, "unfaithful": not faithful,
                                        "never": False}[context["input_as_it_lies"]])
        dtype = _node_dtype(step.out_dtype, x, params)
        rounding = _ROUNDING.get(dtype, 0)
        with torch.no_grad():
            result = getattr(ext, f"region{index}_forward")(
                read, weight, bias, [params[k] for k in pro], [params[k] for k in epi], groups, eps, list(window),
                grad, rounding, *([faithful] if switch else []))
        y = result[0]
        if context["keepdim"]:
            y = _kept_dims(y, context, x.dim())
        return read, result, (y if y.dtype == dtype else y.to(dtype)), rounding

    class Node(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, groups, eps, window, faithful, *params):
            read, result, y, rounding = run(x, weight, bias, groups, eps, window, faithful, True, params)
            ctx.faithful, ctx.groups, ctx.window, ctx.rounding = faithful, groups, list(window), rounding
            ctx.out_shape, ctx.merged, ctx.with_wb = result[0].shape, result[4:], (weight, bias)
            # the node saves the kernels' output only where its backward reads it (a logsumexp's): y itself where no
            # cast is due, so that an in-place change of y before the backward is caught, as in the node
            out = y if y.dtype == result[0].dtype else result[0]
            ctx.save_for_backward(read, result[1], result[2], result[3], *params,
                                  *([out] if context["reads_out"] else []))
            return y

        @staticmethod
        def backward(ctx, grad):
            read, mean, rstd, aux, *params = ctx.saved_tensors
            out = params.pop() if context["reads_out"] else None
            weight, bias = ctx.with_wb
            if step.merged:
                weight, bias, *merged = ctx.merged
                prologue, epilogue = merged[:len(pro)], merged[len(pro):]
            else:
                prologue, epilogue = [params[k] for k in pro], [params[k] for k in epi]
            numels = ([[params[k].numel() for k in pro], [params[k].numel() for k in epi]] if step.merged else [])
            d = getattr(ext, f"region{index}_backward" + ("_summed" if step.merged else ""))(
                grad.reshape(ctx.out_shape), read, weight, bias, prologue, epilogue, mean, rstd,
                None if out is None else out.reshape(ctx.out_shape), aux, ctx.groups, ctx.window, ctx.rounding,
                *([ctx.faithful] if switch else []), *numels)
            # a merged call's gradients flat after dbias (one per prologue, then epilogue parameter), else rows
            rows = [(d[3:3 + len(pro)], pro), (d[3 + len(pro):], epi)] if step.merged else [(d[3], pro), (d[4], epi)]
            grads = [None] * len(params)
            for got, slots in rows:
                for slot, k in enumerate(slots):
                    g = _node_param_grad(got[slot], params[k])
                    grads[k] = g if grads[k] is None else grads[k] + g
            return (d[0], d[1], d[2], None, None, None, None, *grads)

    def region(x, weight, bias, groups, eps, window, *rest):
        faithful, params = (rest[0], rest[1]) if switch else (False, rest[0])
        if len(params) != len(step.params):   # the node's TORCH_CHECK
            raise RuntimeError(f"kgen: region{index} takes {len(step.params)} parameter tensor(s), got {len(params)}")
        tensors = [t for t in (x, weight, bias, *params) if t is not None]
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return Node.apply(x, weight, bias, groups, eps, window, faithful, *params)
        return run(x, weight, bias, groups, eps, window, faithful, False, params)[2]

    return region


def _region_entries(step: RegionStep, prologue_slots: list, epilogue_slots: list):
    unkept = dataclasses.replace(step, keepdim=False)   # the kernels drop the reduced dims; the Function keeps them
    saved = {}   # the forward's eps: the backward's entry point takes none (the kernels read the saved rstd)

    def value(x, weight, bias, prologue, epilogue, groups, eps, window):
        for p in list(prologue) + list(epilogue):   # as param_table (groupnorm/region.cuh) checks them
            if not p.is_contiguous() or p.numel() not in (1, x.shape[1]):
                raise RuntimeError(f"kgen: a region parameter of shape {tuple(p.shape)} and strides {p.stride()}: the "
                                   f"kernels read contiguous ones of 1 or {x.shape[1]} values")
        rank = x.dim()
        params_pro = [None] * len(step.params)
        params_epi = [None] * len(step.params)
        for slot, k in enumerate(prologue_slots):
            params_pro[k] = _per_channel(prologue[slot], rank)
        for slot, k in enumerate(epilogue_slots):
            params_epi[k] = _per_channel(epilogue[slot], rank)
        values = {step.input: x}
        run_dag(step.prologue, values, params_pro)
        z = values[step.prologue[-1].name] if step.prologue else x
        values[step.gn] = F.group_norm(z, int(groups), weight, bias, float(eps))
        run_dag(step.epilogue, values, params_epi)
        shaped = dataclasses.replace(unkept, window=tuple(window)) if step.reduce_kind is ReduceKind.WINDOW else unkept
        return _reduced(shaped, values[step.result])

    def forward(x, weight, bias, prologue, epilogue, groups, eps, window, for_backward, rounding, faithful=False):
        saved["eps"] = eps
        with torch.no_grad():
            out = value(x, weight, bias, prologue, epilogue, groups, eps, window)
        n = x.shape[0]
        return out, torch.zeros(n, int(groups), 2), torch.zeros(n, int(groups)), torch.zeros(0, dtype=torch.int32)

    def backward(dout, x, weight, bias, prologue, epilogue, mean, rstd, out, aux, groups, window, rounding,
                 faithful=False):
        # the forward's output, where the kernels read it (a logsumexp's: codegen.reads_output), else none
        if reads_output(step):
            assert out is not None and out.shape == dout.shape, "a logsumexp region's backward needs its output"
        channels = x.shape[1]
        x = x.detach().requires_grad_()
        w = weight.detach().requires_grad_() if weight is not None else None
        b = bias.detach().requires_grad_() if bias is not None else None
        # each functor parameter a leaf of C values (a one-value one repeated): its gradient is the kernels' row
        pro = [p.detach().reshape(-1).expand(channels).clone().requires_grad_() for p in prologue]
        epi = [p.detach().reshape(-1).expand(channels).clone().requires_grad_() for p in epilogue]
        with torch.enable_grad():
            y = value(x, w, b, pro, epi, groups, saved["eps"], window)
            leaves = [x] + [t for t in (w, b) if t is not None] + pro + epi
            grads = torch.autograd.grad(y, leaves, dout.reshape(y.shape), allow_unused=True)
        dx, rest = grads[0], list(grads[1:])
        dw = rest.pop(0) if w is not None else None
        db = rest.pop(0) if b is not None else None
        dpro, depi = rest[:len(pro)], rest[len(pro):]
        dx = dx if dx is not None else torch.zeros_like(x)
        return [dx, dw, db, _rows(dpro, channels, x.dtype), _rows(depi, channels, x.dtype)]

    return forward, backward


def _pointwise_node_entry(ext, step: PointwiseStep, context: dict):
    """`pointwise<i>(inputs, params)` of ref/autograd_pointwise.cpp.j2: the step's entry points (looked up on `ext` at
    each call) run without autograd on the inputs broadcast to the output's shape, and where grad mode is on and a
    tensor requires grad, the output gets a node whose backward calls the backward entry point (a signed sum's: the
    output's gradient times each input's share) and sums the gradients back to each input's and parameter's shape."""
    index, slots, linear = step.index, context["slots"], context["linear"]
    count = len(step.inputs)

    def planes(t, shape):   # kgen_as_planes
        t = t if t.shape == shape else t.expand(shape)
        return t if t.dim() >= 2 else t.reshape(-1, 1)

    def summed_back(dx, shape, to):   # kgen_summed_back
        dx = dx if dx.shape == shape else dx.view(shape)
        return dx if dx.shape == to else dx.sum_to_size(to)

    def run(inputs, params):
        shape = torch.broadcast_shapes(*[t.shape for t in inputs],
                                       *[_param_read_shape(p, r) for p, r in zip(params, context["param_ranks"])])
        dtype = _promoted(inputs[0], list(inputs[1:]) + list(params), context["autocast_float32"])
        with torch.no_grad():
            y = getattr(ext, f"pointwise{index}_forward")([planes(t, shape) for t in inputs],
                                                          [params[k] for k in slots], _ROUNDING.get(dtype, 0))
            y = y if y.dtype == dtype else y.to(dtype)
            return (y if y.shape == shape else y.view(shape)), dtype

    class Node(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            y, dtype = run(args[:count], args[count:])
            ctx.rounding, ctx.shapes = _ROUNDING.get(dtype, 0), [t.shape for t in args[:count]]
            if linear is None:
                ctx.save_for_backward(*args)
            return y

        @staticmethod
        def backward(ctx, grad):
            result = [None] * len(ctx.needs_input_grad)
            if linear is not None:
                for k, share in enumerate(linear):
                    if ctx.needs_input_grad[k]:
                        result[k] = summed_back(grad if share == 1.0 else -grad if share == -1.0 else grad * share,
                                                grad.shape, ctx.shapes[k])
                return tuple(result)
            inputs, params = ctx.saved_tensors[:count], ctx.saved_tensors[count:]
            needed = list(ctx.needs_input_grad[:count])
            d = getattr(ext, f"pointwise{index}_backward")(
                planes(grad, grad.shape), [planes(t, grad.shape) for t in inputs], needed, [params[k] for k in slots],
                ctx.rounding)
            for k in range(count):
                if needed[k]:
                    result[k] = summed_back(d[k], grad.shape, inputs[k].shape)
            for slot, k in enumerate(slots):
                g = _node_param_grad(d[-1][slot], params[k])
                result[count + k] = g if result[count + k] is None else result[count + k] + g
            return tuple(result)

    def pointwise(inputs, params):
        if len(inputs) != count or len(params) != len(step.params):   # the node's TORCH_CHECK
            raise RuntimeError(f"kgen: pointwise{index} takes {count} input(s) and {len(step.params)} parameter(s), "
                               f"got {len(inputs)} and {len(params)}")
        if torch.is_grad_enabled() and any(t.requires_grad for t in [*inputs, *params]):
            return Node.apply(*inputs, *params)
        return run(inputs, params)[0]

    return pointwise


def _param_read_shape(param, rank: int):
    """kgen_read_shape: a parameter's own shape (rank 0), or (1, C, 1, ...) of `rank`."""
    if rank == 0:
        return param.shape
    return (1, param.numel()) + (1,) * (rank - 2) if param.numel() > 1 else (1,) * rank


def _promoted(x, others, float32_under_autocast: bool):
    """kgen_out_dtype: float32 under autocast where the step runs an op autocast runs in float32, else x's dtype
    promoted with each other tensor's that has dims."""
    if float32_under_autocast and torch.is_autocast_enabled(x.device.type):
        return torch.float32
    dtype = x.dtype
    for t in others:
        if t.dtype != dtype and t.dim() > 0:
            dtype = torch.promote_types(dtype, t.dtype)
    return dtype


def _pointwise_entries(step: PointwiseStep, slots: list):
    def value(inputs, params):
        rank = inputs[0].dim()
        by_index = [None] * len(step.params)
        for slot, k in enumerate(slots):
            by_index[k] = _per_channel(params[slot], rank) if params[slot].numel() in (1, inputs[0].shape[1]) \
                else params[slot]
        values = dict(zip(step.inputs, inputs))
        run_dag(step.nodes, values, by_index)
        return values[step.nodes[-1].name]

    def forward(inputs, params, rounding):
        with torch.no_grad():
            return value(inputs, params)

    def backward(grad, inputs, needed, params, rounding):
        channels = inputs[0].shape[1]
        xs = [t.detach().requires_grad_() for t in inputs]
        leaves = [p.detach().reshape(-1).expand(channels).clone().requires_grad_() if p.numel() == 1 else
                  p.detach().clone().requires_grad_() for p in params]
        with torch.enable_grad():
            y = value(xs, leaves)
            grads = torch.autograd.grad(y, xs + leaves, grad, allow_unused=True)
        dxs = [g if g is not None else torch.zeros_like(t) for g, t in zip(grads[:len(xs)], xs)]
        rows = [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads[len(xs):], leaves)]
        return [*dxs, rows]

    return forward, backward


def _batchnorm_entries(step: BatchNormStep, slots: list):
    saved = {}   # what the backward's entry point does not take: the statistics used, eps

    def shifted(x, conv_bias):
        """x + the peeled conv bias, rounded to x's dtype in float16 / bfloat16 (the kernels' BnShift)."""
        if conv_bias is None:
            return x
        total = x + conv_bias.reshape([1, -1] + [1] * (x.dim() - 2))
        return total if x.dtype == torch.float32 else total.to(x.dtype).to(total.dtype)

    def value(x, weight, bias, conv_bias, mean, var, eps, window, params):
        rank = x.dim()
        shape = [1, -1] + [1] * (rank - 2)
        x = shifted(x, conv_bias)
        y = (x - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + eps)
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        by_index = [None] * len(step.params)
        for slot, k in enumerate(slots):
            by_index[k] = _per_channel(params[slot], rank)
        values = {step.bn: y}
        run_dag(step.nodes, values, by_index)
        out = values[step.nodes[-1].name] if step.nodes else y
        if step.pool_op is not None:
            pools = {ReduceOp.MAX: (F.max_pool1d, F.max_pool2d, F.max_pool3d),
                     ReduceOp.MEAN: (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)}[step.pool_op]
            out = pools[rank - 3](out, tuple(window))
        return out

    def statistics(x, conv_bias, batch_stats, running_mean, running_var):
        """The batch's mean and biased variance (of x + conv_bias), or the running ones."""
        if not batch_stats:
            return running_mean, running_var
        dims = [0] + list(range(2, x.dim()))
        z = shifted(x, conv_bias)
        return z.mean(dims), z.var(dims, unbiased=False)

    def forward(x, weight, bias, batch_stats, running_mean, running_var, factor, conv_bias, eps, window,
                for_backward, params, rounding):
        with torch.no_grad():
            mean, var = statistics(x, conv_bias, batch_stats, running_mean, running_var)
            if batch_stats and running_mean is not None:   # nn.BatchNorm's update, the unbiased variance
                count = x.numel() // x.shape[1]
                running_mean.mul_(1 - factor).add_(mean * factor)
                running_var.mul_(1 - factor).add_(var * count / max(count - 1, 1) * factor)
            saved.update(eps=eps, running=(running_mean, running_var))
            out = value(x, weight, bias, conv_bias, mean, var, eps, window, params)
        c = x.shape[1]
        return out, torch.zeros(c), torch.zeros(c), torch.zeros(0, dtype=torch.int32)

    def backward(dout, x, weight, bias, mean, rstd, extremes, conv_bias, batch_stats, window, params, rounding):
        channels = x.shape[1]
        x = x.detach().requires_grad_()
        w = weight.detach().requires_grad_() if weight is not None else None
        b = bias.detach().requires_grad_() if bias is not None else None
        cb = conv_bias.detach().requires_grad_() if conv_bias is not None else None
        leaves_p = [p.detach().reshape(-1).expand(channels).clone().requires_grad_() for p in params]
        with torch.enable_grad():
            mean, var = statistics(x, cb, batch_stats, *saved["running"])
            y = value(x, w, b, cb, mean, var, saved["eps"], window, leaves_p)
            leaves = [x] + [t for t in (w, b, cb) if t is not None] + leaves_p
            grads = list(torch.autograd.grad(y, leaves, dout.reshape(y.shape), allow_unused=True))
        dx = grads.pop(0)
        dw = grads.pop(0) if w is not None else None
        db = grads.pop(0) if b is not None else None
        dcb = grads.pop(0) if cb is not None else None
        return [dx if dx is not None else torch.zeros_like(x), dw, db, dcb,
                _rows(grads, channels, x.dtype)]

    return forward, backward
