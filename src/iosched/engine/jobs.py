"""The engine's state of one job (Batsim's ``src/jobs.hpp``).

A :class:`Job` goes ``None`` (known, not yet submitted) -> :data:`SUBMITTED`
-> :data:`SCHEDULED` (EXECUTE_JOB received, start pending: the message's
latency) -> :data:`RUNNING` -> one of :data:`iosched.batsim.jobs.FINAL_STATES`
(or from SUBMITTED straight to REJECTED or to the state CHANGE_JOB_STATE
sets). ``gone``: the scheduler was told of its end; ``kill_requested``: a
KILL_JOB named it. ``token`` counts starts, so that a timer or a completion report of an
earlier run of the job object is recognised as stale.
"""

from __future__ import annotations

__all__ = ["SUBMITTED", "SCHEDULED", "RUNNING", "Job", "DynamicSpec", "intervals_of", "mask_of"]

SUBMITTED = "SUBMITTED"
SCHEDULED = "SCHEDULED"  # EXECUTE_JOB received, start pending (latency)
RUNNING = "RUNNING"


def intervals_of(alloc_str: str) -> tuple:
    """The intervals of a canonical interval-set string (what
    ``_parse_alloc`` returns: ``"0-3 7"``) as ``((0, 3), (7, 7))``; ``()``
    for ``""``. Raises ValueError on a string that is not one."""
    if not alloc_str:
        return ()
    out = []
    for part in alloc_str.split(" "):
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi) if hi else int(lo)))
    return tuple(out)


def mask_of(intervals) -> int:
    """int bit mask of ``(first, last)`` id intervals (bit ``i``: id ``i``)."""
    m = 0
    for lo, hi in intervals:
        m |= ((1 << (hi - lo + 1)) - 1) << lo
    return m


class Job:
    """Engine-side state of one job (static or dynamically registered)."""

    __slots__ = (
        "id", "workload", "local_id", "subtime", "res", "profile", "walltime", "json",
        "state", "start", "finish", "alloc", "alloc_str", "alloc_itv", "metadata", "return_code",
        "actor", "token", "steps", "step_index", "step_started", "exec", "first_host", "step_min",
        "static", "exec_seq", "gone", "kill_requested", "load",
    )

    def __init__(self, spec, static=True):
        self.id = spec.id
        self.workload = spec.workload
        self.local_id = spec.local_id
        self.subtime = spec.subtime
        self.res = spec.res
        self.profile = spec.profile
        self.walltime = spec.walltime
        self.json = spec.json
        self.state = None
        self.start = None
        self.finish = None
        self.alloc = None
        self.alloc_str = ""
        self.alloc_itv = ()  # the allocation as (first, last) id intervals, ascending
        self.metadata = ""
        self.return_code = None
        self.actor = None
        self.token = 0
        self.steps = None
        self.step_index = 0
        self.step_started = 0.0
        self.exec = None
        self.exec_seq = 0  # creation order of its current SimGrid task (simultaneous ends)
        self.load = None  # ((LinkOverload, transfers), ...) its current task adds (--link-overload)
        self.step_min = None
        self.first_host = 0
        self.static = static
        # Batsim 4.2.1 deletes a job once the message telling its end (or
        # after its rejection) is sent; a later KILL_JOB or SET_JOB_METADATA
        # naming it aborts (see ProtocolMixin._mark_gone)
        self.gone = False
        self.kill_requested = False  # a KILL_JOB was received for it


class DynamicSpec:
    """Minimal job description for dynamically registered jobs (the fields
    of :class:`iosched.engine.workload.JobSpec` that :class:`Job` reads)."""

    def __init__(self, full_id, workload, local_id, subtime, res, profile, walltime, js):
        self.id, self.workload, self.local_id = full_id, workload, local_id
        self.subtime, self.res, self.profile = subtime, res, profile
        self.walltime, self.json = walltime, js
