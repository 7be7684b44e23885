#!/usr/bin/env bash
# The rows kernels with the functors' rounding a template constant, against the same references emitted before it (.devrun/base_*.py: main at f0a3d23; .devrun/new_*.py: the change): the bitwise half-precision suite, kgen validate, kernel times A/B.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/call2.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $R/gpu.txt
python3 benchmarks/prebuild_gpu_tests.py .build/rh rows_half > $R/emit.log 2>&1
timeout 300 python3 benchmarks/prebuild.py -j 16 .devrun/base_L2-*.py .devrun/new_L2-*.py .build/rh/*.py > $R/prebuild.log 2>&1
echo "prebuild exit $? at $(( $(date +%s) - T0 )) s" >> $R/prebuild.log; tail -3 $R/prebuild.log
(timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_rows_half.py > $R/pytest_rows_half.log 2>&1; echo "exit $?" >> $R/pytest_rows_half.log) &
v() { local name=$1; shift; (timeout 150 python3 -m kgen.cli validate "$@" --trials 1 2>&1 | grep -v Warn | tail -5) > $R/validate_$name.log 2>&1; }
v L2-37_fp32 .devrun/new_L2-37.py & v L2-37_bf16 .devrun/new_L2-37.py --precision bf16 & v L2-37_fp16 .devrun/new_L2-37.py --precision fp16 &
v L2-75_bf16 .devrun/new_L2-75.py --precision bf16 & v L2-88_fp32 .devrun/new_L2-88.py & v L2-30_fp16 .devrun/new_L2-30.py --precision fp16 &
wait
for spec in "37 bf16" "37 fp32" "37 fp16" "75 bf16" "88 fp32" "30 bf16" "88 bf16"; do
  set -- $spec
  for mode in fwd bwd; do
    [ $(( $(date +%s) - T0 )) -gt 550 ] && break
    flag=""; [ $mode = bwd ] && flag=--backward
    timeout 60 python3 benchmarks/kernel_variants.py .devrun/base_L2-$1.py --file new=.devrun/new_L2-$1.py --kernel "kgen::" \
      $flag --rounds 3 --dtype $2 --json $R/variants_L2-$1_$2_$mode.json 2>&1 | grep -v Warn | grep -E "^(base|new) " | cut -c1-400 > $R/variants_L2-$1_$2_$mode.log
    echo "== L2-$1 $2 $mode"; cut -c1-90 $R/variants_L2-$1_$2_$mode.log
  done
done
for f in $R/validate_*.log; do echo "== $f"; grep -E "verdict|RESULT" $f; done; tail -3 $R/pytest_rows_half.log
