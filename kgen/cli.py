"""The `kgen` command: list, emit, validate, tune."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import warnings

import click

# torch warns at import when NumPy is absent; kgen never needs NumPy, so the warning is noise here.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

from kgen import __version__
from kgen.params import ParamError
from kgen.specs import DEFAULT_SPEC, REGISTRY, UnknownSpec
from kgen.specs.base import DEFAULT_AUTOGRAD


def _all_params():
    """Every parameter any spec takes, once each: `emit` offers the union, and rejects what the
    chosen spec does not take. A new spec's parameters appear here without editing this file."""
    seen = {}
    for spec in REGISTRY.values():
        for p in spec.params:
            seen.setdefault(p.name, p)
    return list(seen.values())


def _param_options(command):
    for p in reversed(_all_params()):
        kwargs = dict(default=None, help=p.help, show_default=False)
        if p.choices is not None:
            kwargs["type"] = click.Choice([str(c) for c in p.choices])
        else:
            kwargs["type"] = p.type
        command = click.option(p.flag, p.name, **kwargs)(command)
    return command


class CommandError(click.ClickException):
    """A bad argument or input found by kgen itself: `kgen: error: <message>`, exit code 2, like click's own."""

    exit_code = 2


# click 8.2+ raises this usage error for a group run with no arguments at all; older click prints the help itself.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class KgenGroup(click.Group):
    """The `kgen` group, with every error in one style: click's usage errors (unknown option, missing argument, bad
    choice, nonexistent file) and kgen's own alike are one line, `kgen: error: <message>`, and exit code 2, where
    click alone prints a usage block and `Error: ...`. --help and --version print and exit 0 as usual."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name or "kgen", complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as error:   # `kgen` alone: the help, as `kgen --help` shows it
            click.echo(error.format_message())
            sys.exit(0)
        except click.ClickException as error:
            click.echo(f"kgen: error: {one_line(error)}", err=True)
            sys.exit(2)
        except (click.Abort, KeyboardInterrupt):
            click.echo("\nkgen: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:   # `kgen emit | head`: the reader left; Python's exit-time flush must not complain
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def one_line(error: click.ClickException) -> str:
    """The error's message on one line; a usage error names the help to read (`kgen emit --help`)."""
    message = " ".join(line.strip() for line in error.format_message().splitlines() if line.strip())
    context = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and context is not None:
        message += f" (see {context.command_path} --help)"
    return message


@click.group(name="kgen", cls=KgenGroup)
@click.version_option(__version__, prog_name="kgen")
def main():
    """kgen: fused-CUDA KernelBench solutions, emitted from templates and proven against the reference."""


@main.command("list")
def list_specs():
    """Every preset: its bundled reference and the options it takes."""
    for spec in REGISTRY.values():
        marker = " (default)" if spec.name == DEFAULT_SPEC else ""
        click.echo(f"{spec.name}{marker}: {spec.title}")
        click.echo(f"    planned from kgen/specs/references/{spec.reference_file}")
        for p in spec.params:
            allowed = f" one of {', '.join(map(str, p.choices))}" if p.choices else ""
            click.echo(f"    {p.flag:<14} default {p.default!s:<6}{allowed}  {p.help}")


@main.command("emit")
@click.argument("spec_name", metavar="[SPEC]", required=False, default=DEFAULT_SPEC)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="write here instead of stdout (atomically: no partial file on error)")
@click.option("--ref", "reference", type=click.Path(dir_okay=False), default=None,
              help="plan the solution from this KernelBench reference file alone (any GroupNorm-family model)")
@click.option("--explain", is_flag=True, help="with --ref: print the plan (which ops run in which kernel) and stop")
@click.option("--choices", default=None,
              help="with --ref: the options as a file's kgen-params header records them (what `kgen tune` chose), "
                   "e.g. '{\"block_size\": 512, \"conv\": \"fast\"}': the same bytes again")
@click.option("--faithful", type=click.Choice(["auto", "all", "none"]), default=None,
              help="with --ref: which GroupNorm regions reproduce PyTorch's forward bit for bit: auto (those a "
                   "convolution or matmul reads, which round float32 to TF32; the default), all, or none (kgen's own "
                   "statistics and fastest kernels everywhere)")
@click.option("--autograd", type=click.Choice(["cpp", "python"]), default=None,
              help="with --ref: each region's and element-wise step's autograd as one C++ autograd node (cpp, the "
                   "default: less host time a call) or as a torch.autograd.Function in the file (python)")
@click.option("--region-kernels", "region_kernels", type=click.Choice(["auto", "resident", "two-pass"]), default=None,
              help="with --ref: which kernels a GroupNorm region may take: auto (kgen's rules, the default), resident "
                   "(held on chip wherever a slice fits) or two-pass (statistics, then apply, for every shape); "
                   "kgen tune tries them")
@_param_options
def emit_command(spec_name, output, reference, explain, choices, faithful, autograd, region_kernels, **given):
    """Render SPEC's templates (or, with --ref, a plan of REFERENCE) into one self-contained solution file."""
    from kgen.emit import emit

    given = {name: value for name, value in given.items() if value is not None}
    if region_kernels is not None:
        if reference is None:
            raise click.UsageError("--region-kernels is --ref's (a preset's file is its reference's plan at the "
                                   "defaults)")
        given["region_kernels"] = region_kernels
    if choices is not None:
        given = _with_choices(reference, choices, given)
        if autograd is not None and given["autograd"] != DEFAULT_AUTOGRAD:
            raise click.UsageError("give --autograd or --choices' autograd, not both")
        autograd = autograd or given["autograd"]
        del given["autograd"]
    if reference is not None:
        _emit_reference(reference, output, explain, given, spec_given=spec_name != DEFAULT_SPEC,
                        faithful=faithful or "auto", autograd=autograd or DEFAULT_AUTOGRAD)
        return
    if faithful is not None:
        raise click.UsageError("--faithful is --ref's (a preset's regions are its reference's plan)")
    if autograd is not None:
        raise click.UsageError("--autograd is --ref's (a preset's file is its reference's plan at the defaults)")
    if explain:
        raise click.UsageError("--explain needs --ref FILE")
    _check_output_folder(output)
    from kgen.announce import StageAnnouncer
    from kgen.ref.trace import RefError

    try:
        with StageAnnouncer(sys.stderr) as stage:
            text, notes = emit(spec_name, given, output=output, stage=stage)
    except (UnknownSpec, ParamError) as error:
        raise click.UsageError(str(error)) from None
    except RefError as error:
        raise CommandError(str(error)) from None
    for note in notes:
        click.echo(f"kgen: warning: {note}", err=True)
    _deliver(text, output)


def _with_choices(reference, choices: str, given: dict) -> dict:
    """--choices' options, where no option of theirs is also given on its own."""
    from kgen.ref.trace import RefError
    from kgen.tune.candidates import parse_choices

    if reference is None:
        raise click.UsageError("--choices needs --ref FILE")
    both = [name for name in ("block_size", "conv", "forward", "region_kernels") if name in given]
    if both:
        raise click.UsageError(f"give {', '.join('--' + n.replace('_', '-') for n in both)} or --choices, not both")
    try:
        return {**given, **parse_choices(choices).options()}
    except RefError as error:
        raise click.UsageError(str(error)) from None


def _emit_reference(reference, output, explain, given, spec_given, faithful: str = "auto",
                    autograd: str = DEFAULT_AUTOGRAD) -> None:
    from kgen.announce import StageAnnouncer
    from kgen.ref.emit import emit_reference, explain_plans, mode_plans, plan_notes
    from kgen.ref.plan_layout import CONV_MODES
    from kgen.ref.trace import RefError, load_reference

    if spec_given:
        raise click.UsageError("give either a SPEC or --ref FILE, not both")
    unknown = [name for name in given if name not in ("block_size", "conv", "forward", "region_kernels")]
    if unknown:
        raise click.UsageError(f"--ref takes --block-size, --conv and --forward only, not "
                               f"{', '.join('--' + n.replace('_', '-') for n in unknown)} (the rest comes from the "
                               "reference)")
    conv = given.get("conv", "exact")
    if conv not in CONV_MODES:
        raise click.UsageError(f"--conv takes {', '.join(CONV_MODES)}, not {conv!r}")
    if not explain:
        _check_output_folder(output)
    try:
        with StageAnnouncer(sys.stderr) as stage:
            if explain:
                stage(f"tracing {reference}")
                ref = load_reference(reference)
                stage("planning")
                plans = mode_plans(ref, conv, faithful)
            else:
                text, notes, _ = emit_reference(reference, given.get("block_size", 256), conv=conv, output=output,
                                                stage=stage, forward=given.get("forward", "two-pass"),
                                                faithful=faithful, autograd=autograd,
                                                region_kernels=given.get("region_kernels", "auto"))
    except RefError as error:
        raise CommandError(str(error)) from None
    if explain:
        for line in explain_plans(plans):
            click.echo(line)
        for note in plan_notes(plans):
            click.echo(f"note: {note}")
        return
    for note in notes:
        click.echo(f"kgen: warning: {note}", err=True)
    _deliver(text, output)


def _check_output_folder(output) -> None:
    """-o's folder must exist: checked before the work, so a long trace is not lost to a typo."""
    if output is None:
        return
    folder = Path(output).parent
    if not folder.is_dir():
        raise CommandError(f"cannot write {output}: the folder {folder} does not exist")


def _deliver(text: str, output) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        _write_atomically(Path(output), text)
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None


def _write_atomically(path: Path, text: str) -> None:
    """A temporary file beside `path`, renamed over it once complete: a reader never sees half a file, and an error
    leaves none (the temporary file is removed). The file gets the mode any new file gets, 0o666 less the umask
    (as a shell redirect would make it), not mkstemp's 0600, also where it replaces an existing file."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            os.fchmod(stream.fileno(), 0o666 & ~_umask())
            stream.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _umask() -> int:
    """The process's umask (os.umask only reads it by setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@main.command("validate")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--ref", type=click.Path(exists=True, dir_okay=False), default=None,
              help="reference file (KernelBench format); default: the one named by the kgen header")
@click.option("--trials", type=click.IntRange(1), default=3, show_default=True)
@click.option("--atol", type=click.FloatRange(min=0), default=None,
              help="absolute tolerance; default KernelBench's for the run's dtype: 1e-4 at fp32, 1e-2 at fp16/bf16")
@click.option("--rtol", type=click.FloatRange(min=0), default=None,
              help="relative tolerance; default as --atol's")
@click.option("--no-backward", is_flag=True, help="skip the gradient checks")
@click.option("--bench", is_flag=True, help="time forward and forward+backward against eager and torch.compile")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="also write the report as JSON")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=900.0, show_default=True,
              help="seconds before the GPU run is killed")
@click.option("--init-args", default=None, help="JSON list overriding get_init_inputs(), e.g. '[96, 12]'")
@click.option("--input-shape", "input_shapes", multiple=True,
              help="JSON shape overriding one get_inputs() tensor, e.g. '[4, 96, 33, 17]' (repeat per input)")
@click.option("--no-tf32", is_flag=True,
              help="library ops (cuDNN convolutions, matmuls) in full float32 for reference, solution and timings "
                   "alike; PyTorch's default lets cuDNN use TF32, in an algorithm that can differ by memory layout")
@click.option("--precision", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
              help="move the reference, the solution and the floating inputs to this dtype for every check and the "
                   "timings, as KernelBench's --precision does  [default: fp32]")
@click.option("--autocast", type=click.Choice(["fp16", "bf16"]), default=None,
              help="keep them float32 and run every forward of both under torch.autocast at this dtype (backward "
                   "outside it, as in training); not with --precision")
@click.option("--channels-last", is_flag=True,
              help="lay out the models' and the floating inputs' 4-d and 5-d tensors channels-last (as diffusion code "
                   "runs) for every check and the timings")
@click.option("--quiet", is_flag=True, help="no progress lines on stderr")
def validate_command(file, ref, trials, atol, rtol, no_backward, bench, json_path, timeout, init_args, input_shapes,
                     no_tf32, precision, autocast, channels_last, quiet):
    """Prove FILE equal to its reference (outputs, gradients, its own kernels at work) and, with --bench,
    time it. The report (stdout) also says what KernelBench alone would conclude; progress goes to stderr.

    Exit codes: 0 pass, 1 a check failed, 2 the file is broken, 3 no CUDA device (runtime checks not run).
    The KernelBench verdict never changes them.
    """
    from kgen.validate import validate
    from kgen.validate import arguments

    try:
        arguments.run_precision(precision, autocast)
        parsed_init = arguments.init_args(init_args)
        shapes = [arguments.input_shape(text) for text in input_shapes]
        arguments.check_output_folder(json_path)
        if shapes:
            arguments.check_input_shapes(shapes, arguments.reference_tensor_shapes(file, ref))
    except arguments.ArgumentError as error:
        raise CommandError(str(error)) from None
    code = validate(
        file, ref=ref, trials=trials, atol=atol, rtol=rtol, backward=not no_backward, bench=bench,
        json_path=json_path, timeout=timeout, init_args=parsed_init, input_shapes=shapes or None, tf32=not no_tf32,
        precision=precision, autocast=autocast, channels_last=channels_last, progress=None if quiet else sys.stderr,
    )
    sys.exit(code)


@main.command("tune")
@click.argument("target", metavar="REFERENCE|PRESET")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="write the winner here instead of stdout (atomically)")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=None,
              help="seconds after which no further candidate is validated; the timing runs on what passed")
@click.option("--precision", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32", show_default=True,
              help="the dtype the candidates are validated and timed at (models and inputs moved to it)")
@click.option("--block-sizes", default="128,256,512", show_default=True,
              help="the block sizes tried, comma-separated powers of two in [32, 1024]")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="also write every candidate's verdict and times as JSON")
@click.option("--no-cache", is_flag=True, help="measure again even where this tune was measured before")
def tune_command(target, output, budget, precision, block_sizes, json_path, no_cache):
    """Emit a reference file's plan (or a preset's, at its defaults) once per candidate (block size, conv mode,
    forward, region kernels, autograd), validate and time each on this GPU, and write the fastest correct one: the report on stderr, the file
    to stdout or -o."""
    from kgen.ref.trace import RefError
    from kgen.tune import GpuRunner, table, target_of, tune, winner, winner_text

    try:
        sizes = tuple(int(part) for part in block_sizes.split(","))
    except ValueError:
        raise click.UsageError(f"--block-sizes takes comma-separated integers, not {block_sizes!r}") from None
    _check_output_folder(output)
    if json_path is not None:
        _check_output_folder(json_path)

    def log(line: str) -> None:
        click.echo(f"kgen tune: {line}", err=True)

    try:
        tuned = target_of(target)
        with tempfile.TemporaryDirectory(prefix="kgen-tune-") as work:
            runner = GpuRunner(tuned.reference, precision, tuned.init_args, log=log)
            result = tune(tuned, runner, Path(work), precision, budget, sizes, use_cache=not no_cache, log=log)
        text = winner_text(tuned, result, output)
    except RefError as error:
        raise CommandError(str(error)) from None
    for line in table(result):
        click.echo(line, err=True)
    click.echo(f"kgen tune: the same file again: {tuned.command(winner(result), output)}", err=True)
    if json_path is not None:
        import json
        _deliver(json.dumps(result.as_json(), indent=1) + "\n", json_path)
    _deliver(text, output)


if __name__ == "__main__":
    main()
