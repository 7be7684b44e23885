"""The solutions committed under generated/: which spec and parameters each file is. A test re-emits
every one and compares bytes; `python -m kgen.golden` rewrites them after a template change."""
from __future__ import annotations

import sys
from pathlib import Path

from kgen.emit import emit

GENERATED = Path(__file__).resolve().parent.parent / "generated"

# file name -> (spec, parameters given on the command line)
GOLDEN: dict[str, tuple[str, dict]] = {
    "groupnorm.py": ("groupnorm", {}),
    "convt_gelu_groupnorm.py": ("convt-gelu-groupnorm", {}),
    "convt_gelu_groupnorm_tanh.py": ("convt-gelu-groupnorm", {"gelu": "tanh"}),
    "convt_gelu_groupnorm_fast.py": ("convt-gelu-groupnorm", {"conv": "fast"}),
    "convt_gelu_groupnorm_fused.py": ("convt-gelu-groupnorm", {"conv": "fused"}),
    "conv_gn_tanh_hardswish_res_lse.py": ("conv-gn-tanh-hardswish-res-lse", {}),
}


# file name -> a reference (relative to the repository), emitted with `kgen emit --ref` (one per kernel
# family of the --ref path: two-pass regions with window pooling; element-wise kernels (one with a parameter) and
# their C++ autograd nodes; a signed sum's node, which has no backward kernel; resident
# regions with a channel reduction and an op PyTorch keeps; the rows forward of Linear outputs with short slices;
# the batch norm step with its element-wise ops and pooling; a faithful region that only a Linear reads, switched at
# run time, with native_group_norm's statistics and the one-pass forward for the calls where it is not faithful (both
# statistics families in one translation unit); a region that reads tensors computed per sample, on samples merged
# into channels; a batch norm step beside the rows kernels of a Linear's region (their names share one translation
# unit); with GOLDEN_REF_OPTIONS, the channels-last region, the one-pass forward and a region as a Python autograd
# Function, its kernels' entry points exported, where the default makes each region one C++ autograd node)
GOLDEN_REF: dict[str, str] = {
    "ref_level2_85_conv2d_groupnorm_scale_maxpool_clamp.py":
        "kgen/specs/references/level2_85_conv2d_groupnorm_scale_maxpool_clamp.py",
    "ref_level2_75_gemm_groupnorm_min_biasadd.py": "kgen/specs/references/level2_75_gemm_groupnorm_min_biasadd.py",
    "ref_level2_37_matmul_swish_sum_groupnorm.py":
        "kgen/specs/references/level2_37_matmul_swish_sum_groupnorm.py",
    "ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py":
        "kgen/specs/references/level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py",
    "ref_level2_19_convtranspose2d_gelu_groupnorm_fast.py":
        "kgen/specs/references/level2_19_convtranspose2d_gelu_groupnorm.py",
    "ref_mlp_groupnorm_mid_onepass.py": "tests/corpus/mlp_groupnorm_mid.py",
    "ref_level2_19_convtranspose2d_gelu_groupnorm_onepass.py":
        "kgen/specs/references/level2_19_convtranspose2d_gelu_groupnorm.py",
    "ref_level2_75_gemm_groupnorm_min_biasadd_python.py":
        "kgen/specs/references/level2_75_gemm_groupnorm_min_biasadd.py",
    "ref_audio_film_conv1d_merged.py": "tests/ref/unseen/audio_film_conv1d.py",
    "ref_linear_bn1d_noaffine_relu_gn.py": "tests/ref/references/linear_bn1d_noaffine_relu_gn.py",
    "ref_conv2d_gn_input_residual_gate.py": "tests/ref/references/conv2d_gn_input_residual_gate.py",
    "ref_poolformer_block_tiny.py": "tests/corpus/poolformer_block_tiny.py",
}
# file name -> options of `kgen emit --ref` beyond the defaults
GOLDEN_REF_OPTIONS: dict[str, dict] = {
    "ref_level2_19_convtranspose2d_gelu_groupnorm_fast.py": {"conv": "fast"},
    "ref_level2_19_convtranspose2d_gelu_groupnorm_onepass.py": {"forward": "one-pass"},
    "ref_mlp_groupnorm_mid_onepass.py": {"forward": "one-pass"},
    "ref_level2_75_gemm_groupnorm_min_biasadd_python.py": {"autograd": "python"},
}


def render_all() -> dict[str, str]:
    from kgen.ref.emit import emit_reference

    texts = {name: emit(spec, dict(params), output=GENERATED / name)[0] for name, (spec, params) in GOLDEN.items()}
    root = GENERATED.parent
    for name, reference in GOLDEN_REF.items():
        # what `kgen emit --ref REFERENCE -o generated/NAME` writes from the repository's root, on any machine: the
        # comments name the reference as typed there, the header relative to generated/
        texts[name] = emit_reference(str(root / reference), display=reference, output=GENERATED / name,
                                     **GOLDEN_REF_OPTIONS.get(name, {}))[0]
    return texts


def main() -> int:
    GENERATED.mkdir(exist_ok=True)
    for name, text in render_all().items():
        (GENERATED / name).write_text(text)
        print(f"wrote generated/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
