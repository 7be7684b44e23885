#!/usr/bin/env bash
# Kernel-parameter sweep for one spec (a first step toward `kgen tune`): emit each variant, build them
# all in parallel, then profile each one's kernels in turn. Logs under $OUT.
#   bash benchmarks/sweep_variants.sh groupnorm
# Variants: block size 128/256/512 via emit, and two source-level A/B changes on the 256 variant:
# 4x larger chunks per block (kTargetChunk) and 8 loads in flight per thread (kUnroll).
set -u
spec=$1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
OUT=${OUT:-/tmp/kgen-out}; mkdir -p "$OUT" /tmp/sweep
for b in 128 256 512; do python3 -m kgen.cli emit "$spec" --block-size $b -o /tmp/sweep/block$b.py; done
sed 's/kTargetChunk = int64_t(kBlock) \* 4 \* kUnroll \* 4;/kTargetChunk = int64_t(kBlock) * 4 * kUnroll * 16;/' \
  /tmp/sweep/block256.py > /tmp/sweep/chunk4x.py
sed 's/constexpr int kUnroll = 4;/constexpr int kUnroll = 8;/' /tmp/sweep/block256.py > /tmp/sweep/unroll8.py
grep -c "kUnroll \* 16" /tmp/sweep/chunk4x.py; grep -c "kUnroll = 8" /tmp/sweep/unroll8.py
for f in /tmp/sweep/*.py; do
  python3 -c "import importlib.util as u,sys; s=u.spec_from_file_location('m',sys.argv[1]); s.loader.exec_module(u.module_from_spec(s))" "$f" &
done
wait
for f in /tmp/sweep/*.py; do
  name=$(basename "$f" .py)
  echo "== $name"
  python3 benchmarks/profile_kernels.py "$f" --repeats 5 2>&1 | grep -v -i warn | tee "$OUT/sweep_${spec}_$name.log" | grep -E "kgen::|sum"
done
