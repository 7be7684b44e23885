#!/usr/bin/env bash
# Session 17's device calls, by name (the record of what ran; logs under benchmarks/h100/s17/).
#   run2: the mish formula (core/ops.cuh) against PyTorch's, A/B at L2-94's rows kernels; its op test, the
#         resident tests, L2-94 checked and timed.
#   run3: mish's divisions as __fdividef (its op test, printing both formulas' errors); the two-pass backward's
#         16-byte sweeps and pipelined kernel on odd planes (scalar ends): the two-pass, cluster and resident
#         tests, L2-60 A/B (pipelined against the sweeps), the family problems they touch checked, rates.
#   run4: A/Bs: L2-60 the sweeps and sigmoid's division as __fdividef; L2-21 the latter; L2-19 the pipelined
#         kernel without the scalar ends (what it was before run3); L2-60's rates and timings.
#   run5: sigmoid and SiLU's divisions as __fdividef, odd planes left to the sweeps: the op tests, the two-pass,
#         cluster and resident tests, the own references with those ops, the family problems with them checked,
#         their rates and timings (the call ran out of its 600 s in the checks: run6 has the rest).
#   run6: the op tests again (SiLU's gradient held on its terms' scale), the own reference the checks left
#         unrun, the rates and timings of L2-21, 60, 37 and 88.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kgen-out}
case "${1:-}" in
  run2)
    timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_region_ops.py > "$OUT/pytest_region_ops.log" 2>&1
    echo "exit code: $?" >> "$OUT/pytest_region_ops.log"; tail -n 3 "$OUT/pytest_region_ops.log"
    old_value='  return a * (n / (n + 2.f));'
    old_grad='  return (n + 4.f * a * e * (1.f + e) / d) / d;'
    pytorch="pytorch_formula:${old_value}=>  return a * tanhf(log1pf(e));|||${old_grad}=>  const float t = tanhf(log1pf(e)); return t + a * (1.f / (1.f + expf(-a))) * (1.f - t * t);"
    fdiv="fdividef:${old_value}=>  return a * __fdividef(n, n + 2.f);|||${old_grad}=>  const float r = __fdividef(1.f, d); return (n + 4.f * a * e * (1.f + e) * r) * r;"
    S16_AB=94 S16_TESTS= S16_KERNEL='rows_|column_sum' S16_VARIANTS_94="$pytorch"$'\n'"$fdiv" bash benchmarks/device_run.sh s16
    S14_FAMILY=94 S14_K=no_such_test S14_RATES=94 S14_BENCH=94 S14_BUDGET=150 bash benchmarks/device_run.sh s14 ;;
  run3)
    timeout -k 5 300 python3 -m pytest -q -s -rf -p no:cacheprovider tests/gpu/test_region_ops.py > "$OUT/pytest_region_ops.log" 2>&1
    echo "exit code: $?" >> "$OUT/pytest_region_ops.log"; grep -E "mish|passed|failed" "$OUT/pytest_region_ops.log"
    S16_AB=60 S16_TESTS= bash benchmarks/device_run.sh s16
    S14_FAMILY=60,94,19,35,27 S14_CHECK_BUDGET=420 S14_RATES=L1-35,19,21,60,83,94 bash benchmarks/device_run.sh s14 ;;
  run4)
    sweeps='sweeps:constexpr bool kPipelinedBackward = true;=>constexpr bool kPipelinedBackward = false;'
    sig='sigmoid_fdividef:float sigmoidf(float a) { return 1.f / (1.f + expf(-a)); }=>float sigmoidf(float a) { return __fdividef(1.f, 1.f + expf(-a)); }'
    span='const ChunkSpan<W> span(b.plane * shape.plane + b.begin, b.count);  // scalar ends on odd planes'
    nospan="aligned_only:${span}=>struct { int head; int packs; __device__ int ends() const { return 0; } __device__ int end_at(int k) const { return k; } } span{0, static_cast<int>(b.count / W)};"
    S16_AB="60 21 19" S16_TESTS= S16_VARIANTS_60="$sweeps"$'\n'"$sig" S16_VARIANTS_21="$sig" S16_VARIANTS_19="$nospan" \
      bash benchmarks/device_run.sh s16
    S14_CHECKS= S14_RATES=60 S14_BENCH=60 bash benchmarks/device_run.sh s14 ;;
  run5)
    timeout -k 5 300 python3 -m pytest -q -s -rf -p no:cacheprovider tests/gpu/test_region_ops.py > "$OUT/pytest_region_ops.log" 2>&1
    echo "exit code: $?" >> "$OUT/pytest_region_ops.log"; grep -E "ulp|passed|failed" "$OUT/pytest_region_ops.log"
    S14_FAMILY=21,60,37,88 S14_CHECK_BUDGET=420 S14_REF_K="zoo or swish or sigmoid or gate" S14_RATES=21,60,37,88 \
      S14_BENCH=21,60,37,88 S14_BUDGET=240 bash benchmarks/device_run.sh s14 ;;
  run6)
    P=$OUT/run6; mkdir -p "$P"
    (timeout -k 5 300 python3 -m pytest -q -s -rf -p no:cacheprovider tests/gpu/test_region_ops.py > "$P/pytest_region_ops.log" 2>&1
     echo "exit code: $?" >> "$P/pytest_region_ops.log") &
    (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "rank1" > "$P/pytest_ref.log" 2>&1
     echo "exit code: $?" >> "$P/pytest_ref.log") &
    (python3 benchmarks/kernel_rates.py .kb/problems .build/rates_s17 --build-only --jobs 6 --only 21,60,37,88 > "$P/rates_build.log" 2>&1) &
    wait; grep -E "ulp|passed|failed" "$P/pytest_region_ops.log"; tail -n 2 "$P/pytest_ref.log"
    S14_CHECKS= S14_RATES=21,60,37,88 S14_BENCH=21,60,37,88 S14_BUDGET=240 bash benchmarks/device_run.sh s14 ;;
  *) echo "usage: $0 run2|run3|run4|run5|run6" >&2; exit 2 ;;
esac
