#!/usr/bin/env bash
# The validator's GPU tests in parallel groups (each builds its own extensions; nvcc runs concurrently), for a
# device session with a wall-clock budget. Logs and reports go to $OUT (default: .build/gpu_tests).
#   bash tests/validate/run_gpu_parallel.sh [SECONDS]        each group is interrupted after SECONDS (default 900)
set -u
LIMIT=${1:-900}
OUT=${OUT:-.build/gpu_tests}
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$PWD/.build/ext}
export KGEN_REPORT_DIR=$OUT/reports
mkdir -p "$OUT/reports" "$TORCH_EXTENSIONS_DIR"
V=tests/validate/test_verdicts_gpu.py
R=tests/validate/test_runtime_gpu.py
G=test_generated_file_passes_with_its_own_kernels_at_work
# build every extension at once, in the background: a test reaching a build still under way waits on its lock
for f in generated/*.py tests/validate/files/gpu_*.py.txt tests/validate/files/third_party_groupnorm.py.txt; do
  timeout "$LIMIT" python -c "import sys; from kgen.validate.context import import_file; import_file(sys.argv[1], 'p')" "$f" \
    > "$OUT/prebuild_$(basename "$f").log" 2>&1 &
done
group() {   # name, pytest arguments...
  local name=$1; shift
  timeout -s INT "$LIMIT" python -m pytest -p no:cacheprovider -q -rA -m gpu "$@" > "$OUT/$name.log" 2>&1 &
}
group item2 "$V" -k "index_add or atomics"
group item4_5 "$V" -k "third_party or never_launched"
group cli "$V" -k "cli"
for f in groupnorm.py convt_gelu_groupnorm.py convt_gelu_groupnorm_fast.py convt_gelu_groupnorm_tanh.py \
         conv_gn_tanh_hardswish_res_lse.py; do
  group "gen_${f%.py}" "$V::$G[$f]"
done
group handmade "$R" -k "handmade or variance or emitted or bench or illegal"
group adversarial "$R" -k "adversarial_gpu_file or hanging"
group runtime_table "$R" -k "cpu_runtime_table"
wait
for log in "$OUT"/[!p]*.log; do
  echo "== $(basename "$log"): $(tail -1 "$log")"
done
