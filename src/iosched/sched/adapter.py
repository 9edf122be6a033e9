"""The pybatsim adapter: Batsim events in, Batsim decisions out.

:class:`PybatsimScheduler` is a pybatsim ``BatsimScheduler`` that only
translates: each Batsim event becomes a call of the scheduler core
(:class:`~iosched.sched.core.Scheduler`), and each decision of the core
becomes pybatsim calls (REJECT_JOB, CALL_ME_LATER). The scheduling pass
runs once per Batsim message, in ``onNoMoreEvents``, after every event of
the message has been recorded.

A started job is run by the :class:`~iosched.sched.executor.Executor`
(``self.executor``): by default the workload job itself on its allocation
(EXECUTE_JOB); a family whose jobs run as dynamic phase jobs (burst
buffers, list/pack, locality) sets :attr:`PybatsimScheduler.DYNAMIC_JOBS`
and says in :meth:`run_plan` which phases a started job has
(:class:`~iosched.sched.executor.Plan`); the executor registers them,
advances them on completion and tells the core when the job is over.

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

from iosched.sched.core import Scheduler
from iosched.sched.executor import Executor, Plan, state_name
from iosched.sched.machine import Machine
from iosched.sched.options import check_declared

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

    def __init__(self, options=None):
        super().__init__(dict(options or {}))
        check_declared(self.options, self.OPTIONS, f"scheduler {type(self).__name__}")
        self.executor = Executor(self, dynamic=self.DYNAMIC_JOBS)
        self._for_core = True
        self.core: Scheduler = self.make_core(self.options)
        self.core.launcher = self
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

    def run_plan(self, running) -> Plan | None:
        """How a started job runs (a :class:`~iosched.sched.executor.Plan`),
        or None (default): the workload job itself on its allocation."""
        return None

    def launch(self, running) -> None:
        """Run a started job (a :class:`~iosched.sched.job.RunningJob`) by
        its :meth:`run_plan` (:meth:`Executor.start
        <iosched.sched.executor.Executor.start>`); a static EXECUTE_JOB is
        sent at the end of the pass."""
        self.executor.start(running, self.run_plan(running))

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
            self.core.end(jid, self.completed_state(job, jid), self.bs.time())

    def onJobsKilled(self, jobs):
        """JOB_KILLED: free the resources of the jobs still held."""
        for job in jobs:
            jid = self.completed_id(job)
            if jid is not None:
                self._core_event()
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
        """SIMULATION_ENDS: the core logs its summary."""
        self.core.finish()
