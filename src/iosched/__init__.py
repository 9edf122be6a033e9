"""iosched: I/O-aware batch scheduling research on Batsim.

Subpackages:

* :mod:`iosched.engine` -- the embedded Batsim 4.2.1-compatible engine
  (``iosched-batsim``), SimGrid computes every computation and transfer.
* :mod:`iosched.batsim` -- Batsim's conventions (job ids, dynamic jobs).
* :mod:`iosched.sched` -- the scheduler core shared by every family.
* :mod:`iosched.bb`, :mod:`iosched.locality`, :mod:`iosched.listpack`,
  :mod:`iosched.pfsbw`, :mod:`iosched.dad` -- each family's algorithm.
* :mod:`iosched.schedulers` -- the launchable schedulers and their registry.
* :mod:`iosched.workloads` -- Standard Workload Format reader, Batsim
  workload JSON converter and the one workload writer.
* :mod:`iosched.run` -- starts an engine and a scheduler, robin files.
* :mod:`iosched.campaign` -- experiment campaigns on Dask.
* :mod:`iosched.analysis` -- job and run metrics, campaign tables, figures,
  reports.
* :mod:`iosched.experiments` -- the experiment wing: platform generators,
  each family's workload generators and reproductions, benchmarks.
* :mod:`iosched.paths` -- the repository root, the shared data folder.
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
