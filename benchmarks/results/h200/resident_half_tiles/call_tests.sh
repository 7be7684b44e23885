#!/usr/bin/env bash
# The resident kernels' tiles in x's own float16 / bfloat16 (groupnorm/resident/: cp.async of the 2-byte values into a
# 2-byte tile, converted where a pass reads it; a float32 work tile where the forward writes one). Builds every file the
# calls use: the files emitted before (old/) and after (new/) the change for L2-11 and four corpus references whose
# GroupNorm slices fit the resident tiles, carried in .build/rs, and the files of tests/gpu/test_resident_half.py,
# test_region_dtypes.py and test_rows_half.py; then runs those three test files. call_checks.sh follows on the same
# warm machine (its builds kept). On the GPU machine from the repository root, .kb and .build/rs carried:
#   bash benchmarks/results/h200/resident_half_tiles/call_tests.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/rt_out; mkdir -p $R; trap 'tar czf $OUT/tests.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
python3 benchmarks/prebuild_gpu_tests.py .build/rt_tests resident_half dtypes rows_half > /dev/null
timeout 400 python3 benchmarks/prebuild.py -j 16 .build/rt_tests/*.py .build/rs/new/*.py .build/rs/old/*.py \
  > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"; tail -3 $R/prebuild.log | cut -c1-200
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_resident_half.py \
  tests/gpu/test_region_dtypes.py tests/gpu/test_rows_half.py > $R/tests.log 2>&1
echo "pytest rc $?"; grep -E "passed|failed|Error" $R/tests.log | tail -8 | cut -c1-300
echo "total $(( $(date +%s) - T0 )) s"
