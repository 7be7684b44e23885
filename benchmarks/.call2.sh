export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
(timeout 250 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py tests/gpu/test_layout.py 2>&1 | tail -30) > $OUT/pytest_onepass_layout.log
tail -30 $OUT/pytest_onepass_layout.log
timeout 120 python3 tests/gpu/test_groupnorm_onepass.py --bench > $OUT/bench_onepass.log 2>&1; cat $OUT/bench_onepass.log | grep -v Warn
timeout 60 python3 tests/gpu/test_layout.py --bench > $OUT/bench_layout.log 2>&1; cat $OUT/bench_layout.log | grep -v Warn
