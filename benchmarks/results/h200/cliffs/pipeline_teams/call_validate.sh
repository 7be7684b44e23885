#!/usr/bin/env bash
# kgen validate (one trial) of resnet_gn_bottleneck_large, whose (32, 1024, 28, 28) region's backward now runs the
# pipelined kernel with items of 4 planes. On the GPU machine from the repository root, .kb carried:
#   bash benchmarks/results/h200/cliffs/pipeline_teams/call_validate.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/ptv; mkdir -p $R; trap 'cp $R/*.log $OUT/ 2>/dev/null' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
python3 -m kgen.cli emit --ref tests/corpus/resnet_gn_bottleneck_large.py -o $R/resnet.py 2>/dev/null
timeout 500 python3 -m kgen.cli validate $R/resnet.py --trials 1 > $R/validate_resnet_gn_bottleneck_large.log 2>&1
echo "validate rc $? $(( $(date +%s) - T0 )) s"; grep -E "verdict|RESULT|backward_pipeline" $R/validate_resnet_gn_bottleneck_large.log
