#!/bin/bash
# Faithful regions on the GPU: tests/gpu/test_faithful.py (bitwise against PyTorch, fp32 with TF32 / bf16 / fp16), the
# corpus references KernelBench's fp32 check failed (validate + KernelBench, 5 trials), and the region-dtypes test.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L/corpus
T0=$(date +%s)
( timeout 330 python3 -m pytest -q tests/gpu/test_faithful.py > $L/test_faithful.txt 2>&1; echo "exit $?" >> $L/test_faithful.txt ) &
A=$!
( nice -n 10 timeout 340 python3 -m pytest -q tests/gpu/test_region_dtypes.py > $L/test_region_dtypes.txt 2>&1; echo "exit $?" >> $L/test_region_dtypes.txt ) &
B=$!
ONLY=audio_encoder_1d_mid,audio_encoder_1d_large,diffusion_resblock_mid,diffusion_resblock_large,poolformer_block_mid,poolformer_block_large,resnet_gn_bottleneck_mid,resnet_gn_bottleneck_large,unet3d_block_tiny,unet3d_block_mid,unet3d_block_large,vae_decoder_up_large
timeout 345 python3 benchmarks/family.py tests/corpus .kb $L/corpus --glob "*_*.py" --only $ONLY \
   --workers 4 --jobs 12 --budget 300 > $L/corpus/family.log 2>&1
grep -E "^emit:|prebuild:|validate exit|FAILED" $L/corpus/family.log
wait $A; tail -4 $L/test_faithful.txt
wait $B; tail -3 $L/test_region_dtypes.txt
echo "call $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
