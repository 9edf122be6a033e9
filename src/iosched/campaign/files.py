"""Small helpers for the files of a campaign: canonical JSON and short
hashes (run identities), file digests, slugs (labels and folder names), and
atomic writes (a reader never sees a half-written file)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "canonical",
    "short_hash",
    "sha256_file",
    "slug",
    "write_atomic",
    "json_text",
    "write_json",
    "write_if_changed",
]


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def short_hash(obj: Any, n: int = 10) -> str:
    return hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()[:n]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._+-]+", "-", str(text)).strip("-.")
    return s[:48] or "x"


def write_atomic(path: Path, text: str) -> None:
    """Write *text* to *path* through a temporary file and ``os.replace``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def json_text(data: Any) -> str:
    """Keys sorted, indent 2, no NaN, a final newline (as metrics.json)."""
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json_text(data))


def write_if_changed(path: Path, text: str) -> bool:
    """Write *text* to *path* atomically unless it already holds it; True if written."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    write_atomic(path, text)
    return True
