#!/usr/bin/env bash
# On the GPU machine (device tool, carry .kb), after emit.sh: the faithful bitwise tests beside the builds, then each
# reference's old and new files compared in one process (compare.py).
set -u
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
(timeout 420 python3 -m pytest -q -x tests/gpu/test_faithful.py -p no:cacheprovider > $R/test_faithful.log 2>&1; echo "rc $?" >> $R/test_faithful.log) &
timeout 300 python3 benchmarks/prebuild.py -j 14 .devrun/files/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for n in two_norm_gate_large two_norm_gate_mid vae_decoder_up_large resnet_gn_bottleneck_large unet3d_block_large diffusion_resblock_large audio_encoder_1d_large; do
  timeout 90 python3 benchmarks/results/h200/region_reads/compare.py tests/corpus/$n.py .devrun/files/old_$n.py .devrun/files/new_$n.py $R/cmp_$n.json > $R/cmp_$n.log 2>&1 || echo "$n failed"
  tail -1 $R/cmp_$n.log | cut -c1-400
done
wait
tail -3 $R/test_faithful.log
echo "total $(( $(date +%s) - T0 )) s"
