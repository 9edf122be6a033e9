"""The pybatsim adapter: Batsim events in, Batsim decisions out.

:class:`PybatsimScheduler` is a pybatsim ``BatsimScheduler`` that only
translates: each Batsim event becomes a call of the scheduler core
(:class:`~iosched.sched.core.Scheduler`), and each decision of the core
becomes pybatsim calls (REJECT_JOB, CALL_ME_LATER). The scheduling pass
runs once per Batsim message, in ``onNoMoreEvents``, after every event of
the message has been recorded.

A started job is run by the :class:`~iosched.sched.executor.Executor`
(``self.executor``) by the plan the core derives from the job's I/O model
and its allocation (:func:`iosched.sched.ioplan.plan_for`): the workload
job itself on its allocation (EXECUTE_JOB), or its phases as dynamic jobs
(burst buffers, periodic writes, reads then compute); the executor
registers them, advances them on completion and tells the core when the
job is over. A family fills the allocation (:meth:`allocation`: its
burst-buffer storage, input sources, gate, mappings) and gives its
artifact's encoding rules (:attr:`RULES`); it says nothing else about
execution. A family whose jobs run as dynamic phase jobs sets
:attr:`PybatsimScheduler.DYNAMIC_JOBS`.

What a scheduler serves: :attr:`PybatsimScheduler.SERVES`, the parts of
the I/O model (:data:`iosched.sched.ioplan.PARTS`) its family models. A job
of another part (a *foreign* job, :meth:`PybatsimScheduler.is_foreign`) is,
by default (option :data:`~iosched.sched.options.IO_FALLBACK` true), run the way an I/O-unaware
scheduler runs it: the family's policy orders and places it as a plain
request of nodes (:meth:`PybatsimScheduler.foreign_job`: its walltime, its
node count, its I/O unknown to the family's model), and the core's
executor runs its I/O as its model says with the core's default
allocation (the placer's, no family decision, default encoding
:class:`~iosched.sched.ioplan.Rules`). With ``io_fallback: false`` (strict)
a foreign job is rejected at submission with a one-line reason naming the
job and the part (:func:`iosched.sched.ioplan.unserved`), through the
core's rejection path; what no scheduler can run (no PFS, no dynamic jobs)
is rejected in both modes.

A scheduler file for the pybatsim launcher (``pybatsim FILE.py``) defines a
subclass named after the file that builds its core in :meth:`make_core`
from the pybatsim options.

Attributes not defined here (``profile``, ``queue``, ``running``,
``rejections``, ``stats``, ``plans``, ``head_reservation``...) are read from
the core, so ``sched.profile`` is ``sched.core.profile``; ``queue`` gives
the waiting pybatsim jobs.
"""

from __future__ import annotations

from batsim.batsim import BatsimScheduler

from iosched.errors import InputError
from iosched.sched.core import Scheduler, plain_job
from iosched.sched.executor import Executor, state_name
from iosched.sched.ioplan import INPUTS, PARTS, PERIODIC, STATIC, Rules, part_of, pfs_of, plan_for, unserved
from iosched.sched.iojob import NO_IO, PFS, read_io
from iosched.sched.machine import Machine
from iosched.sched.iorecord import IORecorder
from iosched.sched.options import check_declared, fallback_option, record_option, with_core

__all__ = ["PybatsimScheduler", "state_name"]


class PybatsimScheduler(BatsimScheduler):
    """pybatsim scheduler around a :class:`~iosched.sched.core.Scheduler`.

    :param options: the pybatsim options dict (``-o`` JSON), kept in
        ``self.options``.
    :raises InputError: as :meth:`make_core` does (bad options).

    Attribute ``core``: the :class:`~iosched.sched.core.Scheduler`;
    ``executor``: the :class:`~iosched.sched.executor.Executor` that runs
    started jobs.

    Class attribute ``OPTIONS``: the option names the scheduler reads
    (``name -> one-line description``, see :mod:`iosched.sched.options`);
    an option not declared there is refused with an :class:`InputError`
    before :meth:`make_core` runs. None (the default): nothing is checked.
    """

    #: option name -> one-line description, or None (undeclared, unchecked)
    OPTIONS: dict[str, str] | None = None

    #: Whether the family runs started jobs as dynamic phase jobs (the engine
    #: needs ``--enable-dynamic-jobs``): its own jobs are not submitted to
    #: the core, and registrations end with NOTIFY ``registration_finished``.
    DYNAMIC_JOBS: bool = False

    #: The parts of the I/O model the family models
    #: (:data:`iosched.sched.ioplan.PARTS`); the others run as foreign jobs
    #: (module doc), or are rejected with ``io_fallback: false``. Default, the
    #: baselines': periodic jobs (writes ungated), reads then compute (each
    #: input from its first copy, no cache) and static jobs; not burst
    #: buffers (no storage placement: they run on the PFS directly).
    SERVES: frozenset = frozenset({PERIODIC, INPUTS, STATIC})

    #: The family's encoding rules (:class:`iosched.sched.ioplan.Rules`).
    RULES: Rules = Rules()

    def __init__(self, options=None):
        super().__init__(dict(options or {}))
        where = f"scheduler {type(self).__name__}"
        check_declared(self.options, with_core(self.OPTIONS), where)
        #: whether foreign jobs run (option :data:`~iosched.sched.options.IO_FALLBACK`) or are rejected
        self.io_fallback = fallback_option(self.options, where)
        self.executor = Executor(self, dynamic=self.DYNAMIC_JOBS)
        folder = record_option(self.options, where)
        #: the I/O record (:class:`~iosched.sched.iorecord.IORecorder`), or None
        self.io_record = IORecorder(folder) if folder else None
        self.executor.record = self.io_record
        self._for_core = True
        self._io: dict = {}          # job id -> IOJob, from submission to start
        self._foreign: set = set()   # ids of the foreign jobs, from submission to start
        self.core: Scheduler = self.make_core(self.options)
        self.core.launcher = self
        self._own_read = self.core.read_job
        self.core.read_job = self._read_any_job
        if self.core.check_io is None:
            self.core.check_io = self.io_reason
        self.logger = self.core.logger

    def __getattr__(self, name):
        # only called for attributes not found on the adapter: the core's state
        if name == "core":
            raise AttributeError(name)
        return getattr(self.core, name)

    @property
    def queue(self) -> list:
        """The waiting pybatsim jobs, in queue order (a new list)."""
        return [j.batsim for j in self.core.queue]

    # ------------------------------------------------------------ hooks
    def make_core(self, options: dict) -> Scheduler:
        """Build the scheduler core from the options (subclasses).

        :raises NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def is_foreign(self, io) -> bool:
        """Whether a job of I/O model ``io`` (:class:`~iosched.sched.iojob.IOJob`)
        is outside the family's model (default: its part is not in
        :attr:`SERVES`)."""
        return part_of(io) not in self.SERVES

    def foreign_job(self, batsim_job, io) -> tuple:
        """The core's reading ``(nb_res, estimate, pools, request)`` of a
        foreign job (:meth:`is_foreign`): a plain request of nodes, its I/O
        unknown to the family's model (default :func:`iosched.sched.core.plain_job`:
        its resources, its walltime, no pool, no request; a family whose
        policy reads ``request`` gives the request of a job without I/O).

        :raises InputError: the family cannot take the job at all (one line:
            the job is rejected).
        """
        return plain_job(batsim_job)

    def _read_any_job(self, batsim_job) -> tuple:
        if batsim_job.id in self._foreign:
            return self.foreign_job(batsim_job, self._io.get(batsim_job.id, NO_IO))
        return self._own_read(batsim_job)

    def accepts(self, batsim_job) -> bool:
        """Whether a JOB_SUBMITTED job is for the core (default: all but
        the dynamic jobs the executor registers,
        :meth:`Executor.accepts <iosched.sched.executor.Executor.accepts>`)."""
        return self.executor.accepts(batsim_job)

    def completed_id(self, batsim_job):
        """The core's job id of a completed or killed Batsim job, or None to
        ignore it (default: the executor's answer,
        :meth:`Executor.completed <iosched.sched.executor.Executor.completed>`:
        a static job's own id; a phase job's workload job once its run is
        over)."""
        return self.executor.completed(batsim_job)

    def completed_state(self, batsim_job, job_id) -> str:
        """The final state the core records for ``job_id`` when
        ``batsim_job`` completed (default: the executor's,
        :meth:`Executor.final_state <iosched.sched.executor.Executor.final_state>`:
        Batsim's for a static job)."""
        return self.executor.final_state(batsim_job, job_id)

    @property
    def scheduler_name(self) -> str:
        """The name rejection reasons give: the policy (``"easy"``), else the class name."""
        pol = getattr(self, "policy_name", None) or self.__dict__.get("policy")
        return pol if isinstance(pol, str) else type(self).__name__

    def io_reason(self, batsim_job):
        """Why this scheduler cannot serve a submitted job's I/O model (one
        line: its ``io`` is malformed, or, with ``io_fallback: false``, a
        foreign job (:meth:`is_foreign`), or a part the machine or engine
        cannot run, :func:`iosched.sched.ioplan.unserved`), or None; the
        model is kept for the job's start."""
        try:
            io = read_io(getattr(batsim_job, "json_dict", None) or {}, f"job {batsim_job.id}")
        except InputError as exc:
            return str(exc)
        if io is NO_IO and STATIC in self.SERVES:
            return None        # a plain job: nothing to check, nothing to keep
        machine = self.core.machine
        dynamic = self.DYNAMIC_JOBS or getattr(self.bs, "dynamic_job_registration_enabled", False) is True
        foreign = self.is_foreign(io)
        serves = PARTS if foreign and self.io_fallback else self.SERVES
        reason = unserved(io, serves, self.scheduler_name, dynamic=dynamic,
                          storage=machine.storage if machine is not None else {})
        if reason is None:
            self._io[batsim_job.id] = io
            if foreign:
                self._foreign.add(batsim_job.id)
        return reason

    def allocation(self, running, io):
        """The allocation :func:`~iosched.sched.ioplan.plan_for` runs a
        started job (``running``, of I/O model ``io``) on (default: the
        placer's, ``running.allocation``); a family fills in what its
        scheduler-side model decided (input sources, the gate of its
        writes, mappings: :meth:`Allocation.with_io
        <iosched.sched.placer.Allocation.with_io>`)."""
        return running.allocation

    def pfs_id(self):
        """The PFS's resource id (default: the storage host named ``"pfs"``), or None."""
        return None

    def io_holds(self, running, io) -> tuple:
        """What the family reserves for a started job beyond its nodes and
        burst buffers, for the I/O record only
        (:mod:`iosched.sched.iorecord`): ``(kind, node, amount, unit)``
        tuples, e.g. ``(BANDWIDTH, "", 2e9, "bytes/s")`` (default: none)."""
        return ()

    def io_capacity(self, kind: str):
        """The total of a hold ``kind`` (bytes per burst-buffer node,
        bytes/s of the I/O bandwidth), for the I/O record, or None when the
        family does not say (default)."""
        return None

    def run_plan(self, running) -> tuple:
        """How a started job runs: ``(io, allocation, plan)``, its I/O model
        (read at submission), :meth:`allocation` and
        :func:`iosched.sched.ioplan.plan_for` of both with the family's
        :attr:`RULES`; a foreign job's (:meth:`is_foreign`) on the placer's
        allocation with the default rules (and, on a platform of several
        storage hosts, a static job without inputs gets ``storage_mapping``
        ``pfs`` -> the PFS)."""
        jid = running.job.id
        io = self._io.pop(jid, None)
        if io is None:
            io = read_io(getattr(running.job.batsim, "json_dict", None) or {}, f"job {jid}")
        machine = self.core.machine
        storage = machine.storage if machine is not None else {}
        if jid in self._foreign:   # the core's default allocation and encoding
            self._foreign.discard(jid)
            alloc, pfs = running.allocation, pfs_of(storage)
            if part_of(io) == STATIC and not io.inputs and len(storage) > 1 and pfs is not None \
                    and alloc.mapping is None and alloc.storage_mapping is None:
                # its profile's label "pfs" is the PFS (Batsim needs the
                # mapping on a platform of several storage hosts)
                alloc = alloc.with_io(storage_mapping={PFS: pfs})
            return io, alloc, plan_for(io, alloc, running, storage=storage, pfs=pfs)
        alloc = self.allocation(running, io)
        return io, alloc, plan_for(io, alloc, running, storage=storage, pfs=self.pfs_id(), rules=self.RULES)

    def launch(self, running) -> None:
        """Run a started job (a :class:`~iosched.sched.job.RunningJob`) by
        its :meth:`run_plan` (:meth:`Executor.start
        <iosched.sched.executor.Executor.start>`; a static EXECUTE_JOB is
        sent at the end of the pass), recorded when the I/O record is on."""
        io, alloc, plan = self.run_plan(running)
        if self.io_record is not None:
            self.io_record.job_started(running, io, alloc, plan, self.io_holds(running, io),
                                       self.io_capacity)
        self.executor.start(running, plan)

    def after_pass(self, now: float) -> None:
        """Called after each scheduling pass, before the executor's own
        (:meth:`Executor.after_pass <iosched.sched.executor.Executor.after_pass>`)
        (default: nothing)."""

    # --------------------------------------------------- core -> Batsim
    def start(self, running) -> None:
        """The core started ``running`` (a :class:`~iosched.sched.job.RunningJob`): :meth:`launch` it."""
        self.launch(running)

    def reject(self, batsim_job, reason: str) -> None:
        """The core rejected a job (``reason`` is logged by the core): REJECT_JOB."""
        self._io.pop(batsim_job.id, None)
        self._foreign.discard(batsim_job.id)
        self.bs.reject_jobs([batsim_job])

    def call_me_later(self, t: float) -> None:
        """The core asks to be called at ``t`` (s): CALL_ME_LATER."""
        self.bs.wake_me_up_at(t)

    def wake_up_at(self, t: float) -> None:
        """Ask Batsim for a REQUESTED_CALL at ``t`` (once per distinct time).

        :raises ValueError: if ``t`` is not after the current time or not finite.
        """
        self.core.wake_up_at(t, self.bs.time())

    # --------------------------------------------------- Batsim -> core
    # A scheduling pass runs at the end of every message. A family whose
    # class sets SKIP_INTERNAL_PASSES = True runs none for a message whose
    # only events are ignored ones (a job not accepted, the completion of a
    # job the family runs itself, e.g. one phase of a burst-buffer job), so
    # its internal bookkeeping never changes the core's decisions.

    #: Skip the pass of a message that holds no event for the core (see above).
    SKIP_INTERNAL_PASSES: bool = False

    def onBeforeEvents(self):
        """A new Batsim message: no event for the core yet."""
        self._for_core = not self.SKIP_INTERNAL_PASSES

    def _core_event(self):
        self._for_core = True

    def onSimulationBegins(self):
        """SIMULATION_BEGINS: the machine, then the core's profile."""
        self._core_event()
        machine = Machine.from_batsim(getattr(self.bs, "machines", None) or {},
                                      self.bs.nb_compute_resources)
        if len(machine.compute) != int(self.bs.nb_compute_resources):
            self.logger.warning("nb_compute_resources=%s but %d compute resources listed",
                                self.bs.nb_compute_resources, len(machine.compute))
        self.core.begin(machine, self.bs.time())
        if self.io_record is not None:
            self.io_record.begin(machine)
        self.logger.info("%s on compute resources %s", type(self).__name__, machine.compute)

    def onAfterBatsimInit(self):
        """Nothing to do: the profile is built at SIMULATION_BEGINS."""

    def onJobSubmission(self, job):
        """JOB_SUBMITTED: queue or reject the job."""
        if self.accepts(job):
            self._core_event()
            self.core.submit(job)

    def onJobCompletion(self, job):
        """JOB_COMPLETED: free the job's resources."""
        jid = self.completed_id(job)
        if jid is not None:
            self._core_event()
            state = self.completed_state(job, jid)
            if self.io_record is not None:
                self.io_record.job_ended(jid, self.bs.time(), state)
            self.core.end(jid, state, self.bs.time())

    def onJobsKilled(self, jobs):
        """JOB_KILLED: free the resources of the jobs still held."""
        for job in jobs:
            jid = self.completed_id(job)
            if jid is not None:
                self._core_event()
                if self.io_record is not None:
                    self.io_record.job_ended(jid, self.bs.time(), state_name(job))
                self.core.kill(jid, self.bs.time())

    def onRequestedCall(self):
        """REQUESTED_CALL: nothing to record; the pass runs in onNoMoreEvents."""
        self._core_event()

    def onNoMoreJobsInWorkloads(self):
        """NOTIFY no_more_static_job_to_submit: a pass follows."""
        super().onNoMoreJobsInWorkloads()
        self._core_event()

    def onNoMoreExternalEvents(self):
        """NOTIFY no_more_external_event_to_occur: a pass follows."""
        super().onNoMoreExternalEvents()
        self._core_event()

    def onNoMoreEvents(self):
        """Run the scheduling pass, once per Batsim message."""
        if self.core.profile is None or self.core.ended:
            return
        now = self.bs.time()
        if self._for_core:
            self.core.schedule(now)
        executor = self.executor
        executor.flush()
        self.after_pass(now)
        executor.after_pass(now)

    def onSimulationEnds(self):
        """SIMULATION_ENDS: the core logs its summary; the I/O record is
        written (option ``io_record``)."""
        self.core.finish()
        if self.io_record is not None:
            self.io_record.write()
