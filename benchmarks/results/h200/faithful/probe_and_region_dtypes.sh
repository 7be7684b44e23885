#!/bin/bash
# The fp32 faithfulness probe (bitwise GroupNorm emulation, KernelBench's fp32 check on corpus chains) beside
# the region-dtypes GPU test (every reduction kind x 6 shapes x bf16/fp16 against float64).
set -u
pip install --no-build-isolation --no-deps -e . -q >/dev/null 2>&1
export PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
L=$OUT/logs; mkdir -p $L
( timeout 330 python3 -m pytest -q -x tests/gpu/test_region_dtypes.py > $L/test_region_dtypes.txt 2>&1; echo "exit $?" >> $L/test_region_dtypes.txt ) &
T=$!
timeout 330 python3 benchmarks/results/h200/faithful/probe.py > $L/faithful_probe.txt 2>&1
cat $L/faithful_probe.txt | grep -v Warning
wait $T; tail -5 $L/test_region_dtypes.txt
cp $OUT/faithful_probe.json $L/ 2>/dev/null
cd $OUT && tar czf logs.tgz logs && rm -rf logs
