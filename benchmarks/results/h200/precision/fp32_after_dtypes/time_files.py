"""Side-by-side timing of solution files (one process, one GPU): forward and forward+backward, CUDA events,
median of N after warm-up; plus max |out - reference out| at the reference's inputs."""
import importlib.util, json, sys, statistics, torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

def timed(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)

ref_path, files = sys.argv[1], sys.argv[2:]
ref = load(ref_path, "ref_mod")
torch.manual_seed(0)
inputs = [x.cuda() if torch.is_tensor(x) else x for x in ref.get_inputs()]
res = {}
torch.manual_seed(1); rm = ref.Model(*ref.get_init_inputs()).cuda()
with torch.no_grad(): ref_out = rm(*inputs)
del rm
import os
ROUNDS = int(os.environ.get("ROUNDS", "1"))
runs = {}
for i, f in enumerate(files):
    m = load(f, f"sol{i}")
    torch.manual_seed(1); model = m.ModelNew(*m.get_init_inputs()).cuda()
    with torch.no_grad(): out = model(*inputs)
    err = (out - ref_out).abs().max().item()
    xs = [x.detach().clone().requires_grad_(True) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs]
    def fwd():
        with torch.no_grad(): model(*inputs)
    def fwdbwd():
        y = model(*xs); y.backward(torch.ones_like(y))
    runs[f] = (fwd, fwdbwd)
    res[f] = {"forward_ms": [], "forward_backward_ms": [], "max_abs_vs_reference": err}
    if os.environ.get("PROFILE"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fwd(); torch.cuda.synchronize()
        print(f, "kernels:", [(e.name[:70], round(e.device_time / 1000, 3)) for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA], flush=True)
for r in range(ROUNDS):
    for f, (fwd, fwdbwd) in runs.items():
        res[f]["forward_ms"].append(round(timed(fwd), 4))
        res[f]["forward_backward_ms"].append(round(timed(fwdbwd), 4))
for f in res:
    res[f]["forward_median"] = statistics.median(res[f]["forward_ms"])
    res[f]["forward_backward_median"] = statistics.median(res[f]["forward_backward_ms"])
    print(f, json.dumps(res[f]), flush=True)
