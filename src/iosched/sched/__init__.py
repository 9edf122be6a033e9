"""The scheduler core shared by every family of iosched schedulers.

A scheduler is *order x policy x placer* on one core; a family adds a placer
and/or a policy and nothing else (see ``docs/architecture.md``):

* :mod:`iosched.sched.adapter` -- :class:`PybatsimScheduler`, the pybatsim
  ``BatsimScheduler`` that translates Batsim events into core calls and the
  core's decisions into Batsim's;
* :mod:`iosched.sched.executor` -- :class:`Executor`: runs a started job
  from its allocation and its :class:`Plan` (the workload job itself, or
  dynamic phase jobs with gates), and reports its end;
* :mod:`iosched.sched.ioplan` -- :func:`plan_for`: a started job's plan
  derived from its I/O model and its allocation, for every scheduler; the
  parts of the model a scheduler serves (``SERVES``) and the reason a job
  of another part is rejected;
* :mod:`iosched.sched.bbrun` -- how a burst-buffer job runs: its stage-in,
  compute, checkpoint, drain and stage-out phases as Batsim profiles;
* :mod:`iosched.sched.iojob` -- the I/O job model: a workload job's extra
  field ``io`` (schema ``io_job.schema.json``; ``docs/io-job-model.md``),
  each family's earlier fields converted when read;
* :mod:`iosched.sched.core` -- :class:`Scheduler`: queue, running jobs,
  rejections, job ends and overruns, one pass per Batsim message;
* :mod:`iosched.sched.machine` -- :class:`Machine`: compute nodes (one
  resource each, or several core resources with a memory size) and storage
  resources, from SIMULATION_BEGINS;
* :mod:`iosched.sched.profile` -- the availability profile of future
  reservations (resources + scalar pools);
* :mod:`iosched.sched.timeline` -- what-if snapshots of the profile with
  push/pop undo, for list scheduling;
* :mod:`iosched.sched.placer` -- :class:`Placer` ``fit(job, window) ->
  Allocation``, and the first-fit placer;
* :mod:`iosched.sched.orders` -- queue orders (fcfs, sjf);
* :mod:`iosched.sched.policies` -- fcfs, EASY, conservative, filler;
* :mod:`iosched.sched.listschedule` -- list scheduling of queue orders
  (plan-based policies).

The launchable scheduler files, and the registry of their names
(:mod:`iosched.schedulers.registry`), are :mod:`iosched.schedulers`.
"""
