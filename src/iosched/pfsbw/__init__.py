"""PFS-bandwidth-aware backfilling of Goponenko et al. (PMBS 2024,
"Workload-adaptive scheduling for efficient use of parallel file systems in
HPC clusters").

* :mod:`iosched.pfsbw.estimator` -- the online per-variety estimator of job
  file-system throughput and runtime (exponentially decaying averages), and
  the "measured" current throughput a scheduler can derive from finished jobs;
* :mod:`iosched.pfsbw.twogroup` -- equations (1)-(5): target throughput,
  two-group threshold ``r*``, ``r_zero``, adjusted target and requirements;
* :mod:`iosched.pfsbw.trackers` -- the reservation trackers of Algorithms 2-7
  on the shared core's availability profile (the file-system throughput is
  the pool ``pfs``) plus the adjusted tracker AT;
* :mod:`iosched.pfsbw.policy` -- Algorithm 1 (Slurm backfill, BackfillMax).

Its workload and platform generators and its reproduction are in the experiment
wing, :mod:`iosched.experiments.pfsbw`.

The scheduler file is :mod:`iosched.schedulers.pfsbw`.
"""
