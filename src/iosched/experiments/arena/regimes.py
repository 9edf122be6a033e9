"""The arena's I/O regimes: an SWF trace annotated with the I/O job model
(issue 27, item 2; ``docs/arena.md``, "Regimes").

Every regime keeps the same jobs of the trace -- the SWF job number as id,
the arrival (``submit_time`` shifted so that the first kept job arrives at
1 s, as the burst-buffer generator), ``res`` = requested processors (one
Batsim resource = one compute node of the reference machine,
:mod:`iosched.experiments.arena.machine`), ``walltime`` = requested time --
and differs only in each job's I/O model (the field ``io``,
:mod:`iosched.sched.iojob`) and its Batsim profile. Jobs are kept as the
burst-buffer generator keeps them (processors, run time and requested time
given and > 0); jobs asking more nodes than the machine has are **dropped
and counted** (``dropped_too_large``, printed by the command), as
:func:`iosched.workloads.convert.swf_to_batsim` drops them
(``too_many_resources``): such a job could never run, and Batsim refuses a
job larger than the machine when it reads the workload.

Each parameter is drawn by one of the families' generators, called here:

* ``checkpoint-heavy`` -- burst-buffer request, checkpoints and drains,
  computation and communication: :func:`iosched.experiments.bb.workload.generate`
  (Kopanski & Rzadca's log-normal request per node, capped for the
  machine's burst-buffer nodes; ``io.burst_buffer`` and ``io.compute``);
* ``data-reuse`` -- one input file per job, shared by the jobs of one user
  asking the same size within 800 s: the file-sharing rule of
  :func:`iosched.experiments.locality.workload.from_swf` (Gonthier et al.,
  Section 5.1), a file of ``procs / 64 x 192 GB`` (a node's memory share,
  the paper's size rule on the machine's 64-core, 192 GB nodes); then
  ``compute.delay`` = the run time (``io.inputs`` + ``io.compute.delay``);
* ``bandwidth-bound`` -- periodic PFS writes: ``n`` periods uniform in
  10..100, ``w`` = run time / ``n``, an I/O share ``X`` of the bi-normal
  family (``N(0.1, 0.1)`` or ``N(0.9, 0.1)`` truncated to [0, 1], high with
  probability 1/2:
  :func:`iosched.experiments.listpack.workload.truncated_normal`,
  :data:`~iosched.experiments.listpack.workload.BN_MEANS`), ``v = X w b``
  bytes per period with ``b`` a node's link (Jeannot, Pallez & Vidal,
  "Workload Generation"; their ``time`` volume rule with the node's
  bandwidth: a job alone spends a share ``X / (1 + X)`` of its time
  writing, so that a few concurrent writers saturate the PFS link)
  (``io.nodes`` + ``io.periodic``);
* ``node-local`` -- input file sets replicated on node-local disks:
  :func:`iosched.experiments.dad.workload.trace_driven` (Li & Tatebe's
  sets of 4 files of 2 GB, 2 replicas, half of the sets on the same nodes),
  its replicas renamed to the machine's nodes; the job's profile reads
  each file (:func:`~iosched.experiments.dad.workload.read_profile`) then
  computes its run time at 1 Gflop/s on all its nodes (static jobs:
  ``io.inputs`` with copies on nodes);
* ``mixed`` -- each job takes its model from one of the four regimes above,
  drawn uniformly (its profile comes with it).

Draws use ``numpy.random.Generator(PCG64(seed))`` (each family's generator
its own, seeded with ``seed``; ``bandwidth-bound`` ``PCG64([seed, 1])``,
``mixed`` ``PCG64([seed, 2])``), per job in trace order: the same trace,
arguments and seed give a byte-identical file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import click
import numpy as np

from iosched.bb.model import GB
from iosched.checks import argument, check_output_file
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line
from iosched.engine.overload import parse_bandwidth
from iosched.engine.platform import ROLE_MASTER, ROLE_STORAGE, read_hosts
from iosched.errors import InputError
from iosched.experiments.arena.machine import (LINK_BW, NODE_CORES, NODE_MEMORY, NODE_SPEED, SIZES,
                                               ArenaMachine)
from iosched.experiments.bb import workload as bb_workload
from iosched.experiments.dad import workload as dad_workload
from iosched.experiments.listpack.workload import BN_MEANS, truncated_normal
from iosched.experiments.locality.workload import from_swf
from iosched.sched.iojob import PFS, Compute, InputFile, IOJob, Periodic, to_json
from iosched.sched.ioplan import DISK_SUFFIX
from iosched.workloads.default_swf import find_default_swf
from iosched.workloads.swf import read_swf
from iosched.workloads.writer import write_workload

__all__ = ["REGIMES", "BASE_REGIMES", "Shape", "shape_of_platform", "trace_jobs", "generate",
           "workload_command"]

#: The regimes, ``mixed`` last.
REGIMES = ("checkpoint-heavy", "data-reuse", "bandwidth-bound", "node-local", "mixed")
#: The regimes ``mixed`` draws from.
BASE_REGIMES = REGIMES[:-1]
#: Profile-name prefix of each base regime (a mixed workload holds several).
_TAG = {"checkpoint-heavy": "ckpt_", "data-reuse": "reuse_", "bandwidth-bound": "bw_", "node-local": "local_"}
#: Share of high-I/O jobs of the bi-normal family (bandwidth-bound).
HIGH_IO_SHARE = 0.5
#: Periods of a bandwidth-bound job: uniform in this range (inclusive).
PERIODS = (10, 100)
#: Window of the data-reuse file-sharing rule (s): Gonthier et al.'s.
REUSE_WINDOW = 800.0


class Shape:
    """What the regimes need of the machine: ``compute`` (compute host
    names in node order: node ``i`` of a generator is ``compute[i]``) and
    ``burst_buffers`` (number of burst-buffer nodes)."""

    def __init__(self, compute: list, burst_buffers: int):
        self.compute, self.burst_buffers = list(compute), int(burst_buffers)

    @classmethod
    def of_machine(cls, m: ArenaMachine) -> "Shape":
        """The shape of an :class:`~iosched.experiments.arena.machine.ArenaMachine`."""
        return cls(m.compute, len(m.burst_buffers))


def _number(name: str) -> tuple:
    m = re.search(r"(\d+)$", name)
    return (int(m.group(1)) if m else -1, name)


def shape_of_platform(path) -> Shape:
    """The :class:`Shape` of a platform XML: its compute hosts (no role),
    ordered by their trailing number, and its burst-buffer nodes (storage
    hosts other than ``pfs`` and the nodes' disks ``<node>_disk``).

    :raises InputError: unreadable XML, or no compute host (one line naming
        the file).
    """
    hosts = read_hosts(str(path))
    compute, bbs = [], 0
    for name, info in hosts.items():
        role = info.properties.get("role", info.zone_properties.get("role", ""))
        if role == ROLE_MASTER:
            continue
        if role == ROLE_STORAGE:
            bbs += name != PFS and not name.endswith(DISK_SUFFIX)
        else:
            compute.append(name)
    if not compute:
        raise InputError(f"{path}: the platform has no compute host")
    return Shape(sorted(compute, key=_number), bbs)


def trace_jobs(swf, nodes: int, jobs: Optional[int] = None):
    """The kept jobs of an SWF trace: ``(rows, dropped_too_large)`` where
    ``rows`` is a list of dicts ``id`` (SWF job number), ``subtime`` (s),
    ``runtime`` (s), ``walltime`` (s), ``res`` (nodes), ``user`` (int or
    None), ``bb_rank`` (rank among the jobs the burst-buffer generator
    keeps) and ``dad_rank`` (rank among the jobs the data-aware generator
    reads), the first ``jobs`` jobs (all if None) of at most ``nodes``
    nodes; ``dropped_too_large`` counts the larger jobs met before the
    last kept one.

    :raises InputError: as :func:`iosched.workloads.swf.read_swf`, no job kept.
    """
    df = read_swf(swf).jobs
    rows, dropped, bb_rank, dad_rank = [], 0, -1, -1
    offset = None
    cols = [df[c].to_numpy(dtype=float, na_value=np.nan) for c in
            ("job_number", "submit_time", "run_time", "requested_processors", "requested_time", "user_id")]
    for num, sub, run, procs, req, user in zip(*cols):
        if jobs is not None and len(rows) >= jobs:
            break
        if run > 0 and procs > 0:       # dad's trace_driven reads these rows
            dad_rank += 1
        if not (procs > 0 and run > 0 and req > 0 and sub == sub):   # the bb generator's rule
            continue
        bb_rank += 1
        if offset is None:
            offset = sub - 1
        if procs > nodes:
            dropped += 1
            continue
        rows.append({"id": int(num), "subtime": _num(sub - offset), "runtime": _num(run), "walltime": _num(req),
                     "res": int(procs), "user": None if user != user else int(user),
                     "bb_rank": bb_rank, "dad_rank": dad_rank})
    if not rows:
        raise InputError(f"{swf}: no job of at most {nodes} nodes with a run time and a requested time")
    return rows, dropped


def _num(x: float):
    return int(x) if float(x).is_integer() else float(x)


def _job(r: dict, profile: str, io: IOJob) -> dict:
    return {"id": r["id"], "subtime": r["subtime"], "walltime": r["walltime"], "res": r["res"],
            "profile": profile, "io": to_json(io)}


def _checkpoint_heavy(swf, rows, shape: Shape, seed: int) -> tuple:
    wl = bb_workload.generate(swf, seed=seed, nb_res=len(shape.compute), first=rows[-1]["bb_rank"] + 1,
                              nb_storage=max(1, shape.burst_buffers))
    by_id = {j["id"]: j for j in wl["jobs"]}
    jobs, profiles = [], {}
    for r in rows:
        j = by_id[r["id"]]
        name = _TAG["checkpoint-heavy"] + str(r["id"])
        jobs.append({**_job(r, name, IOJob()), "io": j["io"]})
        profiles[name] = wl["profiles"][j["profile"]]
    return jobs, profiles


def _data_reuse(swf, rows, shape: Shape, seed: int) -> tuple:
    missing = [r["id"] for r in rows if r["user"] is None]
    if missing:
        raise InputError(f"{swf}: job {missing[0]} has no user id (the data-reuse regime shares files "
                         "between a user's jobs)")
    widest = max(r["res"] for r in rows)
    # the paper's size rule, procs / cores_per_node x memory, with no job split:
    # cores_per_node = the widest job, memory scaled alike
    ljobs = from_swf([{"id": r["id"], "subtime": r["subtime"], "runtime": r["runtime"], "walltime": r["walltime"],
                       "cores": r["res"], "user": r["user"]} for r in rows],
                     cores_per_node=widest, memory_gb=widest / NODE_CORES * NODE_MEMORY / GB,
                     window=REUSE_WINDOW)
    files = {str(lj.id): (lj.file, lj.size) for lj in ljobs}
    jobs, profiles = [], {}
    for r in rows:
        f, size = files[str(r["id"])]
        delay = max(1, int(r["runtime"]))
        name = f"{_TAG['data-reuse']}d{delay}"
        profiles[name] = {"type": "delay", "delay": delay}
        io = IOJob(inputs=(InputFile(str(f), float(size) * GB),), compute=Compute(delay=delay))
        jobs.append(_job(r, name, io))
    return jobs, profiles


def _bandwidth_bound(swf, rows, shape: Shape, seed: int) -> tuple:
    rng = np.random.Generator(np.random.PCG64([seed, 1]))
    jobs, profiles = [], {}
    for r in rows:
        n = int(rng.integers(PERIODS[0], PERIODS[1] + 1))
        u, c = rng.random(2)
        x = float(truncated_normal(np.array([u]), BN_MEANS[1 if c < HIGH_IO_SHARE else 0], 0.1)[0])
        w = float(r["runtime"]) / n
        name = f"{_TAG['bandwidth-bound']}{r['id']}"
        profiles[name] = {"type": "delay", "delay": r["runtime"]}
        io = IOJob(nodes=r["res"], periodic=Periodic(n, w, x * w * LINK_BW, PFS))
        jobs.append(_job(r, name, io))
    return jobs, profiles


_DAD_NODE = re.compile(r"^n(\d+)$")


def _node_local(swf, rows, shape: Shape, seed: int) -> tuple:
    nodes = len(shape.compute)
    wl = dad_workload.trace_driven(swf, nodes, 1, first=rows[-1]["dad_rank"] + 1, seed=seed)
    tag = _TAG["node-local"]
    jobs, profiles = [], {}
    for r in rows:
        task = wl["jobs"][r["dad_rank"]]
        inputs = []
        for f in task["io"]["inputs"]:
            copies = tuple(shape.compute[int(_DAD_NODE.match(c).group(1))] for c in f["copies"])
            inputs.append(InputFile(f["file"], float(f["bytes"]), copies))
        steps = []
        for f in inputs:
            rname = tag + dad_workload.read_profile_name(f.file, r["res"])
            profiles.setdefault(rname, dad_workload.read_profile(f.file, f.bytes, r["res"]))
            steps.append(rname)
        cname = f"{tag}compute{r['id']}"
        profiles[cname] = {"type": "parallel_homogeneous", "cpu": round(float(r["runtime"]) * NODE_SPEED), "com": 0}
        name = f"{tag}{r['id']}"
        profiles[name] = {"type": "composed", "repeat": 1, "seq": steps + [cname]}
        jobs.append({**_job(r, name, IOJob(inputs=tuple(inputs))), "queue": task["queue"]})
    return jobs, profiles


_BUILD = {"checkpoint-heavy": _checkpoint_heavy, "data-reuse": _data_reuse,
          "bandwidth-bound": _bandwidth_bound, "node-local": _node_local}


def _used(profiles: dict, name: str, keep: dict) -> None:
    if name in keep:
        return
    keep[name] = profiles[name]
    for sub in profiles[name].get("seq", ()) if profiles[name].get("type") == "composed" else ():
        _used(profiles, sub, keep)


def generate(swf, regime: str, seed: int = 0, *, jobs: Optional[int] = None, shape: Optional[Shape] = None,
             node_io_cap: Optional[float] = None) -> dict:
    """The Batsim workload (dict) of ``regime`` on the trace ``swf``
    (module documentation).

    :param swf: SWF file (path).
    :param regime: one of :data:`REGIMES`.
    :param seed: int >= 0.
    :param jobs: the first ``jobs`` kept jobs (int >= 1; None: all).
    :param shape: the machine (:class:`Shape`); default the 100-node
        reference machine.
    :param node_io_cap: the machine's per-node I/O cap b (bytes/s; issue
        30): every job gets ``io.throughput_cap = Q_i b`` (Q_i its nodes,
        ``res``), the cap list/pack's model reads; None: no field.
    :returns: ``{"description", "nb_res", "regime", "seed", "dropped_too_large", "jobs",
        "profiles"}`` (``nb_res`` = the machine's compute nodes).
    :raises InputError: an unknown regime, a bad ``seed``, ``jobs`` or
        ``node_io_cap``, an unreadable trace (one line naming it).
    """
    if node_io_cap is not None and not (isinstance(node_io_cap, (int, float)) and 0 < node_io_cap < float("inf")):
        raise InputError(f"arena workload: node_io_cap={node_io_cap!r} must be > 0 and finite (bytes/s)")
    if regime not in REGIMES:
        raise InputError(f"arena workload: regime={regime!r} is unknown; expected one of {', '.join(REGIMES)}")
    argument(seed, "seed", integer=True, maximum=2 ** 63, where="arena workload")
    if jobs is not None:
        argument(jobs, "jobs", integer=True, minimum=1, maximum=None, where="arena workload")
    shape = shape or Shape.of_machine(ArenaMachine(SIZES[0]))
    rows, dropped = trace_jobs(swf, len(shape.compute), jobs)
    if regime == "mixed":
        built = {k: _BUILD[k](swf, rows, shape, seed) for k in BASE_REGIMES}
        pick = np.random.Generator(np.random.PCG64([seed, 2])).integers(len(BASE_REGIMES), size=len(rows))
        out_jobs, profiles = [], {}
        for i, k in enumerate(pick):
            j = built[BASE_REGIMES[k]][0][i]
            out_jobs.append(j)
            _used(built[BASE_REGIMES[k]][1], j["profile"], profiles)
    else:
        out_jobs, profiles = _BUILD[regime](swf, rows, shape, seed)
    if node_io_cap is not None:
        out_jobs = [{**j, "io": {**j["io"], "throughput_cap": float(j["res"] * node_io_cap)}} for j in out_jobs]
    return {"description": f"{Path(swf).name}, first {len(rows)} jobs of at most {len(shape.compute)} nodes, "
                           f"I/O regime {regime}, seed {seed} (iosched workload arena)",
            "nb_res": len(shape.compute), "regime": regime, "seed": int(seed), "dropped_too_large": dropped,
            "jobs": out_jobs, "profiles": dict(sorted(profiles.items()))}


@click.command(name="arena", cls=OneLineErrorCommand)
@click.argument("trace", required=False, type=click.Path(dir_okay=False))
@click.option("--regime", type=click.Choice(REGIMES), required=True, help="I/O regime")
@click.option("--seed", type=int, default=0, show_default=True, help="random seed (int >= 0)")
@click.option("--jobs", type=int, default=None, help="the first N jobs of the trace that fit [default: all]")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), default=None,
              help="workload JSON to write [default: arena-REGIME-SEED.json]")
@click.option("--platform", type=click.Path(dir_okay=False), default=None,
              help="the machine's platform XML (default: the reference machine of --nodes)")
@click.option("--nodes", type=int, default=None, help=f"compute nodes of the reference machine [default: {SIZES[0]}]")
@click.option("--node-io-cap", default=None, metavar="BW",
              help="the machine's per-node I/O cap b (bytes/s, e.g. 31.25MB): io.throughput_cap = nodes x b")
@input_errors_one_line
def workload_command(trace, regime, seed, jobs, out, platform, nodes, node_io_cap):
    """Annotate TRACE (an SWF log; default: the KTH-SP2 trace) with the I/O
    job model under an I/O REGIME, for the arena's reference machine."""
    if platform is not None and nodes is not None:
        raise InputError("arena workload: give --platform or --nodes, not both")
    if jobs is not None and jobs < 1:
        raise InputError(f"arena workload: --jobs={jobs}: expected an integer >= 1")
    if seed < 0:
        raise InputError(f"arena workload: --seed={seed}: expected an integer >= 0")
    out = out or f"arena-{regime}-{seed}.json"
    check_output_file(out)
    shape = shape_of_platform(platform) if platform else Shape.of_machine(
        ArenaMachine(SIZES[0] if nodes is None else nodes))
    swf = trace if trace is not None else find_default_swf()
    cap = None if node_io_cap is None else parse_bandwidth(node_io_cap, "--node-io-cap")
    wl = generate(swf, regime, seed, jobs=jobs, shape=shape, node_io_cap=cap)
    write_workload(wl, out)
    click.echo(f"wrote {out}: {len(wl['jobs'])} jobs, regime {regime}, seed {seed}; dropped "
               f"{wl['dropped_too_large']} jobs larger than the machine ({len(shape.compute)} nodes)")
