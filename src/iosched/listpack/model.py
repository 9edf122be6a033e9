"""Machine and job model of Jeannot, Pallez & Vidal (IJHPCA 2023),
sections "Machine Model", "Job Model" and "Workload characterization".

Machine: one rack of ``P`` compute nodes sharing one I/O node of bandwidth
``B`` (bytes/s) to the parallel file system. In Batsim one compute resource
stands for a fixed block of ``block`` nodes (Mira: 512 nodes, its smallest
partition; Uniform: 1 node), so a job of ``Q`` nodes asks ``Q / block``
resources; the I/O node is the PFS host's one link of bandwidth ``B``.

Job J_i: ``Q_i`` nodes, ``n_i`` periods, each a compute phase of ``w_i``
seconds then an I/O phase moving ``v_i`` bytes (the paper's periodic jobs:
``w_{i,j} = w_i``, ``v_{i,j} = v_i``).

* equation (1): ``T_i(b) = n_i (w_i + v_i / b)`` -- execution time with I/O
  bandwidth ``b``; the time *alone on the machine* is ``T_i(B)``;
* average bandwidth ``beta_i = n_i v_i / T_i(B)`` (bytes/s; section "Chosen
  approach: average I/O bandwidth");
* characteristic time ``w_i + v_i / B`` (s; one period, section "Variants
  for building packs");
* equation (2): ``alpha = sum_i n_i v_i / B / sum_i (Q_i / P) T_i(B)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from iosched.errors import InputError

__all__ = ["MIRA_NODES", "MIRA_BLOCK", "UNIFORM_NODES", "UNIFORM_BLOCK", "DEFAULT_BANDWIDTH",
           "PeriodicJob", "Machine", "io_load", "pack_bandwidth"]

#: Mira's compute nodes (48 racks x 1024), the largest Mira job of the paper.
MIRA_NODES = 49152
#: Nodes per Batsim resource for Mira workloads (Mira's smallest partition).
MIRA_BLOCK = 512
#: Compute nodes of the Uniform protocol's machine (its largest job, 2^11).
UNIFORM_NODES = 2048
#: Nodes per Batsim resource for Uniform workloads.
UNIFORM_BLOCK = 1
#: I/O-node bandwidth B (bytes/s): Mira's GPFS file-system bandwidth, 240 GB/s.
DEFAULT_BANDWIDTH = 240e9


@dataclass(frozen=True)
class Machine:
    """``nodes`` (P, int), ``block`` (nodes per Batsim resource, int dividing
    P) and ``bandwidth`` (B, bytes/s).

    :raises InputError: non-positive values or a block not dividing P.
    """

    nodes: int
    block: int
    bandwidth: float = DEFAULT_BANDWIDTH

    def __post_init__(self):
        if not (isinstance(self.nodes, int) and isinstance(self.block, int)) or self.nodes < 1 \
                or self.block < 1 or self.nodes % self.block:
            raise InputError(f"machine: nodes={self.nodes!r} must be a positive multiple of "
                             f"block={self.block!r}")
        if not (self.bandwidth > 0 and self.bandwidth < float("inf")):
            raise InputError(f"machine: bandwidth={self.bandwidth!r} must be > 0 and finite (bytes/s)")

    @property
    def resources(self) -> int:
        """Number of Batsim compute resources (``P / block``)."""
        return self.nodes // self.block


@dataclass(frozen=True)
class PeriodicJob:
    """A periodic job: ``nodes`` (Q_i), ``periods`` (n_i), ``w`` (compute
    phase, s), ``v`` (I/O volume per period, bytes), ``x`` (the drawn I/O
    proportion, for the record)."""

    nodes: int
    periods: int
    w: float
    v: float
    x: float = 0.0

    def time(self, b: float) -> float:
        """Equation (1): ``n (w + v / b)`` (s) with I/O bandwidth ``b`` (bytes/s)."""
        return self.periods * (self.w + self.v / b)

    def io_time(self, b: float) -> float:
        """Time of one I/O phase at bandwidth ``b``: ``v / b`` (s)."""
        return self.v / b

    def bandwidth(self, B: float) -> float:
        """Average bandwidth ``n v / T(B)`` (bytes/s); 0 for a job without I/O."""
        t = self.time(B)
        return self.periods * self.v / t if t > 0 else 0.0

    def characteristic_time(self, B: float) -> float:
        """One period alone on the machine: ``w + v / B`` (s)."""
        return self.w + self.v / B


def io_load(jobs: Sequence[PeriodicJob], P: int, B: float) -> float:
    """Equation (2): total I/O time at bandwidth ``B`` over the processor-time
    lower bound ``sum (Q_i / P) T_i(B)`` (dimensionless).

    :raises InputError: no job or a zero denominator.
    """
    num = sum(j.periods * j.v / B for j in jobs)
    den = sum(j.nodes / P * j.time(B) for j in jobs)
    if not den > 0:
        raise InputError("io_load: the workload has no processor time")
    return num / den


def pack_bandwidth(jobs: Iterable[PeriodicJob], B: float) -> float:
    """Average bandwidth of a pack (bytes/s): its total I/O volume over its
    duration ``max T_i(B)`` (section "I/O-aware Pack-Scheduling"); 0 when empty."""
    jobs = list(jobs)
    if not jobs:
        return 0.0
    dur = max(j.time(B) for j in jobs)
    return sum(j.periods * j.v for j in jobs) / dur if dur > 0 else 0.0
