#!/usr/bin/env bash
# The committed rules (items of several planes where the streams overflow L2; the resident backward kept at 2 blocks
# an SM for a tile of a channel a warp) checked and timed against the files emitted before them (.build/tb/old, made on
# the CPU machine from the parent commit). Stage `build`: the four corpus files emitted and built beside the old ones,
# with the region kernels' GPU tests; stage `time` (the same warm machine): kgen's kernels timed, forward and backward,
# 3 rounds a file, and kgen validate of squeeze_excite_gn_large (one trial).
# On the GPU machine from the repository root, .build/tb and .kb carried:
#   bash benchmarks/results/h200/cliffs/pipeline_teams/call_check.sh build; ... call_check.sh time
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/ptc; mkdir -p $R/new; trap 'tar czf $OUT/ptc_$1.tar.gz -C $R --exclude=new .' EXIT
FILES="squeeze_excite_gn_large resnet_gn_bottleneck_large poolformer_block_large poolformer_block_mid"
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
if [ "$1" = build ]; then
  pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
  for n in $FILES; do
    python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $R/new/$n.py 2>/dev/null
    timeout 540 python3 benchmarks/kernel_variants.py $R/new/$n.py --kernel "kgen::" --backward \
      --file old=.build/tb/old/$n.py --build-only > $R/build_$n.log 2>&1 &
  done
  timeout 560 python3 -m pytest -q tests/gpu/test_gn_region_twopass.py -p no:cacheprovider \
    > $R/test_twopass.log 2>&1; echo "twopass tests rc $?"; tail -2 $R/test_twopass.log
  wait; echo "built $(( $(date +%s) - T0 )) s"; for f in $R/build_*.log; do tail -1 $f; done
else
  for n in $FILES; do
    timeout 100 python3 benchmarks/kernel_variants.py $R/new/$n.py --kernel "kgen::" --backward \
      --file old=.build/tb/old/$n.py --rounds 3 --json $R/check_$n.json > $R/check_$n.log 2>&1 || echo "$n failed"
    echo "== $n"; grep -E "^(base|old) " $R/check_$n.log | cut -c1-110
  done
  timeout 200 python3 -m kgen.cli validate $R/new/squeeze_excite_gn_large.py --trials 1 \
    > $R/validate_squeeze_excite_gn_large.log 2>&1; echo "validate rc $?"
  grep -E "verdict|RESULT|PASS|FAIL" $R/validate_squeeze_excite_gn_large.log | head -5
  timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q tests/gpu/test_gn_region_resident.py -p no:cacheprovider \
    > $R/test_resident.log 2>&1; echo "resident tests rc $?"; tail -2 $R/test_resident.log
  echo "total $(( $(date +%s) - T0 )) s"
fi
