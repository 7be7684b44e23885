"""Element-wise DAG -> a CUDA functor with its value and its reverse-mode derivative (part of codegen).

Forward: one `const float` per DAG node, in topological order, its PyTorch formula quoted beside it. Where the
reference computes in float16 or bfloat16 (the functor's `rounding`, groupnorm/region.cuh), `value` takes its stored
form instead: the inputs and every node's value rounded to that type (kgen::stored), as the reference's separate
kernels store them.
Backward: the forward recomputed (nothing is stored between forward and backward), then the adjoints of
every node in reverse order, each operand's adjoint += the node's adjoint x the op's local derivative
(ops.OPS). Parameters (per channel, read once per channel by `at`) collect `dparam[k] +=`.
"""
from __future__ import annotations

from kgen.ref import ops
from kgen.ref.ir import Operand, PwNode


def _identifier(name: str) -> str:
    """A node's name as a C++ identifier's tail: every character that is not a word character becomes `_`."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def _var(name: str) -> str:
    return "v_" + _identifier(name)


def _adj(name: str) -> str:
    return "g_" + _identifier(name)


class DagWriter:
    """Writes one DAG's forward and backward statements. `leaves` maps a value name the DAG reads to the
    C++ expression it is in the functor (`x`, `y`, `z`); `table` maps a region parameter index to the
    functor's parameter slot."""

    def __init__(self, nodes: list[PwNode], leaves: dict[str, str], table: dict[int, int]):
        self.nodes = nodes
        self.leaves = leaves
        self.table = table

    def operand(self, o: Operand) -> str:
        if o.is_scalar:
            return ops.cuda_float(o.ref)
        if o.is_param:
            return f"p{self.table[o.ref]}"
        if o.ref in self.leaves:
            return self.leaves[o.ref]
        return _var(o.ref)

    def expression(self, template: str, node: PwNode, result: str | None = None) -> str:
        """An op table template (ops.py) filled in for `node`: its operands' C++ expressions as {a} to {d}, `result`
        (its variable, for a derivative) as {r}, its constants as float literals."""
        consts = {k: ops.cuda_float(v) for k, v in node.consts.items()}
        operands = {letter: self.operand(node.operands[k]) if len(node.operands) > k else ""
                    for k, letter in enumerate("abcd")}
        return template.format(**consts, **operands, r=result or "")

    def forward(self, indent: str, moments: bool = False, stored: bool = False, recompute: bool = False) -> list[str]:
        """One statement per node; `moments`: each op's value as the conv epilogue's moments take it (OpDef);
        `stored`: each value rounded as the reference stores it (kgen::stored, by the functor's `rounding`);
        `recompute`: as a backward recomputes it (OpDef.recompute)."""
        lines = []
        for node in self.nodes:
            op = ops.OPS[node.op]
            formula = op.torch.format(**{k: repr(v) for k, v in node.consts.items()})
            comment = f"  // {node.line}" if node.line else f"  // {formula}"
            template = op.moments if moments and op.moments else op.recompute if recompute and op.recompute \
                else op.value
            value = self.expression(template, node)
            if stored:
                value = f"kgen::stored({value}, rounding)"
            lines.append(f"{indent}const float {_var(node.name)} = {value};{comment}")
        return lines

    def stored_leaves(self, indent: str) -> tuple:
        """The leaves rounded as stored: (statements, a writer reading the rounded copies)."""
        read = {self.leaves[o.ref] for n in self.nodes for o in n.operands if o.is_value and o.ref in self.leaves}
        names = {expr: "s_" + _identifier(expr) for expr in dict.fromkeys(self.leaves.values()) if expr in read}
        lines = [f"{indent}const float {names[e]} = kgen::stored({e}, rounding);" for e in names]
        writer = DagWriter(self.nodes, {k: names[v] for k, v in self.leaves.items() if v in names}, self.table)
        return lines, writer

    def backward(self, indent: str, seed: str, seed_value: str, leaf_adjoints: dict[str, str]) -> list[str]:
        """Adjoints from d(seed) = seed_value back to the leaves; leaf_adjoints maps a leaf expression
        (`x`, `y`, `z`) to the C++ variable that collects its adjoint."""
        lines = [f"{indent}float {_adj(n.name)} = 0.f;" for n in self.nodes if n.name != seed]
        lines.append(f"{indent}float {_adj(seed)} = {seed_value};")
        for node in reversed(self.nodes):
            op = ops.OPS[node.op]
            for i, o in enumerate(node.operands):
                if o.is_scalar:
                    continue
                local = self.expression(op.grads[i], node, result=_var(node.name))
                if local == "0.f":
                    continue  # no gradient through this operand (a comparison's sides)
                term = f"{_adj(node.name)} * ({local})" if local != "1.f" else _adj(node.name)
                if o.is_param:
                    lines.append(f"{indent}dparam[{self.table[o.ref]}] += {term};")
                elif o.ref in self.leaves:
                    lines.append(f"{indent}{leaf_adjoints[self.leaves[o.ref]]} += {term};")
                else:
                    lines.append(f"{indent}{_adj(o.ref)} += {term};")
        return lines


def needed(nodes: list[PwNode], result: str) -> list[PwNode]:
    """The nodes `result` depends on, in order."""
    by_name = {n.name: n for n in nodes}
    keep, stack = set(), [result]
    while stack:
        name = stack.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        stack += [o.ref for o in by_name[name].operands if o.is_value]
    return [n for n in nodes if n.name in keep]


def param_slots(nodes: list[PwNode]) -> dict[int, int]:
    """Region parameter index -> this functor's slot, in order of first use."""
    slots: dict[int, int] = {}
    for node in nodes:
        for o in node.operands:
            if o.is_param and o.ref not in slots:
                slots[o.ref] = len(slots)
    return slots


def _params_block(name: str, table: str, slots: dict[int, int], labels: list[str]) -> list[str]:
    lines = [f"  static constexpr int kParams = {len(slots)};",
             "  int rounding;  // the reference's rounding points (kgen::Rounding): value() rounds as it stores"]
    for region_index, slot in sorted(slots.items(), key=lambda kv: kv[1]):
        lines.append(f"  float p{slot};  // {labels[region_index]}")
    loads = "".join(f", p.{table}.at({slot}, c)" for slot in sorted(slots.values()))
    lines.append(f"  __device__ static {name} at(const kgen::RegionParams& p, int64_t c) {{ "
                 f"return {name}{{p.{table}.rounding{loads}}}; }}" if slots else
                 f"  __device__ static {name} at(const kgen::RegionParams& p, int64_t) {{ "
                 f"return {name}{{p.{table}.rounding}}; }}")
    return lines


def _value_functions(writer: DagWriter, signature: str, call: str, result: str, cheap: bool = False) -> list[str]:
    """`value` (exact, or the stored form where `rounding` asks for it) and `value_stored`; `cheap`: float32's `value`
    takes each op's cheaper form where it has one (OpDef.recompute), as a backward does."""
    lines = [f"  __device__ __forceinline__ float value({signature}) const {{",
             f"    if (rounding != kgen::kExact) return value_stored({call});"]
    lines += writer.forward("    ", recompute=cheap) + [f"    return {_var(result)};", "  }"]
    leaves, stored = writer.stored_leaves("    ")
    lines += ["  // value as the reference computes it in float16 / bfloat16: inputs and each op's result rounded to it",
              f"  __device__ __forceinline__ float value_stored({signature}) const {{"]
    lines += leaves + stored.forward("    ", stored=True) + [f"    return {_var(result)};", "  }"]
    return lines


def prologue_functor(name: str, nodes: list[PwNode], x: str, result: str | None, labels: list[str],
                     moments: bool = False) -> tuple:
    """z = P(x). Returns (C++ struct, slots) — slots map region parameter indices to the functor's. `moments`: the
    region is fed by kgen's conv, whose epilogue takes the GroupNorm moments of `moments_value` where an op has a
    cheaper form for them (OpDef.moments)."""
    if result is None or not nodes:
        return f"using {name} = kgen::NoPrologue;\n", {}
    body = needed(nodes, result)
    slots = param_slots(body)
    writer = DagWriter(body, {x: "x"}, slots)
    lines = [f"struct {name} {{"] + _params_block(name, "prologue", slots, labels)
    lines += _value_functions(writer, "float x", "x", result)
    if moments and any(ops.OPS[n.op].moments for n in body):
        lines += ["  // z as the conv epilogue's GroupNorm moments take it (conv/convt_wgmma_consume.cuh: moments_value)",
                  "  __device__ __forceinline__ float moments_value(float x) const {"]
        lines += writer.forward("    ", moments=True) + [f"    return {_var(result)};", "  }"]
    lines += ["  __device__ __forceinline__ float backward(float x, float dz, float (&dparam)[kgen::kMaxParams]) const {"]
    lines += writer.forward("    ", recompute=True) + ["    float dx = 0.f;"]
    lines += writer.backward("    ", result, "dz", {"x": "dx"})
    lines += ["    return dx;", "  }", "};"]
    return "\n".join(lines) + "\n", slots


def epilogue_functor(name: str, prologue: list[PwNode], epilogue: list[PwNode], x: str, z: str | None, y: str,
                     result: str, labels: list[str], cheap: bool = False) -> tuple:
    """v = E(y, z, x): the epilogue DAG, and any prologue value it reads recomputed from x. `cheap`: the forward's
    float32 values take the ops' cheaper forms (OpDef.recompute, within a few ulp): right where y is kgen's own
    normalisation, not PyTorch's bits (a region that is not faithful), so that PyTorch's exact formula would buy no
    bit of the reference's output. (H200, odd_shapes_large's 3x3 max over mish, an issue-bound kernel:
    benchmarks/results/h200/window_forward/.)"""
    if result == y:
        return f"using {name} = kgen::NoEpilogue;\n", {}
    leaves = {y: "y", x: "x"}
    if z is not None:
        leaves[z] = "z"
    nodes = needed([n for n in prologue if n.name != z] + epilogue, result)
    # Prologue nodes that only lead to z are read through `z`, never recomputed.
    slots = param_slots(nodes)
    writer = DagWriter(nodes, leaves, slots)
    lines = [f"struct {name} {{"] + _params_block(name, "epilogue", slots, labels)
    exact = all(n.op not in ops.UNBOUNDED_GRAD_OPS for n in nodes)
    lines += [f"  static constexpr bool kZeroGradExact = {'true' if exact else 'false'};  "
              "// true: dv = 0 gives exact zeros (no op's derivative can be infinite)"]
    direct = any(o.is_value and o.ref in leaves and leaves[o.ref] != "y" for n in nodes for o in n.operands)
    lines += [f"  static constexpr bool kDirectGrads = {'true' if direct else 'false'};  "
              "// true: backward adds to dz or dx (a residual of z or x)"]
    lines += _value_functions(writer, "float y, float z, float x", "y, z, x", result, cheap)
    lines += ["  __device__ __forceinline__ void backward(float y, float z, float x, float dv, float& dy, float& dz,",
              "                                           float& dx, float (&dparam)[kgen::kMaxParams]) const {"]
    lines += writer.forward("    ", recompute=True) + ["    float gy = 0.f;"]
    lines += writer.backward("    ", result, "dv", {"y": "gy", "z": "dz", "x": "dx"})
    lines += ["    dy = gy;", "  }", "};"]
    text = "\n".join(lines) + "\n"
    # (void) the unused arguments: the functor need not read all of y, z, x.
    return text, slots


# An operand's share of the result's gradient through an op of a sum: add's operands +1, sub's +1 and -1, neg's -1.
LINEAR_SIGNS = {"add": (1.0, 1.0), "sub": (1.0, -1.0), "neg": (-1.0,)}


def linear_gradients(nodes: list[PwNode], inputs: list[str], result: str) -> list[float] | None:
    """Where the DAG is a signed sum of its inputs (add, sub and neg of tensors and numbers, no parameters): each
    input's gradient as a multiple of the output's (x + x: 2; a - b: 1 and -1). Its backward then needs no kernel and
    no saved tensors, as PyTorch's own (grad, -grad, summed back where an input broadcasts). Else None."""
    body = needed(nodes, result)
    if not body or any(n.op not in LINEAR_SIGNS or any(o.is_param for o in n.operands) for n in body):
        return None
    share = {result: 1.0}
    for node in reversed(body):
        for operand, sign in zip(node.operands, LINEAR_SIGNS[node.op]):
            if operand.is_value:
                share[operand.ref] = share.get(operand.ref, 0.0) + sign * share.get(node.name, 0.0)
    return [share.get(name, 0.0) for name in inputs]


def pointwise_functor(name: str, nodes: list[PwNode], inputs: list[str], result: str, labels: list[str],
                      backward: bool = True) -> tuple:
    """v = F(x[0], ..., x[K-1]): an element-wise kernel's DAG over its K input tensors, with its backward unless
    `backward` is False (a signed sum's, which PyTorch's ops make). Returns (C++ struct, slots)."""
    body = needed(nodes, result)
    slots = param_slots(body)
    leaves = {name_: f"x[{k}]" for k, name_ in enumerate(inputs)}
    writer = DagWriter(body, leaves, slots)
    lines = [f"struct {name} {{", f"  static constexpr int kInputs = {len(inputs)};"]
    lines += _params_block(name, "prologue", slots, labels)
    lines += _value_functions(writer, "const float (&x)[kInputs]", "x", result)
    if backward:
        lines += ["  __device__ __forceinline__ void backward(const float (&x)[kInputs], float dv, float (&dx)[kInputs],",
                  "                                           float (&dparam)[kgen::kMaxParams]) const {"]
        lines += writer.forward("    ", recompute=True)
        lines += [f"    dx[{k}] = 0.f;" for k in range(len(inputs))]
        lines += writer.backward("    ", result, "dv", {f"x[{k}]": f"dx[{k}]" for k in range(len(inputs))})
        lines += ["  }"]
    lines += ["};"]
    return "\n".join(lines) + "\n", slots
