#!/usr/bin/env bash
# Session 18's device calls, by name (the record of what ran; logs under benchmarks/h100/s18/).
#   run1: the window backward (groupnorm/twopass/window_backward.cuh): the two-pass and cluster GPU tests; A/B at L2-85
#         of the backward's kernels: as planned (the extremes-only first pass, the row sweeps), "dense" (the row
#         sweep for the first pass too), "sweeps" (the element sweeps of groupnorm/twopass/backward.cuh, as before).
#   run2: the row sweeps 2 or 4 values at a time (8- or 16-byte accesses) with 16 values in flight, capped at 16 warps:
#         the two-pass tests of windows; A/B at L2-85: as planned, "scalar" (one value at a time, 8 in flight),
#         "warps24" (capped at 24 warps, as the other sweeps), "dense" (the row sweep for the first pass too).
#   run2b: run2's configurations were slower (517 us against run1's 438): back to 4 packs in flight at 24 warps;
#         A/B: as planned (2 values an access at L2-85), "scalar", "in_flight_8", "warps32"; ncu on the window kernels.
#   run3: one value a thread at a time again, its window's dout and aux loaded with x (one latency a round), full
#         rounds without bounds checks: the window tests; A/B at L2-85: as planned (4 values in flight),
#         "in_flight_8", "in_flight_2", "dense", "sweeps" (the element sweeps, as before this session); ncu.
#   run4: run3's configurations all near 600 us, the second sweep at 70 % of DRAM: the row sweeps' values in a
#         frame aligned to 128-byte lines (a plane's rows start anywhere: L2-85's 126 x 126 planes are 16 bytes off
#         per plane). The window tests; A/B: as planned, "unaligned" (run3's mapping); ncu.
#   run5: L2-85 checked (validate + KernelBench), the own references with pooling, L2-85's rates and timings;
#         A/B at L2-85 with 2 x 2 windows: as planned (the extremes-only first pass) against "dense".
#   run6: what bounds the second pass: A/B at L2-85, as planned; "rows_x4" (blocks of 4x the rows: fewer block starts
#         and ends); "no_gathers" (a diagnostic, wrong gradients: every value's dout and aux constants instead of its
#         window's, so no gathers).
#   run7: compute-sanitizer memcheck and racecheck on the window kernels (the two-pass tests of windows, sweeps path).
#   run8: the row sweep stages its block's run of dout and aux in shared memory (run6: 36 us of gathers): the window
#         tests; A/B at L2-85: as planned, "gathers" (run7's loads from L1/L2).
#   run9: the review's mends (one scratch helper for both two-pass backwards, window_dv shared with the pipelined
#         kernel's window path, a block-plane helper): every two-pass and cluster test, L2-85 and L2-92 checked.
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
    dense='dense:  constexpr bool kSparse = window_sums_sparse<Epi, O>();=>  constexpr bool kSparse = false;'
    scalar='scalar:  const int values = divides(4) ? 4 : (divides(2) ? 2 : 1);=>  const int values = 1;'
    warps24='warps24:constexpr int kWindowSweepWarps = 16;=>constexpr int kWindowSweepWarps = 24;'
    S16_AB=85 S16_KERNEL='window_sweep|window_argmax|backward_sweep|backward_group|param_grad|param_sums' \
      S16_TESTS_K=window S16_VARIANTS_85="$scalar"$'\n'"$warps24"$'\n'"$dense" bash benchmarks/device_run.sh s16 ;;
  run2b)
    scalar='scalar:  const int values = divides(4) ? 4 : (divides(2) ? 2 : 1);=>  const int values = 1;'
    deep='in_flight_8:constexpr int kWindowPacksInFlight = 4;=>constexpr int kWindowPacksInFlight = 8;'
    warps32='warps32:constexpr int kWindowSweepWarps = kSweepBackwardWarps;=>constexpr int kWindowSweepWarps = 32;'
    S16_AB=85 S16_TESTS= S16_KERNEL='window_sweep|window_argmax|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$scalar"$'\n'"$deep"$'\n'"$warps32" bash benchmarks/device_run.sh s16
    NCU_FAMILY=85 NCU_KERNELS='window_sweep|window_argmax' NCU_SECTIONS='--section MemoryWorkloadAnalysis' \
      bash benchmarks/device_run.sh ncu12 ;;
  run3)
    sweeps='sweeps:  if constexpr (R == ReduceKind::kWindow) {=>  if constexpr (R == ReduceKind::kWindow && false) {'
    in8='in_flight_8:constexpr int kWindowValuesInFlight = 4;=>constexpr int kWindowValuesInFlight = 8;'
    in2='in_flight_2:constexpr int kWindowValuesInFlight = 4;=>constexpr int kWindowValuesInFlight = 2;'
    dense='dense:  constexpr bool kSparse = window_sums_sparse<Epi, O>();=>  constexpr bool kSparse = false;'
    S16_AB=85 S16_TESTS_K=window S16_KERNEL='window_sweep|window_argmax|backward_sweep|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$in8"$'\n'"$in2"$'\n'"$dense"$'\n'"$sweeps" bash benchmarks/device_run.sh s16
    NCU_FAMILY=85 NCU_KERNELS='window_sweep' NCU_SECTIONS='--section MemoryWorkloadAnalysis' \
      bash benchmarks/device_run.sh ncu12 ;;
  run4)
    unaligned='unaligned:  const int lead = static_cast<int>(first & 31);=>  const int lead = 0;'
    S16_AB=85 S16_TESTS_K=window S16_KERNEL='window_sweep|window_argmax|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$unaligned" bash benchmarks/device_run.sh s16
    NCU_FAMILY=85 NCU_KERNELS='window_sweep' bash benchmarks/device_run.sh ncu12 ;;
  run5)
    S14_FAMILY=85 S14_CHECK_BUDGET=300 S14_K=no_such_test S14_RESIDENT_K=no_such_test S14_REF_K="pool" \
      S14_RATES=85 S14_BENCH=85 S14_BUDGET=150 bash benchmarks/device_run.sh s14
    # L2-85 with 2 x 2 windows: the extremes-only first pass against the row sweep where a window is 16 bytes
    V=.build/s18; mkdir -p "$V"
    sed 's/^maxpool_kernel_size = 4/maxpool_kernel_size = 2/' .kb/problems/level2_85_*.py > "$V/l2_85_pool2.py"
    python3 -m kgen.cli emit --ref "$V/l2_85_pool2.py" -o "$V/p85_pool2.py"
    dense='dense:  constexpr bool kSparse = window_sums_sparse<Epi, O>();=>  constexpr bool kSparse = false;'
    timeout -k 5 200 python3 benchmarks/kernel_variants.py "$V/p85_pool2.py" --backward \
      --kernel 'window_sweep|window_argmax|backward_group|param_grad|param_sums' --rounds 3 --calls 10 \
      --json "$OUT/s18/run5_ab_85_pool2.json" --variant "$dense" > "$OUT/s18/run5_ab_85_pool2.log" 2>&1
    grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$OUT/s18/run5_ab_85_pool2.log" | tail -n 4 | cut -c1-200 ;;
  run6)
    rows4='rows_x4:  const int64_t target = int64_t(kBlock) * 4 * kUnroll * 4;=>  const int64_t target = int64_t(kBlock) * 4 * kUnroll * 16;'
    nogather='no_gathers:        g[u] = __ldg(dout + o);=>        g[u] = 1.f;|||        if constexpr (kHasAux<O>) a[u] = __ldg(aux + o);=>        if constexpr (kHasAux<O>) a[u] = 0;'
    S16_AB=85 S16_TESTS= S16_KERNEL='window_sweep|window_argmax|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$rows4"$'\n'"$nogather" bash benchmarks/device_run.sh s16 ;;
  run7)
    # compute-sanitizer on the window kernels: the two-pass tests of windows on the window kernels ("sweeps" path)
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k "window and sweeps and 13x29" \
      > /dev/null 2>&1   # builds the test extension outside the sanitizer
    for tool in memcheck racecheck; do
      timeout -k 5 240 "$CS" --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
        tests/gpu/test_gn_region_twopass.py -k "window and sweeps" > "$OUT/s18/run7_$tool.log" 2>&1
      echo "$tool exit code: $?" | tee -a "$OUT/s18/run7_$tool.log"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/s18/run7_$tool.log" | tail -3
    done ;;
  run8)
    gathers='gathers:  const bool staged = run > 0 && run <= kWindowStaged;=>  const bool staged = false;'
    S16_AB=85 S16_TESTS_K=window S16_KERNEL='window_sweep|window_argmax|backward_group|param_grad|param_sums' \
      S16_VARIANTS_85="$gathers" bash benchmarks/device_run.sh s16 ;;
  run9)
    S14_FAMILY=85,92 S14_CHECK_BUDGET=360 S14_RESIDENT_K=no_such_test S14_TIMING= bash benchmarks/device_run.sh s14 ;;
  *) echo "usage: $0 run1|run2|run2b|run3|run4|run5|run6|run7|run8|run9" >&2; exit 2 ;;
esac
