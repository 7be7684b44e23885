#!/usr/bin/env bash
# call 5: initcheck at bf16 on the Linear-fed families: the family, the reference alone, and the solution with
# F.linear's outputs copied by PyTorch (library-writes probe); the family at fp32 beside.
set -u
cd "$(dirname "$0")/.."
R=$OUT/r; mkdir -p $R
finish() { tar czf $OUT/call5.tar.gz -C $R . ; }
trap finish EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
python3 benchmarks/reliability_families.py emit rows rows-reduce faithful-rows > $R/files.txt
python3 benchmarks/prebuild.py -j 3 $(cat $R/files.txt) > $R/prebuild.log 2>&1
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
one() {  # FAMILY PRECISION PROBE
  local log=$R/$1.$2.${3:-solution}.initcheck.log
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 $CS --tool initcheck --target-processes application-only --error-exitcode 9 \
    --print-limit 20 python3 benchmarks/sanitize.py family:$1 --precision $2 ${3:+--probe $3} > $log 2>&1
  echo "$1 $2 ${3:-solution}: exit $? $(grep -o 'ERROR SUMMARY: [0-9]* error' $log | tail -1); kernels named: $(grep -oE '^=========     at [^(<]*' $log | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
for f in rows rows-reduce faithful-rows; do
  one $f bf16 & one $f bf16 reference & one $f bf16 library-writes & one $f fp32 & one $f fp16 &
done > $R/initcheck.txt
wait
sort $R/initcheck.txt
