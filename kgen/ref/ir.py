"""The Plan, the small IR between the traced graph and the generated code (`kgen emit --ref`).

A Plan is the reference's forward as a list of steps, each one of:
  LibraryStep    a PyTorch call kept as the reference makes it (conv, linear, batch norm, dropout...), maybe
                 with its bias peeled off into the region that consumes it;
  RegionStep     a GroupNorm with the element-wise ops before it (prologue), after it (epilogue) and the
                 reduction or window pooling that follows (one kgen kernel family, forward and backward);
  PointwiseStep  an element-wise DAG outside any GroupNorm region (one kgen kernel) over 1 to 4 tensors,
                 each of the output's shape or broadcast to it (a reduced (N, 1) plus a (1, C, 1, 1) parameter;
                 a region's output minus its mean; a residual of the model's input);
  BatchNormStep  an nn.BatchNorm1d/2d/3d with the element-wise ops after it and a window pooling after those
                 (kgen's per-channel statistics, apply and backward kernels, batchnorm/train.cuh).
Element-wise ops are kept as DAGs (`PwNode`s over `Operand`s), in the reference's own spelling: a DAG is
differentiated by codegen.py, never matched against a table of fixed chains. plan.py builds a Plan.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kgen.ref.trace import Reference


class ReduceKind(str, Enum):
    """Which dims of x a region's reduction reads; each value is the kgen::ReduceKind token of the kernels
    (groupnorm/region.cuh) and of the emitted `_keep_dims`. A str Enum: a member equals its token."""
    NONE = "kNone"         # no reduction: the region writes its full-size output
    CHANNEL = "kChannel"   # over dim 1 (channels)
    PLANE = "kPlane"       # over the spatial dims 2.. (per (n, c))
    SAMPLE = "kSample"     # over all but the batch dim
    WINDOW = "kWindow"     # window pooling, kernel == stride

    @property
    def cpp(self) -> str:
        """The C++ enumerator's name (kgen::ReduceKind::<cpp>)."""
        return self.value


class ReduceOp(str, Enum):
    """The operator of a reduction or window pooling; each value is the kgen::ReduceOp token of the kernels
    (groupnorm/region.cuh, batchnorm/train.cuh). A window pooling is MAX (max pooling) or MEAN (average pooling)."""
    SUM = "kSum"
    MEAN = "kMean"
    MAX = "kMax"
    MIN = "kMin"
    LOGSUMEXP = "kLogSumExp"

    @property
    def cpp(self) -> str:
        """The C++ enumerator's name (kgen::ReduceOp::<cpp>)."""
        return self.value

    @property
    def word(self) -> str:
        """How descriptions name it: sum, mean, max, min, logsumexp."""
        return self.name.lower()

    @property
    def is_extreme(self) -> bool:
        """max or min: the reduction picks one element (element-wise ops that commute with it can move before it)."""
        return self in (ReduceOp.MAX, ReduceOp.MIN)


class OperandKind(str, Enum):
    """What an element-wise node reads through one operand; Operand.ref is what names it. A str Enum: a member
    equals its word (the plan's tests and dumps spell it so)."""
    VALUE = "value"     # a tensor value: a PwNode of the DAG or one of its leaves, by fx node name (ref: str)
    PARAM = "param"     # a per-channel (or one-value) parameter, by index into its step's params (ref: int)
    SCALAR = "scalar"   # a number the kernel bakes in as a literal (ref: float)


@dataclass(frozen=True)
class Operand:
    """One operand of a PwNode: what kind of thing it reads (OperandKind) and which one (`ref`). Built through
    `of_value` / `of_param` / `of_scalar`, tested through `is_value` / `is_param` / `is_scalar`."""
    kind: OperandKind
    ref: object

    def __post_init__(self):
        if not isinstance(self.kind, OperandKind):   # a bare word would make every is_* test false
            raise TypeError(f"Operand kind must be an OperandKind, got {self.kind!r}")

    @classmethod
    def of_value(cls, name: str) -> Operand:
        return cls(OperandKind.VALUE, name)

    @classmethod
    def of_param(cls, index: int) -> Operand:
        return cls(OperandKind.PARAM, index)

    @classmethod
    def of_scalar(cls, number: float) -> Operand:
        return cls(OperandKind.SCALAR, number)

    @property
    def is_value(self) -> bool:
        return self.kind is OperandKind.VALUE

    @property
    def is_param(self) -> bool:
        return self.kind is OperandKind.PARAM

    @property
    def is_scalar(self) -> bool:
        return self.kind is OperandKind.SCALAR


@dataclass
class PwNode:
    """One element-wise op of a DAG: the fx node it computes (`name`), its op (a key of ops.OPS, the open table a new
    op joins as one row, so a name rather than an enum), its operands and its named constants (floats)."""
    name: str
    op: str
    operands: list
    consts: dict
    line: str = ""
    module: str = ""   # attribute path of the nn.Module it was called as (its constants are that module's)
    folded: str = ""   # a where's comparison node, computed inside this op (no value of its own)


def shift_params(nodes: list, by: int) -> None:
    """Every parameter operand of `nodes` moved `by` places in its step's params (one inserted or removed before)."""
    for node in nodes:
        node.operands = [Operand.of_param(o.ref + by) if o.is_param else o for o in node.operands]


def rename_value(nodes: list, old: str, new: str) -> None:
    """Every operand of `nodes` reading value `old` reads `new` instead."""
    for node in nodes:
        node.operands = [Operand.of_value(new) if o.is_value and o.ref == old else o for o in node.operands]


@dataclass
class Param:
    expr: str          # the Python expression ModelNew reads it by, e.g. "self.bias"
    shape: tuple
    label: str
    read_rank: int = 0  # 0: the reference broadcasts it as its own shape; r: as (1, C, 1, ...) of rank r (read
                        # through a view such as w.view(1, -1, 1, 1), or as PReLU's weight)
    value: str = ""     # a tensor another step computes (a time embedding through a Linear, a FiLM scale), by fx
                        # node name, that broadcasts per (sample, channel), per sample, per channel or as one value:
                        # `expr` is then empty (forward reads the step's variable; plan_values.py)
    along_channels: bool = True   # a `value`: it varies along the channels (else one value per sample)
    per_sample: bool = False      # a `value` that varies along the samples (or may: traced at a batch of one)


@dataclass
class LibraryStep:
    node: object                  # the fx node
    drop_bias: bool = False       # the bias is added by the region that consumes this output
    channels_last: bool = False   # a 2-D/3-D convolution fed a channels-last input (--conv fast): its output is too
    elementwise_fallback: str = ""   # why an element-wise op is left to PyTorch (empty: a library op)
    bias_to: str = ""             # with drop_bias: which kgen step takes the bias
    fused_into: int | None = None   # --conv fused: the region whose kernels run this conv (kgen's wgmma conv)


@dataclass
class RegionStep:
    index: int
    input: str                    # fx node name of x
    gn: str                       # fx node name of the GroupNorm
    gn_module: str | None         # attribute path of the nn.GroupNorm, or None for F.group_norm
    gn_args: dict                 # functional form: groups/weight/bias/eps as Python expressions
    affine: bool
    shape: list                   # x's shape
    prologue: list                # PwNode, topological
    epilogue: list                # PwNode, topological
    params: list                  # Param, every per-channel or scalar tensor the functors read
    result: str                   # the node whose value the reduction reads (epilogue result or the GN)
    reduce_kind: ReduceKind = ReduceKind.NONE   # the reduction the region ends in (NONE: its full-size output)
    reduce_op: ReduceOp = ReduceOp.SUM          # its operator (SUM where there is none)
    keepdim: bool = False         # the reduced dims are kept as size 1
    reduce_rank: int = 0          # the rank of the view the reduction reads where it flattens x (2 or 3), else 0
    window: tuple = ()            # WINDOW: the kernel size (== stride) per spatial dim, as planned
    window_expr: str = ""         # Python expression of the window at run time
    output: str = ""              # fx node name the step defines
    out_shape: list = field(default_factory=list)   # the output's shape
    notes: list = field(default_factory=list)       # what --explain says about the region (an op moved...)
    channels_last: bool = False   # its input comes channels-last (--conv fast): the groupnorm/nhwc/nhwc.cuh kernels
    conv_fused: str = ""          # --conv fused: the nn.ConvTranspose2d (attribute path) that kgen's wgmma conv runs
    conv_input: str = ""          # ... and the fx node name of that conv's input
    gn_params: list = field(default_factory=list)   # the GroupNorm's own weight and bias (affine), as the model
                                                    # names them (`gn.weight`): --explain lists them
    faithful: str = ""            # the op after it that rounds float32 to TF32 (plan_faithful.py): the region's forward
                                  # is then native_group_norm's bit for bit; "" where none reads it
    faithful_switch: tuple = ()   # the kinds of op reading it ("conv", "matmul") whose TF32 settings, read at each
                                  # call, decide whether it is faithful; (): every call
    out_dtype: tuple | None = None   # where a float32 cast lies inside it: its output's dtype (plan_dtype.py); None:
                                     # x's dtype promoted with its parameters', float32 under autocast

    @property
    def merged(self) -> bool:
        """Whether the region reads a tensor another step computes per sample (Param.per_sample): it then runs as the
        GroupNorm of x viewed (1, N * C, *spatial) in N * groups groups, where that tensor is one value per merged
        channel and the per-channel parameters repeat N times (its entry points merge: groupnorm/merged.cuh)."""
        return any(p.per_sample for p in self.params)


@dataclass
class PointwiseStep:
    index: int
    inputs: list                  # fx node names of the tensors the DAG reads, in the functor's order (1 to 4)
    input_shapes: list            # their shapes: each is `shape` or broadcasts to it
    nodes: list                   # PwNode, topological
    params: list                  # Param, per-channel (or one-value) parameters, read per channel
    output: str
    shape: list                   # the output's shape

    @property
    def broadcast(self) -> list:
        """The inputs read through broadcast strides (their shape is not the output's)."""
        return [name for name, shape in zip(self.inputs, self.input_shapes) if list(shape) != list(self.shape)]


@dataclass
class BatchNormStep:
    index: int
    input: str                    # fx node name of x
    bn: str                       # fx node name of the BatchNorm
    bn_module: str                # its attribute path
    bn_type: str                  # BatchNorm1d / 2d / 3d: the module's class name, as descriptions name it
    ranks: tuple                  # the input ranks that module accepts: (2, 3), (4,) or (5,)
    nodes: list                   # PwNode chain F after it (may be empty)
    params: list                  # Param, the per-channel tensors F reads
    shape: list                   # x's shape
    pool_op: ReduceOp | None = None   # MAX / MEAN: a window pooling after F (kernel == stride); None: no pooling
    window: tuple = ()            # the pooling's kernel size (== stride) per spatial dim, as planned
    window_expr: str = ""         # Python expression of the window at run time
    conv_bias: str = ""           # the peeled bias of the conv / linear before it (Python expression), or ""
    output: str = ""              # fx node name the step defines
    out_shape: list = field(default_factory=list)   # the output's shape

    @property
    def conv_bias_name(self) -> str:
        """The peeled bias as the model names it (`conv.bias`, `block[0].bias`: its expression below `self`);
        "" where there is none or the expression is not an attribute path of `self` (getattr(self, 'a-b'))."""
        return self.conv_bias[len("self."):] if self.conv_bias.startswith("self.") else ""


class ConvMode(str, Enum):
    """`--conv` of `kgen emit --ref`: how the library convolutions that feed a region run (plan_layout.py). A str
    Enum: a member equals the word the command line takes."""
    EXACT = "exact"   # every library op as the reference calls it
    FAST = "fast"     # 2-D/3-D convolutions feeding a region without a reduction run channels-last
    FUSED = "fused"   # a ConvTranspose2d feeding a region without a reduction is kgen's wgmma conv (TF32, sm_90a)

    @classmethod
    def of(cls, mode: ConvMode | str) -> ConvMode:
        """The mode a command-line word (or a member) names; ValueError for any other word."""
        if mode not in tuple(cls):
            raise ValueError(f"conv mode must be one of {', '.join(m.value for m in cls)}, got {mode!r}")
        return cls(mode)


@dataclass
class Plan:
    ref: Reference
    steps: list
    outputs: object               # the fx output node's argument
    conv: ConvMode = ConvMode.EXACT   # how the convolutions feeding a region run (plan_layout.py)
    notes: list = field(default_factory=list)   # what the user should know about the plan (emit prints them)
