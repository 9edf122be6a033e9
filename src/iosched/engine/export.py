"""The engine's output files (Batsim's ``src/export.cpp``):
``PREFIX_jobs.csv``, ``PREFIX_schedule.csv``, ``PREFIX_machine_states.csv``.

Columns and number formats are Batsim 4.2.1's (:mod:`iosched.batsim.outputs`;
see ``docs/output-jobs.rst``, ``docs/output-schedule.rst`` and the files in
``shared/golden``): times in seconds with 6 decimals, one row per job in the
order in which jobs reached their final state. Rejected jobs get a row with
``final_state`` REJECTED, ``success`` 0 and empty start/finish fields.

:class:`ExportMixin` is the part of :class:`iosched.engine.server.Simulation`
that records the rows while the simulation runs (one per job, one per change
of the machines' states) and writes the files at its end; the ``write_*``
functions write the files, each atomically (a temporary file renamed over
the final name: a killed engine never leaves a torn ``_jobs.csv``).
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter

import numpy as np

from iosched.batsim.job_metrics import runtime, slowdown, turnaround, waiting_time
from iosched.batsim.jobs import (
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    NO_WALLTIME,
    REJECTED,
)
from iosched.batsim.outputs import (
    BATSIM_VERSION,
    JOBS_COLUMNS,
    JOBS_SUFFIX,
    MACHINE_STATES_COLUMNS,
    MACHINE_STATES_SUFFIX,
    SCHEDULE_COLUMNS,
    SCHEDULE_SUFFIX,
    F6,
    f6,
    g,
)
from iosched.errors import InputError

__all__ = ["ExportMixin", "JobRow", "check_outputs_writable", "prepare_prefix", "write_jobs", "write_schedule",
           "write_machine_states"]

#: Machine entries (sum of the pending intervals' widths) applied at once to
#: the per-machine arrays (:meth:`ExportMixin._machine_totals`): numpy calls
#: per batch, not per job, in bounded memory.
_MACHINE_BATCH = 1 << 16


def prepare_prefix(prefix: str) -> None:
    """Create the directory part of an output prefix if it does not exist, and
    check that the output files can be written there (before the simulation
    runs, not after).

    :raises OSError: the directory cannot be created.
    :raises InputError: an output path is a directory, or the directory is
        not writable (the message names the path).
    """
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    check_outputs_writable(prefix)


def check_outputs_writable(prefix: str) -> None:
    """Check that ``PREFIX_jobs.csv`` and its siblings can be (re)placed.

    :raises InputError: an output path exists and is not a regular file, or
        its directory is missing or not writable.
    """
    d = os.path.dirname(prefix) or "."
    for suffix in (JOBS_SUFFIX, SCHEDULE_SUFFIX, MACHINE_STATES_SUFFIX):
        path = f"{prefix}{suffix}"
        if os.path.lexists(path) and not os.path.isfile(path):
            raise InputError(f"{path}: output path exists and is not a regular file")
    if not os.path.isdir(d):
        raise InputError(f"{d}: output directory does not exist")
    if not os.access(d, os.W_OK | os.X_OK):
        raise InputError(f"{d}: output directory is not writable")


@contextlib.contextmanager
def _atomic(path: str):
    """Open a temporary file next to *path* for writing; rename it to *path*
    when the block ends without error (a killed writer leaves no file that
    looks finished: only ``.PATH.tmp-PID``)."""
    d, base = os.path.split(path)
    tmp = os.path.join(d, f".{base}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", newline="") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class JobRow:
    """One job's row of ``_jobs.csv``, kept as numbers until the file is
    written (:func:`write_jobs` formats the whole line at once).

    Attributes: ``job_id``, ``workload``, ``profile``, ``final_state``,
    ``allocated`` (Batsim's interval text; strings), ``metadata`` (string,
    written quoted), ``res`` (int), ``submit``, ``requested`` (walltime,
    :data:`~iosched.batsim.jobs.NO_WALLTIME` without one) and, for a job
    that ran (``start`` not None), ``start``, ``runtime``, ``finish``,
    ``wait``, ``turnaround`` (s) and ``stretch`` (turnaround over runtime,
    0 for a zero runtime as Batsim writes it); ``slowdown`` is the stretch
    for ``_schedule.csv``'s means, None for a zero runtime (not averaged).
    Batsim 4.2.1's columns: ``docs/output-jobs.rst``, src/export.cpp.
    """

    __slots__ = ("job_id", "workload", "profile", "submit", "res", "requested", "final_state",
                 "start", "runtime", "finish", "wait", "turnaround", "stretch", "allocated",
                 "metadata", "slowdown")

    def __init__(self, job_id, workload, profile, submit, res, requested, final_state,
                 start=None, runtime=None, finish=None, wait=None, turnaround=None,
                 stretch=None, allocated="", metadata="", slowdown=None):
        self.job_id, self.workload, self.profile = job_id, workload, profile
        self.submit, self.res, self.requested, self.final_state = submit, res, requested, final_state
        self.start, self.runtime, self.finish = start, runtime, finish
        self.wait, self.turnaround, self.stretch = wait, turnaround, stretch
        self.allocated, self.metadata, self.slowdown = allocated, metadata, slowdown

    @property
    def success(self) -> str:
        """The ``success`` field: ``"1"`` for COMPLETED_SUCCESSFULLY, else ``"0"``."""
        return "1" if self.final_state == COMPLETED_SUCCESSFULLY else "0"

    def fields(self) -> list[str]:
        """The row's :data:`JOBS_COLUMNS` fields as Batsim writes them
        (numbers by :func:`~iosched.batsim.outputs.f6`), unquoted."""
        ran = self.start is not None
        times = [f6(x) if ran else "" for x in (self.start, self.runtime, self.finish, self.wait,
                                                self.turnaround, self.stretch)]
        return [self.job_id, self.workload, self.profile, f6(self.submit), str(self.res),
                f6(self.requested), self.success, self.final_state, *times,
                self.allocated if ran else "", f6(-1.0), self.metadata]


#: ``_jobs.csv`` line of a job that ran, up to its metadata, and of one that
#: did not (rejected): the numbers as :func:`~iosched.batsim.outputs.f6`
#: writes them, in one ``%`` formatting per line (:func:`write_jobs`)
_RAN_LINE = "%s,%s,%s," + F6 + ",%s," + F6 + ",%s,%s," + ",".join([F6] * 6) + ",%s," + F6
_NOT_RAN_LINE = "%s,%s,%s," + F6 + ",%s," + F6 + ",%s,%s,,,,,,,," + F6


def write_jobs(prefix: str, rows: list[JobRow]) -> str:
    """Write ``PREFIX_jobs.csv``: the header, then one line per
    :class:`JobRow` in order; a string field holding a comma, a quote or a
    line break is quoted as CSV quotes it, the metadata always (as Batsim
    does).

    :returns: the path written.
    :raises OSError: the file cannot be written (no partial file is left).
    """
    path = f"{prefix}{JOBS_SUFFIX}"
    ncols = len(JOBS_COLUMNS) - 1
    with _atomic(path) as f:
        f.write(",".join(JOBS_COLUMNS) + "\n")
        lines = []
        for r in rows:
            if r.start is not None:
                line = _RAN_LINE % (r.job_id, r.workload, r.profile, r.submit, r.res, r.requested,
                                    r.success, r.final_state, r.start, r.runtime, r.finish, r.wait,
                                    r.turnaround, r.stretch, r.allocated, -1.0)
            else:
                line = _NOT_RAN_LINE % (r.job_id, r.workload, r.profile, r.submit, r.res,
                                        r.requested, r.success, r.final_state, -1.0)
            if line.count(",") != ncols - 1 or '"' in line or "\n" in line:
                line = ",".join([_csv_field(v) for v in r.fields()[:-1]])
            md = r.metadata.replace('"', '""')
            lines.append(f'{line},"{md}"\n')
        f.write("".join(lines))
    return path


def _csv_field(v: str) -> str:
    if any(c in v for c in ',"\n'):
        return '"' + v.replace('"', '""') + '"'
    return v


def write_schedule(prefix: str, values: dict) -> str:
    """Write ``PREFIX_schedule.csv`` (one header line, one value line)."""
    path = f"{prefix}{SCHEDULE_SUFFIX}"
    with _atomic(path) as f:
        f.write(",".join(SCHEDULE_COLUMNS) + "\n")
        f.write(",".join(str(values[c]) for c in SCHEDULE_COLUMNS) + "\n")
    return path


def write_machine_states(prefix: str, rows: list[tuple]) -> str:
    """Write ``PREFIX_machine_states.csv`` as Batsim 4.2.1 does
    (``MachineStateTracer``, src/export.cpp): the 6-column header, then one
    row per job start and per job end, in the order they happened (several
    rows may share a time), ``%g`` time in s (:func:`iosched.batsim.outputs.g`)
    then the number of machines sleeping, switching on, switching off (always
    0: no energy model), idle and computing. Machines are every host Batsim
    manages (compute and storage, not the master).

    :param rows: ``(t, nb_idle, nb_computing)`` tuples.
    :returns: the path written.
    """
    path = f"{prefix}{MACHINE_STATES_SUFFIX}"
    with _atomic(path) as f:
        f.write(",".join(MACHINE_STATES_COLUMNS) + "\n")
        f.writelines(f"{g(t)},0,0,0,{idle},{computing}\n" for t, idle, computing in rows)
    return path


class ExportMixin:
    """The output rows of a :class:`~iosched.engine.server.Simulation`.

    Owns ``rows`` (one dict per job that reached its final state: the
    ``_jobs.csv`` fields as strings, plus numbers for ``_schedule.csv`` under
    keys starting with ``_``) and ``ms_rows`` (``(t, nb_idle,
    nb_computing)``). Reads ``cfg``, ``nb_res``, ``busy_mask`` (bit mask of
    the compute resources in use), ``sched_wall`` and ``wall``.
    """

    def _init_export(self):
        self.rows: list[dict] = []
        self.ms_rows: list[tuple] = []
        # per machine (numpy arrays indexed by resource id, made at the first
        # flush): end of its last job (-1: none), time spent computing (for
        # time_idle), and the rank of the first job that ended on it (-1:
        # none), which gives the order in which the per-machine idle times
        # are summed; each ended job's allocation intervals wait in
        # m_pending (lo, hi, finish, runtime, rank) and are applied in
        # batches (_machine_totals), in the order the jobs ended
        self.m_last = self.m_comp = self.m_first = None
        self.m_rank = 0
        self.m_pending: list[tuple] = []
        self.m_pending_width = 0

    def _machine_state(self, t):
        if not self.cfg.machine_state_tracing:
            return
        computing = self.busy_mask.bit_count()
        self.ms_rows.append((t, self.nb_res - computing, computing))

    def _row(self, j):
        """Record the row of a job that reached its final state (a
        :class:`JobRow`; the per-machine times of one that ran)."""
        wt = j.walltime if j.walltime is not None else NO_WALLTIME
        if j.start is None or j.finish is None:
            self.rows.append(JobRow(j.local_id, j.workload, j.profile, j.subtime, j.res, wt, j.state,
                                    metadata=j.metadata))
            return
        ex = runtime(j.start, j.finish)
        tat = turnaround(j.subtime, j.finish)
        rank = self.m_rank
        self.m_rank += 1
        pending, finish = self.m_pending, j.finish
        for lo, hi in j.alloc_itv:
            pending.append((lo, hi, finish, ex, rank))
            self.m_pending_width += hi - lo + 1
        if self.m_pending_width >= _MACHINE_BATCH:
            self._machine_totals()
        slow = slowdown(tat, ex, undefined=None)
        self.rows.append(JobRow(j.local_id, j.workload, j.profile, j.subtime, j.res, wt, j.state,
                                j.start, ex, finish, waiting_time(j.subtime, j.start), tat,
                                0.0 if slow is None else slow, j.alloc_str, j.metadata, slow))

    def _machine_totals(self):
        """Apply the pending allocation intervals to the per-machine arrays
        and return ``(m_last, m_comp, m_first)`` (None before any job ran).

        Each interval ``[lo, hi]`` of a job of rank ``k`` that ended at
        ``finish`` after ``runtime`` s: ``m_last[lo..hi] = max(., finish)``,
        ``m_comp[lo..hi] += runtime``, ``m_first[lo..hi]`` = ``k`` where
        still -1. ``np.add.at`` adds unbuffered, in the order of its
        indices, so each machine's sum takes the same float additions in
        the same order (the jobs' end order) as one interval at a time.
        """
        if self.m_pending:
            if self.m_last is None:
                self.m_last = np.full(self.nb_res, -1.0)
                self.m_comp = np.zeros(self.nb_res)
                self.m_first = np.full(self.nb_res, -1, dtype=np.int64)
            lo, hi, finish, ran, rank = (np.array(c) for c in zip(*self.m_pending))
            self.m_pending, self.m_pending_width = [], 0
            n = hi - lo + 1
            ends = np.cumsum(n)
            idx = np.arange(int(ends[-1])) + np.repeat(lo - (ends - n), n)
            np.maximum.at(self.m_last, idx, np.repeat(finish.astype(float), n))
            np.add.at(self.m_comp, idx, np.repeat(ran.astype(float), n))
            # ranks rise along idx: a machine's first index holds its first job
            seen, pos = np.unique(idx, return_index=True)
            unset = self.m_first[seen] < 0
            self.m_first[seen[unset]] = np.repeat(rank, n)[pos[unset]]
        return self.m_last, self.m_comp, self.m_first

    def _restate_row(self, j, state):
        """Change the recorded final state of a job that already ended
        (CHANGE_JOB_STATE)."""
        for r in self.rows:
            if r.job_id == j.local_id and r.workload == j.workload:
                r.final_state = state

    def _write_outputs(self) -> float:
        """Write the three output files; returns the makespan (s)."""
        prefix = self.cfg.export_prefix
        write_jobs(prefix, self.rows)
        fin = [r for r in self.rows if r.start is not None]
        waits = [r.wait for r in fin]
        tats = [r.turnaround for r in fin]
        slows = [r.slowdown for r in fin if r.slowdown is not None]
        n = len(self.rows)
        states = Counter(r.final_state for r in self.rows)
        succ = states[COMPLETED_SUCCESSFULLY]
        killed = states[COMPLETED_WALLTIME_REACHED] + states[COMPLETED_KILLED]
        rej = states[REJECTED]
        makespan = max((r.finish for r in fin), default=0.0)
        t_comp, t_idle = self._state_times(makespan)
        mean = (lambda xs: sum(xs) / len(xs) if xs else 0.0)
        write_schedule(prefix, {
            "batsim_version": BATSIM_VERSION,
            "consumed_joules": f6(0.0),
            "makespan": f6(makespan),
            "max_slowdown": f6(max(slows, default=0.0)),
            "max_turnaround_time": f6(max(tats, default=0.0)),
            "max_waiting_time": f6(max(waits, default=0.0)),
            "mean_slowdown": f6(mean(slows)),
            "mean_turnaround_time": f6(mean(tats)),
            "mean_waiting_time": f6(mean(waits)),
            "nb_computing_machines": self.nb_res,
            "nb_grouped_switches": 0,
            "nb_jobs": n,
            "nb_jobs_finished": n - rej,
            "nb_jobs_killed": killed,
            "nb_jobs_rejected": rej,
            "nb_jobs_success": succ,
            "nb_machine_switches": 0,
            "scheduling_time": f6(self.sched_wall),
            "simulation_time": f6(self.wall),
            "success_rate": f6(succ / n if n else 0.0),
            "time_computing": f6(t_comp),
            "time_idle": f6(t_idle),
            "time_sleeping": f6(0.0),
            "time_switching_off": f6(0.0),
            "time_switching_on": f6(0.0),
            "time_unavailable": f6(0.0),
        })
        if self.cfg.machine_state_tracing:
            write_machine_states(prefix, self.ms_rows)
        return makespan

    def _ms_rows_from_zero(self):
        """``ms_rows``, starting with every machine idle at t=0 if they do not
        start at 0."""
        if self.ms_rows and self.ms_rows[0][0] == 0.0:
            return self.ms_rows
        return [(0.0, self.nb_res, 0)] + self.ms_rows

    def _state_times(self, end):
        """``(time_computing, time_idle)`` in machine-seconds.

        Batsim 4.2.1 adds the time a machine spent in a state when the
        machine leaves it (``Machine::update_machine_state``,
        src/machines.cpp) and sums these per-machine counters in
        ``_schedule.csv`` (src/export.cpp): a machine's idle time ends at
        the end of its last job (its final idle period, up to the
        makespan, is never closed) and a machine that ran no job has none.
        Checked on g2, g3, g6 and g7 (within 2e-5 of the CSV's rounded
        times).
        """
        rows = self._ms_rows_from_zero()
        comp = 0.0
        for (t, _, c), nxt in zip(rows, rows[1:] + [(end, 0, 0)]):
            comp += c * max(0.0, min(nxt[0], end) - t)
        m_last, m_comp, m_first = self._machine_totals()
        if m_last is None:
            return comp, 0
        # machines in the order their first job ended, by id within a job
        # (the order of Batsim's machines does not matter; this one keeps
        # the sum's rounding what iosched always wrote)
        seen = np.flatnonzero(m_first >= 0)
        order = seen[np.argsort(m_first[seen], kind="stable")].tolist()
        last, mcomp = m_last.tolist(), m_comp.tolist()
        idle = sum(max(0.0, last[r] - mcomp[r]) for r in order)
        return comp, idle
