#!/usr/bin/env bash
# The resident backward against the two-pass entry's (the pipelined kernel on planes of 1,024 values or more, else the
# two sweeps) over slices of 1,024 to 8,192 values, where region_resident_pays keeps the resident backward: each probe
# of probes.py and instance_norm_style_mid (4,096-value slices, its backward 43% of a copy's rate in the corpus table)
# emitted, built with and without the rule (benchmarks/kernel_variants.py: a text substitution of the emitted file),
# kgen's kernels timed forward and backward in one process, 3 rounds, outputs and gradients compared with the base.
# On the GPU machine from the repository root: bash benchmarks/results/h200/cliffs/resident_backward_small/call.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/rbs; E=.build/rbs_files; mkdir -p $R $E; trap 'tar czf $OUT/rbs.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
V="twopass_backward:if (kgen::region_resident_pays<kRegion0Reduce>(x, groups, /*backward=*/true)) {=>if (false) {"
python3 benchmarks/results/h200/cliffs/resident_backward_small/probes.py $E/refs
cp tests/corpus/instance_norm_style_mid.py $E/refs/
for f in $E/refs/*.py; do n=$(basename $f .py); python3 -m kgen.cli emit --ref $f -o $E/$n.py 2>/dev/null; done
for f in $E/*.py; do timeout 420 python3 benchmarks/kernel_variants.py $f --kernel "kgen::" --backward --variant "$V" \
  --build-only > /dev/null 2>&1 & done
wait; echo "built $(( $(date +%s) - T0 )) s"
for f in $E/*.py; do n=$(basename $f .py)
  timeout 60 python3 benchmarks/kernel_variants.py $f --kernel "kgen::" --backward --variant "$V" --rounds 3 \
    --json $R/resident_backward_$n.json > $R/$n.log 2>&1 || echo "$n failed"
  echo "== $n"; tail -6 $R/$n.log | cut -c1-200
done
echo "total $(( $(date +%s) - T0 )) s"
