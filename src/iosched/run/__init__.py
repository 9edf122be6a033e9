"""Running simulations: one run (engine + scheduler), process supervision,
robin files, and the record each run leaves in its output folder.

* :mod:`iosched.run.simulation` -- :func:`~iosched.run.simulation.run_simulation`
  (one supervised run on a loopback port) and the engine commands;
* :mod:`iosched.run.robin` -- robin experiment files (read, write, execute)
  and the safe YAML mapping loader;
* :mod:`iosched.run.supervise` -- process supervision: sessions, watching,
  timeouts, cleanup, subreaper, signals;
* :mod:`iosched.run.result` -- :class:`~iosched.run.result.RunResult`,
  :class:`~iosched.run.result.RunError`, the engine's output files;
* the run record ``command.json`` is :mod:`iosched.record` (below both the
  runner that writes it and the analysis that reads it);
* :mod:`iosched.run.hosts` -- the compute hosts of an engine command;
* :mod:`iosched.run.affinity` -- one CPU for the engine and its scheduler;
* :mod:`iosched.run.cli` -- the ``iosched run`` command.
"""
