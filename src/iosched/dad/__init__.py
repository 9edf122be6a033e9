"""Data-aware task dispatch on non-uniform storage access (Li & Tatebe,
"Data-aware task dispatching for batch queuing system", IEEE Systems Journal
11(2), 2017).

* :mod:`iosched.dad.platform` -- compute nodes that are storage nodes
  (node-local disks, 1 Gbit/s network);
* :mod:`iosched.dad.model` -- files, replicas, fileLocality (eq. 1) and
  Score (eq. 2);
* :mod:`iosched.dad.dispatch` -- the Torque FIFO dispatcher, DAD
  (Algorithm 1) and delay scheduling alone, on the shared core;
* :mod:`iosched.dad.workload` -- thput-gfpio / readgf, BLAST-like and
  trace-driven workloads, and the workload checker;
* :mod:`iosched.dad.reproduce` -- the reproduction of Section V.

The scheduler is :mod:`iosched.schedulers.dad` (names ``torque-fifo``,
``dad``, ``dad-ds``); see ``docs/dad.md``.
"""
