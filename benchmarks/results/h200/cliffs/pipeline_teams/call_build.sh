#!/usr/bin/env bash
# The pipelined backward with items of several planes (PipelinePlan::teams) against the file emitted before it (an item
# a plane: the two sweeps below 1,024 values) and, for the 28 x 28 files, the resident backward forced: each corpus file
# with short planes emitted by both checkouts (.build/tb/{old,new}, made on the CPU machine: see README), built here
# in parallel with the GPU tests of the pipelined kernel.
# On the GPU machine from the repository root: bash benchmarks/results/h200/cliffs/pipeline_teams/call_build.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/pt; mkdir -p $R; trap 'tar czf $OUT/pt_build.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
V="resident:if (kgen::region_resident_pays<kRegion0Reduce>(x, groups, /*backward=*/true)) {=>if (kgen::region_resident_fits<kRegion0Reduce>(x, groups)) {"
for n in squeeze_excite_gn_large resnet_gn_bottleneck_large poolformer_block_large poolformer_block_mid; do
  case $n in squeeze*|resnet*) extra=(--variant "$V");; *) extra=();; esac
  timeout 540 python3 benchmarks/kernel_variants.py .build/tb/new/$n.py --kernel "kgen::" --backward \
    --file old=.build/tb/old/$n.py "${extra[@]}" --build-only > $R/build_$n.log 2>&1 &
done
timeout 560 python3 -m pytest -q tests/gpu/test_gn_region_twopass.py -k "pipelined or phases" -p no:cacheprovider \
  > $R/test_twopass_pipelined.log 2>&1; echo "twopass tests rc $?"; tail -3 $R/test_twopass_pipelined.log
wait; echo "built $(( $(date +%s) - T0 )) s"; tail -2 $R/build_*.log | cut -c1-200
