#!/usr/bin/env bash
# Session 27's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s27/).
#   run1: where the forward conv kernel's ~0.9 ms beyond its main loop goes (session 26: whole 3.87-3.99 ms, main
#         loop 2.97, identity op 3.69, epilogue alone 1.33-1.42). New timing variants: the conv storing z without
#         moments (19; its epilogue alone, 20) and the moments without z's stores (21). If the stores are the cost,
#         19 ~ 3.6 and 21 ~ 3.3; if the GELU moments are, 19 ~ 3.2 and 21 ~ 3.8. ncu of the whole kernel at batch 16:
#         the epilogue's stall reasons per instruction.
#   run2: run1 said the moments are the cost (storing z alone 3.57 ms; the moments without z's stores 3.92; whole
#         4.05; main loop 3.06). A fourth (moments) warpgroup does not compile: at 512 threads a thread has 128
#         registers at launch and ptxas needs 154 for the m64n256 wgmma. So the consumers now take a tile's moments
#         during the next tile's main loop, a step of 8 channels between issuing each chunk's wgmma group and waiting
#         for the one before, reading z back from L2; the epilogue only stores z. Predicted: 4.05 -> ~3.65 ms
#         (the moments' ALU work beside the tensor cores, no shared memory), forward in validate 5.4-5.5 -> ~5.05.
#         Harness tests, bench, fused tests, validate --bench.
#   run3: run2: every test passes (141 harness, 26 fused, validate PASS), but slower: the kernel 5.41 ms (moments
#         steps alone, unoverlapped, 1.65 ms; in the main loop they added 1.93). Each step held the previous chunk's
#         stage until it was done (the release came after it), and ran latency-bound (L2 loads, then a Chan butterfly
#         with a division a level, channel after channel). Now the stage is released before the step, and the lanes'
#         raw sums meet in one butterfly for both channels. Predicted: the step ~1 K cycles against ~3.5 K of tensor
#         work a chunk, the kernel ~3.6-3.7 ms. Harness tests and the bench.
#   run4: run3: 4.74 ms (identity op 4.23): the steps in the consumers' main loop still cost about their own length
#         (~1.1-1.3 ms), as session 26's work beside the main loop did. Now the moments leave the consumers entirely:
#         the producer warpgroup's last warp folds them from L2 (8 lanes a channel, 8 loads in flight), the other 3
#         warps copy (96 threads); the consumers only store z and announce the tile (mbarriers stored/consumed, two
#         slots). setmaxnreg: producer warpgroup 96 (the moments warp wants ~80), consumers 200 (ptxas: R<200, no
#         spills there; a few spills at batch edges in the moments warp). Predicted: the kernel near storing-z-alone,
#         ~3.5-3.7 ms, if 3 copying warps keep the main loop's rate (it is bound by the shared-memory port, not the
#         producer's latency: session 23) and the moments warp keeps up (~20 K instructions a tile on one scheduler
#         against ~48 K cycles). Harness tests and the bench.
#   run5: back to the epilogue's own moments (v3.9). Its instructions (run1 ncu, batch 16): 3.7 K a warp a tile, 29 a
#         value, FMUL 7.5, FFMA 5.5, FADD 4.6 of them; GELU's moments value 17 of them. Now GELU(v) = max(v, 0) -
#         |v| erfc(|v| / sqrt 2) / 2 with the constants folded (13), the sum of squares as one FFMA a value, and the
#         frame row and column of a store computed only off the dense path (integer divisions). Predicted: ~20 %
#         fewer epilogue instructions, the kernel 4.05 -> ~3.9 ms (the epilogue ~1 ms beyond the main loop, half of
#         it issue). Harness tests, bench, fused tests, validate, KernelBench.
#   run6: run5: 141 harness tests, 26 fused tests, validate PASS (forward 5.46, its conv kernel 3.76 in the profile,
#         forward+backward 15.09: compile 32.06, 2.13x), KernelBench 5/5 (5.57 ms against 12.6); bench: the kernel 3.85
#         (main loop 2.91): the GELU trim bought ~0.05 ms, not the ~0.15 predicted. Now the dense epilogue (every
#         full pixel tile at L2-19) hands each staged row to a bulk copy (64 threads, one 128-byte copy each; ptxas
#         serialises per-thread copies into a uniform loop) from two staging buffers, one barrier a piece, and folds
#         the moments from registers: no shared loads back, no global stores by the threads. Predicted: the stores'
#         0.47 ms beyond the main loop about halved, the kernel ~3.6-3.7. Harness tests and the bench.
#   run7: run6's machine was slow throughout (main loop alone 3.57 against 2.91 in run5; the input gradient's
#         main loop, untouched, 4.43 against 2.33), so its numbers compare with nothing. The bulk-copy epilogue and
#         the v3.9 one (benchmarks/baseline_convt_wgmma.cuh, run5's) built side by side and timed alternately in one
#         call: new, old, new, old.
#   run8: the epilogue's staging is warp-local: a warp reads back only the rows (channels) its own fragment wrote, so
#         the two named barriers of the warpgroup a piece become __syncwarp (16 warpgroup barriers a tile kept the 4
#         warps in step; the epilogue is latency-bound with 2 warps a scheduler). Predicted: the epilogue's ~0.95 ms
#         beyond the main loop down 0.1-0.2, the input gradient (same epilogue, no moments) likewise. Harness tests,
#         the bench (forward and input gradient), racecheck and memcheck, fused tests, validate, KernelBench.
set -u
S=s27
. benchmarks/convt_fused_helpers.sh
epilogue_bench() {  # name, lines to show, more row words: the bench's rows that split the forward kernel's epilogue
  local name=$1 lines=$2; shift 2
  timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "identity op" \
    "main loop alone (timing" "epilogue alone" "storing z" "without storing" "$@" 2>&1 \
    | tee "$OUT/$S/${name}_bench.log" | tail -"$lines"
}
case "${1:-}" in
  run1)
    build_wgmma run1
    epilogue_bench run1 10
    ncu_source run1_ncu_v0 0
    ncu_source run1_ncu_v19 19
    ;;
  run2)
    build_both run2
    pytest_wgmma run2
    epilogue_bench run2 10 "GELU + GroupNorm"
    pytest_fused_cl run2
    validate_fused run2
    ;;
  run3)
    build_wgmma run3
    pytest_wgmma run3
    epilogue_bench run3 8
    ;;
  run4)
    build_wgmma run4
    pytest_wgmma run4
    epilogue_bench run4 9
    ;;
  run5)
    build_both run5
    pytest_wgmma run5
    epilogue_bench run5 9 "GELU + GroupNorm"
    pytest_fused_cl run5
    validate_fused run5
    kb_eval_fused run5
    ;;
  run6)
    build_wgmma run6
    pytest_wgmma run6
    epilogue_bench run6 9
    ;;
  run7)
    rm -rf /tmp/base && mkdir -p /tmp/base && cp -r kgen tests benchmarks /tmp/base/
    cp benchmarks/baseline_convt_wgmma.cuh /tmp/base/kgen/templates/cuda/convt_wgmma.cuh
    build_wgmma run7 &
    (cd /tmp/base && TORCH_EXTENSIONS_DIR=/tmp/base/ext PYTHONPATH=/tmp/base timeout -k 5 300 python3 -c \
      "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" > "$OUT/$S/run7_build_base.log" 2>&1; \
      echo "base build exit $?")
    wait
    for round in 1 2; do
      echo "new ($round)"
      timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "storing z, no moments (timing" \
        "main loop alone (timing" 2>&1 | tee -a "$OUT/$S/run7_bench_new.log" | grep " ms"
      echo "old ($round)"
      (cd /tmp/base && TORCH_EXTENSIONS_DIR=/tmp/base/ext PYTHONPATH=/tmp/base timeout -k 5 150 python3 \
        tests/gpu/test_convt_wgmma.py --bench "moments (again)" "storing z, no moments (timing" \
        "main loop alone (timing" 2>&1 | tee -a "$OUT/$S/run7_bench_old.log" | grep " ms")
    done
    ;;
  run8)
    build_both run8
    pytest_wgmma run8
    timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench "moments (again)" "identity op" \
      "main loop alone (timing" "storing z, no moments (timing" "GELU + GroupNorm" "input gradient (grad_z" 2>&1 \
      | tee "$OUT/$S/run8_bench.log" | grep " ms"
    sanitize_tests run8 "(conv_and_statistics and gelu_erf and (2x64x20x19 or 1x8x6x100 or 2x48x7x8 or 2x64x62x64)) or (input_grad_matches and default and channels_last and 2x64x20x19)"
    pytest_fused_cl run8
    validate_fused run8
    kb_eval_fused run8
    ;;
  *) echo "usage: $0 runN"; exit 2 ;;
esac
