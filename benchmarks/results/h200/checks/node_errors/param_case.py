"""test_conv_gn_lse's bad-region cases, one a call, each printing before and after: where a segfault falls."""
import sys
import torch
sys.path.insert(0, ".")
from tests.solution_loader import load_solution
import tempfile, pathlib
sol = load_solution(pathlib.Path(tempfile.mkdtemp()), "conv-gn-tanh-hardswish-res-lse")
p = torch.rand(64, device="cuda")
base = dict(x=torch.rand(2, 64, 8, 8, device="cuda"), weight=p, bias=p, groups=16, eps=1e-5, window=[], params=[p])
cases = {"parameter": {**base, "params": [p[:8]]}, "parameters": {**base, "params": []},
         "groups": {**base, "groups": 12}}
for name in sys.argv[1:]:
    print("case", name, flush=True)
    try:
        sol._ext.region0(*cases[name].values())
    except RuntimeError as e:
        print("raised:", str(e).splitlines()[0], flush=True)
