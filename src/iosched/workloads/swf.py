"""Reader for the Standard Workload Format (SWF), version 2.2.

Source: D. Feitelson et al., Parallel Workloads Archive, "The Standard
Workload Format", https://www.cs.huji.ac.il/labs/parallel/workload/swf.html
(Chapin et al., "Benchmarks and standards for the evaluation of parallel job
schedulers", JSSPP 1999).

Format, as read here:

* one job per line, 18 whitespace-separated numeric fields (see
  :data:`SWF_FIELDS`), ``-1`` meaning "missing / not applicable";
* lines starting with ``;`` are comments; header comments of the form
  ``; Key: value`` (``Version``, ``Computer``, ``MaxNodes``, ``MaxProcs``,
  ``UnixStartTime``, ``TimeZoneString``, ``Note``...) are collected into a
  dict; a comment line without its own ``Key:`` that directly follows a key
  line (or its continuation) continues that key's value; other comments
  (after an empty ``;`` line, a blank line or a job line) are ignored, as
  are blank lines;
* time fields may be floating point (the spec allows it); count and
  identifier fields must be integers.

Only ``-1`` denotes a missing value: any other negative number is rejected,
as are non-numeric tokens, NaN/infinity, non-integral counts/identifiers and
lines with a number of fields other than 18.  Every such error raises
:class:`iosched.errors.InputError` whose one-line message names the file, the
line number and the field.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import zlib
from typing import NamedTuple

import numpy as np
import pandas as pd

from iosched.errors import InputError

__all__ = ["SWF_FIELDS", "SWF_FLOAT_FIELDS", "SwfLog", "read_swf"]

#: First bytes of a gzip stream (RFC 1952).
_GZIP_MAGIC = b"\x1f\x8b"

#: The 18 SWF fields, in file order, as DataFrame column names (units in
#: brackets): job number; submit time [s, from the log's start]; wait time
#: [s]; run time [s]; allocated processors; average CPU time used per
#: processor [s]; used memory per processor [KB]; requested processors;
#: requested time [s] (the user's walltime estimate); requested memory per
#: processor [KB]; status (1 completed, 0 failed, 5 cancelled, ...); user id;
#: group id; executable (application) number; queue number; partition
#: number; preceding job number; think time from the preceding job [s].
SWF_FIELDS = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_number",
    "queue_number",
    "partition_number",
    "preceding_job_number",
    "think_time",
)

#: Fields stored as ``float64`` (times in s and memory in KB, which the spec
#: allows to be fractional); missing values are NaN.  All other fields are
#: integers, stored with pandas' nullable ``Int64`` dtype (missing = <NA>).
SWF_FLOAT_FIELDS = frozenset(
    {
        "submit_time",
        "wait_time",
        "run_time",
        "average_cpu_time",
        "used_memory",
        "requested_time",
        "requested_memory",
        "think_time",
    }
)

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_HEADER_RE = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_]*)\s*:(?:\s+(.*?)|)\s*$")


class SwfLog(NamedTuple):
    """An SWF log: ``jobs`` (DataFrame) and ``header`` (dict of str to str).

    ``jobs`` has one row per job line, in file order, and the 18 columns of
    :data:`SWF_FIELDS`; its index, named ``line``, is the 1-based line number
    of the job in the file.  ``header`` maps each ``; Key: value`` comment key
    to its value as written (stripped; repeated keys and continuation lines
    are joined with ``"\\n"``), e.g. ``header["MaxProcs"] == "100"``.
    """

    jobs: pd.DataFrame
    header: dict


def _parse_token(token, field, integral, where):
    if not _NUMBER_RE.match(token):
        raise InputError(f"{where}: field {field}: {token!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise InputError(f"{where}: field {field}: {token!r} is not a finite number")
    if value == -1:
        return None
    if value < 0:
        raise InputError(f"{where}: field {field}: negative value {token} (only -1, meaning missing, is allowed)")
    if integral:
        if value != int(value):
            raise InputError(f"{where}: field {field}: {token!r} is not an integer")
        return int(value)
    return value


def read_swf(path) -> SwfLog:
    """Read an SWF file into an :class:`SwfLog` ``(jobs, header)``.

    ``path``: a ``str`` or path-like naming an SWF text file (ASCII/UTF-8),
    e.g. the Parallel Workloads Archive's cleaned
    ``KTH-SP2-1996-2.1-cln.swf``, or that file gzip-compressed as the archive
    distributes it (``KTH-SP2-1996-2.1-cln.swf.gz``; recognised by its gzip
    magic bytes, whatever its name).

    Returns ``SwfLog(jobs, header)``: ``jobs`` is a DataFrame of shape
    (number of job lines, 18) with the columns of :data:`SWF_FIELDS` (float64
    for :data:`SWF_FLOAT_FIELDS`, nullable Int64 otherwise; ``-1`` becomes
    NaN / <NA>) and index ``line`` (1-based line numbers); ``header`` is the
    dict of ``; Key: value`` comments (values are strings).  Reading the same
    file always gives equal results.

    Raises :class:`iosched.errors.InputError` (one line: ``<file>:<line>:
    field <name>: ...``) if the file cannot be read, decompressed or decoded, if a job line
    does not have exactly 18 fields, or if a field is non-numeric, not
    finite, negative other than -1, or non-integral where an integer is
    required.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"{name}: cannot read SWF file: {exc.strerror or exc}") from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{name}: cannot decompress the gzip SWF file: {exc}") from None
    raw_lines = raw.splitlines()

    integral = [f not in SWF_FLOAT_FIELDS for f in SWF_FIELDS]
    columns = [[] for _ in SWF_FIELDS]
    line_numbers = []
    header: dict = {}
    last_key = None
    for lineno, raw in enumerate(raw_lines, start=1):
        where = f"{name}:{lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: line is not valid UTF-8 text") from None
        stripped = line.strip()
        if not stripped:
            last_key = None
            continue
        if stripped.startswith(";"):
            match = _HEADER_RE.match(stripped)
            if match:
                key, value = match.group(1), match.group(2) or ""
                header[key] = f"{header[key]}\n{value}" if key in header else value
                last_key = key
            else:
                text = stripped[1:].strip()
                if last_key is not None and text:
                    header[last_key] = f"{header[last_key]}\n{text}"
                else:
                    last_key = None
            continue
        last_key = None
        tokens = stripped.split()
        if len(tokens) != len(SWF_FIELDS):
            raise InputError(f"{where}: expected {len(SWF_FIELDS)} fields, got {len(tokens)}")
        for i, token in enumerate(tokens):
            columns[i].append(_parse_token(token, SWF_FIELDS[i], integral[i], where))
        line_numbers.append(lineno)

    data = {}
    for field, values, is_int in zip(SWF_FIELDS, columns, integral):
        if is_int:
            data[field] = pd.array(values, dtype="Int64")
        else:
            data[field] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    jobs = pd.DataFrame(data, index=pd.Index(np.array(line_numbers, dtype=np.int64), name="line"))
    return SwfLog(jobs=jobs, header=header)
