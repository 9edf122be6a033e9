"""Scheduler core shared by the iosched schedulers.

* :mod:`iosched.sched.base` -- :class:`~iosched.sched.base.BaseScheduler`, a
  pybatsim ``BatsimScheduler`` with a waiting queue, an availability profile
  of the compute resources, rejection of jobs that can never run, and the
  FCFS / EASY / conservative / filler scheduling passes.
* :mod:`iosched.sched.registry` -- scheduler names (``fcfs``, ``easy``, ...)
  -> scheduler file under ``schedulers/`` and its pybatsim options.

The launchable scheduler files live in the repository's ``schedulers/``
folder (not an installed package: pybatsim's wheel already installs a
top-level package named ``schedulers``).
"""

from iosched.sched.base import BACKFILLING, ORDERS, BaseScheduler

__all__ = ["BaseScheduler", "BACKFILLING", "ORDERS"]
