"""iosched: I/O-aware batch scheduling research on Batsim.

Subpackages:

* :mod:`iosched.engine` -- the embedded Batsim 4.2.1-compatible engine
  (``iosched-batsim``), SimGrid computes every computation and transfer.
* :mod:`iosched.workloads` -- Standard Workload Format reader and Batsim
  workload JSON converter.
* :mod:`iosched.platforms` -- SimGrid platform XML generators.
* :mod:`iosched.sched.profile` -- the availability profile (timeline of
  reservations) shared by all schedulers.
* :mod:`iosched.run` -- starts an engine and a scheduler, robin files.
* :mod:`iosched.campaign` -- experiment campaigns on Dask.
* :mod:`iosched.bench` -- benchmarks (``python -m iosched.bench``).
* :mod:`iosched.analysis` -- job and run metrics, campaign tables, figures,
  reports.
"""

__version__ = "0.1.0"
