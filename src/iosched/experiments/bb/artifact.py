"""The burst-buffer artifact's own workloads, read as iosched workloads.

Source: jankopanski/Burst-Buffer-Scheduling, ``workloads/`` (copied, for
this project, to ``../shared/data/bb-artifact/``): Batsim JSON files whose
jobs point to ``parallel_homogeneous`` profiles carrying the model's fields,
``cpu`` (flops per node over the whole job), ``com`` (bytes per pair of
nodes per compute phase) and ``bb`` (burst-buffer bytes per node); the
artifact's scheduler reads them from the profile
(``burstbuffer/io_aware.py``, ``on_job_submission``).

:func:`load` copies those fields to each job as iosched's burst-buffer
family expects them (its I/O model ``io``: ``burst_buffer.bytes``,
``compute.flops``, ``compute.com``; see :mod:`iosched.experiments.bb.workload`), keeps everything else (ids, submission times,
walltimes, ``res``, profiles), and checks them: a missing or invalid field
is a one-line :class:`~iosched.errors.InputError` naming the file, the job
and the field. Nothing is rounded or re-drawn, so iosched's schedulers run
on exactly the artifact's jobs.

:func:`campaign_workload` is the campaign hook: the 1,000-job file, or the
16 three-week parts (``parts/part-0.json`` ...).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

from iosched.errors import InputError
from iosched.sched.iojob import BurstBuffer, Compute, IOJob, to_json
from iosched.paths import shared_data_candidates

__all__ = ["ARTIFACT_DIR_NAME", "FIRST_1000", "NB_PARTS", "default_dir", "load",
           "campaign_workload"]

#: Folder of the artifact's workloads in the shared data folder.
ARTIFACT_DIR_NAME = "bb-artifact"
#: The artifact's 1,000-job workload (SWF jobs 15 to 1014).
FIRST_1000 = "KTH-SP2-1996-2.1-cln-io-aware-1000.json"
#: Number of three-week parts (``parts/part-<k>.json``).
NB_PARTS = 16


def default_dir() -> Path:
    """``<repo>/../shared/data/bb-artifact`` (the checkout holding this
    package), else ``<cwd>/../shared/data/bb-artifact``.

    :raises InputError: neither exists.
    """
    cands = shared_data_candidates(ARTIFACT_DIR_NAME)
    for c in cands:
        if c.is_dir():
            return c
    raise InputError(f"the artifact's workloads are not at {' nor '.join(map(str, cands))}; "
                     "pass their folder")


def _field(path, jid, prof: dict, name: str, *, positive: bool = False) -> int:
    v = prof.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
            or (positive and v <= 0):
        need = "a number > 0" if positive else "a number >= 0"
        raise InputError(f"{path}: job {jid}: profile field {name!r} must be {need}, got {v!r}")
    return int(v) if float(v).is_integer() else float(v)


def load(path) -> dict:
    """Read one of the artifact's workload files.

    :param path: a Batsim JSON workload of the artifact.
    :returns: the workload dict with, on every job, its I/O model ``io``
        (:mod:`iosched.sched.iojob`): ``burst_buffer.bytes`` (bytes per
        node), ``compute.flops`` (flops per node) and ``compute.com`` (bytes
        per pair) from its profile's ``bb``, ``cpu`` and ``com``; ``source``
        names the file.
    :raises InputError: unreadable file, not JSON, no ``jobs``/``profiles``,
        a job without profile, a profile field missing or invalid.
    """
    path = Path(path)
    try:
        w = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(w, dict) or not isinstance(w.get("jobs"), list) \
            or not isinstance(w.get("profiles"), dict):
        raise InputError(f"{path}: not a Batsim workload (needs 'jobs' and 'profiles')")
    jobs = []
    for j in w["jobs"]:
        if not isinstance(j, dict):
            raise InputError(f"{path}: a job is not an object")
        jid = j.get("id")
        prof = w["profiles"].get(str(j.get("profile")))
        if not isinstance(prof, dict):
            raise InputError(f"{path}: job {jid}: field 'profile' names no profile "
                             f"({j.get('profile')!r})")
        io = IOJob(burst_buffer=BurstBuffer(_field(path, jid, prof, "bb", positive=True)),
                   compute=Compute(flops=_field(path, jid, prof, "cpu"), com=_field(path, jid, prof, "com")))
        jobs.append({**j, "io": to_json(io)})
    return {**w, "jobs": jobs, "source": str(path)}


def campaign_workload(seed: int = 0, folder: Optional[str] = None, parts: bool = False):
    """Campaign hook (``workloads: [{python: "iosched.experiments.bb.artifact:campaign_workload",
    args: {...}}]``): the artifact's workloads; the campaign seed is ignored
    (the files are fixed draws).

    :param folder: the artifact's workload folder (default :func:`default_dir`).
    :param parts: False: the 1,000-job workload; True: the 16 parts.
    :returns: a workload dict or a list of 16.
    :raises InputError: as :func:`load`.
    """
    base = Path(folder) if folder else default_dir()
    if not parts:
        return load(base / FIRST_1000)
    return [load(base / "parts" / f"part-{k}.json") for k in range(NB_PARTS)]
