#!/usr/bin/env bash
# The re-applied warp-team backward sweeps and half-precision rows backward sums: the GPU tests that run them,
# beside the fp16 family verdicts of the eight problems whose fp16 verdicts were not re-run.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
find .build -path "*ext*" -name lock -print -delete 2>/dev/null | head -5
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=$OUT/r; L=$R/checks; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
finish() { tar czf $OUT/results.tar.gz -C $R .; }
trap finish EXIT
(timeout -k 5 530 python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu/test_gn_region_twopass.py tests/gpu/test_gn_region_cluster.py tests/gpu/test_rows_half.py > $L/twopass_cluster_rows.log 2>&1; echo "exit $?" >> $L/twopass_cluster_rows.log) &
(timeout -k 5 530 python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu/test_gn_region_nhwc.py tests/gpu/test_groupnorm.py tests/gpu/test_region_dtypes.py > $L/nhwc_groupnorm_dtypes.log 2>&1; echo "exit $?" >> $L/nhwc_groupnorm_dtypes.log) &
F=$R/family_fp16; mkdir -p $F
(PYTHONPATH=/tmp/site:$PWD timeout -k 5 540 python3 benchmarks/family.py .kb/problems .kb $F --trials 2 --workers 4 --jobs 8 --budget 470 --only 61,62,75,83,85,88,92,94 --precisions fp16 > $F/family.log 2>&1; echo "exit $?" >> $F/family.log) &
wait
echo "done at $(( $(date +%s) - T0 )) s"
for f in $L/*.log; do echo "== $f"; grep -E "passed|failed|error" $f | tail -3; tail -n 1 $f; done
grep -E "^L[12]-|prebuild:|emit:|exit" $F/family.log
# The calls after it on the same warm machine:
#   FAMILY_ONLY=85,88,92,94 FAMILY_ARGS="--precisions bf16" FAMILY_BUDGET=470 bash benchmarks/device_run.sh family-bench
#   python3 -m kgen.cli tune .kb/problems/level2_37_Matmul_Swish_Sum_GroupNorm.py --precision bf16 \
#     -o tuned_L2-37_bf16.py --json tune_L2-37_bf16.json   (beside tests/gpu/test_gn_region_nhwc.py, test_region_dtypes.py)
