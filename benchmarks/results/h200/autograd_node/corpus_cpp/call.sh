#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: every tests/corpus reference emitted with
# --autograd cpp (each region one C++ autograd node), built 16 at a time, kgen validate (1 trial, 8 at once); then where
# the host time of the worst host-bound rows goes (host_profile --api, host_timeline), node file against eager.
# Resumable on the warm machine: run it again until every row has its verdict.
set -u
T0=$(date +%s)
F=.build/corpus_cpp; mkdir -p $F
trap 'tar czf $OUT/corpus_cpp.tar.gz --exclude="*.py" --exclude="*.emit.json" -C $F .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $F/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $F/gpu.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $F/gpu.txt
python3 benchmarks/family.py tests/corpus .kb $F --glob "*_*.py" --trials 1 --resume --budget ${BUDGET:-400} \
  --workers 8 --jobs 16 --timeout 240 --skip-kernelbench --emit-args "--autograd cpp" 2>&1 | tee -a $F/family.log \
  | grep -E "validate exit|prebuild:|emit:|resume:|budget" | tail -50
E=.build/family__autogradcpp
for n in ${PROFILE:-two_norm_gate_tiny diffusion_resblock_tiny}; do
  [ -f $E/$n.py ] || continue
  timeout 60 python3 benchmarks/host_profile.py $E/$n.py --reference tests/corpus/$n.py --api --rounds 7 --calls 100 \
    > $F/host_$n.log 2>&1; tail -25 $F/host_$n.log
  timeout 60 python3 benchmarks/host_timeline.py $E/$n.py --reference tests/corpus/$n.py --top 40 > $F/timeline_$n.log 2>&1
  head -60 $F/timeline_$n.log
done
echo "total $(( $(date +%s) - T0 )) s"
