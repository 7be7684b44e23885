#!/usr/bin/env bash
# The batch norm step in float16 / bfloat16 as landed (one unit count for every storage type): L2-11's step kernels
# against the file emitted before the change (kernel_variants, bf16 and fp32, outputs and gradients compared), then
# tests/gpu/test_bn_train.py whole (its files built first).
# On the GPU machine from the repository root, .kb and .build/bn_half carried:
#   bash benchmarks/results/h200/bn_half/call_tests.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/bn_half_out; mkdir -p $R; trap 'tar czf $OUT/bn_half_tests.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/bn_half
python3 benchmarks/prebuild_gpu_tests.py .build/bn_tests bn_train > /dev/null
timeout 300 python3 benchmarks/prebuild.py -j 16 $B/old/l2_11.py $B/new/l2_11.py .build/bn_tests/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for d in bf16 fp32; do
  timeout 90 python3 benchmarks/kernel_variants.py $B/old/l2_11.py --file new=$B/new/l2_11.py --backward --rounds 3 \
    --kernel "kgen::|copy|add|elementwise|reduce" --dtype $d --json $R/variants_l2_11_$d.json \
    > $R/variants_l2_11_$d.log 2>&1 || echo "kernel_variants $d failed"
  grep -E "^(base|new) " $R/variants_l2_11_$d.log | cut -c1-100
done
echo "timed $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_bn_train.py > $R/test_bn_train.log 2>&1
echo "pytest rc $?"; tail -3 $R/test_bn_train.log
echo "total $(( $(date +%s) - T0 )) s"
