#!/bin/bash
# Call 2: bf16 GroupNorm statistics rounded as PyTorch's (the five KernelBench bf16 rows, the half-model GPU test);
# float32 timings before the precision work (3f5077e) against now; L2-85 fp32 validated again (the escalated arbiter).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
load() { python3 -c "import importlib.util,sys,time; t=time.time(); s=importlib.util.spec_from_file_location('m', sys.argv[1]); m=importlib.util.module_from_spec(s); s.loader.exec_module(m); print('BUILT', round(time.time()-t))" "$1"; }
PIDS=()
for f in groupnorm conv_gn_tanh_hardswish_res_lse convt_gelu_groupnorm; do
  ( load .devrun/base_$f.py > $L/build_base_$f.log 2>&1 ) & PIDS+=($!)
  ( load generated/$f.py > $L/build_new_$f.log 2>&1 ) & PIDS+=($!)
done
# stream A: the five bf16 rows (emit, kgen validate, KernelBench --precision bf16, 5 trials) then L2-85 at fp32
(
  F=$L/family_bf16; mkdir -p $F
  python3 benchmarks/family.py .kb/problems .kb $F --trials 5 --workers 4 --jobs 8 --precisions bf16 --budget 400 \
     --only 11,21,60,75,88 > $F/family.log 2>&1
  echo "family bf16 done $(( $(date +%s) - T0 )) s" >> $L/streamA.txt
  python3 -m kgen.cli emit --ref .kb/problems/level2_85_Conv2d_GroupNorm_Scale_MaxPool_Clamp.py > $L/l285.py 2>$L/l285.err
  timeout 200 python3 -m kgen.cli validate $L/l285.py --trials 5 > $L/validate_l285_fp32.txt 2>&1
  echo "L2-85 fp32 validate exit $? at $(( $(date +%s) - T0 )) s" >> $L/streamA.txt
) &
A=$!
# stream B: the GPU tests of half models (both forward variants' files)
( timeout 420 python3 -m pytest -q tests/gpu/test_groupnorm.py -k "half" > $L/test_half.txt 2>&1; echo "test exit $?" >> $L/test_half.txt ) &
B=$!
wait "${PIDS[@]}"
echo "builds done $(( $(date +%s) - T0 )) s"; grep -h BUILT $L/build_*.log | tr '\n' ' '; echo
# timings at fp32 (the GPU shared with stream A's checks until they end: see streamA.txt for when)
wait $A
cd .devrun
for p in "groupnorm level1_35_groupnorm" "conv_gn_tanh_hardswish_res_lse level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp" "convt_gelu_groupnorm level2_19_convtranspose2d_gelu_groupnorm"; do
  set -- $p
  ROUNDS=3 timeout 120 python3 time_files.py ../kgen/specs/references/$2.py base_$1.py ../generated/$1.py 2>&1 | grep -v Warn | tee -a $L/timing_fp32.txt
done
cd ..
wait $B
cat $L/streamA.txt; tail -3 $L/test_half.txt; grep -E "^L2-" $L/family_bf16/family.log; grep -E "RESULT" $L/validate_l285_fp32.txt
echo "all $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
