"""Queue orders: the key a waiting job is sorted by.

An order is a function ``key(job) -> tuple`` over a
:class:`~iosched.sched.job.Job`; ties are always broken by arrival rank, so
every order is total and deterministic. Sources: FCFS and SJF as in
Mu'alem & Feitelson (IEEE TPDS 12(6), 2001) and batsched's queue orders.
"""

from __future__ import annotations

__all__ = ["fcfs", "sjf", "ORDERS"]


def fcfs(job) -> tuple:
    """First come, first served: submission (arrival) order."""
    return (job.seq,)


def sjf(job) -> tuple:
    """Shortest job first: requested time (the runtime estimate) ascending,
    ties in arrival order."""
    return (job.estimate, job.seq)


#: Order name -> key function.
ORDERS = {"fcfs": fcfs, "sjf": sjf}
