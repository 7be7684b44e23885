"""The `kgen` command line as a user meets it: one-line errors with exit code 2, files written with the usual
mode, a reference found from any folder, stages shown during a long emit; and every source file compiling
without a warning (CPU only: nothing is built)."""
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted((ROOT / "kgen").rglob("*.py")) + sorted((ROOT / "generated").iterdir()),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_source_compiles_without_a_warning(path):
    """An invalid escape sequence (`"\\`"`) is a DeprecationWarning on Python 3.11 and a SyntaxWarning on 3.12,
    shown once when the file is first compiled and never again from the cached bytecode: compiled from source
    here, with warnings as errors."""
    source = path.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile(source, str(path), "exec")


# ---- helpers -----------------------------------------------------------------------------------------------

REFERENCE = ROOT / "tests" / "ref" / "references" / "two_groupnorms.py"   # traces in well under a second


def run_cli(*args):
    from click.testing import CliRunner

    from kgen.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def error_lines(result) -> list[str]:
    """The lines of stderr, less the stage lines a slow machine may show (`kgen: tracing ... ...`)."""
    return [line for line in result.stderr.splitlines() if not line.endswith(" ...")]


def assert_one_line_error(result, *words):
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith("kgen: error: "), result.stderr
    assert "Traceback" not in result.output and "Usage:" not in result.output and "Try '" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


@pytest.fixture
def no_cuda(monkeypatch):
    """validate runs its static checks and stops (exit 3) as on a machine without a GPU, whatever this one has."""
    import kgen.validate.core

    monkeypatch.setattr(kgen.validate.core, "cuda_available", lambda: False)


# ---- the reference an emitted file names, found from any folder --------------------------------------------

def _layout(tmp_path):
    """refs/model.py, the folder emit runs in, the folder its file goes to, and one more folder."""
    folders = {name: tmp_path / name for name in ("refs", "work", "out", "elsewhere")}
    for folder in folders.values():
        folder.mkdir()
    (folders["refs"] / "model.py").write_text(REFERENCE.read_text())
    return folders


def test_emit_to_a_file_names_the_reference_relative_to_that_file(tmp_path, monkeypatch, no_cuda):
    """`kgen emit --ref ../refs/model.py -o ../out/sol.py` in work/: the header says ../refs/model.py (from out/),
    and `kgen validate` finds it from another folder, by a relative path to the file too."""
    from kgen.header import parse_header
    from kgen.validate.core import resolve_reference

    folders = _layout(tmp_path)
    monkeypatch.chdir(folders["work"])
    assert run_cli("emit", "--ref", "../refs/model.py", "-o", "../out/sol.py").exit_code == 0
    text = (folders["out"] / "sol.py").read_text()
    header = parse_header(text)
    assert header.reference == "../refs/model.py" and header.reference_abspath is None
    assert "kgen emit --ref ../refs/model.py --block-size 256" in text   # the command as typed
    monkeypatch.chdir(folders["elsewhere"])
    path, _ = resolve_reference(text, None, Path("../out/sol.py"))
    assert path.resolve() == (folders["refs"] / "model.py").resolve()
    result = run_cli("validate", "../out/sol.py")
    assert result.exit_code == 3 and "is not there" not in result.output, result.output


def test_emit_to_stdout_names_the_reference_as_given_and_absolutely(tmp_path, monkeypatch, no_cuda):
    from kgen.header import parse_header

    folders = _layout(tmp_path)
    monkeypatch.chdir(folders["work"])
    result = run_cli("emit", "--ref", "../refs/model.py")
    assert result.exit_code == 0
    assert result.stdout == run_cli("emit", "--ref", "../refs/model.py").stdout   # deterministic
    (folders["out"] / "sol.py").write_text(result.stdout)
    header = parse_header(result.stdout)
    assert header.reference == "../refs/model.py"
    assert Path(header.reference_abspath) == (folders["refs"] / "model.py").resolve()
    monkeypatch.chdir(folders["elsewhere"])
    result = run_cli("validate", folders["out"] / "sol.py")
    assert result.exit_code == 3 and "is not there" not in result.output, result.output


def test_a_long_plan_leaves_the_header_readable(tmp_path, monkeypatch, no_cuda):
    """A reference of many steps lists more than a hundred plan lines above the machine-readable fields: `kgen
    validate` still finds its reference (it read only the first 40 lines, and said "no kgen header")."""
    from kgen.header import parse_header
    from kgen.validate.core import resolve_reference

    unet = Path(__file__).parent / "ref" / "unseen" / "mini_diffusion_unet.py"
    monkeypatch.chdir(tmp_path)
    assert run_cli("emit", "--ref", str(unet), "-o", "sol.py").exit_code == 0
    text = (tmp_path / "sol.py").read_text()
    assert text.splitlines().index(next(l for l in text.splitlines() if l.startswith("# kgen-spec:"))) > 40
    assert parse_header(text).reference is not None
    path, _ = resolve_reference(text, None, tmp_path / "sol.py")
    assert path.resolve() == unet.resolve()


def test_the_reference_found_relative_to_the_file_must_still_have_its_text(tmp_path, monkeypatch):
    from kgen.validate.core import NoReference, resolve_reference

    folders = _layout(tmp_path)
    monkeypatch.chdir(folders["work"])
    assert run_cli("emit", "--ref", "../refs/model.py", "-o", "../out/sol.py").exit_code == 0
    monkeypatch.chdir(folders["elsewhere"])
    reference = folders["refs"] / "model.py"
    reference.write_text(reference.read_text() + "\n# edited\n")
    with pytest.raises(NoReference, match="changed since"):
        resolve_reference((folders["out"] / "sol.py").read_text(), None, folders["out"] / "sol.py")


def test_golden_files_find_their_references_from_any_folder(tmp_path, monkeypatch):
    """generated/ref_*.py name their references relative to generated/ (the same bytes on every machine)."""
    from kgen.golden import GENERATED, GOLDEN_REF
    from kgen.validate.core import resolve_reference

    monkeypatch.chdir(tmp_path)
    for name, reference in GOLDEN_REF.items():
        path, header = resolve_reference((GENERATED / name).read_text(), None, GENERATED / name)
        assert header.reference_abspath is None and not Path(header.reference).is_absolute()
        assert path.resolve() == (ROOT / reference).resolve(), name


def test_a_golden_file_is_what_emit_writes_from_the_repository(tmp_path, monkeypatch):
    """`kgen emit --ref REFERENCE -o generated/NAME` from the repository's root writes the golden file's bytes."""
    from kgen.golden import GENERATED, GOLDEN_REF

    name = "ref_level2_75_gemm_groupnorm_min_biasadd.py"
    monkeypatch.chdir(ROOT)
    out = GENERATED / name
    monkeypatch.setattr("kgen.cli._write_atomically", lambda path, text: captured.update({path: text}))
    captured = {}
    assert run_cli("emit", "--ref", GOLDEN_REF[name], "-o", out.relative_to(ROOT)).exit_code == 0
    assert captured[out.relative_to(ROOT)] == out.read_text()


# ---- bad arguments: one line, exit 2 --------------------------------------------------------------------

GROUPNORM = ROOT / "generated" / "groupnorm.py"   # its header names L1-35, whose input is [112, 64, 512, 512]


@pytest.mark.parametrize("args, words", [
    (["--init-args", "abc"], ["--init-args", "not JSON"]),
    (["--init-args", '{"a": 1}'], ["--init-args", "not a list"]),
    (["--init-args", "5"], ["--init-args", "not a list"]),
    (["--input-shape", "abc"], ["--input-shape", "not JSON"]),
    (["--input-shape", "[4, -1, 8, 8]"], ["--input-shape", "non-negative integers"]),
    (["--input-shape", "[4, 2.5, 8, 8]"], ["non-negative integers"]),
    (["--input-shape", "[true, 64, 8, 8]"], ["non-negative integers"]),
    (["--input-shape", '"4, 64"'], ["non-negative integers"]),
    (["--input-shape", "[4, 64, 8]"], ["rank 3", "[112, 64, 512, 512]", "rank 4"]),
    (["--input-shape", "[4, 64, 8, 8]", "--input-shape", "[4, 64, 8, 8]"],
     ["2 --input-shape given", "1 tensor"]),
    (["--atol", "-1"], ["--atol", "-1"]),
    (["--rtol", "-1"], ["--rtol"]),
    (["--timeout", "-5"], ["--timeout"]),
    (["--timeout", "0"], ["--timeout"]),
    (["--json", "/nonexistent/dir/x.json"], ["/nonexistent/dir", "does not exist"]),
])
def test_bad_validate_arguments_are_one_line_errors_before_anything_runs(args, words, no_cuda):
    result = run_cli("validate", GROUPNORM, *args)
    assert_one_line_error(result, *words)
    assert result.stdout == ""   # no report: nothing ran


def test_good_shapes_and_init_args_pass_through(no_cuda, tmp_path):
    report = tmp_path / "report.json"
    result = run_cli("validate", GROUPNORM, "--init-args", "[64, 8]", "--input-shape", "[2, 64, 8, 8]",
                     "--json", report)
    assert result.exit_code == 3, result.output
    assert report.is_file()


def test_shapes_are_checked_against_the_reference_given_with_ref(no_cuda):
    reference = ROOT / "kgen" / "specs" / "references" / "level2_37_matmul_swish_sum_groupnorm.py"   # (N, features)
    result = run_cli("validate", GROUPNORM, "--ref", reference, "--input-shape", "[4, 64, 8, 8]")
    assert_one_line_error(result, "rank 4", "rank 2")


def test_shapes_are_not_checked_where_the_reference_does_not_import(tmp_path, no_cuda):
    """The run itself reports a reference that cannot be imported; the argument check does not guess."""
    reference = tmp_path / "broken_ref.py"
    reference.write_text("raise RuntimeError('no')\n")
    result = run_cli("validate", GROUPNORM, "--ref", reference, "--input-shape", "[4, 64, 8]")
    assert not error_lines(result) or not error_lines(result)[0].startswith("kgen: error:"), result.stderr


# ---- one error style -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["emit", "--no-such-option"], ["No such option", "--no-such-option", "kgen emit --help"]),
    (["emit", "--conv", "sideways"], ["--conv", "sideways"]),
    (["emit", "--block-size", "many"], ["--block-size", "many"]),
    (["validate"], ["Missing argument", "FILE"]),
    (["validate", "/nonexistent/solution.py"], ["/nonexistent/solution.py", "does not exist"]),
    (["validate", GROUPNORM, "--trials", "0"], ["--trials"]),
    (["no-such-command"], ["No such command"]),
    (["emit", "no-such-spec"], ["unknown spec"]),
    (["emit", "--explain"], ["--explain needs --ref"]),
    (["emit", "--ref", "/nonexistent/reference.py"], ["no such file"]),
    (["emit", "-o", "/nonexistent/dir/solution.py"], ["the folder", "does not exist"]),
])
def test_every_usage_error_is_one_kgen_line(args, words):
    assert_one_line_error(run_cli(*args), *words)


@pytest.mark.parametrize("args", [["--help"], ["emit", "--help"], ["validate", "--help"], ["--version"], []])
def test_help_and_version_still_print_and_exit_0(args):
    result = run_cli(*args)
    assert result.exit_code == 0 and result.stdout and not result.stderr
    assert ("version" in result.stdout) if args == ["--version"] else ("Usage:" in result.stdout)


def test_the_console_script_gives_the_same_one_line_error():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "kgen.cli", "emit", "--no-such-option"], capture_output=True,
                            text=True)
    assert result.returncode == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if "NumPy" not in line and "_conversion_method" not in line]
    assert len(lines) == 1 and lines[0].startswith("kgen: error: No such option '--no-such-option'"), result.stderr


# ---- emit -o: the usual file mode, atomically -------------------------------------------------------------

@pytest.fixture
def umask():
    """Sets the process's umask for one test and restores it."""
    import os

    saved = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(saved)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_emit_writes_with_the_umasks_mode(tmp_path, umask, mask):
    umask(mask)
    out = tmp_path / "solution.py"
    assert run_cli("emit", "groupnorm", "-o", out).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask
    out.chmod(0o600)   # replacing a file: the new one gets the umask's mode too
    assert run_cli("emit", "groupnorm", "-o", out).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["solution.py"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    import os

    out = tmp_path / "solution.py"
    out.write_text("old\n")

    def refuse(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    result = run_cli("emit", "groupnorm", "-o", out)
    assert_one_line_error(result, "cannot write", "No space left on device")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["solution.py"]


# ---- emit's stages on stderr, only when it takes a while ----------------------------------------------------

def _emit_in_process(capsys, *args) -> tuple[int, str, str]:
    from kgen.cli import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


def test_a_long_first_stage_is_announced_while_it_runs(tmp_path, monkeypatch, capsys):
    """A trace that takes longer than the announcement's delay: `kgen: tracing REF ...` shows while the trace still
    runs (the fake trace waits for it), then every later stage as it starts."""
    import sys
    import time

    import kgen.announce
    import kgen.ref.emit

    monkeypatch.setattr(kgen.announce, "ANNOUNCE_AFTER_S", 0.05)
    real = kgen.ref.emit.load_reference
    seen_while_tracing = []

    def slow_trace(path, **options):
        deadline = time.monotonic() + 10
        while "kgen: tracing" not in sys.stderr.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_while_tracing.append(sys.stderr.getvalue())
        return real(path)

    monkeypatch.setattr(kgen.ref.emit, "load_reference", slow_trace)
    code, out, err = _emit_in_process(capsys, "emit", "--ref", REFERENCE, "-o", tmp_path / "sol.py")
    assert code == 0 and out == ""
    assert seen_while_tracing == [f"kgen: tracing {REFERENCE} ...\n"]
    assert err.splitlines() == [f"kgen: tracing {REFERENCE} ...", "kgen: planning ...", "kgen: rendering ..."]


def test_a_fast_emit_prints_nothing_on_stderr(tmp_path, monkeypatch, capsys):
    import kgen.announce

    monkeypatch.setattr(kgen.announce, "ANNOUNCE_AFTER_S", 60.0)
    code, out, err = _emit_in_process(capsys, "emit", "--ref", REFERENCE, "-o", tmp_path / "sol.py")
    assert code == 0 and out == "" and err == ""
    code, out, err = _emit_in_process(capsys, "emit", "--ref", REFERENCE, "--explain")
    assert code == 0 and out.startswith("PyTorch: fc1") and err == ""


def test_explain_announces_its_stages_too(monkeypatch, capsys):
    import kgen.announce

    monkeypatch.setattr(kgen.announce, "ANNOUNCE_AFTER_S", 0.0)
    code, out, err = _emit_in_process(capsys, "emit", "--ref", REFERENCE, "--explain")
    assert code == 0 and "kgen region 0" in out
    assert err.splitlines() == [f"kgen: tracing {REFERENCE} ...", "kgen: planning ..."]


# ---- --explain lists what each kgen step reads -------------------------------------------------------------

@pytest.mark.parametrize("reference, expected", [
    ("kgen/specs/references/level1_35_groupnorm.py", ["kgen region 0: GroupNorm", "parameters: gn.weight, gn.bias]"]),
    ("kgen/specs/references/level2_85_conv2d_groupnorm_scale_maxpool_clamp.py",
     ["parameters: group_norm.weight, group_norm.bias, conv.bias, scale]"]),
    ("tests/ref/references/functional_gn_swish_mean.py", ["parameters: weight, bias, conv.bias]"]),
    ("kgen/specs/references/level2_11_convtranspose2d_batchnorm_tanh_maxpool_groupnorm.py",
     ["parameters: batch_norm.weight, batch_norm.bias, conv_transpose.bias]",
      "parameters: group_norm.weight, group_norm.bias]"]),
    ("tests/ref/references/conv1d_gn_noaffine_relu.py", ["GroupNorm (affine=False) -> relu", "parameters: conv.bias]"]),
])
def test_explain_lists_the_affine_weight_and_bias(reference, expected, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = run_cli("emit", "--ref", reference, "--explain")
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.stdout, result.stdout


# ---- the emitted get_inputs draws what the reference's draws -------------------------------------------------

RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "bernoulli", "randperm")


def drawn(get_inputs, monkeypatch) -> list:
    """(torch function, shape, dtype) of every random tensor get_inputs() draws, on the meta device."""
    import torch

    calls = []
    for name in RANDOM:
        real = getattr(torch, name)

        def record(*args, _name=name, _real=real, **kwargs):
            out = _real(*args, **kwargs)
            calls.append((_name, tuple(out.shape), out.dtype))
            return out

        monkeypatch.setattr(torch, name, record)
    with torch.device("meta"):
        values = list(get_inputs())
    monkeypatch.undo()
    return calls + [("returned", tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else ("value", v)
                    for v in values]


def emitted_module(text: str, monkeypatch):
    """An emitted file executed with load_inline stubbed out (nothing is built)."""
    import types

    import torch.utils.cpp_extension

    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", lambda **kwargs: types.SimpleNamespace())
    module = types.ModuleType("emitted")
    exec(compile(text, "emitted.py", "exec"), module.__dict__)
    return module


def reference_module(path: Path):
    import types

    module = types.ModuleType("reference")
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


RANDN_REFERENCES = sorted(p for p in (ROOT / "tests" / "ref" / "references").glob("*.py") if "randn" in p.read_text())


@pytest.mark.parametrize("path", RANDN_REFERENCES[:6] + [ROOT / "kgen" / "specs" / "references" /
                                                          "level2_75_gemm_groupnorm_min_biasadd.py"],
                         ids=lambda p: p.stem)
def test_an_emitted_get_inputs_is_the_references_own(path, monkeypatch):
    """Same draws (randn stays randn), same shapes and dtypes, and the same get_init_inputs()."""
    from kgen.ref.emit import emit_reference

    text = emit_reference(str(path))[0]
    solution, reference = emitted_module(text, monkeypatch), reference_module(path)
    assert drawn(reference.get_inputs, monkeypatch) == drawn(solution.get_inputs, monkeypatch)
    assert solution.get_init_inputs() == reference.get_init_inputs()


def test_randn_references_exist():
    assert len(RANDN_REFERENCES) >= 6


def test_carried_get_inputs_that_cannot_run_alone_is_an_error(tmp_path):
    """get_inputs() reading a name bound inside a top-level `if` (which kgen does not carry): one line, no file
    whose get_inputs fails."""
    from kgen.ref.emit import emit_reference
    from kgen.ref.trace import RefError

    path = tmp_path / "model.py"
    path.write_text(REFERENCE.read_text().replace("def get_inputs():\n    return [torch.rand(33, 40)]",
                                                  "if True:\n    rows = 33\n\n\ndef get_inputs():\n"
                                                  "    return [torch.rand(rows, 40)]"))
    with pytest.raises(RefError, match=r"get_inputs\(\) or get_init_inputs\(\), carried .*NameError"):
        emit_reference(str(path))


@pytest.mark.parametrize("name", ["groupnorm.py", "convt_gelu_groupnorm.py", "convt_gelu_groupnorm_fused.py",
                                  "conv_gn_tanh_hardswish_res_lse.py"])
def test_a_spec_files_get_inputs_draws_what_its_reference_does(name, monkeypatch):
    """A preset file's get_inputs (the bundled reference's, carried, or the fused template's from its shapes) draws as
    the bundled reference does."""
    import ast

    import torch

    from kgen.golden import GENERATED, GOLDEN
    from kgen.specs import get_spec

    spec, params = GOLDEN[name]
    text = (GENERATED / name).read_text()
    body = ast.parse(text).body
    function = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs")
    constants = [n for n in body if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Constant, ast.Tuple))]
    namespace = {"torch": torch}
    exec(compile(ast.Module(body=constants + [function], type_ignores=[]), name, "exec"), namespace)
    reference = reference_module(get_spec(spec).reference_path(params))
    assert drawn(namespace["get_inputs"], monkeypatch) == drawn(reference.get_inputs, monkeypatch)


def test_choices_carry_the_autograd_mode_and_a_second_mode_is_one_clear_error(no_cuda):
    record = '{"autograd": "python", "block_size": 256}'
    from_record = run_cli("emit", "--ref", REFERENCE, "--choices", record)
    from_flag = run_cli("emit", "--ref", REFERENCE, "--autograd", "python")
    assert from_record.exit_code == 0 and "_call(_Region0, " in from_record.stdout
    assert from_record.stdout.split("\n", 3)[3] == from_flag.stdout.split("\n", 3)[3]   # past the re-emit command
    both = run_cli("emit", "--ref", REFERENCE, "--choices", record, "--autograd", "cpp")
    assert both.exit_code == 2 and "give --autograd or --choices' autograd, not both" in both.stderr
