#!/usr/bin/env bash
# After call_build.sh on the same warm machine: the variants timed (kgen's kernels, forward and backward, 3 rounds, one
# process a file), then the resident kernel's GPU tests.
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/pt; mkdir -p $R; trap 'tar czf $OUT/pt_time.tar.gz -C $R .' EXIT
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
V="resident:if (kgen::region_resident_pays<kRegion0Reduce>(x, groups, /*backward=*/true)) {=>if (kgen::region_resident_fits<kRegion0Reduce>(x, groups)) {"
for n in squeeze_excite_gn_large resnet_gn_bottleneck_large poolformer_block_large poolformer_block_mid; do
  case $n in squeeze*|resnet*) extra=(--variant "$V");; *) extra=();; esac
  timeout 100 python3 benchmarks/kernel_variants.py .build/tb/new/$n.py --kernel "kgen::" --backward \
    --file old=.build/tb/old/$n.py "${extra[@]}" --rounds 3 --json $R/pipeline_teams_$n.json > $R/$n.log 2>&1 \
    || echo "$n failed"
  echo "== $n"; tail -12 $R/$n.log | cut -c1-220
done
echo "timed $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_gn_region_resident.py -p no:cacheprovider \
  > $R/test_resident.log 2>&1; echo "resident tests rc $?"; tail -3 $R/test_resident.log
echo "total $(( $(date +%s) - T0 )) s"
