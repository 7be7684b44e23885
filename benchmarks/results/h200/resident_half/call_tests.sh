#!/usr/bin/env bash
# The resident kernels on the model's float16 / bfloat16 (groupnorm/resident/: x, out, dout and dx in the storage type,
# the tile converted to float on its way into shared memory). Builds every file the calls use: the files emitted
# before (old/) and after (new/) the change for L2-11 and five corpus references whose GroupNorm slices fit the resident
# tiles, carried in .build/rh, and the files of tests/gpu/test_resident_half.py and test_region_dtypes.py; then runs
# those two test files. call_checks.sh follows on the same warm machine (its builds kept).
# On the GPU machine from the repository root, .kb and .build/rh carried:
#   bash benchmarks/results/h200/resident_half/call_tests.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/rh_out; mkdir -p $R; trap 'tar czf $OUT/resident_half_tests.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/rh
python3 benchmarks/prebuild_gpu_tests.py .build/rh_tests resident_half dtypes > /dev/null
timeout 400 python3 benchmarks/prebuild.py -j 16 .build/rh_tests/*.py $B/new/*.py $B/old/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"; tail -3 $R/prebuild.log | cut -c1-200
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q -x tests/gpu/test_resident_half.py \
  tests/gpu/test_region_dtypes.py > $R/tests.log 2>&1
echo "pytest rc $?"; tail -5 $R/tests.log | cut -c1-300
echo "total $(( $(date +%s) - T0 )) s"
