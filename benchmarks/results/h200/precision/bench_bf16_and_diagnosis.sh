#!/bin/bash
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/kgen_ext MAX_JOBS=4
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
python3 -m kgen.cli emit --ref .kb/problems/level2_21_Conv2d_Add_Scale_Sigmoid_GroupNorm.py > $L/l221.py 2>$L/l221.err
python3 -m kgen.cli emit --ref .kb/problems/level2_23_Conv3d_GroupNorm_Mean.py > $L/l223.py 2>$L/l223.err
load() { python3 -c "import importlib.util,sys,time; t=time.time(); s=importlib.util.spec_from_file_location('m', sys.argv[1]); m=importlib.util.module_from_spec(s); s.loader.exec_module(m); print('BUILT', round(time.time()-t))" "$1"; }
for f in $L/l221.py $L/l223.py generated/groupnorm.py generated/conv_gn_tanh_hardswish_res_lse.py generated/convt_gelu_groupnorm.py; do ( load $f > $L/build_$(basename $f).log 2>&1 ) & done
wait; echo "builds $(( $(date +%s) - T0 )) s"; grep -h BUILT $L/build_*.log
timeout 60 python3 benchmarks/results/h200/precision/diag_l2_21_bf16.py $L/l221.py 2>&1 | grep -v Warn | tee $L/diag.txt
timeout 90 python3 -m kgen.cli validate $L/l223.py --precision fp16 --trials 1 > $L/validate_l223_fp16.txt 2>&1; echo "L2-23 fp16 exit $?"; grep -E "follows|RESULT" $L/validate_l223_fp16.txt
B() { timeout 150 python3 benchmarks/bench_problem.py generated/$1.py kgen/specs/references/$2.py --precision bf16 --min-run-time 1 --json $L/bench_$1_bf16.json > $L/bench_$1_bf16.txt 2>&1; echo "$1 exit $?"; tail -n 12 $L/bench_$1_bf16.txt; }
B groupnorm level1_35_groupnorm
B conv_gn_tanh_hardswish_res_lse level2_92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp
B convt_gelu_groupnorm level2_19_convtranspose2d_gelu_groupnorm
echo "all $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
