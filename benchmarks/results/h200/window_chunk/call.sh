#!/usr/bin/env bash
# The window forward's chunk: all of a window's loads in flight (kWindowChunk 16) against 4 at a time (old) and 8.
set -u; cd "$(dirname "$0")/.."; R=$OUT/r; mkdir -p $R; trap 'tar czf $OUT/x.tar.gz -C $R .' EXIT
find .build -path "*ext*" -name lock -delete 2>/dev/null
pip install --no-build-isolation --no-deps -e . -q > /dev/null 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .kb/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD TORCH_EXTENSIONS_DIR=$PWD/.build/ext PYTHONUNBUFFERED=1
W=.devrun/w
OLD='old:return window_elems <= 4 ? 4 : kWindowChunk;=>return 4;'
C8='c8:constexpr int kWindowChunk = 16;=>constexpr int kWindowChunk = 8;'
(timeout 420 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gn_region_twopass.py -k "window" > $R/pytest_twopass_window.log 2>&1; echo "pytest exit $?" >> $R/pytest_twopass_window.log) &
P=""
for f in odd_large odd_mid l2_85; do
  timeout 400 python3 benchmarks/kernel_variants.py $W/$f.py --kernel window_forward --variant "$OLD" --variant "$C8" --build-only > $R/build_$f.log 2>&1 &
  P="$P $!"
done
wait $P
tail -2 $R/build_*.log
for f in odd_large odd_mid l2_85; do
  timeout 90 python3 benchmarks/kernel_variants.py $W/$f.py --kernel window_forward --variant "$OLD" --variant "$C8" --rounds 3 --json $R/variants_$f.json > $R/variants_$f.log 2>&1
  echo "== $f fp32"; tail -8 $R/variants_$f.log
done
for f in odd_large l2_85; do
  timeout 90 python3 benchmarks/kernel_variants.py $W/$f.py --kernel window_forward --variant "$OLD" --variant "$C8" --rounds 3 --dtype bf16 --json $R/variants_${f}_bf16.json > $R/variants_${f}_bf16.log 2>&1
  echo "== $f bf16"; tail -8 $R/variants_${f}_bf16.log
done
wait
tail -3 $R/pytest_twopass_window.log
for f in odd_large l2_85; do
  PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m kgen.cli validate $W/$f.py --trials 1 > $R/validate_$f.log 2>&1; echo "$f fp32 exit $?"
  PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m kgen.cli validate $W/$f.py --trials 1 --precision bf16 > $R/validate_${f}_bf16.log 2>&1; echo "$f bf16 exit $?"
done
