"""The first stages: where the run happens, importing the two files (building the solution's kernels), the
init arguments and input shapes, and the parameters (same-seed construction, the state_dict round trip; at
--precision fp16|bf16 both models are moved to that dtype after construction, so keys, dtypes and values are
compared as the run uses them)."""
from __future__ import annotations

import platform
import time

import torch

from kgen.ref.tf32 import tf32_now
from kgen.validate.checks import Check, failed, note, passed
from kgen.validate.context import (Context, StageError, describe_inputs, import_file, same_value, with_shapes)
from kgen.validate.numerics import bitwise_equal
from kgen.validate.stages.kernels import loaded_libraries, solution_libraries


def stage_environment(ctx: Context) -> None:
    info = {"torch_version": torch.__version__, "cuda_version": torch.version.cuda, "python": platform.python_version(),
            "device": str(ctx.device), "gpu": None, "cudnn_allow_tf32": tf32_now("conv"),
            "matmul_allow_tf32": tf32_now("matmul"),   # PyTorch raises on the legacy flags once a file set the new
            "precision": ctx.config.get("precision") or "fp32", "autocast": ctx.config.get("autocast"),
            "channels_last": bool(ctx.config.get("channels_last"))}
    if ctx.device.type == "cuda":
        if not torch.cuda.is_available():
            raise StageError("no-cuda", "no CUDA device in the child process")
        props = torch.cuda.get_device_properties(ctx.device)
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    gpu_memory_gib=round(props.total_memory / 2**30, 1))
    ctx.results.info(**info)


def stage_import_reference(ctx: Context) -> None:
    ctx.ref_mod = import_file(ctx.config["reference"], "kgen_validate_reference")


def stage_import_solution(ctx: Context) -> None:
    before = loaded_libraries()
    started = time.monotonic()
    ctx.new_mod = import_file(ctx.config["solution"], "kgen_validate_solution")
    seconds = time.monotonic() - started
    ctx.extensions = solution_libraries(before, loaded_libraries())
    ctx.results.info(solution_libraries=ctx.extensions)
    ctx.add(passed("build + import", f"{seconds:.1f} s", seconds=seconds))


def _solution_defines(ctx: Context, name: str) -> bool:
    return callable(getattr(ctx.new_mod, name, None))


def stage_arguments(ctx: Context) -> None:
    ref_init = list(ctx.ref_mod.get_init_inputs())
    own_init = _solution_defines(ctx, "get_init_inputs")
    new_init = list(ctx.new_mod.get_init_inputs()) if own_init else None
    given = ctx.config.get("init_args")
    if given is not None:
        ctx.init = list(given)
        ctx.add(note("init args", f"{ctx.init!r} (given)", init_args=ctx.init))
    elif not own_init:
        ctx.init = ref_init
        ctx.add(note("init args", f"{ref_init!r} (reference's get_init_inputs(); the solution defines none, "
                                  f"as KernelBench allows)", init_args=ref_init, from_reference=True))
    elif not same_value(new_init, ref_init):
        ctx.init = new_init
        ctx.add(note("init args", f"solution's get_init_inputs() {new_init!r} differs from the reference's "
                                  f"{ref_init!r}: using the solution's", solution=new_init, reference=ref_init))
    else:
        ctx.init = ref_init
        ctx.add(note("init args", f"{ref_init!r} (reference's get_init_inputs())", init_args=ref_init))

    ref_specs = describe_inputs(ctx.ref_mod.get_inputs)
    shapes = ctx.config.get("input_shapes")
    ctx.specs = with_shapes(ref_specs, shapes) if shapes else ref_specs
    described = [s.describe() for s in ctx.specs]
    if shapes:
        ctx.add(note("input shapes", f"{described} (given)"))
    elif not _solution_defines(ctx, "get_inputs"):
        ctx.add(note("input shapes", f"{described} (reference's get_inputs(); the solution defines none, "
                                     f"as KernelBench allows)", from_reference=True))
    else:
        new_described = [s.describe() for s in describe_inputs(ctx.new_mod.get_inputs)]
        detail = f"{described} (reference's get_inputs())"
        if new_described != described:
            detail += f"; the solution's get_inputs() gives {new_described}"
        ctx.add(note("input shapes", detail))
    ctx.results.info(init_args=ctx.init, reference_init_args=ref_init, input_shapes=described)


def stage_parameters(ctx: Context) -> None:
    ctx.ref_model = ctx.construct(ctx.ref_mod.Model)
    ctx.new_model = ctx.construct(ctx.new_mod.ModelNew)
    ref_sd, new_sd = ctx.ref_model.state_dict(), ctx.new_model.state_dict()
    ctx.add(check_state_layout(ref_sd, new_sd))
    ctx.add(check_state_values(ref_sd, new_sd))
    probe = ctx.construct(ctx.new_mod.ModelNew, ctx.seed + 1)
    ctx.add(check_load_state_dict(probe, ref_sd))
    del probe


def check_state_layout(ref_sd: dict, new_sd: dict) -> Check:
    name = "state_dict keys and shapes"
    only_ref = [k for k in ref_sd if k not in new_sd]
    only_new = [k for k in new_sd if k not in ref_sd]
    problems = []
    if only_ref:
        problems.append(f"missing {only_ref}")
    if only_new:
        problems.append(f"unexpected {only_new}")
    for key in ref_sd:
        if key in new_sd and (ref_sd[key].shape != new_sd[key].shape or ref_sd[key].dtype != new_sd[key].dtype):
            problems.append(f"{key}: {tuple(new_sd[key].shape)} {new_sd[key].dtype} vs reference "
                            f"{tuple(ref_sd[key].shape)} {ref_sd[key].dtype}")
    if problems:
        return failed(name, "; ".join(problems), missing=only_ref, unexpected=only_new)
    order = "" if list(ref_sd) == list(new_sd) else " (different order)"
    return passed(name, f"{len(ref_sd)} entries{order}", keys=list(ref_sd))


def check_state_values(ref_sd: dict, new_sd: dict) -> Check:
    name = "state_dict values (same RNG draws)"
    common = [k for k in ref_sd if k in new_sd and ref_sd[k].shape == new_sd[k].shape
              and ref_sd[k].dtype == new_sd[k].dtype]
    differ = [k for k in common if not bitwise_equal(ref_sd[k], new_sd[k])]
    if differ:
        return failed(name, f"differ after the same torch.manual_seed: {differ}", differ=differ)
    if not common and (ref_sd or new_sd):
        return note(name, "no entry of the same name and shape in both to compare (see keys and shapes)")
    if not common:
        return passed(name, "no parameters or buffers")
    return passed(name, f"{len(common)} tensors bitwise equal")


def check_load_state_dict(model, ref_sd: dict) -> Check:
    name = "load_state_dict(Model().state_dict(), strict=True)"
    try:
        model.load_state_dict(ref_sd, strict=True)
    except Exception as error:
        return failed(name, str(error).strip().splitlines()[0] if str(error).strip() else repr(error))
    return passed(name)
