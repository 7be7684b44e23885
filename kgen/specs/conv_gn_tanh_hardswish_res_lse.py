"""L2-92: Conv2d -> GroupNorm -> Tanh -> HardSwish -> residual add -> LogSumExp over channels, trainable."""
from kgen.specs.base import BLOCK_SIZE, Spec, groups_param

SPEC = Spec(
    name="conv-gn-tanh-hardswish-res-lse",
    title="KernelBench L2-92: Conv2d -> GroupNorm -> Tanh -> HardSwish -> residual add -> LogSumExp",
    reference_file="level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp.py",
    init_args={"in_channels": 8, "out_channels": 64, "kernel_size": 3, "groups": 16},
    input_shapes=((128, 8, 128, 128),),
    channels_arg="out_channels",
    groups_arg="groups",
    params=(groups_param(16), BLOCK_SIZE),
)
