#!/usr/bin/env bash
# Session 30's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s30/).
#   run1: issue 13, the forward's main loop. Session 26 measured the producer's rounding pass (cp.async's 4-byte
#         copies land in shared memory, then every unit is read, rounded to TF32 and written back) at 0.6 ms of the
#         conv kernel's main loop at L2-19 (2.97 ms with it, 2.37 without, the wgmma alone 2.04): the loop is bound
#         by the multiprocessor's shared-memory port. Now the producer loads the NCHW input into registers (8
#         channels of 4 positions a thread in flight), rounds there and stores each position's two 16-byte units:
#         the chunk crosses the port once, without the copies' bank conflicts. Predicted at L2-19: the main loop
#         2.9-3.0 -> ~2.4-2.5 ms if the producer's loads keep up (~2 us a chunk of budget, ~1.2 us of latency for
#         its two batches), the conv kernel 3.7-3.87 -> ~3.2-3.3, the one-launch forward 5.10 -> ~4.6-4.7 ms; if
#         they do not keep up, the main loop slower than the copy path's. Checks: the harness's tests (a new one:
#         register staging and the copy path bit for bit at 11 shapes), the bench with both paths in one process.
#   run2: run1: bit for bit equal (189 tests pass), but the main loop 5.73 ms against the copy path's 3.10 (and
#         2.23 for the copy path without its rounding pass): the producer does not keep up. 4 positions a batch
#         leave ~16 KB in flight an SM, two batches a chunk, each a full memory latency. Now a thread's whole share
#         of a chunk at L2-19 (9 positions: 1030 / 128) in one batch, 72 values in flight, the producer given 112
#         registers and the consumers 192 (were 56 / 224; ptxas: no spills). Predicted: a chunk ~1 latency
#         (~1.5 us) against the consumers' ~2 us, the main loop ~2.3-2.5 ms, if 192 registers do not slow the
#         consumers (the copy path's rows, with the same split, say).
#   run3: run2: the main loop 4.04 ms through registers against 3.09 by cp.async (the consumers no slower at 192
#         registers): a chunk's loads take ~4 us, more than the consumers' ~2 us. One batch a chunk exposes the
#         whole latency (DRAM for the rows no earlier tile read). Now threads 0-7 each issue one bulk L2 prefetch
#         (cp.async.bulk.prefetch.L2) of a channel's rows for the chunk two ahead, so the loads hit L2. The split
#         now 120 / 184 (the one launch's producer, with its evict-first loads, spilled 24 bytes at 112). Predicted:
#         a chunk ~1 us of L2 latency, the main loop ~2.3-2.5 ms; registers without the prefetch timed beside it.
#   run4: issue 12, the forward. The region's two-pass forward reads x twice from DRAM (statistics, then the
#         normalise): 3 units of traffic for kNone. New: gn_region_forward_pipeline.cuh, the two passes as one
#         persistent kernel, pass B an L2 behind pass A (the pipelined backward's tickets), for kNone, kPlane and
#         kSample on 16-byte packs: 2 units. Predicted (H100): where the sweeps run at ~90 % of their 3 units,
#         the pipeline at ~85 % of 2 units, the forward ~0.7x: L2-19 2.43 -> ~1.7 ms, L2-21 1.12 -> ~0.8,
#         L2-60 1.07 -> ~0.75, L1-35 (8 MB slices, L2-bound as its backward) 7.5 -> ~6. Checks: the two-pass
#         harness's tests (every float64 case through both forwards, new phase tests at two lags), its bench,
#         and A/B of the kgen forward kernels of emitted files (the pipeline switched off by substitution).
#   run5: run4: correct (319 harness tests), but the pipelined forward 2x SLOWER than the sweeps (L2-19 4.90 ms
#         against 2.41, L2-21 2.36 / 1.12, L2-60 2.24 / 1.07, L1-35 13.1 / 7.5). The kernel took 88 registers and a
#         344-byte stack (the slice merge out of line, passed the kernel's argument struct by reference): 2 blocks an
#         SM, one round of loads in flight a thread, so ~32 KB in flight an SM, ~7 GB/s an SM by Little's law. Now
#         the merge takes scalars, the kernel 64 registers (4 blocks, 32 warps an SM; 64 bytes of stack), and an
#         item 2 rounds. Predicted: ~2.5x the in-flight bytes, the forward near the sweeps' or below; items of 1,
#         2 and 4 rounds timed.
#   run6: run5: the pipelined forward now level with the sweeps at L2-21 (1116 against 1118 us) and L2-60 (1075 /
#         1064), slower at L2-19 (2631 / 2411) and L1-35 (9948 / 7539); items of 1 or 4 rounds slower than 2. At
#         32 warps an SM and 4 packs a thread, ~65 KB are in flight an SM against the sweeps' ~130 KB (64 warps).
#         Now pass A keeps 8 packs in flight a thread (kForwardPipelineLoads; 24 warps, 80 registers, ~120 bytes of
#         stack): ~96 KB. Predicted: pass A's DRAM stream ~1.5x faster, the forward ~10-25 % under the sweeps at
#         L2-21/60 if pass B's L2 reads keep up. Variants: run5's configuration (32 warps, 4 packs), 24 warps
#         with 4 packs, and the sweeps.
#   run7: issue 13 again, the copies' bank conflicts. The producer's 4-byte cp.async copies put a warp's 32 positions
#         of one channel 16 bytes apart: 4 lanes a bank. Now a warp instruction covers 8 positions x 4 channels, 8
#         whole units (128 contiguous bytes, no conflicts); the rounding pass takes the warp's own units after a
#         __syncwarp. Predicted: the copies' share of the shared-memory port from ~4x to 1x their bytes, the main
#         loop 3.0-3.1 -> ~2.8 ms (session 26: without the rounding pass the loop is 2.23-2.36 against the wgmma's
#         2.04). Same call: this tree and session 29's (.build/s30old), alternately, twice; all harness tests;
#         validate --bench and KernelBench of the fused file.
#   run8: issue 12's unseen references: six new own references (tests/ref/references), among them torch.max(...)
#         .values, which the planner left in PyTorch until now: each emitted (prebuilt in parallel), then
#         tests/gpu/test_ref_emitted.py (kgen validate: outputs, every gradient, float64, determinism).
#   run9: the family table's L2-85 row, checked and timed with session 29's plan (the clamp moved before the max
#         pooling): family.py --only 85 --bench (emit, validate, KernelBench, kgen / eager / torch.compile).
#   run10: global pooling (adaptive average / max pooling to size 1) now fuses as the mean / max over the spatial
#         dims: two own references for it, and run8's `.values` one again after that change, emitted, prebuilt in
#         parallel and validated (kgen validate: outputs, every gradient, float64, determinism).
# Set-up here before the calls that need it (git-ignored, carried to the device):
#   run4-run6: .build/s30/pNN.py, `kgen emit --ref .kb/problems/levelX_NN_*.py -o .build/s30/pNN.py` for NN in
#              35 19 21 23 27 60 61 83 (carry [".kb", ".build/s30"]);
#   run7:      .build/s30old, session 29's tree: `git archive dc8f57e kgen tests | tar -x -C .build/s30old`
#              (carry [".kb", ".build/s30old"]).
set -u
S=s30
source benchmarks/convt_fused_helpers.sh
case "${1:-}" in
  run1)
    build_both run1
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py \
      -k "register_staging or one_launch or conv_and_statistics" 2>&1 | tee "$OUT/$S/run1_pytest_wgmma.log" | tail -4
    timeout -k 5 240 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "staged by cp.async" \
      "main loop alone (timing" "one launch (conv + GELU + GroupNorm), the default" "rounding pass" \
      2>&1 | tee "$OUT/$S/run1_bench.log" | grep -E " ms|max"
    validate_fused run1
    ;;
  run2)
    build_both run2
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py \
      -k "register_staging or one_launch or conv_and_statistics" 2>&1 | tee "$OUT/$S/run2_pytest_wgmma.log" | tail -4
    timeout -k 5 240 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "staged by cp.async" \
      "main loop alone (timing" "one launch (conv + GELU + GroupNorm), the default" "rounding pass" \
      2>&1 | tee "$OUT/$S/run2_bench.log" | grep -E " ms|max"
    ;;
  run3)
    build_both run3
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py \
      -k "register_staging or one_launch or conv_and_statistics" 2>&1 | tee "$OUT/$S/run3_pytest_wgmma.log" | tail -4
    timeout -k 5 240 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "staged by cp.async" \
      "main loop alone" "one launch (conv + GELU + GroupNorm), the default" "rounding pass" \
      2>&1 | tee "$OUT/$S/run3_bench.log" | grep -E " ms|max"
    ;;
  run4)
    mkdir -p "$OUT/s30" /tmp/s30
    timeout -k 5 300 python3 -c "from tests.gpu import region_harness_twopass as H; H.build_extension()" \
      > /tmp/s30/run4_build.log 2>&1 &
    for p in 35 19 21 60; do
      timeout -k 5 400 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --build-only \
        --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        > /tmp/s30/run4_build_p$p.log 2>&1 &
    done
    wait
    timeout -k 5 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_twopass.py 2>&1 \
      | tee "$OUT/s30/run4_pytest_twopass.log" | tail -3
    timeout -k 5 120 python3 tests/gpu/test_gn_region_twopass.py --bench 2>&1 | tee "$OUT/s30/run4_bench.log"
    for p in 35 19 21 60; do
      timeout -k 5 120 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --rounds 3 \
        --calls 10 --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        2>&1 | tee "$OUT/s30/run4_variants_p$p.log" | tail -4
    done
    ;;
  run5)
    mkdir -p "$OUT/s30" /tmp/s30
    timeout -k 5 300 python3 -c "from tests.gpu import region_harness_twopass as H; H.build_extension()" \
      > /tmp/s30/run5_build.log 2>&1 &
    for p in 35 19 21 60; do
      timeout -k 5 400 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --build-only \
        --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        --variant "rounds1:constexpr int kForwardPipelineRounds = 2;=>constexpr int kForwardPipelineRounds = 1;" \
        --variant "rounds4:constexpr int kForwardPipelineRounds = 2;=>constexpr int kForwardPipelineRounds = 4;" > /tmp/s30/run5_build_p$p.log 2>&1 &
    done
    wait
    timeout -k 5 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k "forward or float64" \
      2>&1 | tee "$OUT/s30/run5_pytest_twopass.log" | tail -3
    timeout -k 5 120 python3 tests/gpu/test_gn_region_twopass.py --bench 2>&1 | tee "$OUT/s30/run5_bench.log"
    for p in 35 19 21 60; do
      timeout -k 5 150 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --rounds 3 \
        --calls 10 --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        --variant "rounds1:constexpr int kForwardPipelineRounds = 2;=>constexpr int kForwardPipelineRounds = 1;" \
        --variant "rounds4:constexpr int kForwardPipelineRounds = 2;=>constexpr int kForwardPipelineRounds = 4;" 2>&1 | tee "$OUT/s30/run5_variants_p$p.log" | grep -E "^(base|sweeps|rounds)" | cut -c1-110
    done
    ;;
  run6)
    mkdir -p "$OUT/s30" /tmp/s30
    for p in 35 19 21 60; do
      timeout -k 5 400 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --build-only \
        --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        --variant "w32_loads4:constexpr int kForwardPipelineWarps = 24;=>constexpr int kForwardPipelineWarps = 32;|||constexpr int kForwardPipelineLoads = 8;=>constexpr int kForwardPipelineLoads = 4;" \
        --variant "loads4:constexpr int kForwardPipelineLoads = 8;=>constexpr int kForwardPipelineLoads = 4;" > /tmp/s30/run6_build_p$p.log 2>&1 &
    done
    wait
    for p in 35 19 21 60; do
      timeout -k 5 150 python3 benchmarks/kernel_variants.py .build/s30/p$p.py --kernel 'kgen::' --rounds 3 \
        --calls 10 --variant "sweeps:const int mode = forward_pipeline_mode().load();=>const int mode = 0;" \
        --variant "w32_loads4:constexpr int kForwardPipelineWarps = 24;=>constexpr int kForwardPipelineWarps = 32;|||constexpr int kForwardPipelineLoads = 8;=>constexpr int kForwardPipelineLoads = 4;" \
        --variant "loads4:constexpr int kForwardPipelineLoads = 8;=>constexpr int kForwardPipelineLoads = 4;" 2>&1 | tee "$OUT/s30/run6_variants_p$p.log" | grep -E "^(base|sweeps|w32|loads)" | cut -c1-110
    done
    ;;
  run7)
    build_both run7
    (cd .build/s30old && timeout -k 5 300 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
      > /tmp/run7_old_build.log 2>&1); echo "old build exit $?"
    timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
      | tee "$OUT/$S/run7_pytest_wgmma.log" | tail -3
    for round in 1 2; do
      for tree in . .build/s30old; do
        echo "== $tree (round $round)"
        (cd $tree && timeout -k 5 200 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" \
          "main loop alone (timing" "one launch (conv + GELU + GroupNorm), the default" "rounding pass" 2>&1 \
          | grep -E " ms") | tee -a "$OUT/$S/run7_bench.log"
      done
    done
    validate_fused run7
    kb_eval_fused run7
    ;;
  run8)
    export TORCH_EXTENSIONS_DIR=$PWD/.build/ext
    NEW="convt1d_gn_channel_max_values conv2d_gn1_manual_mish_sum linear_view_gn_functional_amax conv3d_sub_div_gn_relu_pow_mean conv3d_gn_hardsigmoid_avgpool3d gn_scale_softmax_channels"
    mkdir -p /tmp/s30/own
    for n in $NEW; do python3 -m kgen.cli emit --ref tests/ref/references/$n.py -o /tmp/s30/own/${n}_solution.py; done
    timeout -k 5 300 python3 benchmarks/prebuild.py -j 8 /tmp/s30/own/*.py 2>&1 | tail -2
    K=$(echo $NEW | sed 's/ / or /g')
    timeout -k 5 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$K" 2>&1 \
      | tee "$OUT/$S/run8_pytest_own.log" | tail -3
    ;;
  run9)
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
    G=.build/family_s30_a; mkdir -p "$G"
    PYTHONPATH=/tmp/site:$PWD timeout -k 5 500 python3 benchmarks/family.py .kb/problems .kb "$G" --trials 2 \
      --jobs 12 --only 85 --workers 1 --bench 2>&1 | tee "$G/family.log" | grep -E "^L[12]-|prebuild:|emit:" | cut -c1-200
    rm -f "$G"/*.py; cp -r "$G" "$OUT/$S/family_s30_a"
    ;;
  run10)
    export TORCH_EXTENSIONS_DIR=$PWD/.build/ext
    NEW="conv3d_gn_swish_global_avgpool conv2d_gn_tanh_global_maxpool convt1d_gn_channel_max_values"
    mkdir -p /tmp/s30/own
    for n in $NEW; do python3 -m kgen.cli emit --ref tests/ref/references/$n.py -o /tmp/s30/own/${n}_solution.py; done
    timeout -k 5 300 python3 benchmarks/prebuild.py -j 8 /tmp/s30/own/*.py 2>&1 | tail -1
    for n in $NEW; do
      timeout -k 5 200 python3 -m kgen.cli validate /tmp/s30/own/${n}_solution.py --trials 2 > /tmp/s30/v_$n.log 2>&1
      echo "$n: exit $?"; grep -E "^(kgen verdict|RESULT)" /tmp/s30/v_$n.log; cp /tmp/s30/v_$n.log "$OUT/$S/run10_validate_$n.log"
    done
    ;;
  *) echo "usage: $0 runN"; exit 2 ;;
esac
