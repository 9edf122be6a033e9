"""Data-locality scheduling (Gonthier et al., RR-9497) on Batsim.

The ten policies of :mod:`iosched.locality.planner` (``policy`` option:
fcfs, eft, lea, leo, lem and their -bf variants; ``W`` 500, ``E`` 1,
``threshold`` 80, ``cache_rule`` artifact|paper, ``leo_rule``
artifact|paper) run as :class:`iosched.locality.policy.LocalityPolicy` on
the shared core (:class:`iosched.sched.core.Scheduler`, with
:class:`~iosched.locality.policy.OneNodePlacer`,
:func:`~iosched.locality.policy.file_order` and the holds-only availability
model :data:`~iosched.locality.policy.PROFILE`): a full re-plan when a job
ended, else the new jobs only after the existing plan
(:mod:`iosched.locality.replay` documents the loop). This file binds the
options and runs the started jobs on Batsim.

A workload job (extra fields ``file``, ``file_size`` in bytes, ``role``,
``history_node``, ``history_start``; see
:func:`iosched.locality.workload.to_batsim`) runs as dynamic jobs with
Batsim-standard profiles (``--enable-dynamic-jobs``; no composed profile):

1. if its file must be loaded on the node: ``bb!<id>:0``, a
   ``parallel_homogeneous_pfs`` profile reading ``file_size`` bytes from the
   storage ``pfs`` onto the first core of its allocation (SimGrid does the
   transfer; with the ``paper`` platform it takes size/bandwidth);
2. then ``bb!<id>:1``, a ``delay`` profile of its duration on all its cores,
   with the walltime left. A job whose file is being loaded on the node by
   another job starts its compute phase when that load ends (a
   CALL_ME_LATER); a job whose file is there starts it at once.

The static workload job is rejected (its dynamic jobs replace it), as the
burst-buffer family does. The engine run keeps the artifact's integer clock
(:func:`~iosched.locality.policy.second`,
:meth:`~iosched.locality.policy.LocalityPolicy._ends_pending`; a platform whose
master route has no latency, :mod:`iosched.locality.platform`), so it gives
the artifact loop's schedule (tested in ``tests/test_locality.py``). Option ``out``: a CSV of the evaluated jobs and a
summary JSON written at the end (:mod:`iosched.locality.metrics`), plus
``<out>_timing.json`` (scheduler wall and CPU time, time in planning
passes, passes, decisions, and the scheduler's wall time when the last
evaluated job ended; s; these vary from run to run).
"""

from __future__ import annotations

import heapq
import json
import math
import time

from procset import ProcSet

from iosched.batsim.dynamic import PHASE_SEPARATOR, RUN_WORKLOAD, phase_index, phase_job_id
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY, local_id, walltime_seconds
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.locality.cluster import CACHE_RULES
from iosched.locality.metrics import summarize, write_jobs
from iosched.locality.planner import POLICIES, LJob, Planner
from iosched.locality.policy import GB, PROFILE, LocalityPolicy, OneNodePlacer, file_order
from iosched.sched.adapter import PybatsimScheduler, state_name
from iosched.sched.core import Scheduler

__all__ = ["Locality", "read_locality_job", "LOAD_WORKLOAD", "RUN_WORKLOAD"]

#: Workload names of the dynamic jobs: loads and compute phases.
#: Workload of the dynamic jobs: the project's convention
#: (:mod:`iosched.batsim.dynamic`): phase 0 ``bb!J:0`` loads the input file,
#: phase 1 ``bb!J:1`` computes; the metrics merge both into ``w0!J``.
LOAD_WORKLOAD = RUN_WORKLOAD
#: Phase indices of a job's dynamic jobs.
LOAD_PHASE, COMPUTE_PHASE = 0, 1


def read_locality_job(batsim_job) -> tuple:
    """``(cores, walltime, {}, LJob)`` of a locality workload job.

    :raises InputError: missing or invalid ``file``/``file_size``, invalid
        ``role`` (default 1); one line naming the job and the field."""
    d = batsim_job.json_dict
    for field in ("file", "file_size"):
        if field not in d:
            raise InputError(f"job {batsim_job.id}: field {field} is missing (a locality job reads one file)")
    try:
        size = float(d["file_size"]) / GB
        role = int(d.get("role", 1))
        f = int(d["file"])
    except (TypeError, ValueError):
        raise InputError(f"job {batsim_job.id}: fields file/file_size/role must be numbers") from None
    if not (size >= 0 and math.isfinite(size)):
        raise InputError(f"job {batsim_job.id}: field file_size={d.get('file_size')!r} is not a size in bytes")
    wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
    if not math.isfinite(wall):
        raise InputError(f"job {batsim_job.id}: a walltime is needed")
    prof = d.get("profile")
    try:
        delay = int(d["delay"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"job {batsim_job.id}: field delay (the job's duration in s) is missing") from None
    lj = LJob(batsim_job.id, int(round(float(d.get("orig_subtime", batsim_job.submit_time)))), delay,
              int(round(wall)), int(batsim_job.requested_resources), f, size, role,
              int(d.get("history_start", -1)), int(d.get("history_node", -1)))
    lj.batsim = batsim_job
    lj.hist_start = int(d.get("history_start", -1))
    lj.seq = int(d.get("seq", -1))
    return int(batsim_job.requested_resources), float(lj.walltime), {}, (lj, prof)


#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "fcfs, eft, lea, leo, lem and their -bf variants (default lea)",
    "W": "weight of the load time in the scores (LEA: 500)",
    "E": "weight of the eviction time in the scores (LEA: 1)",
    "threshold": "LEM: % of busy nodes above which LEA replaces EFT (80)",
    "cache_rule": "artifact (default) or paper",
    "leo_rule": "artifact (default) or paper",
    "out": "path of the per-job output file",
    "bandwidth": "file-system bandwidth per node, bytes/s (0.1e9)",
}


class Locality(PybatsimScheduler):
    """pybatsim scheduler of the locality policies (module doc).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS

    def make_core(self, options: dict) -> Scheduler:
        pol = str(options.get("policy", "lea"))
        if pol not in POLICIES:
            raise InputError(f"policy={pol!r} is unknown; expected one of {', '.join(POLICIES)}")
        W = option_number(options, "W", 500, minimum=0)
        E = option_number(options, "E", 1, minimum=0)
        thr = option_number(options, "threshold", 80, minimum=0, maximum=100)
        rule = str(options.get("cache_rule", "artifact"))
        if rule not in CACHE_RULES:
            raise InputError(f"cache_rule={rule!r} is unknown; expected one of {', '.join(CACHE_RULES)}")
        leo_rule = str(options.get("leo_rule", "artifact"))
        self.out = options.get("out")
        self.policy_name = pol
        bandwidth = option_number(options, "bandwidth", 0.1e9, minimum=0, exclusive_minimum=True) / GB
        self.pol = LocalityPolicy(lambda c: Planner(c, pol, W, E, thr, leo_rule), cache_rule=rule,
                                  bandwidth=bandwidth, clock=lambda: self.bs.time())
        self.by_dyn: dict = {}       # dynamic job id -> static job id
        self.jobs: dict = {}         # static id -> LJob
        self.t_start: dict = {}      # static id -> start time (s)
        self.pending: list = []      # heap of (time, static id): compute phases waiting for a load
        self._notified = False
        self._t0 = time.perf_counter()
        self._last_eval_wall = None  # scheduler wall time (s) when the last evaluated job so far ended
        return Scheduler(self.pol, OneNodePlacer(), order=file_order, read_job=read_locality_job,
                         name="Locality", profile=PROFILE)

    def accepts(self, batsim_job) -> bool:
        """Our own dynamic jobs are not workload jobs."""
        return batsim_job.workload != RUN_WORKLOAD

    # ------------------------------------------------------------ phases
    def launch(self, running) -> None:
        """Start the load phase, or the compute phase now or when the file's load ends."""
        job = running.job
        lj, _prof = job.request
        self.jobs[job.id] = lj
        self.t_start[job.id] = running.start
        self.bs.reject_jobs([job.batsim])
        if lj.transfer > 0:
            lid = phase_job_id(job.id, LOAD_PHASE)
            pname = f"{local_id(job.id)}{PHASE_SEPARATOR}{LOAD_PHASE}"
            self.bs.register_profiles(RUN_WORKLOAD, {pname: {
                "type": "parallel_homogeneous_pfs", "bytes_to_read": float(lj.size) * GB,
                "bytes_to_write": 0, "storage": "pfs"}})
            rj = self.bs.register_job(lid, 1, lj.walltime, pname)
            rj.allocation = ProcSet(min(running.resources))
            self.bs.execute_job(rj)
            self.by_dyn[lid] = job.id
        elif lj.waiting > 0:
            t = running.start + lj.waiting
            heapq.heappush(self.pending, (t, job.id))
            self.core.wake_up_at(t, self.bs.time())
        else:
            self._compute(job.id, running.start)

    def _compute(self, sid: str, now: float) -> None:
        lj = self.jobs[sid]
        rec = self.core.running.get(sid)
        if rec is None:
            return
        left = lj.walltime - (now - self.t_start[sid])
        rid = phase_job_id(sid, COMPUTE_PHASE)
        name = f"{local_id(sid)}{PHASE_SEPARATOR}{COMPUTE_PHASE}"
        self.bs.register_profiles(RUN_WORKLOAD, {name: {"type": "delay", "delay": float(lj.delay)}})
        rj = self.bs.register_job(rid, len(rec.resources), max(left, 1e-6), name)
        rj.allocation = rec.resources
        self.bs.execute_job(rj)
        self.by_dyn[rid] = sid

    def completed_id(self, batsim_job):
        """The static job a dynamic job ran when the job is over (None while
        its compute phase is still to come)."""
        sid = self.by_dyn.pop(batsim_job.id, None)
        if sid is None:
            return None
        lj = self.jobs[sid]
        now = self.bs.time()
        if phase_index(local_id(batsim_job.id)) == LOAD_PHASE \
                and state_name(batsim_job) == COMPLETED_SUCCESSFULLY:
            self._compute(sid, now)
            return None
        lj.start = self.t_start[sid]
        lj.end = now
        if lj.role == 1:
            self._last_eval_wall = time.perf_counter() - self._t0
        return sid

    def after_pass(self, now: float) -> None:
        """Compute phases whose file load is over; the end of registrations."""
        while self.pending and self.pending[0][0] <= now + 1e-9:
            _, sid = heapq.heappop(self.pending)
            self._compute(sid, now)
        if self.bs.no_more_static_jobs and not len(self.core) and not self.core.running \
                and not self.pending and not self._notified:
            self._notified = True
            self.bs.notify_registration_finished()

    def onSimulationEnds(self):
        super().onSimulationEnds()
        if self.out:
            done = [j for j in self.jobs.values() if j.end is not None]
            ev = [j for j in done if j.role == 1]
            write_jobs(ev, f"{self.out}_jobs.csv", self.pol.bandwidth)
            if ev:
                with open(f"{self.out}_summary.json", "w") as f:
                    json.dump(summarize(ev, self.policy_name, self.pol.bandwidth), f, indent=1, sort_keys=True)
            # run times (not part of the results: they vary from run to run)
            pol = self.pol
            with open(f"{self.out}_timing.json", "w") as f:
                json.dump({"scheduler_wall_s": round(time.perf_counter() - self._t0, 1),
                           "scheduler_cpu_s": round(time.process_time(), 1),
                           "planning_wall_s": round(pol.plan_wall, 1), "planning_cpu_s": round(pol.plan_cpu, 1),
                           "passes": pol.passes,
                           "decisions": pol.planner.decisions if pol.planner is not None else 0,
                           "wall_at_last_evaluated_end_s": None if self._last_eval_wall is None
                           else round(self._last_eval_wall, 1)}, f, indent=1, sort_keys=True)
