#!/bin/bash
# The corpus (tests/corpus, 42 references) on the GPU: emit, build, kgen validate, KernelBench (fp32, 5 trials),
# then kgen / eager / torch.compile timed; --resume so a second call on the warm machine finishes the table.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
BUDGET=${1:-480}
C=$PWD/.build/corpus_out; mkdir -p $C
T0=$(date +%s)
timeout $((BUDGET + 60)) python3 benchmarks/family.py tests/corpus .kb $C --glob "*_*.py" --bench --resume \
   --workers 4 --jobs 16 --budget $BUDGET --min-run-time 0.5 >> $C/family.log 2>&1
grep -E "^emit:|prebuild:|validate exit|bench exit|FAILED" $C/family.log | tail -100
echo "corpus call $(( $(date +%s) - T0 )) s"
mkdir -p $OUT/logs && cp -r $C $OUT/logs/corpus && cd $OUT && tar czf logs.tgz logs && rm -rf logs
