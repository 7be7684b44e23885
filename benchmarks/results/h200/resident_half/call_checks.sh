#!/usr/bin/env bash
# After call_tests.sh, on the same warm machine (its extensions kept in .build/ext), three calls, each a step below:
#   bash benchmarks/results/h200/resident_half/call_checks.sh tests      # both test files whole -> tests.log
#   bash benchmarks/results/h200/resident_half/call_checks.sh variants   # old/new kernels and copies -> variants/
#   bash benchmarks/results/h200/resident_half/call_checks.sh bench      # validate, bench_problem -> bench_validate.tar.gz
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
B=.build/rh
case "$1" in
tests)
  mkdir -p $OUT/t
  timeout 500 python3 -m pytest -q tests/gpu/test_resident_half.py tests/gpu/test_region_dtypes.py > $OUT/t/tests.log 2>&1
  echo rc $?; grep -E "passed|failed" $OUT/t/tests.log | tail -3 ;;
variants)
  R=$OUT/v; mkdir -p $R
  for n in l2_11 diffusion_resblock_mid resnet_gn_bottleneck_large attention_block_large gan_generator_up_mid \
           squeeze_excite_gn_large; do
    for d in bf16 fp32; do
      [ $d = fp32 ] && [ $n != l2_11 ] && [ $n != diffusion_resblock_mid ] && continue
      timeout 100 python3 benchmarks/kernel_variants.py $B/old/$n.py --file new=$B/new/$n.py --backward --rounds 3 \
        --kernel "kgen::|copy|add|elementwise|reduce" --dtype $d --json $R/variants_${n}_$d.json \
        > $R/variants_${n}_$d.log 2>&1 || echo "$n $d failed"
      echo "== $n $d"; grep -E "max\|diff\||^(base|new) " $R/variants_${n}_$d.log | cut -c1-110
    done
  done ;;
bench)
  R=.build/rh_out2; mkdir -p $R; trap 'tar czf $OUT/rh_bench.tar.gz -C $R .' EXIT
  V="timeout 200 python3 -m kgen.cli validate --trials 1"
  ($V $B/new/l2_11.py --precision bf16 > $R/validate_l2_11_bf16.log 2>&1; echo "l2_11 bf16 rc $?" >> $R/rc.txt) &
  ($V $B/new/l2_11.py --precision fp16 > $R/validate_l2_11_fp16.log 2>&1; echo "l2_11 fp16 rc $?" >> $R/rc.txt) &
  ($V $B/new/gan_generator_up_mid.py --precision bf16 > $R/validate_gan_bf16.log 2>&1; echo "gan bf16 rc $?" >> $R/rc.txt) &
  ($V $B/new/squeeze_excite_gn_large.py --precision fp16 > $R/validate_se_fp16.log 2>&1; echo "se fp16 rc $?" >> $R/rc.txt) &
  wait; cat $R/rc.txt
  for v in new old; do
    timeout 200 python3 benchmarks/bench_problem.py $B/$v/l2_11.py .kb/problems/level2_11_*.py --precision bf16 \
      --json $R/bench_l2_11_bf16_$v.json > $R/bench_l2_11_bf16_$v.log 2>&1 || echo "bench $v failed"
    grep -iE "forward" $R/bench_l2_11_bf16_$v.log | head -4 | cut -c1-140
  done ;;
esac
echo "total $(( $(date +%s) - T0 )) s"
