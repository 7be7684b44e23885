#!/usr/bin/env bash
# call 3: GPU tests (nhwc, groupnorm, region dtypes); the validator's float64 copy on references that cast
# (GroupNorm32, .float() at the end); compute-sanitizer memcheck+racecheck of every kernel family at bf16.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
finish() { tar czf $OUT/call3.tar.gz -C $R . ; }
trap finish EXIT
T0=$(date +%s)
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt; git log --oneline -1 >> $R/gpu.txt
(timeout -k 5 530 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_nhwc.py tests/gpu/test_groupnorm.py \
   tests/gpu/test_region_dtypes.py > $R/pytest_nhwc_gn_dtypes.log 2>&1; echo "exit $?" >> $R/pytest_nhwc_gn_dtypes.log) &
(
 mkdir -p .build/v
 python3 -m kgen.cli emit --ref tests/ref/unseen/gn32_float_then_type_back.py -o .build/v/gn32a.py
 python3 -m kgen.cli emit --ref tests/ref/unseen/gn32_read_by_conv_and_residual.py -o .build/v/gn32b.py
 python3 -m kgen.cli emit --ref tests/ref/references/gn_shrinks_expit_same_value_ops.py -o .build/v/shrink.py
 python3 benchmarks/prebuild.py -j 3 .build/v/gn32a.py .build/v/gn32b.py .build/v/shrink.py
 for f in gn32a gn32b; do
   for a in "" "--autocast bf16" "--autocast fp16" "--precision bf16"; do
     echo "== $f $a"; timeout 200 python3 -m kgen.cli validate .build/v/$f.py --trials 2 $a 2>&1 | grep -v Warn | tail -14
   done
 done
 for a in "--precision bf16" "--precision fp16"; do
   echo "== shrink $a"; timeout 200 python3 -m kgen.cli validate .build/v/shrink.py --trials 2 $a 2>&1 | grep -v Warn | tail -14
 done
) > $R/casts.log 2>&1 &
(SANITIZE_PRECISION=bf16 SANITIZE_TOOLS="memcheck racecheck" SANITIZE_JOBS=8 SANITIZE_DEADLINE=$((T0+540)) \
   bash benchmarks/sanitize.sh $R/sanitize_bf16 $(python3 benchmarks/reliability_families.py targets) > $R/sanitize.log 2>&1) &
wait
tail -4 $R/pytest_nhwc_gn_dtypes.log; grep -E "^==|verdict|RESULT" $R/casts.log; tail -25 $R/sanitize_bf16/summary.txt
