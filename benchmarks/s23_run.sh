#!/usr/bin/env bash
# Session 23's device calls, by name (the record of what ran; logs under benchmarks/convt_fused/h100_v3/s23/).
#   run1: the state session 22 left (v3.4 and its uncommitted ring-of-2 test case): the wgmma harness's GPU tests,
#         the bench at L2-19's layer, then ncu with per-instruction stall samples (SourceCounters) of the whole kernel
#         with GELU erf and with the identity op at batch 16: where does the epilogue's ~3 ms (GELU erf; ~1 ms
#         identity) go? Its SASS is 21.9 K instructions (the epilogue unrolled 4 ways: aligned or not, dense or not).
#   run2: run1: 37 passed; 5.75 ms (identity 3.83, main loop 2.82, epilogue alone 2.04). ncu: the GELU epilogue's
#         samples 59 % "no instruction" (i-cache: 66.7 M warp instructions, ~4 K a warp a tile, from 300 KB of code);
#         identity's epilogue waits on its stores (mio 34 %, lg 26 %). v3.5: the epilogue through a staging tile in
#         shared memory, a piece of 64 channels x 32 pixels at a time, one rolled loop (4.3 K SASS instructions a
#         kernel), 16-byte stores of whole 64-byte runs. Predicted: GELU epilogue 2.9 -> ~1 ms unhidden, conv +
#         moments 5.75 -> ~3.9 ms; identity 3.83 -> ~3.4. Tests, bench, ncu.
#   run3: run2: 37 passed; 4.47 ms with GELU erf (epilogue alone 2.04 -> 1.32), identity 3.91 (3.83). ncu: the
#         epilogue's GELUs one at a time (3 registers free: the 128 accumulators stay live through the rolled loop),
#         35 instructions a value. Now setmaxnreg (producer 40, consumers 232: ptxas does allocate each branch
#         within its count, the consumers reach R181, no stack) and the moments' erfc on rcp/ex2.approx (no
#         range fix-ups: ~16 instructions a value, was ~23). Predicted: GELU epilogue 1.6 -> ~1.0 ms unhidden,
#         conv + moments 4.47 -> ~3.9. Tests, bench, ncu.
#   run4: run3: 37 passed; 3.75 ms with GELU erf (identity 3.62), main loop alone 2.95 (2.83 before: the producer
#         at 40 registers), wgmma alone 2.03. Shared memory per chunk, counted: the producer's 4-byte copies land
#         16 bytes apart (4-way conflicts: ~1030 wavefronts), its rounding ~515, the wgmma operand reads ~1440: ~3000
#         of the ~3500 cycles a chunk takes at the wgmma-alone rate. Now a warp's copy instruction writes 128
#         contiguous bytes (8 positions x 4 channels: ~258 wavefronts), a warp rounds its own 16-position blocks;
#         producer 56 registers, consumers 224. Predicted: main loop 2.95 -> ~2.4, conv + moments 3.75 -> ~3.2.
#   run5: run4: 37 passed but slower, main loop 4.21 ms: the copies' shared-memory wavefronts did not drop (17.1 M
#         both ways: a 4-byte copy's wavefronts follow its global sectors), its L1 tag requests went 8.3 -> 20.1 M
#         and L2 sectors 20.1 -> 29.6 M (32-byte runs across sector bounds). Back to v3.6's copies, with the
#         producer's TF32 rounding in two integer instructions (cvt.rna is ~6 in SASS: 64 values a thread a chunk)
#         and 56 / 224 registers. Predicted: main loop 2.95 -> ~2.8. Tests, bench, compute-sanitizer memcheck and
#         racecheck on three cases.
#   run6: run5: 37 passed; main loop 2.74 ms (2.95), conv + moments 3.98 (3.75 in run3: epilogue alone 1.33 ->
#         1.42 with 224 consumer registers; the rows are single medians, ~5 % apart run to run); memcheck 0 errors,
#         racecheck 0 hazards. Now `kgen emit convt-gelu-groupnorm --conv fused` (generated/
#         convt_gelu_groupnorm_fused.py): the wgmma conv + moments, then the normalise sweep; backward the
#         GroupNorm kernels then cuDNN's conv backward. kgen validate --bench at 1e-2 (float64 arbitration),
#         KernelBench's evaluator (fp32, 5 trials). Predicted: forward ~5.3 ms (fast 6.9, compile 8.3),
#         forward+backward ~24 (exact mode's backward, ~18.5 ms).
#   run7: run6: kgen validate PASS at 1e-2 (float64 arbitration), forward 5.46 ms (eager 12.32, compile 8.40),
#         forward+backward 23.70 (34.06, 32.46); KernelBench's evaluator FAILS at 1e-4: max |d| 2.8-3.3e-4, 1125 of
#         545 M values outside, mean 3e-6. Where do kgen's z and cuDNN's differ at L2-19's shape (1.2e-4, against
#         1.8e-6 at a small one)? cuDNN and kgen against float64 convs of two samples with the operands rounded
#         each way (nearest ties away / ties even / truncated), and the places of the largest differences.
#   run8: run7: cuDNN at L2-19's shape rounds both operands to nearest, ties to EVEN (2.5e-6 from float64 of
#         operands so rounded; kgen, ties away, 2.8e-6 from its own and 4.6e-5 from cuDNN's): the 5.9e-5 gaps in z
#         are ties (torch.rand's inputs tie 1 in 8192), spread evenly (no tile boundary). kgen now rounds ties to
#         even. Predicted: |kgen - cuDNN| on z ~5e-6, KernelBench's 1e-4 passes. Harness tests, the probe again,
#         validate --bench, KernelBench's evaluator, the fused model's GPU tests (7 shapes, determinism).
#   run9: run8: |kgen - cuDNN| on z 1.25e-6; KernelBench 5/5 at 1e-4 (5.7 ms vs 12.4); validate PASS, forward 5.47 ms
#         (compile 8.24), forward+backward 23.84 (31.92); 9 fused-model GPU tests pass. The producer's copies: 3
#         chunks in flight a thread where the ring has 4 stages (a variant: the default keeps 2), against the main
#         loop's 2.74 ms (wgmma alone 1.97), its stalls long-scoreboard waits on the copies. Predicted: if latency
#         bounds it, conv + moments -0.3 to -0.5 ms; if the copies' throughput does, nothing. Tests (with the
#         variant), bench (both, and the default timed twice), memcheck and racecheck.
#   run10: run9: 3 in flight 4.51 ms against 3.87-3.92 (kept at 2); 47 passed; memcheck, racecheck clean. kgen
#         validate of the fused file at three small shapes (--init-args, --input-shape): its distance to float64
#         against the reference's, for the header's note.
#   run11: run10: at small shapes cuDNN picks float32 algorithms (2e-6 from float64) while kgen's conv stays TF32
#         (2.8e-3): outputs within 1e-2, but parameter gradients up to ~2 % off (2x64x32x32: conv bias 0.088 of
#         ~5), so validate fails them even at 1e-2. The fused file now follows torch.backends.cudnn.allow_tf32
#         (off: the exact path). The fused model's GPU tests with TF32 on and off, determinism with it on, and
#         validate --no-tf32 at 2x64x32x32 (the exact path: expect PASS at 1e-4).
#   run12: run11: 16 passed; validate --no-tf32 PASS at 1e-4 (the exact path). The final file, once more:
#         validate --bench at L2-19's shape and KernelBench's evaluator (fp32, 5 trials).
#   run13: run12: validate PASS (forward 5.50 ms, fwd+bwd 23.85), KernelBench 5/5. The committed file's GPU tests
#         once more (its Python changed since: docstring, summary, a build-flag guard), and a probe of cuDNN's
#         conv backward at L2-19's shape, NCHW against channels-last tensors, for the backward's plan.
#   run14: run13: 16 passed; cuDNN's conv backward at L2-19's shape 8.72 ms on channels-last tensors against
#         14.71 on NCHW, bitwise the same gradients. The fused file's backward now hands cuDNN channels-last copies
#         (core/layout.cuh) and turns grad_x back. Predicted: backward 18.4 -> ~16.9 ms, forward+backward 23.85 ->
#         ~22.3; gradients at L2-19's shape as before. GPU tests, validate --bench.
#   run15: run14: backward 16.6 ms, forward+backward 22.07 (compile 31.95), validate PASS, 16 fused GPU tests. After
#         the pre-stop review (the epilogue's fragment place hoisted out of its loop; a comment reworded, so that no
#         line of the emitted file reads 'except X'): the harness (tests, bench), the fused model's GPU tests and
#         KernelBench's evaluator on the committed file.
set -u
S=s23
source "$(dirname "$0")/convt_fused_helpers.sh"
case "${1:-}" in
  run1)
    nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
    harness run1
    ncu_source run1_ncu_gelu 0
    ncu_source run1_ncu_identity 1 ;;
  run2|run3|run4)
    harness "$1"
    ncu_source "$1_ncu_gelu" 0 ;;
  run5|run9)
    harness "$1"
    sanitize_wgmma "$1" ;;
  run6|run12)
    prebuild_fused "$1"; validate_fused "$1"; kb_eval_fused "$1" ;;
  run7)
    build_wgmma run7
    timeout -k 5 200 python3 benchmarks/convt_rounding_probe.py 128 2>&1 | tee "$OUT/s23/run7_rounding.log" | tail -30 ;;
  run8)
    build_wgmma run8 &
    prebuild_fused run8
    wait
    timeout -k 5 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 | tail -2
    timeout -k 5 100 python3 benchmarks/convt_rounding_probe.py 128 > "$OUT/s23/run8_rounding.log" 2>&1
    head -2 "$OUT/s23/run8_rounding.log"; grep -E "x (rna|rne) +w (rna|rne)" "$OUT/s23/run8_rounding.log"
    validate_fused run8; kb_eval_fused run8; pytest_fused run8 ;;
  run10)
    prebuild_fused run10
    for shape in "[64, 64, 3, 1, 8, 8]|[2, 64, 32, 32]" "[48, 96, 4, 1, 8, 12]|[3, 48, 17, 23]" "[3, 24, 5, 1, 8, 6]|[1, 3, 40, 33]"; do
      init=${shape%%|*}; input=${shape##*|}; name=$(echo "$input" | tr -dc '0-9_,' | tr ',' 'x')
      timeout -k 5 120 python3 -m kgen.cli validate "$F" --atol 1e-2 --rtol 1e-2 --init-args "$init" --input-shape "$input" \
        > "$OUT/s23/run10_validate_$name.log" 2>&1; echo "validate $init $input exit $?"
      grep -E "^fp64|KernelBench verdict|^RESULT" "$OUT/s23/run10_validate_$name.log" | cut -c1-170
    done ;;
  run11)
    prebuild_fused run11; pytest_fused run11
    timeout -k 5 120 python3 -m kgen.cli validate "$F" --no-tf32 --init-args "[64, 64, 3, 1, 8, 8]" \
      --input-shape "[2, 64, 32, 32]" > "$OUT/s23/run11_validate_no_tf32.log" 2>&1; echo "validate --no-tf32 exit $?"
    grep -E "kernels: forward|KernelBench verdict|^RESULT" "$OUT/s23/run11_validate_no_tf32.log" | cut -c1-200 ;;
  run13)
    prebuild_fused run13; pytest_fused run13
    timeout -k 5 150 python3 benchmarks/convt_backward_probe.py 2>&1 | tee "$OUT/s23/run13_backward_probe.log" | tail -9 ;;
  run14)
    prebuild_fused run14; pytest_fused run14; validate_fused run14 ;;
  run15)
    harness run15
    prebuild_fused run15; pytest_fused run15; kb_eval_fused run15 ;;
  *) echo "usage: $0 run1 .. run15" ; exit 2 ;;
esac
