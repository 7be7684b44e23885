#!/usr/bin/env bash
# One call on the GPU machine: the steps named on the command line, logs and JSON under $OUT.
#   bash benchmarks/device_run.sh tests validate:groupnorm.py profile:groupnorm.py verdicts
# Steps:
#   tests                 pytest -m gpu (every GPU test)
#   validate:FILE[:ARGS]  kgen validate generated/FILE --bench --json (extra validate ARGS after a colon)
#   profile:FILE          per-kernel time and bandwidth (benchmarks/profile_kernels.py)
#   onepass               the one-pass forward: its GPU tests, its --bench (thread shapes against two passes),
#                         and kgen validate --bench of `kgen emit groupnorm --forward one-pass`
#   verdicts              validate a planted-bug file (expect exit 1) and a file that does not compile (expect 2)
#   regions               the region kernels' GPU tests and a few --ref problems (a short call)
#   family                issue 12's table: the 17 KernelBench GroupNorm problems end to end, timed
#   pending               the GPU tests, benches and an ncu profile of changes no GPU has run yet (session 6)
#   final                 the validator's GPU tests beside three family problems, then their timings (session 8)
#   bn                    the batch norm step: its tests, own references, L2-11 end to end (session 8)
#   newrefs               session 7's own references and four family problems (session 8)
#   odd                   the two-pass forward on odd planes: its GPU tests, L2-60/27/92 checked and timed (session 10)
#   s11                   session 11's rows / bn_apply / hardswish changes: tests, checks, timings
#   s11v                  session 11's A/B variants (rows packs, channel LSE), with the tests they touch
#   s11c                  session 11's second rows A/B, rows tests, the family problems the changes touch
#   s11e                  session 11's closing call: the rows forward's final constants, L2-37 and L2-94
#   ncu12                 ncu on kgen's kernels of NCU_FAMILY's problems (session 11)
#   s15                   session 15's A/B of the rows and batch-norm backward kernels, their GPU tests
#   s15b                  session 15's A/B of the backward sweeps' register cap, the resident and bn tests, checks
#   s16                   session 16's pipelined two-pass backward: two-pass and cluster tests, A/B against the sweeps
#   s12                   session 12's rows sample reductions and broadcast element-wise kernel: tests, checks, timings
#   s13                   session 13's element-wise kernels of several tensors: tests, checks, builds; S13_TIMING=1:
#                         timings and every problem's kernel rates, forward and backward (benchmarks/kernel_rates.py)
#   s13p                  session 13's parameter-gradient kernel: its GPU tests, checks, the two-pass problems' rates
#   clncu                 ncu on the channels-last region's kernels at L2-19's shape (session 9)
#   cl2                   the channels-last region (--conv fast): test_gn_region_nhwc, test_layout, CL_FAMILY's problems
#                         checked and timed (session 10; session 9's first version, `cl`, is in git at 66fe818)
#   rows2                 the rows forward (session 7): its GPU tests, the region bench, the Linear family problems
#                         (the first version's step, `rows`, is in git at 5385b00)
#   reliability-families  the kernel families (benchmarks/reliability_families.py), in one call of < 9 min: emit each
#                           family's file into .build/families/, prebuild them (PREBUILD_JOBS, default 12, at once),
#                           then at once benchmarks/sanitize.sh (4 tools x every family, SANITIZE_JOBS, default 8, at a
#                           time, with their probes) and benchmarks/reliability.py --sections families (numerics and
#                           the launch check); then the sanitizer rows. The other sections are merged from
#                           benchmarks/reliability.json (the `reliability` step's last run). RELIABILITY_BUDGET
#                           (default 480 s from the step's start) is when the last run may end; what it cut is NOT RUN.
#                           $OUT gets exactly 3 files: RELIABILITY.md, reliability.json, reliability_logs.tar.gz.
#   reliability           the golden files, everything (about 7-8 min on an H100 host, builds included):
#                           prebuild every extension (generated/*.py, the GPU test files, groupnorm --groups 4),
#                           then at once: benchmarks/sanitize.sh (4 tools x generated/*.py), pytest -m gpu
#                           tests/validate (less the --bench test), benchmarks/reliability.py (numerics, memory/build-once, validator);
#                           then the sanitizer section is merged into the table. $OUT gets exactly 3 files:
#                           RELIABILITY.md, reliability.json and reliability_logs.tar.gz (every log, gpu.txt).
#                           RELIABILITY_BUDGET (default 420 s) bounds the parallel phase (run the step alone: beside other GPU work 330 s was not enough); what ran out of time
#                           shows as NOT RUN / a timeout in the logs. RELIABILITY_SKIP="sanitize pytest table"
#                           (any of them) leaves parts out, to split the step over two device calls.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__)" >> "$OUT/gpu.txt"
# The device's torch locks an extension build with a file whose existence alone makes later builds wait: a build
# killed by an earlier call's timeout leaves one, and every later import of that extension hangs (session 11,
# benchmarks/h100/rows_v3/README.md). Nothing builds between calls, so any lock now is stale.
find .build -path "*ext*" -name lock -print -delete 2>/dev/null | head -5

# KernelBench's wheels (for its evaluator) beside the device's torch, once per call.
kb_wheels() { python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1; }
# family.py on problems $2 with its table in $1, resumed; a line per problem and stage on stdout (the steps
# rows2, newrefs, bn and final run their checks and then their timings through it).
fam_run() {
  local out=$1 only=$2; shift 2
  PYTHONPATH=/tmp/site:$PWD python3 benchmarks/family.py .kb/problems .kb "$out" --trials 2 --resume \
    --jobs 12 --only "$only" "$@" 2>&1 | tee -a "$out/family.log" | grep -E "^L[12]-|prebuild:|emit:" | cut -c1-200
}

for step in "$@"; do
  kind=${step%%:*}; rest=${step#*:}
  case $kind in
    tests)
      python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest_gpu.log" | tail -15 ;;
    validate)
      file=${rest%%:*}; args=""; [ "$rest" != "$file" ] && args=${rest#*:}
      name=$(basename "$file" .py)${args:+_ref}
      python3 -m kgen.cli validate "generated/$file" --bench --json "$OUT/validate_$name.json" $args 2>&1 \
        | tee "$OUT/validate_$name.log" | tail -40
      echo "exit code: ${PIPESTATUS[0]}" | tee -a "$OUT/validate_$name.log" ;;
    profile)
      python3 benchmarks/profile_kernels.py "generated/$rest" --json "$OUT/profile_$(basename "$rest" .py).json" 2>&1 \
        | grep -v Warn | tee "$OUT/profile_$(basename "$rest" .py).log" ;;
    onepass)
      timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py 2>&1 \
        | tee "$OUT/onepass_pytest.log" | tail -8
      timeout 300 python3 tests/gpu/test_groupnorm_onepass.py --bench 2>&1 | grep -v Warn | tee "$OUT/onepass_bench.log"
      mkdir -p .build && python3 -m kgen.cli emit groupnorm --forward one-pass -o .build/groupnorm_onepass.py
      timeout 400 python3 -m kgen.cli validate .build/groupnorm_onepass.py --bench --json "$OUT/validate_groupnorm_onepass.json" \
        2>&1 | tee "$OUT/validate_groupnorm_onepass.log" | tail -40
      echo "exit code: ${PIPESTATUS[0]}" | tee -a "$OUT/validate_groupnorm_onepass.log" ;;
    verdicts)
      sed 's/var + eps/var + 100.0 * eps/' generated/groupnorm.py > /tmp/planted_variance_bug.py
      python3 -m kgen.cli validate /tmp/planted_variance_bug.py --trials 1 --no-backward 2>&1 | tail -25 > "$OUT/verdict_planted_bug.log"
      echo "exit code: ${PIPESTATUS[0]}" >> "$OUT/verdict_planted_bug.log"
      sed 's/constexpr int kBlock = 256;/constexpr int kBlock = 256/' generated/groupnorm.py > /tmp/does_not_compile.py
      python3 -m kgen.cli validate /tmp/does_not_compile.py 2>&1 | tail -25 > "$OUT/verdict_build_error.log"
      echo "exit code: ${PIPESTATUS[0]}" >> "$OUT/verdict_build_error.log"
      tail -n 3 "$OUT"/verdict_*.log ;;
    debug1d)
      python3 benchmarks/_dbg1d.py > "$OUT/debug1d.log" 2>&1; echo "exit code: $?" >> "$OUT/debug1d.log"
      cuda-gdb -batch -ex run -ex bt --args python3 benchmarks/_dbg1d.py 2>&1 | grep -E "^#[0-9] |^#1[0-9] |SIG|OK error" \
        | cut -c1-400 >> "$OUT/debug1d.log"; tail -5 "$OUT/debug1d.log" ;;
    streamstores)  # A/B: evict-first (streaming) 16-byte stores in the sweeps that write
      sed -e 's/reinterpret_cast<float4\*>(p)\[i\] = make_float4(v.v\[0\], v.v\[1\], v.v\[2\], v.v\[3\]);/__stcs(reinterpret_cast<float4*>(p) + i, make_float4(v.v[0], v.v[1], v.v[2], v.v[3]));/' \
        "generated/$rest" > "/tmp/stcs_$rest"
      grep -c __stcs "/tmp/stcs_$rest"
      python3 benchmarks/profile_kernels.py "/tmp/stcs_$rest" 2>&1 | grep -v Warn | tee "$OUT/profile_stcs_$(basename "$rest" .py).log" ;;
    reliability)
      LOGS=$(mktemp -d /tmp/kgen-reliability.XXXXXX)
      t0=$(date +%s)
      mv "$OUT/gpu.txt" "$LOGS/gpu.txt" 2>/dev/null
      echo "== prebuild"
      # L1-35's two-pass forward is sanitized too (the golden file takes one pass where the GPU allows)
      mkdir -p .build && python3 -m kgen.cli emit groupnorm --forward two-pass -o .build/groupnorm_twopass.py
      SPEC_GOLDENS=$(ls generated/*.py | grep -v '/ref_')   # the spec goldens (the --ref ones are judged by family.py)
      python3 benchmarks/prebuild.py -j 16 $SPEC_GOLDENS .build/groupnorm_twopass.py \
        tests/validate/files/gpu_groupnorm*.py.txt emit:groupnorm:groups=4 > "$LOGS/prebuild.log" 2>&1
      tail -1 "$LOGS/prebuild.log"; echo "prebuild: $(( $(date +%s) - t0 )) s"
      budget=${RELIABILITY_BUDGET:-420}
      skip=" ${RELIABILITY_SKIP:-} "
      pid_sanitize="" pid_pytest=""
      if [[ $skip != *" sanitize "* ]]; then
        SANITIZE_JOBS=${SANITIZE_JOBS:-6} timeout -k 10 "$budget" bash benchmarks/sanitize.sh "$LOGS/sanitize" $SPEC_GOLDENS .build/groupnorm_twopass.py \
          > "$LOGS/sanitize.log" 2>&1 &
        pid_sanitize=$!
      fi
      if [[ $skip != *" pytest "* ]]; then
        timeout -k 10 "$budget" python3 -m pytest -q -rA -m gpu -p no:cacheprovider tests/validate \
          --deselect tests/validate/test_runtime_gpu.py::test_bench_on_gpu \
          > "$LOGS/pytest_gpu_validate.log" 2>&1 &
        pid_pytest=$!
      fi
      if [[ $skip != *" table "* ]]; then   # the families' sections (step reliability-families) carried over
        timeout -k 10 "$budget" python3 benchmarks/reliability.py --sections numerics,memory,validator \
          --merge benchmarks/reliability.json \
          --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" > "$LOGS/reliability.log" 2>&1
        echo "reliability.py exit $?: $(( $(date +%s) - t0 )) s"
      fi
      [ -n "$pid_pytest" ] && { wait $pid_pytest; echo "pytest exit $?: $(( $(date +%s) - t0 )) s"; }
      [ -n "$pid_sanitize" ] && { wait $pid_sanitize; echo "sanitize.sh exit $?: $(( $(date +%s) - t0 )) s"; }
      [ -f "$LOGS/sanitize/runs.tsv" ] && [ ! -f "$LOGS/sanitize/summary.txt" ] && \
        python3 benchmarks/sanitize_summary.py "$LOGS/sanitize" > /dev/null
      timeout 120 python3 benchmarks/reliability.py --sections sanitizer --sanitize-dir "$LOGS/sanitize" \
        --merge "$LOGS/reliability.json" --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        >> "$LOGS/reliability.log" 2>&1
      echo "total: $(( $(date +%s) - t0 )) s" | tee "$LOGS/duration.txt"
      tail -3 "$LOGS/pytest_gpu_validate.log"; cat "$LOGS/sanitize/summary.txt" 2>/dev/null | tail -25
      tail -1 "$LOGS/reliability.log"
      cp "$LOGS/RELIABILITY.md" "$LOGS/reliability.json" "$OUT/" 2>/dev/null
      tar czf "$OUT/reliability_logs.tar.gz" -C "$LOGS" . ;;
    reliability-families)
      LOGS=$(mktemp -d /tmp/kgen-reliability.XXXXXX)
      t0=$(date +%s)
      deadline=$(( t0 + ${RELIABILITY_BUDGET:-480} ))
      mv "$OUT/gpu.txt" "$LOGS/gpu.txt" 2>/dev/null
      python3 benchmarks/reliability_families.py table > "$LOGS/families.md"
      python3 benchmarks/reliability_families.py emit -j 16 > "$LOGS/emit.log" 2>&1
      echo "emit exit $?: $(( $(date +%s) - t0 )) s"
      python3 benchmarks/prebuild.py -j "${PREBUILD_JOBS:-12}" $(python3 benchmarks/reliability_families.py files) \
        > "$LOGS/prebuild.log" 2>&1
      tail -1 "$LOGS/prebuild.log"; echo "prebuild: $(( $(date +%s) - t0 )) s"
      left=$(( deadline - $(date +%s) )); [ $left -lt 40 ] && left=40
      SANITIZE_DEADLINE=$deadline SANITIZE_JOBS=${SANITIZE_JOBS:-8} SANITIZE_NO_PREBUILD=1 \
        timeout -k 10 $(( left + 30 )) bash benchmarks/sanitize.sh "$LOGS/sanitize" \
        $(python3 benchmarks/reliability_families.py targets) > "$LOGS/sanitize.log" 2>&1 &
      pid_sanitize=$!
      timeout -k 10 $(( left + 30 )) python3 benchmarks/reliability.py --sections families --budget $(( left - 20 )) \
        --merge benchmarks/reliability.json --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        > "$LOGS/reliability.log" 2>&1
      echo "reliability.py exit $?: $(( $(date +%s) - t0 )) s"
      wait $pid_sanitize; echo "sanitize.sh exit $?: $(( $(date +%s) - t0 )) s"
      [ -f "$LOGS/sanitize/runs.tsv" ] && [ ! -f "$LOGS/sanitize/summary.txt" ] && \
        python3 benchmarks/sanitize_summary.py "$LOGS/sanitize" > /dev/null
      # a table even if the families' run was cut before it wrote one
      [ -f "$LOGS/reliability.json" ] || cp benchmarks/reliability.json "$LOGS/reliability.json"
      timeout 60 python3 benchmarks/reliability.py --sections family_sanitizer --sanitize-dir "$LOGS/sanitize" \
        --merge "$LOGS/reliability.json" --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        >> "$LOGS/reliability.log" 2>&1
      echo "total: $(( $(date +%s) - t0 )) s" | tee "$LOGS/duration.txt"
      grep -E "^family " "$LOGS/reliability.log" | grep -vE "^family +\S+ +(PASS|LAUNCHED) " | cut -c1-220 | head -40
      grep -v " 0 errors" "$LOGS/sanitize/summary.txt" 2>/dev/null | cut -c1-220 | head -30
      tail -1 "$LOGS/reliability.log"
      cp "$LOGS/RELIABILITY.md" "$LOGS/reliability.json" "$OUT/" 2>/dev/null
      tar czf "$OUT/reliability_logs.tar.gz" -C "$LOGS" . ;;
    issue11)  # the validator on issue 11's cases, and the one-pass planner's cached set-up at small shapes
      F=tests/validate/files; L1=kgen/specs/references/level1_35_groupnorm.py
      mkdir -p .build/issue11
      for f in third_party_groupnorm gpu_groupnorm_never_launched gpu_index_add_own_atomics gpu_index_add_shared_library \
               reference_index_add; do cp "$F/$f.py.txt" ".build/issue11/$f.py"; done
      python3 benchmarks/prebuild.py -j 8 generated/groupnorm.py generated/convt_gelu_groupnorm.py .build/groupnorm_before_cache.py \
        .build/issue11/third_party_groupnorm.py .build/issue11/gpu_groupnorm_never_launched.py \
        .build/issue11/gpu_index_add_own_atomics.py .build/issue11/gpu_index_add_shared_library.py | tail -1
      python3 benchmarks/planner_cache.py .build/groupnorm_before_cache.py generated/groupnorm.py \
        --json "$OUT/planner_cache.json" 2>&1 | grep -v Warn | tee "$OUT/planner_cache.log"
      v() { name=$1; shift; python3 -m kgen.cli validate "$@" --json "$OUT/issue11_$name.json" > "$OUT/issue11_$name.log" 2>&1
            echo "exit code: $?" >> "$OUT/issue11_$name.log"; echo "$name: $(grep -E '^(KernelBench|kgen) verdict|^RESULT' "$OUT/issue11_$name.log" | tr '\n' ' ')"; }
      v l219_nondeterministic_reference generated/convt_gelu_groupnorm.py --init-args '[16, 48, 5, 3, 4, 6]' --input-shape '[3, 16, 21, 19]'
      v own_atomics .build/issue11/gpu_index_add_own_atomics.py --ref .build/issue11/reference_index_add.py
      v shares_library_atomics .build/issue11/gpu_index_add_shared_library.py --ref .build/issue11/reference_index_add.py
      v third_party .build/issue11/third_party_groupnorm.py --ref $L1 --trials 2
      v never_launched .build/issue11/gpu_groupnorm_never_launched.py --ref $L1 --trials 1
      v l135_golden generated/groupnorm.py --trials 1
      tar czf "$OUT/issue11_logs.tar.gz" -C "$OUT" $(cd "$OUT" && ls issue11_* planner_cache.*) ;;
    regions)  # a short call: the fused-region kernels' GPU tests and a few --ref problems end to end, at once
      # (REGIONS_BUDGET seconds, default 200; REGIONS_ONLY the KernelBench problems, default 85,75,30).
      # Everything lands in one tarball, so the 8-file limit on what comes back never drops a log.
      budget=${REGIONS_BUDGET:-200}; L=$OUT/regions; mkdir -p "$L"
      kb_wheels
      for t in twopass resident; do
        (timeout -k 5 "$budget" python3 -m pytest -q -p no:cacheprovider "tests/gpu/test_gn_region_$t.py" \
          > "$L/pytest_region_$t.log" 2>&1; echo "exit code: $?" >> "$L/pytest_region_$t.log") &
      done
      (PYTHONPATH=/tmp/site:$PWD timeout -k 5 "$budget" python3 benchmarks/family.py .kb/problems .kb "$L/family" \
        --only "${REGIONS_ONLY:-85,75,30}" --workers 3 --trials 1 --jobs 6 --timeout 150 > "$L/family.log" 2>&1
       echo "exit code: $?" >> "$L/family.log") &
      wait
      tail -n 3 "$L"/pytest_region_*.log; grep -E "^L[12]-|prebuild" "$L/family.log"
      tar czf "$OUT/regions_logs.tar.gz" -C "$L" . ;;
    family)  # issue 12's table: every KernelBench GroupNorm problem, emit -> validate -> KernelBench -> timings
      # (benchmarks/family.py: parallel emits and builds, FAMILY_WORKERS correctness runs at once with Inductor's
      # caches warmed beside them, then the timings alone on the GPU). FAMILY_BUDGET seconds (default 520) bound
      # the call; the table lives in .build/family_out on the device machine, so the same step again on the warm
      # machine resumes where the last call stopped. FAMILY_ONLY picks problems (e.g. 19,92); FAMILY_ARGS adds
      # options. Needs .kb carried (../shared/kernelbench, see its README). One tarball comes back.
      kb_wheels
      F=.build/family_out; mkdir -p "$F"
      PYTHONPATH=/tmp/site:$PWD python3 benchmarks/family.py .kb/problems .kb "$F" --bench --trials 2 --resume \
        --budget "${FAMILY_BUDGET:-520}" --workers "${FAMILY_WORKERS:-4}" --jobs 16 \
        ${FAMILY_ONLY:+--only "$FAMILY_ONLY"} ${FAMILY_ARGS:-} 2>&1 \
        | tee -a "$F/family.log" | grep -E "^L[12]-|prebuild:|emit:|resume:"
      tar czf "$OUT/family_logs.tar.gz" -C "$F" . ;;
    pending)  # session 6's changes that no GPU has run yet, in one call (~6 min): the resident region tests
      # (tiles sized by bytes in flight, the pays decision), the convt v2 tests, then alone on the GPU the
      # convt and region benches and one ncu profile of the convt kernel (speed of light, warp stalls).
      P=$OUT/pending; mkdir -p "$P"
      for t in gn_region_resident convt_igemm; do   # each builds its own harness extension, both at once
        (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider "tests/gpu/test_$t.py" > "$P/pytest_$t.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_$t.log") &
      done
      wait; tail -n 2 "$P"/pytest_*.log
      timeout 90 python3 tests/gpu/test_convt_igemm.py --bench 2>&1 | grep -v Warn | tee "$P/convt_bench.log"
      timeout 120 python3 tests/gpu/region_harness_resident.py 2>&1 | grep -v Warn > "$P/region_resident_bench.log"
      grep -E "^x |32768|fwd|bwd" "$P/region_resident_bench.log" | head -30
      timeout 150 ncu --kernel-name regex:convt_forward_kernel --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section Occupancy \
        python3 tests/gpu/test_convt_igemm.py --bench > "$P/ncu_convt.log" 2>&1
      grep -E "Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Achieved Occupancy|Stall|Registers" \
        "$P/ncu_convt.log" | head -20
      tar czf "$OUT/pending_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    rows2)  # the rows forward with its loads in flight through the arithmetic: the Linear resident tests and,
      # at once, the checks of the Linear family problems (ROWS_FAMILY, default 37,94,30); then alone on the
      # GPU the region bench and the family timings.
      P=$OUT/rows2; F=.build/family_rows2; mkdir -p "$P" "$F"
      kb_wheels
      fam() { fam_run "$F" "${ROWS_FAMILY:-37,94,30}" --workers 3 "$@"; }
      (fam --budget 200 > "$P/family_checks.txt") &
      (timeout -k 5 240 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
         -k "none or rows or tiling or slab or unaligned" > "$P/pytest_gn_region_resident.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
      wait; tail -n 2 "$P"/pytest_*.log; cat "$P/family_checks.txt"
      timeout 100 python3 tests/gpu/region_harness_resident.py 2>&1 | grep -v Warn > "$P/region_resident_bench.log"
      grep -E "^x |kgen resident|fwd" "$P/region_resident_bench.log" | head -30
      fam --bench --budget "${ROWS_BUDGET:-170}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/rows2_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    newrefs)  # session 8: session 7's own references (new ops, where, functional pools) through
      # tests/gpu/test_ref_emitted.py, one pytest per reference at once, beside the correctness runs of the family
      # problems NEWREFS_FAMILY (default 62,88,60,92); then alone on the GPU those problems' timings.
      P=$OUT/newrefs; F=.build/family_newrefs; mkdir -p "$P" "$F"
      kb_wheels
      fam() { fam_run "$F" "${NEWREFS_FAMILY:-62,88,60,92}" --workers 3 "$@"; }
      (fam --budget 240 > "$P/family_checks.txt") &
      for r in ${NEWREFS:-linear_gelu_tanh_gn_short_slices conv_activation_zoo_gn conv3d_gn_where_mean conv2d_gn_functional_pool}; do
        (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$r" \
           > "$P/pytest_$r.log" 2>&1; echo "exit code: $?" >> "$P/pytest_$r.log") &
      done
      wait; tail -n 2 "$P"/pytest_*.log; cat "$P/family_checks.txt"
      fam --bench --budget "${NEWREFS_BUDGET:-200}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/newrefs_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    bn)  # session 8: the batch norm step (batchnorm/train.cuh): its GPU tests and the own references' validation, at
      # once beside L2-11's correctness runs (BN_FAMILY, default 11); then alone on the GPU L2-11's timings.
      P=$OUT/bn; F=.build/family_bn; mkdir -p "$P" "$F"
      kb_wheels
      fam() { fam_run "$F" "${BN_FAMILY:-11}" --workers 2 "$@"; }
      (fam --budget 260 > "$P/family_checks.txt") &
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_bn_train.py \
         > "$P/pytest_bn_train.log" 2>&1; echo "exit code: $?" >> "$P/pytest_bn_train.log") &
      for r in ${BN_REFS:-convt_bn_tanh_maxpool_gn_odd linear_bn1d_noaffine_relu_gn conv3d_bn_silu_scale_avgpool_gn}; do
        (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$r" \
           > "$P/pytest_ref_$r.log" 2>&1; echo "exit code: $?" >> "$P/pytest_ref_$r.log") &
      done
      wait; tail -n 3 "$P"/pytest_*.log; cat "$P/family_checks.txt"
      fam --bench --budget "${BN_BUDGET:-150}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/bn_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    final)  # session 8's last call: the validator's GPU tests in parallel groups (tests/validate/run_gpu_parallel.sh,
      # FINAL_TESTS_BUDGET seconds, default 300) beside the correctness runs of FINAL_FAMILY (default 19,92,37);
      # then alone on the GPU those problems' timings.
      P=$OUT/final; F=.build/family_final; mkdir -p "$P" "$F"
      kb_wheels
      fam() { fam_run "$F" "${FINAL_FAMILY:-19,92,37}" --workers 3 "$@"; }
      (OUT=$P/gpu_tests bash tests/validate/run_gpu_parallel.sh "${FINAL_TESTS_BUDGET:-300}" > "$P/gpu_tests.log" 2>&1) &
      (fam --budget 280 > "$P/family_checks.txt") &
      wait; cat "$P/gpu_tests.log"; cat "$P/family_checks.txt"
      fam --bench --budget "${FINAL_BUDGET:-200}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/final_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    cl2)  # session 10: the channels-last statistics folded on the row side (no shared tile), test_gn_region_nhwc
      # with its new block sizes, 3-D (NDHWC) cases and `kgen validate --no-tf32`, test_layout, the own 3-D
      # reference's NCHW file; the problems CL_FAMILY (default L2-19, L2-21) --conv fast checked, then timed alone
      P=$OUT/cl2; F=.build/family_cl2; B=.build/cl2; mkdir -p "$P" "$F" "$B"
      kb_wheels
      python3 - "$B" <<'PY' > "$P/emit.log" 2>&1
import sys
from pathlib import Path
from kgen.ref.emit import emit_reference
out = Path(sys.argv[1])
refs = {"l219": "kgen/specs/references/level2_19_convtranspose2d_gelu_groupnorm.py",
        "own_conv2d": "tests/ref/references/conv2d_scale_sigmoid_gn_residual.py",
        "own_convt2d": "tests/ref/references/convt2d_gn_noaffine_tanh_residual.py",
        "own_convt3d": "tests/ref/references/convt3d_swish_gn_hardswish.py"}
for name, ref in refs.items():
    for block in (32, 128, 256, 1024) if name in ("l219", "own_convt2d", "own_convt3d") else (256,):
        (out / f"{name}_fast_{block}.py").write_text(emit_reference(ref, block_size=block, conv="fast")[0])
(out / "own_convt3d_exact.py").write_text(emit_reference(refs["own_convt3d"])[0])
PY
      python3 benchmarks/prebuild.py -j 16 "$B"/*.py > "$P/prebuild.log" 2>&1; tail -1 "$P/prebuild.log"
      fam() { fam_run "$F" "${CL_FAMILY:-19,21}" --workers 2 --emit-args "--conv fast" "$@"; }
      (fam --budget "${CL_CHECKS_BUDGET:-240}" > "$P/family_checks.txt") &
      for t in gn_region_nhwc layout; do
        (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider "tests/gpu/test_$t.py" > "$P/pytest_$t.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_$t.log") &
      done
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k convt3d_swish \
         > "$P/pytest_ref_convt3d.log" 2>&1; echo "exit code: $?" >> "$P/pytest_ref_convt3d.log") &
      wait; tail -n 5 "$P"/pytest_*.log; cat "$P/family_checks.txt"
      fam --bench --budget "${CL_BUDGET:-200}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/cl2_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    odd)  # session 10: the two-pass forward sweeps take odd planes on the 16-byte path (ChunkSpan):
      # test_gn_region_twopass.py beside the checks of ODD_FAMILY (default L2-60, L2-27: odd planes; L2-92: even),
      # then their timings alone
      P=$OUT/odd; F=.build/family_odd; mkdir -p "$P" "$F"
      kb_wheels
      (fam_run "$F" "${ODD_FAMILY:-60,27,92}" --workers 2 --budget 200 > "$P/family_checks.txt") &
      (timeout -k 5 400 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py \
         > "$P/pytest_gn_region_twopass.log" 2>&1; echo "exit code: $?" >> "$P/pytest_gn_region_twopass.log") &
      wait; tail -n 4 "$P/pytest_gn_region_twopass.log"; cat "$P/family_checks.txt"
      fam_run "$F" "${ODD_FAMILY:-60,27,92}" --workers 2 --bench --budget "${ODD_BUDGET:-130}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/odd_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s11)  # session 11: the rows forward's wider lanes, bn_apply's units in flight, hardswish by a multiply: the
      # resident (rows) and bn GPU tests and the own references with hardswish, at once beside the checks of
      # S11_FAMILY's problems; then alone on the GPU the region bench and the timings of S11_BENCH (resumed:
      # a second call times what the first had no budget for).
      P=$OUT/s11; F=.build/family_s11; mkdir -p "$P" "$F"
      kb_wheels
      (fam_run "$F" "${S11_FAMILY:-37,11,92,27,60,30,62,88,94}" --workers 3 --budget "${S11_CHECK_BUDGET:-280}" \
         > "$P/family_checks.txt") &
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
         -k "none or rows or tiling or slab or unaligned" > "$P/pytest_gn_region_resident.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_bn_train.py \
         > "$P/pytest_bn_train.log" 2>&1; echo "exit code: $?" >> "$P/pytest_bn_train.log") &
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py \
         -k "hardswish or channel_max_lse" > "$P/pytest_ref_hardswish.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_ref_hardswish.log") &
      wait; tail -n 3 "$P"/pytest_*.log; cat "$P/family_checks.txt"
      if [ -n "${S11_REGION_BENCH:-1}" ]; then
        timeout 100 python3 tests/gpu/region_harness_resident.py 2>&1 | grep -v Warn > "$P/region_resident_bench.log"
        grep -E "^x |kgen resident|fwd" "$P/region_resident_bench.log" | head -30
      fi
      fam_run "$F" "${S11_BENCH:-37,11,92}" --workers 1 --bench --budget "${S11_BUDGET:-150}"
      cp -r "$F" "$P/family"
      tar czf "$OUT/s11_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s11v)  # session 11, second call: stale build locks removed (a killed build leaves one, and the next import
      # waits on it), then at once: the A/B variants built (benchmarks/s11_variants.sh), test_bn_train's unpooled
      # test, the two-pass channel-LSE tests, L2-92's checks; then alone: the variants timed, L2-92 timed.
      P=$OUT/s11v; F=.build/s11v; G=.build/family_s11c; mkdir -p "$P" "$F" "$G"
      kb_wheels
      python3 -m kgen.cli emit --ref .kb/problems/level2_37_*.py -o "$F/l2_37.py"
      python3 -m kgen.cli emit --ref .kb/problems/level2_92_*.py -o "$F/l2_92.py"
      (bash benchmarks/s11_variants.sh build "$F/l2_37.py" "$F/l2_92.py" "$P" > "$P/variants_build.log" 2>&1) &
      (timeout -k 5 400 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_bn_train.py -k no_pooling \
         > "$P/pytest_bn_train_no_pooling.log" 2>&1; echo "exit code: $?" >> "$P/pytest_bn_train_no_pooling.log") &
      (timeout -k 5 400 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k channel_lse \
         > "$P/pytest_twopass_channel_lse.log" 2>&1; echo "exit code: $?" >> "$P/pytest_twopass_channel_lse.log") &
      (fam_run "$G" 92 --workers 1 --budget 200 > "$P/family_checks.txt") &
      wait; tail -n 3 "$P"/pytest_*.log; tail -n 3 "$P/variants_build.log"; cat "$P/family_checks.txt"
      bash benchmarks/s11_variants.sh time "$F/l2_37.py" "$F/l2_92.py" "$P" 2>&1 | grep -v Warn | tee "$P/variants.log"
      fam_run "$G" 92 --workers 1 --bench --budget 90
      cp -r "$G" "$P/family"
      tar czf "$OUT/s11v_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s11c)  # session 11, last call: the rows forward's second A/B (benchmarks/s11_variants_b.sh) built beside the
      # rows GPU tests and the checks of S11C_FAMILY; then alone the A/B timed and the family problems timed
      P=$OUT/s11c; F=.build/s11c; G=.build/family_s11d; mkdir -p "$P" "$F" "$G"
      kb_wheels
      python3 -m kgen.cli emit --ref .kb/problems/level2_37_*.py -o "$F/l2_37.py"
      (bash benchmarks/s11_variants_b.sh build "$F/l2_37.py" "$P" > "$P/variants_build.log" 2>&1) &
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
         -k "none or rows or tiling or slab or unaligned" > "$P/pytest_gn_region_resident.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
      (fam_run "$G" "${S11C_FAMILY:-37,11,27,60,94,88,62,30}" --workers 3 --budget 240 > "$P/family_checks.txt") &
      wait; tail -n 3 "$P/pytest_gn_region_resident.log"; grep -E "^L2" "$P/family_checks.txt"
      bash benchmarks/s11_variants_b.sh time "$F/l2_37.py" "$P" 2>&1 | grep -v Warn | tee "$P/variants.log"
      fam_run "$G" "${S11C_FAMILY:-37,11,27,60,94,88,62,30}" --workers 1 --bench --budget "${S11C_BUDGET:-240}"
      cp -r "$G" "$P/family"
      tar czf "$OUT/s11c_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s11e)  # session 11, closing call: the rows forward at 2 packs in flight: its GPU tests beside the checks of
      # L2-37 and L2-94, then both timed alone
      P=$OUT/s11e; G=.build/family_s11e; mkdir -p "$P" "$G"
      kb_wheels
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
         -k "none or rows or tiling or slab or unaligned" > "$P/pytest_gn_region_resident.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
      (fam_run "$G" 37,94 --workers 2 --budget 200 > "$P/family_checks.txt") &
      wait; tail -n 3 "$P/pytest_gn_region_resident.log"; grep -E "^L2" "$P/family_checks.txt"
      fam_run "$G" 37,94 --workers 1 --bench --budget 200
      cp -r "$G" "$P/family"
      tar czf "$OUT/s11e_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s12)  # session 12: the rows forward's sample reductions (L2-75's min over channels) and the element-wise kernel
      # reading broadcast / strided inputs (L2-75's bias add): the GPU tests they touch, beside the checks of
      # S12_FAMILY's problems; then alone: the DRAM copy rate at small sizes, and S12_BENCH's timings.
      P=$OUT/s12; G=.build/${S12_DIR:-family_s12}; mkdir -p "$P" "$G"
      kb_wheels
      (fam_run "$G" "${S12_FAMILY:-75,37,85,88,94}" --workers 3 --budget "${S12_CHECK_BUDGET:-300}" > "$P/family_checks.txt") &
      (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
         -k "${S12_RESIDENT_K:-channel or sample or rows or tiling}" > "$P/pytest_gn_region_resident.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
      [ -n "${S12_REF_K-broadcast}" ] && (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider \
         tests/gpu/test_ref_emitted.py -k "${S12_REF_K-broadcast}" > "$P/pytest_ref.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_ref.log") &
      [ -n "${S12_TWOPASS_K-lse or min}" ] && (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider \
         tests/gpu/test_gn_region_twopass.py -k "${S12_TWOPASS_K-lse or min}" > "$P/pytest_twopass.log" 2>&1
       echo "exit code: $?" >> "$P/pytest_twopass.log") &
      if [ -n "${S12_VARIANTS:-}" ]; then  # the A/B of benchmarks/s12_variants.sh at L2-75, built beside the above
        python3 -m kgen.cli emit --ref .kb/problems/level2_75_*.py -o "$G/v75.py"
        (bash benchmarks/s12_variants.sh build "$G/v75.py" "$P" > "$P/variants_build.log" 2>&1) &
      fi
      wait; tail -n 3 "$P"/pytest_*.log; grep -E "^L[12]" "$P/family_checks.txt"
      [ -n "${S12_VARIANTS:-}" ] && bash benchmarks/s12_variants.sh time "$G/v75.py" "$P" 2>&1 | grep -v Warn | tee "$P/variants.log"
      [ -n "${S12_COPY-1}" ] && python3 benchmarks/copy_rate.py 16.8 33.5 134 1074 4295 | tee "$P/copy_rate.jsonl"
      fam_run "$G" "${S12_BENCH:-75,37}" --workers 1 --bench --budget "${S12_BUDGET:-150}"
      for n in ${S12_NCU:-}; do  # ncu on the forward kernels of problems the checks above emitted and built
        timeout 120 ncu --kernel-name 'regex:region|pointwise' --launch-count 3 --section SpeedOfLight \
          --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section LaunchStats \
          --section MemoryWorkloadAnalysis python3 benchmarks/run_solution_once.py ".build/family/L2-$n.py" --calls 1 \
          > "$P/ncu_l2_$n.log" 2>&1
        echo "== ncu L2-$n"; grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per" \
          "$P/ncu_l2_$n.log" | cut -c1-140 | head -24
      done
      cp -r "$G" "$P/family"
      tar czf "$OUT/s12_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s13)  # session 13: element-wise kernels of several tensors (flat streaming, per-plane backward with parameters),
      # the rows forward's take_loaded mend. With S13_CHECKS (default on): the own references those kernels run in
      # (built in parallel first) and the strided / unasked-gradient test, the rows tests, S13_FAMILY's problems
      # checked; every problem's extension built for the rates (kernel_rates.py --build-only). With S13_TIMING:
      # S13_BENCH's timings (eager / compile, forward and backward traces), then kgen's kernels' forward and
      # backward rates on S13_RATES's problems (default: all 17), one at a time.
      P=$OUT/s13; G=.build/${S13_DIR:-family_s13}; R=.build/rates_s13; O=.build/own_s13; mkdir -p "$P" "$G" "$R" "$O"
      kb_wheels
      if [ -n "${S13_CHECKS-1}" ]; then
        for r in ${S13_OWN:-conv2d_gn_input_residual_gate linear_gn_input_gate_rank1 linear_gn_max_broadcast_transpose conv_gn_hardswish_flatten_amax}; do
          python3 -m kgen.cli emit --ref "tests/ref/references/$r.py" -o "$O/$r.py"
        done
        (fam_run "$G" "${S13_FAMILY:-75,85,37}" --workers 3 --budget "${S13_CHECK_BUDGET:-330}" > "$P/family_checks.txt") &
        (python3 benchmarks/prebuild.py -j 8 "$O"/*.py > "$P/prebuild_own.log" 2>&1
         timeout -k 5 400 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py \
           -k "${S13_REF_K:-residual_gate or rank1 or broadcast_transpose or flatten_amax or strided_inputs}" > "$P/pytest_ref.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_ref.log") &
        (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
           -k "${S13_RESIDENT_K:-rows}" > "$P/pytest_gn_region_resident.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
        (python3 benchmarks/kernel_rates.py .kb/problems "$R" --build-only --jobs 6 --only "${S13_RATES:-}" \
           > "$P/rates_build.log" 2>&1) &
        wait; tail -n 3 "$P"/pytest_*.log; grep -E "^L[12]" "$P/family_checks.txt"; tail -n 2 "$P/rates_build.log"
      fi
      if [ -n "${S13_TIMING-}" ]; then
        [ -n "${S13_BENCH-75,37}" ] && fam_run "$G" "${S13_BENCH-75,37}" --workers 1 --bench --budget "${S13_BUDGET:-150}"
        python3 benchmarks/kernel_rates.py .kb/problems "$R" --only "${S13_RATES:-}" 2>&1 | grep -v Warn | tee "$P/rates.log"
        cp "$R/KERNEL_RATES.md" "$R/kernel_rates.json" "$P/" 2>/dev/null
      fi
      cp -r "$G" "$P/family"
      tar czf "$OUT/s13_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s14)  # session 14: the cluster backward (groupnorm/cluster/cluster.cuh). Checks (S14_CHECKS, default on): its GPU tests
      # and the two-pass ones (refactored: Upstream, backward_inputs), the resident tests (allow_smem moved to
      # core/common.cuh), S14_FAMILY's problems checked (validate + KernelBench), the rates' builds, the emitted-file
      # tests S14_REF_K selects (none by default). Then (S14_TIMING,
      # default on) the forward and backward rates of S14_RATES, and S14_BENCH's timings (none by default).
      P=$OUT/s14; G=.build/family_s14; R=.build/rates_s14; mkdir -p "$P" "$G" "$R"
      kb_wheels
      if [ -n "${S14_CHECKS-1}" ]; then
        (fam_run "$G" "${S14_FAMILY:-92,83,85,27,23}" --workers 3 --budget "${S14_CHECK_BUDGET:-360}" \
           > "$P/family_checks.txt") &
        (timeout -k 5 480 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_cluster.py \
           tests/gpu/test_gn_region_twopass.py -k "${S14_K:-}" > "$P/pytest_cluster_twopass.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_cluster_twopass.log") &
        (timeout -k 5 480 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
           -k "${S14_RESIDENT_K:-}" > "$P/pytest_gn_region_resident.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_gn_region_resident.log") &
        (python3 benchmarks/kernel_rates.py .kb/problems "$R" --build-only --jobs 6 \
           --only "${S14_RATES:-92,83,85,27,23,21}" > "$P/rates_build.log" 2>&1) &
        if [ -n "${S14_REF_K-}" ]; then
          (timeout -k 5 480 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_ref_emitted.py -k "$S14_REF_K" \
             > "$P/pytest_ref.log" 2>&1; echo "exit code: $?" >> "$P/pytest_ref.log") &
        fi
        wait; tail -n 3 "$P"/pytest_*.log; grep -E "^L[12]" "$P/family_checks.txt"; tail -n 2 "$P/rates_build.log"
      fi
      if [ -n "${S14_TIMING-1}" ]; then
        python3 benchmarks/kernel_rates.py .kb/problems "$R" --only "${S14_RATES:-92,83,85,27,23,21}" 2>&1 \
          | grep -v Warn | tee "$P/rates.log"
        cp "$R/KERNEL_RATES.md" "$R/kernel_rates.json" "$P/" 2>/dev/null
        [ -n "${S14_BENCH-}" ] && fam_run "$G" "$S14_BENCH" --workers 1 --bench --budget "${S14_BUDGET:-200}"
      fi
      rm -f "$G"/*.py; cp -r "$G" "$P/family"
      tar czf "$OUT/s14_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s14p)  # session 14: the cluster backward's variants side by side (benchmarks/cluster_probe.py) on S14P_FAMILY,
      # beside its GPU tests (the kernel as the template has it).
      P=$OUT/s14p; mkdir -p "$P"
      (timeout -k 5 300 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_cluster.py \
         > "$P/pytest_cluster.log" 2>&1; echo "exit code: $?" >> "$P/pytest_cluster.log") &
      python3 benchmarks/cluster_probe.py .kb/problems .build/probe_s14 --only "${S14P_FAMILY:-83,27,23}" \
        --variants "${S14P_VARIANTS:-base,b100,b32,twopass}" --jobs 12 2>&1 | grep -v Warn | tee "$P/probe.log"
      wait; tail -n 3 "$P/pytest_cluster.log"
      cp .build/probe_s14/cluster_probe.json "$P/" 2>/dev/null
      tar czf "$OUT/s14p_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s13p)  # session 13's parameter-gradient kernel (a block a channel): the GPU tests that run it (groupnorm/op/twopass.cuh,
      # groupnorm/op/nhwc.cuh, the two-pass regions) beside S13P_FAMILY's checks and the rates' builds; then the
      # rates of S13P_RATES (the problems whose backward launches it).
      P=$OUT/s13p; G=.build/family_s13p; R=.build/rates_s13p; mkdir -p "$P" "$G" "$R"
      kb_wheels
      (fam_run "$G" "${S13P_FAMILY:-27,35,19,92}" --workers 3 --budget 300 > "$P/family_checks.txt") &
      (timeout -k 5 420 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_twopass.py \
         tests/gpu/test_groupnorm.py tests/gpu/test_groupnorm_nhwc.py -k "${S13P_K:-backward or grad or matches}" \
         > "$P/pytest.log" 2>&1; echo "exit code: $?" >> "$P/pytest.log") &
      (python3 benchmarks/kernel_rates.py .kb/problems "$R" --build-only --jobs 6 --only "${S13P_RATES:-27,35,19,21,60,92}" \
         > "$P/rates_build.log" 2>&1) &
      wait; tail -n 3 "$P/pytest.log"; grep -E "^L[12]" "$P/family_checks.txt"
      python3 benchmarks/kernel_rates.py .kb/problems "$R" --only "${S13P_RATES:-27,35,19,21,60,92}" 2>&1 | grep -v Warn | tee "$P/rates.log"
      cp "$R/KERNEL_RATES.md" "$R/kernel_rates.json" "$P/" 2>/dev/null
      rm -f "$G"/*.py; cp -r "$G" "$P/family"
      tar czf "$OUT/s13p_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s15)  # session 15: the rows backward's loads in flight and register cap (kRowsBackwardAhead, since removed; kRowsBackwardWarps)
      # and the batch-norm backward's units in flight (kBnGradUnits): an A/B of each at its problem (L2-37, L2-11;
      # benchmarks/kernel_variants.py --backward, S15_ROUNDS rounds), beside the rows and batch-norm GPU tests
      # (S15_TESTS, default on). S15_ROWS_VARIANTS / S15_BN_VARIANTS: kernel_variants --variant lists (one a line).
      P=$OUT/s15; V=.build/s15; mkdir -p "$P" "$V"
      python3 -m kgen.cli emit --ref .kb/problems/level2_37_*.py -o "$V/l2_37.py"
      python3 -m kgen.cli emit --ref .kb/problems/level2_11_*.py -o "$V/l2_11.py"
      if [ -n "${S15_TESTS-1}" ]; then
        (timeout -k 5 500 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_bn_train.py \
           > "$P/pytest_bn_train.log" 2>&1; echo "exit code: $?" >> "$P/pytest_bn_train.log") &
        (timeout -k 5 500 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
           -k "${S15_RESIDENT_K:-}" > "$P/pytest_rows.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_rows.log") &
      fi
      ab() {  # ab NAME FILE KERNEL_REGEX VARIANTS...
        local name=$1 file=$2 kernel=$3; shift 3
        local args=(); for v in "$@"; do args+=(--variant "$v"); done
        timeout -k 5 520 python3 benchmarks/kernel_variants.py "$file" --backward --kernel "$kernel" \
          --rounds "${S15_ROUNDS:-3}" --calls 10 --json "$P/ab_$name.json" "${args[@]}" > "$P/ab_$name.log" 2>&1
        echo "exit code: $?" >> "$P/ab_$name.log"
      }
      mapfile -t RV <<< "${S15_ROWS_VARIANTS:-}"
      mapfile -t BV <<< "${S15_BN_VARIANTS:-}"
      (ab rows "$V/l2_37.py" rows_backward "${RV[@]}") &
      (ab bn "$V/l2_11.py" bn_grad "${BV[@]}") &
      wait
      for f in "$P"/ab_*.log; do echo "== $f"; grep -vE "^\[|ninja|Building|Warn|warn" "$f" | tail -n 12; done
      tail -n 3 "$P"/pytest_*.log 2>/dev/null
      tar czf "$OUT/s15_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s15b)  # session 15: the two-pass backward sweeps' register cap (kSweepBackwardWarps) A/B at S15B_AB's problems
      # (default L2-92, 85, 83), beside the resident and batch-norm GPU tests (S15_TESTS, default on) and the
      # checks (validate + KernelBench) of S15B_FAMILY's problems (default the rows backward's and L2-11).
      P=$OUT/s15b; V=.build/s15b; G=.build/family_s15; mkdir -p "$P" "$V" "$G"
      kb_wheels
      if [ -n "${S15_TESTS-1}" ]; then
        (timeout -k 5 540 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_bn_train.py \
           > "$P/pytest_bn_train.log" 2>&1; echo "exit code: $?" >> "$P/pytest_bn_train.log") &
        (timeout -k 5 540 python3 -m pytest -q -rf -p no:cacheprovider tests/gpu/test_gn_region_resident.py \
           > "$P/pytest_resident.log" 2>&1; echo "exit code: $?" >> "$P/pytest_resident.log") &
      fi
      (fam_run "$G" "${S15B_FAMILY:-37,62,75,88,94,11}" --workers 3 --budget "${S15B_CHECK_BUDGET:-300}" \
         > "$P/family_checks.txt") &
      for n in ${S15B_AB:-92 85 83}; do
        python3 -m kgen.cli emit --ref .kb/problems/level2_${n}_*.py -o "$V/l2_$n.py"
        (timeout -k 5 540 python3 benchmarks/kernel_variants.py "$V/l2_$n.py" --backward --kernel backward_sweep \
           --rounds "${S15_ROUNDS:-3}" --calls 10 --json "$P/ab_sweep_$n.json" \
           --variant "w24:kSweepBackwardWarps = 8;=>kSweepBackwardWarps = 24;" \
           --variant "w32:kSweepBackwardWarps = 8;=>kSweepBackwardWarps = 32;" > "$P/ab_sweep_$n.log" 2>&1
         echo "exit code: $?" >> "$P/ab_sweep_$n.log") &
        sleep 2
      done
      wait
      for f in "$P"/ab_*.log; do echo "== $f"; grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$f" | tail -n 6 | cut -c1-250; done
      tail -n 3 "$P"/pytest_*.log 2>/dev/null; grep -E "^L[12]" "$P/family_checks.txt"
      rm -f "$G"/*.py; cp -r "$G" "$P/family"
      tar czf "$OUT/s15b_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    s16)  # session 16: the pipelined two-pass backward (groupnorm/twopass/backward_pipeline.cuh). Builds every A/B variant and
      # the two-pass test extension at once, runs the two-pass and cluster GPU tests (S16_TESTS, default on; -k
      # S16_TESTS_K), then the A/Bs one after another on a quiet GPU: per problem of S16_AB (default the two-pass
      # problems), kernel_variants --backward over the backward's kernels, the variants S16_VARIANTS_<n> (one a line)
      # or the defaults below (base = the file as planned; "sweeps" = the two sweep kernels); a line "@NAME=PATH" adds
      # another emitted file of the problem as variant NAME (kernel_variants --file: the file at an older commit, for
      # changes no text substitution expresses). S16_KERNEL: the kernels timed (a regular expression; default the
      # two-pass backward's). S16_TEST_FILES: the test files (default the two-pass and cluster ones).
      P=$OUT/s16; V=.build/s16; mkdir -p "$P" "$V"
      K=${S16_KERNEL:-'backward_pipeline|backward_sweep|backward_group|param_grad|param_sums'}
      # (A runtime switch is one instance per process for every extension, so these are compile-time: session 17
      # found the earlier `pipeline_mode` variants timing the base.)
      sweeps='sweeps:constexpr bool kPipelinedBackward = true;=>constexpr bool kPipelinedBackward = false;'
      declare -A AB
      for n in ${S16_AB:-35 19 21 60 61 83 92 85}; do
        if [ "$n" = 35 ]; then f=.kb/problems/level1_35_*.py; else f=$(ls .kb/problems/level2_${n}_*.py); fi
        python3 -m kgen.cli emit --ref $f -o "$V/p$n.py"
        var="S16_VARIANTS_$n"
        if [ -n "${!var-}" ]; then mapfile -t vs <<< "${!var}"; else vs=("$sweeps"); fi
        args=(); for v in "${vs[@]}"; do
          if [[ $v == @* ]]; then args+=(--file "${v#@}"); else args+=(--variant "$v"); fi
        done
        AB[$n]=$(printf '%q ' "${args[@]}")
        (python3 benchmarks/kernel_variants.py "$V/p$n.py" --kernel "$K" --build-only "${args[@]}" \
           > "$P/build_$n.log" 2>&1) &
      done
      if [ -n "${S16_TESTS-1}" ]; then
        (timeout -k 5 ${S16_TESTS_TIMEOUT:-560} python3 -m pytest -q -rf -p no:cacheprovider \
           ${S16_TEST_FILES:-tests/gpu/test_gn_region_twopass.py tests/gpu/test_gn_region_cluster.py} \
           -k "${S16_TESTS_K:-}" > "$P/pytest_twopass.log" 2>&1
         echo "exit code: $?" >> "$P/pytest_twopass.log") &
      fi
      wait
      tail -n 3 "$P"/pytest_*.log 2>/dev/null
      for n in ${S16_AB:-35 19 21 60 61 83 92 85}; do
        eval "args=(${AB[$n]})"
        timeout -k 5 ${S16_AB_TIMEOUT:-120} python3 benchmarks/kernel_variants.py "$V/p$n.py" --backward --kernel "$K" \
          --rounds "${S16_ROUNDS:-3}" --calls 10 --json "$P/ab_$n.json" "${args[@]}" > "$P/ab_$n.log" 2>&1
        echo "exit code: $?" >> "$P/ab_$n.log"
        echo "== L-$n"; grep -vE "^\[|ninja|Building|Warn|warn|prebuild" "$P/ab_$n.log" | tail -n 8 | cut -c1-330
      done
      tar czf "$OUT/s16_logs.tar.gz" -C "$P" . && rm -rf "$P" ;;
    ncu12)  # session 11: ncu on kgen's kernels (forward and backward) of NCU_FAMILY's problems (default L2-37, L2-92,
      # L2-11: the rows below 2.4 TB/s in FAMILY.md), emitted from .kb/problems; sections: speed of light, occupancy,
      # warp stalls, instruction mix (NCU_SECTIONS: more "--section X"). One log a problem, and the summary lines on
      # stdout. NCU_KERNELS: a regular expression on the kernel names (default: every kgen kernel).
      F=.build/ncu12; mkdir -p "$F"
      for n in ${NCU_FAMILY:-37 92 11}; do
        python3 -m kgen.cli emit --ref .kb/problems/level2_${n}_*.py ${NCU_EMIT_ARGS:-} -o "$F/l2_$n.py"
      done
      python3 benchmarks/prebuild.py -j 6 "$F"/l2_*.py 2>&1 | tail -3
      for n in ${NCU_FAMILY:-37 92 11}; do
        timeout ${NCU_TIMEOUT:-150} ncu --kernel-name "regex:${NCU_KERNELS:-region|bn_|stats_|channel_|column_|plane_|window_|reduce_|finalize}" \
          --launch-count ${NCU_LAUNCHES:-12} --section SpeedOfLight ${NCU_SECTIONS:-} \
          --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section LaunchStats \
          python3 benchmarks/run_solution_once.py "$F/l2_$n.py" --backward --calls 1 > "$OUT/ncu_l2_$n.log" 2>&1
        echo "== L2-$n"
        grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Theoretical Occ" \
          "$OUT/ncu_l2_$n.log" | cut -c1-140 | head -80
      done ;;
    clncu)  # ncu on the channels-last region's four kernels at L2-19's shape (forward and backward, one call each)
      mkdir -p .build/cl
      [ -f .build/cl/l219_fast.py ] || python3 -m kgen.cli emit --ref kgen/specs/references/level2_19_convtranspose2d_gelu_groupnorm.py \
        --conv fast -o .build/cl/l219_fast.py
      timeout 250 ncu --kernel-name regex:region_nhwc --launch-count 4 --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python3 benchmarks/run_solution_once.py .build/cl/l219_fast.py --backward --calls 1 \
        > "$OUT/ncu_nhwc.log" 2>&1
      grep -E "region_nhwc|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers|Stall" "$OUT/ncu_nhwc.log" \
        | cut -c1-150 | head -40 ;;
    *) echo "unknown step $step" ;;
  esac
done
