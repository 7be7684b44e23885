#!/bin/bash
# Kernel choices A/B on the GPU (benchmarks/kernel_variants.py): each probe reference of probes.py emitted, built with
# and without a rule (a text substitution of the emitted file), region kernels timed forward and backward in one
# process, 3 rounds, outputs and gradients compared with the base file's. Run from the repository root.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=benchmarks/results/h200/cliffs; E=.build/cliffs; L=${OUT:-/tmp/kgen-out}/cliffs; mkdir -p $E $L
# The resident backward taken where its own plan leaves kMinResidentBlocks blocks an SM (base), or where the
# forward's does (forward_rule, the rule before).
V="forward_rule:groups, /*backward=*/true)=>groups)"
python3 $R/probes.py $E/refs
for f in $E/refs/*.py; do n=$(basename $f .py); python3 -m kgen.cli emit --ref $f -o $E/$n.py; done
for f in $E/*.py; do python3 benchmarks/kernel_variants.py $f --kernel region --backward --variant "$V" --build-only & done
wait
for f in $E/*.py; do n=$(basename $f .py); echo "== $n"
  python3 benchmarks/kernel_variants.py $f --kernel region --backward --variant "$V" --rounds 3 \
    --json $L/resident_backward_$n.json
done
# The forward as chosen (base), the resident kernel wherever it pays (resident_rule, the rule before
# cluster_forward_preferred), and the two-pass entry always (twopass_forward: the cluster kernel where it takes the call).
R="resident_rule:kClusterOverResident = 6144;=>kClusterOverResident = int64_t(1) << 40;"
F="twopass_forward:if (!kRegion0Faithful && kgen::region_resident_pays<kRegion0Reduce>(x, groups) &&=>if (false &&"
for f in $E/*.py; do python3 benchmarks/kernel_variants.py $f --kernel region --variant "$R" --variant "$F" --build-only & done
wait
for f in $E/*.py; do n=$(basename $f .py); echo "== $n"
  python3 benchmarks/kernel_variants.py $f --kernel region --variant "$R" --variant "$F" --rounds 3 \
    --json $L/resident_forward_$n.json
done
