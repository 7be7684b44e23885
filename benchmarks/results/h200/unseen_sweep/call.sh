#!/usr/bin/env bash
# A sweep of 45 unseen references (the largest files) at main: emit, build, kgen validate --trials 1 (with the
# eval-mode trial). Each file built and judged once; the list is benchmarks/results/h200/unseen_sweep/sweep_list.txt.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R/v; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git log --oneline -1 >> $R/gpu.txt; git status --short >> $R/gpu.txt
E=.devrun/sweep; mkdir -p $E
s=$(date +%s); xargs -P 16 -I{} sh -c 'python3 -m kgen.cli emit --ref {} -o '$E'/$(basename {}) 2>&1 | tail -1 || true' < benchmarks/results/h200/unseen_sweep/sweep_list.txt > $R/emit.log; echo "emit $(( $(date +%s) - s )) s, $(ls $E/*.py | wc -l) files"
s=$(date +%s); timeout 320 python3 benchmarks/prebuild.py -j 16 $E/*.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"; grep -c ": ok" $R/prebuild.log
s=$(date +%s)
ls $E/*.py | timeout 200 xargs -P 6 -I{} sh -c 'n=$(basename {} .py); timeout 150 python3 -m kgen.cli validate {} --trials 1 > '$R'/v/$n.log 2>&1; echo "$n rc $?"' > $R/validate_rc.txt
echo "validate $(( $(date +%s) - s )) s"; sort $R/validate_rc.txt | awk '{print $3}' | sort | uniq -c
grep -v "rc 0" $R/validate_rc.txt
for f in $(grep -v "rc 0" $R/validate_rc.txt | awk '{print $1}'); do echo "== $f"; grep -E "^RESULT|FAIL|Error" $R/v/$f.log | head -6; done
grep -v ": ok" $R/prebuild.log | head -20
