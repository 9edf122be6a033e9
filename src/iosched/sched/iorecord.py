"""The I/O record: what a run's I/O did, as the scheduler knows it.

Batsim 4.2.1's outputs say when each job started and ended, nothing of the
bytes it moved. The scheduler knows more: the core's executor
(:mod:`iosched.sched.executor`) knows each phase's bytes and tiers (the
:class:`~iosched.sched.executor.Flow` tuples :func:`iosched.sched.ioplan.plan_for`
attaches) and, for a phase run as its own dynamic job, when it was due,
started and ended; the allocation says which burst-buffer bytes a job holds
and where each input is read from; a family adds what it reserves of the
I/O bandwidth (:meth:`PybatsimScheduler.io_holds
<iosched.sched.adapter.PybatsimScheduler.io_holds>`). :class:`IORecorder`
keeps it and writes three CSV files into the run's folder at the end of the
simulation (scheduler option ``io_record``, :data:`iosched.sched.options.CORE_OPTIONS`;
``iosched run`` passes its output folder). Columns and units:
``docs/outputs.md``; times in s, sizes in bytes, rates in bytes/s.

* :data:`PHASES_FILE` -- one row per flow of a started phase (or static
  job): ``job_id, phase, kind, src, dst, node, bytes, ready, start, end,
  state, timing``. ``timing`` is ``phase`` when ``start``/``end`` are the
  phase's own (its dynamic job's), ``job`` when the bytes move somewhere
  inside the job's ``[start, end]`` at times the scheduler is not told (a
  static job's own profile, the composed encoding's one job).
* :data:`HOLDS_FILE` -- what a started job holds from its start to its end:
  ``job_id, kind, node, amount, unit, capacity, start, end``
  (burst-buffer bytes per burst-buffer node; a family's share of the I/O
  bandwidth).
* :data:`INPUTS_FILE` -- where each input of a started job is read from:
  ``job_id, file, bytes, source, node, time`` with ``source`` one of
  :data:`SOURCES`.

Recording reads the scheduler's state and never changes a decision (the
``out_jobs.csv`` of a run is the same byte for byte with and without it:
``tests/test_iorecord.py``). Rows are in the order of the events, the
numbers written with :func:`fmt` (the same run gives the same bytes).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Mapping, Optional

from iosched.errors import InputError
from iosched.sched.bbrun import bb_held
from iosched.sched.executor import BB_TIER, At
from iosched.sched.ioplan import (BURST_BUFFER, CACHED, STATIC, input_sources, part_of, pfs_of,
                                  static_flows)
from iosched.sched.iojob import PFS

__all__ = ["IORecorder", "PHASES_FILE", "HOLDS_FILE", "INPUTS_FILE", "PHASE_COLUMNS",
           "HOLD_COLUMNS", "INPUT_COLUMNS", "SOURCES", "BANDWIDTH", "TIMING_PHASE", "TIMING_JOB",
           "fmt"]

#: File of the flows (bytes moved) of every started phase or static job.
PHASES_FILE = "io_phases.csv"
#: File of what started jobs hold (burst-buffer bytes, bandwidth shares).
HOLDS_FILE = "io_holds.csv"
#: File of where every input of a started job is read from.
INPUTS_FILE = "io_inputs.csv"

PHASE_COLUMNS = ("job_id", "phase", "kind", "src", "dst", "node", "bytes", "ready", "start", "end",
                 "state", "timing")
HOLD_COLUMNS = ("job_id", "kind", "node", "amount", "unit", "capacity", "start", "end")
INPUT_COLUMNS = ("job_id", "file", "bytes", "source", "node", "time")

#: ``timing``: start and end are the phase's own (its dynamic job's).
TIMING_PHASE = "phase"
#: ``timing``: the bytes move inside the job's [start, end], when is not known.
TIMING_JOB = "job"
#: Hold kind: a share of the I/O bandwidth (bytes/s) a family reserves for a
#: running job (list/pack: its average bandwidth against B; pfsbw: its
#: estimated throughput against the limit).
BANDWIDTH = "io_bandwidth"
#: ``source`` of an input: read from the PFS, from a copy on one of the
#: job's own nodes' disks, from a copy on another node's disk, already in the
#: node's memory (no read), being loaded by another job (no read of its own).
SOURCES = ("pfs", "local", "remote", "cached", "loading")


def fmt(x) -> str:
    """A number as the record writes it: empty for None, an int when whole
    (below 2**53), else Python's shortest round-trip ``repr``."""
    if x is None:
        return ""
    x = float(x)
    if x.is_integer() and abs(x) < 2.0 ** 53:
        return str(int(x))
    return repr(x)


class IORecorder:
    """Keeps a run's I/O record and writes it (module documentation).

    :param folder: the run's output folder (created when written).

    The adapter calls :meth:`begin` (the machine), :meth:`job_started`,
    :meth:`job_ended`; the executor :meth:`phase_ready`,
    :meth:`phase_started`, :meth:`phase_ended`; :meth:`write` at the end.
    """

    def __init__(self, folder):
        self.folder = Path(os.fspath(folder))
        self.machine = None
        self.phases: list = []       # rows of PHASE_COLUMNS
        self.holds: list = []        # rows of HOLD_COLUMNS
        self.inputs: list = []       # rows of INPUT_COLUMNS
        self._ready: dict = {}       # (job id, position) -> time due
        self._open: dict = {}        # (job id, position) -> rows of the running phase
        self._job_rows: dict = {}    # job id -> rows ended with the job (holds, static flows)

    def begin(self, machine) -> None:
        """SIMULATION_BEGINS: the :class:`~iosched.sched.machine.Machine`
        (storage host names, nodes)."""
        self.machine = machine

    def _node(self, storage: Optional[int]) -> str:
        if storage is None or self.machine is None:
            return ""
        return self.machine.storage.get(storage, str(storage))

    # ------------------------------------------------------------ jobs
    def job_started(self, running, io, allocation, plan, holds=(), capacity=None) -> None:
        """A job started at ``running.start`` (s) on ``allocation`` by
        ``plan``: its inputs' sources, its burst-buffer holds, the
        family's ``holds`` (``(kind, node, amount, unit)`` tuples), and,
        for a static job, the bytes its I/O model declares
        (:func:`iosched.sched.ioplan.static_flows`, timing ``job``).

        :param capacity: ``capacity(kind) -> total or None`` (the family's
            :meth:`~iosched.sched.adapter.PybatsimScheduler.io_capacity`).
        """
        sid, now = running.job.id, running.start
        ended = self._job_rows.setdefault(sid, [])
        part = part_of(io)
        storage = self.machine.storage if self.machine is not None else {}
        if io.inputs:
            self._inputs(sid, io, allocation, now)
        if part == BURST_BUFFER and isinstance(allocation.data, Mapping):
            held = bb_held(allocation.data, float(io.burst_buffer.bytes))
            holds = (*((BB_TIER, self._node(s), b, "bytes") for s, b in held.items()), *holds)
        for kind, node, amount, unit in holds:
            row = [sid, kind, node, amount, unit, capacity(kind) if capacity is not None else None,
                   now, None]
            self.holds.append(row)
            ended.append(row)
        if part == STATIC:
            alloc = plan.allocation if plan is not None and plan.allocation is not None else allocation
            for f in static_flows(io, alloc, storage, pfs_of(storage)):
                row = [sid, None, f.kind, f.src, f.dst, self._node(f.storage), f.bytes, now, now,
                       None, None, TIMING_JOB]
                self.phases.append(row)
                ended.append(row)

    def _inputs(self, sid, io, allocation, now) -> None:
        sources = input_sources(io, allocation)
        mine = None
        for f in io.inputs:
            src = sources[f.file]
            node = ""
            if isinstance(src, At):
                kind = "loading"
            elif src == CACHED:
                kind = "cached"
            elif src == PFS:
                kind = "pfs"
            else:
                if mine is None:
                    node_of = self.machine.node_of if self.machine is not None else {}
                    mine = {node_of[r].name for r in allocation.resources if r in node_of}
                node = str(src)
                kind = "local" if node in mine else "remote"
            self.inputs.append([sid, f.file, float(f.bytes), kind, node, now])

    def job_ended(self, sid: str, now: float, state: str) -> None:
        """The job ``sid`` ended at ``now`` (s) in ``state``: its holds and
        static flows end."""
        for row in self._job_rows.pop(sid, ()):
            if len(row) == len(HOLD_COLUMNS):
                row[-1] = now
            else:
                row[9], row[10] = now, state

    # ---------------------------------------------------------- phases
    def phase_ready(self, sid: str, pos: int, now: float) -> None:
        """Phase ``pos`` of job ``sid`` is due at ``now`` (s): it starts
        now or when its gate opens."""
        self._ready[(sid, pos)] = now

    def phase_started(self, sid: str, pos: int, k, phase, now: float) -> None:
        """Phase ``pos`` (dynamic job index ``k``; None: the composed
        encoding's one job, timing ``job``) of job ``sid`` started at
        ``now`` (s); ``phase`` is the :class:`~iosched.sched.executor.Phase`."""
        ready = self._ready.pop((sid, pos), now)
        timing = TIMING_JOB if k is None else TIMING_PHASE
        rows = []
        for f in phase.flows:
            row = [sid, k, f.kind, f.src, f.dst, self._node(f.storage), f.bytes, ready, now, None,
                   None, timing]
            self.phases.append(row)
            rows.append(row)
        self._open[(sid, pos)] = rows

    def phase_ended(self, sid: str, pos: int, now: float, state: str) -> None:
        """Phase ``pos`` of job ``sid`` ended at ``now`` (s) in ``state``
        (Batsim's final state of its dynamic job)."""
        for row in self._open.pop((sid, pos), ()):
            row[9], row[10] = now, state

    # ----------------------------------------------------------- write
    def write(self) -> list:
        """Write the three files into the folder (each through a temporary
        file renamed into place); returns their paths.

        :raises InputError: the folder cannot be created or written.
        """
        out = []
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for name, columns, rows in ((PHASES_FILE, PHASE_COLUMNS, self.phases),
                                        (HOLDS_FILE, HOLD_COLUMNS, self.holds),
                                        (INPUTS_FILE, INPUT_COLUMNS, self.inputs)):
                path = self.folder / name
                tmp = path.with_name(path.name + ".tmp")
                with open(tmp, "w", newline="", encoding="utf-8") as f:
                    w = csv.writer(f, lineterminator="\n")
                    w.writerow(columns)
                    for row in rows:
                        w.writerow([fmt(c) if isinstance(c, float) or (c is None) else c
                                    for c in row])
                os.replace(tmp, path)
                out.append(path)
        except OSError as exc:
            raise InputError(f"option io_record: cannot write the I/O record in {self.folder}: "
                             f"{exc.strerror or exc}") from None
        return out
