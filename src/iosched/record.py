"""The record a run leaves in its output folder: ``command.json``.

Written once by the runner (:func:`write_record`) before the processes
start, read back by the metrics and the campaigns (:func:`read_record`,
:func:`compute_hosts`), never re-derived from the engine's command line.
It sits below both the runner (:mod:`iosched.run`) and the analysis
(:mod:`iosched.analysis`), so neither imports the other for it.

Fields: ``cwd``, ``port``, ``environment``, ``in_process`` (bool: the
scheduler ran inside the engine's process, ``iosched run --in-process``;
then ``scheduler.argv`` is the pybatsim launcher command the two-process run
would use, not run, and ``scheduler.log`` is the engine's log; absent in
records written before the flag existed), ``scheduler`` (``file``,
``options``, ``argv``, ``shell``, ``log``), ``engine`` (``argv``, ``shell``,
``log``), ``timeouts_s``, ``start_order``, ``cpus`` and ``compute_hosts``
(int: the number of compute hosts of the simulated machine, what the
utilization is computed over).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["RECORD_FILE", "write_record", "read_record", "compute_hosts"]

#: File name of the record in a run's output folder.
RECORD_FILE = "command.json"


def write_record(output_dir, record: dict) -> Path:
    """Write ``record`` as ``<output_dir>/command.json`` (indented, sorted keys
    as given); returns the path.

    :raises OSError: if the file cannot be written.
    """
    path = Path(output_dir) / RECORD_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_record(output_dir) -> dict | None:
    """The record of the run in ``output_dir``, or None when there is none or
    it cannot be read as a JSON object."""
    try:
        data = json.loads((Path(output_dir) / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def compute_hosts(output_dir) -> int | None:
    """Compute hosts recorded for the run in ``output_dir`` (int >= 0), or
    None when the folder has no record or the record has no valid count."""
    rec = read_record(output_dir)
    n = rec.get("compute_hosts") if rec else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None
