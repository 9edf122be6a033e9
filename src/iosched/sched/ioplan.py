"""How a job's I/O executes: its I/O model plus its Allocation -> a Plan.

One function, :func:`plan_for`, turns a started job's I/O model
(:class:`~iosched.sched.iojob.IOJob`, the workload's) and the placer's
:class:`~iosched.sched.placer.Allocation` (the scheduler's: compute
resources, burst-buffer storage, where each input is read from and whether
it is cached, the gate of its writes, the mappings of a static job) into
the :class:`~iosched.sched.executor.Plan` the core's executor runs as
Batsim-standard jobs and profiles (Batsim 4.2.1). A job's I/O therefore no
longer depends on which scheduler runs it; a family gives only placers,
policies and scheduler-side models. The part of the model that decides the
plan (:func:`part_of`):

* :data:`BURST_BUFFER` (``io.burst_buffer``, with ``io.compute.flops`` /
  ``com``): stage-in, compute phases with checkpoints and drains,
  stage-out, on the allocation's compute nodes, the burst-buffer storage
  node of each (``allocation.data``: compute id -> storage id) and the PFS
  (:func:`iosched.sched.bbrun.build_run`; one dynamic job per phase, or the
  embedded-only composed encoding, :attr:`Rules.composed`); an allocation
  without burst-buffer storage (a scheduler without a burst-buffer
  placer) runs the same steps on the PFS directly: reads from and
  checkpoints and output to the PFS, no stage-in or drain through a
  burst buffer (iosched's reading: what a Slurm job gets on a machine
  without DataWarp); walltime rule
  :data:`~iosched.sched.executor.DEADLINE` (Kopanski & Rzadca, Euro-Par
  2021, Section 5.1);
* :data:`PERIODIC` (``io.periodic``): per period a ``delay`` of
  ``compute`` s on all the job's resources, then a
  ``parallel_homogeneous_pfs`` write of ``bytes`` to the PFS from its first
  resource (``storage_mapping`` pfs -> the PFS) -- or, when the job has a
  ``throughput_cap`` (the per-node cap ``Q_i b``, issue 30), ``bytes / k``
  from each of its first ``k`` resources (all ``r``, or as many as reach
  the file system's bandwidth, :attr:`Rules.io_bandwidth`), so that each
  resource's link to the I/O node carries its share and the platform
  enforces the cap -- each write gated by
  ``allocation.gate`` when the scheduler gives one (list/pack's FIFO I/O
  arbiter), else started at once (SimGrid shares the bandwidth); no
  walltime, :data:`~iosched.sched.executor.UNBOUNDED` (Jeannot, Pallez &
  Vidal, IJHPCA 2023, Section 3);
* :data:`INPUTS` (``io.inputs`` and ``io.compute.delay``): per input, in
  order, a ``parallel_homogeneous_pfs`` read of its bytes onto the first
  resource from its source (``allocation.inputs``: ``"pfs"``, a node whose
  disk holds a copy, :data:`CACHED`: no read, or an
  :class:`~iosched.sched.executor.At`: being loaded by another job until
  then, the computation waits for it; default: its first copy), then a
  ``delay`` of ``compute.delay`` s on all its resources (less
  ``allocation.elapsed``, the part a job running before the trace began
  has done, at least 1 s); input ``k`` is
  phase ``k``, the computation phase ``len(inputs)`` whatever is skipped;
  walltime rule :data:`~iosched.sched.executor.LEFT` (Gonthier et al.,
  RR-9497, Section 3);
* :data:`STATIC` (none of these: the job's own Batsim profile does its
  I/O; data-aware dispatch, PFS-bandwidth-aware backfilling): EXECUTE_JOB
  of the workload job with ``allocation.mapping`` and
  ``allocation.storage_mapping`` -- by default each input's first copy
  (its label, the file id, -> the PFS or the copy node's disk).

:class:`Rules` holds what a family's artifact fixes about the encoding
(walltime rule, composed profiles, whole seconds, float32 sizes), so that
each family's schedules stay byte for byte what they were.

Which parts a scheduler's family models is its launcher's ``SERVES``
(:attr:`iosched.sched.adapter.PybatsimScheduler.SERVES`); a job of another
part runs on the core's default allocation (option ``io_fallback``), or is
rejected; :func:`unserved` gives the one-line reason a job is rejected at
submission.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np
from procset import ProcSet

from iosched.batsim.jobs import NO_WALLTIME, walltime_seconds
from iosched.errors import InputError
from iosched.sched.bbrun import RunRequest, build_run, phase_jobs
from iosched.sched.executor import (COMPUTE_TIER, DEADLINE, DISK_TIER, LEFT, PFS_TIER, RULES, UNBOUNDED,
                                   At, Flow, Phase, Plan)
from iosched.sched.iojob import PFS, IOJob

__all__ = ["BURST_BUFFER", "PERIODIC", "INPUTS", "STATIC", "PARTS", "DYNAMIC_PARTS", "CACHED",
           "DISK_SUFFIX", "GB", "Rules", "part_of", "disk_host", "storage_id", "pfs_of", "unserved",
           "plan_for", "input_sources", "static_flows"]

#: The part ``io.burst_buffer`` (stage-in, compute and checkpoints, stage-out).
BURST_BUFFER = "io.burst_buffer"
#: The part ``io.periodic`` (periods of compute then a write to the PFS).
PERIODIC = "io.periodic"
#: The part ``io.inputs`` + ``io.compute.delay`` (reads, then a delay).
INPUTS = "io.inputs"
#: No part the core runs: the job's own Batsim profile does its I/O.
STATIC = "static"
#: Every part, in the order :func:`part_of` looks for them.
PARTS = (BURST_BUFFER, PERIODIC, INPUTS, STATIC)
#: The parts run as dynamic jobs (the engine needs ``--enable-dynamic-jobs``).
DYNAMIC_PARTS = frozenset({BURST_BUFFER, PERIODIC, INPUTS})
#: Source of an input already in the node's memory: no read.
CACHED = "cached"
#: Storage host of a node's local disk: the node's name + this suffix
#: (the NUSA platforms, :func:`iosched.experiments.platforms.nusa_xml`).
DISK_SUFFIX = "_disk"
#: Bytes per GB (the locality artifact's sizes, :attr:`Rules.float32_gb`).
GB = 1e9

#: The walltime rule of each part when :attr:`Rules.rule` is None.
PART_RULES = {BURST_BUFFER: DEADLINE, PERIODIC: UNBOUNDED, INPUTS: LEFT}

#: What a scheduler misses to serve a part (the end of a rejection reason).
_MISSING = {
    BURST_BUFFER: "has no burst-buffer placer",
    PERIODIC: "does not run periodic jobs",
    INPUTS: "does not run jobs that read inputs then compute",
    STATIC: "runs only jobs of",
}


@dataclass(frozen=True)
class Rules:
    """What a family's artifact fixes about how its jobs are encoded (kept
    so that its schedules stay the same byte for byte).

    :param rule: the walltime rule (:data:`~iosched.sched.executor.DEADLINE`,
        :data:`~iosched.sched.executor.LEFT`,
        :data:`~iosched.sched.executor.UNBOUNDED`); None: the part's
        (:data:`PART_RULES`).
    :param composed: burst-buffer jobs run as one dynamic job of a composed
        profile (embedded engine only; Kopanski & Rzadca's encoding option
        ``encoding: composed``), not one job per phase.
    :param whole_seconds: the walltime is rounded and ``compute.delay``
        rounded down to whole seconds (Gonthier et al.'s artifact: an
        integer clock).
    :param float32_gb: input sizes are read as float32 GB (Gonthier et al.'s
        artifact keeps sizes in GB as float32): ``float(float32(bytes /
        1e9)) * 1e9`` bytes, a relative difference below 6e-8.
    :param io_bandwidth: the file system's bandwidth B (bytes/s) beyond
        which more writers add nothing: a periodic job with a
        ``throughput_cap`` above it writes from its first ``ceil(r B /
        cap)`` resources only (their links reach B, so the rate is the same
        ``min(cap, B)`` and the parallel task is smaller: a 2048-node job
        of the Uniform machine writes from 320 hosts); None: from all ``r``.
    :raises ValueError: an unknown walltime rule.
    """

    rule: Optional[str] = None
    composed: bool = False
    whole_seconds: bool = False
    float32_gb: bool = False
    io_bandwidth: Optional[float] = None

    def __post_init__(self):
        if self.rule is not None and self.rule not in RULES:
            raise ValueError(f"unknown walltime rule {self.rule!r}; expected one of {', '.join(RULES)}")


def part_of(io: IOJob) -> str:
    """The part of ``io`` that decides how the job runs: :data:`BURST_BUFFER`
    if it has ``burst_buffer``, else :data:`PERIODIC` if it has
    ``periodic``, else :data:`INPUTS` if it has inputs and
    ``compute.delay``, else :data:`STATIC`."""
    if io.burst_buffer is not None:
        return BURST_BUFFER
    if io.periodic is not None:
        return PERIODIC
    if io.inputs and io.compute is not None and io.compute.delay is not None:
        return INPUTS
    return STATIC


def disk_host(copy: str) -> str:
    """The storage host holding a copy: ``"pfs"`` for the PFS, else the
    copy node's disk (``node`` + :data:`DISK_SUFFIX`)."""
    return PFS if copy == PFS else copy + DISK_SUFFIX


def storage_id(storage: Mapping[int, str], name: str) -> Optional[int]:
    """The lowest resource id of the storage host ``name`` in ``storage``
    (id -> host name, :attr:`iosched.sched.machine.Machine.storage`), or None."""
    ids = [rid for rid, n in storage.items() if n == name]
    return min(ids) if ids else None


def pfs_of(storage: Mapping[int, str]) -> Optional[int]:
    """The PFS's resource id: the storage host named ``"pfs"`` (lowest id),
    else the platform's only storage host (the one Batsim uses for a label
    without ``storage_mapping``), else None."""
    rid = storage_id(storage, PFS)
    if rid is None and len(storage) == 1:
        rid = next(iter(storage))
    return rid


def _first_copies(io: IOJob) -> dict:
    return {f.file: f.copies[0] for f in io.inputs}


def unserved(io: IOJob, serves, scheduler: str, *, dynamic: bool,
             storage: Mapping[int, str]) -> Optional[str]:
    """Why a scheduler cannot run a job of I/O model ``io`` (a one-line
    reason naming the part, logged as the job's rejection), or None.

    :param serves: the parts the scheduler serves (:data:`PARTS`).
    :param scheduler: its name in the reason (``"easy"``).
    :param dynamic: whether the engine registers dynamic jobs
        (``--enable-dynamic-jobs``), which the parts :data:`DYNAMIC_PARTS` need.
    :param storage: the platform's storage hosts (id -> name): the PFS the
        parts read and write, the disks holding the copies a static job reads.
    """
    part = part_of(io)
    if part not in serves:
        if part == STATIC:
            return (f"io: a static job (no io.burst_buffer, io.periodic, or io.inputs with "
                    f"io.compute.delay): scheduler {scheduler} {_MISSING[STATIC]} "
                    f"{', '.join(p for p in PARTS if p in serves)}")
        return f"{part}: scheduler {scheduler} {_MISSING[part]}"
    if part in DYNAMIC_PARTS and not dynamic:
        return f"{part}: runs as dynamic jobs, but the engine runs without --enable-dynamic-jobs"
    needs = set()
    if part in (PERIODIC, BURST_BUFFER):
        needs.add(PFS)
    elif part == INPUTS:
        needs.update(disk_host(c) for c in _first_copies(io).values())
    elif any(c != PFS for c in _first_copies(io).values()):
        needs.update(disk_host(c) for c in _first_copies(io).values())
    names = set(storage.values())
    if PFS in needs and pfs_of(storage) is not None:
        needs.discard(PFS)
    for host in sorted(needs - names):
        return f"{part}: the platform has no storage host {host!r}"
    return None


def input_sources(io: IOJob, allocation) -> dict:
    """Where each input of ``io`` is read from under ``allocation``: file id
    -> ``"pfs"``, a node name, :data:`CACHED` or an
    :class:`~iosched.sched.executor.At` (``allocation.inputs``, by default
    each input's first copy)."""
    return {**_first_copies(io), **(allocation.inputs or {})}


def static_flows(io: IOJob, allocation, storage: Mapping[int, str], pfs: Optional[int]) -> tuple:
    """The bytes a static job moves as its I/O model declares them (its own
    Batsim profile does the I/O, :data:`STATIC`): each input read from its
    source (:func:`input_sources`; none for a cached one or one being
    loaded) and ``writes.bytes`` to the PFS; a tuple of
    :class:`~iosched.sched.executor.Flow` (bytes), for the I/O record."""
    out = []
    sources = input_sources(io, allocation)
    for f in io.inputs:
        src = sources[f.file]
        if src == PFS:
            out.append(Flow("read", PFS_TIER, COMPUTE_TIER, pfs, float(f.bytes)))
        elif isinstance(src, str) and src != CACHED:
            out.append(Flow("read", DISK_TIER, COMPUTE_TIER, storage_id(storage, disk_host(src)),
                            float(f.bytes)))
    if io.writes is not None and io.writes.bytes:
        out.append(Flow("write", COMPUTE_TIER, PFS_TIER, pfs, float(io.writes.bytes)))
    return tuple(out)


def _walltime(running) -> float:
    """The job's walltime (s, inf if none)."""
    return walltime_seconds(getattr(running.job.batsim, "requested_time", None))


def plan_for(io: IOJob, allocation, running, *, storage: Optional[Mapping[int, str]] = None,
             pfs: Optional[int] = None, rules: Rules = Rules()) -> Plan:
    """The plan of a started job (module documentation, per part).

    :param io: the job's I/O model.
    :param allocation: its :class:`~iosched.sched.placer.Allocation` (the
        placer's, filled by the family: ``data``, ``inputs``, ``gate``,
        ``mapping``, ``storage_mapping``).
    :param running: the :class:`~iosched.sched.job.RunningJob` (its id,
        start time in s and workload job: walltime).
    :param storage: the platform's storage hosts (id -> name); needed to
        read inputs from a node's disk, or from the PFS when the platform
        has several storage hosts.
    :param pfs: the PFS's resource id; None: :func:`pfs_of` ``storage``.
    :param rules: the family's encoding :class:`Rules`.
    :returns: a :class:`~iosched.sched.executor.Plan`.
    :raises InputError: the allocation lacks what the part needs (no
        PFS, a copy's disk not on the platform),
        one line naming the job and the part.
    """
    part = part_of(io)
    if part == STATIC and not io.inputs and allocation.storage_mapping is None:
        return Plan.static(allocation)     # a plain job (most of them): nothing to derive
    storage = storage or {}
    if pfs is None:
        pfs = pfs_of(storage)
    sid = running.job.id
    if part == BURST_BUFFER:
        return _burst_buffer(io, allocation, running, pfs, rules, sid)
    if part == PERIODIC:
        if pfs is None:
            raise InputError(f"job {sid}: {PERIODIC}: the platform has no storage host 'pfs'")
        return _periodic(io, allocation, pfs, rules)
    if part == INPUTS:
        return _inputs(io, allocation, running, storage, pfs, rules, sid)
    sm = allocation.storage_mapping
    if sm is None and any(c != PFS for c in _first_copies(io).values()):
        sources = input_sources(io, allocation)
        sm = {}
        for name, src in sources.items():
            sm[name] = pfs if src == PFS else storage_id(storage, disk_host(src))
            if sm[name] is None:
                raise InputError(f"job {sid}: {INPUTS} ({name}): no storage host {disk_host(src)!r}")
        allocation = allocation.with_io(allocation.mapping, sm, allocation.inputs, allocation.gate)
    return Plan.static(allocation)


def _burst_buffer(io: IOJob, allocation, running, pfs, rules: Rules, sid: str) -> Plan:
    bb_of = allocation.data if isinstance(allocation.data, Mapping) else None
    if pfs is None:
        raise InputError(f"job {sid}: {BURST_BUFFER}: the platform has no storage host 'pfs'")
    c = io.compute
    flops = 0.0 if c is None or c.flops is None else float(c.flops)
    com = 0.0 if c is None or c.com is None else float(c.com)
    req = RunRequest(running.job.nb_res, float(io.burst_buffer.bytes), flops, com, _walltime(running),
                     float(io.burst_buffer.checkpoint_factor))
    run = build_run(sid, req, list(allocation.resources), bb_of, pfs)
    if rules.composed:
        parts = {name: p for name, p in run.profiles.items() if name != run.profile}
        flows = tuple(f for step in run.sequence for f in run.flows[step])
        return Plan.composed_of(run.profiles[run.profile], parts, run.alloc, run.walltime, flows)
    phases = [Phase(profile, run.alloc, flows=run.flows[step])
              for (_, _, profile), step in zip(phase_jobs(sid, run), run.sequence)]
    return Plan(phases, run.walltime, rules.rule or DEADLINE, counted=True)


def _periodic(io: IOJob, allocation, pfs: int, rules: Rules) -> Plan:
    p = io.periodic
    resources = ProcSet(allocation.resources)
    w, v = float(p.compute), float(p.bytes)
    if io.throughput_cap is None:
        writers = ProcSet(min(resources))
    else:   # every node link carries its share: the platform's node links cap the job
        r, cap = len(resources), float(io.throughput_cap)
        k = r if rules.io_bandwidth is None or cap <= rules.io_bandwidth \
            else min(r, math.ceil(r * rules.io_bandwidth / cap))
        writers = ProcSet(*list(resources)[:k])
    per_writer = v / len(writers)
    phases = []
    flows = (Flow("write", COMPUTE_TIER, PFS_TIER, pfs, v),)
    for _ in range(p.periods):
        phases.append(Phase({"type": "delay", "delay": w}, resources))
        phases.append(Phase({"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                             "bytes_to_write": per_writer, "storage": PFS}, writers,
                            storage_mapping={PFS: pfs}, gate=allocation.gate, flows=flows))
    return Plan(phases, rule=rules.rule or UNBOUNDED)


def _inputs(io: IOJob, allocation, running, storage, pfs, rules: Rules, sid: str) -> Plan:
    resources = allocation.resources
    first = ProcSet(min(resources))
    wall = _walltime(running)
    delay = io.compute.delay
    if rules.whole_seconds:
        delay = int(delay)
        wall = int(round(wall)) if math.isfinite(wall) else wall
    done = allocation.elapsed
    if done:
        delay = max(1, delay - done)
        wall = max(1, wall - done)
    rule = rules.rule or LEFT
    if not math.isfinite(wall):
        wall, rule = NO_WALLTIME, UNBOUNDED
    sources = input_sources(io, allocation)
    phases, wait = [], None
    for k, f in enumerate(io.inputs):
        src = sources[f.file]
        if isinstance(src, At):
            wait = src if wait is None or src.time > wait.time else wait
            continue
        if src == CACHED:
            continue
        nbytes = float(f.bytes)
        if rules.float32_gb:
            nbytes = float(np.float32(nbytes / GB)) * GB
        if src == PFS:
            label, sm = PFS, ({PFS: pfs} if len(storage) > 1 and pfs is not None else None)
            flow = Flow("read", PFS_TIER, COMPUTE_TIER, pfs, nbytes)
        else:
            label, host = str(src), disk_host(src)
            disk = storage_id(storage, host)
            if disk is None:
                raise InputError(f"job {sid}: {INPUTS} ({f.file}): no storage host {host!r}")
            sm = {label: disk}
            flow = Flow("read", DISK_TIER, COMPUTE_TIER, disk, nbytes)
        phases.append(Phase({"type": "parallel_homogeneous_pfs", "bytes_to_read": nbytes,
                             "bytes_to_write": 0, "storage": label}, first, storage_mapping=sm,
                            index=k, whole_walltime=not phases, flows=(flow,)))
    phases.append(Phase({"type": "delay", "delay": float(delay)}, resources, gate=wait,
                        index=len(io.inputs)))
    return Plan(tuple(phases), wall, rule)
