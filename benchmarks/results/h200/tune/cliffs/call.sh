#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: kgen tune (block size 256; the region kernels forced
# resident / two-pass, the one-pass forward and the C++ node where they change the file) on the corpus rows whose
# kernels ran below half a copy's rate. Every candidate built first, 16 at a time; then one tune after another.
# Resumable on the warm machine (builds and finished tunes are cached): run it again until each has its table.
set -u
T0=$(date +%s)
D=benchmarks/results/h200/tune/cliffs
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/tune_cliffs.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
REFS=${REFS:-"audio_encoder_1d_large squeeze_excite_gn_large odd_shapes_large"}
P=.build/tune_pre; mkdir -p $P
if [ ! -f $P/done ]; then
  python3 $D/prebuild_candidates.py $P 256 $(for n in $REFS; do echo tests/corpus/$n.py; done) 2>&1 | grep -v Warn | tee $R/candidates.log
  timeout 300 python3 benchmarks/prebuild.py -j 16 $P/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
  touch $P/done
fi
for n in $REFS; do
  [ $(( $(date +%s) - T0 )) -gt ${BUDGET:-380} ] && { echo "budget: $n not started"; continue; }
  timeout 400 python3 -m kgen.cli tune tests/corpus/$n.py --block-sizes 256 -o $R/tuned_$n.py --json $R/tune_$n.json \
    > $R/tune_$n.log 2>&1; echo "$n tune rc $? $(( $(date +%s) - T0 )) s"
  grep -v Warn $R/tune_$n.log | tail -14
done
echo "total $(( $(date +%s) - T0 )) s"
