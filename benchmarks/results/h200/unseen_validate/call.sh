#!/usr/bin/env bash
# Warm machine: validate the unseen files (6 at a time) while nothing else times; then ncu on L2-37's bf16 forward.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
F=.devrun/files
timeout 200 python3 benchmarks/prebuild.py -j 16 $F/l2_37.py $(sed "s|^|$F/|;s|$|.py|" .devrun/unseen.txt) > $R/prebuild2.log 2>&1; tail -1 $R/prebuild2.log
cat .devrun/unseen.txt | xargs -P 6 -I{} sh -c "timeout 240 python3 -m kgen.cli validate $F/{}.py --trials 1 > $R/validate_{}.log 2>&1; echo \"{} exit \$?\"" | sort
for d in bf16 fp32; do
  timeout 150 ncu --kernel-name regex:rows --launch-skip 1 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section InstructionStats --section WarpStateStats --section Occupancy python3 benchmarks/run_solution_once.py $F/l2_37.py --calls 3 --dtype $d \
    > $R/ncu_l2_37_$d.log 2>&1; echo "ncu $d rc=$?"
done
grep -E "rows|Duration|Throughput|Issue Slots|Executed Ipc|Pipe|Stall|Warp Cycles|Achieved Occ" $R/ncu_l2_37_bf16.log | head -40
