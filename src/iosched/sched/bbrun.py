"""How a burst-buffer job runs on Batsim: its phases as Batsim profiles.

The execution half of Kopanski & Rzadca's I/O-aware job model (Euro-Par
2021, arXiv 2109.00082, Section 5.1; artifact
``jankopanski/Burst-Buffer-Scheduling``, ``burstbuffer/io_aware.py``,
``scheduler_options.json``), moved into the core (issue 26) so that any
scheduler whose placer gives a job burst-buffer storage runs it the same
way (:func:`iosched.sched.ioplan.plan_for`); the burst-buffer family keeps
its scheduler-side model (:mod:`iosched.bb.model`: the request, what a
placement holds).

Source: Kopanski & Rzadca, Euro-Par 2021 (arXiv 2109.00082), Section 5.1
("IO-Aware" simulation model), and the artifact
``jankopanski/Burst-Buffer-Scheduling`` (``burstbuffer/io_aware.py``,
``scheduler_options.json``).

A job requests ``nodes`` compute nodes and ``bb`` bytes of burst buffer *per
compute node*; each compute node ``i`` is given a burst-buffer (storage) node
``s(i)`` where its ``bb`` bytes are held for the job's whole life. The job
runs, in order:

1. **stage-in**: ``bb`` bytes per compute node, PFS -> ``s(i)``;
2. **compute phase 1**: ``flops / P`` flops on every compute node plus the
   job's MPI-like traffic (``com`` bytes for every ordered pair of its compute
   nodes), where ``P = min(max(round(flops / 3600 Gflop), 1), 10)``
   (artifact: ``target_compute_phase_size`` 3600, ``max_num_compute_phases``
   10);
3. for ``k = 2..P``: **checkpoint** -- ``0.5 * bb`` bytes per compute node,
   node ``i`` -> ``s(i)``, no computation (compute is suspended) -- then
   **compute phase k** *merged with the drain* of that checkpoint
   (``s(i)`` -> PFS, the same bytes): the drain overlaps the compute phase;
4. **stage-out**: ``bb`` bytes per compute node, ``s(i)`` -> PFS.

As in the artifact, checkpoints sit *between* compute phases (``P - 1`` of
them), so no drain is left pending at stage-out.

Batsim encoding (standard Batsim 4.2.x features only; run the engine with
``--enable-dynamic-jobs``). When the scheduler starts workload job ``w0!J``
it rejects ``w0!J`` (REJECT_JOB, which is how the artifact retires the
static job) and runs the steps above one after the other, **one dynamic job
per phase** (the default, :func:`phase_jobs`): for phase ``k`` (0, 1, ...
in the order above) it registers (REGISTER_PROFILE, workload ``bb``) a plain
``parallel`` profile named ``J:k/n`` (``n`` = the run's number of phases,
which tells the metrics a run that ended before its last phase), registers
(REGISTER_JOB) the job
``bb!J:k`` with that profile, ``res`` = the number of hosts the job uses
(its compute nodes, the storage nodes holding its burst buffers, the PFS)
and ``walltime`` = what is left of J's walltime, and executes it
(EXECUTE_JOB, ``alloc`` = those hosts, executors in increasing resource id,
no mapping); when ``bb!J:k`` completes successfully, phase ``k + 1`` is
registered and executed at the same simulated time. Each profile is
registered once and used by one job, so no composed dynamic profile and no
profile reused after its job ended: the real Batsim 4.2.1 crashes on
both. The embedded-only ``composed`` encoding (option ``encoding``; the
engine serves it with ``--embedded-extensions`` only) runs
the same steps as one job ``bb!J`` with a composed profile ``J`` =
``[J:si, J:c, (J:k, J:cd) * (P-1), J:so]``; both give the same SimGrid
tasks in the same order at the same times. Every transfer is a flow of a
SimGrid parallel task, so contention on the PFS link, the storage nodes'
links and the dragonfly is simulated by SimGrid. Storage resources are
shared between jobs (``allow_storage_sharing`` is true in Batsim). J's
walltime bounds its whole life: Batsim kills the running phase when it is
reached, and the scheduler frees the job's nodes and burst buffers when
the last phase ends (or is killed).

Within one SimGrid parallel task (``ptask_L07``) all flows and computations
progress at one common rate, so an overlapped compute phase ends when both
its computation and its drain are done; the artifact ran the drain as
separate data-staging jobs instead (stated in ``docs/burst-buffers.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple, Sequence

from procset import ProcSet

from iosched.batsim.dynamic import PHASE_SEPARATOR, phase_job_id, phase_profile_name, run_job_id
from iosched.batsim.jobs import NO_WALLTIME, local_id
from iosched.errors import InputError
from iosched.sched.executor import BB_TIER, COMPUTE_TIER, PFS_TIER, Flow
from iosched.sched.iojob import DEFAULT_CHECKPOINT_FACTOR
from iosched.sched.timeline import procset_of_ids

__all__ = ["TARGET_PHASE_FLOPS", "MAX_COMPUTE_PHASES", "CHECKPOINT_FACTOR", "RunRequest", "RunSpec",
           "num_compute_phases", "bb_held", "build_run", "phase_jobs", "Numbers"]

#: Target size of one compute phase (flops per node): artifact
#: ``target_compute_phase_size`` = 3600 Gflop (one hour at 1 Gflop/s).
TARGET_PHASE_FLOPS = 3600e9
#: Maximum number of compute phases (artifact ``max_num_compute_phases``).
MAX_COMPUTE_PHASES = 10
#: Checkpoint size / burst-buffer request (artifact ``_checkpoint_phase_factor``).
CHECKPOINT_FACTOR = DEFAULT_CHECKPOINT_FACTOR


def num_compute_phases(flops: float, target: float = TARGET_PHASE_FLOPS,
                       max_phases: int = MAX_COMPUTE_PHASES) -> int:
    """Number of compute phases ``min(max(round(flops / target), 1), max_phases)``.

    :param flops: flops per compute node over the whole job.
    :returns: an int in ``[1, max_phases]`` (artifact ``io_aware.py``,
        ``on_job_submission``; Python's round-half-even, as there).
    """
    return min(max(int(round(flops / target)), 1), int(max_phases))


class RunRequest(NamedTuple):
    """What :func:`build_run` reads of a job (:func:`iosched.sched.ioplan.plan_for`
    fills it from the job's I/O model): ``nodes`` (int), ``bb`` (bytes per
    compute node), ``flops`` (per compute node over the whole job), ``com``
    (bytes per ordered pair of compute nodes per compute phase),
    ``walltime`` (s, or inf), ``checkpoint_factor`` (checkpoint size / ``bb``)."""

    nodes: int
    bb: float
    flops: float
    com: float
    walltime: float
    checkpoint_factor: float = CHECKPOINT_FACTOR


@dataclass
class RunSpec:
    """The Batsim side of one started job.

    ``job_id`` (``bb!J``), ``profile`` (name of the composed profile),
    ``profiles`` (name -> Batsim profile dict, to REGISTER_PROFILE in
    :data:`iosched.batsim.dynamic.RUN_WORKLOAD`), ``alloc`` (ProcSet: compute nodes, burst-buffer
    nodes, PFS), ``res`` (int, ``len(alloc)``), ``walltime`` (s or -1),
    ``sequence`` (the composed profile's step names, in order), ``phases``
    (number of compute phases), ``bb_per_storage`` (storage id -> bytes held),
    ``flows`` (step name -> tuple of :class:`~iosched.sched.executor.Flow`:
    the bytes each step moves, for the I/O record).
    """

    job_id: str
    profile: str
    profiles: dict
    alloc: ProcSet
    res: int
    walltime: float
    sequence: list
    phases: int
    bb_per_storage: dict
    flows: dict = field(default_factory=dict)


def bb_held(bb_of: Mapping[int, int], bb: float) -> dict:
    """Bytes held per storage node: ``{storage id: count(nodes on it) * bb}``."""
    out: dict = {}
    for s in bb_of.values():
        out[s] = out.get(s, 0.0) + float(bb)
    return dict(sorted(out.items()))


class Numbers(list):
    """A profile's ``cpu`` vector or ``com`` matrix (a ``list``: equal to
    the same numbers in a list, encoded by ``json`` as a list) whose
    ``repr`` is short: ``<12100 numbers>``.

    pybatsim formats every message it sends (and every profile it
    registers) into a log string before knowing whether the log is
    written; with dense ``m x m`` matrices that formatting cost more
    scheduler time than the JSON encoding (issue 13, profiled on the first
    1000 KTH jobs). Nothing else changes: the bytes sent are the same.
    """

    __slots__ = ()

    def __repr__(self):
        return f"<{len(self)} numbers>"


def _whole(x):
    """``x`` as an int when it is a whole float below 2**53 (the same
    number for Batsim and SimGrid, which read it as a double): the JSON
    encoder writes an int about 3.5 times faster than a float
    (``116432363`` against ``116432363.0``), and the generator's byte
    counts are whole (issue 13: the matrices of a 1000-job run hold about
    a million such entries)."""
    if type(x) is float and x.is_integer() and abs(x) < 2.0 ** 53:
        return int(x)
    return x


def build_run(static_id: str, req, compute: Sequence[int], bb_of: Mapping[int, int],
              pfs: int, *, target: float = TARGET_PHASE_FLOPS, max_phases: int = MAX_COMPUTE_PHASES,
              checkpoint_factor: float | None = None) -> RunSpec:
    """Build the profiles and the dynamic job that run ``static_id``.

    :param static_id: the workload job id (``"w0!12"``).
    :param req: its request: an object with ``nodes`` (int), ``bb`` (bytes
        per compute node, > 0), ``flops`` (per compute node, >= 0), ``com``
        (bytes per ordered pair per compute phase, >= 0), ``walltime`` (s or
        inf) and ``checkpoint_factor``: a :class:`RunRequest` (the
        burst-buffer family's ``JobRequest`` is the same class).
    :param compute: its ``req.nodes`` compute resource ids (distinct).
    :param bb_of: compute id -> storage id holding that node's burst buffer;
        None: no burst buffer granted, the job does its I/O on the PFS
        directly (:func:`_run_on_pfs`).
    :param pfs: resource id of the PFS (a storage resource).
    :param checkpoint_factor: checkpoint size / ``req.bb``; None: the job's
        own (``req.checkpoint_factor``).
    :returns: a :class:`RunSpec`. Matrices are dense ``m x m`` (``m`` =
        ``res``; zero entries are the int 0, and every whole number is an
        int: :func:`_whole`), executors in increasing resource id.
    :raises InputError: wrong number of compute nodes, a node without burst
        buffer, or the PFS among the burst-buffer nodes / compute nodes.
    """
    compute = sorted(int(c) for c in compute)
    if len(set(compute)) != req.nodes or len(compute) != req.nodes:
        raise InputError(f"{static_id}: {len(set(compute))} distinct compute nodes given, {req.nodes} requested")
    if bb_of is None:
        return _run_on_pfs(static_id, req, compute, pfs, target, max_phases, checkpoint_factor)
    if set(bb_of) != set(compute):
        raise InputError(f"{static_id}: every compute node needs exactly one burst-buffer node")
    storages = sorted(set(int(s) for s in bb_of.values()))
    if pfs in storages or pfs in compute or set(storages) & set(compute):
        raise InputError(f"{static_id}: the PFS, burst-buffer and compute nodes must be distinct")
    hosts = sorted(compute + storages + [pfs])
    idx = {h: i for i, h in enumerate(hosts)}
    m = len(hosts)
    held = bb_held(bb_of, req.bb)
    if checkpoint_factor is None:
        checkpoint_factor = req.checkpoint_factor
    ckpt = float(int(checkpoint_factor * req.bb))  # artifact: int(0.5 * bb)
    phases = num_compute_phases(req.flops, target, max_phases)
    p = idx[pfs]

    def empty():
        # zeros as JSON integers: most of a dense matrix is zeros, and "0"
        # is shorter to send and cheaper to encode and decode than "0.0"
        # (the same number for Batsim and SimGrid)
        return Numbers([0] * m), Numbers([0] * (m * m))

    whole_com = _whole(req.com)

    # stage-in: PFS -> each storage node, the bytes it holds for the job
    cpu, com = empty()
    for s, b in held.items():
        com[p * m + idx[s]] = _whole(b)
    stage_in = {"type": "parallel", "cpu": cpu, "com": com}
    # compute phase (MPI-like traffic between the job's compute nodes)
    cpu, com = empty()
    for c in compute:
        cpu[idx[c]] = _whole(req.flops / phases)
        if req.com > 0:
            for d in compute:
                if d != c:
                    com[idx[c] * m + idx[d]] = whole_com
    compute_only = {"type": "parallel", "cpu": cpu, "com": com}
    # compute phase + drain of the previous checkpoint (storage -> PFS)
    cpu2, com2 = Numbers(cpu), Numbers(com)
    for s, b in held.items():
        com2[idx[s] * m + p] = _whole(ckpt * (b / req.bb))
    compute_drain = {"type": "parallel", "cpu": cpu2, "com": com2}
    # checkpoint: each compute node -> its burst-buffer node
    cpu, com = empty()
    for c in compute:
        com[idx[c] * m + idx[bb_of[c]]] = _whole(ckpt)
    checkpoint = {"type": "parallel", "cpu": cpu, "com": com}
    # stage-out: each storage node -> PFS
    cpu, com = empty()
    for s, b in held.items():
        com[idx[s] * m + p] = _whole(b)
    stage_out = {"type": "parallel", "cpu": cpu, "com": com}

    local = local_id(static_id)
    names, seq = _sequence(local, phases)
    profiles = {names["si"]: stage_in, names["c"]: compute_only, names["so"]: stage_out}
    if phases > 1:
        profiles[names["k"]] = checkpoint
        profiles[names["cd"]] = compute_drain
    profiles[local] = {"type": "composed", "repeat": 1, "seq": seq}
    wt = req.walltime if math.isfinite(req.walltime) else NO_WALLTIME
    return RunSpec(run_job_id(static_id), local, profiles, procset_of_ids(hosts), m, wt, seq, phases,
                   held, _flows(names, held, ckpt / req.bb, req.com * len(compute) * (len(compute) - 1),
                                pfs))


def _network_flows(network: float) -> tuple:
    """The :class:`~iosched.sched.executor.Flow` of ``network`` bytes between
    a job's compute nodes in one compute phase (none when 0)."""
    return (Flow("network", COMPUTE_TIER, COMPUTE_TIER, None, network),) if network > 0 else ()


def _flows(names: dict, held: dict, ckpt_share: float, network: float, pfs: int) -> dict:
    """Step name -> the :class:`~iosched.sched.executor.Flow` tuple it moves
    (the bytes of the matrices :func:`build_run` writes): ``held``
    (storage id -> bytes held), ``ckpt_share`` (checkpoint bytes / bytes
    held), ``network`` (bytes between the job's compute nodes per compute
    phase)."""
    net = _network_flows(network)
    drain = tuple(Flow("drain", BB_TIER, PFS_TIER, s, ckpt_share * b) for s, b in held.items())
    return {names["si"]: tuple(Flow("stage_in", PFS_TIER, BB_TIER, s, b) for s, b in held.items()),
            names["c"]: net,
            names["k"]: tuple(Flow("checkpoint", COMPUTE_TIER, BB_TIER, s, ckpt_share * b)
                              for s, b in held.items()),
            names["cd"]: net + drain,
            names["so"]: tuple(Flow("stage_out", BB_TIER, PFS_TIER, s, b) for s, b in held.items())}



def _sequence(local: str, phases: int) -> tuple:
    """``(names, seq)``: the step name of each kind (``si``, ``c``, ``k``,
    ``cd``, ``so`` -> ``"<local>:<kind>"``) and the run's steps in order:
    stage-in, compute, ``phases - 1`` times (checkpoint, compute + drain),
    stage-out."""
    names = {k: f"{local}:{k}" for k in ("si", "c", "k", "cd", "so")}
    seq = [names["si"], names["c"]]
    for _ in range(phases - 1):
        seq += [names["k"], names["cd"]]
    seq.append(names["so"])
    return names, seq


def _run_on_pfs(static_id: str, req, compute: list, pfs: int, target: float, max_phases: int,
                checkpoint_factor) -> RunSpec:
    """:func:`build_run` of a job granted no burst buffer (a scheduler
    without a burst-buffer placer: what a Slurm job gets on a machine
    without DataWarp; iosched's reading, no paper defines it): the same
    steps with the PFS in place of each node's burst-buffer node -- the
    stage-in becomes each compute node reading its ``bb`` bytes from the
    PFS, each checkpoint each node writing ``int(checkpoint_factor * bb)``
    bytes to the PFS (nothing left to drain: the next compute phase is a
    plain one), the stage-out each node writing its ``bb`` bytes to the
    PFS. Same sequence of steps and phase names as with burst buffers.

    :raises InputError: the PFS among the compute nodes.
    """
    if pfs in compute:
        raise InputError(f"{static_id}: the PFS and compute nodes must be distinct")
    hosts = sorted(compute + [pfs])
    idx = {h: i for i, h in enumerate(hosts)}
    m = len(hosts)
    if checkpoint_factor is None:
        checkpoint_factor = req.checkpoint_factor
    ckpt = float(int(checkpoint_factor * req.bb))
    phases = num_compute_phases(req.flops, target, max_phases)
    p = idx[pfs]

    def transfer(nbytes: float, to_pfs: bool) -> dict:
        cpu, com = Numbers([0] * m), Numbers([0] * (m * m))
        for c in compute:
            com[(idx[c] * m + p) if to_pfs else (p * m + idx[c])] = _whole(nbytes)
        return {"type": "parallel", "cpu": cpu, "com": com}

    cpu, com = Numbers([0] * m), Numbers([0] * (m * m))
    for c in compute:
        cpu[idx[c]] = _whole(req.flops / phases)
        if req.com > 0:
            for d in compute:
                if d != c:
                    com[idx[c] * m + idx[d]] = _whole(req.com)
    compute_only = {"type": "parallel", "cpu": cpu, "com": com}
    local = local_id(static_id)
    names, seq = _sequence(local, phases)
    profiles = {names["si"]: transfer(req.bb, False), names["c"]: compute_only,
                names["so"]: transfer(req.bb, True)}
    if phases > 1:
        profiles[names["k"]] = transfer(ckpt, True)
        profiles[names["cd"]] = {"type": "parallel", "cpu": Numbers(cpu), "com": Numbers(com)}
    profiles[local] = {"type": "composed", "repeat": 1, "seq": seq}
    wt = req.walltime if math.isfinite(req.walltime) else NO_WALLTIME
    n = len(compute)
    net = _network_flows(req.com * n * (n - 1))
    flows = {names["si"]: (Flow("read", PFS_TIER, COMPUTE_TIER, pfs, n * req.bb),),
             names["c"]: net,
             names["k"]: (Flow("checkpoint", COMPUTE_TIER, PFS_TIER, pfs, n * ckpt),),
             names["cd"]: net,
             names["so"]: (Flow("write", COMPUTE_TIER, PFS_TIER, pfs, n * req.bb),)}
    return RunSpec(run_job_id(static_id), local, profiles, procset_of_ids(hosts), m, wt, seq, phases, {},
                   flows)


def phase_jobs(static_id: str, run: RunSpec) -> list:
    """The per-phase dynamic jobs of a run (the default encoding).

    :param static_id: the workload job id (``"w0!12"``).
    :param run: its :class:`RunSpec` (:func:`build_run`).
    :returns: a list, in execution order, of ``(job id, profile name,
        profile dict)``: ``("bb!12:0", "12:0/5", <stage-in>)``,
        ``("bb!12:1", "12:1/5", <compute phase 1>)``, ... -- one per step of
        ``run.sequence``; every profile is a plain ``parallel`` profile with
        its own name, which also gives the number of phases of the run
        (:func:`iosched.batsim.dynamic.phase_profile_name`), so that the
        metrics tell a run that ended before its last phase.
    """
    local = local_id(static_id)
    if PHASE_SEPARATOR in local:
        raise InputError(f"{static_id}: a job id run by phases may not contain {PHASE_SEPARATOR!r}")
    n = len(run.sequence)
    return [(phase_job_id(static_id, k), phase_profile_name(local, k, n), run.profiles[step])
            for k, step in enumerate(run.sequence)]
