"""Equations (1)-(5) of Goponenko et al. (PMBS 2024, Section VII and
Algorithm 5 lines 3-8): the workload-adaptive target and the "two-group"
approximation.

A job is described by a :class:`Demand`: ``nodes`` (n_j), ``rate`` (r_j,
estimated file-system throughput, bytes/s) and ``duration`` (s: d_j for a
waiting job, the remaining ``b_j + d_j - t_now`` for a running one).

Rules of the implementation (``algo74/slurm``, branch
``workload-adaptive-paper-2024``, ``backfill_licenses.c::_setup_two_groups``):

* the target is total I/O volume over total area, running remainders and
  waiting jobs together: ``R~ = N * sum r_j d_j / sum n_j d_j`` (eq. 1,
  Algorithm 5 lines 3-5); with no area left it is the throughput limit;
* ``r*`` is the throughput per node of the waiting job at which the waiting
  jobs, sorted by ``r_j / n_j``, reach half of their area ``sum n_j d_j``
  (the first job whose cumulative area is >= 50 %, eq. 2);
* ``r_zero`` is the area-weighted mean throughput per node of the waiting
  jobs with ``r_j / n_j <= r*`` (eq. 3);
* ``R~' = R~ - N r_zero`` (eq. 4) and ``r_j' = r_j - n_j r_zero`` for a
  regular job (``r_j > n_j r*``), 0 for a zero job (eq. 5).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

__all__ = ["Demand", "TwoGroup", "target_throughput", "threshold", "two_group"]


class Demand(NamedTuple):
    """``nodes`` (int), ``rate`` (bytes/s), ``duration`` (s)."""

    nodes: int
    rate: float
    duration: float


class TwoGroup(NamedTuple):
    """Result of :func:`two_group`: ``target`` (R~, bytes/s), ``r_star``
    (bytes/s per node), ``r_zero`` (bytes/s per node), ``adjusted`` (R~',
    bytes/s)."""

    target: float
    r_star: float
    r_zero: float
    adjusted: float

    def is_regular(self, nodes: int, rate: float) -> bool:
        """Whether a job is a "regular job" (``r_j > n_j r*``)."""
        return rate > nodes * self.r_star

    def adjusted_rate(self, nodes: int, rate: float) -> float:
        """``r_j'`` of eq. (5) (bytes/s)."""
        return rate - nodes * self.r_zero if self.is_regular(nodes, rate) else 0.0


def target_throughput(running: Iterable[Demand], waiting: Iterable[Demand], nb_nodes: int,
                      default: float) -> float:
    """``R~`` (bytes/s) of eq. (1) over the running jobs' remainders (those
    with a positive remaining duration) and the waiting jobs; ``default``
    when the total area is zero."""
    volume = area = 0.0
    for d in list(running) + list(waiting):
        if d.duration > 0:
            volume += d.rate * d.duration
            area += d.nodes * d.duration
    return volume * nb_nodes / area if area > 0 else default


def threshold(waiting: list) -> tuple:
    """``(r*, r_zero)`` (bytes/s per node) of eqs. (2)-(3) over the waiting
    :class:`Demand` list; ``(0, 0)`` when it is empty."""
    if not waiting:
        return 0.0, 0.0
    jobs = sorted(waiting, key=lambda d: d.rate / d.nodes)
    areas = [d.nodes * d.duration for d in jobs]
    half = 0.5 * sum(areas)
    i, acc = 0, areas[0]
    while i < len(jobs) - 1 and acc < half:
        i += 1
        acc += areas[i]
    r_star = jobs[i].rate / jobs[i].nodes
    area = volume = 0.0
    for d, a in zip(jobs, areas):
        if d.rate / d.nodes > r_star:
            break
        area += a
        volume += d.rate * d.duration
    return r_star, (volume / area if area > 0 else 0.0)


def two_group(running: Iterable[Demand], waiting: Iterable[Demand], nb_nodes: int, default: float,
              naive: bool = False) -> TwoGroup:
    """Target, threshold, ``r_zero`` and adjusted target (eqs. 1-4).

    :param naive: the naive workload-adaptive scheduler (no two-group
        approximation): ``r* = r_zero = 0``, so only jobs without file-system
        use are zero jobs and ``R~' = R~``.
    """
    waiting = list(waiting)
    target = target_throughput(running, waiting, nb_nodes, default)
    r_star, r_zero = (0.0, 0.0) if naive else threshold(waiting)
    return TwoGroup(target, r_star, r_zero, target - nb_nodes * r_zero)
