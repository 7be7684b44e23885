"""Do the solution's own kernels do the work? One forward (under no_grad) and one backward are profiled
with torch.profiler (CUDA activity) after a warm-up, and every kernel launched is attributed to the
solution or to PyTorch (PyTorch itself, cuDNN, cuBLAS, runtime copies and memsets).

How a kernel is attributed to the solution -- by where it is compiled, not by what it is called:
  1. The solution's libraries: the shared objects that importing the solution mapped into the process
     (/proc/self/maps before and after the import), outside torch's folder, site-/dist-packages and the
     system's library folders. For load_inline this is the extension it built.
  2. Their symbol tables (.symtab and .dynsym, read with the small ELF reader below): the defined
     functions, demangled (torch._C._demangle). nvcc gives every __global__ function a host-side function
     of the same (mangled) name, which is what is found there.
  3. A kernel is the solution's when its qualified name -- the profiler's demangled name without return
     type, template arguments and parameters, e.g. `kgen::normalize_kernel` or `group_norm_kernel` -- is
     the qualified name of a function defined in one of those libraries.
  4. Also the solution's when the last component of its qualified name is the name of a `__global__`
     function in the solution's source text and it is not in a namespace of PyTorch or its libraries
     (at::, c10::, cub::, ...): this covers builds without a symbol table (stripped, hidden visibility)
     and machines without /proc. The method used is reported. A PyTorch template (e.g. a CUB kernel) instantiated inside
  the solution's extension counts as the solution's -- and so would PyTorch's own instance of the same
  template, since template arguments are not compared (CUPTI and the C++ demangler print them differently).

Verdict: FAIL when the forward launches none of the solution's kernels (it runs on PyTorch alone), PASS
when it launches some; backward: PASS when some are the solution's, INFO when backward is PyTorch's alone.
SKIP where it cannot be measured: no CUDA device, the profiler unavailable, or the profiler seeing no
kernel at all even in the reference's forward.
"""
from __future__ import annotations

import os
import re
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kgen.validate.checks import Check, failed, note, passed, skipped
from kgen.validate.context import Context, progress, tensors_of
from kgen.validate.stages.calls import upstream_for

TOP = 12                 # kernels listed per phase in the report (the JSON has all)
LIBRARY_NAMESPACES = ("at::", "c10::", "cub::", "thrust::", "cutlass::", "cudnn::", "cublas", "cutlass",
                      "flash::", "pytorch_flash::", "std::", "__cudart", "(anonymous namespace)::at::")
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/", "/etc/", "/opt/conda/lib/", "/opt/nvidia/")


# ---- which shared libraries are the solution's ---------------------------------------------------------

def loaded_libraries() -> set[str]:
    """Paths of the shared objects mapped into this process (empty where /proc is not available)."""
    try:
        text = Path("/proc/self/maps").read_text()
    except OSError:
        return set()
    paths = set()
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in os.path.basename(parts[5]):
            paths.add(parts[5].strip())
    return paths


def _excluded(path: str) -> bool:
    torch_dir = str(Path(torch.__file__).resolve().parent) + os.sep
    parts = Path(path).parts
    return (path.startswith(torch_dir) or "site-packages" in parts or "dist-packages" in parts
            or path.startswith(SYSTEM_DIRS) or path.startswith(sys.base_prefix + os.sep))


def solution_libraries(before: set[str], after: set[str]) -> list[str]:
    """The shared objects the solution's import brought in, PyTorch's and the system's left out."""
    return sorted(p for p in after - before if not _excluded(p) and os.path.isfile(p))


# ---- a minimal ELF reader: the names of the defined functions ------------------------------------------

def elf_function_names(path: str) -> list[str]:
    """Names (mangled) of the functions defined in an ELF64 little-endian shared object, from .symtab and
    .dynsym; [] for anything else or anything unreadable."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    names = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind not in (2, 11) or entsize != 24 or link >= len(sections):   # SHT_SYMTAB, SHT_DYNSYM
            continue
        str_offset, str_size = sections[link][4], sections[link][5]
        for at in range(offset, offset + size - entsize + 1, entsize):
            st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", data, at)
            if st_info & 0xF != 2 or st_shndx == 0 or st_name >= str_size:   # STT_FUNC, defined
                continue
            start = str_offset + st_name
            names.append(data[start:data.index(b"\0", start)].decode("ascii", "replace"))
    return names


def demangle(name: str) -> str:
    fn = getattr(torch._C, "_demangle", None)
    return fn(name) if fn is not None and name.startswith("_Z") else name


_ANON = "(anonymous namespace)"


def qualified_name(demangled: str) -> str:
    """`void kgen::normalize_kernel<kgen::GeluErf, 8>(float const*, ...)` -> `kgen::normalize_kernel`;
    `group_norm_kernel(float const*, ...)` -> `group_norm_kernel`; extern "C" names stay as they are."""
    text = demangled.strip().replace(_ANON, "\x00")
    if text.startswith(("Memcpy", "Memset")):   # runtime copies: "Memcpy DtoD (Device -> Device)"
        return text.split(" (")[0]
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):          # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = text[:cut].rstrip()
    while head.endswith(">"):              # drop the trailing template arguments
        depth = 0
        for i in range(len(head) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(head[i], 0)
            if depth == 0:
                head = head[:i].rstrip()
                break
        else:
            break
    depth, start = 0, 0                    # drop the return type: the last space outside brackets
    for i, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1
    return head[start:].replace("\x00", _ANON)


def source_kernel_names(text: str) -> set[str]:
    """The names of the __global__ functions declared in a source text (return type, __launch_bounds__
    and other qualifiers between `__global__` and the name are skipped)."""
    names = set()
    for match in re.finditer(r"__global__\b", text):
        tail = text[match.end():match.end() + 400]
        tail = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", tail)
        found = re.match(r"[\s\w:*&<>,]*?(\w+)\s*\(", tail)
        if found and found.group(1) not in ("void", "__launch_bounds__"):
            names.add(found.group(1))
    return names


@dataclass
class Attribution:
    """Decides whose a kernel is (see the module docstring)."""

    symbols: set = field(default_factory=set)      # qualified names defined in the solution's libraries
    source_names: set = field(default_factory=set)  # fallback: __global__ names in the solution's source
    libraries: list = field(default_factory=list)

    @classmethod
    def of(cls, libraries: list[str], source_text: str) -> "Attribution":
        symbols = {qualified_name(demangle(n)) for path in libraries for n in elf_function_names(path)}
        return cls(symbols, source_kernel_names(source_text), list(libraries))

    @property
    def method(self) -> str:
        if self.symbols:
            return (f"functions defined in the solution's shared object(s) "
                    f"({', '.join(os.path.basename(p) for p in self.libraries)}), and the names of the "
                    f"__global__ functions in its source")
        return ("names of the __global__ functions in the solution's source (no symbol table of a solution "
                "library found)")

    def owner(self, kernel: str) -> str:
        name = qualified_name(kernel)
        if name in self.symbols:
            return "solution"
        short = name.rsplit("::", 1)[-1]
        if short in self.source_names and not name.startswith(LIBRARY_NAMESPACES):
            return "solution"
        return "torch"


# ---- profiling ------------------------------------------------------------------------------------------

class ProfilerUnavailable(Exception):
    pass


def profiled_kernels(fn, sync) -> list[tuple[str, float]]:
    """(kernel name, µs) of every GPU activity (kernels, copies, memsets) while fn() runs. An error of the
    profiler itself is ProfilerUnavailable; an error of fn() propagates."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CUDA])
    try:
        prof.start()
    except Exception as error:
        raise ProfilerUnavailable(f"{type(error).__name__}: {error}") from error
    fn()
    sync()
    try:
        prof.stop()
        events = [(e.name, e.time_range.elapsed_us()) for e in prof.events()
                  if e.device_type == torch.autograd.DeviceType.CUDA]
    except Exception as error:
        raise ProfilerUnavailable(f"{type(error).__name__}: {error}") from error
    return events


def summarize(events: list[tuple[str, float]], attribution: Attribution) -> dict:
    """Per kernel (by qualified name): owner, launches, µs, share of the phase's GPU time."""
    rows: "OrderedDict[str, dict]" = OrderedDict()
    for name, us in events:
        key = qualified_name(name)
        row = rows.setdefault(key, {"name": key, "owner": attribution.owner(name), "launches": 0, "us": 0.0,
                                    "example": name[:200]})
        row["launches"] += 1
        row["us"] += us
    total = sum(r["us"] for r in rows.values())
    for row in rows.values():
        row["share"] = row["us"] / total if total > 0 else 0.0
    kernels = sorted(rows.values(), key=lambda r: -r["us"])
    mine = [r for r in kernels if r["owner"] == "solution"]
    return {"kernels": kernels, "total_us": total, "launches": sum(r["launches"] for r in kernels),
            "solution_us": sum(r["us"] for r in mine), "solution_launches": sum(r["launches"] for r in mine),
            "solution_kernels": [r["name"] for r in mine],
            "solution_share": (sum(r["us"] for r in mine) / total) if total > 0 else 0.0}


def listing(phase: dict, top: int = 4) -> str:
    rows = phase["kernels"][:top]
    text = ", ".join(f"{r['name']} ({r['owner']}, {r['launches']}x, {r['share']:.0%})" for r in rows)
    more = len(phase["kernels"]) - len(rows)
    return text + (f", +{more} more" if more > 0 else "")


def judge_kernels(forward: dict, backward: dict | None, backward_why: str = "") -> list[Check]:
    """The kernel checks from the summaries of one profiled forward and backward (pure)."""
    checks = []
    if forward["launches"] == 0:
        checks.append(failed("kernels: forward", "the forward launched no GPU work at all", forward=forward))
    elif forward["solution_launches"] == 0:
        checks.append(failed("kernels: forward", "the forward launches none of the solution's kernels (it runs "
                                                 "on PyTorch alone): " + listing(forward), forward=forward))
    else:
        checks.append(passed("kernels: forward", f"solution's kernels {forward['solution_share']:.0%} of "
                                                 f"{forward['total_us'] / 1e3:.3f} ms GPU time "
                                                 f"({forward['solution_launches']} of {forward['launches']} "
                                                 f"launches): " + listing(forward)))
    if backward is None:
        checks.append(skipped("kernels: backward", backward_why or "no backward"))
    elif backward["solution_launches"] == 0:
        checks.append(note("kernels: backward", "backward is PyTorch's alone: " + listing(backward)))
    else:
        checks.append(passed("kernels: backward", f"solution's kernels {backward['solution_share']:.0%} of "
                                                  f"{backward['total_us'] / 1e3:.3f} ms GPU time "
                                                  f"({backward['solution_launches']} of {backward['launches']} "
                                                  f"launches): " + listing(backward)))
    return checks


def stage_kernels(ctx: Context) -> None:
    if ctx.device.type != "cuda":
        ctx.add(skipped("kernels", "kernel attribution needs a CUDA device"))
        return
    attribution = Attribution.of(ctx.extensions, Path(ctx.config["solution"]).read_text(errors="replace"))
    try:
        phases = profile_phases(ctx, attribution)
    except ProfilerUnavailable as error:
        ctx.add(skipped("kernels", f"torch.profiler unavailable: {error}"))
        return
    ctx.results.put("kernels", {"method": attribution.method, "libraries": attribution.libraries, **phases})
    if phases["reference_forward"]["launches"] == 0:
        ctx.add(skipped("kernels", "the profiler saw no kernel even in the reference's forward (CUPTI unavailable?)"))
        return
    for check in judge_kernels(phases["forward"], phases["backward"], phases["backward_why"]):
        check.data.setdefault("method", attribution.method)
        ctx.add(check)


def profile_phases(ctx: Context, attribution: Attribution) -> dict:
    """Warm up, then profile the reference's forward, the solution's forward (no_grad) and its backward
    (the forward that builds the graph runs outside the profiler); the forwards under --autocast, the
    inputs and models at --precision's dtype, as every other stage runs them."""
    inputs = ctx.inputs("rand", ctx.seed + 5)
    upstream = upstream_for(ctx, ctx.seed + 6)
    backward = ctx.config.get("backward", True)

    def forward(model):
        with torch.no_grad(), ctx.autocasting():
            model(*inputs)

    def graph(model):
        """Outputs that require grad, from a forward with autograd on."""
        leaves = [x.requires_grad_(True) for x in tensors_of(inputs) if x.is_floating_point()]
        outs = [o for o in tensors_of(ctx.run(model, inputs)) if o.requires_grad]
        for x in leaves:
            x.requires_grad_(False)
        return outs

    progress("kernels: warm-up")
    forward(ctx.ref_model)
    forward(ctx.new_model)
    outs = graph(ctx.new_model) if backward else []
    if outs:
        torch.autograd.backward(outs, upstream(outs))
    del outs
    ctx.new_model.zero_grad(set_to_none=True)
    ctx.sync()
    progress("kernels: profiling one forward and one backward")
    reference = summarize(profiled_kernels(lambda: forward(ctx.ref_model), ctx.sync), attribution)
    fwd = summarize(profiled_kernels(lambda: forward(ctx.new_model), ctx.sync), attribution)
    bwd, why = None, "--no-backward" if not backward else ""
    if backward:
        outs = graph(ctx.new_model)
        if outs:
            grads = upstream(outs)
            bwd = summarize(profiled_kernels(lambda: torch.autograd.backward(outs, grads), ctx.sync), attribution)
        else:
            why = "the solution's output does not require grad: no backward to profile"
        del outs
        ctx.new_model.zero_grad(set_to_none=True)
    return {"forward": fwd, "backward": bwd, "backward_why": why, "reference_forward": reference}
