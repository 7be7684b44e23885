#!/usr/bin/env bash
# Session 19's device calls, by name (the record of what ran; logs under benchmarks/h100/s19/).
#   run1: a max pooling saves each window's winning x in the forward, so the backward's first pass reads pooled-size
#         streams only: the GN region's window max (saves_extreme_x: aux (2, *out)) and the batch norm's max pooling
#         (bn_train.cuh: `extremes`; its apply pass finds the winner by bits instead of four F a window). The window
#         and error tests of the two-pass region, every batch-norm test (one new: exact ties); A/B of forward and
#         backward kernels at L2-85 (4x4 and 2x2 windows) and L2-11 against the files emitted at b76aaf7 (.build/s19,
#         carried).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT/s19"
K='window_|stats_|backward_group|param_grad|param_sums|pointwise|bn_|region_'
case "${1:-}" in
  run1)
    S16_AB="85 11" S16_KERNEL="$K" S16_TESTS_TIMEOUT=420 \
      S16_TEST_FILES="tests/gpu/test_gn_region_twopass.py tests/gpu/test_bn_train.py" \
      S16_TESTS_K="window or clear_errors or test_bn_train" \
      S16_VARIANTS_85='@before=.build/s19/p85_before.py' S16_VARIANTS_11='@before=.build/s19/p11_before.py' \
      bash benchmarks/device_run.sh s16
    python3 -m kgen.cli emit --ref .build/s19/l2_85_pool2.py -o .build/s19/p85_pool2.py
    timeout -k 5 150 python3 benchmarks/kernel_variants.py .build/s19/p85_pool2.py --backward --kernel "$K" \
      --rounds 3 --calls 10 --json "$OUT/s19/run1_ab_85_pool2.json" --file before=.build/s19/p85_pool2_before.py \
      > "$OUT/s19/run1_ab_85_pool2.log" 2>&1
    grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$OUT/s19/run1_ab_85_pool2.log" | tail -n 4 | cut -c1-400
    mv "$OUT/s16_logs.tar.gz" "$OUT/s19/run1_logs.tar.gz" ;;
  *) echo "usage: $0 run1" >&2; exit 2 ;;
esac
