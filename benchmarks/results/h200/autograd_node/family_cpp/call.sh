#!/usr/bin/env bash
# The 17 family problems emitted with --autograd cpp: kgen validate and KernelBench's evaluator (fp32). From the
# repository root on the GPU machine with .kb carried: bash benchmarks/results/h200/autograd_node/family_cpp/call.sh
set -u; cd "$(dirname "$0")/../../../../.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
timeout 440 python3 benchmarks/family.py .kb/problems .kb $R/family --trials 2 --workers 6 --jobs 16 --budget 330 \
  --emit-args "--autograd cpp" > $R/family.log 2>&1; echo "family rc $?"
tail -4 $R/family.log; ls $R/family | head
grep -o "| L[0-9-]* |[^|]*|[^|]*| [A-Z]* | [a-z]*" $R/family/FAMILY.md 2>/dev/null | sed 's/|[^|]*|[^|]*|/|/' | head -20
