#!/usr/bin/env bash
# The resident backward's per-channel passes a block a channel where a tile has fewer channels than warps
# (resident/plan.cuh), against the same probes emitted before the change (old_, carried in .build/rbs_old: emitted at
# the parent commit) and against the two-pass entry (the variant of call.sh), kgen's kernels forward and backward in
# one process, 3 rounds; and tests/gpu/test_gn_region_resident.py (float64, two new cases on that path).
# On the GPU machine from the repository root, .build/rbs_old carried:
#   bash benchmarks/results/h200/cliffs/resident_backward_small/call_block_teams.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/rbt; E=.build/rbt_files; mkdir -p $R $E; trap 'tar czf $OUT/rbt.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
timeout 500 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_resident.py > $R/test_gn_region_resident.log 2>&1 & P1=$!
V="twopass_backward:if (kgen::region_resident_pays<kRegion0Reduce>(x, groups, /*backward=*/true)) {=>if (false) {"
NAMES="in_2d_4096 in_1d_4096 in_2d_4096_rows4k cl_2d_2048 cl_2d_4096 cl_2d_6272 instance_norm_style_mid"
python3 benchmarks/results/h200/cliffs/resident_backward_small/probes.py $E/refs
cp tests/corpus/instance_norm_style_mid.py $E/refs/
for n in $NAMES; do python3 -m kgen.cli emit --ref $E/refs/$n.py -o $E/$n.py 2>/dev/null; done
for n in $NAMES; do timeout 400 python3 benchmarks/kernel_variants.py $E/$n.py --kernel "kgen::" --backward \
  --variant "$V" --file old=.build/rbs_old/$n.py --build-only > /dev/null 2>&1 & done
wait $(jobs -p | grep -v "^$P1$"); echo "built $(( $(date +%s) - T0 )) s"
for n in $NAMES; do
  timeout 60 python3 benchmarks/kernel_variants.py $E/$n.py --kernel "kgen::" --backward --variant "$V" \
    --file old=.build/rbs_old/$n.py --rounds 3 --json $R/block_teams_$n.json > $R/$n.log 2>&1 || echo "$n failed"
  echo "== $n"; grep -E "^(base|old|twopass_backward) " $R/$n.log | cut -c1-110
done
wait $P1; echo "resident tests: $(tail -1 $R/test_gn_region_resident.log)"
echo "total $(( $(date +%s) - T0 )) s"
