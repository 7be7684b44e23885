#!/usr/bin/env bash
# Each element-wise step one C++ autograd node (new_, `kgen emit --ref`) against its Python Function (old_: the
# default file before element-wise nodes, regions already nodes; emitted at 382cfcb and carried in .build/pw) on the
# corpus references that have element-wise steps: both files and eager in one process
# (../../region_reads/compare.py: outputs and every gradient bit for bit, forward and forward+backward wall time,
# the three alternating round by round), then where the new file's host time goes (benchmarks/host_profile.py).
# Beside it: tests/gpu/test_autograd_cpp.py (every node file against its --autograd python twin, bit for bit) and the
# region node's bad-input test, one case a process under faulthandler.
# On the GPU machine from the repository root, .kb and .build/pw carried: bash call.sh
set -u; cd "$(dirname "$0")/../../../../.."; T0=$(date +%s)
R=.build/pw_results; mkdir -p $R; trap 'tar czf $OUT/r.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.build/pw; NAMES="poolformer_block_tiny resnet_gn_bottleneck_tiny poolformer_block_mid resnet_gn_bottleneck_mid"
(git rev-parse --short HEAD; git status --short | head -20; nvidia-smi --query-gpu=name --format=csv,noheader;
 python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
timeout 420 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_autograd_cpp.py > $R/test_autograd_cpp.log 2>&1 &
P1=$!
timeout 400 python3 benchmarks/prebuild.py -j 8 $F/*.py emit:conv-gn-tanh-hardswish-res-lse > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for c in rank cpu float64 weight groups parameter parameters; do
  timeout 60 python3 -X faulthandler -m pytest -q -p no:cacheprovider tests/gpu/test_conv_gn_lse.py \
    -k "bad_region and $c" > $R/bad_region_$c.log 2>&1; echo "bad_region[$c] rc $?"
done
for n in $NAMES; do
  timeout 90 python3 benchmarks/results/h200/region_reads/compare.py tests/corpus/$n.py $F/old_$n.py $F/new_$n.py \
    $R/cmp_$n.json > $R/cmp_$n.log 2>&1 || echo "$n failed"
  tail -1 $R/cmp_$n.log | cut -c1-400
done
for n in poolformer_block_tiny resnet_gn_bottleneck_tiny; do
  timeout 90 python3 benchmarks/host_profile.py $F/new_$n.py --reference tests/corpus/$n.py --top 30 \
    --json $R/host_$n.json > $R/host_$n.log 2>&1 || echo "host $n failed"
done
wait $P1; echo "autograd tests: $(tail -1 $R/test_autograd_cpp.log)"
echo "total $(( $(date +%s) - T0 )) s"
