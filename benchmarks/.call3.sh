export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=$PWD/.build/ext
# build the three generated files in parallel first (16 cores)
for f in groupnorm convt_gelu_groupnorm convt_gelu_groupnorm_fast; do
  python3 -c "
import importlib.util
s=importlib.util.spec_from_file_location('m','generated/$f.py'); m=importlib.util.module_from_spec(s); s.loader.exec_module(m)" > $OUT/build_$f.log 2>&1 &
done
timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_groupnorm_onepass.py 2>&1 | tail -15 > $OUT/pytest_onepass.log
wait
cat $OUT/pytest_onepass.log; tail -3 $OUT/build_*.log
timeout 150 python3 tests/gpu/test_groupnorm_onepass.py --bench 2>&1 | grep -v Warn > $OUT/bench_onepass.log; cat $OUT/bench_onepass.log
timeout 150 python3 -m kgen.cli validate generated/groupnorm.py --bench --json $OUT/validate_groupnorm.json > $OUT/validate_groupnorm.log 2>&1; tail -30 $OUT/validate_groupnorm.log
