#!/usr/bin/env bash
# exp2 as a kernel op: gn_erf_log1p_exp2 one region (validate fp32/bf16), A/B against the split plan; test_conv_gn_lse.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt; git rev-parse --short HEAD >> $R/gpu.txt; git status --short >> $R/gpu.txt
X=.devrun/x
python3 -m kgen.cli emit --ref tests/ref/unseen/gn_erf_log1p_exp2.py -o $X/exp2_small.py 2> $R/emit.log
python3 -m kgen.cli emit --ref $X/gn_erf_log1p_exp2_large.py -o $X/exp2_region.py 2>> $R/emit.log
cp $X/exp2_split.py $X/exp2_region.py $R/
s=$(date +%s); timeout 200 python3 benchmarks/prebuild.py -j 16 $X/exp2_small.py $X/exp2_region.py $X/exp2_split.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
( timeout 150 python3 -m pytest -q tests/gpu/test_conv_gn_lse.py > $R/test_conv_gn_lse.log 2>&1; echo "lse rc $?: $(tail -1 $R/test_conv_gn_lse.log)" ) &
( timeout 150 python3 -m kgen.cli validate $X/exp2_small.py --trials 2 > $R/validate_exp2_small.log 2>&1; echo "small rc $?"
  timeout 150 python3 -m kgen.cli validate $X/exp2_small.py --trials 1 --precision bf16 > $R/validate_exp2_small_bf16.log 2>&1; echo "small bf16 rc $?" ) &
wait
timeout 150 python3 -m kgen.cli validate $X/exp2_region.py --trials 1 > $R/validate_exp2_large.log 2>&1; echo "large rc $?"
timeout 120 python3 benchmarks/kernel_variants.py $X/exp2_region.py --file split=$X/exp2_split.py --kernel . --backward --rounds 3 \
  --json $R/variants_exp2.json > $R/variants_exp2.log 2>&1; echo "variants rc $?"; tail -25 $R/variants_exp2.log
for f in region split; do timeout 120 python3 benchmarks/bench_problem.py $X/exp2_$f.py $X/gn_erf_log1p_exp2_large.py --json $R/bench_$f.json > $R/bench_$f.log 2>&1; echo "bench $f rc $?"; tail -12 $R/bench_$f.log; done
grep -h "^RESULT" $R/validate_*.log
