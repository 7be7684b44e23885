#!/usr/bin/env bash
# The C++ autograd node on the GPU (bitwise against the Python Function, host time a call), a group count computed
# from the input's shape validated, and the family's 17 files emitted and built for the bf16/fp16 calls after.
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
R=$OUT/r; mkdir -p $R .build/pre .build/fam
finish() { cp -r .build/fam $R/ 2>/dev/null; tar czf $OUT/results.tar.gz -C $R .; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
MID=tests/corpus/mlp_groupnorm_mid.py
for mode in python cpp; do python3 -m kgen.cli emit --ref $MID --autograd $mode -o .build/pre/mlp_mid_$mode.py; done
python3 -m kgen.cli emit --ref tests/ref/unseen/gn_groups_from_shape.py -o .build/pre/groups_shape.py
(timeout -k 5 420 python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu/test_autograd_cpp.py > $R/autograd_cpp.log 2>&1; echo "exit $?" >> $R/autograd_cpp.log) &
(timeout 300 python3 benchmarks/prebuild.py -j 3 .build/pre/mlp_mid_python.py .build/pre/mlp_mid_cpp.py .build/pre/groups_shape.py > $R/prebuild.log 2>&1) &
(PYTHONPATH=/tmp/site:$PWD timeout 400 python3 benchmarks/family.py .kb/problems .kb .build/fam --precisions bf16,fp16 --jobs 8 --budget 1 > $R/fam_build.log 2>&1) &
wait %2
echo "prebuild done at $(( $(date +%s) - T0 )) s"; tail -4 $R/prebuild.log
python3 -m kgen.cli validate .build/pre/groups_shape.py --json $R/validate_groups_shape.json > $R/validate_groups_shape.log 2>&1; echo "exit $?" >> $R/validate_groups_shape.log
tail -6 $R/validate_groups_shape.log
wait
echo "builds done at $(( $(date +%s) - T0 )) s"; tail -8 $R/autograd_cpp.log; tail -3 $R/fam_build.log
for mode in python cpp; do
  python3 benchmarks/host_profile.py .build/pre/mlp_mid_$mode.py --reference $MID --json $R/host_mlp_mid_$mode.json 2>&1 | grep -v Warn > $R/host_mlp_mid_$mode.log
  echo "== host $mode"; head -6 $R/host_mlp_mid_$mode.log
done
for mode in python cpp; do
  timeout 120 python3 benchmarks/bench_problem.py .build/pre/mlp_mid_$mode.py $MID --json $R/bench_mlp_mid_$mode.json 2>&1 | grep -v Warn | tail -4
done
python3 -m kgen.cli validate .build/pre/mlp_mid_cpp.py --json $R/validate_mlp_mid_cpp.json > $R/validate_mlp_mid_cpp.log 2>&1; echo "exit $?" >> $R/validate_mlp_mid_cpp.log
grep -v "Warn\|warn_once" $R/validate_mlp_mid_cpp.log | tail -25
echo "done at $(( $(date +%s) - T0 )) s"
