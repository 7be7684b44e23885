#!/usr/bin/env bash
# The batch norm step's divider shared with the resident kernels (a Linear -> BatchNorm1d -> GroupNorm file did not
# build: FastDiv ambiguous beside the rows kernels): test_bn_train, and kgen validate (with its eval-mode trial) of
# the own references with a batch norm and the changed goldens.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R/v; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git rev-parse --short HEAD >> $R/gpu.txt; git status --short >> $R/gpu.txt
E=.devrun/e3; mkdir -p $E
for f in convt_bn_tanh_maxpool_gn_odd linear_bn1d_noaffine_relu_gn conv3d_bn_silu_scale_avgpool_gn; do
  python3 -m kgen.cli emit --ref tests/ref/references/$f.py -o $E/$f.py 2>> $R/emit.log; done
cp generated/ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py $E/l2_11.py
s=$(date +%s); timeout 240 python3 benchmarks/prebuild.py -j 16 $E/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
( timeout 300 python3 -m pytest -q tests/gpu/test_bn_train.py > $R/test_bn_train.log 2>&1; echo "bn_train rc $?: $(tail -1 $R/test_bn_train.log)" ) &
( for f in convt_bn_tanh_maxpool_gn_odd linear_bn1d_noaffine_relu_gn conv3d_bn_silu_scale_avgpool_gn; do
    timeout 150 python3 -m kgen.cli validate $E/$f.py --trials 2 > $R/v/$f.log 2>&1; echo "$f rc $?"; done ) &
( timeout 250 python3 -m kgen.cli validate $E/l2_11.py --trials 1 --ref kgen/specs/references/level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py > $R/v/l2_11.log 2>&1; echo "l2_11 rc $?" ) &
wait
grep -H -E "^RESULT" $R/v/*.log
grep -E "passed|failed|Error" $R/test_bn_train.log | tail -5
