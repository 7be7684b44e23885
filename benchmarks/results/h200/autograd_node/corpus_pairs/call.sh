#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: ten corpus references emitted twice, the default
# (each region a Python autograd Function, old_) and --autograd cpp (each region one C++ autograd node, new_), built 16
# at a time, then compared in one process a reference (../../region_reads/compare.py: outputs and gradients bit for
# bit, forward and forward+backward wall time, eager between them).
set -u
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.build/cpp; mkdir -p $F
NAMES="adaptive_groupnorm_tiny attention_block_tiny diffusion_resblock_mid diffusion_resblock_tiny mlp_groupnorm_tiny poolformer_block_mid resnet_gn_bottleneck_tiny resnet_gn_bottleneck_large unet3d_block_mid vae_decoder_up_tiny"
for n in $NAMES; do
  python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $F/old_$n.py 2>/dev/null &
  python3 -m kgen.cli emit --ref tests/corpus/$n.py --autograd cpp -o $F/new_$n.py 2>/dev/null &
done; wait
echo "emit $(( $(date +%s) - T0 )) s"
timeout 220 python3 benchmarks/prebuild.py -j 16 $F/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for n in $NAMES; do
  timeout 40 python3 benchmarks/results/h200/region_reads/compare.py tests/corpus/$n.py $F/old_$n.py $F/new_$n.py $R/cmp_$n.json > $R/cmp_$n.log 2>&1 || echo "$n failed"
  tail -1 $R/cmp_$n.log | cut -c1-330
  [ $(( $(date +%s) - T0 )) -gt 330 ] && break
done
echo "total $(( $(date +%s) - T0 )) s"
