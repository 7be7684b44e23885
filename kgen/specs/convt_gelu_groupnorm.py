"""L2-19: ConvTranspose2d -> GELU -> GroupNorm, trainable."""
from kgen.specs.base import BLOCK_SIZE, FORWARD, REFERENCES, Param, Spec, groups_param

TANH_REFERENCE = "level2_19_convtranspose2d_gelu_tanh_groupnorm.py"


class ConvTransposeGeluGroupNorm(Spec):
    """--gelu tanh plans the bundled tanh reference: a deliberate approximation of L2-19's exact GELU."""

    def matching_reference_path(self, params):
        return REFERENCES / TANH_REFERENCE if params["gelu"] == "tanh" else self.reference_path(params)

    def notes(self, params):
        if params["gelu"] != "tanh":
            return []
        return ["--gelu tanh computes F.gelu(approximate='tanh'), NOT the reference's exact GELU: outputs differ by up "
                f"to ~1e-3. The matching reference is kgen/specs/references/{TANH_REFERENCE}."]


SPEC = ConvTransposeGeluGroupNorm(
    name="convt-gelu-groupnorm",
    title="KernelBench L2-19: ConvTranspose2d -> GELU -> GroupNorm",
    reference_file="level2_19_convtranspose2d_gelu_groupnorm.py",
    init_args={"in_channels": 64, "out_channels": 64, "kernel_size": 3, "stride": 1, "groups": 8, "num_groups": 8},
    input_shapes=((128, 64, 256, 256),),
    channels_arg="out_channels",
    groups_arg="num_groups",
    params=(
        groups_param(8),
        BLOCK_SIZE,
        Param("gelu", str, "erf", "GELU variant: erf (exact, the reference's) or tanh (approximation)",
              choices=("erf", "tanh")),
        Param("conv", str, "exact", "exact: every convolution as the reference calls it (bit-identical output); "
              "fast: every 2-D or 3-D convolution a region reads runs channels-last (cuDNN's NHWC kernels; TF32 "
              "rounding may differ); fused: a ConvTranspose2d a region reads is kgen's own wgmma conv (sm_90a, TF32) "
              "with the GroupNorm moments in its epilogue",
              choices=("exact", "fast", "fused")),
        FORWARD,
    ),
)
