#!/usr/bin/env bash
# Session 18's device calls, by name (the record of what ran; logs under benchmarks/h100/s18/).
#   run1: the window backward (gn_region_window_backward.cuh): the two-pass and cluster GPU tests; A/B at L2-85
#         of the backward's kernels: as planned (the extremes-only first pass, the row sweeps), "dense" (the row
#         sweep for the first pass too), "sweeps" (the element sweeps of gn_region_twopass_backward.cuh, as before).
#   run2: L2-85 and L2-11 checked (validate + KernelBench), the own references with pooling, L2-85's rates and
#         timings.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kgen-out}
case "${1:-}" in
  run1)
    dense='dense:  constexpr bool kSparse = window_sums_sparse<Epi, O>();=>  constexpr bool kSparse = false;'
    sweeps='sweeps:  if constexpr (R == ReduceKind::kWindow) {=>  if constexpr (R == ReduceKind::kWindow && false) {'
    S16_AB=85 S16_KERNEL='window_|backward_sweep|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$dense"$'\n'"$sweeps" bash benchmarks/device_run.sh s16 ;;
  run2)
    S14_FAMILY=85,11 S14_CHECK_BUDGET=420 S14_K=no_such_test S14_RESIDENT_K=no_such_test S14_REF_K="pool" \
      S14_RATES=85 S14_BENCH=85 S14_BUDGET=150 bash benchmarks/device_run.sh s14 ;;
  *) echo "usage: $0 run1|run2" >&2; exit 2 ;;
esac
