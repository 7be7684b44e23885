#!/usr/bin/env bash
# A merged region's repeated parameters in one launch (groupnorm/merged.cuh merged_params) against the copy a
# parameter: the files emitted before (old/) and after (new/) the change, carried in .build/merged_host; checked by
# kgen validate, then timed on an otherwise idle host: each region entry point (kgen.bench.entry_timeline, old and new
# alternating) and the whole call (kgen.bench.host_profile, kgen new / old / eager alternating in one process).
# On the GPU machine from the repository root, .kb and .build/merged_host carried:
#   bash benchmarks/results/h200/entry_timeline/merged_repeats/call.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/merged_repeats; mkdir -p $R; trap 'tar czf $OUT/merged_repeats.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/merged_host
timeout 300 python3 benchmarks/prebuild.py -j 5 $B/new/*.py $B/old/*.py generated/ref_audio_film_conv1d_merged.py \
  > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
V="python3 -m kgen.cli validate --trials 1"
$V $B/new/diffusion_resblock_mid.py --json $R/validate_diffusion_resblock_mid.json > $R/validate_diffusion_resblock_mid.log 2>&1; echo "validate diffusion_resblock_mid rc $?"
$V $B/new/diffusion_resblock_mid.py --input-shape '[3, 128, 9, 7]' --input-shape '[3, 512]' \
  > $R/validate_diffusion_resblock_mid_odd.log 2>&1; echo "validate diffusion_resblock_mid (3, 128, 9, 7) rc $?"
$V $B/new/adaptive_groupnorm_mid.py > $R/validate_adaptive_groupnorm_mid.log 2>&1; echo "validate adaptive_groupnorm_mid rc $?"
$V generated/ref_audio_film_conv1d_merged.py > $R/validate_audio_film.log 2>&1; echo "validate audio_film_conv1d_merged rc $?"
echo "validated $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for v in old new; do
    timeout 60 python3 benchmarks/entry_timeline.py $B/$v/diffusion_resblock_mid.py --calls 40 \
      --json $R/timeline_${v}_$round.json > $R/timeline_${v}_$round.log 2>&1 || echo "timeline $v failed"
    echo "$v $round: $(grep '^== region1: ' $R/timeline_${v}_$round.log | cut -c1-120)"
  done
done
for n in diffusion_resblock_mid adaptive_groupnorm_mid; do
  timeout 90 python3 benchmarks/host_profile.py $B/new/$n.py --also old=$B/old/$n.py --reference tests/corpus/$n.py \
    --rounds 9 --top 15 --json $R/host_$n.json > $R/host_$n.log 2>&1 || echo "host_profile $n failed"
  grep "^== .*unprofiled" $R/host_$n.log | cut -c1-110
done
echo "total $(( $(date +%s) - T0 )) s"
