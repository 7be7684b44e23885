#!/usr/bin/env bash
# addcdiv and lerp as kernel ops: the formulas' bits against PyTorch's kernels; gn_addcdiv_lerp_params one region
# (validate fp32 / bf16), A/B against the split plan at 33.5 M values.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
X=.devrun/x
python3 -m kgen.cli emit --ref tests/ref/unseen/gn_addcdiv_lerp_params.py -o $X/acl_small.py 2> $R/emit.log
python3 -m kgen.cli emit --ref $X/gn_addcdiv_lerp_large.py -o $X/acl_region.py 2>> $R/emit.log
( timeout 200 python3 -m pytest -q tests/gpu/test_op_table_bits.py > $R/test_op_table_bits.log 2>&1; echo "bits rc $?: $(tail -1 $R/test_op_table_bits.log)" ) &
s=$(date +%s); timeout 200 python3 benchmarks/prebuild.py -j 15 $X/acl_small.py $X/acl_region.py $X/acl_split.py > $R/prebuild.log 2>&1; echo "prebuild rc $? $(( $(date +%s) - s )) s"
( timeout 150 python3 -m kgen.cli validate $X/acl_small.py --trials 2 > $R/validate_acl_small.log 2>&1; echo "small rc $?"
  timeout 150 python3 -m kgen.cli validate $X/acl_small.py --trials 1 --precision bf16 > $R/validate_acl_small_bf16.log 2>&1; echo "small bf16 rc $?" ) &
timeout 150 python3 -m kgen.cli validate $X/acl_region.py --trials 1 > $R/validate_acl_large.log 2>&1; echo "large rc $?"
wait
timeout 120 python3 benchmarks/kernel_variants.py $X/acl_region.py --file split=$X/acl_split.py --kernel . --backward --rounds 3 \
  --json $R/variants_acl.json > $R/variants_acl.log 2>&1; echo "variants rc $?"; grep -v Warn $R/variants_acl.log | tail -4 | cut -c1-400
for f in region split; do timeout 110 python3 benchmarks/bench_problem.py $X/acl_$f.py $X/gn_addcdiv_lerp_large.py --json $R/bench_$f.json > $R/bench_$f.log 2>&1; echo "bench $f rc $?"; grep -E "^forward" $R/bench_$f.log; done
grep -h "^RESULT\|verdict" $R/validate_*.log
