"""I/O-aware list and pack schedulers of Jeannot, Pallez & Vidal (IJHPCA 2023).

Launch: ``pybatsim schedulers/listpack.py -o '{"policy": "io-pack-char"}'``
with the engine run with ``--enable-dynamic-jobs`` (embedded engine or real
Batsim 4.2.1; no ``--acknowledge-dynamic-jobs``), on a platform with one PFS
storage host behind one link of bandwidth B (``docs/listpack.md``).

Options (pybatsim ``-o`` JSON):

* ``policy`` -- ``io-list`` (FCFS list scheduling, strict constraint: the
  running jobs' average bandwidths never sum above B; the bandwidth is a
  pool of the core's profile), ``io-list-bf`` (the same with EASY
  backfilling), ``io-pack-random``, ``io-pack-max``, ``io-pack-char`` (packs
  under the average constraint, :mod:`iosched.listpack.packs`) and their
  ``-bf`` variants;
* ``io_model`` -- ``exclusive`` (default; the paper's: FIFO, one I/O phase
  at a time, :class:`~iosched.listpack.arbiter.IOArbiter`) or ``shared``
  (SimGrid's fair sharing of the I/O node's link);
* ``bandwidth`` -- B in bytes/s (default
  :data:`~iosched.listpack.model.DEFAULT_BANDWIDTH`, as the generators);
* ``seed`` (int, Random packs), ``char_order`` (``decreasing`` /
  ``increasing``), ``pfs`` (storage host name, default ``"pfs"``).

Workload jobs carry ``nodes``, ``periods``, ``w`` (s) and ``v`` (bytes)
(:mod:`iosched.experiments.listpack.workload`). A started job ``w0!J`` is rejected and
run as dynamic jobs of the workload ``io``, one per phase: ``io!J.c<k>`` (a
``delay`` of ``w`` on all the job's resources) then ``io!J.o<k>`` (a
``parallel_homogeneous_pfs`` writing ``v`` bytes from the job's first
resource to the PFS, ``storage_mapping`` pfs -> the PFS's id), ``k = 0..n-1``.
Each phase gets its own profile (Batsim collects a dynamic profile when its
job ends). The job's resources are held by the core from its start to the
end of its last I/O phase.
"""

from __future__ import annotations

import math

from procset import ProcSet

from iosched.batsim.dynamic import PHASE_SEPARATOR, RUN_WORKLOAD, phase_job_id
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY, local_id
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.listpack.arbiter import IO_MODELS, IOArbiter
from iosched.listpack.model import DEFAULT_BANDWIDTH, PeriodicJob
from iosched.listpack.packs import PackPolicy, order_key
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler
from iosched.sched.orders import fcfs
from iosched.sched.policies import Easy, Fcfs

__all__ = ["Listpack", "POLICIES", "OPTIONS", "IO_WORKLOAD", "BW_POOL", "read_periodic_job"]

POLICIES = ("io-list", "io-list-bf", "io-pack-random", "io-pack-max", "io-pack-char",
            "io-pack-random-bf", "io-pack-max-bf", "io-pack-char-bf")
#: Dynamic workload of the phase jobs (the project's convention,
#: :mod:`iosched.batsim.dynamic`: ``bb!J:k``, so the metrics merge them into ``w0!J``).
IO_WORKLOAD = RUN_WORKLOAD
#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "io-list, io-pack-random, io-pack-max, io-pack-char, each also with -bf",
    "io_model": "exclusive (FIFO I/O arbiter, default) or shared (SimGrid fair sharing)",
    "char_order": "Char packs: decreasing (default) or increasing characteristic time",
    "bandwidth": "bandwidth B of the I/O node, bytes/s",
    "seed": "seed of the Random packs (int)",
    "pfs": "host name of the file system (pfs)",
}
#: Name of the bandwidth pool (bytes/s) of io-list.
BW_POOL = "bw"


def read_periodic_job(job_json) -> PeriodicJob:
    """The :class:`~iosched.listpack.model.PeriodicJob` of a workload job's
    fields ``nodes``, ``periods``, ``w``, ``v`` and the optional ``x``
    (default 0).

    :raises InputError: a field missing, not a number or out of range.
    """
    jid = job_json.get("id")
    try:
        nodes, periods = job_json["nodes"], job_json["periods"]
        w, v = float(job_json["w"]), float(job_json["v"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"job {jid}: listpack fields missing or invalid ({exc})") from None
    try:
        x = float(job_json.get("x", 0.0))
    except (TypeError, ValueError):
        raise InputError(f"job {jid}: x={job_json.get('x')!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"job {jid}: x={x!r} is not a finite number")
    for name, val in (("nodes", nodes), ("periods", periods)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise InputError(f"job {jid}: {name}={val!r} is not a positive integer")
    if not (w > 0 and v >= 0 and w + v < float("inf")):
        raise InputError(f"job {jid}: w must be > 0 and v >= 0 (finite)")
    return PeriodicJob(nodes, periods, w, v, x)


class _Run:
    __slots__ = ("sid", "spec", "resources", "k")

    def __init__(self, sid, spec, resources):
        self.sid, self.spec, self.resources, self.k = sid, spec, resources, 0


class Listpack(PybatsimScheduler):
    """pybatsim scheduler of the list / pack policies (module doc).

    Public state: ``arbiter`` (:class:`~iosched.listpack.arbiter.IOArbiter`),
    ``phases`` (number of phase jobs launched), ``completed`` (static id ->
    final state), ``pack_policy`` (the :class:`PackPolicy`, or None).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS
    #: A phase's end changes nothing the core sees (the job holds its
    #: resources until its last I/O phase), so a message holding only phase
    #: events gets no pass -- unless a running job's estimate has just run
    #: out (:meth:`onNoMoreEvents`).
    SKIP_INTERNAL_PASSES = True

    def make_core(self, options: dict) -> Scheduler:
        pol = str(options.get("policy", "io-list"))
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        model = str(options.get("io_model", "exclusive"))
        if model not in IO_MODELS:
            raise InputError(f"io_model={model!r} is unknown; expected one of {', '.join(IO_MODELS)}")
        char_order = str(options.get("char_order", "decreasing"))
        if char_order not in ("decreasing", "increasing"):
            raise InputError(f"char_order={char_order!r}: expected decreasing or increasing")
        self.policy_name, self.io_model = pol, model
        self.B = option_number(options, "bandwidth", DEFAULT_BANDWIDTH, minimum=0, exclusive_minimum=True)
        self.seed = option_number(options, "seed", 0, integer=True, minimum=0)
        self.pfs = str(options.get("pfs", "pfs"))
        self.arbiter = IOArbiter(model)
        self.runs: dict = {}
        self.phase_of: dict = {}
        self.phases = 0
        self.completed: dict = {}
        self._pfs_id = None
        self._notified = False
        bf = pol.endswith("-bf")
        base = pol[:-3] if bf else pol
        self.pack_policy = None
        if base == "io-list":
            return Scheduler(Easy() if bf else Fcfs(), order=fcfs, read_job=self._read_list,
                             pools={BW_POOL: self.B}, name="Listpack")
        self.pack_policy = PackPolicy(self.B, backfill=bf)
        return Scheduler(self.pack_policy, order=order_key(base.split("-")[-1], self.B, self.seed, char_order),
                         read_job=self._read_pack, name="Listpack")

    # ------------------------------------------------------------ jobs
    def _read_list(self, batsim_job) -> tuple:
        spec = read_periodic_job(batsim_job.json_dict)
        return batsim_job.requested_resources, spec.time(self.B), {BW_POOL: spec.bandwidth(self.B)}, spec

    def _read_pack(self, batsim_job) -> tuple:
        spec = read_periodic_job(batsim_job.json_dict)
        return batsim_job.requested_resources, spec.time(self.B), {}, spec

    def accepts(self, batsim_job) -> bool:
        """Phase jobs are ours, not workload jobs."""
        return batsim_job.workload != IO_WORKLOAD

    def _pfs(self) -> int:
        if self._pfs_id is None:
            ids = [i for i, name in self.core.machine.storage.items() if name == self.pfs]
            if not ids:
                raise InputError(f"platform: no storage host named {self.pfs!r} (option pfs)")
            self._pfs_id = ids[0]
        return self._pfs_id

    def launch(self, running) -> None:
        """Reject the workload job and start its first compute phase."""
        job = running.job
        self.runs[job.id] = _Run(job.id, job.request, ProcSet(running.resources))
        self.bs.reject_jobs([job.batsim])
        self._phase(job.id, 0, "c")

    def _phase(self, sid: str, k: int, kind: str) -> None:
        run = self.runs[sid]
        # period k: phase 2k computes, phase 2k + 1 writes (iosched.batsim.dynamic)
        idx = 2 * k + (0 if kind == "c" else 1)
        name = f"{local_id(sid)}{PHASE_SEPARATOR}{idx}"
        if kind == "c":
            prof = {"type": "delay", "delay": run.spec.w}
            alloc = run.resources
        else:
            prof = {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                    "bytes_to_write": run.spec.v, "storage": "pfs"}
            alloc = ProcSet(min(run.resources))
        self.bs.register_profiles(IO_WORKLOAD, {name: prof})
        jid = phase_job_id(sid, idx, IO_WORKLOAD)
        job = self.bs.register_job(jid, len(alloc), -1, name)
        job.allocation = alloc
        if kind == "o":
            job.storage_mapping = {"pfs": self._pfs()}
        self.bs.execute_job(job)
        self.phase_of[jid] = (sid, k, kind)
        self.phases += 1

    def completed_id(self, batsim_job):
        """Advance the job whose phase ended; the workload job's id once its
        last I/O phase ended (or a phase did not succeed), else None."""
        info = self.phase_of.pop(batsim_job.id, None)
        if info is None:
            return None
        sid, k, kind = info
        ok = state_name(batsim_job) == COMPLETED_SUCCESSFULLY
        if kind == "c":
            if not ok:
                self.completed[sid] = state_name(batsim_job)
                return sid
            for key in self.arbiter.request((sid, k)):
                self._phase(key[0], key[1], "o")
            return None
        for key in self.arbiter.release((sid, k)):
            self._phase(key[0], key[1], "o")
        if ok and k + 1 < self.runs[sid].spec.periods:
            self._phase(sid, k + 1, "c")
            return None
        self.completed[sid] = state_name(batsim_job)
        del self.runs[sid]
        return sid

    def _overrun_due(self, now: float) -> bool:
        """Whether a running job's estimated end ``T_i(B)`` (not yet
        extended by the core) is at or before ``now`` (s)."""
        for rec in self.core.running.values():
            res = rec.reservation
            # the core extends an overrun to [pass time, next float): one ulp
            if res.end <= now and res.end != math.nextafter(res.start, math.inf):
                return True
        return False

    def onNoMoreEvents(self):
        """The pass of the shared core, skipped for a message of phase
        events only unless an estimate ran out since the last pass: then
        the pass extends it, which can move EASY's head reservation. Any
        other pass would find the same free resources and no start (the
        list and pack policies only start jobs on freed resources or
        within an estimate that only shrinks as time passes), so the
        schedule is the one with a pass at every message."""
        if not self._for_core and self.core.profile is not None and not self.core.ended:
            if self._overrun_due(self.bs.time()):
                self._core_event()
        super().onNoMoreEvents()

    def after_pass(self, now: float) -> None:
        """End the dynamic registrations once every job is done."""
        core = self.core
        if (self.bs.no_more_static_jobs and not len(core) and not core.running
                and not self._notified):
            self._notified = True
            self.bs.notify_registration_finished()
