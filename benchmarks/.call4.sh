export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
for f in groupnorm convt_gelu_groupnorm convt_gelu_groupnorm_fast; do
  python3 -c "
import importlib.util
s=importlib.util.spec_from_file_location('m','generated/$f.py'); m=importlib.util.module_from_spec(s); s.loader.exec_module(m)" > $OUT/build_$f.log 2>&1 &
done
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py 2>&1 | tail -15 > $OUT/pytest_onepass.log
wait
tail -3 $OUT/pytest_onepass.log; for f in $OUT/build_*.log; do tail -n 2 $f; done; rm -f $OUT/build_*.log
timeout 100 python3 tests/gpu/test_groupnorm_onepass.py --bench 2>&1 | grep -v Warn > $OUT/bench_onepass.log; cat $OUT/bench_onepass.log
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_convt_gelu_groupnorm.py tests/gpu/test_groupnorm_nhwc.py tests/gpu/test_layout.py 2>&1 | tail -25 > $OUT/pytest_l219.log; tail -8 $OUT/pytest_l219.log
timeout 80 python3 -m kgen.cli validate generated/convt_gelu_groupnorm.py --bench --json $OUT/validate_l219.json > $OUT/validate_l219.log 2>&1; tail -5 $OUT/validate_l219.log
timeout 80 python3 -m kgen.cli validate generated/convt_gelu_groupnorm_fast.py --atol 1e-2 --rtol 1e-2 --bench --json $OUT/validate_l219_fast.json > $OUT/validate_l219_fast.log 2>&1; tail -5 $OUT/validate_l219_fast.log
