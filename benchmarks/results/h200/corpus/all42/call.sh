#!/usr/bin/env bash
# The corpus's verdicts at main: every tests/corpus reference emitted, kgen validate (2 trials) and KernelBench's evaluator
# (5 trials), six at a time; resumable on the warm machine (.build/corpus_verdicts).
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
F=.build/corpus_verdicts; mkdir -p $F
trap 'tar czf $OUT/corpus_verdicts.tar.gz --exclude="*.py" --exclude="*.emit.json" -C $F .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $F/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $F/gpu.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $F/gpu.txt
git log -1 --format=%h >> $F/gpu.txt 2>/dev/null
python3 benchmarks/family.py tests/corpus .kb $F --glob "*_*.py" --trials 2 --resume --budget ${BUDGET:-500} \
  --workers 6 --jobs 16 --timeout 300 ${EXTRA:-} 2>&1 | tee -a $F/family.log | grep -E "validate exit|prebuild:|emit:|resume:|^[a-z0-9_]+ " | tail -60
echo "total $(( $(date +%s) - T0 )) s"
