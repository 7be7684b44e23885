#!/usr/bin/env bash
# call 1: the half-precision window/channel kernels' GPU tests, family verdicts bf16/fp16 for 11,85,92,
# and verdicts of the GroupNorm32 / same-value-ops references under autocast / bf16.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
finish() { tar czf $OUT/call1.tar.gz -C $R . ; }
trap finish EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; git log --oneline -1 >> $R/gpu.txt
(timeout -k 5 540 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_twopass.py \
   -k 'half_storage or half_channel_and_window' -x > $R/pytest_half.log 2>&1; echo "exit $?" >> $R/pytest_half.log) &
(timeout -k 5 540 python3 benchmarks/family.py .kb/problems .kb $R/family --only 11,85,92 --precisions bf16,fp16 \
   --trials 2 --workers 3 --jobs 8 > $R/family.log 2>&1; echo "exit $?" >> $R/family.log) &
(
 mkdir -p .build/v
 python3 -m kgen.cli emit --ref tests/ref/unseen/gn32_float_then_type_back.py -o .build/v/gn32a.py
 python3 -m kgen.cli emit --ref tests/ref/unseen/gn32_read_by_conv_and_residual.py -o .build/v/gn32b.py
 python3 -m kgen.cli emit --ref tests/ref/references/gn_shrinks_expit_same_value_ops.py -o .build/v/shrink.py
 python3 benchmarks/prebuild.py -j 3 .build/v/gn32a.py .build/v/gn32b.py .build/v/shrink.py
 for f in gn32a gn32b; do
   for a in "" "--autocast bf16" "--autocast fp16" "--precision bf16"; do
     echo "== $f $a"; timeout 200 python3 -m kgen.cli validate .build/v/$f.py --trials 2 $a 2>&1 | tail -12
   done
 done
 for a in "--precision bf16" "--precision fp16"; do
   echo "== shrink $a"; timeout 200 python3 -m kgen.cli validate .build/v/shrink.py --trials 2 $a 2>&1 | tail -12
 done
) > $R/gn32.log 2>&1 &
wait
tail -5 $R/pytest_half.log; grep -E "^L[12]-|exit" $R/family.log; grep -E "^==|verdict|FAIL" $R/gn32.log
