#!/bin/bash
# Call 4: rstd as PyTorch's half GroupNorm takes it (rsqrtf of the float32 variance + eps in the dtype): the bf16
# KernelBench rows it concerns and the half-model GPU tests; then bf16 timings of L2-19 and L2-92 (conv bias in the region).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
F=$L/family_bf16; mkdir -p $F
( timeout 300 python3 -m pytest -q tests/gpu/test_groupnorm.py -k "half" > $L/test_half.txt 2>&1; echo "test exit $?" >> $L/test_half.txt ) &
T=$!
timeout 280 python3 benchmarks/family.py .kb/problems .kb $F --trials 5 --workers 4 --jobs 12 --precisions bf16 --budget 230 \
   --only 21,60,75,88 > $F/family.log 2>&1
grep -E "^L[12]-|prebuild:" $F/family.log
wait $T; tail -2 $L/test_half.txt
echo "checks $(( $(date +%s) - T0 )) s"
B() { timeout 130 python3 benchmarks/bench_problem.py generated/$1.py kgen/specs/references/$2.py --precision bf16 --min-run-time 1 --json $L/bench_$1_bf16.json > $L/bench_$1_bf16.txt 2>&1; echo "$1 exit $?"; tail -n 8 $L/bench_$1_bf16.txt; }
B convt_gelu_groupnorm level2_19_convtranspose2d_gelu_groupnorm
B conv_gn_tanh_hardswish_res_lse level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp
echo "all $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
