#!/usr/bin/env bash
# Element-wise kernels in the model's float16 / bfloat16 (pointwise/pointwise.cuh: inputs, output, dv and the input
# gradients in the storage type). conv2d_gn_input_residual_gate emitted before (old/) and after (new/) the change,
# carried in .build/pw_half: the two files' outputs and gradients compared and their kernels timed (kernel_variants at
# bf16, fp16 and fp32), then tests/gpu/test_pointwise_dtypes.py (its files built first).
# On the GPU machine from the repository root, .kb and .build/pw_half carried:
#   bash benchmarks/results/h200/pointwise_half/call.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/pw_half_out; mkdir -p $R; trap 'tar czf $OUT/pointwise_half.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/pw_half
python3 benchmarks/prebuild_gpu_tests.py .build/pw_tests pointwise_dtypes > /dev/null
timeout 200 python3 benchmarks/prebuild.py -j 16 $B/old/gate.py $B/new/gate.py .build/pw_tests/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for d in bf16 fp16 fp32; do
  timeout 60 python3 benchmarks/kernel_variants.py $B/old/gate.py --file new=$B/new/gate.py --backward --rounds 3 \
    --kernel "kgen::|copy" --dtype $d --json $R/variants_gate_$d.json > $R/variants_gate_$d.log 2>&1 \
    || echo "kernel_variants $d failed"
  grep -E "^(base|new) " $R/variants_gate_$d.log | cut -c1-100
done
echo "timed $(( $(date +%s) - T0 )) s"
timeout $(( 285 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_pointwise_dtypes.py > $R/test_pointwise_dtypes.log 2>&1
echo "pytest rc $?"; tail -3 $R/test_pointwise_dtypes.log
echo "total $(( $(date +%s) - T0 )) s"
