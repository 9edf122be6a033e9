"""Benchmarks (they assert nothing; their figures depend on the machine):

* :mod:`iosched.experiments.bench.kth` -- ``python -m iosched.experiments.bench`` (``make bench``):
  the embedded engine on the full KTH-SP2 trace;
* :mod:`iosched.experiments.bench.bb` -- ``python -m iosched.experiments.bench.bb``: speed of the
  burst-buffer schedulers;
* :mod:`iosched.experiments.bench.campaign` -- ``python -m iosched.experiments.bench.campaign``:
  parallel efficiency of a campaign on this machine's cores;
* :mod:`iosched.experiments.bench.scale` -- ``python -m iosched.experiments.bench.scale``: wall
  time and the engine's and the scheduler's peak memory on a synthetic
  machine of up to 10,000 nodes and 100,000 jobs, and how they grow;
* :mod:`iosched.experiments.common` -- machine calibration and result files
  (shared with the reproductions).
"""
