#!/usr/bin/env bash
# Build every carried file (host-profile files first), then the host profiles with the API census.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $R/gpu.txt
F=.devrun/files
timeout 430 python3 benchmarks/prebuild.py -j 16 $F/host_*.py $F/l2_37.py $(sed "s|^|$F/|;s|$|.py|" .devrun/unseen.txt) > $R/prebuild.log 2>&1
tail -3 $R/prebuild.log
for r in mlp_groupnorm_tiny diffusion_resblock_tiny vae_decoder_up_tiny adaptive_groupnorm_mid; do
  timeout 60 python3 benchmarks/host_profile.py $F/host_$r.py --reference tests/corpus/$r.py --api --rounds 5 --top 15 \
    --json $R/host_$r.json > $R/host_$r.log 2>&1
  echo "$r rc=$?"; grep "^== " $R/host_$r.log | head -8
done
