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
* :mod:`iosched.bench` -- benchmarks (``iosched bench``).
* :mod:`iosched.analysis` -- job and run metrics, campaign tables, figures,
  reports.
"""

__version__ = "0.1.0"

__all__ = ["simulate", "__version__"]


def __getattr__(name):
    # iosched.simulate is imported on first use (PEP 562): scheduler and
    # engine processes import iosched.* and must not pay for pandas and the
    # runner at start-up.
    if name == "simulate":
        from iosched.api import simulate

        return simulate
    raise AttributeError(f"module 'iosched' has no attribute {name!r}")
