"""Burst-buffer scheduling (Kopanski & Rzadca, Euro-Par 2021, arXiv 2109.00082).

* :mod:`iosched.bb.model` -- the I/O-aware job model: a workload job becomes
  one dynamically registered Batsim job whose composed profile runs stage-in,
  compute phases, checkpoints (drained to the PFS during the next compute
  phase) and stage-out as SimGrid parallel tasks;
* :mod:`iosched.bb.workload` -- the KTH-SP2 -> Batsim JSON generator with
  log-normal burst-buffer requests, its first-1000 and 16 three-week parts;
* :mod:`iosched.bb.placement` -- compute-node and burst-buffer choice in the
  dragonfly, window queries on an :class:`~iosched.sched.profile.AvailabilityProfile`;
* :mod:`iosched.bb.plan` -- plan-based scheduling with simulated annealing;
* :mod:`iosched.bb.search` -- the order plan-alpha applies at each pass
  (:class:`~iosched.bb.search.PlanOrder`: search state, evaluator choice);
* :mod:`iosched.bb.compiled` -- the search's list scheduling in machine code (numba);
* :mod:`iosched.bb.legacy` -- iosched's variants before issue 13
  (``sjf-bb-head``, ``search: "iosched"``), kept selectable.

The launcher (options, Batsim side) is :mod:`iosched.schedulers.burstbuffer` (class ``Burstbuffer``).
See ``docs/burst-buffers.md``.
"""
