"""How PyTorch's CUDA group_norm rounds at half precision: native_group_norm's mean/rstd dtype, and its output
against emulations (statistics exact or rounded to the dtype; affine as a = rstd*gamma, b = beta - a*mean in float)."""
import torch, torch.nn.functional as F
torch.manual_seed(0)
def emulate(x, G, w, b, eps, round_stats, fused=True):
    N, C = x.shape[:2]
    xf = x.double().reshape(N, G, -1)
    mean = xf.mean(-1); var = xf.var(-1, unbiased=False)
    mean = mean.float(); rstd = torch.rsqrt(var.float() + eps)
    if round_stats:
        mean = mean.to(x.dtype).float(); rstd = rstd.to(x.dtype).float()
    D = C // G
    m = mean.repeat_interleave(D, 1); r = rstd.repeat_interleave(D, 1)
    shape = (N, C) + (1,) * (x.dim() - 2)
    if w is None:
        y = (x.float() - m.reshape(shape)) * r.reshape(shape)
    else:
        a = r * w.float()[None]; bb = -a * m + b.float()[None]
        y = a.reshape(shape) * x.float() + bb.reshape(shape)
    return y.to(x.dtype)
for dt in (torch.bfloat16, torch.float16):
    for shape, G, affine in [((8, 64, 32, 32), 8, True), ((4, 96, 17, 13), 3, True), ((2, 32, 4096), 32, True),
                              ((8, 64, 32, 32), 8, False), ((3, 16, 5, 6, 7), 4, True)]:
        x = (torch.randn(shape, device="cuda") * 2 + 0.5).to(dt)
        C = shape[1]
        w = (torch.randn(C, device="cuda") + 1).to(dt) if affine else None
        b = torch.randn(C, device="cuda").to(dt) if affine else None
        y = F.group_norm(x, G, w, b, 1e-5)
        _, mean, rstd = torch.ops.aten.native_group_norm(x, w, b, shape[0], C, x[0, 0].numel(), G, 1e-5)
        res = []
        for rs in (False, True):
            e = emulate(x, G, w, b, 1e-5, rs)
            res.append(f"stats {'rounded' if rs else 'exact'}: equal {(e == y).float().mean().item():.4f} max {(e.float() - y.float()).abs().max().item():.4g}")
        print(dt, shape, G, "affine" if affine else "plain", "mean/rstd", mean.dtype, rstd.dtype, " | ".join(res))
# mixed: half x, float32 parameters
x = torch.randn(4, 64, 16, 16, device="cuda").to(torch.bfloat16); w = torch.randn(64, device="cuda"); b = torch.randn(64, device="cuda")
y = F.group_norm(x, 8, w, b, 1e-5)
_, mean, rstd = torch.ops.aten.native_group_norm(x, w, b, 4, 64, 256, 8, 1e-5)
print("mixed bf16 x / float32 params: out", y.dtype, "mean", mean.dtype)
