#!/usr/bin/env bash
# Session 24's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s24/).
#   run1: cuDNN's conv backward at L2-19's shape, dgrad and wgrad apart (benchmarks/convt_backward_algos.py): its
#         heuristic choice against cudnn.benchmark (deterministic on), the weight gradient asked as a transposed
#         conv's and as a direct conv's, NCHW against channels-last. Session 23's profile: wgrad 5.8 ms (108
#         TFLOP/s), dgrad 2.7 (233). Predicted: if benchmark mode finds a wgrad near dgrad's rate, -3 ms.
#   run2: run1: no: wgrad 5.89 ms (107 TFLOP/s) heuristic, 5.88-6.10 measured-best, as a direct conv's the same;
#         NCHW 8.9; dgrad 2.73-2.88. The GroupNorm backward of the fused file now writes grad_z channels-last itself
#         (groupnorm/op/backward_channels_last.cuh) instead of NCHW plus core/layout.cuh's copy. Predicted: that part 3.6 + 1.5 ->
#         ~3.7 ms, the backward 16.6 -> ~15.1, forward+backward 22.07 -> ~20.6. GPU tests (the new kernel bitwise
#         against the NCHW one, the fused model against float64), the parts bench, validate --bench.
#   run3: run2: fused backward 16.2 ms (parts bench; validate's profile 15.8), forward+backward 21.41 (compile 31.92),
#         validate PASS, KernelBench 5/5; but the channels-last apply sweep is 2.91 ms (2.25 TB/s) against ~2.25 for the
#         NCHW one, so the GroupNorm part went 5.17 -> 4.38, not ~3.7; and its grad_z is not bitwise the NCHW
#         kernels' (FMA contraction differs): both now call groupnorm_dx (explicitly rounded). The apply now loads
#         kClStep tiles before its barrier (more loads in flight a thread); registers 126 uncapped, 80 + 56 B of
#         stack at 3 blocks an SM. Predicted: apply 2.9 -> ~2.3 ms. Variants timed, tests.
#   run4: run3: 2 tiles uncapped best, GroupNorm backward 3.90 ms (NCHW + copy 5.17), whole backward 15.8; grad_z
#         bitwise the NCHW kernels'. Now kgen's own input gradient: the wgmma kernel as a transposed conv of grad_z
#         (channels-last, 16-byte copies, C % 4 == 0) with swapped and flipped weights, identity epilogue; no grad_x
#         copy back. cuDNN's dgrad 2.68 + copy 1.48 today. Predicted: ~2.6-2.9 ms for ours (main loop near the wgmma's
#         2.0 with 4x fewer copy instructions; the epilogue's scalar path, since the frame pitch 258 != 256), the
#         backward 15.8 -> ~14.4. Harness tests (input gradient against float64 at 6 shapes x 2 layouts), fused
#         tests, bench, parts.
#   run5: run4: correct (60 harness tests; |kgen - cuDNN| 4.8e-6 on grad_x) but 7.57 ms against cuDNN's 2.88; the fused
#         backward 19.0 ms. Suspects: (a) the epilogue's scalar path (frame pitch 258 != output width 256: a division
#         and a 4-byte store a pixel, 4x the store instructions); (b) DRAM re-reads: a chunk reads 32 of each
#         position's 256 bytes. Now (a) the frame pitch padded to a multiple of 4 where the output width is one, so 4
#         pixels are all in or all out, one 16-byte store; (b) cp.async.cg ... L2::256B; variants without each, and
#         the main loop and epilogue timed alone. Predicted: if (a), the input gradient toward ~3 ms.
#   run6: run5: 88 harness tests pass; input gradient 5.19 ms (7.33 with the scalar stores; the L2 prefetch hint
#         changes nothing), its main loop alone 3.34 ms (the forward's 2.9 with 4-byte NCHW copies), its epilogue
#         alone 2.12 (the forward's GELU one 1.4). Backward 16.75 ms against 15.8 on cuDNN's input gradient. Why:
#         ncu (speed of light, memory tables, warp states) of the input gradient, its epilogue alone and main loop
#         alone, and the forward's epilogue alone, at batch 16. Suspects: the channels-last copies touch 16 lines a
#         warp instruction (NCHW: 1); grad_x's channel planes are 256 KB apart (a power of two: the 8 channels a
#         store instruction writes may fall in the same memory partitions).
#   run7: run6 (ncu, batch 16): the input gradient's main loop has 6.2-way conflicts on shared loads and 10.6-way on
#         stores (the channels-last copies and rounding interleave the two halves lane by lane: a quarter-warp's 16-byte
#         accesses straddle two 64-byte runs 16 x P bytes apart); its epilogue waits at barriers 61 % of the time, its
#         global stores use 25.6 of 32 bytes a sector (pitch 260: a lane quad's 64-byte run starts 4 floats off the
#         output's 64-byte units in 3 rows of 4). Now a quarter-warp takes 8 positions of one half (128 contiguous
#         bytes), and a pitch_align 16 variant (pitch 272 = W_out mod 16, 6 % more frame). Predicted: main loop
#         3.34 -> ~2.5 ms; pitch 272's epilogue -0.3 ms against +0.15 in the main loop.
#   run8: run7: both slower: the quarter-warp copies 5.46 ms (main loop 3.72), pitch 272 6.25; reverted to run5's
#         copies. The fused file goes back to cuDNN's input gradient (2.7 + 1.5 for the copy back, against 5.2 for
#         kgen's); its backward keeps the channels-last grad_z. A probe: the epilogue alone at power-of-two output
#         planes (forward at output 256 against 258, input gradient at 260 against 256). The harness tests, the fused
#         GPU tests, validate --bench. Predicted: fused backward ~15.5 ms, forward+backward ~21.
#   run9: run8: validate PASS, KernelBench verdict PASS; forward 5.41 ms, forward+backward 20.81 (eager 33.97, compile
#         32.02), backward 15.3 (validate's profile); the plane probe: the input gradient's epilogue is no faster at
#         output 260 than 256 (2.18 / 2.21 ms), nor the forward's slower at 256 (1.23 / 1.31): not the plane stride.
#         Now the forward's producer also writes x channels-last as it stages it (for the weight gradient; where
#         grad is on and the weight wants it), saved instead of x: the backward's x copy (1.47 ms) goes. Predicted:
#         forward with the copy +0.1-0.4 ms (global stores beside a shared-memory-bound main loop), the backward
#         -1.47, forward+backward ~19.6. Harness tests (x_cl exactly x at 8 shapes), fused tests, parts, validate,
#         KernelBench.
#   run10: run9: correct (108 harness tests, x_cl exactly x; validate PASS; KernelBench 5/5) but a net loss: the
#         forward 5.41 -> 6.44 ms even without the copy (the conv kernel 3.93 -> 4.85: the producer's new per-chunk
#         bookkeeping, a WgmmaTile of 64-bit divisions a hand-over) and 8.53 with it (its 16-byte stores, positions
#         256 bytes apart: 32 lines a warp instruction); the backward 15.3 -> 13.8 (weight gradient 7.39 -> 6.32 ms
#         with the producer's x); forward+backward 22.46 against 20.81. Reverted. Does the producer's instruction
#         stream bound the main loop (its hand-over gained ~400 SASS instructions a chunk)? Fewer producer
#         instructions, then: the 8 copies of a position selected each channel's offset per copy (67
#         SASS instructions a position); now the offsets are byte offsets computed once a chunk, a copy of a channel
#         past C_in taking channel C_in - 1's address with src-size 0 (43.5 a position). Predicted: main loop
#         2.9 -> ~2.6 ms, conv + moments 3.9 -> ~3.6. Harness tests, bench, memcheck and racecheck on the partial
#         chunks (C_in 3, 9, 33).
#         Result: 100 passed, memcheck 0 errors, racecheck 0 hazards, but no faster: main loop 3.09 ms, conv +
#         moments 4.02-4.08 (3.89-3.98 in run7-run8). So the copy loop's instruction count does not bound the main
#         loop, and run9's 0.9 ms came from something else in its hand-over (its loop structure, the 64-bit
#         divisions, registers: not isolated). Reverted to v3.9's copy loop.
#   run11: the committed file (run8's kernels; comments since): the fused GPU tests, compute-sanitizer memcheck and
#         racecheck on the channels-last GroupNorm backward, validate --bench, KernelBench's evaluator.
#   run12: run11: 24 fused tests pass; memcheck 0 errors, racecheck 0 hazards; validate PASS, forward 5.45 ms,
#         forward+backward 20.84 (eager 34.03, compile 32.01); KernelBench 5/5, 5.68 ms against 12.6. groupnorm/op/twopass.cuh's
#         NCHW apply now computes dx through groupnorm_dx (explicitly rounded): the GPU tests of every golden file
#         whose kernels run it (L1-35, L2-92, L2-19 in all its modes).
#   run13: run12: 34, 16 and 53 passed. The input gradient's epilogue (2.1 ms alone, 61 % of its stalls at barriers)
#         computed GroupNorm moments it drops, and with one group a channel tile one thread combined 128 channel
#         moments a tile while its warpgroup waited. Now ConvOnly: no moments at all. Predicted: its epilogue alone
#         2.1 -> ~1.2 ms, the input gradient 5.2 -> ~4.4 (cuDNN's + the copy back: 4.2). Harness tests and bench.
#   run14: run13: 100 passed; the input gradient 3.86 ms (epilogue alone 1.54, main loop alone 3.43), 3.80 without
#         the L2 prefetch hint (now off by default), 3.79 at pitch 272: below cuDNN's 2.73 + 1.47. The fused file now
#         takes its input gradient from kgen's kernel. Predicted: backward 15.2 -> ~14.8 ms, forward+backward 20.84 ->
#         ~20.4. Harness and fused GPU tests, parts, validate --bench, KernelBench.
#         Result: 100 + 24 passed; validate PASS, forward 5.56 ms, forward+backward 20.25 (eager 34.05, compile
#         32.17), backward 14.8 (weight gradient 5.82, kgen's input gradient 3.67, GroupNorm 3.83, x copy 1.46);
#         KernelBench 5/5, 5.57 ms against 12.5.
#   run15: compute-sanitizer memcheck and racecheck on the input gradient's path (channels-last copies, ConvOnly
#         epilogue): 4 harness cases (kernel 1-5, padding 0-2, a partial channel tile, 3 output channels).
#         Result: memcheck 0 errors, racecheck 0 hazards.
#   run16: convt_wgmma_input_grad_unsupported now also plans the frame and ring (a shape whose shared memory would not
#         fit falls back to cuDNN instead of raising in backward), checks devices, padding and empty outputs: the
#         harness tests (new declines), the fused tests, the parts bench.
#         Result: 100 + 24 passed; the whole backward 15.28 ms in the parts bench (15.46 in run14's).
#   run17: the committed file once more: validate --bench and KernelBench's evaluator.
#         Result: validate PASS, forward 5.52 ms (eager 12.29, compile 8.40), forward+backward 20.22 (33.96, 32.11),
#         backward 14.7; KernelBench 5/5, 5.50 ms against 12.5.
#   run18: the exact mode (generated/convt_gelu_groupnorm.py), whose NCHW GroupNorm apply now computes dx through
#         groupnorm_dx: validate --bench at 1e-4, its speed against session 23's table (8.65 / 27.37 ms).
#         Result: PASS at 1e-4 (KernelBench verdict 5/5); forward 8.65 ms, forward+backward 27.20 (eager 34.01,
#         compile 32.12): unchanged; its NCHW apply kernel 2.19 ms.
#   run19: the pre-stop review: both GroupNorm backward entries (NCHW and channels-last dx) now share
#         groupnorm_backward_with (checks, operands, outputs, sums, bias gradient) and differ only in their apply
#         launch. The GPU tests of every file whose kernels run it, and the parts bench (GroupNorm parts 3.68 / 3.88).
#         Result: 34, 16 and 53 passed; GroupNorm parts 3.67 / 3.88 ms, the whole backward 15.0 (unchanged).
set -u
S=s24
source "$(dirname "$0")/convt_fused_helpers.sh"
case "${1:-}" in
  run1)
    nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
    timeout -k 5 120 python3 benchmarks/convt_backward_algos.py --small 2>&1 | tee "$OUT/s24/run1_algos_small.log" | tail -30
    timeout -k 5 400 python3 benchmarks/convt_backward_algos.py 2>&1 | tee "$OUT/s24/run1_algos.log" | tail -30 ;;
  run2)
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" generated/convt_gelu_groupnorm.py generated/groupnorm.py \
      > "$OUT/s24/run2_prebuild.log" 2>&1; echo "prebuild exit $?"; tail -4 "$OUT/s24/run2_prebuild.log"
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
      -k "channels_last or fused_conv_against or (deterministic and fused) or (fused_bias_gelu and erf)" 2>&1 \
      | tee "$OUT/s24/run2_pytest_fused.log" | tail -3
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_groupnorm.py 2>&1 | tail -2
    timeout -k 5 150 python3 benchmarks/convt_fused_backward_parts.py 2>&1 | tee "$OUT/s24/run2_parts.log" | tail -9
    validate_fused run2 ;;
  run3)
    # variants of the channels-last apply: tiles a thread loads before the barrier (kClStep) x the register cap
    # (kClBlocksPerSM); the golden file is step 2, 3 blocks an SM
    mkdir -p .build/variants
    for v in "1 1" "2 1" "2 3" "1 3" "4 2"; do
      set -- $v
      sed -e "s/^constexpr int kClStep = 2;/constexpr int kClStep = $1;/" \
          -e "s/^constexpr int kClBlocksPerSM = 3;/constexpr int kClBlocksPerSM = $2;/" "$F" > ".build/variants/cl_step$1_blocks$2.py"
    done
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" .build/variants/cl_*.py > "$OUT/s24/run3_prebuild.log" 2>&1
    echo "prebuild exit $?"; tail -2 "$OUT/s24/run3_prebuild.log"
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
      -k "channels_last or fused_conv_against or (deterministic and fused)" 2>&1 | tee "$OUT/s24/run3_pytest_fused.log" | tail -3
    for f in .build/variants/cl_*.py "$F"; do
      echo "== $f"; timeout -k 5 150 python3 benchmarks/convt_fused_backward_parts.py "$f" 2>&1 | tee -a "$OUT/s24/run3_parts.log" \
        | grep -E "bit for bit|GroupNorm|whole"
    done ;;
  run4)
    build_both run4; pytest_wgmma run4; pytest_fused_cl run4; bench_wgmma run4 18; parts_fused run4 8 ;;
  run5)
    build_both run5; pytest_wgmma run5; bench_wgmma run5 20; pytest_fused_cl run5; parts_fused run5 8 ;;
  run6)
    build_wgmma run6
    for v in "ig 100" "ig_epilogue 111" "ig_mainloop 110" "fwd_epilogue 11"; do
      set -- $v
      timeout -k 5 200 ncu --kernel-name regex:convt_wgmma_kernel --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
        --section WarpStateStats --section SchedulerStats --section LaunchStats \
        python3 benchmarks/convt_wgmma_once.py 16 "$2" > "$OUT/s24/run6_ncu_$1.txt" 2>&1
      echo "ncu $1 exit $?"
      grep -iE "^ +(Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\)|Mem Busy|Max Bandwidth|Issued Warp|No Eligible|Warp Cycles Per Issued)" \
        "$OUT/s24/run6_ncu_$1.txt" | head -14
    done ;;
  run7)
    build_both run7; pytest_wgmma run7; bench_wgmma run7 22; pytest_fused_cl run7; parts_fused run7 8 ;;
  run8)
    build_wgmma run8 &
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" > "$OUT/s24/run8_prebuild.log" 2>&1; echo "prebuild exit $?"
    wait
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
      | tee "$OUT/s24/run8_pytest_wgmma.log" | tail -2
    timeout -k 5 150 python3 benchmarks/convt_plane_stride_probe.py 2>&1 | tee "$OUT/s24/run8_plane_probe.log" | tail -9
    pytest_fused run8
    validate_fused run8 ;;
  run9)
    build_wgmma run9 &
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" > "$OUT/s24/run9_prebuild.log" 2>&1; echo "prebuild exit $?"
    wait
    timeout -k 5 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
      | tee "$OUT/s24/run9_pytest_wgmma.log" | tail -2
    timeout -k 5 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
      -k "channels_last or fused_conv_against or (deterministic and fused)" 2>&1 | tee "$OUT/s24/run9_pytest_fused.log" | tail -2
    timeout -k 5 120 python3 benchmarks/convt_fused_backward_parts.py 2>&1 | tee "$OUT/s24/run9_parts.log" | tail -12
    validate_fused run9
    kb_eval_fused run9 ;;
  run10)
    build_wgmma run10
    timeout -k 5 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
      | tee "$OUT/s24/run10_pytest_wgmma.log" | tail -2
    timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tee "$OUT/s24/run10_bench.log" | tail -22
    for tool in memcheck racecheck; do
      timeout -k 5 150 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
        tests/gpu/test_convt_wgmma.py -k "test_conv_and_statistics_match_float64 and gelu_erf and not in_flight and \
        (1x3x17x13 or 1x33x31x29 or 2x9x6x5 or 2x64x20x19)" > "$OUT/s24/run10_$tool.log" 2>&1
      echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/s24/run10_$tool.log" | tail -3
    done ;;
  run11)
    prebuild_fused run11
    timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
      -k "channels_last or fused_conv_against or (deterministic and fused)" 2>&1 | tee "$OUT/s24/run11_pytest_fused.log" | tail -2
    for tool in memcheck racecheck; do
      timeout -k 5 150 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
        tests/gpu/test_convt_gelu_groupnorm.py -k "test_groupnorm_backward_channels_last" > "$OUT/s24/run11_$tool.log" 2>&1
      echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/s24/run11_$tool.log" | tail -3
    done
    validate_fused run11
    kb_eval_fused run11 ;;
  run12)
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" generated/convt_gelu_groupnorm.py generated/convt_gelu_groupnorm_tanh.py \
      generated/convt_gelu_groupnorm_fast.py generated/groupnorm.py generated/conv_gn_tanh_hardswish_res_lse.py \
      > "$OUT/s24/run12_prebuild.log" 2>&1; echo "prebuild exit $?"; tail -1 "$OUT/s24/run12_prebuild.log"
    for t in test_groupnorm test_conv_gn_lse test_convt_gelu_groupnorm; do
      timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/$t.py 2>&1 | tee "$OUT/s24/run12_$t.log" | tail -1
    done ;;
  run13)
    build_wgmma run13; pytest_wgmma run13; bench_wgmma run13 22 ;;
  run14)
    build_both run14; pytest_wgmma run14; pytest_fused_cl run14; parts_fused run14 8
    validate_fused run14
    kb_eval_fused run14 ;;
  run15)
    build_wgmma run15
    for tool in memcheck racecheck; do
      timeout -k 5 200 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
        tests/gpu/test_convt_wgmma.py -k "test_input_grad and default and channels_last and \
        (2x64x20x19 or 2x96x7x8 or 1x3x10x7 or 1x24x17x13)" > "$OUT/s24/run15_$tool.log" 2>&1
      echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/s24/run15_$tool.log" | tail -3
    done ;;
  run16)
    build_both run16; pytest_wgmma run16; pytest_fused_cl run16; parts_fused run16 8 ;;
  run17)
    prebuild_fused run17; validate_fused run17; kb_eval_fused run17 ;;
  run18)
    E=generated/convt_gelu_groupnorm.py
    timeout -k 5 300 python3 benchmarks/prebuild.py "$E" > "$OUT/$S/run18_prebuild.log" 2>&1; echo "prebuild exit $?"
    timeout -k 5 420 python3 -m kgen.cli validate "$E" --bench --json "$OUT/$S/run18_validate_exact.json" \
      > "$OUT/$S/run18_validate_exact.log" 2>&1; echo "validate exit $?"
    grep -E "^  (forward|forward_backward) |KernelBench verdict|kgen verdict|^RESULT|backward_apply_kernel" \
      "$OUT/$S/run18_validate_exact.log" | cut -c1-160 ;;
  run19)
    timeout -k 5 300 python3 benchmarks/prebuild.py "$F" generated/convt_gelu_groupnorm.py generated/convt_gelu_groupnorm_tanh.py \
      generated/convt_gelu_groupnorm_fast.py generated/groupnorm.py generated/conv_gn_tanh_hardswish_res_lse.py \
      > "$OUT/$S/run19_prebuild.log" 2>&1; echo "prebuild exit $?"; tail -1 "$OUT/$S/run19_prebuild.log"
    for t in test_groupnorm test_conv_gn_lse test_convt_gelu_groupnorm; do
      timeout -k 5 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/$t.py 2>&1 | tee "$OUT/$S/run19_$t.log" | tail -1
    done
    parts_fused run19 8 ;;
  *) echo "usage: $0 run1 .." ; exit 2 ;;
esac
