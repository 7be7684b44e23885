#!/usr/bin/env bash
# GPU checks of the backward's parameter-gradient buffers left unfilled (twopass/forward_host.cuh: param_grad_buffer)
# and of the nodes' integer messages, and where the host time of small corpus files goes now that each region and
# element-wise step is a C++ autograd node (benchmarks/host_profile.py --api: each contender's CUDA runtime calls and
# ATen ops a call, kgen beside eager in one process).
# On the GPU machine from the repository root, .kb carried: bash benchmarks/results/h200/host_census/call.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/census; mkdir -p $R; trap 'tar czf $OUT/census.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(git status --short | head -30; nvidia-smi --query-gpu=name --format=csv,noheader;
 python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
T="python3 -m pytest -q -p no:cacheprovider"
timeout 480 $T tests/gpu/test_autograd_cpp.py > $R/test_autograd_cpp.log 2>&1 & P1=$!
timeout 480 $T tests/gpu/test_gn_region_twopass.py tests/gpu/test_gn_region_cluster.py > $R/test_twopass_cluster.log 2>&1 & P2=$!
timeout 480 $T tests/gpu/test_gn_region_nhwc.py -k "not kernels" > $R/test_nhwc_models.log 2>&1 & P3=$!
NAMES="mlp_groupnorm_tiny diffusion_resblock_tiny odd_shapes_mid instance_norm_style_tiny"
F=.build/census_files; mkdir -p $F
for n in $NAMES; do python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $F/$n.py 2>/dev/null; done
timeout 300 python3 benchmarks/prebuild.py -j 4 $F/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for n in $NAMES; do
  timeout 120 python3 benchmarks/host_profile.py $F/$n.py --reference tests/corpus/$n.py --api --top 20 \
    --json $R/host_$n.json > $R/host_$n.log 2>&1 || echo "host $n failed"
  grep "^== .*unprofiled" $R/host_$n.log | cut -c1-160
done
wait $P1; echo "autograd_cpp: $(tail -1 $R/test_autograd_cpp.log)"
wait $P2; echo "twopass+cluster: $(tail -1 $R/test_twopass_cluster.log)"
wait $P3; echo "nhwc models: $(tail -1 $R/test_nhwc_models.log)"
echo "total $(( $(date +%s) - T0 )) s"
