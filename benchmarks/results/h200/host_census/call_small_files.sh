#!/usr/bin/env bash
# Host time a call, kgen against eager (benchmarks/host_profile.py --api, one process a file), of the ten tiny and mid
# corpus files whose forward+backward lost most to eager in ../corpus/table/ (measured when each region and
# element-wise step was a Python Function); beside them, the GPU tests of the backward entry points that allocate
# their parameter gradients through param_grad_buffers (two-pass, cluster, NHWC, channels-last ConvTranspose).
# On the GPU machine from the repository root, .kb carried:
#   bash benchmarks/results/h200/host_census/call_small_files.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/census_small; mkdir -p $R; trap 'tar czf $OUT/census_small.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(git log --oneline -1; git status --short | head -30; nvidia-smi --query-gpu=name --format=csv,noheader;
 python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
T="python3 -m pytest -q -p no:cacheprovider"
timeout 520 $T tests/gpu/test_gn_region_twopass.py tests/gpu/test_gn_region_cluster.py > $R/test_twopass_cluster.log 2>&1 & P1=$!
timeout 520 $T tests/gpu/test_gn_region_nhwc.py > $R/test_nhwc.log 2>&1 & P2=$!
timeout 520 $T tests/gpu/test_convt_gelu_groupnorm.py -k "channels_last or backward" > $R/test_convt.log 2>&1 & P3=$!
NAMES="poolformer_block_mid poolformer_block_tiny resnet_gn_bottleneck_tiny resnet_gn_bottleneck_mid two_norm_gate_mid
two_norm_gate_tiny unet3d_block_mid vae_decoder_up_tiny attention_block_tiny diffusion_resblock_mid"
F=.build/census_small_files; mkdir -p $F
for n in $NAMES; do python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $F/$n.py 2>/dev/null; done
timeout 330 python3 benchmarks/prebuild.py -j 10 $F/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for n in $NAMES; do
  timeout 60 python3 benchmarks/host_profile.py $F/$n.py --reference tests/corpus/$n.py --api --top 20 \
    --json $R/host_$n.json > $R/host_$n.log 2>&1 || echo "host $n failed"
  grep "^== .*unprofiled" $R/host_$n.log | cut -c1-100
done
echo "profiled $(( $(date +%s) - T0 )) s"
wait $P1; echo "twopass+cluster: $(tail -1 $R/test_twopass_cluster.log)"
wait $P2; echo "nhwc: $(tail -1 $R/test_nhwc.log)"
wait $P3; echo "convt: $(tail -1 $R/test_convt.log)"
echo "total $(( $(date +%s) - T0 )) s"
