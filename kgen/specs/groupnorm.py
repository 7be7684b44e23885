"""L1-35: GroupNorm alone."""
from kgen.specs.base import Spec, block_size_param, forward_param, groups_param

SPEC = Spec(
    name="groupnorm",
    title="KernelBench L1-35: GroupNorm",
    reference_file="level1_35_groupnorm.py",
    init_args={"num_features": 64, "num_groups": 8},
    input_shapes=((112, 64, 512, 512),),
    channels_arg="num_features",
    groups_arg="num_groups",
    # One pass by default: 7.20 ms against 7.55 for two passes (H100); on an H200 the two are level (5.64 and 5.63 ms,
    # benchmarks/results/h200/presets/README.md).
    params=(groups_param(8), block_size_param(256), forward_param("one-pass")),
)
