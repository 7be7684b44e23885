"""Emits every `kgen tune` candidate of each reference (tune's own enumeration, at the block sizes given) into one
folder, so benchmarks/prebuild.py can build them all at once before the tunes run one after another (a candidate's
build is cached by its source's hash: the tune then builds nothing).

    python3 prebuild_candidates.py OUT_DIR BLOCK_SIZES REF.py...
"""
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kgen.tune.candidates import candidates
from kgen.tune.target import target_of


def emit_all(args):
    out, sizes, ref_path = args
    target = target_of(ref_path)
    found = candidates(target.load(), sizes, target.takes, target.default)
    for k, choices in enumerate(found):
        path = Path(out) / f"{Path(ref_path).stem}_{k}.py"
        path.write_text(target.emit(choices, path))
    return f"{ref_path}: {len(found)} candidates: {'; '.join(c.label() for c in found)}"


if __name__ == "__main__":
    out, sizes, refs = sys.argv[1], tuple(int(s) for s in sys.argv[2].split(",")), sys.argv[3:]
    Path(out).mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(len(refs)) as pool:
        for line in pool.map(emit_all, [(out, sizes, r) for r in refs]):
            print(line, flush=True)
