#!/usr/bin/env bash
# Second call, on the machine call_build_and_test.sh warmed (its builds kept): each file's extension entry points and
# their backward nodes, replayed under torch.profiler on an otherwise idle host (kgen.bench.entry_timeline).
#   bash benchmarks/results/h200/entry_timeline/call_timeline.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/entry_timeline; mkdir -p $R; trap 'tar czf $OUT/timeline.tar.gz -C $R .' EXIT
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.build/timeline_files
for n in poolformer_block_tiny two_norm_gate_mid diffusion_resblock_mid attention_block_tiny; do
  timeout 100 python3 benchmarks/entry_timeline.py $F/$n.py --calls 40 --json $R/timeline_$n.json > $R/timeline_$n.log 2>&1 \
    || echo "timeline $n failed"
  grep "^== " $R/timeline_$n.log | cut -c1-150
done
echo "total $(( $(date +%s) - T0 )) s"
