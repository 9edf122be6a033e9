"""Burst-buffer scheduling (Kopanski & Rzadca, Euro-Par 2021, arXiv 2109.00082).

* :mod:`iosched.bb.model` -- the scheduler-side job model: a job's request
  (nodes, burst-buffer bytes per node) and what a placement holds; how a
  started job runs (stage-in, compute phases, checkpoints drained to the PFS
  during the next compute phase, stage-out, as SimGrid parallel tasks) is
  the core's, :mod:`iosched.sched.bbrun` through
  :func:`iosched.sched.ioplan.plan_for`;
* :mod:`iosched.bb.placement` -- compute-node and burst-buffer choice in the
  dragonfly, window queries on an :class:`~iosched.sched.profile.AvailabilityProfile`;
* :mod:`iosched.bb.plan` -- plan-based scheduling with simulated annealing;
* :mod:`iosched.bb.search` -- the order plan-alpha applies at each pass
  (:class:`~iosched.bb.search.PlanOrder`: search state, evaluator choice);
* :mod:`iosched.bb.compiled` -- the search's list scheduling in machine code (numba);
* :mod:`iosched.bb.legacy` -- iosched's variants before issue 13
  (``sjf-bb-head``, ``search: "iosched"``), kept selectable.

Its workload and platform generators and its reproduction are in the experiment
wing, :mod:`iosched.experiments.bb`.

The launcher (options, Batsim side) is :mod:`iosched.schedulers.burstbuffer` (class ``Burstbuffer``).
See ``docs/burst-buffers.md``.
"""
