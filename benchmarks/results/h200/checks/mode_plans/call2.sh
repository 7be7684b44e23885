#!/usr/bin/env bash
# The eval-mode trial on the reference's buffers (L2-11 at a small shape, batch norm running statistics), and the
# batch norm step's running-statistics update against nn.BatchNorm (new GPU test).
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R/v; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git rev-parse --short HEAD >> $R/gpu.txt; git status --short >> $R/gpu.txt
E=.devrun/e2; mkdir -p $E
python3 -m kgen.cli emit --ref kgen/specs/references/level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py -o $E/l2_11.py 2> $R/emit.log
python3 -m kgen.cli emit --ref tests/ref/unseen/gn_training_number.py -o $E/gn_training_number.py 2>> $R/emit.log
s=$(date +%s); timeout 200 python3 benchmarks/prebuild.py -j 16 $E/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
( timeout 280 python3 -m pytest -q tests/gpu/test_batchnorm_running_stats.py > $R/test_batchnorm_running_stats.log 2>&1; echo "bn rc $?: $(tail -1 $R/test_batchnorm_running_stats.log)" ) &
( timeout 200 python3 -m kgen.cli validate $E/l2_11.py --trials 2 --input-shape "[8,64,16,16]" > $R/v/l2_11_small.log 2>&1; echo "l2_11 small rc $?"
  timeout 250 python3 -m kgen.cli validate $E/l2_11.py --trials 1 > $R/v/l2_11.log 2>&1; echo "l2_11 full rc $?" ) &
( timeout 200 python3 -m kgen.cli validate $E/gn_training_number.py --trials 2 > $R/v/gn_training_number.log 2>&1; echo "training_number rc $?" ) &
wait
grep -h -E "verdict|^RESULT" $R/v/*.log
grep -h "eval mode" $R/v/l2_11.log | head -14
