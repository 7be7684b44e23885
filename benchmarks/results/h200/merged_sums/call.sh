#!/usr/bin/env bash
# A merged region's backward node with every parameter gradient summed in one launch (groupnorm/merged.cuh
# param_grads) against an at::sum a parameter: the files emitted before (old/) and after (new/) the change, and every
# merged reference of tests/ref/test_merged_samples.py (v/), carried in .build/merged_sums. Checked by kgen validate
# (fp32, bf16 on two, another shape on the new reference), the old and new files' outputs and gradients compared
# (kernel_variants), then timed: each entry point and backward node (entry_timeline, old and new alternating) and the
# whole call (host_profile, kgen new / old / eager alternating in one process).
# On the GPU machine from the repository root, .kb and .build/merged_sums carried:
#   bash benchmarks/results/h200/merged_sums/call.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/merged_sums_out; mkdir -p $R; trap 'tar czf $OUT/merged_sums.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
B=.build/merged_sums
timeout 330 python3 benchmarks/prebuild.py -j 16 $B/new/*.py $B/old/*.py $B/v/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
V="timeout 120 python3 -m kgen.cli validate --trials 1"
validate() {   # name log-suffix extra...
  local n=$1 s=$2; shift 2
  $V $B/v/$n.py "$@" > $R/validate_$n$s.log 2>&1; echo "validate $n$s rc $?"
}
for f in $B/v/*.py; do validate $(basename $f .py) "" & [ $(jobs -r | wc -l) -ge 4 ] && wait -n; done; wait
validate gn_conditioned_every_param_kind _one_sample --input-shape '[1, 32, 6, 11]' --input-shape '[1, 24]' &
validate gn_conditioned_every_param_kind _bf16 --precision bf16 &
validate diffusion_resblock_tiny _bf16 --precision bf16 &
$V $B/new/diffusion_resblock_mid.py > $R/validate_diffusion_resblock_mid.log 2>&1; echo "validate diffusion_resblock_mid rc $?"
wait
echo "validated $(( $(date +%s) - T0 )) s"
timeout 120 python3 benchmarks/kernel_variants.py $B/old/diffusion_resblock_mid.py --file new=$B/new/diffusion_resblock_mid.py \
  --kernel "kgen::|sum|reduce" --backward --rounds 3 --json $R/variants_diffusion_resblock_mid.json \
  > $R/variants_diffusion_resblock_mid.log 2>&1 || echo "kernel_variants failed"
tail -25 $R/variants_diffusion_resblock_mid.log
for round in 1 2; do
  for v in old new; do
    timeout 60 python3 benchmarks/entry_timeline.py $B/$v/diffusion_resblock_mid.py --calls 40 \
      --json $R/timeline_${v}_$round.json > $R/timeline_${v}_$round.log 2>&1 || echo "timeline $v failed"
    grep "^== .*backward node" $R/timeline_${v}_$round.log | sed "s/^/$v $round: /" | cut -c1-120
  done
done
for n in diffusion_resblock_mid diffusion_resblock_tiny; do
  timeout 100 python3 benchmarks/host_profile.py $B/new/$n.py --also old=$B/old/$n.py --reference tests/corpus/$n.py \
    --rounds 9 --top 15 --json $R/host_$n.json > $R/host_$n.log 2>&1 || echo "host_profile $n failed"
  grep "^== .*unprofiled" $R/host_$n.log | cut -c1-110
done
echo "total $(( $(date +%s) - T0 )) s"
