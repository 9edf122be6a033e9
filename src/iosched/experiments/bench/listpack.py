"""Benchmark of the list vs pack family (``iosched bench listpack``).

* one M-BN workload at alpha 0.6 (seed 1, ``--n-jobs`` jobs, default 100)
  with each of the eight schedulers in the exclusive model, and io-list /
  io-pack-max in the shared model: wall time (s, median of ``--repeat``
  runs), engine and scheduler shares (Batsim's ``scheduling_time``), phase
  jobs, makespan;
* growth: io-list (exclusive) on M-BN alpha 0.6 with 25, 50, 100, 200 jobs
  (phase jobs grow as ``2 sum n_i``, about 110 per job), and on U-BN alpha
  0.4 with 50 jobs on the 2048-node Uniform machine (2048 Batsim resources
  instead of 96);
* the sweeps' wall times given with ``--sweep`` (measured by the caller
  around ``iosched campaign``).

Writes ``results/bench/listpack.json``. Speed targets belong here, never in
the tests.

``--reference TREE`` benchmarks **the sweep's median run** instead: the
workload of the Mira sweep (``examples/listpack_mira.yaml``: 7 workloads x
10 seeds, 30 jobs) whose phase-job count is the median of the 70 (M-BN
alpha 0.2 seed 7, 3,474 phase jobs; the run time grows with the phase
jobs, docs/listpack.md "Cost"), with ``io-list`` on the sweep's Mira
platform, run by the source tree ``TREE`` (e.g. a worktree of main: the
sweep's setting, two processes) and by this tree (two processes, or the
scheduler inside the engine's process with ``--in-process``), in turn,
``--repeat`` rounds (:func:`iosched.experiments.common.side_by_side`: wall and
CPU time of each run, load average, ratios per round and their median;
``out_jobs.csv`` and ``out_machine_states.csv`` compared byte for byte).
Writes ``results/bench/listpack_median_run_side_by_side.json``.

``--record-sweep CAMPAIGN_DIR`` (repeatable) benchmarks nothing: it writes
``results/bench/listpack_sweep.json`` from finished campaign folders
(:func:`sweep_record`: runs, summed run wall time, wall-clock span from the
first run's ``run.json`` to the last ``done.json``), with the 1-minute load
averages sampled during the sweep (``--load-log``, lines ``HH:MM:SS l1 l5
l15``).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import click

from iosched.errors import InputError
from iosched.experiments.common import calibrate, cpu_times, side_by_side, steal_share, write_result
from iosched.experiments.listpack.workload import generate, write_workload
from iosched.experiments.platforms import listpack_xml
from iosched.listpack.metrics import read_phases
from iosched.paths import RESULTS_DIR, SCHEDULERS_DIR
from iosched.run.simulation import run_simulation

__all__ = ["bench_run", "sweep_record", "median_run_side_by_side", "bench_command", "MEDIAN_RUN"]

#: the Mira sweep's median workload by phase jobs (family, alpha, seed, jobs)
MEDIAN_RUN = ("M-BN", 0.2, 7, 30)

SCHEDULERS = ("io-list", "io-list-bf", "io-pack-random", "io-pack-max", "io-pack-char",
              "io-pack-random-bf", "io-pack-max-bf", "io-pack-char-bf")


def bench_run(platform, workload, policy: str, out: Path, io_model: str = "exclusive") -> dict:
    """One timed run; ``{"wall_s", "scheduler_s", "engine_s", "phases", "makespan_s"}``."""
    t0 = time.perf_counter()
    run_simulation(platform, workload, str(SCHEDULERS_DIR / "listpack.py"), out,
                   options={"policy": policy, "io_model": io_model, "seed": 1}, timeout=3600)
    wall = time.perf_counter() - t0
    with open(out / "out_schedule.csv") as f:
        header, values = f.read().splitlines()[:2]
    sched = dict(zip(header.split(","), values.split(",")))
    waited = float(sched["scheduling_time"])
    return {"wall_s": round(wall, 2), "scheduler_s": round(waited, 2),
            "engine_s": round(wall - waited, 2), "phases": int(len(read_phases(out / "out_jobs.csv"))),
            "makespan_s": float(sched["makespan"])}


def _median(platform, workload, policy, base: Path, repeat: int, io_model="exclusive") -> dict:
    runs = [bench_run(platform, workload, policy, base / f"{policy}-{io_model}-{k}", io_model)
            for k in range(repeat)]
    res = dict(runs[0])
    res["wall_s"] = statistics.median(r["wall_s"] for r in runs)
    res["wall_s_all"] = [r["wall_s"] for r in runs]
    return res


def sweep_record(campaigns, load_log=None) -> dict:
    """Wall time of a sweep from its campaign folders (module doc).

    :param campaigns: campaign output folders (``runs/*/done.json``).
    :param load_log: optional file of ``HH:MM:SS l1 l5 l15`` lines.
    :returns: ``{"campaigns": {name: {"runs", "run_wall_s_sum",
        "run_wall_s_median", "span_s"}}, "runs", "span_s", "load_1min"}``
        (s; ``span_s`` from the first run's start to the last run's end,
        the campaigns' spans summed when they ran one after the other).
    :raises InputError: a folder without finished runs.
    """
    res: dict = {"campaigns": {}, "workers": 2}
    for camp in campaigns:
        done = sorted(Path(camp).glob("runs/*/done.json"))
        if not done:
            raise InputError(f"{camp}: no finished run (runs/*/done.json)")
        walls = [json.loads(p.read_text()).get("wall_time_s") for p in done]
        walls = [w for w in walls if w is not None]
        start = min((p.parent / "run.json").stat().st_mtime for p in done)
        end = max(p.stat().st_mtime for p in done)
        res["campaigns"][Path(camp).name] = {
            "runs": len(done), "run_wall_s_sum": round(sum(walls), 1),
            "run_wall_s_median": round(statistics.median(walls), 2) if walls else None,
            "span_s": round(end - start, 1)}
    res["runs"] = sum(c["runs"] for c in res["campaigns"].values())
    res["span_s"] = round(sum(c["span_s"] for c in res["campaigns"].values()), 1)
    if load_log is not None:
        loads = [float(line.split()[1]) for line in Path(load_log).read_text().splitlines()
                 if len(line.split()) >= 2]
        if loads:
            res["load_1min"] = {"samples": len(loads), "min": min(loads),
                                "median": statistics.median(loads), "max": max(loads)}
    return res


def median_run_side_by_side(reference, repeat: int, in_process: bool, keep=None) -> dict:
    """The sweep's median run (:data:`MEDIAN_RUN`, ``io-list``, Mira
    platform) by the ``reference`` tree (two processes) and by this tree
    (``in_process``: inside the engine's process), in turn, ``repeat``
    rounds (module documentation).

    :returns: the result (times in s; see :func:`iosched.experiments.common.side_by_side`).
    :raises RuntimeError: a run fails.
    """
    fam, alpha, seed, n = MEDIAN_RUN
    res = {"benchmark": "listpack sweep median run, side by side", "calibration": calibrate(),
           "workload": f"{fam} alpha {alpha} seed {seed}, {n} jobs", "scheduler": "io-list",
           "platform": "Mira (96 nodes, examples/listpack_mira.yaml)",
           "reference_tree": str(Path(reference).resolve()),
           "this_tree": "in-process" if in_process else "two processes"}
    before = cpu_times()
    with tempfile.TemporaryDirectory(prefix="lp-bench-") as tmp:
        base = Path(keep) if keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        plat = base / "mira.xml"
        plat.write_text(listpack_xml(96))
        wl = write_workload(base / "median.json", generate(fam, alpha, seed, n))

        def spec(side, k):
            return {"kind": "simulation", "platform": str(plat), "workload": str(wl),
                    "scheduler": "io-list", "options": {}, "timeout": 3600,
                    "engine_args": ["--enable-dynamic-jobs"],
                    "in_process": in_process and side == "this", "out": str(base / f"{side}-{k}")}

        res.update(side_by_side(reference, spec, repeat, compare=("out_jobs.csv", "out_machine_states.csv"),
                                label="median run"))
    res["steal_share"] = steal_share(before, cpu_times())
    return res


@click.command(name="listpack")
@click.option("--n-jobs", default=100, show_default=True, help="jobs of the M-BN workload")
@click.option("--repeat", default=3, show_default=True, help="runs per scheduler (median)")
@click.option("--sweep", "sweeps", multiple=True,
              help="NAME=SECONDS:RUNS:HOW, a sweep's wall time measured around iosched campaign (repeatable)")
@click.option("--record-sweep", "record", multiple=True,
              help="campaign folder of a finished sweep: write listpack_sweep.json only (repeatable)")
@click.option("--load-log", default=None, help="with --record-sweep: file of 'HH:MM:SS l1 l5 l15' lines")
@click.option("--reference", default=None, metavar="TREE",
              help="time the sweep's median run with the source tree TREE and this one in turn "
                   "(--repeat rounds; listpack_median_run_side_by_side.json)")
@click.option("--in-process", "in_process", is_flag=True,
              help="with --reference: this tree's runs inside the engine's process")
@click.option("--output", default=None,
              help="result file [default: results/bench/listpack.json, or listpack_sweep.json]")
def bench_command(n_jobs, repeat, sweeps, record, load_log, reference, in_process, output):
    """Benchmark the listpack schedulers (module documentation)."""
    bench = RESULTS_DIR / "bench"
    if reference:
        try:
            res = median_run_side_by_side(reference, repeat, in_process)
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
        write_result(res, Path(output or bench / "listpack_median_run_side_by_side.json"))
        return
    if record:
        try:
            res = {"benchmark": "listpack sweep", **sweep_record(record, load_log)}
        except (InputError, OSError) as exc:
            raise click.UsageError(str(exc)) from None
        write_result(res, Path(output or bench / "listpack_sweep.json"))
        return
    output = output or bench / "listpack.json"
    cal = calibrate()
    before = cpu_times()
    res = {"benchmark": "listpack", "calibration": cal, "n_jobs": n_jobs, "repeat": repeat,
           "workload": "M-BN alpha 0.6 seed 1", "schedulers": {}, "growth": {}}
    with tempfile.TemporaryDirectory(prefix="lp-bench-") as tmp:
        base = Path(tmp)
        mira = base / "mira.xml"
        mira.write_text(listpack_xml(96))
        uni = base / "uni.xml"
        uni.write_text(listpack_xml(2048))
        wl = write_workload(base / "mbn.json", generate("M-BN", 0.6, 1, n_jobs))
        for pol in SCHEDULERS:
            res["schedulers"][pol] = _median(mira, wl, pol, base, repeat)
        for pol in ("io-list", "io-pack-max"):
            res["schedulers"][f"{pol}-shared"] = _median(mira, wl, pol, base, repeat, "shared")
        for n in (25, 50, 100, 200):
            w = write_workload(base / f"g{n}.json", generate("M-BN", 0.6, 1, n))
            (base / f"g{n}").mkdir()
            res["growth"][f"M-BN n_jobs={n}"] = _median(mira, w, "io-list", base / f"g{n}", 1)
        w = write_workload(base / "u50.json", generate("U-BN", 0.4, 1, 50))
        (base / "u50").mkdir()
        res["growth"]["U-BN n_jobs=50 (2048 resources)"] = _median(uni, w, "io-list", base / "u50", 1)
    for v in list(res["schedulers"].values()) + list(res["growth"].values()):
        v["ms_per_phase"] = round(1000 * v["wall_s"] / v["phases"], 3)
    for item in sweeps:
        name, _, rest = item.partition("=")
        secs, runs, how = (rest.split(":", 2) + ["", ""])[:3]
        res.setdefault("sweep", {})[name] = {"wall_s": float(secs), "runs": int(runs), "workers": 2,
                                             "how": how}
    res["steal_share"] = steal_share(before, cpu_times())
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_result(res, out)
