#!/usr/bin/env bash
# After call_tests.sh, on the same warm machine (its extensions kept in .build/ext), one call a step:
#   bash benchmarks/results/h200/resident_half_tiles/call_checks.sh checks    # float32 resident tests, sanitizer -> checks.tar.gz
#   bash benchmarks/results/h200/resident_half_tiles/call_checks.sh variants  # old/new kernels and copies -> variants.tar.gz
#   bash benchmarks/results/h200/resident_half_tiles/call_checks.sh bench     # validate, bench_problem -> bench.tar.gz
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
B=.build/rs
case "$1" in
checks)
  R=.build/rt_checks; mkdir -p $R; trap 'tar czf $OUT/checks.tar.gz -C $R .' EXIT
  (timeout 450 python3 -m pytest -q tests/gpu/test_gn_region_resident.py > $R/resident_fp32.log 2>&1;
   echo "rc $?" >> $R/resident_fp32.log) &
  for f in none_plain mean_plane max_window; do
    for tool in memcheck racecheck; do
      timeout 400 compute-sanitizer --tool $tool --error-exitcode 9 python3 benchmarks/run_solution_once.py \
        .build/rt_tests/resident_half_$f.py --backward --calls 1 --dtype bf16 > $R/sanitize_${f}_$tool.log 2>&1
      echo "$f $tool rc $?" >> $R/sanitize.txt
    done
  done
  wait; cat $R/sanitize.txt; tail -2 $R/resident_fp32.log ;;
variants)
  R=.build/rt_variants; mkdir -p $R; trap 'tar czf $OUT/variants.tar.gz -C $R .' EXIT
  for n in l2_11 diffusion_resblock_mid resnet_gn_bottleneck_large gan_generator_up_mid squeeze_excite_gn_large; do
    for d in bf16 fp32; do
      [ $d = fp32 ] && [ $n != l2_11 ] && [ $n != diffusion_resblock_mid ] && continue
      timeout 100 python3 benchmarks/kernel_variants.py $B/old/$n.py --file new=$B/new/$n.py --backward --rounds 3 \
        --kernel "kgen::|copy|add|elementwise|reduce" --dtype $d --json $R/variants_${n}_$d.json \
        > $R/variants_${n}_$d.log 2>&1 || echo "$n $d failed"
      echo "== $n $d"; grep -E "max\|diff\||^(base|new) " $R/variants_${n}_$d.log | cut -c1-110
    done
  done ;;
bench)
  R=.build/rt_bench; mkdir -p $R; trap 'tar czf $OUT/bench.tar.gz -C $R .' EXIT
  V="timeout 200 python3 -m kgen.cli validate --trials 1"
  ($V $B/new/l2_11.py --precision bf16 > $R/validate_l2_11_bf16.log 2>&1; echo "l2_11 bf16 rc $?" >> $R/rc.txt) &
  ($V $B/new/gan_generator_up_mid.py --precision fp16 > $R/validate_gan_fp16.log 2>&1; echo "gan fp16 rc $?" >> $R/rc.txt) &
  ($V $B/new/diffusion_resblock_mid.py --precision bf16 > $R/validate_diff_bf16.log 2>&1; echo "diff bf16 rc $?" >> $R/rc.txt) &
  wait; cat $R/rc.txt
  for v in new old; do
    timeout 200 python3 benchmarks/bench_problem.py $B/$v/l2_11.py .kb/problems/level2_11_*.py --precision bf16 \
      --json $R/bench_l2_11_bf16_$v.json > $R/bench_l2_11_bf16_$v.log 2>&1 || echo "bench $v failed"
    grep -iE "forward" $R/bench_l2_11_bf16_$v.log | head -4 | cut -c1-140
  done ;;
esac
echo "total $(( $(date +%s) - T0 )) s"
