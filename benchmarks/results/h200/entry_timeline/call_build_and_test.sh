#!/usr/bin/env bash
# First call: the GPU tests of main's untested changes (the `_call` of --conv fast files, block_sums as team_sums, the
# NHWC entry points) beside the builds of the files whose entry points call_timeline.sh then times on a quiet host.
# On the GPU machine from the repository root, .kb carried:
#   bash benchmarks/results/h200/entry_timeline/call_build_and_test.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/entry_timeline; mkdir -p $R; trap 'tar czf $OUT/build_and_test.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
T="python3 -m pytest -q -p no:cacheprovider"
timeout 560 $T tests/gpu/test_convt_gelu_groupnorm.py -k "fast or channels_last or backward" > $R/test_convt.log 2>&1 & P1=$!
timeout 560 $T tests/gpu/test_gn_region_twopass.py tests/gpu/test_gn_region_cluster.py > $R/test_twopass_cluster.log 2>&1 & P2=$!
timeout 560 $T tests/gpu/test_gn_region_nhwc.py > $R/test_nhwc.log 2>&1 & P3=$!
F=.build/timeline_files; mkdir -p $F
for n in poolformer_block_tiny two_norm_gate_mid diffusion_resblock_mid attention_block_tiny; do
  python3 -m kgen.cli emit --ref tests/corpus/$n.py -o $F/$n.py 2>/dev/null || echo "emit $n failed"
done
timeout 400 python3 benchmarks/prebuild.py -j 4 $F/*.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
wait $P1; echo "convt: $(tail -1 $R/test_convt.log)"
wait $P2; echo "twopass+cluster: $(tail -1 $R/test_twopass_cluster.log)"
wait $P3; echo "nhwc: $(tail -1 $R/test_nhwc.log)"
echo "total $(( $(date +%s) - T0 )) s"
