"""Where `kgen tune` keeps what it measured, so that the same tune again is instant: one JSON file per key, the key
the reference's text, its input shapes, the model's arguments (a preset's), the GPU model, the PyTorch and kgen
versions, the precision and the candidates tried (any of them changing makes another key, so a cached result is
never read for another case).

The folder: `$KGEN_CACHE_DIR/tune`, else `$XDG_CACHE_HOME/kgen/tune`, else `~/.cache/kgen/tune`.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def cache_dir() -> Path:
    if os.environ.get("KGEN_CACHE_DIR"):
        return Path(os.environ["KGEN_CACHE_DIR"]) / "tune"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgen" / "tune"


def cache_key(reference_sha256: str, input_shapes: list, gpu: str, torch_version: str, kgen_version: str,
              precision: str, records: list[str], target: dict | None = None) -> str:
    """`target`: what else makes the file (a preset's name and parameters, the model's arguments)."""
    fields = {"reference": reference_sha256, "inputs": [list(s) if s is not None else None for s in input_shapes],
              "gpu": gpu, "torch": torch_version, "kgen": kgen_version, "precision": precision,
              "candidates": sorted(records), "target": target or {}}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:24]


def load(key: str) -> dict | None:
    path = cache_dir() / f"{key}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None   # a damaged entry is measured again


def store(key: str, result: dict) -> Path:
    """Written atomically (a reader never sees half an entry)."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    temp = folder / f".{key}.{os.getpid()}.tmp"
    temp.write_text(json.dumps(result, indent=1, sort_keys=True))
    os.replace(temp, path)
    return path
