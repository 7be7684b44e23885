export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py 2>&1 | tail -3 > $OUT/pytest_onepass.log &
timeout 200 python3 tests/gpu/test_groupnorm_onepass.py --bench 2>&1 | grep -v Warn > $OUT/bench_onepass.log
wait; cat $OUT/pytest_onepass.log $OUT/bench_onepass.log
