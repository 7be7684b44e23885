#!/usr/bin/env bash
# The batch norm step's kernels in the model's float16 / bfloat16 (batchnorm/: x, out, the extremes, dout and dx in the
# storage type; in half precision the peeled convolution bias added by the kernels, rounded as PyTorch rounds it).
# L2-11 emitted before (old/) and after (new/) the change, carried in .build/bn_half with the three references that
# have a batch norm step: the two files' outputs and gradients compared and their kernels timed (kernel_variants, bf16,
# fp16, fp32), tests/gpu/test_bn_train.py (its files emitted and built first), kgen validate at bf16 / fp16 / fp32,
# then kgen / eager / torch.compile at bf16 (bench_problem) for both files.
# On the GPU machine from the repository root, .kb and .build/bn_half carried:
#   bash benchmarks/results/h200/bn_half/call.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/bn_half_out; mkdir -p $R; trap 'tar czf $OUT/bn_half.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/bn_half
python3 benchmarks/prebuild_gpu_tests.py .build/bn_tests bn_train > /dev/null
timeout 300 python3 benchmarks/prebuild.py -j 16 $B/old/*.py $B/new/*.py .build/bn_tests/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
KV="timeout 90 python3 benchmarks/kernel_variants.py $B/old/l2_11.py --file new=$B/new/l2_11.py --backward --rounds 3"
for d in bf16 fp16 fp32; do
  $KV --kernel "kgen::|copy|add|elementwise|reduce" --dtype $d --json $R/variants_l2_11_$d.json \
    > $R/variants_l2_11_$d.log 2>&1 || echo "kernel_variants $d failed"
  grep -E "max\|diff\||^(base|new) " $R/variants_l2_11_$d.log | cut -c1-120
done
echo "timed $(( $(date +%s) - T0 )) s"
timeout 200 python3 -m pytest -q tests/gpu/test_bn_train.py > $R/test_bn_train.log 2>&1 &
V="timeout 200 python3 -m kgen.cli validate --trials 1"
validate() {   # name log-suffix extra...
  local n=$1 s=$2; shift 2
  $V $B/new/$n.py "$@" > $R/validate_$n$s.log 2>&1; echo "validate $n$s rc $?"
}
validate l2_11 _bf16 --precision bf16 &
validate l2_11 _fp16 --precision fp16 &
validate l2_11 _fp32 &
wait
for n in conv3d_bn_silu_scale_avgpool_gn convt_bn_tanh_maxpool_gn_odd linear_bn1d_noaffine_relu_gn; do
  validate $n _bf16 --precision bf16 &
done
wait
tail -3 $R/test_bn_train.log
echo "checked $(( $(date +%s) - T0 )) s"
for v in new old; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/bench_problem.py $B/$v/l2_11.py .kb/problems/level2_11_*.py --precision bf16 \
    --json $R/bench_l2_11_bf16_$v.json > $R/bench_l2_11_bf16_$v.log 2>&1 || echo "bench $v failed"
  grep -iE "forward" $R/bench_l2_11_bf16_$v.log | head -4 | cut -c1-140
done
echo "total $(( $(date +%s) - T0 )) s"
