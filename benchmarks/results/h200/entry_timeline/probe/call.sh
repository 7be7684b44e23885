#!/usr/bin/env bash
# Two emitted files with profiler scopes inside their entry points (probe_patch.py, carried in .build/probe), timed by
# kgen.bench.entry_timeline on an otherwise idle host.
#   bash benchmarks/results/h200/entry_timeline/probe/call.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/probe_out; mkdir -p $R; trap 'tar czf $OUT/probe.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/prebuild.py -j 2 .build/probe/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"; tail -5 $R/prebuild.log
for n in diffusion_resblock_mid poolformer_block_tiny; do
  timeout 100 python3 benchmarks/entry_timeline.py .build/probe/$n.py --calls 40 --json $R/probe_$n.json > $R/probe_$n.log 2>&1 \
    || echo "timeline $n failed"
  grep "^== " $R/probe_$n.log | cut -c1-150
done
echo "total $(( $(date +%s) - T0 )) s"
