"""Convert an SWF log into a Batsim 4.2 workload (JSON).

Formats: the Standard Workload Format (see :mod:`iosched.workloads.swf`) and
Batsim's workload format (``docs/input-workload.rst`` of oar-team/batsim,
Batsim 4.2.1; profile types ``delay`` and ``parallel_homogeneous``).

Mapping of one SWF job to one Batsim job (the conventions of the golden
input ``kth1000_delay.json``, made from the first 1000 KTH-SP2 jobs):

* ``id``: the SWF job number (an integer, as in the golden file);
* ``subtime`` [s]: SWF submit time minus the submit time of the first kept
  job (so the first kept job is submitted at 0.0);
* ``res``: requested processors, or allocated processors when the request is
  missing (-1) or 0; with ``use_allocated=True``, the allocated processors
  only, as Batsim's ``tools/swf_to_batsim_workload_delay.py`` does (its
  ``ALLOCATED_PROCESSOR_COUNT``; jobs without one are dropped as
  ``no_resources``);
* ``walltime`` [s]: ``max(requested time, run time)``, as in the golden
  file (its 9 jobs that ran longer than requested get their run time as
  walltime; real Batsim 4.2.1 then reports them COMPLETED_WALLTIME_REACHED
  at their normal finish time, see golden run g6); omitted (no limit in
  Batsim) when the SWF has no requested time.  The report counts both cases.
  With ``walltime_factor=f``: ``max(requested time, f x run time)``, and
  ``f x run time`` without requested time -- Batsim's converter rule
  (``-jwf``, default 2 there). ``use_allocated=True, walltime_factor=2``
  reproduces that converter's ``res`` and ``walltime``; the other
  differences remain: it renumbers jobs from 0, keeps submit times
  unshifted (``max(0, submit)``), keeps run-time-0 jobs, and rounds each
  delay up to ``floor(run time) + 1`` s (its ``--jobGrain`` 1);
* ``profile``: ``delay_<run time>`` (``{"type": "delay", "delay": run
  time}``), shared by the jobs of equal run time, or with
  ``profile_type="parallel_homogeneous"``, ``parallel_homogeneous_<run
  time>`` (``{"type": "parallel_homogeneous", "cpu": run time x speed
  [flops], "com": 0.0}``, which lasts ``run time`` s on hosts of ``speed``
  flop/s); ``<run time>`` is written as an integer when it is one
  (``delay_3477``), else as Python's shortest float repr;
* extra fields forwarded by Batsim to the scheduler: ``swf_id`` (the job
  number), ``user_id``, ``group_id``, ``queue`` (SWF queue number), each
  omitted when the SWF has -1.

Selection, in this order: jobs are sorted by (submit time, job number)
(stable); the time window keeps ``start <= submit time < end`` (SWF time
axis, s); ``first`` keeps the first N of those *records*; then unusable jobs
are dropped and counted per reason, the first matching reason in this order:
``no_run_time`` (run time missing or <= 0), ``no_resources`` (no positive
processor count) and ``too_many_resources`` (``res > nb_res``, can never run
on the platform).  Nothing is dropped silently: :class:`ConversionReport`
counts every dropped job and lists its SWF job number.

KTH-SP2 (``KTH-SP2-1996-2.1-cln.swf``, 28,476 job records) on 100 nodes gives
28,467 usable jobs: 8 records have a run time of 0 s (jobs 2466, 4360, 4866,
6608, 15282, 20544, 25143, 25200) and 1 record (job 27313) has neither a
requested nor an allocated processor count (both -1); no job asks for more
than 100 processors (MaxProcs is 100).  475 of the kept jobs ran longer than
their requested time (walltime raised to the run time).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import pandas as pd

from iosched.errors import InputError
from iosched.workloads.swf import SwfLog, read_swf

__all__ = [
    "DROP_REASONS",
    "PROFILE_TYPES",
    "ConversionReport",
    "swf_to_batsim",
]

#: Profile types the converter can write.
PROFILE_TYPES = ("delay", "parallel_homogeneous")

#: Reasons a job is dropped, in order of precedence.
DROP_REASONS = ("no_run_time", "no_resources", "too_many_resources")


@dataclass(frozen=True)
class ConversionReport:
    """What :func:`swf_to_batsim` kept and dropped.

    Fields: ``source`` (file name or ``"<SwfLog>"``); ``nb_res`` (target
    resources); ``selected`` (records inside the time window and the first-N
    limit); ``kept`` (jobs written); ``dropped`` (dict reason -> count for
    every reason of :data:`DROP_REASONS`); ``dropped_ids`` (dict reason ->
    tuple of SWF job numbers, ``None`` where the SWF has -1);
    ``without_walltime`` (kept jobs with no
    requested time: no walltime in Batsim); ``walltime_raised`` (kept jobs
    whose run time exceeds their requested time, whose walltime is therefore
    their run time); ``first_submit_time`` (s on the SWF time axis of
    the first kept job, subtracted from every subtime; ``None`` if no job is
    kept).
    """

    source: str
    nb_res: int
    selected: int
    kept: int
    dropped: dict
    dropped_ids: dict = field(repr=False)
    without_walltime: int = 0
    walltime_raised: int = 0
    first_submit_time: float | None = None

    @property
    def total_dropped(self) -> int:
        """Number of dropped jobs (all reasons)."""
        return sum(self.dropped.values())

    def summary(self) -> str:
        """One line, e.g. ``"dropped 12 jobs: 10 request more than 100
        resources, 2 have no run time"`` (reasons with a zero count are
        omitted; ``"dropped 0 jobs"`` when none)."""
        texts = {
            "no_run_time": "have no run time",
            "no_resources": "request no resources",
            "too_many_resources": f"request more than {self.nb_res} resources",
        }
        total = self.total_dropped
        parts = [
            f"{n} {texts[r]}"
            for r, n in sorted(self.dropped.items(), key=lambda kv: (-kv[1], DROP_REASONS.index(kv[0])))
            if n
        ]
        noun = "job" if total == 1 else "jobs"
        return f"dropped {total} {noun}" + (": " + ", ".join(parts) if parts else "")


def _missing(value) -> bool:
    """True for a missing SWF value as pandas hands it over (None, NA, NaN)."""
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"swf2json: {name} must be an integer >= 1, got {value!r}")
    return value


def _default_nb_res(header, source):
    for key in ("MaxProcs", "MaxNodes"):
        text = header.get(key, "").strip()
        if text:
            try:
                value = int(text)
            except ValueError:
                raise InputError(f"{source}: header field {key}: {text!r} is not an integer") from None
            if value >= 1:
                return value
    raise InputError(f"{source}: nb_res not given and the SWF header has no positive MaxProcs or MaxNodes")


def swf_to_batsim(
    swf,
    *,
    nb_res=None,
    first=None,
    start=None,
    end=None,
    profile_type="delay",
    speed=1e9,
    walltime_factor=None,
    use_allocated=False,
):
    """Convert an SWF log to a Batsim workload dict; return ``(workload, report)``.

    Parameters:

    * ``swf``: path (str / path-like) of an SWF file, or an :class:`SwfLog`
      from :func:`iosched.workloads.swf.read_swf`;
    * ``nb_res``: resources of the target platform (int >= 1); default: the
      SWF header's ``MaxProcs`` (else ``MaxNodes``), since ``res`` counts
      processors;
    * ``first``: keep only the first N job records (after sorting and the
      time window), or ``None`` for all;
    * ``start``, ``end``: time window on the SWF submit time [s], ``start <=
      submit < end``; ``None`` for unbounded;
    * ``profile_type``: ``"delay"`` or ``"parallel_homogeneous"``;
    * ``speed``: host speed [flop/s] used for ``parallel_homogeneous``
      profiles (``cpu = run time x speed``); default 1e9 (1 Gflop/s);
    * ``walltime_factor``: None (walltime = ``max(requested, run time)``) or
      a number >= 1: walltime = ``max(requested, factor x run time)``, as
      Batsim's ``swf_to_batsim_workload_delay.py -jwf`` (module docstring);
    * ``use_allocated``: take ``res`` from the allocated processors only
      (Batsim's converter) instead of the requested ones.

    Returns ``(workload, report)``: ``workload`` is a dict with ``nb_res``
    (int), ``jobs`` (list of job dicts, ordered by submit time then job
    number) and ``profiles`` (dict name -> profile dict), see the module
    docstring for the mapping; ``report`` is a :class:`ConversionReport`.
    The same inputs always give equal results.

    Raises :class:`iosched.errors.InputError` (one line) for a bad option, an
    unreadable or malformed SWF file (see :func:`read_swf`), a missing
    ``nb_res`` with no usable header, or two kept jobs with the same job
    number (the message names both lines).
    """
    if isinstance(swf, SwfLog):
        log, source = swf, "<SwfLog>"
    else:
        source = os.fspath(swf)
        log = read_swf(source)
    if profile_type not in PROFILE_TYPES:
        raise InputError(f"swf2json: profile type {profile_type!r} is not one of {', '.join(PROFILE_TYPES)}")
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not math.isfinite(speed) or speed <= 0:
        raise InputError(f"swf2json: speed must be a positive number of flop/s, got {speed!r}")
    if walltime_factor is not None and (
        isinstance(walltime_factor, bool) or not isinstance(walltime_factor, (int, float))
        or not math.isfinite(walltime_factor) or walltime_factor < 1
    ):
        raise InputError(f"swf2json: walltime factor must be a finite number >= 1, got {walltime_factor!r}")
    nb_res = _default_nb_res(log.header, source) if nb_res is None else _positive_int(nb_res, "nb_res")
    if first is not None:
        _positive_int(first, "first")
    for name, value in (("start", start), ("end", end)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise InputError(f"swf2json: {name} must be a finite number of seconds, got {value!r}")
    if start is not None and end is not None and not start < end:
        raise InputError(f"swf2json: time window start ({start}) must be before end ({end})")

    jobs = log.jobs
    # Stable sort by (submit time, job number); the line number breaks ties.
    order = pd.DataFrame(
        {
            "submit": jobs["submit_time"].to_numpy(dtype=float, na_value=math.inf),
            "number": jobs["job_number"].to_numpy(dtype=float, na_value=math.inf),
            "line": jobs.index.to_numpy(),
        }
    ).sort_values(["submit", "number", "line"], kind="mergesort")
    rows = jobs.loc[order["line"].to_numpy()]
    if start is not None:
        rows = rows[rows["submit_time"].to_numpy(dtype=float, na_value=-math.inf) >= start]
    if end is not None:
        rows = rows[rows["submit_time"].to_numpy(dtype=float, na_value=math.inf) < end]
    if first is not None:
        rows = rows.iloc[:first]

    dropped_ids = {reason: [] for reason in DROP_REASONS}
    kept = []  # (line, record dict, res)
    for line, rec in zip(rows.index, rows.to_dict("records")):
        run_time = rec["run_time"]
        number = rec["job_number"]
        req, alloc = rec["requested_processors"], rec["allocated_processors"]
        if use_allocated:
            res = alloc
        else:
            res = req if (not _missing(req) and req > 0) else alloc
        if _missing(run_time) or run_time <= 0:
            reason = "no_run_time"
        elif _missing(res) or res <= 0:
            reason = "no_resources"
        elif res > nb_res:
            reason = "too_many_resources"
        else:
            reason = None
        if reason is not None:
            dropped_ids[reason].append(None if _missing(number) else int(number))
            continue
        if _missing(number):
            raise InputError(f"{source}:{line}: field job_number: missing (-1) for a usable job")
        if _missing(rec["submit_time"]):
            raise InputError(f"{source}:{line}: field submit_time: missing (-1) for a usable job")
        kept.append((int(line), rec, int(res)))

    seen = {}
    for line, rec, _ in kept:
        number = int(rec["job_number"])
        if number in seen:
            raise InputError(f"{source}:{line}: field job_number: job {number} already defined at line {seen[number]}")
        seen[number] = line

    t0 = kept[0][1]["submit_time"] if kept else None
    out_jobs, profiles = [], {}
    without_walltime = raised = 0
    for _line, rec, res in kept:
        run_time = float(rec["run_time"])
        if profile_type == "delay":
            name = f"delay_{_number_text(run_time)}"
            profile = {"type": "delay", "delay": run_time}
        else:
            name = f"parallel_homogeneous_{_number_text(run_time)}"
            profile = {"type": "parallel_homogeneous", "cpu": run_time * float(speed), "com": 0.0}
        profiles.setdefault(name, profile)
        job = {
            "id": int(rec["job_number"]),
            "subtime": float(rec["submit_time"] - t0),
            "res": res,
            "profile": name,
            "swf_id": int(rec["job_number"]),
        }
        walltime = rec["requested_time"]
        if walltime_factor is not None:
            scaled = float(walltime_factor) * run_time
            if _missing(walltime) or walltime <= 0:
                without_walltime += 1
                job["walltime"] = scaled
            else:
                if scaled > walltime:
                    raised += 1
                job["walltime"] = float(max(walltime, scaled))
        elif _missing(walltime) or walltime <= 0:
            without_walltime += 1
        else:
            if run_time > walltime:
                raised += 1
            job["walltime"] = float(max(walltime, run_time))
        for key, column in (("user_id", "user_id"), ("group_id", "group_id"), ("queue", "queue_number")):
            if not _missing(rec[column]):
                job[key] = int(rec[column])
        out_jobs.append(job)

    workload = {"nb_res": nb_res, "jobs": out_jobs, "profiles": profiles}
    report = ConversionReport(
        source=source,
        nb_res=nb_res,
        selected=len(rows),
        kept=len(out_jobs),
        dropped={r: len(ids) for r, ids in dropped_ids.items()},
        dropped_ids={r: tuple(ids) for r, ids in dropped_ids.items()},
        without_walltime=without_walltime,
        walltime_raised=raised,
        first_submit_time=None if t0 is None else float(t0),
    )
    return workload, report
