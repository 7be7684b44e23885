#!/usr/bin/env bash
# Session 31's device calls, by name (the record of what ran; logs under benchmarks/h100/s31/).
#   run1: issue 12, references kgen has not seen. Probing spellings found planner gaps, each fixed on the CPU side:
#         nn.PReLU / F.prelu (a (C,) weight on dim 1) and softshrink / hardshrink / torch.special.expit made `emit`
#         exit 2; nn.Identity, dropout with p = 0, .contiguous(), .float() on float32, .clone() split a region at a
#         library step that does nothing; an unused `indices` of `values, indices = torch.max(x, 1)` kept the max
#         from fusing; (C,) parameters read through views (w.view(1, -1, 1, 1), w[None, :, None, None],
#         w.unsqueeze(-1).unsqueeze(-1)) ran in an extra element-wise kernel; torch.std / var / norm / F.glu made
#         `emit` exit 2 (now PyTorch calls). Four new own references for these, then tests/gpu/test_ref_emitted.py
#         on them (kgen validate: outputs, every gradient, float64, determinism; PReLU at a second shape). Prebuilt
#         in parallel with ten probe references (tests/ref/probe) that run2 validates.
#   run2: tests/gpu/test_ref_emitted.py on the ten probe references run1 prebuilt: library ops and element-wise
#         kernels around regions (a residual of the conv's input, a second forward input, a Frobenius norm, the
#         GroupNorm's own weight read again, two outputs), groups = channels, a strided ConvTranspose3d + MaxPool3d.
#   run3: emitted files this session's planner changes alter: the probe dropout_contiguous_flatten (nn.Dropout(0.0)
#         no longer splits its region: the relu joins the epilogue) and linear_view_gn_functional_amax (its header's
#         plan only), and a new probe whose get_inputs() returns a Python number: kgen validate on each. L2-83's
#         solution prebuilt for run4.
#   run4: L2-83 is the one family row where torch.compile's forward is faster (2.475 against kgen's 2.507 ms,
#         session 16): it fuses the dropout into its pointwise kernel. Expected: Inductor draws its own random
#         numbers (fallback_random off by default), so its output is not the reference's (the masks differ), and
#         with fallback_random on (the reference's masks) it runs PyTorch's dropout kernel as kgen does and is no
#         faster than kgen. benchmarks/dropout_rng_probe.py: the four outputs under one seed, then the four timed.
#   run5: run4: all four outputs equal, because L2-83's output is identically zero (min(x, 0), then a clamp to
#         [0, 1]): any dropout mask gives it. torch.compile's forward 2.32 ms, kgen 2.51, with fallback_random 2.83.
#         Now the same probe on a variant whose output is not constant (the torch.min line removed, clamp to [-1, 1]):
#         expected, compile's default output differs from eager's at ~30 % of the elements (the masks of p = 0.2
#         disagree), fallback_random's and kgen's equal it.
#   run6: a realistic model end to end: a diffusion-UNet residual block (two regions, a time embedding from a second
#         input broadcast per (sample, channel), Dropout(0.0), the block's residual), emitted, prebuilt, validated.
#   run7: run6 passed. The same file timed (kgen validate --bench: kgen / eager / torch.compile in one process).
#         Expected: kgen's two regions beat eager's GroupNorm + SiLU pairs, but the time embedding's add and the
#         residual run as separate element-wise kernels (the regions read one tensor stream and per-channel
#         parameters only), where torch.compile fuses them: kgen behind torch.compile at these small shapes.
#   run8: run7: PASS, but kgen's forward 0.778 ms against eager's 0.422 and torch.compile's 0.370, with the same
#         GPU time (0.045 ms, 10 launches against eager's 16): kgen's host side costs ~70 us more per step. Where:
#         benchmarks/host_overhead_probe.py, wall time per forward and cProfile of 500 forwards (no_grad).
#   run9: run8: torch.broadcast_shapes took ~90 us of host time a call (it runs through symbolic-shape guards),
#         three calls a forward in the element-wise steps' autograd Functions: ~0.26 ms of the UNet block's
#         0.82-0.90 ms forward. Replaced by a plain helper; it also reads a parameter as the reference does (a
#         (C,) parameter read through w.view(1, -1, 1, 1), or PReLU's weight, broadcast per channel, where
#         broadcast_shapes of its own (C,) shape failed against planes not C wide: a bug since this session's
#         parameter views). The CUDA is unchanged, so the builds are reused. Checks: kgen validate on L2-75 (an
#         element-wise step whose (1, C, 1, 1) parameter raises the rank), tests/gpu/test_ref_emitted.py on five
#         references with element-wise steps, and the UNet block timed again. Expected: its forward ~0.55-0.6 ms.
set -u
S=s31
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT/$S" /tmp/$S/own
NEW="conv2d_prelu_gn_prelu_channels gn_shrinks_expit_same_value_ops gn_max_unpacked_std_library conv2d_gn_param_views"
PROBES="conv1x1_nobias_gn_groups_eq_channels_gelu_tanh convt3d_s2_maxpool3d_gn_noaffine_sigmoid convt2d_s2_batch1_gn5_mish
 residual_block_input_plus_gn gn_minus_channel_mean gn_manual_logsumexp_channels gn_frobenius_normalised
 gn_times_input_scale_plus_x gn_two_outputs_tuple gn_weight_read_again"
case "${1:-}" in
  run1)
    for n in $NEW; do python3 -m kgen.cli emit --ref tests/ref/references/$n.py -o /tmp/$S/own/${n}_solution.py; done
    for n in $PROBES; do python3 -m kgen.cli emit --ref tests/ref/probe/$n.py -o /tmp/$S/own/${n}_solution.py; done
    timeout -k 5 380 python3 benchmarks/prebuild.py -j 16 /tmp/$S/own/*.py 2>&1 | tee "$OUT/$S/run1_prebuild.log" | tail -3
    K=$(echo $NEW | sed 's/ / or /g')
    timeout -k 5 180 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$K" 2>&1 \
      | tee "$OUT/$S/run1_pytest_own.log" | tail -4
    ;;
  run3)
    CHANGED="dropout_contiguous_flatten linear_view_gn_functional_amax gn_times_forward_number"
    python3 -m kgen.cli emit --ref tests/ref/probe/dropout_contiguous_flatten.py -o /tmp/$S/own/a_solution.py
    python3 -m kgen.cli emit --ref tests/ref/references/linear_view_gn_functional_amax.py -o /tmp/$S/own/b_solution.py
    python3 -m kgen.cli emit --ref tests/ref/probe/gn_times_forward_number.py -o /tmp/$S/own/c_solution.py
    python3 -m kgen.cli emit --ref .kb/problems/level2_83_*.py -o /tmp/$S/p83.py
    timeout -k 5 240 python3 benchmarks/prebuild.py -j 4 /tmp/$S/own/[abc]_solution.py /tmp/$S/p83.py 2>&1 \
      | tee "$OUT/$S/run3_prebuild.log" | tail -1
    K=$(echo $CHANGED | sed 's/ / or /g')
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$K" 2>&1 \
      | tee "$OUT/$S/run3_pytest.log" | tail -3
    ;;
  run4)
    timeout -k 5 500 python3 benchmarks/dropout_rng_probe.py /tmp/$S/p83.py .kb/problems/level2_83_*.py \
      --json "$OUT/$S/run4_dropout_rng.json" 2>&1 | grep -v Warning | tee "$OUT/$S/run4_dropout_rng.log" | tail -24
    ;;
  run5)
    V=/tmp/$S/l2_83_variant.py
    sed -e '/torch.min(x, torch.tensor/d' -e 's/^min_value = 0.0/min_value = -1.0/' .kb/problems/level2_83_*.py > $V
    grep -n "min_value\|clamp" $V | head -4
    python3 -m kgen.cli emit --ref $V -o /tmp/$S/p83v.py
    timeout -k 5 200 python3 benchmarks/prebuild.py -j 2 /tmp/$S/p83v.py 2>&1 | tail -1
    timeout -k 5 350 python3 benchmarks/dropout_rng_probe.py /tmp/$S/p83v.py $V \
      --json "$OUT/$S/run5_dropout_rng_variant.json" 2>&1 | grep -v Warning | tee "$OUT/$S/run5_dropout_rng_variant.log" | tail -24
    ;;
  run6)
    python3 -m kgen.cli emit --ref tests/ref/probe/unet_resblock_time_embedding.py -o /tmp/$S/own/u_solution.py
    timeout -k 5 200 python3 benchmarks/prebuild.py -j 2 /tmp/$S/own/u_solution.py 2>&1 | tail -1
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k unet_resblock 2>&1 \
      | tee "$OUT/$S/run6_pytest.log" | tail -3
    ;;
  run7)
    timeout -k 5 400 python3 -m kgen.cli validate /tmp/$S/own/u_solution.py --bench --trials 2 2>&1 \
      | tee "$OUT/$S/run7_validate_bench.log" | tail -20
    ;;
  run8)
    timeout -k 5 300 python3 benchmarks/host_overhead_probe.py /tmp/$S/own/u_solution.py \
      tests/ref/probe/unet_resblock_time_embedding.py 2>&1 | grep -v Warning | tee "$OUT/$S/run8_host_overhead.log" | head -60
    ;;
  run9)
    python3 -m kgen.cli emit --ref .kb/problems/level2_75_*.py -o /tmp/$S/p75.py
    python3 -m kgen.cli emit --ref tests/ref/probe/unet_resblock_time_embedding.py -o /tmp/$S/own/u_solution.py
    PW="gn_frobenius_normalised linear_gn_max_broadcast_transpose scalar_output_pointwise two_inputs conv2d_gn_input_residual_gate"
    for n in $PW; do f=$(ls tests/ref/references/$n.py tests/ref/probe/$n.py 2>/dev/null | head -1)
      python3 -m kgen.cli emit --ref $f -o /tmp/$S/own/pw_${n}_solution.py; done
    timeout -k 5 200 python3 benchmarks/prebuild.py -j 8 /tmp/$S/p75.py /tmp/$S/own/u_solution.py /tmp/$S/own/pw_*.py 2>&1 | tail -1
    timeout -k 5 120 python3 -m kgen.cli validate /tmp/$S/p75.py --trials 2 2>&1 | tee "$OUT/$S/run9_validate_l2_75.log" | tail -3
    timeout -k 5 120 python3 -m kgen.cli validate /tmp/$S/own/u_solution.py --bench --trials 2 2>&1 \
      | tee "$OUT/$S/run9_validate_bench_unet.log" | grep -E "forward|RESULT"
    K=$(echo $PW | sed 's/ / or /g')
    timeout -k 5 240 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$K" 2>&1 \
      | tee "$OUT/$S/run9_pytest_pointwise.log" | tail -3
    ;;
  run2)
    K=$(echo $PROBES | sed 's/ / or /g')
    timeout -k 5 500 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$K" 2>&1 \
      | tee "$OUT/$S/run2_pytest_probes.log" | tail -6
    ;;
esac
