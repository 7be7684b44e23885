#!/bin/bash
# Kernel choices A/B on the GPU (benchmarks/kernel_variants.py): each probe reference in refs/ emitted, built with
# and without a rule (a text substitution of the emitted file), region kernels timed forward and backward in one
# process, 3 rounds, outputs and gradients compared with the base file's. Run from the repository root.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=benchmarks/results/h200/cliffs; E=.build/cliffs; L=${OUT:-/tmp/kgen-out}/cliffs; mkdir -p $E $L
# The resident backward taken where its own plan leaves kMinResidentBlocks blocks an SM (base), or where the
# forward's does (forward_rule, the rule before).
V="forward_rule:groups, /*backward=*/true)=>groups)"
for f in $R/refs/*.py; do n=$(basename $f .py); python3 -m kgen.cli emit --ref $f -o $E/$n.py; done
for f in $E/*.py; do python3 benchmarks/kernel_variants.py $f --kernel region --backward --variant "$V" --build-only & done
wait
for f in $E/*.py; do n=$(basename $f .py); echo "== $n"
  python3 benchmarks/kernel_variants.py $f --kernel region --backward --variant "$V" --rounds 3 \
    --json $L/resident_backward_$n.json
done
