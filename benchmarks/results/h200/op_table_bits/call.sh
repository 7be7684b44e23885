#!/usr/bin/env bash
# The op table's new formulas (addcmul, log2, log10, tan, atan, sinh, cosh) bit for bit against PyTorch; validate of
# tests/ref/unseen/gn_trig_log_addcmul.py (one region of them) at fp32 and bf16.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
X=.devrun/x
python3 -m kgen.cli emit --ref tests/ref/unseen/gn_trig_log_addcmul.py -o $X/trig.py 2> $R/emit.log
( timeout 200 python3 -m pytest -q tests/gpu/test_op_table_bits.py > $R/test_op_table_bits.log 2>&1; echo "bits rc $?: $(tail -1 $R/test_op_table_bits.log)" ) &
timeout 200 python3 benchmarks/prebuild.py -j 8 $X/trig.py > $R/prebuild.log 2>&1; echo "prebuild rc $?"
timeout 150 python3 -m kgen.cli validate $X/trig.py --trials 2 > $R/validate_gn_trig_log_addcmul.log 2>&1; echo "fp32 rc $?"
timeout 150 python3 -m kgen.cli validate $X/trig.py --trials 1 --precision bf16 > $R/validate_gn_trig_log_addcmul_bf16.log 2>&1; echo "bf16 rc $?"
wait
grep -h "verdict\|^RESULT" $R/validate_*.log; grep -E "FAILED|differ" $R/test_op_table_bits.log | head
