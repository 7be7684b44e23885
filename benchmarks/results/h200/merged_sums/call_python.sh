#!/usr/bin/env bash
# The Function of a file emitted --autograd python on the same one-launch sums (region<i>_backward_summed): kgen
# validate of three merged files emitted so (.build/ms2 carried), the golden C++ node file again, and the C++ node
# against the Python Function to the bit on the two merged references with sums (bitwise.py).
# On the GPU machine from the repository root, .kb and .build/ms2 carried:
#   bash benchmarks/results/h200/merged_sums/call_python.sh
set -u; cd "$(dirname "$0")/../../../.."; T0=$(date +%s)
R=.build/merged_sums_python; mkdir -p $R; trap 'tar czf $OUT/merged_sums_python.tar.gz -C $R --exclude bitwise .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name --format=csv,noheader; python3 -c "import torch; print(torch.__version__)") > $R/machine.txt
timeout 300 python3 benchmarks/prebuild.py -j 8 .build/ms2/*.py generated/ref_audio_film_conv1d_merged.py > $R/prebuild.log 2>&1
echo "prebuild rc $? $(( $(date +%s) - T0 )) s"
for f in .build/ms2/*.py generated/ref_audio_film_conv1d_merged.py; do
  n=$(basename $f .py)
  (timeout 150 python3 -m kgen.cli validate $f --trials 1 > $R/validate_$n.log 2>&1; echo "validate $n rc $?") &
done
timeout 280 python3 benchmarks/results/h200/merged_sums/bitwise.py $R/bitwise > $R/bitwise.log 2>&1; echo "bitwise rc $?"
grep -v "^prebuild" $R/bitwise.log | tail -6
wait
echo "total $(( $(date +%s) - T0 )) s"
