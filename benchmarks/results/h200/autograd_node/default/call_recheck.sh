#!/usr/bin/env bash
# The four rows where the node was the slower (attention_block_mid's forward +62%, three forward+backward rows +0.6
# to +1.8%) timed again on a fresh machine, each twice: in call.sh's order, then with the two files swapped (so a
# file's place in the round cannot be what is measured). From the repository root: bash call_recheck.sh
set -u; cd "$(dirname "$0")/../../../../.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/r.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.build/pairs; mkdir -p $F; T0=$(date +%s)
NAMES="attention_block_mid mlp_groupnorm_tiny poolformer_block_tiny resnet_gn_bottleneck_large"
for n in $NAMES; do
  python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $F/old_$n.py 2>/dev/null &
  python3 -m kgen.cli emit --ref tests/corpus/$n.py --autograd cpp -o $F/new_$n.py 2>/dev/null &
done; wait
timeout 300 python3 benchmarks/prebuild.py -j 16 $(for n in $NAMES; do echo $F/old_$n.py $F/new_$n.py; done) > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
C=benchmarks/results/h200/region_reads/compare.py
for n in $NAMES; do
  timeout 60 python3 $C tests/corpus/$n.py $F/old_$n.py $F/new_$n.py $R/cmp_$n.json > $R/cmp_$n.log 2>&1
  timeout 60 python3 $C tests/corpus/$n.py $F/new_$n.py $F/old_$n.py $R/swapped_$n.json > $R/swapped_$n.log 2>&1
  python3 -c "
import json; a = json.load(open('$R/cmp_$n.json')); b = json.load(open('$R/swapped_$n.json'))
for m in ('forward', 'forward_backward'):
    print('$n', m, 'python/cpp/eager', a[m]['old'], a[m]['new'], a[m]['eager'], '| swapped', b[m]['new'], b[m]['old'], b[m]['eager'])"
done
echo "total $(( $(date +%s) - T0 )) s"
