"""The executor: how a started job runs on Batsim, for every family.

The scheduler core decides *where* and *when* a job starts (a
:class:`~iosched.sched.job.RunningJob` and its
:class:`~iosched.sched.placer.Allocation`); what the job does once started
is a :class:`Plan`, derived from its I/O model and its allocation by
:func:`iosched.sched.ioplan.plan_for`; the :class:`Executor` turns both
into Batsim decisions (pybatsim calls) and tells the core when the job is
over. Two kinds of plans:

* **static** (:meth:`Plan.static`, or no plan at all): EXECUTE_JOB of the
  workload job itself on the allocation's resources, with the allocation's
  ``mapping`` and ``storage_mapping`` when it has them (sent at the end of
  the scheduling pass, all of the pass's jobs in one EXECUTE_JOB batch);
* **phases**: the workload job ``w0!J`` is rejected (REJECT_JOB) and run as
  one dynamic job per :class:`Phase`, in order (Batsim's
  ``--enable-dynamic-jobs``, without ``--acknowledge-dynamic-jobs``): phase
  ``k`` is the job ``bb!J:k`` of the workload
  :data:`~iosched.batsim.dynamic.RUN_WORKLOAD` with its own profile
  ``J:k`` (or ``J:k/n``, :attr:`Plan.counted`), registered once when the
  phase starts (the real Batsim 4.2.1 requires it), on the phase's own
  resources and ``storage_mapping``. The next phase starts when the
  previous one completed successfully, or, for a gated phase, when its
  gate opens: an :class:`At` time (a CALL_ME_LATER, then the first
  scheduling pass at or after it) or a :class:`Gate` (an arbiter that
  grants the phase, maybe later, when another phase releases it). The job
  ends -- the core frees its resources -- when its last phase ended or a
  phase did not complete successfully (with that phase's final state).

  The embedded-only ``composed`` plan (:meth:`Plan.composed_of`) runs the
  whole job as one dynamic job ``bb!J`` of a composed profile ``J``.

Walltimes (:attr:`Plan.rule`, each family's arithmetic kept as it was so
that schedules do not change): :data:`DEADLINE` (each phase gets ``(start
+ walltime) - now``; a phase that completes at or after the deadline while
phases remain ends the job as ``COMPLETED_WALLTIME_REACHED``; the
burst-buffer family), :data:`LEFT` (each phase gets ``max(walltime - (now
- start), MIN_LEFT)``, a phase marked :attr:`Phase.whole_walltime` the
job's walltime as given; the locality family), :data:`UNBOUNDED` (no
walltime, -1; the list/pack family).

Once no static job is left to submit and nothing waits, runs or waits for
a gate, a family that runs phases (``dynamic``), or any scheduler when the
engine registers dynamic jobs (``--enable-dynamic-jobs``), sends NOTIFY
``registration_finished`` once, so that Batsim can end the simulation.

The naming of dynamic jobs and profiles is :mod:`iosched.batsim.dynamic`'s.
Sources: Batsim 4.2.1's protocol (dynamic jobs: REGISTER_PROFILE,
REGISTER_JOB, NOTIFY registration_finished; EXECUTE_JOB ``mapping`` and
``storage_mapping``).
"""

from __future__ import annotations

import heapq
from typing import Iterable, NamedTuple, Optional, Protocol

from iosched.batsim.dynamic import (RUN_WORKLOAD, phase_job_id, phase_profile_name, run_job_id)
from iosched.batsim.jobs import (COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED, NO_WALLTIME,
                                 local_id)

__all__ = ["Executor", "Plan", "Phase", "Flow", "At", "Gate", "Run", "DEADLINE", "LEFT", "UNBOUNDED",
           "RULES", "MIN_LEFT", "TIERS", "PFS_TIER", "BB_TIER", "DISK_TIER", "COMPUTE_TIER",
           "state_name"]

#: Walltime rule: each phase gets ``(start + walltime) - now`` (s), the
#: job ends as ``COMPLETED_WALLTIME_REACHED`` when a phase completes at or
#: after ``start + walltime`` with phases left (burst-buffer family).
DEADLINE = "deadline"
#: Walltime rule: each phase gets ``max(walltime - (now - start),``
#: :data:`MIN_LEFT` ``)`` (s), a :attr:`Phase.whole_walltime` phase the
#: job's walltime as given (locality family).
LEFT = "left"
#: Walltime rule: no phase has a walltime (-1) (list/pack family).
UNBOUNDED = "none"
#: The walltime rules.
RULES = (DEADLINE, LEFT, UNBOUNDED)
#: Smallest walltime (s) :data:`LEFT` gives a phase.
MIN_LEFT = 1e-6
#: Tolerance (s) of a time gate: a phase whose :class:`At` time is at most
#: this much after a pass starts in that pass.
AT_TOLERANCE = 1e-9

INF = float("inf")

#: Storage tier: the parallel file system.
PFS_TIER = "pfs"
#: Storage tier: a burst-buffer (storage) node.
BB_TIER = "burst_buffer"
#: Storage tier: a compute node's local disk (``<node>_disk``).
DISK_TIER = "local_disk"
#: Not storage: the compute nodes themselves (their memory; a flow between
#: two compute nodes is network traffic).
COMPUTE_TIER = "compute"
#: The tiers a :class:`Flow` names, in the order tables list them.
TIERS = (PFS_TIER, BB_TIER, DISK_TIER, COMPUTE_TIER)


def state_name(batsim_job) -> str:
    """The final state of a pybatsim job as Batsim's string
    (``COMPLETED_SUCCESSFULLY``...)."""
    state = getattr(batsim_job, "job_state", None)
    return getattr(state, "name", str(state if state is not None else ""))


class Gate(Protocol):
    """An arbiter of gated phases (e.g. :class:`iosched.listpack.arbiter.IOArbiter`).

    Keys are ``(static job id, phase position)`` tuples.
    """

    def request(self, key) -> Iterable:
        """Phase ``key`` is ready to start; returns the keys that start now."""

    def release(self, key) -> Iterable:
        """Phase ``key`` ended; returns the keys that start now."""


class At:
    """Time gate: the phase starts at ``time`` (s) -- a CALL_ME_LATER is
    asked for it; the phase starts in the first scheduling pass at or after
    it (within :data:`AT_TOLERANCE`), if its job still runs."""

    __slots__ = ("time",)

    def __init__(self, time: float):
        self.time = time

    def __repr__(self):
        return f"At({self.time!r})"


class Flow(NamedTuple):
    """Bytes a phase (or a static job) moves from one tier to another: what
    the I/O record writes (:mod:`iosched.sched.iorecord`); it changes nothing
    of how the phase runs.

    ``kind`` (``"stage_in"``, ``"network"``, ``"checkpoint"``, ``"drain"``,
    ``"stage_out"``, ``"read"``, ``"write"``), ``src`` and ``dst`` (tiers,
    :data:`TIERS`), ``storage`` (resource id of the storage host involved:
    the burst-buffer node, the disk, the PFS; None between compute nodes),
    ``bytes`` (bytes, the sum over the phase's executors).
    """

    kind: str
    src: str
    dst: str
    storage: Optional[int]
    bytes: float


class Phase:
    """One dynamic job of a :class:`Plan`.

    :param profile: the Batsim profile (dict) the phase runs.
    :param resources: the resources it runs on (ProcSet; its ``res`` is
        their number).
    :param storage_mapping: storage label -> resource id, sent with its
        EXECUTE_JOB, or None (none sent).
    :param gate: None (starts when the previous phase completed, the first
        phase at the job's start), an :class:`At` time or a :class:`Gate`.
    :param index: ``k`` of its job ``bb!J:k`` and profile ``J:k``; None:
        its position in the plan (a family whose first phases are optional
        keeps fixed numbers: locality's compute phase is always 1).
    :param whole_walltime: under the :data:`LEFT` rule, the phase gets the
        job's walltime as given (locality's load phase, started with the job).
    :param parts: the composed encoding only: the step profiles (name ->
        dict) registered before ``profile`` (:meth:`Plan.composed_of`).
    :param flows: the bytes the phase moves (a tuple of :class:`Flow`),
        for the I/O record only (:func:`iosched.sched.ioplan.plan_for`
        fills it).
    """

    __slots__ = ("profile", "resources", "storage_mapping", "gate", "index", "whole_walltime",
                 "parts", "flows")

    def __init__(self, profile: dict, resources, storage_mapping: Optional[dict] = None, gate=None,
                 index: Optional[int] = None, whole_walltime: bool = False,
                 parts: Optional[dict] = None, flows: tuple = ()):
        self.profile, self.resources, self.storage_mapping = profile, resources, storage_mapping
        self.gate, self.index, self.whole_walltime, self.parts = gate, index, whole_walltime, parts
        self.flows = flows

    def __repr__(self):
        return (f"<Phase {self.profile.get('type')} on {self.resources} gate={self.gate!r} "
                f"index={self.index}>")


class Plan:
    """How a started job runs (see the module documentation).

    :param phases: the :class:`Phase` list, in execution order; empty: the
        static execution of the workload job itself.
    :param walltime: the job's walltime (s), or ``NO_WALLTIME`` (-1).
    :param rule: :data:`DEADLINE`, :data:`LEFT` or :data:`UNBOUNDED`.
    :param counted: phase profiles named ``J:k/n`` (``n`` phases), not ``J:k``.
    :param composed: one dynamic job ``bb!J`` of the single phase's
        (composed) profile ``J``, with the job's walltime as given.
    :param allocation: static plans: the allocation to execute on (with
        its ``mapping`` / ``storage_mapping``), None: the started job's.
    :raises ValueError: unknown rule, or a composed plan without exactly
        one phase.
    """

    __slots__ = ("phases", "walltime", "rule", "counted", "composed", "allocation")

    def __init__(self, phases=(), walltime: float = NO_WALLTIME, rule: str = UNBOUNDED,
                 counted: bool = False, composed: bool = False, allocation=None):
        if rule not in RULES:
            raise ValueError(f"unknown walltime rule {rule!r}; expected one of {', '.join(RULES)}")
        if composed and len(phases) != 1:
            raise ValueError("a composed plan has exactly one phase")
        self.phases, self.walltime, self.rule = phases, walltime, rule
        self.counted, self.composed, self.allocation = counted, composed, allocation

    @classmethod
    def static(cls, allocation=None) -> "Plan":
        """EXECUTE_JOB of the workload job on ``allocation`` (an
        :class:`~iosched.sched.placer.Allocation`; None: the started job's)."""
        return cls(allocation=allocation)

    @classmethod
    def composed_of(cls, profile: dict, parts: dict, resources, walltime: float,
                    flows: tuple = ()) -> "Plan":
        """One dynamic job of the composed ``profile`` whose steps are
        ``parts`` (name -> profile dict, registered first, in order) on
        ``resources`` (ProcSet), walltime ``walltime`` (s or -1), moving
        ``flows`` (:class:`Flow`, for the I/O record): the burst-buffer
        family's embedded-only encoding."""
        return cls((Phase(profile, resources, parts=parts, flows=flows),), walltime, DEADLINE,
                   composed=True)

    @property
    def is_static(self) -> bool:
        """Whether the workload job runs itself (no phase)."""
        return not self.phases


class Run:
    """A started job run by phases: ``id`` (static job id), ``plan``,
    ``start`` (s), ``deadline`` (s: ``start + walltime``, inf without
    walltime)."""

    __slots__ = ("id", "plan", "start", "deadline")

    def __init__(self, sid: str, plan: Plan, start: float):
        self.id, self.plan, self.start = sid, plan, start
        wt = plan.walltime
        self.deadline = INF if wt == NO_WALLTIME else start + wt

    def __repr__(self):
        return f"<Run {self.id} start={self.start} phases={len(self.plan.phases)}>"


class Executor:
    """Runs started jobs on Batsim (see the module documentation).

    :param sched: the pybatsim adapter
        (:class:`~iosched.sched.adapter.PybatsimScheduler`): its ``bs``
        (pybatsim) and ``core`` (:class:`~iosched.sched.core.Scheduler`)
        are read when needed.
    :param dynamic: whether the family runs jobs by phases (then its own
        jobs are not for the core, and registrations end with NOTIFY
        ``registration_finished``).

    Public state: ``runs`` (static id -> :class:`Run` not ended), ``ended``
    (static id -> final state of the jobs run by phases), ``phases_started``
    (number of dynamic jobs executed), ``record`` (None, or an
    :class:`~iosched.sched.iorecord.IORecorder` told when each phase is
    due, starts and ends; it reads, never decides).
    """

    def __init__(self, sched, dynamic: bool = False):
        self.sched = sched
        self.dynamic = dynamic
        self.record = None
        self.runs: dict = {}
        self.ended: dict = {}
        self.phases_started = 0
        self._by_job: dict = {}      # dynamic job id -> (Run, phase position)
        self._at: list = []          # heap of (time, static id, phase position)
        self._static: list = []      # workload jobs to EXECUTE_JOB at the end of the pass
        self._notified = False

    # ----------------------------------------------------------- start
    def accepts(self, batsim_job) -> bool:
        """Whether a submitted job is for the core: not one of the dynamic
        jobs a family that runs phases registers itself."""
        return not (self.dynamic and batsim_job.workload == RUN_WORKLOAD)

    def start(self, running, plan: Optional[Plan] = None) -> None:
        """Run ``running`` (a :class:`~iosched.sched.job.RunningJob`) by
        ``plan`` (None: static on its allocation)."""
        if plan is None or not plan.phases:
            alloc = running.allocation if plan is None or plan.allocation is None else plan.allocation
            job = running.job.batsim
            job.allocation = alloc.resources
            if alloc.mapping is not None:
                job.mapping = alloc.mapping
            if alloc.storage_mapping is not None:
                job.storage_mapping = alloc.storage_mapping
            self._static.append(job)
            return
        sid = running.job.id
        bs = self.sched.bs
        bs.reject_jobs([running.job.batsim])
        run = Run(sid, plan, running.start)
        self.runs[sid] = run
        if plan.composed:
            phase = plan.phases[0]
            name = local_id(sid)
            bs.register_profiles(RUN_WORKLOAD, {**phase.parts, name: phase.profile})
            jid = run_job_id(sid)
            rjob = bs.register_job(jid, len(phase.resources), plan.walltime, name)
            rjob.allocation = phase.resources
            bs.execute_job(rjob)
            self._by_job[jid] = (run, 0)
            self.phases_started += 1
            if self.record is not None:
                self.record.phase_ready(sid, 0, running.start)
                self.record.phase_started(sid, 0, None, phase, running.start)
            return
        self._next(run, 0, running.start)

    def flush(self) -> None:
        """EXECUTE_JOB of the static jobs started in this pass (one batch)."""
        if self._static:
            jobs, self._static = self._static, []
            self.sched.bs.execute_jobs(jobs)

    # ----------------------------------------------------------- phases
    def _next(self, run: Run, pos: int, now: float) -> None:
        """Phase ``pos`` of ``run`` is due: start it, or wait for its gate."""
        if self.record is not None:
            self.record.phase_ready(run.id, pos, now)
        gate = run.plan.phases[pos].gate
        if gate is None:
            self._execute(run, pos, now)
        elif isinstance(gate, At):
            heapq.heappush(self._at, (gate.time, run.id, pos))
            self.sched.core.wake_up_at(gate.time, self.sched.bs.time())
        else:
            for key in gate.request((run.id, pos)):
                self._grant(key, now)

    def _grant(self, key, now: float) -> None:
        sid, pos = key
        self._execute(self.runs[sid], pos, now)

    def walltime(self, run: Run, phase: Phase, now: float):
        """The walltime (s, or -1) of ``phase`` of ``run`` started at
        ``now`` (s), by the plan's rule (module documentation)."""
        plan = run.plan
        if plan.rule == DEADLINE:
            return NO_WALLTIME if plan.walltime == NO_WALLTIME else run.deadline - now
        if plan.rule == LEFT:
            if phase.whole_walltime:
                return plan.walltime
            return max(plan.walltime - (now - run.start), MIN_LEFT)
        return NO_WALLTIME

    def _execute(self, run: Run, pos: int, now: float) -> None:
        """Register phase ``pos`` of ``run`` (its profile, then its job) and execute it."""
        plan = run.plan
        phase = plan.phases[pos]
        k = pos if phase.index is None else phase.index
        sid = run.id
        pname = phase_profile_name(local_id(sid), k, len(plan.phases) if plan.counted else None)
        bs = self.sched.bs
        bs.register_profiles(RUN_WORKLOAD, {pname: phase.profile})
        jid = phase_job_id(sid, k)
        rjob = bs.register_job(jid, len(phase.resources), self.walltime(run, phase, now), pname)
        rjob.allocation = phase.resources
        if phase.storage_mapping is not None:
            rjob.storage_mapping = phase.storage_mapping
        bs.execute_job(rjob)
        self._by_job[jid] = (run, pos)
        self.phases_started += 1
        if self.record is not None:
            self.record.phase_started(sid, pos, k, phase, now)

    # ------------------------------------------------------- completion
    def completed(self, batsim_job) -> Optional[str]:
        """The core's job id that ended with this completed (or killed)
        Batsim job, or None.

        A workload job run statically: its own id. A phase: the next phase
        is started or waits for its gate (None), unless the phase did not
        complete successfully, was the last, or (:data:`DEADLINE`) ended at
        or after the job's deadline with phases left: then the job's id,
        its final state in :attr:`ended`. Other dynamic jobs: None.
        """
        entry = self._by_job.pop(batsim_job.id, None)
        if entry is None:
            return None if batsim_job.workload == RUN_WORKLOAD else batsim_job.id
        run, pos = entry
        sid = run.id
        plan = run.plan
        phases = plan.phases
        gate = phases[pos].gate
        state = state_name(batsim_job)
        if self.record is not None:
            self.record.phase_ended(sid, pos, self.sched.bs.time(), state)
        if gate is not None and not isinstance(gate, At):
            now = self.sched.bs.time()
            for key in gate.release((sid, pos)):
                self._grant(key, now)
        if state == COMPLETED_SUCCESSFULLY and pos + 1 < len(phases):
            now = self.sched.bs.time()
            if plan.rule != DEADLINE or run.deadline > now:
                self._next(run, pos + 1, now)
                return None
            state = COMPLETED_WALLTIME_REACHED    # the walltime ends with this phase
        del self.runs[sid]
        self.ended[sid] = state
        return sid

    def final_state(self, batsim_job, job_id: str) -> str:
        """The final state the core records for ``job_id`` whose end
        :meth:`completed` reported: the one decided for a job run by
        phases, else Batsim's."""
        state = self.ended.get(job_id)
        return state_name(batsim_job) if state is None else state

    # --------------------------------------------------------- the pass
    def after_pass(self, now: float) -> None:
        """After a scheduling pass at ``now`` (s): start the phases whose
        :class:`At` time came (if their job still runs), then, for a
        family that runs phases, NOTIFY ``registration_finished`` once
        nothing is left to submit, waiting, running or gated."""
        at = self._at
        while at and at[0][0] <= now + AT_TOLERANCE:
            _, sid, pos = heapq.heappop(at)
            if sid not in self.sched.core.running:
                self.runs.pop(sid, None)     # ended meanwhile: nothing left to run
                continue
            self._execute(self.runs[sid], pos, now)
        bs = self.sched.bs
        if (self.dynamic or getattr(bs, "dynamic_job_registration_enabled", False) is True) \
                and not self._notified:
            core = self.sched.core
            if bs.no_more_static_jobs and not len(core) and not core.running and not at:
                self._notified = True
                bs.notify_registration_finished()
