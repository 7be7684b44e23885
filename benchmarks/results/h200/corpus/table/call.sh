#!/usr/bin/env bash
# The corpus timed at main: every tests/corpus reference emitted, built, kgen validate (1 trial) beside a torch.compile
# warm-up of its reference (8 at a time), then kgen / eager / torch.compile forward and forward+backward, one problem
# at a time. Resumable on the warm machine (.build/corpus_table): run it again until every row is timed.
set -u
cd "$(dirname "$0")/../../../../.."
T0=$(date +%s)
F=.build/corpus_table; mkdir -p $F
trap 'tar czf $OUT/corpus_table.tar.gz --exclude="*.py" --exclude="*.emit.json" -C $F .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $F/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $F/gpu.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $F/gpu.txt
git log -1 --format=%h >> $F/gpu.txt 2>/dev/null; git status --short >> $F/gpu.txt
python3 benchmarks/family.py tests/corpus .kb $F --glob "*_*.py" --trials 1 --resume --budget ${BUDGET:-540} \
  --workers 8 --jobs 16 --timeout 240 --skip-kernelbench --bench --min-run-time 0.2 2>&1 | tee -a $F/family.log \
  | grep -E "validate exit|prebuild:|emit:|resume:|bench exit|bench not run|budget" | tail -70
echo "total $(( $(date +%s) - T0 )) s"
