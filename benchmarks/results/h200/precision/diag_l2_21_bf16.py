"""L2-21 at bf16 on the GPU: the reference, a PyTorch emulation of its rounding points, and kgen's file."""
import importlib.util, sys, torch, torch.nn.functional as F
def load(path, name):
    s = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(s); s.loader.exec_module(m); return m
ref = load(".kb/problems/level2_21_Conv2d_Add_Scale_Sigmoid_GroupNorm.py", "ref")
sol = load(sys.argv[1], "sol")
torch.manual_seed(0)
init = ref.get_init_inputs()
m = ref.Model(*init).cuda().to(torch.bfloat16)
torch.manual_seed(0)
n = sol.ModelNew(*init).cuda().to(torch.bfloat16)
n.load_state_dict(m.state_dict())
x = torch.rand(8, 8, 256, 256, device="cuda").to(torch.bfloat16)
bf = torch.bfloat16
r = lambda t: t.to(bf).float()
with torch.no_grad():
    c = m.conv(x)
    z = torch.sigmoid((c + m.bias) * m.scale)
    out_ref = m.group_norm(z)
    z2 = r(torch.sigmoid(r(r(c.float() + m.bias.float()) * m.scale.float())))
    print("z eager == z emulated:", (z.float() == z2).float().mean().item())
    y2 = F.group_norm(z2, m.group_norm.num_groups, m.group_norm.weight.float(), m.group_norm.bias.float(), m.group_norm.eps)
    gn_ref_of_z = m.group_norm(z)
    print("GN(z) bf16 vs float GN rounded: frac equal", (gn_ref_of_z.float() == r(y2)).float().mean().item(),
          "max", (gn_ref_of_z.float() - r(y2)).abs().max().item())
    out_new = n(x)
    d = (out_new.float() - out_ref.float()).abs()
    print("kgen vs ref: frac equal", (d == 0).float().mean().item(), "max", d.max().item(), "avg", d.mean().item(),
          "allclose 1e-2", torch.allclose(out_new.float(), out_ref.float(), atol=1e-2, rtol=1e-2))
    d2 = (out_new.float() - r(y2)).abs()
    print("kgen vs emulation: frac equal", (d2 == 0).float().mean().item(), "max", d2.max().item())
    # GN of the stored z by PyTorch at bf16 vs kgen: does PyTorch's bf16 GroupNorm round its output once?
    zz = z.float().view(8, 8, -1); mu = zz.mean(-1, keepdim=True); var = zz.var(-1, unbiased=False, keepdim=True)
    y64 = ((z.double().view(8, 8, -1) - zz.double().mean(-1, keepdim=True)) / torch.sqrt(zz.double().var(-1, unbiased=False, keepdim=True) + 1e-5)).view_as(z)
    print("ref GN vs float64 GN rounded: frac equal", (gn_ref_of_z.float() == r(y64.float())).float().mean().item())
    print("kgen vs float64 GN rounded: frac equal", (out_new.float() == r(y64.float())).float().mean().item())
