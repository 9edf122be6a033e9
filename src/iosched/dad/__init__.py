"""Data-aware task dispatch on non-uniform storage access (Li & Tatebe,
"Data-aware task dispatching for batch queuing system", IEEE Systems Journal
11(2), 2017).

* :mod:`iosched.dad.model` -- files, replicas, fileLocality (eq. 1) and
  Score (eq. 2);
* :mod:`iosched.dad.dispatch` -- the Torque FIFO dispatcher, DAD
  (Algorithm 1) and delay scheduling alone, on the shared core.

Its workload and platform generators and its reproduction are in the experiment
wing, :mod:`iosched.experiments.dad`.

The scheduler is :mod:`iosched.schedulers.dad` (names ``torque-fifo``,
``dad``, ``dad-ds``); see ``docs/dad.md``.
"""
