#!/usr/bin/env bash
# Session 21's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/).
#   run1: the wgmma ConvTranspose2d (conv/convt_wgmma.cuh, v3): its GPU tests against float64 (9 geometries x 3 ops,
#         the normalised output, determinism, the distance to cuDNN's TF32, errors), then the bench at L2-19's shape
#         against cuDNN NCHW and channels-last.
#   run2: run1: correct on the first run (12 tests passed before the kernel-5 case ran out of shared memory), but
#         11.4 ms at L2-19 (55 TFLOP/s), not the ~2.5 ms predicted. ncu of one launch at batch 16: where it waits.
#   run3: run2: tensor pipe 12 % busy, issue-bound (0.23 instructions a cycle a scheduler, 8.8 cycles apart, "no
#         instruction" the first stall: i-cache) on ~18 K instructions a warp per tile. v3.1: register-staged loads,
#         4 channels per 16-byte store; the epilogue through shared memory, a warp per channel. Tests, bench, ncu.
#   run4: run3: 34 passed; 9.43 ms (identity op 8.42), still 0.23 instructions a cycle a scheduler, L1TEX scoreboard
#         the first stall. The main loop alone and the epilogue alone, timed in one run.
#   run5: run4: main loop alone 6.72 ms, epilogue alone 2.20 ms. The main loop split: its wgmma alone (no loads),
#         and with every tap's descriptor at an aligned start (are shifted descriptors slow?).
#   run6: run5: wgmma alone 2.44 ms, aligned descriptors 6.24 (-5 %): the loads bound it. After the review's shared
#         helpers (finalize_moments in conv/convt_igemm.cuh, the tests' statistics check): both convt GPU test files.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT/s21"
case "${1:-}" in
  run1)
    nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
    timeout -k 5 240 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
      > "$OUT/s21/run1_build.log" 2>&1; echo "build exit $?"; grep -E "error|Used [0-9]+ registers" "$OUT/s21/run1_build.log" | head -8
    timeout -k 5 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_convt_wgmma.py -s 2>&1 | tail -25
    timeout -k 5 120 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tail -12 ;;
  run2)
    timeout -k 5 300 ncu --kernel-name regex:convt_wgmma_kernel --launch-skip 1 --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
      --section SourceCounters --print-details all python3 benchmarks/convt_wgmma_once.py 16 > "$OUT/s21/run2_ncu.log" 2>&1
    echo "ncu exit $?"; grep -iE "Duration|Throughput|stall|Eligible|Issued|Active Warps|Registers|Shared Memory Config|Bank|Pipe" "$OUT/s21/run2_ncu.log" | head -60 ;;
  run3)
    timeout -k 5 240 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
      > "$OUT/s21/run3_build.log" 2>&1; echo "build exit $?"; grep -E "error|Used [0-9]+ registers" "$OUT/s21/run3_build.log" | head -8
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py -s 2>&1 | tail -15
    timeout -k 5 120 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tail -12
    timeout -k 5 200 ncu --kernel-name regex:convt_wgmma_kernel --launch-skip 1 --launch-count 1 --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis python3 benchmarks/convt_wgmma_once.py 16 \
      > "$OUT/s21/run3_ncu.log" 2>&1
    echo "ncu exit $?"; grep -iE "Duration|Tensor|Throughput  |Issued Warp|Eligible Warps|Warp Cycles Per Issued|Stall (No Inst|Wait|Short|Long|Barrier|Math|Dispatch|GMMA)" "$OUT/s21/run3_ncu.log" | head -30 ;;
  run4)
    timeout -k 5 240 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
      > "$OUT/s21/run4_build.log" 2>&1; echo "build exit $?"
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 | tail -3
    timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tail -12 ;;
  run5)
    timeout -k 5 240 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
      > "$OUT/s21/run5_build.log" 2>&1; echo "build exit $?"
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 | tail -2
    timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tail -12 ;;
  run6)
    timeout -k 5 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py tests/gpu/test_convt_igemm.py 2>&1 | tail -3 ;;
  *) echo "usage: $0 run1|run2|run3|run4|run5|run6" ; exit 2 ;;
esac
