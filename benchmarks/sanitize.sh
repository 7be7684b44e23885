#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on every emitted solution at a small
# shape, forward and backward (benchmarks/sanitize.py), from the repository root:
#
#   bash benchmarks/sanitize.sh [LOGDIR] [FILE...]          (default: .build/sanitize, generated/*.py)
#
# 1. builds every file's extension once, without the sanitizer, in parallel (benchmarks/prebuild.py),
#    into TORCH_EXTENSIONS_DIR (default $PWD/.build/ext), so the sanitized runs only load it;
# 2. runs each file x tool, SANITIZE_JOBS (default 6) at a time, each under `timeout` (SANITIZE_TIMEOUT,
#    default 300 s): LOGDIR/<file>.<tool>.log holds the sanitizer's report and the script's line;
# 3. LOGDIR/runs.tsv (file, tool, exit, seconds) and LOGDIR/summary.txt (benchmarks/sanitize_summary.py:
#    the ERROR SUMMARY count and which kernels the reports name, ours or the library's).
# Exit status 0 when every run exits 0 with 0 errors. Exit 9 of a run: the sanitizer found errors;
# 124: the run timed out; other: the script failed.
set -u
cd "$(dirname "$0")/.."
LOGDIR=${1:-.build/sanitize}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then FILES=("$@"); else FILES=(generated/*.py); fi
TOOLS=${SANITIZE_TOOLS:-"memcheck racecheck initcheck synccheck"}
JOBS=${SANITIZE_JOBS:-6}
export SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-300}
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

echo "== prebuild (no sanitizer)"
python3 benchmarks/prebuild.py -j 8 "${FILES[@]}" 2>&1 | tee "$LOGDIR/prebuild.log" | grep -v "^prebuild .*: ok"

run_one() {   # FILE TOOL LOGDIR
  local file=$1 tool=$2 logdir=$3
  local log="$logdir/$(basename "$file" .py).$tool.log"
  local extra=() envs=()
  case $tool in
    memcheck)  extra=(--leak-check no); envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
    initcheck) envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
    racecheck) extra=(--racecheck-report all) ;;
  esac
  local start=$(date +%s%N)
  env ${envs[@]+"${envs[@]}"} timeout -k 10 "$SANITIZE_TIMEOUT" "$CS" --tool "$tool" --target-processes application-only \
    --error-exitcode 9 --show-backtrace device --print-limit 200 ${extra[@]+"${extra[@]}"} \
    python3 benchmarks/sanitize.py "$file" > "$log" 2>&1
  local code=$?
  local seconds=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  printf '%s\t%s\t%s\t%.1f\n' "$file" "$tool" "$code" "$seconds" >> "$logdir/runs.tsv"
  printf '%-40s %-9s exit %3s  %s  %.0f s\n' "$file" "$tool" "$code" \
    "$(grep -o 'ERROR SUMMARY: [0-9]* error' "$log" | tail -1)" "$seconds"
}
export -f run_one

# The bulk-store probe (no sanitizer; Hopper only): the one-pass GroupNorm forward writes y only with bulk (TMA)
# stores, which initcheck does not register; the probe shows every value of a NaN-filled y overwritten
# (benchmarks/reliability.py: bulk_stores_explained). It builds its own extension, so it starts first.
bulk_probe() {
  local log="$LOGDIR/diagnose_initcheck_bulk_store.bulk-store-probe.log" start=$(date +%s%N)
  timeout -k 10 "$SANITIZE_TIMEOUT" python3 benchmarks/diagnose_initcheck_bulk_store.py one-pass > "$log" 2>&1
  local code=$?
  printf '%s\t%s\t%s\t%.1f\n' benchmarks/diagnose_initcheck_bulk_store.py bulk-store-probe "$code" \
    "$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" >> "$LOGDIR/runs.tsv"
}
probe_pid=""
if [ -z "${SANITIZE_NO_PROBES:-}" ]; then bulk_probe & probe_pid=$!; fi

echo "== $(echo $TOOLS | wc -w) tools x ${#FILES[@]} files, $JOBS at a time, timeout ${SANITIZE_TIMEOUT} s each"
for f in "${FILES[@]}"; do for t in $TOOLS; do printf '%s %s\n' "$f" "$t"; done; done \
  | xargs -P "$JOBS" -L 1 bash -c 'run_one "$0" "$1" "'"$LOGDIR"'"'

# Probes (benchmarks/diagnose_fast_mode.py) telling the library's initcheck reports from ours in --conv fast:
# a PyTorch-only reduction over cuDNN's channels-last conv output, and the fast file's own kernels on
# PyTorch-written inputs. Logged as tools "initcheck-probe-pytorch" and "initcheck-probe-kernels".
if [ -z "${SANITIZE_NO_PROBES:-}" ]; then
  for probe in initcheck kernels; do
    tool=initcheck-probe-$([ $probe = initcheck ] && echo pytorch || echo kernels)
    log="$LOGDIR/diagnose_fast_mode.$tool.log"
    start=$(date +%s%N)
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout -k 10 "$SANITIZE_TIMEOUT" "$CS" --tool initcheck \
      --target-processes application-only --error-exitcode 9 --print-limit 50 \
      python3 benchmarks/diagnose_fast_mode.py $probe > "$log" 2>&1
    code=$?
    printf '%s\t%s\t%s\t%.1f\n' benchmarks/diagnose_fast_mode.py "$tool" "$code" \
      "$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" >> "$LOGDIR/runs.tsv"
  done
fi

[ -n "$probe_pid" ] && wait "$probe_pid"

# runs.tsv in a stable order (file, then tool order) for the summary
python3 - "$LOGDIR" $TOOLS <<'EOF'
import sys
from pathlib import Path
logdir, tools = Path(sys.argv[1]), sys.argv[2:]
rows = [r.split("\t") for r in (logdir / "runs.tsv").read_text().splitlines() if r]
rows.sort(key=lambda r: (r[0], tools.index(r[1]) if r[1] in tools else 99))
(logdir / "runs.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
EOF
echo "== summary ($LOGDIR/summary.txt)"
python3 benchmarks/sanitize_summary.py "$LOGDIR"
