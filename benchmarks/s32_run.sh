#!/usr/bin/env bash
# Session 32's device calls, by name (the record of what ran; logs under benchmarks/h100/s32/).
#   run1: issue 12, the backward rates. The pipelined backward (gn_region_twopass_pipeline.cuh) is the backward of
#         L1-35, L2-19, 21, 60, 61, 83; session 29 measured its skeleton (the region's ops removed) at 83-85 % of a
#         copy and the ops taking it to 69-79 %: a warp's loads wait behind its own arithmetic, and registers cap
#         what is in flight. New: gn_region_twopass_bulk.cuh, the same tickets and hand-over with one producer
#         thread bulk-copying each item's x and dout into a ring of shared-memory stages and 8 consumer warps
#         computing from there. Builds the two-pass test harness and runs its tests (every float64 case through
#         the register, bulk and sweep backwards; the ticket phases bitwise equal across lags and both loads),
#         and builds the A/B variants of run2: `regs` (the register kernel), `s2b3` (2 stages, 3 blocks an SM),
#         `s4b1` (4 stages, 1 block). Register use of the bulk kernels (cuobjdump).
#   run2: run1: 451 passed, 4 failed: at window_max the bulk kernel's gradients were not bitwise the register
#         kernel's (both within the float64 bounds). A race: with no block barrier ending an item, a warp ahead
#         could write the next pass B item's per-warp prologue sums before warp 0 had read this item's (the register
#         kernel's end-of-item __syncthreads prevents it). A consumer barrier after pass B's sums now. Rebuilt: the
#         harness's phase and bulk tests again, then the A/B (kernel_variants --backward, 3 rounds, one process a
#         problem) at L2-19, 83, 21, 61, L1-35.
#         Expected: where the ops cost most (L2-19: 18 % of the register kernel's time, L2-60 is odd-planed and
#         keeps the register kernel) the bulk kernel nears the skeleton's 85 %: L2-19 3.13 -> ~2.6-2.7 ms, L2-83
#         0.60 -> ~0.55, L2-21 1.33 -> ~1.26; L1-35 (L2-bound, no ops) unchanged or slower.
#   run3: host cost at small shapes (session 31: the UNet residual block's forward 0.40 ms against eager's 0.26, each
#         kgen C++ entry point ~40-50 us under cProfile, where Function.apply itself costs ~3.5 us on the CPU here).
#         benchmarks/host_cost_profile.py: torch.profiler's self CPU time by event over 300 no_grad forwards (the
#         ATen and CUDA runtime calls inside kgen's entry points), then each entry point called alone in a loop.
#         Expected: something inside the entry points (an allocation, a runtime query, a memset) of tens of us.
#   run4: the family at shapes its files were not emitted for (benchmarks/family_other_shapes.py): each of the 17
#         problems emitted, prebuilt, and validated (outputs, every gradient, float64, determinism) at a small odd
#         input shape from its own: batch 3, spatial dims 11, channels and init arguments unchanged; (N, F) -> (7, F).
#         Expected: 17 PASS (the own references already cover odd shapes per kernel family; this runs each problem's
#         own plan there).
set -u
S=s32
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
V=.build/$S
mkdir -p "$OUT/$S" $V
K='backward_pipeline|backward_bulk|backward_sweep|backward_group|param_grad|param_sums'
regs='regs:constexpr bool kBulkBackward = true;=>constexpr bool kBulkBackward = false;'
s2b3='s2b3:constexpr int kBulkStages = 3;=>constexpr int kBulkStages = 2;|||constexpr int kBulkBlocksPerSM = 2;=>constexpr int kBulkBlocksPerSM = 3;'
s4b1='s4b1:constexpr int kBulkStages = 3;=>constexpr int kBulkStages = 4;|||constexpr int kBulkBlocksPerSM = 2;=>constexpr int kBulkBlocksPerSM = 1;'
AB_PROBLEMS=${AB_PROBLEMS:-"19 83 21 61 35"}
problem_file() { if [ "$1" = 35 ]; then ls .kb/problems/level1_35_*.py; else ls .kb/problems/level2_${1}_*.py; fi; }
case "${1:-}" in
  run1)
    (timeout -k 5 560 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py \
       > "$OUT/$S/run1_pytest_twopass.log" 2>&1; echo "exit code: $?" >> "$OUT/$S/run1_pytest_twopass.log") &
    for n in $AB_PROBLEMS; do
      python3 -m kgen.cli emit --ref $(problem_file $n) -o $V/p$n.py
      (timeout -k 5 500 python3 benchmarks/kernel_variants.py $V/p$n.py --kernel "$K" --build-only \
         --variant "$regs" --variant "$s2b3" --variant "$s4b1" > "$OUT/$S/run1_build_$n.log" 2>&1
       echo "exit code: $?" >> "$OUT/$S/run1_build_$n.log") &
    done
    wait
    tail -n 2 "$OUT/$S"/run1_build_*.log | cut -c1-200
    tail -n 4 "$OUT/$S/run1_pytest_twopass.log"
    for so in $(ls -t .build/ext/*/*.so | head -40); do
      cuobjdump -res-usage "$so" 2>/dev/null | grep -A1 "backward_bulk_kernel\|backward_pipeline_kernel" \
        | grep -oE "Function [^ ]+|REG:[0-9]+|STACK:[0-9]+|LOCAL:[0-9]+" | paste -d' ' - - - - | cut -c1-60,200- \
        | sed "s|^|$(basename $(dirname $so)): |"
    done | sort -u > "$OUT/$S/run1_res_usage.log"; head -20 "$OUT/$S/run1_res_usage.log"
    ;;
  run2)
    (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k "phases or bulk" \
       > "$OUT/$S/run2_pytest_twopass.log" 2>&1; echo "exit code: $?" >> "$OUT/$S/run2_pytest_twopass.log") &
    for n in $AB_PROBLEMS; do
      python3 -m kgen.cli emit --ref $(problem_file $n) -o $V/p$n.py
      (timeout -k 5 300 python3 benchmarks/kernel_variants.py $V/p$n.py --kernel "$K" --build-only \
         --variant "$regs" --variant "$s2b3" --variant "$s4b1" > "$OUT/$S/run2_build_$n.log" 2>&1) &
    done
    wait
    tail -n 3 "$OUT/$S/run2_pytest_twopass.log"
    for n in $AB_PROBLEMS; do
      timeout -k 5 ${AB_TIMEOUT:-100} python3 benchmarks/kernel_variants.py $V/p$n.py --backward --kernel "$K" \
        --rounds 3 --calls 10 --variant "$regs" --variant "$s2b3" --variant "$s4b1" --json "$OUT/$S/run2_ab_$n.json" \
        > "$OUT/$S/run2_ab_$n.log" 2>&1
      echo "exit code: $?" >> "$OUT/$S/run2_ab_$n.log"
      echo "== L-$n"; grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$OUT/$S/run2_ab_$n.log" | tail -n 8 | cut -c1-330
    done
    ;;
  run3)
    python3 -m kgen.cli emit --ref tests/ref/probe/unet_resblock_time_embedding.py -o $V/unet.py
    timeout -k 5 200 python3 benchmarks/prebuild.py -j 2 $V/unet.py 2>&1 | tail -1
    timeout -k 5 200 python3 benchmarks/host_cost_profile.py $V/unet.py tests/ref/probe/unet_resblock_time_embedding.py \
      > "$OUT/$S/run3_host_cost.log" 2>&1; echo "exit $?"
    grep -v Warn "$OUT/$S/run3_host_cost.log" | cut -c1-180 | head -70
    ;;
  run4)
    mkdir -p $V/family
    for f in .kb/problems/level*_*.py; do n=$(basename $f | sed -E 's/level[0-9]+_([0-9]+)_.*/\1/')
      python3 -m kgen.cli emit --ref $f -o $V/family/p$n.py; done
    timeout -k 5 300 python3 benchmarks/prebuild.py -j 16 $V/family/p*.py 2>&1 | tail -1
    timeout -k 5 ${SWEEP_TIMEOUT:-280} python3 benchmarks/family_other_shapes.py .kb/problems $V/family "$OUT/$S/run4_other_shapes" \
      ${ONLY:+--only $ONLY} 2>&1 | grep -v Warn
    tar czf "$OUT/$S/run4_other_shapes.tar.gz" -C "$OUT/$S" run4_other_shapes && rm -rf "$OUT/$S/run4_other_shapes"
    ;;
esac
