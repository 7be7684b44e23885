# The steps the convt_fused device scripts (benchmarks/s23_run.sh, s24_run.sh) repeat, as functions. Source it with S
# set to the session's log folder name (s23, s24: logs go to $OUT/$S/). Each function's first argument names its logs.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT/$S"
build_wgmma() {
  timeout -k 5 300 python3 -c "from tests.gpu import convt_wgmma_harness as H; H.build_extension()" \
    > "$OUT/$S/$1_build.log" 2>&1; echo "build exit $?"; grep -E "error|Used [0-9]+ registers" "$OUT/$S/$1_build.log" | head -8
}
sanitize_wgmma() {  # compute-sanitizer memcheck and racecheck on three of the harness's cases
  for tool in memcheck racecheck; do
    timeout -k 5 150 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
      tests/gpu/test_convt_wgmma.py -k "gelu_erf and (2x64x20x19 or 1x8x6x100 or 2x48x7x8)" > "$OUT/$S/$1_$tool.log" 2>&1
    echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/$S/$1_$tool.log" | tail -3
  done
}
sanitize_tests() {  # name, pytest -k of tests/gpu/test_convt_wgmma.py: compute-sanitizer memcheck and racecheck on them
  for tool in memcheck racecheck; do
    timeout -k 5 200 compute-sanitizer --tool $tool python3 -m pytest -q -x -p no:cacheprovider \
      tests/gpu/test_convt_wgmma.py -k "$2" > "$OUT/$S/$1_$tool.log" 2>&1
    echo "$tool exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/$S/$1_$tool.log" | tail -3
  done
}
ncu_source() {  # name, variant: stall samples per SASS instruction of one launch at batch 16
  timeout -k 5 240 ncu --kernel-name regex:convt_wgmma_kernel --launch-skip 1 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section SourceCounters --section InstructionStats \
    -o "$OUT/$S/$1" python3 benchmarks/convt_wgmma_once.py 16 "$2" > "$OUT/$S/$1.log" 2>&1
  echo "ncu $1 exit $?"
  ncu -i "$OUT/$S/$1.ncu-rep" --page details > "$OUT/$S/$1_details.txt" 2>&1
  grep -iE "Duration|Tensor|DRAM Through|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Stall|No Eligible" "$OUT/$S/$1_details.txt" | head -30
  ncu -i "$OUT/$S/$1.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip -9 > "$OUT/$S/$1_source.csv.gz"
  rm -f "$OUT/$S/$1.ncu-rep"
}
F=generated/convt_gelu_groupnorm_fused.py
harness() {  # the wgmma harness: build, its GPU tests, the bench at L2-19's layer
  build_wgmma "$1"
  timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 | tail -3
  timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tail -16
}
prebuild_fused() {
  timeout -k 5 300 python3 benchmarks/prebuild.py "$F" > "$OUT/$S/$1_prebuild.log" 2>&1; echo "prebuild exit $?"
}
pytest_fused() {  # the fused model's GPU tests: against float64 at 7 shapes, TF32 on and off; determinism
  timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
    -k "fused_conv_against or (deterministic and fused)" 2>&1 | tee "$OUT/$S/$1_pytest_fused.log" | tail -3
}
validate_fused() {  # kgen validate --bench at L2-19's shape, 1e-2 (TF32) with float64 arbitration
  timeout -k 5 420 python3 -m kgen.cli validate "$F" --bench --atol 1e-2 --rtol 1e-2 --json "$OUT/$S/$1_validate.json" \
    > "$OUT/$S/$1_validate.log" 2>&1; echo "validate exit $?"
  grep -E "^(fp64|  forward|  backward|  forward_backward|KernelBench|kgen verdict|RESULT)|convt_wgmma_kernel|_kernel " \
    "$OUT/$S/$1_validate.log" | cut -c1-200 | head -40
}
kb_eval_fused() {  # KernelBench's own evaluator, fp32, 5 trials (carry .kb)
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl
  PYTHONPATH=/tmp/site:. timeout -k 5 300 python3 .kb/kb_eval.py "$F" .kb/problems/level2_19_ConvTranspose2d_GELU_GroupNorm.py \
    --trials 5 > "$OUT/$S/$1_kb_eval.log" 2>&1; echo "kb_eval exit $?"; tail -1 "$OUT/$S/$1_kb_eval.log" | cut -c1-500
}
build_both() {  # the wgmma harness and the fused file, built side by side
  build_wgmma "$1" &
  timeout -k 5 300 python3 benchmarks/prebuild.py "$F" > "$OUT/$S/$1_prebuild.log" 2>&1; echo "prebuild exit $?"
  wait
}
pytest_wgmma() {  # the harness's GPU tests
  timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_wgmma.py 2>&1 \
    | tee "$OUT/$S/$1_pytest_wgmma.log" | tail -3
}
bench_wgmma() {  # the harness's bench at L2-19's layer; $2: lines of its output to show
  timeout -k 5 150 python3 tests/gpu/test_convt_wgmma.py --bench 2>&1 | tee "$OUT/$S/$1_bench.log" | tail -"$2"
}
pytest_fused_cl() {  # pytest_fused's tests and the channels-last GroupNorm backward's
  timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py \
    -k "channels_last or fused_conv_against or fused_conv_forward_without or (deterministic and fused)" 2>&1 | tee "$OUT/$S/$1_pytest_fused.log" | tail -3
}
parts_fused() {  # benchmarks/convt_fused_backward_parts.py; $2: lines of its output to show
  timeout -k 5 150 python3 benchmarks/convt_fused_backward_parts.py 2>&1 | tee "$OUT/$S/$1_parts.log" | tail -"$2"
}
