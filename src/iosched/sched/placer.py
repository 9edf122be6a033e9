"""Placers: which resources (and pool amounts) a job gets, given what is free.

A :class:`Placer` answers one question, :meth:`Placer.fit`: given a job and a
:class:`Window` (the capacity free during the whole of ``[t, t +
estimate)``), which :class:`Allocation` does the job get, or None if it does
not fit there. Everything else is derived from it:

* :meth:`Placer.fit_at` -- the job's allocation if it starts exactly at ``t``
  (the "fits now" test of every policy);
* :meth:`Placer.earliest` -- the earliest candidate time at which ``fit``
  succeeds, and the allocation (reservations of EASY and conservative
  backfilling, list scheduling). Candidate times are the query time and the
  starts of the profile's later segments: capacity only increases there.

Both work on an :class:`~iosched.sched.profile.AvailabilityProfile` or on a
:class:`~iosched.sched.timeline.Timeline` (a what-if snapshot). A placer may
override them with a faster search that gives the same answers (the
burst-buffer placer scans bit masks; :class:`FirstFit` uses the profile's own
pruned search).

A family of schedulers adds a placer when its jobs' demand depends on the
resources chosen (a burst buffer on the storage node near each compute node;
cores of nodes that cache the job's input file; PFS bandwidth), and keeps the
shared core: queue, running jobs, policies.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Mapping, Optional

from procset import ProcSet

from iosched.sched.profile import INF, AvailabilityProfile, lowest_ids
from iosched.sched.timeline import Timeline, mask_of, procset_of_mask

__all__ = ["Allocation", "Window", "Placer", "FirstFit"]


class Allocation:
    """What a placed job holds: ``resources`` and ``pools``, plus family
    ``data`` (e.g. the burst-buffer node of each compute node).

    :param resources: a ProcSet, an int bit mask (bit ``i`` set iff
        resource ``i`` is held; what the profile's fast paths return), or
        an iterable of int resource ids.
    :param pools: pool name -> amount held over the job's interval (float,
        in the pool's unit: bytes, bytes/s).
    :param data: anything the family needs at launch; not interpreted.
    :param mapping: executor rank (str) -> resource id, sent with the
        job's EXECUTE_JOB when it runs statically
        (:mod:`iosched.sched.executor`), or None: Batsim's default (one
        executor per resource).
    :param storage_mapping: storage label -> storage resource id, sent with
        the job's EXECUTE_JOB when it runs statically, or None (none sent:
        Batsim uses the platform's only storage host; a job reading inputs
        with copies on node-local disks gets each input's first copy,
        :func:`iosched.sched.ioplan.plan_for`).
    :param inputs: where each input file of the job's I/O model is read
        from (:func:`iosched.sched.ioplan.plan_for`): file id -> ``"pfs"``
        (the PFS), the host name of a node whose local disk holds a copy,
        :data:`iosched.sched.ioplan.CACHED` (already in the node's memory:
        no read) or an :class:`~iosched.sched.executor.At` (s: being loaded
        by another job until then; the computation waits for it); None:
        each input's first copy.
    :param elapsed: s of the job already run before it started here (a
        job running when the trace begins: the locality family's history
        jobs); a job reading inputs then computing gets ``max(1, delay -
        elapsed)`` s of compute and ``max(1, walltime - elapsed)`` s of
        walltime (Gonthier et al.'s artifact). 0: none.
    :param gate: the :class:`~iosched.sched.executor.Gate` (an arbiter,
        e.g. list/pack's FIFO I/O arbiter) that grants each periodic write,
        or None: writes start at once (SimGrid shares the bandwidth).

    Burst-buffer jobs read ``data`` as compute id -> storage resource id
    holding that node's burst buffer (:mod:`iosched.bb.placement`).

    ``mask`` is the resources as an int bit mask. Allocations may be
    memoised and shared by placers: never mutate one (:meth:`with_io`
    makes a copy with other mappings).
    """

    __slots__ = ("_ids", "_resources", "mask", "_held", "pools", "data", "mapping",
                 "storage_mapping", "inputs", "gate", "elapsed")

    def __init__(self, resources, pools: Optional[Mapping[str, float]] = None, data=None,
                 mapping: Optional[dict] = None, storage_mapping: Optional[dict] = None,
                 inputs: Optional[dict] = None, gate=None, elapsed: float = 0):
        if isinstance(resources, ProcSet):
            self._resources, self._ids = resources, None
            self.mask = mask_of(resources)
        elif isinstance(resources, int):
            self._resources, self._ids = None, None
            self.mask = resources
        else:
            self._resources, self._ids = None, list(resources)
            m = 0
            for c in self._ids:
                m |= 1 << c
            self.mask = m
        self._held = None
        self.pools = dict(pools or {})
        self.data = data
        self.mapping = mapping
        self.storage_mapping = storage_mapping
        self.inputs = inputs
        self.gate = gate
        self.elapsed = elapsed

    def with_io(self, mapping: Optional[dict] = None, storage_mapping: Optional[dict] = None,
                inputs: Optional[dict] = None, gate=None, elapsed: float = 0) -> "Allocation":
        """A copy of this allocation (same resources, pools and data) with
        ``mapping``, ``storage_mapping``, ``inputs``, ``gate`` and
        ``elapsed`` (see the class documentation)."""
        return Allocation(self.mask if self._resources is None else self._resources, self.pools,
                          self.data, mapping, storage_mapping, inputs, gate, elapsed)

    @property
    def resources(self) -> ProcSet:
        """The resources (ProcSet)."""
        if self._resources is None:
            self._resources = procset_of_mask(self.mask)
        return self._resources

    @property
    def ids(self) -> list:
        """The resource ids as a list (placer order when built from a list)."""
        if self._ids is None:
            self._ids = list(self.resources)
        return self._ids

    def held(self, names: tuple, index: Mapping[str, int]) -> list:
        """``[(position in names, amount)]`` of the held pools, for a
        timeline whose pools are ``names`` (``index``: name -> position);
        remembered for the last ``names``."""
        h = self._held
        if h is None or h[0] is not names:
            h = self._held = (names, [(index[name], amount) for name, amount in self.pools.items()])
        return h[1]

    def __repr__(self):
        return f"<Allocation {self.resources} pools={self.pools}>"


class Window:
    """Capacity free during the whole of ``[start, start + duration)``.

    ``start`` (s), ``duration`` (s, may be inf), ``mask`` (int bit mask of
    the free resources), ``pools`` (pool name -> minimum free amount over the
    window), ``tols`` (pool name -> comparison tolerance, ``1e-9`` of the
    pool's total). :attr:`free` is the free resources as a ProcSet.
    """

    __slots__ = ("start", "duration", "mask", "pools", "tols", "_free")

    def __init__(self, start: float, duration: float, mask: int, pools: Mapping[str, float],
                 tols: Mapping[str, float]):
        self.start, self.duration, self.mask = start, duration, mask
        self.pools, self.tols = pools, tols
        self._free = None

    @property
    def free(self) -> ProcSet:
        """The free resources (ProcSet)."""
        if self._free is None:
            self._free = procset_of_mask(self.mask)
        return self._free

    @property
    def count(self) -> int:
        """Number of free resources."""
        return self.mask.bit_count()

    def has(self, pools: Mapping[str, float]) -> bool:
        """Whether every amount of ``pools`` is free (within tolerance)."""
        for name, amount in pools.items():
            if amount > self.pools.get(name, 0.0) + self.tols.get(name, 0.0):
                return False
        return True


def _timeline(plan, t: float) -> Timeline:
    return plan if isinstance(plan, Timeline) else plan.snapshot(t)


class Placer:
    """Base class of placers (see the module documentation).

    Subclasses implement :meth:`fit`; they may override
    :meth:`rejection_reason`, and :meth:`fit_at` / :meth:`earliest` with a
    faster search that gives the same answers.

    Class attribute :attr:`pure`: True when the answers depend only on the
    job and the free capacity as a step function of time (no random
    choice, no state; a breakpoint where nothing changes changes no
    answer), and :meth:`earliest` gives the first candidate at which
    :meth:`fit_at` succeeds. EASY then reuses the head's start while the
    profile is unchanged, and conservative compression asks for a job's
    new slot with its old one freed for the question only
    (:meth:`AvailabilityProfile.without
    <iosched.sched.profile.AvailabilityProfile.without>`).

    Class attribute :attr:`needs_nb_res_free`: True when :meth:`fit` never
    places a job on fewer than ``job.nb_res`` resources free during its
    window; the policies then skip, without asking the placer, a job that
    asks more resources than are free now (most candidates of an EASY
    backfill). False (the default) for placers whose jobs need another
    count (nodes of a burst-buffer request, cores of one node...).
    """

    #: whether a job never fits on fewer than ``job.nb_res`` free resources
    needs_nb_res_free: bool = False

    #: whether the answers depend only on the job and the free capacity
    #: (see the class documentation): the same question on an unchanged
    #: profile gets the same answer, which a policy may then reuse
    pure: bool = False

    def fit(self, job, window: Window) -> Optional[Allocation]:
        """The allocation of ``job`` (a :class:`~iosched.sched.job.Job`) in
        ``window``, or None if it does not fit there.

        :raises NotImplementedError: in the base class.
        """
        raise NotImplementedError

    def rejection_reason(self, job, profile: AvailabilityProfile) -> Optional[str]:
        """Why ``job`` can never run on this machine (a one-line reason), or
        None. Default: it asks 1 to ``len(profile.resources)`` resources
        (an int) and at most each pool's total of its fixed ``pools``."""
        res = job.nb_res
        ncomp = len(profile.resources)
        if isinstance(res, bool) or not isinstance(res, int):
            return f"requested resources {res!r} is not an integer"
        if res <= 0:
            return f"requests {res} resources (at least 1 is needed)"
        if res > ncomp:
            return f"requests {res} resources but the machine has only {ncomp} compute resources"
        if not job.pools:
            return None
        totals = profile.pool_totals
        for name, amount in sorted(job.pools.items()):
            if name not in totals:
                return f"needs pool {name!r}, which this machine does not have"
            if not (0 <= amount <= totals[name]):
                return f"needs {amount} of pool {name!r}, whose total is {totals[name]}"
        return None

    def fit_at(self, plan, job, t: float) -> Optional[Allocation]:
        """The allocation of ``job`` if it starts exactly at ``t`` (s) on
        ``plan`` (a profile or a timeline), or None."""
        tl = _timeline(plan, t)
        mask, pools = tl.window(t, job.estimate)
        return self.fit(job, Window(t, job.estimate, mask, pools, dict(zip(tl.pool_names, tl.tols))))

    def earliest(self, plan, job, after: float) -> tuple:
        """Earliest start ``t >= after`` of ``job`` on ``plan`` (a profile or
        a timeline) and its allocation.

        :returns: ``(t, Allocation)``, or ``(inf, None)`` if ``fit`` fails at
            every candidate time.
        """
        tl = _timeline(plan, after)
        st, masks, free = tl.state()
        names, tols = tl.pool_names, dict(zip(tl.pool_names, tl.tols))
        d = job.estimate
        S = len(st)
        i = max(0, bisect_right(st, after) - 1)
        while i < S:
            t = after if st[i] < after else st[i]
            end = t + d
            mask, mins, j = -1, None, i
            while j < S and (j == i or st[j] < end):
                mask &= masks[j]
                f = free[j]
                mins = list(f) if mins is None else [m if m <= x else x for m, x in zip(mins, f)]
                j += 1
            alloc = self.fit(job, Window(t, d, mask, dict(zip(names, mins or ())), tols))
            if alloc is not None:
                return t, alloc
            i += 1
        return INF, None


class FirstFit(Placer):
    """The job's ``nb_res`` lowest free resource ids and its fixed ``pools``
    (first fit by id, as pybatsim's ``fillerSched``; contiguity not sought).

    On a profile, :meth:`fit_at` and :meth:`earliest` use the profile's own
    search on bit masks (:meth:`~iosched.sched.profile.AvailabilityProfile.fit_mask`,
    :meth:`~iosched.sched.profile.AvailabilityProfile.earliest_mask`, which
    prunes candidate times); on a timeline, the generic scan.
    """

    needs_nb_res_free = True
    pure = True

    def fit(self, job, window: Window) -> Optional[Allocation]:
        if window.count < job.nb_res or not window.has(job.pools):
            return None
        return Allocation(lowest_ids(window.free, job.nb_res), job.pools)

    def fit_at(self, plan, job, t: float) -> Optional[Allocation]:
        if isinstance(plan, Timeline):
            return super().fit_at(plan, job, t)
        mask = plan.fit_mask(t, job.nb_res, job.estimate, job.pools)
        return None if mask is None else Allocation(mask, job.pools)

    def earliest(self, plan, job, after: float) -> tuple:
        if isinstance(plan, Timeline):
            return super().earliest(plan, job, after)
        t, mask = plan.earliest_mask(job.nb_res, job.estimate, job.pools, after=after)
        return (INF, None) if t == INF else (t, Allocation(mask, job.pools))
