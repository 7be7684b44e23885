#!/usr/bin/env bash
# On the GPU machine (device tool), from the repository root: the regions that are not faithful with their forward
# values in the ops' cheaper forms (mish, sigmoid, SiLU: OpDef.recompute). odd_shapes_large's window forward kernel
# timed against the file before (BASE, emitted at the parent commit and carried in .build/wf_base), then kgen validate,
# KernelBench's evaluator and the timings of every file that changed: odd_shapes (3 sizes) and L2-88.
set -u
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
trap 'tar czf $OUT/cheap.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > $R/pip.log 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
W=.build/wf_new; mkdir -p $W
python3 -m kgen.cli emit --ref tests/corpus/odd_shapes_large.py -o $W/odd_shapes_large.py 2>/dev/null
timeout 200 python3 benchmarks/prebuild.py -j 16 $W/odd_shapes_large.py .build/wf_base/odd_shapes_large.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
timeout 90 python3 benchmarks/kernel_variants.py .build/wf_base/odd_shapes_large.py --kernel "window_|stats_" \
  --file cheap=$W/odd_shapes_large.py --rounds 3 --backward --json $R/variants.json > $R/variants.log 2>&1
echo "variants rc $? $(( $(date +%s) - T0 )) s"; grep -v Warn $R/variants.log | tail -12
F=.build/cheap_family; mkdir -p $F
timeout 200 python3 benchmarks/family.py tests/corpus .kb $F --glob "*_*.py" --only odd_shapes_large,odd_shapes_mid,odd_shapes_tiny \
  --trials 1 --workers 3 --jobs 16 --timeout 150 --skip-kernelbench --bench --min-run-time 0.2 --budget 150 > $R/family_corpus.log 2>&1
echo "corpus rc $? $(( $(date +%s) - T0 )) s"; cp $F/FAMILY.md $R/FAMILY_corpus.md; cp $F/family.json $R/family_corpus.json
grep -E "validate exit|bench exit" $R/family_corpus.log
G=.build/cheap_kb; mkdir -p $G
timeout 200 python3 benchmarks/family.py .kb/problems .kb $G --only 88 --trials 1 --jobs 16 --timeout 150 --bench \
  --min-run-time 0.2 > $R/family_kb.log 2>&1
echo "kb rc $? $(( $(date +%s) - T0 )) s"; cp $G/FAMILY.md $R/FAMILY_kb.md; cp $G/family.json $R/family_kb.json
cut -c1-120 $R/FAMILY_corpus.md | head -6; awk -F'|' 'NR>2 && NR<7 {print $2,$4,$5,$6,$7}' $R/FAMILY_corpus.md $R/FAMILY_kb.md
echo "total $(( $(date +%s) - T0 )) s"
