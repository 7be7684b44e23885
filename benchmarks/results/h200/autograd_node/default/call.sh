#!/usr/bin/env bash
# The Python autograd Function (old_) against the C++ autograd node (new_, --autograd cpp) on the family and the
# corpus's host-bound references: each reference emitted both ways, built 16 at a time, then both files and the eager
# reference in one process (../../region_reads/compare.py: outputs and every gradient bit for bit, forward and
# forward+backward wall time, the three alternating round by round); with `family`, also kgen validate and
# KernelBench's evaluator on the node's files of the four problems no earlier run reached.
# On the GPU machine from the repository root, .kb carried: bash call.sh family | corpus   (resumable: run it again)
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s); LIMIT=${LIMIT:-560}
R=.build/default_results; mkdir -p $R; trap 'tar czf $OUT/r.tar.gz -C $R .' EXIT   # kept on the machine between calls
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.build/pairs; mkdir -p $F .build/cmp
if [ "$1" = family ]; then
  REFS=$(ls .kb/problems/level*.py)
else
  REFS=$(for n in attention_block_mid attention_block_tiny audio_encoder_1d_tiny diffusion_resblock_mid \
    diffusion_resblock_tiny gan_generator_up_tiny instance_norm_style_mid instance_norm_style_tiny mlp_groupnorm_mid \
    mlp_groupnorm_tiny odd_shapes_mid poolformer_block_large poolformer_block_mid poolformer_block_tiny \
    resnet_gn_bottleneck_large resnet_gn_bottleneck_mid resnet_gn_bottleneck_tiny squeeze_excite_gn_large \
    squeeze_excite_gn_mid squeeze_excite_gn_tiny two_norm_gate_mid two_norm_gate_tiny unet3d_block_mid \
    vae_decoder_up_mid vae_decoder_up_tiny; do echo tests/corpus/$n.py; done)
fi
short() { basename $1 .py | sed -E 's/^level([12])_([0-9]+)_.*/L\1-\2/'; }
for ref in $REFS; do n=$(short $ref)
  [ -f $F/new_$n.py ] || { python3 -m kgen.cli emit --ref $ref -o $F/old_$n.py 2>/dev/null &
                           python3 -m kgen.cli emit --ref $ref --autograd cpp -o $F/new_$n.py 2>/dev/null & }
done; wait
echo "emit $(( $(date +%s) - T0 )) s"
FILES=$(for ref in $REFS; do n=$(short $ref); echo $F/old_$n.py $F/new_$n.py; done)
timeout $(( LIMIT - $(date +%s) + T0 - 60 )) python3 benchmarks/prebuild.py -j 16 $FILES >> $R/prebuild_$1.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
left() { echo $(( LIMIT - $(date +%s) + T0 )); }
if [ "$1" = family ] && [ "$(grep -c "KernelBench correct" $R/family_family.log 2>/dev/null)" != 4 ] && [ $(left) -gt 240 ]; then
  timeout $(( $(left) - 20 )) python3 benchmarks/family.py .kb/problems .kb $R/family --trials 2 --workers 4 --jobs 16 --budget $(( $(left) - 80 )) \
    --resume --only 85,88,92,94 --emit-args "--autograd cpp" >> $R/family_$1.log 2>&1
  echo "family rc $? $(( $(date +%s) - T0 )) s"; tail -3 $R/family_$1.log
fi
for ref in $REFS; do n=$(short $ref)
  [ -f $R/cmp_$n.json ] && continue
  [ $(left) -lt 40 ] && { echo "budget: left for the next call"; break; }
  timeout 60 python3 benchmarks/results/h200/region_reads/compare.py $ref $F/old_$n.py $F/new_$n.py $R/cmp_$n.json \
    > $R/cmp_$n.log 2>&1 || echo "$n failed"
  tail -1 $R/cmp_$n.log | cut -c1-400
done
echo "total $(( $(date +%s) - T0 )) s"
