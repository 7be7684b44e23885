#!/bin/bash
# Call 1: how CUDA group_norm rounds at half; the fp32 family verdicts at HEAD; the mixed-precision GPU test.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
timeout 60 python3 .devrun/gn_rounding.py 2>&1 | grep -v Warn | tee $L/gn_rounding.txt
F=$L/family_fp32; mkdir -p $F
( timeout 120 python3 -m pytest -q -x tests/gpu/test_groupnorm.py -k mixed_precision > $L/test_mixed.txt 2>&1; echo "mixed test exit $?" >> $L/test_mixed.txt ) &
python3 benchmarks/family.py .kb/problems .kb $F --trials 5 --workers 4 --jobs 16 --precisions fp32 --budget 480 \
  2>&1 | tee $F/family.log | grep -E "^L[12]-|prebuild:|emit:"
wait
tail -3 $L/test_mixed.txt
echo "all $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
