#!/bin/bash
# Call 3: where PyTorch adds a conv's / linear's bias at half precision (bitwise), L2-60's statistics straddles; the
# family at bf16 with conv biases peeled into the regions (kgen validate + KernelBench --precision bf16, 5 trials).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
F=$L/family_bf16; mkdir -p $F
python3 benchmarks/family.py .kb/problems .kb $F --trials 5 --workers 4 --jobs 16 --precisions bf16 --budget 420 \
   > $F/family.log 2>&1 &
P=$!
timeout 150 python3 .devrun/bias_and_straddle.py .kb/problems/level2_60_ConvTranspose3d_Swish_GroupNorm_HardSwish.py 2>&1 | grep -v Warn | tee $L/bias_and_straddle.txt
wait $P
grep -E "^L[12]-|prebuild:" $F/family.log
echo "all $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
