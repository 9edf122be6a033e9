"""``iosched bench scale``: cost of a simulation as jobs and nodes grow.

Issue 28, item 3: a synthetic machine of 10,000 compute nodes with 100,000
jobs, ``delay`` or ``parallel_homogeneous`` profiles; the peak memory of the
engine and of the scheduler (at most 1 GB each), the wall time, and how the
cost grows with jobs and with nodes, from measured points only.

Workload (:func:`synthetic_workload`): KTH-SP2 (a 100-node machine)
resampled and scaled to ``nb_nodes`` nodes. The trace is converted as
:func:`iosched.workloads.convert.swf_to_batsim` converts it for 100
resources (28,467 usable jobs, in submission order; job ``k`` has the
*gap* ``subtime[k] - subtime[k-1]``, 0 for the first). Then
``nb_jobs`` jobs are drawn uniformly with replacement
(``numpy.random.Generator(PCG64(seed)).integers``, one draw per job, in job
order); job ``i`` (id ``i``) takes its drawn job's

* size scaled to the machine: ``res = max(1, floor(res_KTH x nb_nodes / 100
  + 1/2))`` (at most ``nb_nodes``, since KTH asks for at most 100);
* profile (``delay_<run time>`` or ``parallel_homogeneous_<run time>``:
  run time x 1 Gflop on 1 Gflop/s hosts, so both kinds last the run time)
  and walltime (``max(requested time, run time)``, none when the trace has
  none);
* gap: ``subtime[i] = subtime[i-1] + gap`` (``subtime[0] = 0``).

So the offered load (node-seconds asked per node-second of the submission
span) is KTH-SP2's whatever the node count; the number of nodes changes only
the width of every allocation (and of the machine), the number of jobs only
the length of the run. The same arguments give byte-identical JSON
(:func:`iosched.workloads.writer.dump_workload`).

Platform: :func:`iosched.experiments.platforms.cluster_xml` with ``nb_nodes`` hosts.
Scheduler: iosched's ``easy`` by default (``--scheduler``: any name of
:mod:`iosched.schedulers.registry`, or ``easyBackfill``, pybatsim 3.2.1's
unmodified example), with ``-v warning`` (``iosched run``'s default).

Measured for each run (:func:`measure`): the wall time of the simulation (s,
from the scheduler's start to the end of both processes), the peak RSS (MB)
and CPU time (s) of the engine process and of the scheduler process, each
the process's own (see :func:`measure`); with ``--in-process`` the
engine and the scheduler are one process and its single peak is reported
for both; jobs per second of wall time; the 1-minute load average before and
after. ``--grid`` measures a small table (:data:`GRID_JOBS` at
:data:`GRID_NODES_FIXED` nodes, :data:`GRID_NODES` at
:data:`GRID_JOBS_FIXED` jobs, each point run, never extrapolated).

Written to ``results/bench/scale_<profiles>_<nodes>x<jobs>[_<scheduler>][_inproc].json``
(one point) or ``results/bench/scale_grid_<profiles>[_<scheduler>][_inproc].json``
(``_<scheduler>`` unless ``easy``), with a
calibration of the machine (:func:`iosched.experiments.common.calibrate`). A
benchmark, not a test: it asserts nothing, and its figures depend on the
machine.
"""

from __future__ import annotations

import json
import os
import platform as py_platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from iosched.clicommon import OneLineErrorCommand, command_line
from iosched.errors import InputError
from iosched.experiments.common import calibrate, cpu_times, steal_share, write_result
from iosched.experiments.platforms import cluster_xml
from iosched.paths import RESULTS_DIR
from iosched.procmem import PeakSampler
from iosched.run.result import RunError
from iosched.workloads.convert import PROFILE_TYPES, swf_to_batsim
from iosched.workloads.writer import dump_workload
from iosched.workloads.default_swf import DEFAULT_SWF_HELP, find_default_swf

__all__ = ["SOURCE_NODES", "GRID_JOBS", "GRID_NODES", "GRID_NODES_FIXED", "GRID_JOBS_FIXED",
           "ROLES", "synthetic_workload", "write_inputs", "measure", "scale_command"]

#: nodes of the machine the source trace ran on (KTH-SP2: 100)
SOURCE_NODES = 100
#: ``--grid``: job counts measured at :data:`GRID_NODES_FIXED` nodes
GRID_JOBS = (10_000, 30_000, 100_000)
GRID_NODES_FIXED = 10_000
#: ``--grid``: node counts measured at :data:`GRID_JOBS_FIXED` jobs
GRID_NODES = (1_000, 3_000, 10_000)
GRID_JOBS_FIXED = 30_000
#: pybatsim's example scheduler, accepted by ``--scheduler`` beside iosched's names
PYBATSIM_EASY = "easyBackfill"


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"scale: {name} must be an integer >= 1, got {value!r}")
    return int(value)


def synthetic_workload(nb_jobs: int, nb_nodes: int, profile_type: str = "delay", seed: int = 0,
                       swf=None) -> tuple[dict, dict]:
    """The synthetic workload of the module documentation: ``nb_jobs`` jobs
    resampled from the trace ``swf`` (default KTH-SP2,
    :func:`iosched.workloads.default_swf.find_default_swf`) for a machine of
    ``nb_nodes`` nodes, with ``profile_type`` profiles (``"delay"`` or
    ``"parallel_homogeneous"``), random draws seeded by ``seed`` (int >= 0).

    Returns ``(workload, info)``: ``workload`` is a Batsim workload dict
    (``nb_res`` = ``nb_nodes``, ``jobs`` with ids ``0 .. nb_jobs - 1`` in
    submission order, ``profiles``, only those used); ``info`` describes it:
    ``source`` (trace path), ``source_jobs`` (usable trace jobs drawn from),
    ``span_s`` (last submission time, s), ``work_node_s`` (sum of ``res x``
    run time, node-s), ``offered_load`` (``work_node_s / (nb_nodes x
    span_s)``, None for a span of 0), ``max_res``, ``mean_res``. Equal
    arguments give equal results (and byte-identical
    :func:`iosched.workloads.writer.dump_workload` text).

    :raises InputError: a count that is not an integer >= 1, a bad seed or
        profile type, an unreadable trace or one without usable jobs (one
        line).
    """
    nb_jobs = _count(nb_jobs, "jobs")
    nb_nodes = _count(nb_nodes, "nodes")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"scale: seed must be an integer >= 0, got {seed!r}")
    if profile_type not in PROFILE_TYPES:
        raise InputError(f"scale: profile type {profile_type!r} is not one of {', '.join(PROFILE_TYPES)}")
    if swf is None:
        swf = find_default_swf()
    source, _report = swf_to_batsim(swf, nb_res=SOURCE_NODES, profile_type=profile_type)
    pool = source["jobs"]
    if not pool:
        raise InputError(f"scale: {swf}: no usable job")
    subtimes = [j["subtime"] for j in pool]
    gaps = [0.0] + [b - a for a, b in zip(subtimes, subtimes[1:])]
    draws = np.random.Generator(np.random.PCG64(int(seed))).integers(0, len(pool), size=nb_jobs)
    jobs, used = [], {}
    t = 0.0
    work = 0.0
    max_res = 0
    sum_res = 0
    for i, k in enumerate(draws.tolist()):
        src = pool[k]
        if i:
            t += gaps[k]
        res = max(1, (src["res"] * nb_nodes * 2 + SOURCE_NODES) // (2 * SOURCE_NODES))
        res = min(res, nb_nodes)
        job = {"id": i, "subtime": t, "res": res, "profile": src["profile"]}
        if "walltime" in src:
            job["walltime"] = src["walltime"]
        jobs.append(job)
        prof = source["profiles"][src["profile"]]
        used[src["profile"]] = prof
        run_time = prof["delay"] if prof["type"] == "delay" else prof["cpu"] / 1e9
        work += res * run_time
        max_res = max(max_res, res)
        sum_res += res
    workload = {"nb_res": nb_nodes, "jobs": jobs, "profiles": used}
    info = {"source": str(swf), "source_jobs": len(pool), "seed": int(seed), "span_s": t,
            "work_node_s": work, "offered_load": round(work / (nb_nodes * t), 4) if t > 0 else None,
            "max_res": max_res, "mean_res": round(sum_res / nb_jobs, 2)}
    return workload, info


def write_inputs(directory: Path, nb_jobs: int, nb_nodes: int, profile_type: str = "delay",
                 seed: int = 0, swf=None) -> tuple[Path, Path, dict]:
    """Write the synthetic workload (``workload.json``) and the platform
    (``platform.xml``, :func:`iosched.experiments.platforms.cluster_xml` with
    ``nb_nodes`` hosts) into ``directory`` (created); return their paths
    and the workload's ``info`` (:func:`synthetic_workload`, plus
    ``workload_bytes``).

    :raises InputError: as :func:`synthetic_workload`, or when the files
        cannot be written (one line).
    """
    workload, info = synthetic_workload(nb_jobs, nb_nodes, profile_type, seed, swf)
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        wl = directory / "workload.json"
        with open(wl, "w") as f:
            dump_workload(workload, f)
        plat = directory / "platform.xml"
        plat.write_text(cluster_xml(nb_nodes))
    except OSError as exc:
        raise InputError(f"scale: cannot write the inputs in {directory}: {exc.strerror or exc}") from None
    info["workload_bytes"] = wl.stat().st_size
    return wl, plat, info


def _scheduler_path(name: str) -> str:
    if name == PYBATSIM_EASY:
        import schedulers  # pybatsim's example schedulers

        return str(Path(schedulers.__file__).parent / "easyBackfill.py")
    return name


#: command-line substrings of the processes :func:`measure` samples
ROLES = {"scheduler": ["batsim.cmds.launcher", "iosched.run.direct_launcher"], "engine": ["iosched.engine.cli", "iosched-batsim"]}


def measure(platform, workload, scheduler: str, out: Path, in_process: bool = False,
            cpu: str = "auto", timeout: float = 4 * 3600) -> dict:
    """Run one simulation (:func:`iosched.run.simulation.run_simulation`,
    quiet scheduler) and return its figures: ``wall_s`` (s), ``engine`` and
    ``scheduler`` (each ``{"max_rss_mb", "cpu_s", "user_s", "sys_s"}``;
    in-process both are the one engine process), ``makespan_s``,
    ``nb_jobs`` and ``jobs_per_s`` (jobs of ``out_jobs.csv`` per s of wall
    time), ``load_1min_before`` / ``load_1min_after``.

    Peak RSS (MB) is each process's own (``VmHWM``, :mod:`iosched.procmem`),
    sampled every 50 ms while it runs (:class:`iosched.procmem.PeakSampler`);
    for the engine, the larger of that and what it writes once its outputs
    are written (``--rusage-file``: ``engine.max_rss_mb_at_end``; the
    process still runs its teardown after it), both kept
    (``engine.max_rss_mb_sampled``), to show what sampling misses.
    CPU times (s) are each process's own as the runner reaps it
    (``os.wait4``, :attr:`iosched.run.result.RunResult.rusage`).

    ``scheduler`` is a registry name, ``easyBackfill`` (pybatsim's) or a
    scheduler file; ``timeout`` bounds the run (s).

    :raises InputError: bad arguments (see ``run_simulation``).
    :raises RunError: the simulation failed or timed out.
    """
    from iosched.run.simulation import run_simulation

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rusage_file = out / "engine-rusage.json"
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with PeakSampler(ROLES) as sampler:
        result = run_simulation(platform, workload, _scheduler_path(scheduler), out, timeout=timeout,
                                quiet=True, cpu=cpu, in_process=in_process,
                                engine_args=["--rusage-file", str(rusage_file)])
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    eng = json.loads(rusage_file.read_text())

    def cpu_of(name):
        ru = result.rusage.get(name)
        if ru is None:
            return {}
        return {"cpu_s": round(ru["user_s"] + ru["sys_s"], 2), "user_s": round(ru["user_s"], 2),
                "sys_s": round(ru["sys_s"], 2)}

    def mb(kb):
        return None if kb is None else round(kb / 1024, 1)

    sampled = sampler.peaks.get("engine")
    engine = {"max_rss_mb": mb(max(eng["max_rss_kb"], sampled or 0)),
              "max_rss_mb_at_end": mb(eng["max_rss_kb"]), "max_rss_mb_sampled": mb(sampled),
              **cpu_of("engine")}
    if in_process:
        sched = dict(engine)
    else:
        sched = {"max_rss_mb": mb(sampler.peaks.get("scheduler")), **cpu_of("scheduler")}
    with open(result.schedule_csv) as f:
        header, values = f.read().splitlines()[:2]
    sched_csv = dict(zip(header.split(","), values.split(",")))
    with open(result.jobs_csv) as f:
        nb = sum(1 for _ in f) - 1
    return {"wall_s": round(wall, 2), "engine": engine, "scheduler": sched,
            "makespan_s": float(sched_csv["makespan"]), "nb_jobs": nb,
            "jobs_per_s": round(nb / wall, 1),
            "load_1min_before": round(load0, 2), "load_1min_after": round(load1, 2)}


def _point(tmp: Path, nb_nodes, nb_jobs, profiles, scheduler, in_process, cpu, seed, swf, repeat) -> dict:
    label = f"{nb_nodes}x{nb_jobs}"
    wl, plat, info = write_inputs(tmp / f"in-{label}", nb_jobs, nb_nodes, profiles, seed, swf)
    runs = []
    for k in range(repeat):
        out = tmp / f"run-{label}-{k}"
        r = measure(plat, wl, scheduler, out, in_process=in_process, cpu=cpu)
        runs.append(r)
        click.echo(f"scale: {nb_nodes} nodes x {nb_jobs} jobs ({profiles}), run {k + 1}/{repeat}: "
                   f"{r['wall_s']} s, engine {r['engine']['max_rss_mb']} MB, "
                   f"scheduler {r['scheduler']['max_rss_mb']} MB", err=True)
    point = {"nb_nodes": nb_nodes, "nb_jobs": nb_jobs, "workload": info, "runs": runs}
    if repeat > 1:
        point["median"] = {
            "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
            "engine_max_rss_mb": round(statistics.median(r["engine"]["max_rss_mb"] for r in runs), 1),
            "scheduler_max_rss_mb": round(statistics.median(r["scheduler"]["max_rss_mb"] for r in runs), 1),
            "engine_cpu_s": round(statistics.median(r["engine"]["cpu_s"] for r in runs), 2),
            "scheduler_cpu_s": round(statistics.median(r["scheduler"]["cpu_s"] for r in runs), 2),
        }
    return point


@click.command(name="scale", cls=OneLineErrorCommand)
@click.option("--nodes", "nb_nodes", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="compute nodes of the synthetic cluster")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="jobs of the synthetic workload")
@click.option("--profiles", type=click.Choice(PROFILE_TYPES), default="delay", show_default=True)
@click.option("--scheduler", default="easy", show_default=True,
              help=f"an iosched scheduler name, or {PYBATSIM_EASY} (pybatsim's)")
@click.option("--in-process", "in_process", is_flag=True,
              help="the scheduler inside the engine's process (one process, one peak)")
@click.option("--grid", is_flag=True,
              help=f"measure jobs in {GRID_JOBS} at {GRID_NODES_FIXED} nodes and nodes in {GRID_NODES} "
                   f"at {GRID_JOBS_FIXED} jobs (--nodes and --jobs ignored)")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="runs of each point (medians reported when > 1)")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--swf", type=click.Path(dir_okay=False), default=None,
              help=f"source trace [default: {DEFAULT_SWF_HELP}]")
@click.option("--cpu", default="auto", show_default=True, metavar="auto|none|N",
              help="CPU placement of the engine and the scheduler (iosched run --cpu)")
@click.option("--output", type=click.Path(file_okay=False), default=str(RESULTS_DIR / "bench"),
              show_default=True)
def scale_command(nb_nodes, nb_jobs, profiles, scheduler, in_process, grid, repeat, seed, swf, cpu,
                  output):
    """Time a synthetic NODES x JOBS simulation: wall time, engine and scheduler peak memory."""
    from iosched.run.simulation import resolve_scheduler

    try:
        if scheduler != PYBATSIM_EASY:
            resolve_scheduler(scheduler)  # an unknown name fails before anything is generated
        points = ([(GRID_NODES_FIXED, n) for n in GRID_JOBS]
                  + [(m, GRID_JOBS_FIXED) for m in GRID_NODES if (m, GRID_JOBS_FIXED) != (GRID_NODES_FIXED,
                                                                                         GRID_JOBS_FIXED)]
                  if grid else [(nb_nodes, nb_jobs)])
        out = Path(output)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"--output {output}: cannot create: {exc.strerror or exc}") from None
        cpu0 = cpu_times()
        t0 = time.gmtime()
        measured = []
        with tempfile.TemporaryDirectory(prefix="iosched-bench-scale-") as tmp:
            for m, n in points:
                measured.append(_point(Path(tmp), m, n, profiles, scheduler, in_process, cpu, seed, swf,
                                       repeat))
        steal = steal_share(cpu0, cpu_times())
    except (InputError, RunError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    loads = [x for p in measured for r in p["runs"] for x in (r["load_1min_before"], r["load_1min_after"])]
    res = {
        "benchmark": "scale_grid" if grid else "scale",
        "command": command_line(click.get_current_context()),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", t0),
        "profiles": profiles,
        "scheduler": (f"pybatsim 3.2.1 {PYBATSIM_EASY}" if scheduler == PYBATSIM_EASY else scheduler)
        + " -v warning",
        "in_process": in_process, "cpu": cpu, "seed": seed, "repeat": repeat,
        "points": measured,
        "load_1min": {"min": min(loads), "median": round(statistics.median(loads), 2), "max": max(loads),
                      "nproc": os.cpu_count()},
        "cpu_steal_share": steal,
        "machine": {"python": sys.version.split()[0], "platform": py_platform.platform()},
        "calibration": calibrate(),
    }
    suffix = "_inproc" if in_process else ""
    if scheduler != "easy":
        suffix = f"_{Path(scheduler).stem}{suffix}"
    name = (f"scale_grid_{profiles}{suffix}.json" if grid
            else f"scale_{profiles}_{nb_nodes}x{nb_jobs}{suffix}.json")
    write_result(res, out / name)
