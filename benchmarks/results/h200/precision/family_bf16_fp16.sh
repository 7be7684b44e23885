#!/bin/bash
# The family at bf16 and fp16: emit, kgen validate, KernelBench --precision (verdicts; four problems at a time).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
F=$OUT/family; mkdir -p $F
T0=$(date +%s)
python3 benchmarks/family.py .kb/problems .kb $F --trials 1 --workers 4 --jobs 16 --precisions bf16,fp16 --budget 470 \
  2>&1 | tee $F/family.log | grep -E "^L[12]-|prebuild:|emit:"
echo "family $(( $(date +%s) - T0 )) s"
ls $F
