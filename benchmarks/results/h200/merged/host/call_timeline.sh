#!/usr/bin/env bash
# Where a tiny model's forward+backward host time goes, thread by thread (benchmarks/host_timeline.py), kgen and eager.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/prebuild.py -j 16 .devrun/m/diffusion_resblock_tiny.py .devrun/files/host_mlp_groupnorm_tiny.py > $R/prebuild.log 2>&1
tail -1 $R/prebuild.log
timeout 120 python3 benchmarks/host_timeline.py .devrun/m/diffusion_resblock_tiny.py --reference tests/corpus/diffusion_resblock_tiny.py \
  --top 40 --json $R/timeline_diffusion_resblock_tiny.json > $R/timeline_diffusion_resblock_tiny.log 2>&1; echo "rc $?"
timeout 120 python3 benchmarks/host_timeline.py .devrun/files/host_mlp_groupnorm_tiny.py --reference tests/corpus/mlp_groupnorm_tiny.py \
  --top 40 --json $R/timeline_mlp_groupnorm_tiny.json > $R/timeline_mlp_groupnorm_tiny.log 2>&1; echo "rc $?"
grep -v Warn $R/timeline_mlp_groupnorm_tiny.log | head -60
