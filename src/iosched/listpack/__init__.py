"""I/O-aware list scheduling vs pack scheduling (Jeannot, Pallez & Vidal,
"I/O-aware job-scheduling: exploiting the impacts of workload
characterizations to select the mapping strategy", IJHPCA 2023).

* :mod:`iosched.listpack.model` -- the machine (P nodes, one I/O node of
  bandwidth B) and the periodic job model (equation 1), the I/O load alpha
  (equation 2), average bandwidths and characteristic times;
* :mod:`iosched.listpack.packs` -- pack building (average constraint) and
  the pack policy (Random / Max / Char orders, optional backfilling);
* :mod:`iosched.listpack.arbiter` -- the scheduler-side I/O arbiter
  (``exclusive``: FIFO, one I/O phase at a time; ``shared``: no arbitration);
* :mod:`iosched.listpack.metrics` -- stretch, utilization, idle ratio and
  resource-usage time series from Batsim's ``_jobs.csv``.

Its workload and platform generators and its reproduction are in the experiment
wing, :mod:`iosched.experiments.listpack`.

The scheduler is :mod:`iosched.schedulers.listpack`; see ``docs/listpack.md``.
"""
