"""Benchmarks (they assert nothing; their figures depend on the machine):

* :mod:`iosched.experiments.bench.kth` -- ``iosched bench`` (``make bench``):
  the embedded engine on the full KTH-SP2 trace;
* :mod:`iosched.experiments.bench.bb` -- ``iosched bench bb``: speed of the
  burst-buffer schedulers;
* :mod:`iosched.experiments.bench.campaign` -- ``iosched bench campaign``:
  parallel efficiency of a campaign on this machine's cores;
* :mod:`iosched.experiments.bench.scale` -- ``iosched bench scale``: wall
  time and the engine's and the scheduler's peak memory on a synthetic
  machine of up to 10,000 nodes and 100,000 jobs, and how they grow;
* :mod:`iosched.experiments.common` -- machine calibration and result files
  (shared with the reproductions).
"""
