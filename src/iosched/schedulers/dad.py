"""Data-aware dispatch of Li & Tatebe ("Data-aware task dispatching for
batch queuing system", IEEE Systems Journal 11(2), 2017) and its Torque
baseline.

Launch: ``pybatsim schedulers/dad.py -o '{"policy": "dad", "beta": 0.8,
"delay": 2}'`` on a NUSA platform (:func:`iosched.experiments.platforms.nusa_xml`) with a
workload of :mod:`iosched.experiments.dad.workload`; no special engine flag (embedded
engine or real Batsim 4.2.1: EXECUTE_JOB with ``storage_mapping`` only).

Options (pybatsim ``-o`` JSON):

* ``policy`` -- ``torque-fifo`` (stock ``pbs_sched`` FIFO: each task to the
  free node with the lowest load), ``dad`` (Algorithm 1), ``ds`` (delay
  scheduling alone); default ``dad``;
* ``beta`` (float in [0, 1], default 0.8) -- weight of fileLocality in the
  Score (equation 2); ``delay`` (int >= 0, default 2) -- ``wLimit``, the
  most scheduling passes a task is delayed; ``lshold`` (float, default
  0.5) -- the local threshold ``lShold``; the defaults are the paper's best
  case (Section V-C; ``lShold`` is our choice);
* ``interleave`` (bool, default true) -- DAD's scheduling by queue;
* ``cycle`` (s, default 600, Torque's ``scheduler_iteration``) -- a pass is
  requested this long after a task was delayed;
* ``stats`` -- path of a JSON file written at the end with every dispatch
  decision (time, job, node, kind, fileLocality, wall-clock seconds), for
  the benchmark and the analysis; never read back.

Every workload job carries the extra fields ``files`` and ``queue``
(:mod:`iosched.dad.model`); jobs whose fields are malformed, that request
more slots than a node has, or whose replicas lie on unknown nodes are
rejected with a logged reason.  Each policy is order x policy x placer on
the shared core: :class:`~iosched.dad.dispatch.NodePlacer` and
:class:`~iosched.dad.dispatch.TorqueFifo` /
:class:`~iosched.dad.dispatch.DataAwareDispatch`.  A started task is sent
with ``storage_mapping`` = file name -> disk of the replica it reads
(:func:`iosched.dad.model.replica_for`: its own node's, else the replica
node that the fewest running tasks read from remotely, counted once per
task).
"""

from __future__ import annotations

import json

from iosched.batsim.jobs import walltime_seconds
from iosched.checks import option_number
from iosched.dad.dispatch import DataAwareDispatch, NodePlacer, TorqueFifo
from iosched.dad.model import DEFAULT_QUEUE, TaskRequest, read_task, replica_for
from iosched.errors import InputError
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.ioplan import STATIC
from iosched.sched.iojob import PFS
from iosched.sched.orders import fcfs

__all__ = ["Dad", "POLICIES", "OPTIONS"]

POLICIES = ("torque-fifo", "dad", "ds")

#: options this scheduler understands (name -> description), checked before
#: the scheduler starts (:mod:`iosched.sched.options`)
OPTIONS = {
    "policy": f"one of {', '.join(POLICIES)} (default dad)",
    "beta": "weight of fileLocality in the Score, in [0, 1] (default 0.8)",
    "delay": "wLimit: most scheduling passes a task is delayed, int >= 0 (default 2)",
    "lshold": "lShold: a free node with a lower Score is local (default 0.5)",
    "interleave": "scheduling by queue with interleaving, bool (default true)",
    "cycle": "s after which a pass is requested while a task is delayed (default 600)",
    "stats": "path of a JSON file of every dispatch decision (benchmarks)",
}


def read_dad_job(batsim_job) -> tuple:
    """``(nb_res, estimate, pools, request)`` of a task: its slots, its
    walltime (inf if none), no pool, its :class:`~iosched.dad.model.TaskRequest`.

    :raises InputError: malformed ``files`` or ``queue`` fields.
    """
    req = read_task(batsim_job.json_dict, f"job {batsim_job.id}")
    return (batsim_job.requested_resources,
            walltime_seconds(getattr(batsim_job, "requested_time", None)), {}, req)


class Dad(PybatsimScheduler):
    """pybatsim scheduler for ``torque-fifo``, ``dad`` and ``ds`` (module doc).

    :raises InputError: unknown policy, bad option value, or an option not
        in :data:`OPTIONS`.
    """

    OPTIONS = OPTIONS
    #: static jobs only (their profile reads the files)
    SERVES = frozenset({STATIC})

    def is_foreign(self, io) -> bool:
        """A job of another part, or a static job with an input that has
        no copy on a node (data-aware dispatch models replicas on nodes)."""
        return super().is_foreign(io) or any(all(c == PFS for c in f.copies) for f in io.inputs)

    def foreign_job(self, batsim_job, io) -> tuple:
        """A foreign job: a task of its slots reading no file its model
        knows (``fileLocality`` 1/2 on every node), in its queue."""
        req = TaskRequest((), batsim_job.json_dict.get("queue", DEFAULT_QUEUE))
        if not isinstance(req.queue, str) or not req.queue:
            raise InputError(f"job {batsim_job.id}: field 'queue' must be a non-empty string, got {req.queue!r}")
        return (batsim_job.requested_resources,
                walltime_seconds(getattr(batsim_job, "requested_time", None)), {}, req)

    def make_core(self, options: dict) -> Scheduler:
        pol = str(options.get("policy", "dad"))
        if pol not in POLICIES:
            raise InputError(f"schedulers/dad.py: option policy={pol!r} is unknown; "
                             f"expected one of {', '.join(POLICIES)}")
        self.policy = pol
        beta = option_number(options, "beta", 0.8, minimum=0, maximum=1)
        delay = option_number(options, "delay", 2, integer=True, minimum=0)
        lshold = option_number(options, "lshold", 0.5)
        cycle = option_number(options, "cycle", 600.0, minimum=0, exclusive_minimum=True)
        interleave = options.get("interleave", True)
        if not isinstance(interleave, bool):
            raise InputError(f"schedulers/dad.py: option 'interleave': expected true or false, got {interleave!r}")
        self.stats_path = options.get("stats")
        if self.stats_path is not None and not isinstance(self.stats_path, str):
            raise InputError("schedulers/dad.py: option 'stats': expected a file path")
        if pol == "torque-fifo":
            self.dispatcher = TorqueFifo()
        else:
            self.dispatcher = DataAwareDispatch(beta, delay, lshold, variant=pol,
                                                interleave=interleave, cycle=cycle)
        self.started: list = []   # (time, job id, node name, {file: replica node})
        self.serving: dict = {}   # node name -> running tasks reading from it remotely
        self._sources: dict = {}  # running job id -> the nodes it reads from remotely
        return Scheduler(self.dispatcher, NodePlacer(), fcfs, read_job=read_dad_job, name="Dad")

    def allocation(self, running, io):
        """The task's slots with the source of each input file: the replica
        read from the task's node (chosen now: it depends on the remote
        readers running); the core sends EXECUTE_JOB with
        ``storage_mapping`` file -> that replica's disk
        (:func:`iosched.sched.ioplan.plan_for`)."""
        job, alloc = running.job, running.allocation
        node = alloc.data
        sources = {f.name: replica_for(f, node, self.serving) for f in job.request.files}
        remote = set(sources.values()) - {node}
        for src in remote:        # a task counts once per node it reads from
            self.serving[src] = self.serving.get(src, 0) + 1
        self._sources[job.id] = remote
        self.started.append((running.start, job.id, node, sources))
        return alloc.with_io(alloc.mapping, alloc.storage_mapping, sources, alloc.gate)

    def completed_id(self, batsim_job):
        """The job's own id; it stops counting as a remote reader of its
        source nodes (``serving``)."""
        for src in self._sources.pop(batsim_job.id, ()):
            self.serving[src] -= 1
        return super().completed_id(batsim_job)

    def onSimulationEnds(self):
        """SIMULATION_ENDS: the core's summary, then the ``stats`` file if asked."""
        super().onSimulationEnds()
        if self.stats_path:
            with open(self.stats_path, "w") as f:
                json.dump({"policy": self.policy, "passes": self.core.passes,
                           "decisions": [d.as_dict() for d in self.dispatcher.decisions],
                           "started": [list(x) for x in self.started]}, f)
