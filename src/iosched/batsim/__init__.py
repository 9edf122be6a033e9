"""Batsim 4.2.1 conventions shared by the engine, the schedulers and the
analysis: each one is written down here once.

* :mod:`iosched.batsim.jobs` -- job identifiers (``workload!local``), the
  walltime rule, the final job states;
* :mod:`iosched.batsim.outputs` -- the columns and number format of the
  ``_jobs.csv``, ``_schedule.csv`` and ``_machine_states.csv`` exports;
* :mod:`iosched.batsim.job_metrics` -- a job's runtime, waiting time,
  turnaround, slowdown and bounded slowdown from its times (derived once,
  for the engine's exports and the analysis alike);
* :mod:`iosched.batsim.dynamic` -- how a dynamic job that runs a workload job
  is named, so that metrics can merge the two.
"""
