#!/bin/bash
# The family at bf16 (the problems not yet run, the KernelBench failures, L2-30's cliff) and fp16 (the rest).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
T0=$(date +%s)
F=$OUT/bf16; mkdir -p $F
python3 benchmarks/family.py .kb/problems .kb $F --trials 1 --workers 4 --jobs 16 --precisions bf16 --budget 300 \
  --only 11,21,23,30,37,60,62,75,83,85,88,92,94 2>&1 | tee $F/family.log | grep -E "^L[12]-|prebuild:|emit:"
echo "bf16 $(( $(date +%s) - T0 )) s"
G=$OUT/fp16; mkdir -p $G
python3 benchmarks/family.py .kb/problems .kb $G --trials 1 --workers 4 --jobs 16 --precisions fp16 --budget $(( 480 - ($(date +%s) - T0) )) \
  --only 23,37,62,75,83,85,88,92,94 2>&1 | tee $G/family.log | grep -E "^L[12]-|prebuild:|emit:"
echo "fp16 $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf family.tgz bf16 fp16 && rm -rf bf16 fp16
