"""Platform, job model and workload generators of Goponenko et al. (PMBS
2024, Sections IV and VII-A), and the runs that characterise them.

Platform (:func:`iosched.experiments.platforms.pfsbw_xml`): 15 compute nodes of 8 cores and one
file-system host ``pfs`` (``role=storage``). Each node is a SimGrid
``<cluster>`` of 8 hosts (one per core, property ``node=node_<i>`` so that
the scheduler's machine groups them into a node): a core reaches the node's
router through its own link of ``thread_bw`` (the rate of one writing
thread, default :data:`THREAD_BW` = 0.5 GiB/s) and the node's backbone of
``node_bw`` (the node's injection limit, default :data:`NODE_BW` = 3.75
GiB/s); every node reaches ``pfs`` through one shared link of ``pfs_bw``
(default :data:`PFS_BW` = 20 GiB/s). SimGrid shares these links max-min
fairly between the jobs' flows, so ``n`` concurrent write x8 jobs get
``min(n * node_bw, pfs_bw)`` in total: concave, saturating at ``pfs_bw``,
and a write xk job alone writes at ``min(k * thread_bw, node_bw)``.
Why no smoother curve: the ``sharing_policy`` attribute of a SimGrid 3.32
platform XML link offers only ``SHARED``, ``SPLITDUPLEX`` (``FULLDUPLEX``),
``FATPIPE`` and ``WIFI``, all linear; SimGrid's ``NONLINEAR`` policy (a
callback giving capacity against load) exists only through the C++/Python
API (``Link::set_sharing_policy``), which Batsim 4.2.1 does not call, so it
would run on the embedded engine only. That extension exists
(``--link-overload``, :mod:`iosched.engine.overload`, with
``--embedded-extensions``): :data:`OVERLOAD`, :data:`OVERLOAD_LONGTERM` and
:data:`OVERLOAD_FIG4` are three readings of the paper's overloaded Lustre on the ``pfs_link``
(:func:`overload_args`); the linear platform stays the default. ``node_bw`` is chosen so that a
write x8 job alone writes at 3.75 GiB/s: "fewer than six" of them fit under
the 20 GiB/s limit when pre-trained (Section VI).

Jobs (one whole node each, walltime :data:`WALLTIME` = 900 s for all): a
``write xk`` job is the Batsim-standard profile ``parallel_homogeneous_pfs``
with ``k`` executors (``res = k``), each writing 10 GiB from its core to
the storage label ``pfs`` (one flow per thread; SimGrid decides the
duration from the contention); a ``sleep`` job is a ``delay`` profile of
``sleep`` s (600 s in the paper, ``res = 1``). The scheduler allocates the
whole node (its 8 cores) and maps the executors to its first cores
(EXECUTE_JOB ``mapping``). Each job carries its I/O model ``io``
(:mod:`iosched.sched.iojob`), which a scheduler may read: ``nodes`` (whole
nodes, 1), ``application`` (the job type, e.g. ``"write_x8"``: the "same
command line" of the estimator, its variety) and ``writes.bytes`` (bytes the
job writes, known from its profile); before issue 26 the fields ``nodes``,
``variety``, ``bytes_written``.

Workloads (all jobs submitted at t = 0 in the paper's order, FCFS):
Workload 1 = 8 waves of 30 write x8 then 60 sleep (720 jobs); Workload 2 =
5 waves of 30 write x8, 30 write x6, 30 write x4, 70 write x2, 120 write x1,
30 sleep (1,550 jobs).

Command line: ``iosched platform pfsbw OUT.xml``, ``iosched workload pfsbw
w1 OUT.json``, ``... w2 OUT.json``, ``... curve OUT.csv -p PLATFORM``,
``... pretrain OUT.json -p PLATFORM -w WORKLOAD``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from iosched.api import simulate
from iosched.checks import MAX_TIME, argument, check_output_file
from iosched.clicommon import OneLineErrorCommand
from iosched.engine.overload import parse_overload
from iosched.errors import InputError, one_line
from iosched.experiments.platforms import GIB, PFSBW_CORES, PFSBW_NODE_BW, PFSBW_PFS_BW, PFSBW_THREAD_BW
from iosched.paths import scratch
from iosched.run.result import RunError
from iosched.sched.iojob import IOJob, Writes, read_io, to_json
from iosched.workloads.writer import write_workload

__all__ = ["GIB", "NODE_BW", "PFS_BW", "WALLTIME", "SLEEP", "OVERLOAD", "OVERLOAD_LONGTERM", "OVERLOAD_FIG4",
           "OVERLOADS", "overload_args", "workload", "workload1", "workload2", "measure_curve",
           "pretrain_samples"]

#: Rate of one writing thread (a core's link, bytes/s).
THREAD_BW = PFSBW_THREAD_BW
#: Injection limit of a node (bytes/s).
NODE_BW = PFSBW_NODE_BW
#: Cores per node.
CORES = PFSBW_CORES
#: Shared link of the file system (bytes/s).
PFS_BW = PFSBW_PFS_BW
#: Walltime of every job (s).
WALLTIME = 900.0
#: Duration of a sleep job (s).
SLEEP = 600.0
#: Bytes written by one thread of a write job.
THREAD_BYTES = 10 * GIB

#: The file system under overload (``--link-overload`` of the embedded
#: engine), the issue's reading: the capacity of ``pfs_link`` against its
#: concurrent write jobs is 20 GiB/s up to 5 ("fewer than six" write x8
#: jobs, Section VI), then 1 GiB/s less per job down to 15 GiB/s from 10
#: jobs on (Section V: about 20 GiB/s "short-term", about 15 GiB/s
#: "long-term"). The shape is read from the paper's text (docs/pfsbw.md).
OVERLOAD = "pfs_link:20GiB@5,15GiB@10"
#: The "long-term" reading: 20 GiB/s up to 4 writers, 17.5 GiB/s for 5
#: (below the 5 x 3.75 GiB/s they demand: five write x8 jobs already
#: congest, as Section VI tells of io-aware 20), 15 GiB/s from 6 on.
OVERLOAD_LONGTERM = "pfs_link:20GiB@4,15GiB@6"
#: The Fig. 4 reading (docs/pfsbw.md: the paper's best reading): the
#: throughput "levels up near" 15 GiB/s as soon as the writers could ask for
#: more, i.e. 15 GiB/s from 5 write x8 jobs on (up to 4, their nodes bound
#: them to 15 GiB/s anyway).
OVERLOAD_FIG4 = "pfs_link:20GiB@4,15GiB@5"
#: Named file-system models of ``--overload`` (:func:`overload_args`).
OVERLOADS = {"linear": "", "issue": OVERLOAD, "long-term": OVERLOAD_LONGTERM, "fig4": OVERLOAD_FIG4}

WAVES_1 = ((8, 30), ("sleep", 60))
WAVES_2 = ((8, 30), (6, 30), (4, 30), (2, 70), (1, 120), ("sleep", 30))


def _profile(kind, sleep: float) -> tuple:
    if kind == "sleep":
        return "sleep", {"type": "delay", "delay": float(sleep)}, 0.0
    nbytes = float(kind * THREAD_BYTES)
    return f"write_x{kind}", {"type": "parallel_homogeneous_pfs", "bytes_to_read": 0.0,
                              "bytes_to_write": float(THREAD_BYTES), "storage": "pfs"}, nbytes


def workload(waves: int, phases, sleep: float = SLEEP, walltime: float = WALLTIME,
             noise: float = 0.0, seed: int = 0) -> dict:
    """Batsim workload (dict) of ``waves`` repetitions of ``phases`` (a
    sequence of ``(k or "sleep", count)``), every job submitted at t = 0.

    ``noise`` in ``[0, 1)``: seeded variation of the transfer efficiency: a
    write job writing ``B`` bytes moves ``B / e`` bytes through the network
    with ``e`` uniform in ``[1 - noise, 1]`` (numpy ``default_rng(seed)``),
    in its own profile; its ``io.writes.bytes`` stays ``B`` (what the
    scheduler knows). 0 (default): every job of a type shares one profile.

    :raises InputError: non-positive waves, sleep or walltime, a sleep or
        walltime not a number, not finite or above
        :data:`iosched.checks.MAX_TIME`; noise not a number in ``[0, 1)``; a
        seed not an integer >= 0 (one line naming the argument).
    """
    if isinstance(waves, bool) or not isinstance(waves, int) or waves < 1:
        raise InputError(f"workload: waves must be an integer >= 1, got {waves!r}")
    argument(sleep, "sleep", exclusive_minimum=True, maximum=MAX_TIME, where="workload")
    argument(walltime, "walltime", exclusive_minimum=True, maximum=MAX_TIME, where="workload")
    if not (0 <= argument(noise, "noise", maximum=1, where="workload") < 1):
        raise InputError(f"workload: noise must be in [0, 1), got {noise!r}")
    argument(seed, "seed", integer=True, maximum=None, where="workload")
    rng = np.random.default_rng(seed)
    profiles, jobs = {}, []
    for _ in range(waves):
        for kind, count in phases:
            name, prof, nbytes = _profile(kind, sleep)
            for _ in range(count):
                pname = name
                p = prof
                if noise > 0 and nbytes > 0:
                    e = 1.0 - noise * float(rng.random())
                    pname = f"{name}_{len(jobs)}"
                    p = dict(prof, bytes_to_write=prof["bytes_to_write"] / e)
                profiles[pname] = p
                jobs.append({"id": str(len(jobs)), "subtime": 0.0, "res": 1 if kind == "sleep" else kind,
                             "walltime": float(walltime), "profile": pname,
                             "io": to_json(IOJob(nodes=1, application=name, writes=Writes(nbytes)))})
    return {"nb_res": 15 * CORES, "jobs": jobs, "profiles": profiles}


def workload1(waves: int = 8, sleep: float = SLEEP, noise: float = 0.0, seed: int = 0) -> dict:
    """Workload 1 (Section IV): waves of 30 write x8 then 60 sleep (720 jobs for 8 waves)."""
    return workload(waves, WAVES_1, sleep, noise=noise, seed=seed)


def workload2(waves: int = 5, sleep: float = SLEEP, noise: float = 0.0, seed: int = 0) -> dict:
    """Workload 2 (Section VII-A): waves of 30 write x8, 30 x6, 30 x4, 70 x2,
    120 x1 and 30 sleep (1,550 jobs for 5 waves)."""
    return workload(waves, WAVES_2, sleep, noise=noise, seed=seed)


def overload_args(spec: str | None) -> list:
    """The engine arguments of a file system under overload: ``[]`` for
    None, ``""`` or ``"linear"`` (linear sharing, the default), else
    ``--embedded-extensions --link-overload=SPEC`` with SPEC a name of
    :data:`OVERLOADS` or a curve (the syntax of
    :func:`iosched.engine.overload.parse_overload`, e.g. :data:`OVERLOAD`).

    :raises InputError: a bad SPEC (one line naming the option).
    """
    spec = OVERLOADS.get(spec, spec) if spec else spec
    if not spec:
        return []
    parse_overload(spec)
    return ["--embedded-extensions", f"--link-overload={spec}"]


def _run(platform, wl: dict, tmp: Path, name: str, engine_args=()):
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"{name}.json"
    write_workload(wl, path)
    return simulate(platform, path, "slurm-backfill", output_dir=tmp / name, engine_args=engine_args)


def measure_curve(platform, tmp, max_jobs: int = 15, k: int = 8, engine_args=()) -> list:
    """Total write throughput (bytes/s) of ``n = 1..max_jobs`` write xk jobs
    started together on the engine (scheduler ``slurm-backfill``; engine
    arguments ``engine_args``, e.g. :func:`overload_args`): ``n * bytes /
    (last finish - first start)``. Returns ``[(n, bytes/s, runtime s of the
    slowest job)]``."""
    tmp = Path(tmp)
    out = []
    for n in range(1, max_jobs + 1):
        wl = workload(1, ((k, n),))
        jobs = _run(platform, wl, tmp, f"curve{n}", engine_args)
        span = float(jobs["finish_time"].max() - jobs["starting_time"].min())
        out.append((n, n * k * THREAD_BYTES / span, float(jobs["execution_time"].max())))
    return out


def pretrain_samples(platform, workload_dict: dict, tmp, engine_args=()) -> dict:
    """Run one job of each variety of a workload alone (scheduler ``slurm-backfill``,
    engine arguments ``engine_args``) and return ``{variety: {"bytes": bytes_written, "runtime": s}}`` -- the
    paper's pre-training ("representative jobs are run in isolation").

    :raises InputError: the workload has no ``jobs``/``nb_res``/``profiles``,
        or a job lacks ``profile``, its application or its bytes written
        (``io.application``, ``io.writes``, or the earlier fields ``variety``,
        ``bytes_written``; one line naming the job and the field).
    """
    tmp = Path(tmp)
    for key in ("jobs", "nb_res", "profiles"):
        if key not in workload_dict:
            raise InputError(f"pretrain: the workload has no field {key!r}")
    seen: dict = {}
    for job in workload_dict["jobs"]:
        where = f"pretrain: job {job.get('id')!r}"
        io = read_io(job, where)
        for key, value in (("profile", job.get("profile")), ("io.application (or variety)", io.application),
                           ("io.writes (or bytes_written)", io.writes)):
            if value is None:
                raise InputError(f"{where} has no field {key} (a workload of iosched workload pfsbw)")
        if job["profile"] not in workload_dict["profiles"]:
            raise InputError(f"{where}: profile {job['profile']!r} is not in the workload's profiles")
        seen.setdefault(io.application, (job, io.writes.bytes))   # the first job of each type
    out = {}
    for variety, (job, nbytes) in sorted(seen.items()):
        wl = {"nb_res": workload_dict["nb_res"], "jobs": [dict(job, id="0")],
              "profiles": {job["profile"]: workload_dict["profiles"][job["profile"]]}}
        jobs = _run(platform, wl, tmp, f"pretrain_{variety}", engine_args)
        out[variety] = {"bytes": float(nbytes),
                        "runtime": float(jobs["execution_time"].iloc[0])}
    return out


# --------------------------------------------------------------- CLI
@click.group(name="pfsbw")
def workload_command():
    """Workloads and characterisation runs of the pfsbw family."""


def _write_workload(out, wl):
    check_output_file(out)
    write_workload(wl, out)
    click.echo(f"wrote {out}: {len(wl['jobs'])} jobs")


@workload_command.command(name="w1", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--waves", type=int, default=8, show_default=True)
@click.option("--sleep", type=float, default=SLEEP, show_default=True, help="sleep job duration (s)")
@click.option("--noise", type=float, default=0.0, show_default=True, help="transfer efficiency noise in [0, 1)")
@click.option("--seed", type=int, default=0, show_default=True)
def w1_cmd(out, waves, sleep, noise, seed):
    """Write Workload 1 to OUT."""
    try:
        _write_workload(out, workload1(waves, sleep, noise, seed))
    except InputError as exc:
        raise click.ClickException(str(exc)) from None


@workload_command.command(name="w2", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--waves", type=int, default=5, show_default=True)
@click.option("--sleep", type=float, default=SLEEP, show_default=True, help="sleep job duration (s)")
@click.option("--noise", type=float, default=0.0, show_default=True, help="transfer efficiency noise in [0, 1)")
@click.option("--seed", type=int, default=0, show_default=True)
def w2_cmd(out, waves, sleep, noise, seed):
    """Write Workload 2 to OUT."""
    try:
        _write_workload(out, workload2(waves, sleep, noise, seed))
    except InputError as exc:
        raise click.ClickException(str(exc)) from None


@workload_command.command(name="curve", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("-p", "--platform", "platform", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--tmp", default=str(scratch("pfsbw-curve")), show_default=True)
@click.option("--overload", default="", metavar="SPEC",
              help=f"the file system under overload (embedded engine only): {', '.join(OVERLOADS)} or "
                   "LINK:BW@N,... (default: linear)")
def curve_cmd(out, platform, tmp, overload):
    """Measure total throughput against 1..15 concurrent write x8 jobs (CSV)."""
    check_output_file(out)
    Path(tmp).mkdir(parents=True, exist_ok=True)
    try:
        rows = measure_curve(platform, tmp, engine_args=overload_args(overload))
    except (InputError, RunError) as exc:
        raise click.ClickException(f"curve: {one_line(exc)}") from None
    with open(out, "w") as f:
        f.write("concurrent_jobs,total_GiB_per_s,job_runtime_s\n")
        for n, rate, rt in rows:
            f.write(f"{n},{rate / GIB:.4f},{rt:.3f}\n")
    click.echo(Path(out).read_text(), nl=False)


@workload_command.command(name="pretrain", cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("-p", "--platform", "platform", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-w", "--workload", "wl_path", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--tmp", default=str(scratch("pfsbw-pretrain")), show_default=True)
def pretrain_cmd(out, platform, wl_path, tmp):
    """Run each job type of a workload alone; write the estimator's samples (JSON)."""
    Path(tmp).mkdir(parents=True, exist_ok=True)
    try:
        wl = json.loads(Path(wl_path).read_text())
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{wl_path}: cannot read the workload: {exc}") from None
    check_output_file(out)
    try:
        samples = pretrain_samples(platform, wl, tmp)
    except (InputError, RunError) as exc:
        raise click.ClickException(one_line(exc)) from None
    Path(out).write_text(json.dumps(samples, indent=1, sort_keys=True) + "\n")
    click.echo(json.dumps(samples, sort_keys=True))
