#!/usr/bin/env bash
# Host time a call in ONE process per reference: kgen's default file (kgen), main's file before the merged-region
# change (base, merged references only), the same reference emitted with --autograd cpp (cpp), and eager.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
M=.devrun/m; F=.devrun/files; C=.devrun/c
timeout 300 python3 benchmarks/prebuild.py -j 16 $C/*.py $M/diffusion_resblock_tiny.py $M/adaptive_groupnorm_mid.py \
  $F/host_diffusion_resblock_tiny.py $F/host_adaptive_groupnorm_mid.py $F/host_mlp_groupnorm_tiny.py $F/host_vae_decoder_up_tiny.py > $R/prebuild.log 2>&1
tail -1 $R/prebuild.log; grep -v ": ok" $R/prebuild.log | head -5
(for f in diffusion_resblock_tiny_cpp adaptive_groupnorm_mid_cpp; do
  timeout 200 python3 -m kgen.cli validate $C/$f.py --trials 1 > $R/validate_$f.log 2>&1; echo "$f exit $?"; done) > $R/validate_cpp.txt &
VP=$!
wait $VP; cat $R/validate_cpp.txt
for r in diffusion_resblock_tiny adaptive_groupnorm_mid mlp_groupnorm_tiny vae_decoder_up_tiny; do
  case $r in diffusion_resblock_tiny|adaptive_groupnorm_mid) main=$M/$r.py; also="--also base=$F/host_$r.py";;
    *) main=$F/host_$r.py; also="";; esac
  timeout 120 python3 benchmarks/host_profile.py $main $also --also cpp=$C/${r}_cpp.py --reference tests/corpus/$r.py \
    --rounds 9 --calls 100 --top 10 --json $R/host_$r.json > $R/host_$r.log 2>&1
  echo "== $r (rc $?)"; grep "^== .*unprofiled" $R/host_$r.log | sed 's/, of which.*//'
done
timeout 120 ncu --kernel-name regex:window_forward --launch-skip 1 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
  python3 benchmarks/run_solution_once.py $C/odd_large.py --calls 3 > $R/ncu_window_odd_large.log 2>&1; echo "ncu rc=$?"
grep -E "Duration|Throughput|Issue Slots|Registers Per|Achieved Occ|Theoretical Occ|Stall|Warp Cycles Per Issued" $R/ncu_window_odd_large.log | head -20
