#!/usr/bin/env bash
# GPU tests of the re-applied rows-in-half and warp-team sweeps, the kernel choice on small planes; then four
# problems at bf16 (and L2-75 at fp32) checked and timed.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=$OUT/r; mkdir -p $R .build/fam .build/fam32
finish() { cp -r .build/fam .build/fam32 $R/ 2>/dev/null; rm -rf $R/fam/emitted $R/fam32/emitted; tar czf $OUT/results.tar.gz -C $R .; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
(timeout -k 5 430 python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu/test_rows_half.py tests/gpu/test_gn_region_twopass.py > $R/tests_a.log 2>&1; echo "exit $?" >> $R/tests_a.log) &
(timeout -k 5 430 python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu/test_kernel_choice.py tests/gpu/test_autograd_cpp.py tests/gpu/test_faithful.py > $R/tests_b.log 2>&1; echo "exit $?" >> $R/tests_b.log) &
timeout 300 python3 benchmarks/family.py .kb/problems .kb .build/fam --only 37,75,30,62 --precisions bf16 --jobs 12 --workers 4 --budget 280 2>&1 | tee $R/fam_bf16_checks.log | grep -E "^L[12]-|prebuild:|emit:"
timeout 200 python3 benchmarks/family.py .kb/problems .kb .build/fam32 --only 75 --precisions fp32 --jobs 12 --workers 1 --budget 180 2>&1 | tee $R/fam32_checks.log | grep -E "^L[12]-|prebuild:|emit:"
echo "checks at $(( $(date +%s) - T0 )) s"
wait
echo "tests at $(( $(date +%s) - T0 )) s"; tail -15 $R/tests_a.log; tail -15 $R/tests_b.log
LEFT=$(( 560 - ($(date +%s) - T0) ))
timeout $LEFT python3 benchmarks/family.py .kb/problems .kb .build/fam32 --only 75 --precisions fp32 --bench --jobs 12 --workers 1 --resume --budget $(( LEFT - 100 )) 2>&1 | tee $R/fam32_bench.log | grep -E "^L[12]-|bench"
LEFT=$(( 575 - ($(date +%s) - T0) ))
timeout $LEFT python3 benchmarks/family.py .kb/problems .kb .build/fam --only 37,75,30,62 --precisions bf16 --bench --jobs 12 --workers 4 --resume --budget $(( LEFT - 10 )) 2>&1 | tee $R/fam_bf16_bench.log | grep -E "^L[12]-|bench"
echo "done at $(( $(date +%s) - T0 )) s"
