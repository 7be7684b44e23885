#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on emitted solutions at small shapes, forward,
# backward and a forward under no_grad (benchmarks/sanitize.py), from the repository root:
#
#   bash benchmarks/sanitize.sh [LOGDIR] [TARGET...]       (default: .build/sanitize, generated/*.py)
#
# A TARGET is a solution file, or family:NAME, a kernel family of kgen.bench.families (its
# emitted file in .build/families/, emitted here if missing, at the family's shape).
# 1. builds every file's extension once, without the sanitizer, in parallel (benchmarks/prebuild.py),
#    into TORCH_EXTENSIONS_DIR (default $PWD/.build/ext), so the sanitized runs only load it
#    (SANITIZE_NO_PREBUILD=1: the caller has built them);
# 2. runs each target x tool, SANITIZE_JOBS (default 6) at a time, tool by tool (every target's memcheck first),
#    each under `timeout` (SANITIZE_TIMEOUT, default 300 s, and never past SANITIZE_DEADLINE, epoch seconds, if
#    set: a run that would start less than 20 s before it is not started, and shows as NOT RUN in the table):
#    LOGDIR/STEM.TOOL.log holds the sanitizer's report and the script's line (STEM: the file's stem, family-NAME);
# 3. the probes that explain reports not about kgen's kernels (kgen.bench.reliability says how), first in
#    the queue (see below; and for generated/groupnorm.py sanitize_bulk_stores.py, beside the queue);
#    SANITIZE_NO_PROBES=1: none;
# 4. LOGDIR/runs.tsv (target, tool, exit, seconds) and LOGDIR/summary.txt (benchmarks/sanitize_summary.py:
#    the ERROR SUMMARY count and which kernels the reports name, ours or the library's).
# SANITIZE_PRECISION=bf16|fp16: every run's model and inputs in that dtype (sanitize.py --precision; its line in each
# log says so); give such a run a LOGDIR of its own.
# Exit status 0 when every run exits 0 with 0 errors. Exit 9 of a run: the sanitizer found errors;
# 124: the run timed out; other: the script failed.
set -u
cd "$(dirname "$0")/.."
LOGDIR=${1:-.build/sanitize}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=(generated/*.py); fi
TOOLS=${SANITIZE_TOOLS:-"memcheck racecheck initcheck synccheck"}
JOBS=${SANITIZE_JOBS:-6}
export SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-300} SANITIZE_DEADLINE=${SANITIZE_DEADLINE:-}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$PWD/.build/ext}
mkdir -p "$LOGDIR"
rm -f "$LOGDIR"/*.log "$LOGDIR/runs.tsv" "$LOGDIR/summary.txt"

CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
if [ -z "$CS" ]; then
  for c in ${CUDA_HOME:+$CUDA_HOME/bin/compute-sanitizer} /usr/local/cuda/bin/compute-sanitizer \
           $(ls -d /usr/local/cuda-*/bin/compute-sanitizer 2>/dev/null | sort -V -r); do
    [ -x "$c" ] && { CS=$c; break; }
  done
fi
if [ -z "$CS" ]; then echo "sanitize.sh: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2; exit 3; fi
export CS
"$CS" --version | tail -1 | tee "$LOGDIR/version.txt"

FAMILIES=() FILES=()
for t in "${TARGETS[@]}"; do
  case $t in family:*) FAMILIES+=("${t#family:}") ;; *) FILES+=("$t") ;; esac
done
BUILD=("${FILES[@]+"${FILES[@]}"}")
if [ ${#FAMILIES[@]} -gt 0 ]; then
  missing=()
  for f in $(python3 benchmarks/reliability_families.py files "${FAMILIES[@]}"); do
    [ -f "$f" ] || missing+=("$f")
    BUILD+=("$f")
  done
  [ ${#missing[@]} -gt 0 ] && python3 benchmarks/reliability_families.py emit "${FAMILIES[@]}" > /dev/null
fi
if [ -z "${SANITIZE_NO_PREBUILD:-}" ]; then   # SANITIZE_NO_PREBUILD=1: the caller built every extension already
  echo "== prebuild (no sanitizer)"
  python3 benchmarks/prebuild.py -j 8 "${BUILD[@]}" 2>&1 | tee "$LOGDIR/prebuild.log" | grep -v "^prebuild .*: ok"
fi

stem() { case $1 in family:*) echo "family-${1#family:}" ;; *) basename "$1" .py ;; esac; }
export SANITIZE_PRECISION=${SANITIZE_PRECISION:-}
[ -n "$SANITIZE_PRECISION" ] && SANITIZE_NO_PROBES=1   # the probes explain float32 runs
export -f stem

run_one() {   # TARGET TOOL LOGDIR; TOOL may be a family probe (initcheck-library-probe, bulk-store-probe)
  local target=$1 tool=$2 logdir=$3
  local log="$logdir/$(stem "$target").$tool.log"
  local limit=$SANITIZE_TIMEOUT
  if [ -n "$SANITIZE_DEADLINE" ]; then
    local left=$(( SANITIZE_DEADLINE - $(date +%s) ))
    if [ "$left" -lt 20 ]; then printf '%-40s %-23s not started (deadline)\n' "$target" "$tool"; return; fi
    [ "$left" -lt "$limit" ] && limit=$left
  fi
  local extra=() envs=() script=(python3 benchmarks/sanitize.py "$target") sanitizer=("$CS")
  [ -n "$SANITIZE_PRECISION" ] && script+=(--precision "$SANITIZE_PRECISION")
  case $tool in
    memcheck)  extra=(--leak-check no); envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
    initcheck) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
    racecheck) extra=(--racecheck-report all) ;;
    initcheck-library-probe) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); script+=(--probe library-writes) ;;
    initcheck-reference-probe) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); script+=(--probe reference) ;;
    bulk-store-probe) sanitizer=(); script+=(--probe bulk-store) ;;
    initcheck-probe-pytorch) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); script=(python3 "$target" initcheck) ;;
    initcheck-probe-kernels) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); script=(python3 "$target" kernels) ;;
  esac
  local start=$(date +%s%N)
  if [ ${#sanitizer[@]} -eq 0 ]; then
    timeout -k 10 "$limit" "${script[@]}" > "$log" 2>&1
  else
    local name=${tool%%-*}   # initcheck-library-probe, initcheck-probe-*: initcheck
    env ${envs[@]+"${envs[@]}"} timeout -k 10 "$limit" "$CS" --tool "$name" --target-processes application-only \
      --error-exitcode 9 --show-backtrace device --print-limit 200 ${extra[@]+"${extra[@]}"} "${script[@]}" > "$log" 2>&1
  fi
  local code=$?
  local seconds=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  printf '%s\t%s\t%s\t%.1f\n' "$target" "$tool" "$code" "$seconds" >> "$logdir/runs.tsv"
  printf '%-40s %-23s exit %3s  %s  %.0f s\n' "$target" "$tool" "$code" \
    "$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | tail -1)" "$seconds"
}
export -f run_one

has() { local x; for x in "${TARGETS[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
probe_log() {   # FILE TOOL START CODE: a probe's runs.tsv line
  printf '%s\t%s\t%s\t%.1f\n' "$1" "$2" "$4" \
    "$(awk -v a="$3" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" >> "$LOGDIR/runs.tsv"
}

# The bulk-store probe of generated/groupnorm.py (no sanitizer; Hopper only): the one-pass GroupNorm forward
# writes y only with bulk (TMA) stores, which initcheck does not register; the probe shows every value of a
# NaN-filled y overwritten (kgen.bench.reliability: bulk_stores_explained). It builds its own extension, so it
# starts first.
bulk_probe() {
  local log="$LOGDIR/sanitize_bulk_stores.bulk-store-probe.log" start=$(date +%s%N)
  local limit=$SANITIZE_TIMEOUT
  [ -n "$SANITIZE_DEADLINE" ] && limit=$(( SANITIZE_DEADLINE - $(date +%s) < limit ? SANITIZE_DEADLINE - $(date +%s) : limit ))
  [ "$limit" -lt 20 ] && return
  timeout -k 10 "$limit" python3 benchmarks/sanitize_bulk_stores.py one-pass > "$log" 2>&1
  probe_log benchmarks/sanitize_bulk_stores.py bulk-store-probe "$start" $?
}
probe_pid=""
if [ -z "${SANITIZE_NO_PROBES:-}" ] && has generated/groupnorm.py; then bulk_probe & probe_pid=$!; fi

# The queue: the probes, then every target's tools, tool by tool. Probes (kgen.bench.reliability says how each
# is read): a family's initcheck-library-probe, initcheck-reference-probe and bulk-store-probe (sanitize.py --probe); PyTorch's own reduction
# over cuDNN's channels-last conv output (sanitize_fast_mode.py initcheck, "initcheck-probe-pytorch") where a target
# reads one (the fast golden file, a family with the library-writes probe); the fast golden file's own kernels on
# PyTorch-written inputs ("initcheck-probe-kernels").
QUEUE=$LOGDIR/queue.txt
: > "$QUEUE"
if [ -z "${SANITIZE_NO_PROBES:-}" ]; then
  family_probes=""
  [ ${#FAMILIES[@]} -gt 0 ] && family_probes=$(python3 benchmarks/reliability_families.py probes "${FAMILIES[@]}")
  if has generated/convt_gelu_groupnorm_fast.py || [[ $family_probes == *library-writes* ]]; then
    echo "benchmarks/sanitize_fast_mode.py initcheck-probe-pytorch" >> "$QUEUE"
  fi
  has generated/convt_gelu_groupnorm_fast.py && echo "benchmarks/sanitize_fast_mode.py initcheck-probe-kernels" >> "$QUEUE"
  printf '%s\n' "$family_probes" | while read -r target probe; do
    case $probe in
      library-writes) echo "$target initcheck-library-probe" ;;
      reference) echo "$target initcheck-reference-probe" ;;
      bulk-store) echo "$target bulk-store-probe" ;;
    esac
  done >> "$QUEUE"
fi
for t in $TOOLS; do for target in "${TARGETS[@]}"; do printf '%s %s\n' "$target" "$t"; done; done >> "$QUEUE"
echo "== $(echo $TOOLS | wc -w) tools x ${#TARGETS[@]} targets (+ probes), $JOBS at a time, timeout ${SANITIZE_TIMEOUT} s each"
xargs -P "$JOBS" -L 1 bash -c 'run_one "$0" "$1" "'"$LOGDIR"'"' < "$QUEUE"

[ -n "$probe_pid" ] && wait "$probe_pid"

# runs.tsv in a stable order (target, then tool order) for the summary
python3 - "$LOGDIR" $TOOLS <<'EOF'
import sys
from pathlib import Path
logdir, tools = Path(sys.argv[1]), sys.argv[2:]
table = logdir / "runs.tsv"
rows = [r.split("\t") for r in table.read_text().splitlines() if r] if table.exists() else []
rows.sort(key=lambda r: (r[0], tools.index(r[1]) if r[1] in tools else 99, r[1]))
table.write_text("".join("\t".join(r) + "\n" for r in rows))
EOF
echo "== summary ($LOGDIR/summary.txt)"
python3 benchmarks/sanitize_summary.py "$LOGDIR"
