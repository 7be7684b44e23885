#!/usr/bin/env bash
# The common GPU calls, one step after another, logs and JSON under $OUT (default /tmp/kgen-out; the GPU's name,
# driver and PyTorch in $OUT/gpu.txt). Run from the repository root on the GPU machine:
#
#   bash benchmarks/device_run.sh STEP [STEP ...]
#
# Steps (the environment variables a step takes are in its comment below):
#   tests                 pytest -m gpu: every GPU test
#   validate:FILE[:ARGS]  kgen validate generated/FILE --bench --json (more validate ARGS after a second colon)
#   presets-bench         kgen validate --bench of the five preset files in generated/ (what results/h100 lists)
#   verdicts              a planted-bug file (expect exit 1) and a file that does not compile (expect 2)
#   profile:FILE          per-kernel time and DRAM rate of generated/FILE (benchmarks/profile_kernels.py)
#   timeline:FILE         where one call of generated/FILE and of its reference spends its time (trace_timeline.py)
#   prebuild              every generated/*.py's extension built once, in parallel (benchmarks/prebuild.py)
#   onepass               the one-pass GroupNorm forward: its GPU tests, its timings against two passes, and
#                         kgen validate --bench of `kgen emit groupnorm --forward one-pass`
#   regions               the region kernels' GPU tests and a few --ref problems end to end (a short call)
#   slow-suites           tests/gpu/test_gn_region_nhwc.py, test_region_dtypes.py, test_groupnorm.py and
#                         test_rows_half.py, every file they build emitted and built in parallel first
#                         (benchmarks/prebuild_gpu_tests.py)
#   family                the 17 KernelBench GroupNorm problems' verdicts, four at a time (benchmarks/family.py)
#   family-bench          the 17 problems end to end and timed, resumable on a warm machine (benchmarks/family.py)
#   corpus-bench          the 42 corpus references (tests/corpus) the same way, resumable (CORPUS_ONLY, CORPUS_BUDGET)
#   cliffs                the kernel-choice rules: tests/gpu/test_kernel_choice.py and benchmarks/results/h200/cliffs/cliffs.sh
#   host-profile:REF      where a call's host time goes (benchmarks/host_profile.py), kgen emitted from REF beside it
#   tune:REF[:ARGS]       kgen tune REF (a reference path): every candidate validated and timed, the table and JSON
#   autograd:REF          REF emitted with --autograd python and cpp: both built at once, the host time a call of
#                         each (host_profile.py), kgen validate --bench of the cpp file, tests/gpu/test_autograd_cpp.py
#   kernel-rates          kgen's kernels of every family problem against a same-size copy (kernel_rates.py)
#   tf32-verdicts         kgen's verdict beside KernelBench's where a region feeds a TF32 conv (tf32_verdicts.py)
#   sanitize              compute-sanitizer's four tools on generated/*.py (benchmarks/sanitize.sh)
#   reliability           the reliability table's sections (a)-(d): numerics, memory and build-once, the validator
#                         on adversarial files, compute-sanitizer on the golden files
#   reliability-families  the reliability table's sections (a2) and (d2): every kernel family, numerics, launch
#                         check and compute-sanitizer, the other sections merged from the committed table
#
# The family steps, kernel-rates and tf32-verdicts need KernelBench's evaluator in .kb (benchmarks/README.md).
# Where a step's results become the current table, they are copied into benchmarks/results/<gpu>/ by hand.
set -u
STEPS="tests validate:FILE[:ARGS] presets-bench verdicts profile:FILE timeline:FILE prebuild onepass regions slow-suites family
family-bench corpus-bench cliffs host-profile:REF tune:REF[:ARGS] autograd:REF kernel-rates tf32-verdicts sanitize
reliability reliability-families"
usage() {
  echo "usage: bash benchmarks/device_run.sh STEP [STEP ...]   (logs under \$OUT, default /tmp/kgen-out)"
  echo "steps: $(echo $STEPS)"
}
if [ $# -eq 0 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  usage; sed -n '/^# Steps/,/^# The family steps/p' "$0" | sed '$d' | cut -c3-
  [ $# -eq 0 ] && exit 2 || exit 0
fi
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}
mkdir -p "$OUT" .build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__)" >> "$OUT/gpu.txt"
# torch locks an extension's build with a file whose existence alone makes every later build of that extension
# wait: a build killed by a timeout leaves one, and every later import of the extension hangs. Nothing builds
# between calls, so any lock now is stale.
find .build -path "*ext*" -name lock -print -delete 2>/dev/null | head -5

# KernelBench's wheels (for its evaluator) beside the device's torch.
kb_wheels() { python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1; }
# validate NAME FILE [ARGS...]: kgen validate --bench --json, the log's tail, the exit code.
validate() {
  local name=$1 file=$2; shift 2
  python3 -m kgen.cli validate "$file" --bench --json "$OUT/validate_$name.json" "$@" 2>&1 \
    | tee "$OUT/validate_$name.log" | tail -40
  echo "exit code: ${PIPESTATUS[0]}" | tee -a "$OUT/validate_$name.log"
}
# The merged table the reliability steps start from (--merge): its other sections are carried into the new one.
RELIABILITY_MERGE=${RELIABILITY_MERGE:-benchmarks/results/h200/reliability/reliability.json}

for step in "$@"; do
  kind=${step%%:*}; rest=${step#*:}
  echo "== $step"
  case $kind in
    tests)
      python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest_gpu.log" | tail -15 ;;
    validate)
      file=${rest%%:*}; args=""; [ "$rest" != "$file" ] && args=${rest#*:}
      validate "$(basename "$file" .py)${args:+_args}" "generated/$file" $args ;;
    presets-bench)  # the preset goldens, each alone on the GPU; the TF32 files at 1e-2 (their headers say why)
      for f in groupnorm convt_gelu_groupnorm conv_gn_tanh_hardswish_res_lse; do
        validate "$f" "generated/$f.py"
      done
      for f in convt_gelu_groupnorm_fast convt_gelu_groupnorm_fused; do
        validate "$f" "generated/$f.py" --atol 1e-2 --rtol 1e-2
      done
      grep -hE "^  forward|^kgen verdict" "$OUT"/validate_*.log ;;
    verdicts)
      sed 's/var + eps/var + 100.0 * eps/' generated/groupnorm.py > /tmp/planted_variance_bug.py
      python3 -m kgen.cli validate /tmp/planted_variance_bug.py --trials 1 --no-backward 2>&1 | tail -25 > "$OUT/verdict_planted_bug.log"
      echo "exit code: ${PIPESTATUS[0]}" >> "$OUT/verdict_planted_bug.log"
      sed 's/constexpr int kBlock = 256;/constexpr int kBlock = 256/' generated/groupnorm.py > /tmp/does_not_compile.py
      python3 -m kgen.cli validate /tmp/does_not_compile.py 2>&1 | tail -25 > "$OUT/verdict_build_error.log"
      echo "exit code: ${PIPESTATUS[0]}" >> "$OUT/verdict_build_error.log"
      tail -n 3 "$OUT"/verdict_*.log ;;
    profile)
      python3 benchmarks/profile_kernels.py "generated/$rest" --json "$OUT/profile_$(basename "$rest" .py).json" 2>&1 \
        | grep -v Warn | tee "$OUT/profile_$(basename "$rest" .py).log" ;;
    timeline)
      python3 benchmarks/trace_timeline.py "generated/$rest" --reference 2>&1 | grep -v Warn \
        | tee "$OUT/timeline_$(basename "$rest" .py).log" ;;
    prebuild)
      python3 benchmarks/prebuild.py -j "${PREBUILD_JOBS:-16}" generated/*.py 2>&1 | tee "$OUT/prebuild.log" | tail -3 ;;
    onepass)
      timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py 2>&1 \
        | tee "$OUT/onepass_pytest.log" | tail -8
      timeout 300 python3 tests/gpu/test_groupnorm_onepass.py --bench 2>&1 | grep -v Warn | tee "$OUT/onepass_bench.log"
      python3 -m kgen.cli emit groupnorm --forward one-pass -o .build/groupnorm_onepass.py
      validate groupnorm_onepass .build/groupnorm_onepass.py ;;
    slow-suites)  # built first, in parallel; then the four suites at once (SUITES_BUDGET seconds, default 240)
      python3 benchmarks/prebuild_gpu_tests.py .build/gpu_tests > "$OUT/slow_suites_emit.log" 2>&1
      timeout 330 python3 benchmarks/prebuild.py -j "${PREBUILD_JOBS:-15}" .build/gpu_tests/*.py \
        > "$OUT/slow_suites_prebuild.log" 2>&1; tail -1 "$OUT/slow_suites_prebuild.log"
      for t in test_gn_region_nhwc test_region_dtypes test_groupnorm test_rows_half; do
        timeout "${SUITES_BUDGET:-240}" python3 -m pytest -q -p no:cacheprovider "tests/gpu/$t.py" \
          > "$OUT/pytest_$t.log" 2>&1 &
      done
      wait
      for t in test_gn_region_nhwc test_region_dtypes test_groupnorm test_rows_half; do
        echo "$t: $(tail -1 "$OUT/pytest_$t.log")"
      done ;;
    regions)  # the fused-region kernels' GPU tests and a few --ref problems end to end, at once (REGIONS_BUDGET
      # seconds, default 200; REGIONS_ONLY the KernelBench problems, default 85,75,30); one tarball of logs.
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
    family)  # verdicts only: emit, kgen validate (2 trials), KernelBench's evaluator; four problems at a time, so
      # its ms are not speed figures. FAMILY_ONLY picks problems (e.g. 11,23,61); FAMILY_ARGS adds options.
      kb_wheels
      F=$OUT/family; mkdir -p "$F"
      PYTHONPATH=/tmp/site:$PWD python3 benchmarks/family.py .kb/problems .kb "$F" --trials 2 --workers 4 --jobs 14 \
        ${FAMILY_ONLY:+--only "$FAMILY_ONLY"} ${FAMILY_ARGS:-} 2>&1 | tee "$F/family.log" | grep -E "^L[12]-|prebuild:|emit:"
      tar czf "$OUT/family_logs.tar.gz" -C "$F" . ;;
    family-bench)  # every problem emit -> validate -> KernelBench -> timings (parallel builds, FAMILY_WORKERS
      # correctness runs at once with Inductor's caches warmed beside them, then the timings alone on the GPU).
      # FAMILY_BUDGET seconds (default 520) bound the call; the table lives in .build/family_out on the device
      # machine, so the same step again on the warm machine resumes where the last call stopped. FAMILY_ONLY picks
      # problems (e.g. 19,92); FAMILY_ARGS adds options (e.g. '--emit-args "--conv fast"').
      kb_wheels
      F=.build/family_out; mkdir -p "$F"
      PYTHONPATH=/tmp/site:$PWD python3 benchmarks/family.py .kb/problems .kb "$F" --bench --trials 2 --resume \
        --budget "${FAMILY_BUDGET:-520}" --workers "${FAMILY_WORKERS:-4}" --jobs 16 \
        ${FAMILY_ONLY:+--only "$FAMILY_ONLY"} ${FAMILY_ARGS:-} 2>&1 \
        | tee -a "$F/family.log" | grep -E "^L[12]-|prebuild:|emit:|resume:"
      tar czf "$OUT/family_logs.tar.gz" -C "$F" . ;;
    corpus-bench)  # as family-bench, on the corpus (tests/corpus); CORPUS_ONLY picks stems, CORPUS_BUDGET (520 s)
      kb_wheels
      F=.build/corpus_out; mkdir -p "$F"
      PYTHONPATH=/tmp/site:$PWD python3 benchmarks/family.py tests/corpus .kb "$F" --glob "*_*.py" --bench --trials 2 \
        --resume --budget "${CORPUS_BUDGET:-520}" --workers "${CORPUS_WORKERS:-4}" --jobs 16 --min-run-time 0.5 \
        ${CORPUS_ONLY:+--only "$CORPUS_ONLY"} 2>&1 | tee -a "$F/family.log" | grep -E "validate exit|bench|prebuild:|emit:"
      tar czf "$OUT/corpus_logs.tar.gz" -C "$F" . ;;
    autograd)  # the C++ autograd node against the Python Function: host time a call, the cpp file validated
      name=$(basename "$rest" .py)
      for mode in python cpp; do
        python3 -m kgen.cli emit --ref "$rest" --autograd $mode -o ".build/autograd_${name}_$mode.py"
      done
      python3 benchmarks/prebuild.py -j 2 ".build/autograd_${name}_python.py" ".build/autograd_${name}_cpp.py" \
        > "$OUT/autograd_prebuild_$name.log" 2>&1
      for mode in python cpp; do
        python3 benchmarks/host_profile.py ".build/autograd_${name}_$mode.py" --reference "$rest" \
          --json "$OUT/host_${name}_$mode.json" 2>&1 | grep -v Warn > "$OUT/host_${name}_$mode.log"
        head -4 "$OUT/host_${name}_$mode.log"
      done
      validate "autograd_${name}_cpp" ".build/autograd_${name}_cpp.py"
      python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_autograd_cpp.py 2>&1 \
        | tee "$OUT/pytest_autograd_cpp.log" | tail -5 ;;
    tune)  # kgen tune on one reference; the winner, the table (stderr) and every candidate's JSON under $OUT
      ref=${rest%%:*}; args=""; [ "$rest" != "$ref" ] && args=${rest#*:}
      name=$(basename "$ref" .py)
      python3 -m kgen.cli tune "$ref" -o "$OUT/tuned_$name.py" --json "$OUT/tune_$name.json" $args 2>&1 \
        | grep -v "Warn\|warn_once" | tee "$OUT/tune_$name.log" | tail -25 ;;
    cliffs)
      timeout 500 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_kernel_choice.py 2>&1 \
        | tee "$OUT/kernel_choice.log" | tail -5
      OUT=$OUT bash benchmarks/results/h200/cliffs/cliffs.sh 2>&1 | grep -v "Warn\|warn_once" | tee "$OUT/cliffs.log" \
        | grep -E "^==|^base|^resident_rule|^twopass_forward|^forward_rule" ;;
    host-profile)
      name=$(basename "$rest" .py)
      python3 -m kgen.cli emit --ref "$rest" -o ".build/host_$name.py"
      python3 benchmarks/host_profile.py ".build/host_$name.py" --reference "$rest" --api --json "$OUT/host_$name.json" \
        2>&1 | grep -v Warn | tee "$OUT/host_$name.log" ;;
    kernel-rates)  # KERNEL_RATES_ONLY picks problems (default all 17); one problem at a time on the GPU
      R=$OUT/kernel_rates; mkdir -p "$R"
      python3 benchmarks/kernel_rates.py .kb/problems "$R" --jobs 12 ${KERNEL_RATES_ONLY:+--only "$KERNEL_RATES_ONLY"} \
        2>&1 | grep -v Warn | tee "$R/kernel_rates.log" ;;
    tf32-verdicts)
      kb_wheels
      PYTHONPATH=/tmp/site:$PWD python3 benchmarks/tf32_verdicts.py .kb "$OUT/tf32_verdicts" 2>&1 \
        | tee "$OUT/tf32_verdicts.log" | tail -8 ;;
    sanitize)  # SANITIZE_TARGETS: files or family:NAME targets (default generated/*.py); SANITIZE_JOBS at a time
      bash benchmarks/sanitize.sh "$OUT/sanitize" ${SANITIZE_TARGETS:-} 2>&1 | tee "$OUT/sanitize.log" | tail -30
      tar czf "$OUT/sanitize_logs.tar.gz" -C "$OUT/sanitize" . ;;
    reliability)
      # The golden files, everything (about 7-8 min on an H100 host, builds included): prebuild every extension
      # (generated/*.py, the GPU test files, groupnorm --groups 4), then at once: benchmarks/sanitize.sh (4 tools x
      # generated/*.py), pytest -m gpu tests/validate (less the --bench test), benchmarks/reliability.py (numerics,
      # memory/build-once, validator); then the sanitizer section is merged into the table. $OUT gets exactly 3
      # files: RELIABILITY.md, reliability.json and reliability_logs.tar.gz (every log, gpu.txt).
      # RELIABILITY_BUDGET (default 420 s) bounds the parallel phase (run the step alone: beside other GPU work
      # 330 s is not enough); what ran out of time shows as NOT RUN / a timeout in the logs.
      # RELIABILITY_SKIP="sanitize pytest table" (any of them) leaves parts out, to split the step over two calls.
      LOGS=$(mktemp -d /tmp/kgen-reliability.XXXXXX)
      t0=$(date +%s)
      mv "$OUT/gpu.txt" "$LOGS/gpu.txt" 2>/dev/null
      echo "== prebuild"
      # L1-35's two-pass forward is sanitized too (the golden file takes one pass where the GPU allows)
      python3 -m kgen.cli emit groupnorm --forward two-pass -o .build/groupnorm_twopass.py
      SPEC_GOLDENS=$(ls generated/*.py | grep -v '/ref_')   # the spec goldens (the --ref ones: family.py)
      python3 benchmarks/prebuild.py -j 16 $SPEC_GOLDENS .build/groupnorm_twopass.py \
        tests/validate/files/gpu_groupnorm*.py.txt emit:groupnorm:groups=4 > "$LOGS/prebuild.log" 2>&1
      tail -1 "$LOGS/prebuild.log"; echo "prebuild: $(( $(date +%s) - t0 )) s"
      budget=${RELIABILITY_BUDGET:-420}
      skip=" ${RELIABILITY_SKIP:-} "
      pid_sanitize="" pid_pytest=""
      if [[ $skip != *" sanitize "* ]]; then
        SANITIZE_JOBS=${SANITIZE_JOBS:-6} timeout -k 10 "$budget" bash benchmarks/sanitize.sh "$LOGS/sanitize" $SPEC_GOLDENS \
          .build/groupnorm_twopass.py > "$LOGS/sanitize.log" 2>&1 &
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
          --merge "$RELIABILITY_MERGE" \
          --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" > "$LOGS/reliability.log" 2>&1
        echo "reliability.py exit $?: $(( $(date +%s) - t0 )) s"
      fi
      [ -n "$pid_pytest" ] && { wait $pid_pytest; echo "pytest exit $?: $(( $(date +%s) - t0 )) s"; }
      [ -n "$pid_sanitize" ] && { wait $pid_sanitize; echo "sanitize.sh exit $?: $(( $(date +%s) - t0 )) s"; }
      [ -f "$LOGS/sanitize/runs.tsv" ] && [ ! -f "$LOGS/sanitize/summary.txt" ] && \
        python3 benchmarks/sanitize_summary.py "$LOGS/sanitize" > /dev/null
      [ -f "$LOGS/reliability.json" ] || cp "$RELIABILITY_MERGE" "$LOGS/reliability.json"
      timeout 120 python3 benchmarks/reliability.py --sections sanitizer --sanitize-dir "$LOGS/sanitize" \
        --merge "$LOGS/reliability.json" --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        >> "$LOGS/reliability.log" 2>&1
      echo "total: $(( $(date +%s) - t0 )) s" | tee "$LOGS/duration.txt"
      tail -3 "$LOGS/pytest_gpu_validate.log" 2>/dev/null; tail -25 "$LOGS/sanitize/summary.txt" 2>/dev/null
      tail -1 "$LOGS/reliability.log"
      cp "$LOGS/RELIABILITY.md" "$LOGS/reliability.json" "$OUT/" 2>/dev/null
      tar czf "$OUT/reliability_logs.tar.gz" -C "$LOGS" . ;;
    reliability-families)
      # The kernel families (benchmarks/reliability_families.py), in one call of < 9 min: emit each family's file
      # into .build/families/, prebuild them (PREBUILD_JOBS, default 12, at once), then at once
      # benchmarks/sanitize.sh (4 tools x every family, SANITIZE_JOBS, default 8, at a time, with their probes) and
      # benchmarks/reliability.py --sections families (numerics and the launch check); then the sanitizer rows.
      # The other sections are merged from $RELIABILITY_MERGE (default: the committed H200 table's JSON).
      # RELIABILITY_BUDGET (default 480 s from the step's start) is when the last run may end; what it cut is
      # NOT RUN. $OUT gets exactly 3 files: RELIABILITY.md, reliability.json, reliability_logs.tar.gz.
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
        --merge "$RELIABILITY_MERGE" --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        > "$LOGS/reliability.log" 2>&1
      echo "reliability.py exit $?: $(( $(date +%s) - t0 )) s"
      wait $pid_sanitize; echo "sanitize.sh exit $?: $(( $(date +%s) - t0 )) s"
      [ -f "$LOGS/sanitize/runs.tsv" ] && [ ! -f "$LOGS/sanitize/summary.txt" ] && \
        python3 benchmarks/sanitize_summary.py "$LOGS/sanitize" > /dev/null
      # a table even if the families' run was cut before it wrote one
      [ -f "$LOGS/reliability.json" ] || cp "$RELIABILITY_MERGE" "$LOGS/reliability.json"
      timeout 60 python3 benchmarks/reliability.py --sections family_sanitizer --sanitize-dir "$LOGS/sanitize" \
        --merge "$LOGS/reliability.json" --out "$LOGS/RELIABILITY.md" --json "$LOGS/reliability.json" \
        >> "$LOGS/reliability.log" 2>&1
      echo "total: $(( $(date +%s) - t0 )) s" | tee "$LOGS/duration.txt"
      grep -E "^family " "$LOGS/reliability.log" | grep -vE "^family +\S+ +(PASS|LAUNCHED) " | cut -c1-220 | head -40
      grep -v " 0 errors" "$LOGS/sanitize/summary.txt" 2>/dev/null | cut -c1-220 | head -30
      tail -1 "$LOGS/reliability.log"
      cp "$LOGS/RELIABILITY.md" "$LOGS/reliability.json" "$OUT/" 2>/dev/null
      tar czf "$OUT/reliability_logs.tar.gz" -C "$LOGS" . ;;
    *) echo "unknown step $step"; usage ;;
  esac
done
