"""The one Batsim workload JSON writer of iosched (issue 26): the SWF
converter, the campaigns, the benchmarks and every family's workload
generator (:mod:`iosched.experiments`) write their workloads with it, so
that equal workloads are equal files whoever made them.

Layout (:func:`dump_workload`): top-level keys sorted, one job per line in
list order (the job order is kept: it is the submission order), one profile
per line with profiles sorted by name, keys sorted inside each object,
floats in Python's shortest repr, no NaN or infinity.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

__all__ = ["dump_workload", "write_workload"]


def dump_workload(workload, fp=None):
    """Serialise a Batsim workload dict deterministically.

    Layout: top-level keys sorted, one job per line in list order (the job
    order is kept: it is the submission order), one profile per line with
    profiles sorted by name, keys sorted inside each object, floats in
    Python's shortest repr.  ``fp``: a text file object to write to, or
    ``None``.  Returns the text (``str``) in both cases; equal dicts give
    byte-identical text.  Raises ``TypeError`` if the dict holds values JSON
    cannot encode.
    """

    def enc(obj):
        return json.dumps(obj, sort_keys=True, separators=(", ", ": "), allow_nan=False)

    buf = io.StringIO()
    buf.write("{\n")
    keys = sorted(workload)
    for i, key in enumerate(keys):
        value = workload[key]
        tail = "," if i < len(keys) - 1 else ""
        if key == "jobs" and isinstance(value, list):
            buf.write('  "jobs": [\n')
            for j, job in enumerate(value):
                buf.write(f"    {enc(job)}{',' if j < len(value) - 1 else ''}\n")
            buf.write(f"  ]{tail}\n")
        elif key == "profiles" and isinstance(value, dict):
            buf.write('  "profiles": {\n')
            names = sorted(value)
            for j, name in enumerate(names):
                buf.write(f"    {enc(name)}: {enc(value[name])}{',' if j < len(names) - 1 else ''}\n")
            buf.write(f"  }}{tail}\n")
        else:
            buf.write(f"  {enc(key)}: {enc(value)}{tail}\n")
    buf.write("}\n")
    text = buf.getvalue()
    if fp is not None:
        fp.write(text)
    return text


def write_workload(workload, path) -> Path:
    """Write :func:`dump_workload` of ``workload`` (a Batsim workload dict)
    to ``path`` (UTF-8); returns the Path.

    :raises OSError: the file cannot be written.
    :raises TypeError: the dict holds values JSON cannot encode.
    :raises ValueError: the dict holds NaN or infinity.
    """
    path = Path(path)
    path.write_text(dump_workload(workload), encoding="utf-8")
    return path
