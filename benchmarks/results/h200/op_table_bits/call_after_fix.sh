#!/usr/bin/env bash
# tests/gpu/test_op_table_bits.py again after addcmul's value-1 formula (ATen's pointwise_op_impl: fma(b, c, a)).
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q tests/gpu/test_op_table_bits.py > $R/test_op_table_bits.log 2>&1; echo "bits rc $?: $(tail -1 $R/test_op_table_bits.log)"
