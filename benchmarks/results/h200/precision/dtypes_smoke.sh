#!/bin/bash
# dtypes: native half sweeps (harness tests), and kgen validate at bf16 / fp16 / autocast on golden files of every kind.
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
export TORCH_EXTENSIONS_DIR=/tmp/kgen_ext MAX_JOBS=4
L=$OUT/logs; mkdir -p $L
T0=$(date +%s)
load() { python3 -c "import importlib.util,sys,time; t=time.time(); s=importlib.util.spec_from_file_location('m', sys.argv[1]); m=importlib.util.module_from_spec(s); s.loader.exec_module(m); print('BUILT', round(time.time()-t))" "$1"; }
FILES="groupnorm conv_gn_tanh_hardswish_res_lse ref_level2_85_conv2d_groupnorm_scale_maxpool_clamp ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm ref_level2_75_gemm_groupnorm_min_biasadd ref_level2_37_matmul_swish_sum_groupnorm convt_gelu_groupnorm_fused"
for f in $FILES; do ( load generated/$f.py > $L/build_$f.log 2>&1 ) & done
( python3 -c "
import sys; sys.path.insert(0,'.')
from tests.gpu import region_harness_twopass as H; H.build_extension(); print('BUILT harness')" > $L/build_harness.log 2>&1 ) &
wait
echo "builds $(( $(date +%s) - T0 )) s" > $L/times.txt
grep -h BUILT $L/build_*.log; grep -l -i "error" $L/build_*.log | head
timeout 200 python3 -m pytest -q -x tests/gpu/test_gn_region_twopass.py -k "half_storage" > $L/pytest_half.txt 2>&1; echo "half tests exit $?"; tail -n 5 $L/pytest_half.txt
echo "tests $(( $(date +%s) - T0 )) s" >> $L/times.txt
v() { # name file args...
  local n=$1 f=$2; shift 2
  timeout 150 python3 -m kgen.cli validate generated/$f.py --trials 1 "$@" > $L/validate_$n.txt 2>&1; echo "$n exit $?"; }
( v gn_bf16 groupnorm --precision bf16; v gn_fp16 groupnorm --precision fp16; v gn_ac groupnorm --autocast bf16 ) > $L/g1.txt 2>&1 &
( v l292_bf16 conv_gn_tanh_hardswish_res_lse --precision bf16; v l292_fp16 conv_gn_tanh_hardswish_res_lse --precision fp16; v l292_ac conv_gn_tanh_hardswish_res_lse --autocast bf16 ) > $L/g2.txt 2>&1 &
( v l285_bf16 ref_level2_85_conv2d_groupnorm_scale_maxpool_clamp --precision bf16; v l211_bf16 ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm --precision bf16; v l211_fp16 ref_level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm --precision fp16 ) > $L/g3.txt 2>&1 &
( v l275_bf16 ref_level2_75_gemm_groupnorm_min_biasadd --precision bf16; v l237_bf16 ref_level2_37_matmul_swish_sum_groupnorm --precision bf16; v fused_bf16 convt_gelu_groupnorm_fused --precision bf16; v fused_ac convt_gelu_groupnorm_fused --autocast bf16 ) > $L/g4.txt 2>&1 &
wait
cat $L/g?.txt
for f in $L/validate_*.txt; do echo "== $f"; grep -E "PASS|FAIL|BROKEN|verdict|Error|error" $f | head -6; done
echo "all $(( $(date +%s) - T0 )) s" >> $L/times.txt; cat $L/times.txt
timeout 200 python3 -m pytest -q tests/gpu/test_gn_region_twopass.py -k "not half_storage" > $L/pytest_twopass.txt 2>&1; echo "twopass tests exit $?"; tail -n 3 $L/pytest_twopass.txt
echo "end $(( $(date +%s) - T0 )) s" >> $L/times.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
