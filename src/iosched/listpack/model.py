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

Per-node I/O bandwidth cap (issue 30; the machine of the periodic-I/O line
of work the paper builds on, Aupy, Gainaru & Le Fevre, PMBS 2017, whose
simulator ``vlefevre/IO-scheduling-simu`` has ``Machine(B, b)``): each
compute node reaches the I/O node at ``b`` bytes/s, so a job of ``Q_i``
nodes transfers at most at ``c_i = Q_i b`` (its ``cap``, the workload's
``io.throughput_cap``) and, alone, at ``min(c_i, B)``. Every formula above
then reads ``T_i(min(c_i, B))`` wherever the paper writes ``T_i(B)`` (the
bandwidth a job alone gets); the constraints' bound stays ``B``. Without a
cap (``cap=None``, the earlier model) a job alone gets ``B``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from iosched.errors import InputError

__all__ = ["MIRA_NODES", "MIRA_BLOCK", "UNIFORM_NODES", "UNIFORM_BLOCK", "DEFAULT_BANDWIDTH",
           "MIRA_NODE_BANDWIDTH", "CAP_RATIO", "PeriodicJob", "listpack_machine", "Machine", "io_load", "pack_bandwidth"]

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
#: Per-node bandwidth b to the I/O node on Mira (bytes/s): one I/O node per
#: 128 compute nodes, 4 GB/s per I/O node (BG/Q: two 2 GB/s links from the
#: compute partition; one QDR InfiniBand link to the file system), so
#: ``b = 4 GB/s / 128 = 31.25 MB/s`` and ``P b = 1.536 TB/s = 6.4 B``.
MIRA_NODE_BANDWIDTH = 4e9 / 128
#: ``P b / B`` of Mira (6.4); the Uniform machine (not Mira: 2048 nodes) keeps
#: this ratio, ``b = CAP_RATIO B / P`` (750 MB/s with B = 240 GB/s).
CAP_RATIO = MIRA_NODES * MIRA_NODE_BANDWIDTH / DEFAULT_BANDWIDTH


@dataclass(frozen=True)
class Machine:
    """``nodes`` (P, int), ``block`` (nodes per Batsim resource, int dividing
    P), ``bandwidth`` (B, bytes/s) and ``node_bandwidth`` (b, bytes/s per
    node, the per-node cap; None: no cap, a job alone gets B).

    :raises InputError: non-positive values or a block not dividing P.
    """

    nodes: int
    block: int
    bandwidth: float = DEFAULT_BANDWIDTH
    node_bandwidth: float | None = None

    def __post_init__(self):
        if not (isinstance(self.nodes, int) and isinstance(self.block, int)) or self.nodes < 1 \
                or self.block < 1 or self.nodes % self.block:
            raise InputError(f"machine: nodes={self.nodes!r} must be a positive multiple of "
                             f"block={self.block!r}")
        if not (self.bandwidth > 0 and self.bandwidth < float("inf")):
            raise InputError(f"machine: bandwidth={self.bandwidth!r} must be > 0 and finite (bytes/s)")
        if self.node_bandwidth is not None and not (0 < self.node_bandwidth < float("inf")):
            raise InputError(f"machine: node_bandwidth={self.node_bandwidth!r} must be > 0 and finite "
                             "(bytes/s)")

    def cap(self, nodes: int) -> float | None:
        """A job's own cap ``Q b`` (bytes/s) on ``nodes`` (Q) nodes; None without a cap."""
        return None if self.node_bandwidth is None else nodes * self.node_bandwidth

    @property
    def link_bandwidth(self) -> float | None:
        """Bandwidth of one Batsim resource's link to the I/O node: ``block b``
        (bytes/s); None without a cap."""
        return None if self.node_bandwidth is None else self.block * self.node_bandwidth

    @property
    def resources(self) -> int:
        """Number of Batsim compute resources (``P / block``)."""
        return self.nodes // self.block


def listpack_machine(kind: str, bandwidth: float = DEFAULT_BANDWIDTH, cap: bool = False) -> Machine:
    """The machine of a job protocol ``kind`` (``"mira"``: 49,152 nodes in
    512-node blocks; ``"uniform"``: 2048 one-node resources) with I/O-node
    bandwidth ``bandwidth`` (B, bytes/s) and, with ``cap``, the per-node
    bandwidth b (Mira: :data:`~iosched.listpack.model.MIRA_NODE_BANDWIDTH`,
    31.25 MB/s; Uniform: ``CAP_RATIO B / P``, Mira's ``P b / B = 6.4``).

    :raises KeyError: an unknown kind.
    """
    nodes, block = {"mira": (MIRA_NODES, MIRA_BLOCK), "uniform": (UNIFORM_NODES, UNIFORM_BLOCK)}[kind]
    b = None
    if cap:
        b = MIRA_NODE_BANDWIDTH if kind == "mira" else CAP_RATIO * bandwidth / nodes
    return Machine(nodes, block, bandwidth, b)



@dataclass(frozen=True)
class PeriodicJob:
    """A periodic job: ``nodes`` (Q_i), ``periods`` (n_i), ``w`` (compute
    phase, s), ``v`` (I/O volume per period, bytes), ``x`` (the drawn I/O
    proportion, for the record), ``cap`` (bytes/s: the most the job can
    transfer at, ``Q b`` under the per-node cap; None: no cap).

    Every method given a bandwidth ``b`` uses ``min(b, cap)``: the job
    never transfers faster than its cap.

    :raises InputError: a cap that is not a finite number > 0.
    """

    nodes: int
    periods: int
    w: float
    v: float
    x: float = 0.0
    cap: float | None = None

    def __post_init__(self):
        if self.cap is not None and not (0 < self.cap < float("inf")):
            raise InputError(f"job: cap={self.cap!r} must be > 0 and finite (bytes/s)")

    @classmethod
    def of(cls, io, x: float = 0.0) -> "PeriodicJob":
        """The job of an I/O model :class:`iosched.sched.iojob.IOJob` with
        ``nodes`` and ``periodic`` set (its ``throughput_cap`` is the cap)
        and the draw's ``x``."""
        p = io.periodic
        return cls(io.nodes, p.periods, float(p.compute), float(p.bytes), float(x),
                   None if io.throughput_cap is None else float(io.throughput_cap))

    def rate(self, b: float) -> float:
        """Bandwidth the job gets when ``b`` (bytes/s) is available to it:
        ``min(b, cap)`` (``b`` without a cap)."""
        return b if self.cap is None else min(b, self.cap)

    def time(self, b: float) -> float:
        """Equation (1): ``n (w + v / rate(b))`` (s) with I/O bandwidth ``b``
        (bytes/s) available."""
        return self.periods * (self.w + self.v / self.rate(b))

    def io_time(self, b: float) -> float:
        """Time of one I/O phase with bandwidth ``b`` available: ``v / rate(b)`` (s)."""
        return self.v / self.rate(b)

    def bandwidth(self, B: float) -> float:
        """Average bandwidth ``n v / T(B)`` (bytes/s); 0 for a job without I/O."""
        t = self.time(B)
        return self.periods * self.v / t if t > 0 else 0.0

    def characteristic_time(self, B: float) -> float:
        """One period alone on the machine: ``w + v / rate(B)`` (s)."""
        return self.w + self.io_time(B)


def io_load(jobs: Sequence[PeriodicJob], P: int, B: float) -> float:
    """Equation (2): total I/O time at bandwidth ``B`` (the I/O node's busy
    time) over the processor-time lower bound ``sum (Q_i / P) T_i(B)``
    (dimensionless; ``T_i(B)`` at the job's own rate under a cap).

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
