"""Traced graph -> Plan (the second room of `kgen emit --ref`): the Planner walks the graph in order, makes
every GroupNorm a region (absorbing the element-wise ops around it and the reduction after it), every other
element-wise chain a pointwise step, and keeps library ops as the reference's PyTorch calls. The Plan's
dataclasses are in ir.py; the Planner's parts are here (regions), plan_reductions.py, plan_batchnorm.py,
plan_pointwise.py (element-wise kernels outside regions, library steps) and plan_values.py (tensors other steps compute
that a region reads per sample).
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from kgen.ref import op_calls, ops
from kgen.ref.concrete import GUARD
from kgen.ref.functors import needed, param_slots
from kgen.ref.ir import ConvMode, Operand, Param, Plan, PwNode, RegionStep
from kgen.ref.graph import (attribute_arguments, get_attribute, is_metadata, is_parameter, names_of, op_text,
                             param_view_root, self_attr, static_int)
from kgen.ref.plan_batchnorm import BATCH_NORMS, BatchNormPlanning, used_params
from kgen.ref.plan_bias import BiasPlanning, add_bias
from kgen.ref.plan_dtype import region_out_dtype
from kgen.ref.plan_faithful import mark_faithful
from kgen.ref.plan_layout import apply_conv_mode
from kgen.ref.plan_pointwise import PointwisePlanning
from kgen.ref.plan_reductions import FoundReduction, ReductionPlanning, is_values_output
from kgen.ref.plan_values import ValuePlanning, channels_last_inputs, unmergeable
from kgen.ref.rewrite import prelu_weights
from kgen.ref.trace import Reference, RefError, tensor_dtype, tensor_shape

# The fill value of a tensor made like another (Planner.like_as_number), from the call's positional arguments.
# The dtypes kgen's kernels read and write (they compute in float32); None: a value whose dtype the trace did not see.
KERNEL_DTYPES = (None, torch.float32, torch.float16, torch.bfloat16)
LIKE_FILLS = {torch.zeros_like: lambda args: 0.0 if len(args) == 1 else None,
              torch.ones_like: lambda args: 1.0 if len(args) == 1 else None,
              torch.full_like: lambda args: args[1] if len(args) == 2 else None}

# A region's prologue and epilogue functors read at most this many parameters each (kMaxParams).
MAX_FUNCTOR_PARAMS = 4


class Planner(ReductionPlanning, BatchNormPlanning, PointwisePlanning, ValuePlanning, BiasPlanning):
    def __init__(self, ref: Reference, first: tuple = (0, 0, 0)):
        self.ref = ref
        # the numbers of this plan's first region, element-wise and batch norm steps: the eval-mode plan of a forward
        # that branches on self.training numbers its steps after the training plan's (modes.py), in one file
        self.first_region, self.first_pointwise, self.first_batchnorm = first
        self.nodes = list(ref.graph.nodes)
        self.order = {n.name: i for i, n in enumerate(self.nodes)}
        self.modules = dict(ref.gm.named_modules())
        self.prelu_weights = prelu_weights(ref.graph)   # (C,) tensors that apply to dim 1, not the last dim
        self.claimed: dict[str, object] = {}     # node name -> the step that computes it
        self.bias_takers: dict[str, object] = {}   # conv / linear node name -> the step that takes over its bias
        # (a list of steps: regions that each add a slice of it to a channel piece of its output, plan_bias.py)
        self.split_bias_takers: dict = {}   # conv node -> {piece node name: the region taking its slice}
        self.steps: list = []
        # While a region absorbs its element-wise ops: the values a tensor it reads per (sample, channel) must not
        # depend on (its own but its input x, computed before it; value_operand). None: no such tensor is taken
        # (element-wise and batch norm steps).
        self.region_values: set | None = None
        self.region_input = ""

    # ---------------------------------------------------------------- helpers
    def where(self, node) -> str:
        """`path:LINE: `source line`` of the reference line a node came from, or the path and the op as the reference
        would write it (graph.op_text) for a node no line made: errors speak of the user's file, not of the graph."""
        line, number = self.ref.forward_lines.get(node.name), self.ref.forward_line_numbers.get(node.name)
        if line and number:
            return f"{self.ref.path}:{number}: `{line}`"
        return f"{self.ref.path}: {op_text(node, self.modules)} in Model.forward"

    def spelled(self, node) -> str:
        """A value as the reference writes it: its source line, else the op (graph.op_text)."""
        line = self.ref.forward_lines.get(node.name)
        return f"`{line}`" if line else op_text(node, self.modules)

    def attr(self, target: str) -> str:
        """ModelNew's expression for a module or tensor of the graph (graph.self_attr)."""
        return self_attr(target, self.ref.model)

    def module(self, node):
        return self.modules.get(node.target) if node.op == "call_module" else None

    def is_groupnorm(self, node) -> bool:
        return isinstance(self.module(node), nn.GroupNorm) or (node.op == "call_function" and
                                                                node.target in (F.group_norm, torch.group_norm))

    def scalar_of(self, value):
        """A Python number, or a node that is a constant scalar (torch.tensor(0.0, device=...))."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, torch.fx.Node) and value.op == "call_function" and value.target is torch.tensor \
                and value.args and isinstance(value.args[0], (int, float)) and not isinstance(value.args[0], bool):
            return float(value.args[0])
        return None

    def param_of(self, value, full: list):
        """A Param for a get_attr tensor that broadcasts per channel (or as one value) against `full`, read
        directly or through views that keep its order (`w.view(1, -1, 1, 1)`, `w[None, :, None, None]`,
        `w.unsqueeze(-1).unsqueeze(-1)`): the kernels read the parameter itself, C values or one."""
        root = param_view_root(value)
        if root is None:
            return None
        tensor = self.ref.gm.get_parameter(root.target) if is_parameter(self.ref.gm, root.target) else \
            get_attribute(self.ref.gm, root.target)
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.float32:
            return None
        shape = tuple(tensor.shape)
        param = Param(expr=self.attr(root.target), shape=shape, label=root.target,
                      read_rank=len(full) if root is not value or value.name in self.prelu_weights else 0)
        if value.name in self.prelu_weights:
            ok = len(full) >= 2 and len(shape) == 1 and shape[0] in (1, full[1])
            return param if ok else None
        seen = shape if root is value else tensor_shape(value)
        if seen is None or len(full) < 2 or len(seen) > len(full) or tensor.numel() not in (1, full[1]):
            return None
        aligned = (1,) * (len(full) - len(seen)) + tuple(seen)
        if any(s != 1 for i, s in enumerate(aligned) if i != 1) or aligned[1] not in (1, full[1]):
            return None
        return param

    def pw_node(self, node, call: op_calls.ElementwiseCall, operands: list) -> PwNode:
        """The PwNode of `node`, which makes `call`, over its converted `operands` (Planner.operands)."""
        folded = op_calls.folded_condition(node).name if call.op in ops.WHERE_OPS else ""
        return PwNode(node.name, call.op, operands, call.consts, self.ref.forward_lines.get(node.name, ""),
                      module=node.target if node.op == "call_module" else "", folded=folded)

    # ---------------------------------------------------------------- element-wise recognition
    def elementwise(self, node, full: list) -> op_calls.ElementwiseCall | None:
        """The element-wise call of a node producing `full`'s shape (its operands made like a number read as that
        number, like_as_number), or None."""
        if tensor_shape(node) != full:
            return None
        found = op_calls.recognise(node, self.module(node))
        if found is None or not self.kernel_dtypes(node, found.operands):
            return None
        if ops.OPS[found.op].arity != len(found.operands):
            return None
        return replace(found, operands=[self.like_as_number(o, found.operands) for o in found.operands])

    def like_as_number(self, operand, operands):
        """`torch.zeros_like(t)`, `torch.ones_like(t)`, `torch.full_like(t, v)` (float32, no other argument) read
        by an element-wise op beside another tensor of its shape, as the number it is filled with (`torch.where(y >
        0, y, torch.zeros_like(y))`): the op's value and shape are the same, and no gradient flows into it either
        way. Any other operand is returned as it is."""
        if not isinstance(operand, torch.fx.Node) or operand.op != "call_function" or \
                operand.target not in LIKE_FILLS or operand.kwargs or tensor_dtype(operand) != torch.float32:
            return operand
        fill = LIKE_FILLS[operand.target](operand.args)
        shape = tensor_shape(operand)
        beside = any(o is not operand and isinstance(o, torch.fx.Node) and tensor_shape(o) == shape and
                     not (o.op == "call_function" and o.target in LIKE_FILLS) for o in operands)
        number = isinstance(fill, (int, float)) and not isinstance(fill, bool)
        return float(fill) if beside and number else operand

    def kernel_dtypes(self, node, operands) -> bool:
        """Whether an element-wise node and its tensor operands are of the dtypes kgen's kernels read (float32,
        float16, bfloat16; a bool mask, a float64 parameter, an integer tensor stay PyTorch's)."""
        tensors = [node] + [o for o in operands if isinstance(o, torch.fx.Node)]
        return all(tensor_dtype(t) in KERNEL_DTYPES for t in tensors)

    # ---------------------------------------------------------------- regions
    def live_nodes(self) -> set:
        """The names of the nodes the output reads, directly or through others, and of the shape guards
        (concrete.py) with what they read."""
        live, todo = set(), [n for n in self.nodes if n.op == "output" or n.meta.get(GUARD)]
        while todo:
            node = todo.pop()
            if node.name not in live:
                live.add(node.name)
                todo.extend(node.all_input_nodes)
        return live

    def plan(self) -> Plan:
        gns = [n for n in self.nodes if self.is_groupnorm(n)]
        if not gns:
            raise RefError(f"{self.ref.path}: no GroupNorm in Model.forward (nn.GroupNorm or F.group_norm): kgen "
                           "emit --ref plans GroupNorm-family references only")
        live = self.live_nodes()
        for gn in gns:
            if gn.name not in live:
                continue   # its value reaches no output: a library step the emitted forward leaves unwritten
            if tensor_dtype(gn) not in KERNEL_DTYPES:
                # kgen's region kernels read float32, float16 and bfloat16: PyTorch's own GroupNorm runs this one
                self.library(gn, fallback="a GroupNorm of a tensor that is not float32, float16 or bfloat16")
            elif gn.name not in self.claimed:
                self.region(gn)
        if not any(gn.name in live for gn in gns):
            raise RefError(f"{self.where(gns[0])}: no output of Model.forward depends on a GroupNorm (it returns "
                           f"{_returned(self.nodes)}): return the value the reference computes")
        if not any(isinstance(s, RegionStep) for s in self.steps):
            raise RefError(f"{self.where(gns[0])}: no GroupNorm of a float32, float16 or bfloat16 tensor in "
                           f"Model.forward (this one is {tensor_dtype(gns[0])}): kgen's kernels read those three; build "
                           "the model in one of them and have get_inputs() return tensors of it")
        self.settle_split_biases()
        for node in self.nodes:
            if isinstance(self.module(node), BATCH_NORMS) and node.name not in self.claimed:
                self.batch_norm(node)
        self.pointwise_and_library()
        self.steps.sort(key=self.anchor_order)
        output = next(n for n in self.nodes if n.op == "output")
        return Plan(ref=self.ref, steps=self.steps, outputs=output.args[0])

    def region(self, gn) -> None:
        full = tensor_shape(gn)
        if full is None or len(full) < 2 or len(full) > 5:
            raise RefError(f"{self.where(gn)}: a GroupNorm of a rank-{len(full or [])} tensor: kgen's kernels take "
                           "(N, C) to (N, C, D, H, W); view the tensor to one of those ranks around the GroupNorm")
        # First with the tensors other steps compute per sample (value_operand) taken in; where the region then
        # cannot run on merged samples (a reduction across channels), again without them.
        claimed = dict(self.claimed)
        step, output_node, reduce, peel = self.region_step(gn, full, take_values=True)
        why = unmergeable(step, channels_last_inputs(self.nodes)) if step.merged else ""
        if why:
            self.claimed = claimed
            step, output_node, reduce, peel = self.region_step(gn, full, take_values=False)
            step.notes.append(f"the per-sample tensors it could read stay steps of their own: {why}")
        for name in names_of(step.prologue) | names_of(step.epilogue) | {gn.name, output_node.name}:
            self.claimed[name] = step
        if reduce is not None and reduce.defined.name != output_node.name:
            self.claimed[reduce.defined.name] = step
        if peel is not None:
            self.take_bias(peel, step)
        self.steps.append(step)

    def region_step(self, gn, full: list, take_values: bool):
        """The RegionStep of `gn` (its prologue, epilogue, parameters, peeled bias and reduction), and the node of its
        output, its reduction (or None) and the conv / linear whose bias it takes (or None)."""
        gn_input = gn.args[0]
        # The GroupNorm's input z may also be read after it (a residual of z): the prologue then takes it where
        # every such reader joins the epilogue; where one does not, the prologue stops before z.
        for open_end in (True, False):
            params: list[Param] = []
            self.region_values = set() if take_values else None
            prologue, x = self.absorb_prologue(gn, gn_input, full, params, open_end)
            if len(param_slots(prologue)) > MAX_FUNCTOR_PARAMS:
                # the prologue functor reads at most kMaxParams: its ops go to an element-wise kernel instead
                params.clear()
                prologue, x = [], gn_input
            region_values = {x.name} | names_of(prologue) | {gn.name}
            if take_values:
                self.region_values, self.region_input = region_values, x.name   # (the epilogue's join it as it grows)
            epilogue = self.absorb_epilogue(gn, x, full, region_values, params)
            self.region_values = None
            while epilogue and _epilogue_params(prologue, epilogue) > MAX_FUNCTOR_PARAMS:
                region_values -= names_of([epilogue.pop()])
            if not open_end or not prologue or all(u.name in region_values or is_metadata(u) for u in gn_input.users):
                break
        # Epilogue nodes dropped above (one output, the functors' parameter limit) may have been the only readers of
        # a parameter: the region does not take it (its own kernel does).
        params[:] = used_params(prologue + epilogue, params)
        result, reduce = self.region_output(gn, prologue, epilogue, x, full)
        # Peel the bias of a conv / linear whose output (or a channel piece of it) only this region reads: the
        # kernels add it on the fly (plan_bias.py), while the prologue functor has a parameter slot left for it.
        peel = self.peel_bias(x, region_values) if (
            len(param_slots(prologue)) < MAX_FUNCTOR_PARAMS and
            _epilogue_params(prologue, epilogue) < MAX_FUNCTOR_PARAMS) else None
        if peel is not None:
            peel, bias_param, words = peel
            add_bias(prologue, epilogue, params, x, bias_param, words)
        gn_module = gn.target if gn.op == "call_module" else None
        affine, gn_args = self.gn_arguments(gn)
        number = self.first_region + sum(isinstance(s, RegionStep) for s in self.steps)
        step = RegionStep(index=number, input=x.name, gn=gn.name,
                          gn_module=gn_module, gn_args=gn_args, affine=affine, shape=full, prologue=prologue,
                          epilogue=epilogue, params=params, result=result, gn_params=self.gn_parameters(gn))
        output_node = self.fold_after_extreme(step, self.apply_reduction(step, reduce, full))
        step.output = output_node.name
        step.out_dtype = region_out_dtype(step, {n.name: n for n in self.ref.graph.nodes})
        step.out_shape = tensor_shape(output_node) or []
        return step, output_node, reduce, peel

    def gn_arguments(self, gn):
        if gn.op == "call_module":
            module = self.module(gn)
            m = self.attr(gn.target)
            return module.affine, {"groups": f"{m}.num_groups", "eps": f"{m}.eps",
                                   "weight": f"{m}.weight" if module.affine else "None",
                                   "bias": f"{m}.bias" if module.affine else "None"}
        args = list(gn.args) + [None] * 5
        kw = dict(gn.kwargs)
        groups = kw.get("num_groups", args[1])
        weight, bias = kw.get("weight", args[2]), kw.get("bias", args[3])
        eps = kw.get("eps", args[4] if args[4] is not None else 1e-5)
        for value, what in ((weight, "weight"), (bias, "bias")):
            if value is not None and not (isinstance(value, torch.fx.Node) and value.op == "get_attr"):
                raise RefError(f"{self.where(gn)}: the {what} of F.group_norm is not a parameter or buffer of the "
                               f"model, and kgen's kernels read it as one: make it an nn.Parameter (or a registered "
                               f"buffer) in __init__")
        written = attribute_arguments(self.ref.forward_lines.get(gn.name, ""), self.ref.model, {"group_norm"},
                                      {"num_groups": (1, groups), "eps": (4, eps)})
        weight_expr = self.attr(weight.target) if weight is not None else "None"
        bias_expr = self.attr(bias.target) if bias is not None else "None"
        # The kernels take both or neither (affine iff weight is given): the one missing is its identity value,
        # made beside the one given at each call (it follows the parameter's device, dtype and shape).
        if weight is None and bias is not None:
            weight_expr = f"torch.ones_like({bias_expr})"
        elif bias is None and weight is not None:
            bias_expr = f"torch.zeros_like({weight_expr})"
        value = static_int(groups)
        if value is None:
            raise RefError(f"{self.where(gn)}: its group count is neither an int nor one worked out from the input "
                           f"shapes and ints (x.shape[1] // 4): pass an int or a model attribute")
        found = {"groups": written.get("num_groups", repr(groups)), "eps": written.get("eps", repr(float(eps))),
                 "groups_value": value, "weight": weight_expr, "bias": bias_expr}
        if isinstance(groups, torch.fx.Node):   # computed in forward (x.shape[1] // 4): forward passes that variable
            found["groups"], found["groups_node"] = op_text(groups, self.modules), groups.name
        return weight is not None or bias is not None, found

    def gn_parameters(self, gn) -> list[str]:
        """The GroupNorm's own weight and bias as the model names them (`gn.weight`, `self.w` of an F.group_norm), the
        parameters its region reads besides its functors' (RegionStep.params)."""
        if gn.op == "call_module":
            return [f"{gn.target}.weight", f"{gn.target}.bias"] if self.module(gn).affine else []
        args = list(gn.args) + [None] * 4
        given = (gn.kwargs.get("weight", args[2]), gn.kwargs.get("bias", args[3]))
        return [value.target for value in given if isinstance(value, torch.fx.Node) and value.op == "get_attr"]

    def absorb_prologue(self, gn, start, full, params, open_end=False):
        """Element-wise nodes between the region's one tensor input x and the GroupNorm. With open_end, the
        GroupNorm's own input (start) joins even where it has readers after the GroupNorm (region() checks
        that the epilogue takes them all)."""
        members: dict[str, PwNode] = {}
        leaves: set[str] = set()

        def visit(node) -> None:
            if node.name in members or node.name in leaves:
                return
            found = self.elementwise(node, full) if node.name not in self.claimed else None
            inside = found is not None and (all(u is gn or u.name in members for u in node.users)
                                            or (open_end and node is start))
            if not inside:
                leaves.add(node.name)
                return
            converted = self.operands(node, found.operands, full, params)
            if converted is None:
                leaves.add(node.name)
                return
            members[node.name] = self.pw_node(node, found, converted)
            for operand in found.operands:
                if isinstance(operand, torch.fx.Node) and tensor_shape(operand) == full and \
                        self.param_of(operand, full) is None:
                    visit(operand)

        if not isinstance(start, torch.fx.Node):
            raise RefError(f"{self.where(gn)}: a GroupNorm of something that is not a tensor: give it the tensor to "
                           "normalise")
        visit(start)
        if len(leaves) != 1:
            # More than one tensor feeds the element-wise ops: keep them out of the region.
            members.clear()
            leaves = {start.name}
        x = next(n for n in self.nodes if n.name in leaves)
        prologue = [members[n.name] for n in self.nodes if n.name in members]
        return prologue, x

    def operands(self, node, operands, full, params, inputs: set | None = None):
        """The Operands of an element-wise node producing `full`, or None where one is not a scalar, a per-channel
        (or one-value) parameter or a value of shape `full` (or one of `inputs`, an element-wise kernel's input
        tensors, which may broadcast)."""
        converted = []
        for operand in operands:
            if inputs and isinstance(operand, torch.fx.Node) and operand.name in inputs:
                converted.append(Operand.of_value(operand.name))
                continue
            scalar = self.scalar_of(operand)
            if scalar is not None:
                converted.append(Operand.of_scalar(scalar))
                continue
            param = self.param_of(operand, full) or self.value_operand(operand, full)
            if param is not None:
                index = next((i for i, p in enumerate(params) if (p.expr, p.value) == (param.expr, param.value)), None)
                if index is None:
                    params.append(param)
                    index = len(params) - 1
                converted.append(Operand.of_param(index))
                continue
            if isinstance(operand, torch.fx.Node) and tensor_shape(operand) == full:
                converted.append(Operand.of_value(operand.name))
                continue
            return None
        return converted

    def absorb_after(self, anchor, full, values: set, params) -> list:
        """The element-wise nodes after `anchor`, in graph order, whose tensor operands are all in `values`
        (which grows with each one taken); their parameters join `params`."""
        taken = []
        for node in self.nodes[self.order[anchor.name] + 1:]:
            if node.name in self.claimed:
                continue
            found = self.elementwise(node, full)
            if found is None:
                continue
            tensors = [o for o in found.operands if isinstance(o, torch.fx.Node) and self.scalar_of(o) is None
                       and self.param_of(o, full) is None and self.value_operand(o, full) is None]
            if not tensors or any(t.name not in values for t in tensors):
                continue
            trial = list(params)
            converted = self.operands(node, found.operands, full, trial)
            if converted is None:
                continue
            params[:] = trial
            taken.append(self.pw_node(node, found, converted))
            values |= names_of(taken[-1:])
        return taken

    def absorb_epilogue(self, gn, x, full, region_values: set, params):
        epilogue = self.absorb_after(gn, full, region_values, params)
        # Exactly one value may leave the region (x, a library op's output, may be read elsewhere too):
        # drop trailing epilogue nodes until that holds.
        while epilogue:
            inside = region_values - {x.name}
            leaving = [n for n in self.nodes if n.name in inside and any(u.name not in region_values and not is_metadata(u)
                                                                         for u in n.users)]
            if len(leaving) <= 1:
                break
            region_values -= names_of([epilogue.pop()])
        return epilogue

    def region_output(self, gn, prologue, epilogue, x, full):
        inside = {gn.name} | names_of(prologue) | names_of(epilogue)
        leaving = [n for n in self.nodes if n.name in inside and any(u.name not in inside and not is_metadata(u)
                                                                     for u in n.users)]
        if len(leaving) != 1:
            values = "; ".join(self.spelled(n) for n in leaving) or "none"
            raise RefError(f"{self.where(gn)}: kgen fuses this GroupNorm with the element-wise ops around it into one "
                           f"kernel with one output, and {len(leaving)} of their values are read elsewhere ({values}): "
                           "kgen cannot plan this yet; please report the reference")
        result = leaving[0]
        if result.name in names_of(prologue):
            raise RefError(f"{self.where(result)}: kgen fuses this value, computed before the GroupNorm, into the "
                           "GroupNorm's kernel, and it is the only one read after it: kgen cannot plan this yet; "
                           "please report the reference")
        reduce = None
        readers = [u for u in result.users if not is_metadata(u)]
        if len(readers) == 1:
            user = readers[0]
            reduce = self.reduction(user, result, full) or self.flattened_reduction(user, result, full) or \
                self.permuted_reduction(user, result, full)
        return result.name, reduce

    def apply_reduction(self, step: RegionStep, reduce: FoundReduction | None, full):
        result_node = next(n for n in self.nodes if n.name == step.result)
        if reduce is None:
            return result_node
        defined = reduce.defined
        step.reduce_kind, step.reduce_op, step.keepdim = reduce.kind, reduce.op, reduce.keepdim
        step.window, step.window_expr = reduce.window, reduce.window_expr
        n = reduce.through   # a flattening view or a permute the reduction reads through (plan_reductions.py)
        if n is not None:
            self.claimed[n.name] = step
            step.reduce_rank = len(tensor_shape(n)) if len(tensor_shape(n)) != len(full) else 0
        # torch.max(x, dim) defines a (values, indices) node and a `[0]` or `.values`; claim both.
        for n in self.nodes:
            if n is defined or (is_values_output(defined) and n is defined.args[0]):
                self.claimed[n.name] = step
        return defined

def _returned(nodes) -> str:
    """What forward returns, in words for an error: `None`, or the names of the values."""
    output = next(n for n in nodes if n.op == "output")
    names = [n.name for n in output.all_input_nodes]
    return ", ".join(names) if names else repr(output.args[0])


def _epilogue_params(prologue, epilogue) -> int:
    """Parameters the epilogue functor reads: the epilogue's, and those of the prologue values it recomputes
    (at most: the prologue's last value, z, is read as it is)."""
    nodes = prologue[:-1] + epilogue
    read = set()
    for node in epilogue:
        read |= {n.name for n in needed(nodes, node.name)}
    return len(param_slots([n for n in nodes if n.name in read]))


def make_plan(ref: Reference, conv: ConvMode | str = ConvMode.EXACT, faithful: str = "auto",
              first: tuple = (0, 0, 0)) -> Plan:
    """The reference's plan; `conv` FAST (or the command line's "fast") runs the 2-D and 3-D convolutions that feed a
    region channels-last (plan_layout.py); `faithful`: which regions are PyTorch's GroupNorm to the bit
    (plan_faithful.py); `first`: the numbers its first region, element-wise and batch norm steps take."""
    return apply_conv_mode(mark_faithful(Planner(ref, first).plan(), faithful), conv)

