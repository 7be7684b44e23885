#!/usr/bin/env bash
# The ten added unseen references, the logsumexp probes and four family problems in --autograd cpp: kgen validate.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R/v; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git rev-parse --short HEAD >> $R/gpu.txt
( timeout 150 python3 -m pytest -q tests/gpu/test_conv_gn_lse.py > $R/test_conv_gn_lse.log 2>&1; echo "lse rc $?: $(tail -1 $R/test_conv_gn_lse.log)" ) &
E=.devrun/e; mkdir -p $E
for f in gn_addcdiv_lerp_params gn_affine_false_scale_shift_params gn_convtranspose_output_padding gn_detach_stop_gradient_mix \
         gn_erf_log1p_exp2 gn_half_channels_then_cat gn_pixel_unshuffle_before gn_rare_activations gn_resnet_block_inplace_residual gn_swish_learned_beta; do
  echo "tests/ref/unseen/$f.py $E/$f.py"; done > $E/list
for f in gn_logsumexp_dim0 gn_logsumexp_negative_dim input_gn_layernormlike_batch1_lse linear_gn_2d_leakymodule_lse; do echo "tests/ref/probe/$f.py $E/$f.py"; done >> $E/list
for f in level2_85_Conv2d_GroupNorm_Scale_MaxPool_Clamp level2_88_Gemm_GroupNorm_Swish_Multiply_Swish level2_92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp level2_94_Gemm_BiasAdd_Hardtanh_Mish_GroupNorm; do
  echo ".kb/problems/$f.py $E/${f:0:9}_cpp.py --autograd cpp"; done >> $E/list
s=$(date +%s); xargs -P 8 -L 1 sh -c 'python3 -m kgen.cli emit --ref $0 -o $1 $2 $3 2>&1 || echo "emit failed $0"' < $E/list > $R/emit.log; echo "emit $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 230 python3 benchmarks/prebuild.py -j 16 $E/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
wait
s=$(date +%s)
ls $E/*.py | timeout 280 xargs -P 5 -I{} sh -c 'n=$(basename {} .py); timeout 200 python3 -m kgen.cli validate {} --trials 1 > '$R'/v/$n.log 2>&1; echo "$n rc $?"'
echo "validate $(( $(date +%s) - s )) s"
grep -H -E "^RESULT|PASS|FAIL" $R/v/*.log | grep -iE "result|verdict" | head -40
