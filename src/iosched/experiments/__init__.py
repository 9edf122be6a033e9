"""The experiment wing: everything that sets up, runs and reports the
papers' experiments, kept apart from the algorithms (issue 26).

* :mod:`iosched.experiments.platforms` -- the SimGrid platform generators
  (one module, ``<kind>_xml``) and their ``iosched platform`` commands;
* :mod:`iosched.experiments.bb`, :mod:`~iosched.experiments.locality`,
  :mod:`~iosched.experiments.listpack`, :mod:`~iosched.experiments.dad`,
  :mod:`~iosched.experiments.pfsbw` -- each family's workload generator and
  reproduction (and locality's engine runs, figures and the artifact's loop);
* :mod:`iosched.experiments.bench` -- the benchmarks.

Their commands are the ``iosched workload|platform|repro|bench`` groups, listed
in one table, :data:`iosched.cli.KINDS`.

Algorithm packages (``iosched.sched``, ``iosched.engine``,
``iosched.batsim``, the family packages, ``iosched.schedulers``) never
import this wing (``tests/test_layout.py``).
"""
