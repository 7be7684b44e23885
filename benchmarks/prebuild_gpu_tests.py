"""Emit every solution file the slow GPU suites build (tests/gpu/test_gn_region_nhwc.py, test_region_dtypes.py,
test_groupnorm.py, test_rows_half.py, test_resident_half.py, test_bn_train.py, test_pointwise_dtypes.py), so that
`benchmarks/prebuild.py` builds their extensions in parallel before pytest imports them: the same sources give the same hash-named
extensions, which pytest then loads from TORCH_EXTENSIONS_DIR. Built one after another inside the tests, the first
four suites' 24 extensions take longer than one device call (600 s); at -j 15 on the H200's 16 cores, 260 s.

    python3 benchmarks/prebuild_gpu_tests.py DIR [SUITE ...] && python3 benchmarks/prebuild.py -j 15 DIR/*.py

SUITE: nhwc, dtypes, groupnorm, rows_half, resident_half, bn_train, pointwise_dtypes (default: all).
"""
import sys
import textwrap
from pathlib import Path

from kgen.emit import emit
from kgen.ref.emit import emit_reference
from tests.gpu import test_bn_train as bn_train, test_gn_region_nhwc as nhwc, test_region_dtypes as dtypes
from tests.gpu import test_pointwise_dtypes as pointwise_dtypes, test_resident_half as resident_half, \
    test_rows_half as rows_half


def nhwc_files(out: Path) -> None:
    """--conv fast at each block size a case takes, and the default (exact) files of the channels-last model cases."""
    pairs = {(name, 256) for name in nhwc.REFERENCES} | {(case[0], block) for block, case in nhwc.BLOCK_CASES}
    for name, block in sorted(pairs):
        text = emit_reference(str(nhwc.REFERENCES[name]), block_size=block, conv="fast")[0]
        (out / f"nhwc_{name}_{block}.py").write_text(text)
    for name in sorted({case[0] for case in nhwc.MODEL_CASES}):
        (out / f"nhwc_{name}_exact.py").write_text(emit_reference(str(nhwc.REFERENCES[name]))[0])


def emitted_from_text(out: Path, stem: str, reference: str) -> None:
    """out/STEM.py: `kgen emit --ref` of a reference a suite writes as text (the reference written beside it while it
    is emitted, then removed, so that DIR/*.py holds solutions only)."""
    source = out / f"{stem}_ref.py"
    source.write_text(reference)
    (out / f"{stem}.py").write_text(emit_reference(str(source))[0])
    source.unlink()


def dtype_files(out: Path) -> None:
    for kind, (body, _) in dtypes.KINDS.items():
        emitted_from_text(out, f"dtypes_{kind}", textwrap.dedent(dtypes.HEAD).format(body=body))


def groupnorm_files(out: Path) -> None:
    for forward in ("one-pass", "two-pass"):
        (out / f"groupnorm_{forward}.py").write_text(emit("groupnorm", dict(groups=8, block_size=256,
                                                                            forward=forward))[0])


def kinds_files(suite, stem: str):
    """The files of a suite that writes one reference, its REFERENCE with {body} each of its KINDS."""
    def files(out: Path) -> None:
        for kind, body in suite.KINDS.items():
            emitted_from_text(out, f"{stem}_{kind}", suite.REFERENCE.format(body=body))
    return files


def bn_train_files(out: Path) -> None:
    for name, edit in bn_train.EMITTED:
        text = (bn_train.ROOT / "tests" / "ref" / "references" / f"{name}.py").read_text()
        stem = f"bn_train_{name}" + (f"_{edit.__name__}" if edit else "")
        emitted_from_text(out, stem, edit(text) if edit else text)


def pointwise_dtype_files(out: Path) -> None:
    for ref in pointwise_dtypes.REFERENCES:
        path = out / f"pointwise_dtypes_{Path(ref).stem}.py"
        path.write_text(emit_reference(str(pointwise_dtypes.ROOT / ref), output=path)[0])


SUITES = {"nhwc": nhwc_files, "dtypes": dtype_files, "groupnorm": groupnorm_files,
          "rows_half": kinds_files(rows_half, "rows_half"), "resident_half": kinds_files(resident_half, "resident_half"),
          "bn_train": bn_train_files, "pointwise_dtypes": pointwise_dtype_files}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[2:] or SUITES:
        SUITES[name](out)
    print(len(list(out.glob("*.py"))), "files in", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
