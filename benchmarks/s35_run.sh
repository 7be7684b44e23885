#!/usr/bin/env bash
# Session 35's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s35/).
#   run1: issue 13, v4.1: the bulk input path's transposing pass rewritten. Session 34's ncu: ~930 warp instructions
#         a chunk on each producer warp (the TF32 rounding 4 integer instructions a value, the per-lane rotation's
#         FSELs, a division a quad, range guards), ~3.5 us a chunk against the wgmma's ~2.1. Now (SASS counted here):
#         tf32_nearest is PTX's cvt.rn.tf32.f32 on sm_90 (one F2FP.TF32.F32.PACK_B, if the GPU test shows it keeps the
#         same TF32 value as the integer form); the pass goes a position at a time, 4 in flight a thread: 4 loads of 4
#         bytes (conflict-free: a warp reads 32 consecutive floats of a row), 4 F2FP, one 16-byte store (a warp's 32
#         units consecutive: conflict-free, no rotation), the raw-slot offset and frame column stepped by constants
#         (no division past a tile's first position): 86 instructions for 4 positions, ~21.5 a position and half
#         chunk, ~350 a chunk a warp at L2-19 (from ~930). Also the copies' rounding pass (the training conv) takes
#         the F2FP. And the bulk path now takes any plane of whole 16-byte units (H W % 4 == 0, not W % 4 == 0).
#         Predicted at L2-19: the bulk main loop 3.49 -> ~2.3-2.5 ms (toward "no transposing pass", 2.2), bulk
#         conv + moments 4.11 -> ~3.3-3.5; the copies' main loop 2.94-3.00 -> ~2.8; the one launch 5.08 -> ~4.6-4.7;
#         validate's forward 5.07 -> ~4.6. If the bulk conv + moments then beats the copies', the training conv
#         takes it too (forward+backward ~0.3-0.5 ms less).
set -u
S=s35
source benchmarks/convt_fused_helpers.sh
harness_tests() {  # NAME [-x]: the harness's GPU tests
  timeout -k 5 220 python3 -m pytest -q ${2:-} -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
    | tee "$OUT/$S/$1_pytest_wgmma.log" | tail -4
}
bench_rows() {  # NAME SECONDS WORD...: the harness's bench rows whose names hold one of the words
  local name=$1 seconds=$2; shift 2
  timeout -k 5 "$seconds" python3 tests/gpu/test_convt_wgmma.py --bench "$@" 2>&1 | tee "$OUT/$S/${name}_bench.log" \
    | grep -E " ms|max"
}
BULK_CASES="(conv_and_statistics and gelu_erf_bulk and (2x64x62x64 or 1x33x29x32)) or (one_launch_forward_matches and 2x48x7x8 and gelu_erf- and not registers and not copies)"
case "${1:-}" in
  run1)
    build_both run1
    timeout -k 5 60 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_convt_wgmma.py -k tf32_rounding 2>&1 \
      | tee "$OUT/$S/run1_tf32.log" | grep -E "clears|passed|failed|differ"
    harness_tests run1
    bench_rows run1 170 "moments (again)" "bulk input" "its main loop alone (timing" \
      "one launch (conv + GELU + GroupNorm), the default" "one launch, the conv" "grad_z rounded" "x rounded"
    validate_fused run1
    kb_eval_fused run1
    ;;
  *) echo "usage: $0 run1"; exit 2 ;;
esac
