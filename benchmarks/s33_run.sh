#!/usr/bin/env bash
# Session 33's device calls, by name (the record of what ran; logs under benchmarks/h100/s33/).
# Files are emitted HERE (kgen emit --ref, ~4 s a file on this CPU against 10-20 s on the device's) into
# .build/s33/ and carried; the device prebuilds and validates them.
#   run1: what session 32 could not run (its device time was spent): the three probes behind its validate fixes
#         (the reference's own backward raising, KernelBench's float32 cast of an index input, element-wise ops
#         left to PyTorch), the spec-generated files (core/common.cuh changed: built_for_sm90 moved there), and the
#         KernelBench problems not validated at their own shapes since the cluster forward landed (L2-11, 23, 27,
#         30, 37, 62, 75, 85, 88, 92). Prebuilt together (-j 16), then kgen validate --trials 2 each.
#         Expected: every file PASS; the in-place probe's backward one SKIP (its reference's backward raises),
#         the embedding probe's KernelBench verdict "not applicable".
#   run2: run1: 16 of 16 PASS (prebuild 83.8 s; validate 290 s): the in-place and floor-division probes' backward one
#         SKIP each (their references' backward raises), the embedding probe's KernelBench verdict "not applicable";
#         the 3 spec files and the 10 problems PASS with KernelBench 5/5.
#         Now: what bounds each kgen kernel (issue 12's ">= 80 % of the copy rate where memory-bound"), from ncu's
#         counters in one run: benchmarks/ncu_bounds.py runs one forward + backward of each file under ncu
#         (application replay) and classifies every kgen kernel as DRAM-bound (>= 80 % of a same-size copy on the
#         bytes it actually moved), issue-bound (>= 70 % of issue slots) or latency-bound. run2: L2-92, 19, L1-35,
#         L2-60, 11, 83 (prebuilding the rest too); run3: L2-85, 27, 94, 21, 61, 23.
#         Expected (sessions 15-29's scattered ncu runs): the forwards DRAM-bound; the backwards' sweeps of L2-92,
#         85, 19 issue-bound (70-80 % issue), L1-35's pipelined backward DRAM-bound on its real bytes (its pass B
#         misses L2 ~20 %: more bytes than the floor counts), L2-83/60 between.
#   run4: run2-3 (H200): no backward kernel DRAM-bound (table in benchmarks/h100/s33/README.md). Now the helper's probes
#         (39 new references, 5 planner fixes): the 11 whose plans the fixes changed or that take the new paths, then
#         issue 13's fused file at main: validate --bench and KernelBench's evaluator. Expected: all PASS; the fused
#         forward ~5.1 ms, forward+backward ~14.9 (session 28).
#   run5: run4 (H100): 10 of 11 probes PASS; gn_full_sum_scalar BROKEN in validate (the float64 arbiter sliced a
#         0-dim output by the batch), gn_flatten2_plane_amax_keepdim_sample_sum's KernelBench verdict FAIL for its
#         two outputs (KernelBench's evaluator would fail the reference itself). Fused: validate PASS, forward 5.216
#         ms (eager 12.305, torch.compile 8.456), forward+backward 14.976 (34.080, 32.208: 2.15x), KernelBench 5/5
#         (5.45 ms against 12.4). Both validate bugs fixed with CPU tests; the two probes again and 14 more.
#         Expected: all PASS, the two-output probe's KernelBench verdict "not applicable".
set -u
S=s33
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
V=.build/$S
mkdir -p "$OUT/$S"
problem_file() { if [ "$1" = 35 ]; then ls .kb/problems/level1_35_*.py; else ls .kb/problems/level2_${1}_*.py; fi; }
validate_all() {  # LOGDIR FILE... : kgen validate each (its reference from the header, or --ref from REF_<stem>)
  local dir=$1; shift
  mkdir -p "$dir"
  for f in "$@"; do n=$(basename $f .py)
    ref=""; case $n in p[0-9]*) ref="--ref $(problem_file ${n#p})";; esac
    [ -f tests/ref/probe/$n.py ] && ref="--ref tests/ref/probe/$n.py"
    [ -f tests/ref/references/$n.py ] && ref="--ref tests/ref/references/$n.py"
    timeout -k 5 ${VTIMEOUT:-120} python3 -m kgen.cli validate $f $ref --trials 2 --quiet > "$dir/$n.log" 2>&1
    rc=$?
    echo "$n exit $rc $(grep -E '^RESULT' "$dir/$n.log" | cut -c1-90) $(grep -E '^(KernelBench verdict)' "$dir/$n.log" | cut -c1-60)"
    grep -E "SKIP|FAIL" "$dir/$n.log" | head -3 | cut -c1-200
  done
}
case "${1:-}" in
  run1)
    P3="$V/own/inplace_functions_elu_clamp_sigmoid.py $V/own/unfused_elementwise_in_pytorch.py $V/own/embedding_index_input_named_input.py"
    SPECS="generated/groupnorm.py generated/convt_gelu_groupnorm.py generated/conv_gn_tanh_hardswish_res_lse.py"
    KB="$V/kb/p11.py $V/kb/p23.py $V/kb/p27.py $V/kb/p30.py $V/kb/p37.py $V/kb/p62.py $V/kb/p75.py $V/kb/p85.py $V/kb/p88.py $V/kb/p92.py"
    timeout -k 5 300 python3 benchmarks/prebuild.py -j 16 $P3 $SPECS $KB 2>&1 | tail -3
    validate_all "$OUT/$S/run1" $P3 $SPECS $KB
    tar czf "$OUT/$S/run1.tar.gz" -C "$OUT/$S" run1 && rm -rf "$OUT/$S/run1"
    ;;
  run4)
    # the helper's new probes (emitted here into $V/probe/), then issue 13's fused file on main: validate --bench
    # (1e-2 with float64 arbitration; forward and forward+backward against eager and torch.compile in one run) and
    # KernelBench's evaluator (fp32, 5 trials)
    F=generated/convt_gelu_groupnorm_fused.py
    timeout -k 5 240 python3 benchmarks/prebuild.py -j 16 $F $V/probe/*.py 2>&1 | grep -E "failed|FAIL|rror" | head -8
    VTIMEOUT=60 validate_all "$OUT/$S/run4" $V/probe/*.py
    timeout -k 5 200 python3 -m kgen.cli validate $F --bench --atol 1e-2 --rtol 1e-2 --json "$OUT/$S/run4/fused_validate.json" \
      > "$OUT/$S/run4/fused_validate.log" 2>&1; echo "fused validate exit $?"
    grep -E "^(  forward|  backward|  forward_backward|KernelBench|RESULT)|convt_wgmma|normalize" "$OUT/$S/run4/fused_validate.log" | cut -c1-200 | head -24
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl 2>/dev/null
    PYTHONPATH=/tmp/site:. timeout -k 5 150 python3 .kb/kb_eval.py $F .kb/problems/level2_19_ConvTranspose2d_GELU_GroupNorm.py \
      --trials 5 > "$OUT/$S/run4/fused_kb_eval.log" 2>&1; echo "kb_eval exit $?"; tail -1 "$OUT/$S/run4/fused_kb_eval.log" | cut -c1-400
    tar czf "$OUT/$S/run4.tar.gz" -C "$OUT/$S" run4 && rm -rf "$OUT/$S/run4"
    ;;
  run5)
    # after run4's two validate fixes: the two probes they concern, and 14 more of the new probes (of 31 not yet run)
    timeout -k 5 150 python3 benchmarks/prebuild.py -j 16 $V/probe5/*.py 2>&1 | grep -E "failed|FAIL|rror" | head -8
    VTIMEOUT=40 validate_all "$OUT/$S/run5" $V/probe5/*.py
    tar czf "$OUT/$S/run5.tar.gz" -C "$OUT/$S" run5 && rm -rf "$OUT/$S/run5"
    ;;
  run2|run3)
    # ncu's counters of every kgen kernel of one forward + backward call (benchmarks/ncu_bounds.py)
    [ $1 = run2 ] && timeout -k 5 200 python3 benchmarks/prebuild.py -j 16 $V/kb/p*.py 2>&1 | tail -1
    FILES=""; for n in ${NCU_PROBLEMS}; do FILES="$FILES $V/kb/p$n.py"; done
    timeout -k 5 ${NCU_TIMEOUT:-480} python3 benchmarks/ncu_bounds.py "$OUT/$S/$1" $FILES --timeout 150 2>&1 | grep -v "^|---" | cut -c1-250
    tar czf "$OUT/$S/$1.tar.gz" -C "$OUT/$S" $1 && rm -rf "$OUT/$S/$1"
    ;;
esac
