#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: odd_shapes_large's window forward kernel (3x3 max over
# mish, one thread a pooled output) with 4 (the template), 8 and 16 of a window's loads in flight, built at once and
# timed in one process (kernel_variants.py: the kernel's median CUDA time, outputs against the base file's); then
# what bounds it and the pipelined backward of audio_encoder_1d_large (ncu_bounds.py).
set -u
T0=$(date +%s)
D=benchmarks/results/h200/window_forward
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/window_forward.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
W=.build/wf; mkdir -p $W
python3 -m kgen.cli emit --ref tests/corpus/odd_shapes_large.py -o $W/odd_shapes_large.py 2>/dev/null &
python3 -m kgen.cli emit --ref tests/corpus/audio_encoder_1d_large.py -o $W/audio_encoder_1d_large.py 2>/dev/null &
wait
python3 $D/make_variants.py $W/odd_shapes_large.py $W 8 16
timeout 240 python3 benchmarks/prebuild.py -j 16 $W/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
timeout 120 python3 benchmarks/kernel_variants.py $W/odd_shapes_large.py --kernel window_forward \
  --file loads8=$W/loads8.py --file loads16=$W/loads16.py --rounds 3 --json $R/variants.json > $R/variants.log 2>&1
echo "variants rc $? $(( $(date +%s) - T0 )) s"; tail -15 $R/variants.log
timeout 200 python3 benchmarks/ncu_bounds.py $R/ncu $W/odd_shapes_large.py $W/audio_encoder_1d_large.py --timeout 95 \
  > $R/ncu.log 2>&1; echo "ncu rc $? $(( $(date +%s) - T0 )) s"
cat $R/ncu/NCU_BOUNDS.md 2>/dev/null | cut -c1-400 | head -30; tail -5 $R/ncu.log
echo "total $(( $(date +%s) - T0 )) s"
