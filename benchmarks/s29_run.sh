#!/usr/bin/env bash
# Session 29's device calls, by name (the record of what ran; logs under benchmarks/h100/s29/).
#   run1: issue 12's pipelined GroupNorm backward (groupnorm/twopass/backward_pipeline.cuh), below 80 % of a same-size copy at
#         L2-19 (69 %), L2-60 (70), L2-83 (75), L2-21 (79), L1-35 (74). Where does its time go? A/B in one process
#         (kernel_variants --backward, 3 rounds): `trivial` = the region's element-wise ops removed (z = x, dy = dv,
#         dx = dz: timing only), the kernel's skeleton at the problem's shape and streams. If trivial is near the copy
#         rate, the ops' instructions bound it (session 16's ncu: L2-19 71 % of issue slots); if not, the skeleton
#         (latency, hand-over). `prefetch` = each block, as it starts an item, asks L2 for the pass A item one round of
#         tickets ahead (bulk prefetch, sm_90): pass A's loads then wait on L2, not DRAM. Predicted: 5-10 % where
#         latency bounds it (L2-83, L2-21), nothing or worse at L1-35 (L2 capacity). `fastexp` (L2-19): GELU's
#         derivative's exp as __expf (5 of ~55 instructions a value in pass B).
#   run2: run1: `trivial` (no element-wise ops) runs at 83-85 % of the copy rate at every problem (L2-19 2567 against
#         3125 us, L2-60 1219/1441, L2-83 555/601, L2-21 1258/1336): the ops' arithmetic, not the skeleton, takes these
#         below 80 %. `prefetch` bought 0.5-2.3 % there and cost L1-35 15 % (10113 -> 11663: L2 capacity): removed.
#         `fastexp` 1.6 % at L2-19: not taken (GELU's derivative stays PyTorch's expf). Now: (a) L2-85 with its clamp
#         moved before the max pooling (plan_reductions.fold_after_extreme: the clamp commutes with a max): validate,
#         KernelBench, kernel rates, and the kgen kernels of forward+backward calls against the unfolded file (kept in
#         .build/s29, carried). Predicted: the clamp's kernels go (backward 33 of 513 us; forward a similar share),
#         backward ~480 us, ~84 % of a copy. (b) the two new own references (a max pooling with hardtanh and relu
#         after it; min over channels then clamp): emit + kgen validate. (c) occupancy: the pipelined backward at 32
#         warps an SM (64 registers, where ptxas spills 40-56 bytes) against 24 (80): more warps to overlap the ops'
#         arithmetic with memory, if the spills cost less.
#   run3: run2: L2-85 folded PASS (validate, KernelBench 5/5: 1.20 ms against 2.64), the own references 2 passed; the
#         kgen kernels of forward+backward calls 965 against 992 us unfolded (the clamp's kernels 54 us gone, but the
#         window sweep 434 -> 454 and the forward's window kernel 270 -> 279: the clamp at every value). 32 warps: 7-25 %
#         slower everywhere (spills): not taken. Now the window backward's second pass skips the epilogue: where the
#         epilogue adds no direct gradient (kDirectGrads false), the first pass (extremes only) writes each window's
#         dy and the second reads it in dout's place (window_dy_from_extremes). Predicted: the sweep's ~12 instructions
#         a value of y, clamp, its derivative and the scale go: 454 -> ~420 us, L2-85's backward ~80 % of a copy.
#         Checks: the two-pass harness's window tests (two new variants: a clamp epilogue over windows max and min),
#         validate and KernelBench at L2-85, its kernel rates, A/B against run2's folded file and the unfolded one.
#   run4: run3: the dy path takes the sweep back to the unfolded one's time (436 us; the folded 455, unfolded 435) for
#         5 us more in the first pass (45.8: it writes dy); the kgen kernels of forward+backward calls 954 against 967
#         folded and 994 unfolded (-4.0 %); validate PASS, KernelBench 5/5 (1.16 ms against 2.55); the harness's window
#         tests 130 passed; rates: forward 81 %, backward 78 % (0.490 ms for 1.07 GB). Now: the two new own references
#         end to end again (the relu / hardtanh one takes the dy path), and compute-sanitizer memcheck and racecheck on
#         the harness's clamp-epilogue window tests.
set -uo pipefail
S=s29
mkdir -p "$OUT/$S"
case "${1:-}" in
  run1)
    triv='const float z = ch.pro.value(xv);=>const float z = xv;|||return ch.pro.backward(xv, dz, dparam) + dx_direct;=>return dz + dx_direct;|||ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, dparam);=>dy = dv;|||ch.epi.backward(y, z, xv, dv, dy, dz_direct, dx_direct, discard);=>dy = dv;'
    pf='constexpr bool kPipelinePrefetch = false;=>constexpr bool kPipelinePrefetch = true;'
    fexp='fastexp:return cdf + a * (kBeta * expf(-0.5f * a * a));=>return cdf + a * (kBeta * __expf(-0.5f * a * a));'
    S16_AB="19 60 83 21 35" S16_TESTS= S16_ROUNDS=3 S16_AB_TIMEOUT=100 \
      S16_VARIANTS_19="trivial:$triv"$'\n'"prefetch:$pf"$'\n'"trivial_prefetch:${triv}|||$pf"$'\n'"$fexp" \
      S16_VARIANTS_60="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_83="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_21="trivial:$triv"$'\n'"prefetch:$pf" \
      S16_VARIANTS_35="prefetch:$pf" \
      bash benchmarks/device_run.sh s16
    mv "$OUT/s16_logs.tar.gz" "$OUT/$S/run1_logs.tar.gz" 2>/dev/null
    ;;
  run2)
    V=.build/s29; mkdir -p $V
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl
    python3 -m kgen.cli emit --ref .kb/problems/level2_85_*.py -o $V/p85.py
    python3 benchmarks/prebuild.py -j 4 $V/p85.py $V/p85_unfolded.py 2>&1 | tail -1
    own="gn_maxpool_hardtanh_relu or gn_channel_min_clamp"
    (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$own" \
       > "$OUT/$S/run2_pytest_own.log" 2>&1; echo "exit code: $?" >> "$OUT/$S/run2_pytest_own.log") &
    timeout -k 5 200 python3 -m kgen.cli validate $V/p85.py --bench --json "$OUT/$S/run2_validate_85.json" \
      > "$OUT/$S/run2_validate_85.log" 2>&1; echo "validate exit $?"
    grep -E "^(fp64|  forward|  backward|KernelBench|kgen verdict|RESULT)" "$OUT/$S/run2_validate_85.log" | cut -c1-200 | head
    PYTHONPATH=/tmp/site:. timeout -k 5 200 python3 .kb/kb_eval.py $V/p85.py .kb/problems/level2_85_*.py --trials 5 \
      > "$OUT/$S/run2_kb_85.log" 2>&1; echo "kb_eval exit $?"; tail -1 "$OUT/$S/run2_kb_85.log" | cut -c1-400
    wait
    tail -3 "$OUT/$S/run2_pytest_own.log"
    for mode in "" "--backward"; do
      timeout -k 5 150 python3 benchmarks/kernel_variants.py $V/p85.py $mode --kernel 'kgen::' --rounds 3 --calls 10 \
        --file unfolded=$V/p85_unfolded.py --json "$OUT/$S/run2_ab_85${mode:+_backward}.json" \
        > "$OUT/$S/run2_ab_85${mode:+_backward}.log" 2>&1
      grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$OUT/$S/run2_ab_85${mode:+_backward}.log" | tail -n 3 | cut -c1-400
    done
    mkdir -p "$OUT/$S/run2_rates"
    timeout -k 5 150 python3 benchmarks/kernel_rates.py .kb/problems "$OUT/$S/run2_rates" --only 85 > "$OUT/$S/run2_rates.log" 2>&1
    tail -n 3 "$OUT/$S/run2_rates/KERNEL_RATES.md" | cut -c1-400
    w32='w32:constexpr int kSweepBackwardWarps = 24;=>constexpr int kSweepBackwardWarps = 32;'
    S16_AB="19 60 83 21" S16_TESTS= S16_ROUNDS=3 S16_AB_TIMEOUT=80 \
      S16_VARIANTS_19="$w32" S16_VARIANTS_60="$w32" S16_VARIANTS_83="$w32" S16_VARIANTS_21="$w32" \
      bash benchmarks/device_run.sh s16
    mv "$OUT/s16_logs.tar.gz" "$OUT/$S/run2_ab_logs.tar.gz" 2>/dev/null
    ;;
  run3)
    V=.build/s29; mkdir -p $V
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl
    python3 -m kgen.cli emit --ref .kb/problems/level2_85_*.py -o $V/p85.py
    (timeout -k 5 420 python3 -c "from tests.gpu import region_harness_twopass as H; H.build_extension()" \
       > "$OUT/$S/run3_harness_build.log" 2>&1; echo "harness build exit $?") &
    python3 benchmarks/prebuild.py -j 3 $V/p85.py $V/p85_folded.py $V/p85_unfolded.py 2>&1 | tail -1
    timeout -k 5 150 python3 -m kgen.cli validate $V/p85.py --bench --json "$OUT/$S/run3_validate_85.json" \
      > "$OUT/$S/run3_validate_85.log" 2>&1; echo "validate exit $?"
    grep -E "^(fp64|  forward|  backward)" "$OUT/$S/run3_validate_85.log" | cut -c1-160 | head -12
    PYTHONPATH=/tmp/site:. timeout -k 5 150 python3 .kb/kb_eval.py $V/p85.py .kb/problems/level2_85_*.py --trials 5 \
      > "$OUT/$S/run3_kb_85.log" 2>&1; echo "kb_eval exit $?"; tail -1 "$OUT/$S/run3_kb_85.log" | cut -c1-300
    timeout -k 5 150 python3 benchmarks/kernel_variants.py $V/p85.py --backward --kernel 'kgen::' --rounds 3 --calls 10 \
      --file folded=$V/p85_folded.py --file unfolded=$V/p85_unfolded.py --json "$OUT/$S/run3_ab_85_backward.json" \
      > "$OUT/$S/run3_ab_85_backward.log" 2>&1
    grep -vE "^\[|ninja|Building|Warn|warn|prebuild|_warn" "$OUT/$S/run3_ab_85_backward.log" | tail -n 3 | cut -c1-900
    mkdir -p /tmp/rates
    timeout -k 5 120 python3 benchmarks/kernel_rates.py .kb/problems /tmp/rates --only 85 > /tmp/rates/log 2>&1
    cp /tmp/rates/kernel_rates.json "$OUT/$S/run3_kernel_rates.json"; tail -n 1 /tmp/rates/KERNEL_RATES.md | cut -c1-400
    wait
    timeout -k 5 240 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k "window" \
      > "$OUT/$S/run3_pytest_window.log" 2>&1; echo "pytest exit $?"; tail -n 3 "$OUT/$S/run3_pytest_window.log"
    ;;
  run4)
    own="gn_maxpool_hardtanh_relu or gn_channel_min_clamp"
    (timeout -k 5 330 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$own" \
       > "$OUT/$S/run4_pytest_own.log" 2>&1; echo "exit code: $?" >> "$OUT/$S/run4_pytest_own.log") &
    for tool in memcheck racecheck; do
      timeout -k 5 150 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
        tests/gpu/test_gn_region_twopass.py -k "window_max_clamp or window_min_clamp" > "$OUT/$S/run4_$tool.log" 2>&1
      echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/$S/run4_$tool.log" | tail -3
    done
    wait
    tail -n 3 "$OUT/$S/run4_pytest_own.log"
    ;;
  run5)  # after the review's mend: every regenerated file whose templates changed, built and validated (no --bench)
    fs="generated/ref_level2_85_conv2d_groupnorm_scale_maxpool_clamp.py generated/ref_level2_75_gemm_groupnorm_min_biasadd.py
        generated/ref_level2_37_matmul_swish_sum_groupnorm.py generated/ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py
        generated/ref_level2_19_convtranspose2d_gelu_groupnorm_fast.py"
    python3 benchmarks/prebuild.py -j 5 $fs 2>&1 | tail -1
    for f in $fs; do
      n=$(basename $f .py)
      timeout -k 5 90 python3 -m kgen.cli validate $f --json "$OUT/$S/run5_$n.json" > "$OUT/$S/run5_$n.log" 2>&1
      echo "$n: exit $? $(grep -iE 'verdict' "$OUT/$S/run5_$n.log" | tail -1 | cut -c1-150)"
    done
    ;;
  *) echo "usage: $0 runN"; exit 2 ;;
esac
