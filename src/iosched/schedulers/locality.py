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
(:mod:`iosched.experiments.locality.replay` documents the loop). This file binds the
options and runs the started jobs on Batsim.

A workload job (extra fields ``file``, ``file_size`` in bytes, ``role``,
``history_node``, ``history_start``; see
:func:`iosched.experiments.locality.workload.to_batsim`) runs as dynamic jobs with
Batsim-standard profiles (``--enable-dynamic-jobs``; no composed profile):

1. if its file must be loaded on the node: ``bb!<id>:0``, a
   ``parallel_homogeneous_pfs`` profile reading ``file_size`` bytes from the
   storage ``pfs`` onto the first core of its allocation (SimGrid does the
   transfer; with the ``paper`` platform it takes size/bandwidth);
2. then ``bb!<id>:1``, a ``delay`` profile of its duration on all its cores,
   with the walltime left. A job whose file is being loaded on the node by
   another job starts its compute phase when that load ends (a
   CALL_ME_LATER); a job whose file is there starts it at once.

The core derives these phases from the job's I/O model and the input's
source this scheduler's cache model gives
(:func:`iosched.sched.ioplan.plan_for`, rules :data:`Locality.RULES`);
its executor (:mod:`iosched.sched.executor`, walltime rule ``LEFT``)
registers and advances them.

The static workload job is rejected (its dynamic jobs replace it), as the
burst-buffer family does. The engine run keeps the artifact's integer clock
(:func:`~iosched.locality.policy.second`,
:meth:`~iosched.locality.policy.LocalityPolicy._ends_pending`; a platform whose
master route has no latency, :func:`iosched.experiments.platforms.locality_xml`), so it gives
the artifact loop's schedule (tested in ``tests/test_locality.py``). Option ``out``: a CSV of the evaluated jobs and a
summary JSON written at the end (:mod:`iosched.locality.metrics`), plus
``<out>_timing.json`` (scheduler wall and CPU time, time in planning
passes, passes, decisions, and the scheduler's wall time when the last
evaluated job ended; s; these vary from run to run).
"""

from __future__ import annotations

import json
import math
import time


from iosched.batsim.jobs import walltime_seconds
from iosched.checks import option_number
from iosched.errors import InputError
from iosched.locality.cluster import CACHE_RULES
from iosched.locality.compiled import EVALUATORS
from iosched.locality.metrics import summarize, write_jobs
from iosched.locality.planner import POLICIES, LJob, Planner
from iosched.locality.policy import GB, PROFILE, LocalityPolicy, OneNodePlacer, file_order
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.executor import At
from iosched.sched.ioplan import CACHED, INPUTS, Rules
from iosched.sched.iojob import PFS, read_io

__all__ = ["Locality", "read_locality_job"]

#: Phase indices of a job's dynamic jobs (:mod:`iosched.batsim.dynamic`):
#: phase 0 ``bb!J:0`` loads the input file, phase 1 ``bb!J:1`` computes;
#: the metrics merge both into ``w0!J``.
LOAD_PHASE, COMPUTE_PHASE = 0, 1


#: The largest finite float32 (the planner's sizes, GB, are float32).
_FLOAT32_MAX = 3.4028234663852886e38


def read_locality_job(batsim_job) -> tuple:
    """``(cores, walltime, {}, LJob)`` of a locality workload job.

    Its I/O model (:func:`iosched.sched.iojob.read_io`): one input file
    whose id is a whole number (``io.inputs``, or the earlier fields
    ``file``, ``file_size``), the duration ``io.compute.delay`` (or ``delay``;
    s, rounded down to whole seconds as the artifact's integer clock),
    ``io.cores`` (default: Batsim's ``res``, which it must equal).

    :raises InputError: a missing or invalid input file, duration or
        walltime, ``io.cores`` not ``res``, invalid ``role`` (default 1); one
        line naming the job and the field."""
    d = batsim_job.json_dict
    where = f"job {batsim_job.id}"
    io = read_io(d, where)
    if len(io.inputs) != 1:
        raise InputError(f"{where}: a locality job reads one input file, got {len(io.inputs)} "
                         "(io.inputs, or the fields file and file_size)")
    res = int(batsim_job.requested_resources)
    if io.cores is not None and io.cores != res:
        raise InputError(f"{where}: io.cores={io.cores} differs from res={res} (one Batsim resource per core)")
    try:
        size = float(io.inputs[0].bytes) / GB
        f = int(io.inputs[0].file)
    except ValueError:
        raise InputError(f"{where}: input file {io.inputs[0].file!r}: a locality file id is a whole number") \
            from None
    try:
        role = int(d.get("role", 1))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: field role must be a number") from None
    if not (0 <= size <= _FLOAT32_MAX):  # the planner keeps sizes (GB) as float32
        raise InputError(f"{where}: input file size {io.inputs[0].bytes!r} is not a size in bytes "
                         "the planner can hold")
    if role not in (-2, -1, 0, 1, 2):
        raise InputError(f"{where}: field role={d.get('role')!r} is not a known role (-2, -1, 0, 1, 2)")
    wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
    if not math.isfinite(wall):
        raise InputError(f"{where}: a walltime is needed")
    prof = d.get("profile")
    if io.compute is None or io.compute.delay is None:
        raise InputError(f"{where}: field delay (the job's duration in s) is missing (io.compute.delay)")
    delay = int(io.compute.delay)
    try:
        subtime = int(round(float(d.get("orig_subtime", batsim_job.submit_time))))
        hist_start, hist_node = int(d.get("history_start", -1)), int(d.get("history_node", -1))
        seq = int(d.get("seq", -1))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where}: fields orig_subtime/history_start/history_node/seq "
                         "must be numbers") from None
    lj = LJob(batsim_job.id, subtime, delay, int(round(wall)), int(batsim_job.requested_resources), f,
              size, role, hist_start, hist_node)
    lj.batsim = batsim_job
    lj.hist_start = hist_start
    lj.seq = seq
    return int(batsim_job.requested_resources), float(lj.walltime), {}, (lj, prof)


#: The options the scheduler reads (``iosched.sched.options``): name -> meaning.
OPTIONS = {
    "policy": "fcfs, eft, lea, leo, lem and their -bf variants (default lea)",
    "W": "weight of the load time in the scores (LEA: 500)",
    "E": "weight of the eviction time in the scores (LEA: 1)",
    "threshold": "LEM: % of busy nodes above which LEA replaces EFT (80)",
    "cache_rule": "artifact (default) or paper",
    "leo_rule": "artifact (default) or paper",
    "evaluator": "the planner's passes: compiled (default; numba, else python) or python (same decisions)",
    "out": "path of the per-job output file",
    "bandwidth": "file-system bandwidth per node, bytes/s (0.1e9)",
}


class Locality(PybatsimScheduler):
    """pybatsim scheduler of the locality policies (module doc).

    :raises InputError: unknown policy or bad option.
    """

    OPTIONS = OPTIONS
    DYNAMIC_JOBS = True
    #: jobs reading inputs then computing (one input, cached per node)
    SERVES = frozenset({INPUTS})
    #: the artifact's integer clock (whole-second walltimes and durations)
    #: and float32 sizes in GB (Gonthier et al.'s simulator)
    RULES = Rules(whole_seconds=True, float32_gb=True)

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
        evaluator = str(options.get("evaluator", EVALUATORS[0]))
        if evaluator not in EVALUATORS:
            raise InputError(f"evaluator={evaluator!r} is unknown; expected one of {', '.join(EVALUATORS)}")
        self.out = options.get("out")
        self.policy_name = pol
        bandwidth = option_number(options, "bandwidth", 0.1e9, minimum=0, exclusive_minimum=True) / GB
        self.pol = LocalityPolicy(lambda c: Planner(c, pol, W, E, thr, leo_rule, evaluator), cache_rule=rule,
                                  bandwidth=bandwidth, clock=lambda: self.bs.time())
        self.jobs: dict = {}         # static id -> LJob
        self.t_start: dict = {}      # static id -> start time (s)
        self._t0 = time.perf_counter()
        self._last_eval_wall = None  # scheduler wall time (s) when the last evaluated job so far ended
        return Scheduler(self.pol, OneNodePlacer(), order=file_order, read_job=read_locality_job,
                         name="Locality", profile=PROFILE)

    def foreign_job(self, batsim_job, io) -> tuple:
        """A job without one input and ``compute.delay``: a request of its
        cores on one node reading no file (file 0: the node choice sees no
        input), its walltime as its duration.

        :raises InputError: the job has no walltime (the planner needs one).
        """
        wall = walltime_seconds(getattr(batsim_job, "requested_time", None))
        if not math.isfinite(wall):
            raise InputError(f"job {batsim_job.id}: a walltime is needed (the locality planner "
                             "holds a job's cores until start + walltime)")
        d = batsim_job.json_dict
        try:
            seq = int(d.get("seq", -1))
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"job {batsim_job.id}: field seq must be a number") from None
        res = int(batsim_job.requested_resources)
        lj = LJob(batsim_job.id, int(round(float(batsim_job.submit_time))), int(round(wall)),
                  int(round(wall)), res, 0, 0.0)
        lj.batsim, lj.seq = batsim_job, seq
        return res, float(lj.walltime), {}, (lj, d.get("profile"))

    # ------------------------------------------------------------ phases
    def allocation(self, running, io):
        """The placer's allocation with the input's source as the cache
        model decided: read from the PFS (a load), being loaded by another
        job until ``start + waiting`` (an :class:`~iosched.sched.executor.At`),
        or already cached, and the time a history job ran before day 0; the core runs the read and the compute phase
        (:func:`iosched.sched.ioplan.plan_for`, :data:`RULES`)."""
        job = running.job
        lj, _prof = job.request
        self.jobs[job.id] = lj
        self.t_start[job.id] = running.start
        if lj.transfer > 0:
            src = PFS
        elif lj.waiting > 0:
            src = At(running.start + lj.waiting)
        else:
            src = CACHED
        a = running.allocation
        return a.with_io(a.mapping, a.storage_mapping, {io.inputs[0].file: src}, a.gate, lj.elapsed)

    def completed_id(self, batsim_job):
        """The static job a dynamic job ran when the job is over (None while
        its compute phase is still to come); records its start and end."""
        sid = super().completed_id(batsim_job)
        if sid is None or sid not in self.jobs:   # a foreign job is not in the family's records
            return sid
        lj = self.jobs[sid]
        lj.start = self.t_start[sid]
        lj.end = self.bs.time()
        if lj.role == 1:
            self._last_eval_wall = time.perf_counter() - self._t0
        return sid

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
