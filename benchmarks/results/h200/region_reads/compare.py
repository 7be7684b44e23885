"""Old vs new emitted files of one reference, in one process: outputs and every gradient bitwise equal, then
forward and forward+backward wall time (CUDA events), old / new / eager interleaved round by round."""
import json, statistics, sys, importlib.util
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m

def main(ref_path, old_path, new_path, out_json):
    ref = load(ref_path, "ref_mod"); old = load(old_path, "old_mod"); new = load(new_path, "new_mod")
    torch.manual_seed(0)
    eager = ref.Model(*ref.get_init_inputs()).cuda()
    models = {"eager": eager}
    for k, mod in (("old", old), ("new", new)):
        m = mod.ModelNew(*ref.get_init_inputs()).cuda(); m.load_state_dict(eager.state_dict()); models[k] = m
    torch.manual_seed(1)
    inputs = [t.cuda() if torch.is_tensor(t) else t for t in ref.get_inputs()]
    res = {"ref": ref_path}
    outs = {}
    for k in ("old", "new"):
        m = models[k]; m.zero_grad(set_to_none=True)
        xs = [t.detach().clone().requires_grad_(t.is_floating_point()) if torch.is_tensor(t) else t for t in inputs]
        y = m(*xs); g = torch.randn_like(y, generator=torch.Generator("cuda").manual_seed(2))
        y.backward(g)
        outs[k] = [y.detach()] + [t.grad for t in xs if torch.is_tensor(t) and t.grad is not None] + \
                  [p.grad for p in m.parameters() if p.grad is not None]
    res["differ"] = [i for i, (a, b) in enumerate(zip(outs["old"], outs["new"])) if not torch.equal(a, b)]
    res["max_abs"] = [float((outs["old"][i] - outs["new"][i]).abs().max()) for i in res["differ"]]
    res["bitwise_equal"] = all(torch.equal(a, b) for a, b in zip(outs["old"], outs["new"])) and len(outs["old"]) == len(outs["new"])
    res["tensors_compared"] = len(outs["old"])
    def timed(fn, calls):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn(); torch.cuda.synchronize(); s.record()
        for _ in range(calls): fn()
        e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / calls
    xs_g = [t.detach().clone().requires_grad_(t.is_floating_point()) if torch.is_tensor(t) else t for t in inputs]
    def fwd(m):
        def f():
            with torch.no_grad(): m(*inputs)
        return f
    def fwdbwd(m):
        def f():
            y = m(*xs_g); y.backward(torch.ones_like(y))
        return f
    for mode, make in (("forward", fwd), ("forward_backward", fwdbwd)):
        for k in models: timed(make(models[k]), 3)
        t0 = timed(make(models["eager"]), 3)
        calls = max(5, min(200, int(100 / max(t0, 1e-3))))
        rounds = {k: [] for k in models}
        for _ in range(7):
            for k in models: rounds[k].append(timed(make(models[k]), calls))
        res[mode] = {k: round(statistics.median(v), 4) for k, v in rounds.items()}
    print(json.dumps(res))
    json.dump(res, open(out_json, "w"))

if __name__ == "__main__":
    main(*sys.argv[1:])
