#!/usr/bin/env bash
# kgen validate (one trial) of instance_norm_style_mid emitted with the resident backward's block teams.
# On the GPU machine from the repository root, .kb carried:
#   bash benchmarks/results/h200/cliffs/resident_backward_small/call_validate.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/rbv; mkdir -p $R; trap 'cp $R/*.log $OUT/ 2>/dev/null' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
python3 -m kgen.cli emit --ref tests/corpus/instance_norm_style_mid.py -o $R/insm.py 2>/dev/null
grep -c "p.tpc = block" $R/insm.py
timeout 170 python3 -m kgen.cli validate $R/insm.py --trials 1 > $R/validate_instance_norm_style_mid.log 2>&1
echo "validate rc $? $(( $(date +%s) - T0 )) s"; grep -E "verdict|RESULT" $R/validate_instance_norm_style_mid.log
