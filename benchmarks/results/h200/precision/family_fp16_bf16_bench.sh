#!/usr/bin/env bash
# The family at fp16 (verdicts) and bf16 (verdicts, then kgen / eager / torch.compile timed one problem at a time),
# resumable: the files emitted and built by call1.sh in .build/fam, a second call finishes the timings.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=$OUT/r; mkdir -p $R .build/fam
finish() { cp -r .build/fam $R/ 2>/dev/null; tar czf $OUT/results.tar.gz -C $R .; }
trap finish EXIT
LIMIT=${LIMIT:-520}
if ! grep -q '"fp16"' .build/fam/family.json 2>/dev/null || [ "${FP16:-1}" = 1 ]; then
  timeout $LIMIT python3 benchmarks/family.py .kb/problems .kb .build/fam --precisions fp16 --jobs 16 --workers 4 --resume \
    --budget $(( LIMIT - 280 - ($(date +%s) - T0) )) 2>&1 | tee $R/fam_fp16.log | grep -E "^L[12]-|prebuild:|emit:"
fi
echo "fp16 at $(( $(date +%s) - T0 )) s"
timeout $(( LIMIT - ($(date +%s) - T0) )) python3 benchmarks/family.py .kb/problems .kb .build/fam --precisions bf16 --bench --jobs 16 --workers 4 --resume \
  --budget $(( LIMIT - 20 - ($(date +%s) - T0) )) 2>&1 | tee $R/fam_bf16.log | grep -E "^L[12]-|prebuild:|emit:"
echo "done at $(( $(date +%s) - T0 )) s"
