"""The scheduler core's records of jobs: :class:`Job` (waiting) and
:class:`RunningJob` (started, holding a profile reservation)."""

from __future__ import annotations

__all__ = ["Job", "RunningJob"]


class Job:
    """A job as the core sees it.

    ``id`` (Batsim job id, ``"w0!12"``), ``batsim`` (the pybatsim ``Job``),
    ``seq`` (arrival rank, int), ``subtime`` (submission time, s),
    ``nb_res`` (int, resources requested), ``estimate`` (runtime estimate, s,
    may be inf: the walltime by default), ``pools`` (fixed pool demand:
    name -> amount, held whatever the resources chosen), ``request`` (the
    family's reading of the job's extra fields, e.g. a burst-buffer
    request; None for plain jobs) and ``key`` (queue key, set by the order).
    """

    __slots__ = ("id", "batsim", "seq", "subtime", "nb_res", "estimate", "pools", "request", "key")

    def __init__(self, batsim_job, seq: int, nb_res, estimate: float, pools=None, request=None):
        self.batsim = batsim_job
        self.id = batsim_job.id
        self.seq = seq
        self.subtime = float(batsim_job.submit_time)
        self.nb_res = nb_res
        self.estimate = estimate
        self.pools = dict(pools or {})
        self.request = request
        self.key = (seq,)

    def __repr__(self):
        return f"<Job {self.id} res={self.nb_res} est={self.estimate}>"


class RunningJob:
    """A started job: ``job`` (:class:`Job`), ``start`` (s), ``allocation``
    (:class:`~iosched.sched.placer.Allocation`) and the profile
    ``reservation`` holding it until the job's (estimated, then actual) end.
    ``resources`` and ``pools`` are the allocation's."""

    __slots__ = ("job", "start", "allocation", "reservation")

    def __init__(self, job: Job, start: float, allocation, reservation):
        self.job, self.start = job, start
        self.allocation, self.reservation = allocation, reservation

    @property
    def seq(self) -> int:
        """The job's arrival rank."""
        return self.job.seq

    @property
    def resources(self):
        """The held resources (ProcSet)."""
        return self.allocation.resources

    @property
    def pools(self) -> dict:
        """The held pool amounts."""
        return self.allocation.pools

    @property
    def estimated_end(self) -> float:
        """Current estimated end (s) of the job (its reservation end)."""
        return self.reservation.end

    def __repr__(self):
        return f"<RunningJob {self.job.id} start={self.start} res={self.resources}>"
