#!/usr/bin/env bash
# The batch norm step in float16 / bfloat16, second call: the units a thread keeps in flight for a 2-byte type
# (kBnHalfUnitsScale 2, as emitted, against 1 and 4: kernel_variants' text substitutions of L2-11's file, at bf16 and
# fp16, outputs and gradients compared with the emitted file's), tests/gpu/test_bn_train.py whole (its files built
# first), kgen validate of the three batch norm references at fp16, then kgen / eager / torch.compile of L2-11 at bf16
# and fp16 (bench_problem).
# On the GPU machine from the repository root, .kb and .build/bn_half carried:
#   bash benchmarks/results/h200/bn_half/call_units.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/bn_half_out; mkdir -p $R; trap 'tar czf $OUT/bn_half_units.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/bn_half
python3 benchmarks/prebuild_gpu_tests.py .build/bn_tests bn_train > /dev/null
S="constexpr int kBnHalfUnitsScale = 2;"
KV=(python3 benchmarks/kernel_variants.py $B/new/l2_11.py --backward --rounds 3 --kernel kgen::bn_
    --variant "scale1:$S=>${S/2/1}" --variant "scale4:$S=>${S/2/4}")
"${KV[@]}" --build-only > $R/variants_build.log 2>&1 &
timeout 300 python3 benchmarks/prebuild.py -j 14 $B/new/*.py .build/bn_tests/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"; wait
for d in bf16 fp16; do
  timeout 90 "${KV[@]}" --dtype $d --json $R/variants_units_$d.json > $R/variants_units_$d.log 2>&1 || echo "variants $d failed"
  grep -E "^(base|scale1|scale4) " $R/variants_units_$d.log | cut -c1-110
done
echo "timed $(( $(date +%s) - T0 )) s"
timeout 150 python3 -m pytest -q tests/gpu/test_bn_train.py > $R/test_bn_train.log 2>&1 &
for n in conv3d_bn_silu_scale_avgpool_gn convt_bn_tanh_maxpool_gn_odd linear_bn1d_noaffine_relu_gn; do
  timeout 150 python3 -m kgen.cli validate --trials 1 $B/new/$n.py --precision fp16 > $R/validate_${n}_fp16.log 2>&1
  echo "validate $n fp16 rc $?"
done
wait; tail -3 $R/test_bn_train.log
echo "checked $(( $(date +%s) - T0 )) s"
for d in bf16 fp16; do
  left=$(( 585 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  timeout $left python3 benchmarks/bench_problem.py $B/new/l2_11.py .kb/problems/level2_11_*.py --precision $d \
    --json $R/bench_l2_11_${d}_new.json > $R/bench_l2_11_${d}_new.log 2>&1 || echo "bench $d failed"
  grep -iE "forward" $R/bench_l2_11_${d}_new.log | head -4 | cut -c1-140
done
echo "total $(( $(date +%s) - T0 )) s"
