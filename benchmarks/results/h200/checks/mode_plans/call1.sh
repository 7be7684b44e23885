#!/usr/bin/env bash
# Mode-branching references (a plan per mode) and the validator's eval-mode trial: kgen validate on the four new
# references and on references whose eval mode differs anyway (dropout, batch norm running statistics); the
# autograd-cpp GPU test after its build_all refactor.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R/v; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git rev-parse --short HEAD >> $R/gpu.txt; git status --short >> $R/gpu.txt
E=.devrun/e; mkdir -p $E
for f in gn_training_branch gn_training_number gn_eval_pooled_head gn_block_with_training_noise dropout_train \
         lib_dropout_eval_softplus sd_vae_resnet_block gn_resnet_block_inplace_residual adm_resblock_scale_shift gn_zero_channel_pad_shortcut; do
  echo "tests/ref/unseen/$f.py $E/$f.py"; done > $E/list
echo "kgen/specs/references/level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py $E/l2_11.py" >> $E/list
s=$(date +%s); xargs -P 8 -L 1 sh -c 'python3 -m kgen.cli emit --ref $0 -o $1 2>&1 || echo "emit failed $0"' < $E/list > $R/emit.log; echo "emit $(( $(date +%s) - s )) s"
cp $E/gn_training_branch.py $E/gn_eval_pooled_head.py $R/
s=$(date +%s); timeout 240 python3 benchmarks/prebuild.py -j 16 $E/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
( timeout 250 python3 -m pytest -q -x tests/gpu/test_autograd_cpp.py > $R/test_autograd_cpp.log 2>&1; echo "autograd_cpp rc $?: $(tail -1 $R/test_autograd_cpp.log)" ) &
s=$(date +%s)
( for f in $E/gn_*.py $E/dropout_train.py $E/lib_dropout_eval_softplus.py $E/sd_vae_resnet_block.py $E/adm_resblock_scale_shift.py; do echo "$f fp32"; done
  echo "$E/gn_training_branch.py bf16"; echo "$E/gn_block_with_training_noise.py bf16"; echo "$E/gn_training_number.py fp16"
  echo "$E/l2_11.py small" ) | timeout 300 xargs -P 5 -L 1 sh -c 'n=$(basename $0 .py)_$1
  case $1 in fp32) a="";; small) a="--input-shape [8,64,16,16]";; *) a="--precision $1";; esac
  timeout 220 python3 -m kgen.cli validate $0 --trials 1 $a > '$R'/v/$n.log 2>&1; echo "$n rc $?"'
echo "validate $(( $(date +%s) - s )) s"
wait
grep -H -E "verdict" $R/v/*.log | head -60
grep -h "eval mode" $R/v/gn_training_branch_fp32.log | head -20
