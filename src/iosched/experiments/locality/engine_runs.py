"""Whole-day engine runs of the locality policies: both I/O models, the table,
the agreement with the artifact loop, and the run times.

``iosched repro locality engine-runs [--models paper,shared-pfs]
[--policies fcfs,lea,...] [--work DIR] [--results results/locality]
[--bench results/bench] [--pfs-bandwidth 10e9[,1e9...]]`` runs every (model,
policy) on the embedded engine (``iosched run`` with the ``loc-<policy>``
scheduler, ``--cpu none``) over the whole Uppmax day
(:func:`~iosched.experiments.locality.workload.read_artifact` then
:func:`~iosched.experiments.locality.workload.to_batsim`: 21,819 jobs, run until the last
one ends) on :func:`~iosched.experiments.platforms.locality_xml` (486 x 20
cores, 0.1 GB/s per core; ``shared-pfs`` adds one shared link of
``--pfs-bandwidth`` bytes/s, one run per bandwidth given, labelled
``shared-pfs-<GB/s>GBps``). A run whose outputs are in ``--work`` already
is not run again (the command is resumable; ``--collect`` runs nothing and
tabulates the runs already there). Then it writes:

* ``<results>/uppmax_engine.{csv,md}``: one row per (model label, policy), the
  metrics of the 1,511 evaluated jobs (:func:`iosched.locality.metrics.summarize`)
  and, for ``paper``, ``same_as_loop``: how many evaluated jobs have the
  artifact loop's node, start and end second, transfer and wait
  (``<results>/jobs_<policy>.csv``, written by
  :mod:`iosched.experiments.locality.reproduction`), out of how many;
* ``<results>/engine_jobs_<label>_<policy>.csv``: the evaluated jobs of each run;
* ``<bench>/locality_engine_day.json``: per run the wall time (s), the CPU
  time of the engine and scheduler processes together (s,
  ``RUSAGE_CHILDREN``), the scheduler's own timing (``<out>_timing.json``:
  its CPU, planning CPU, passes, decisions) and the 1-minute load average
  at the start (runs on a loaded machine take longer in wall time).

Errors (missing input, a failed run) are one line on stderr and exit 1
(usage errors: exit 2).
"""

from __future__ import annotations

import csv
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import click

from iosched.api import simulate
from iosched.batsim.jobs import local_id
from iosched.clicommon import command_line
from iosched.errors import InputError
from iosched.experiments.common import write_result
from iosched.experiments.locality.reproduction import DATA
from iosched.experiments.platforms import LOCALITY_IO_MODELS as IO_MODELS, locality_xml
from iosched.experiments.locality.workload import read_artifact, to_batsim
from iosched.locality.metrics import COLUMNS
from iosched.locality.planner import POLICIES
from iosched.locality.policy import second
from iosched.run.result import RunError

__all__ = ["repro_command", "run_one", "same_as_loop", "engine_table"]

#: Columns of ``uppmax_engine.{csv,md}``: the I/O model, then the metrics.
TABLE_COLUMNS = ["io_model", *COLUMNS, "same_as_loop"]


def run_one(work: Path, model: str, policy: str, platform: Path, workload: Path) -> dict:
    """Run ``policy`` on ``platform`` on the engine unless ``work`` holds
    its outputs; return its timing record.

    :param model: the run's label (``paper``, ``shared-pfs-10GBps``...).

    Files in ``work``: ``<model>_<policy>_{jobs.csv,summary.json,timing.json}``
    (the scheduler's ``out`` option) and ``<model>_<policy>_run.json`` (wall
    and CPU time, s; load average).

    :raises RunError: the engine or the scheduler failed.
    """
    stem = work / f"{model}_{policy}"
    run_file = Path(f"{stem}_run.json")
    if run_file.exists() and Path(f"{stem}_summary.json").exists():
        return json.loads(run_file.read_text())
    load = os.getloadavg()[0]
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out_dir = work / f"run_{model}_{policy}"
    simulate(platform, workload, f"loc-{policy}", {"out": str(stem)}, output_dir=out_dir, cpu="none")
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out_dir, ignore_errors=True)   # Batsim's outputs: 40 MB a run, not used here
    rec = {"io_model": model, "policy": policy, "run_wall_s": round(wall, 1),
           "run_cpu_s": round((c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime), 1),
           "load_average_1min_at_start": round(load, 2)}
    run_file.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return rec


def _key(row: dict) -> tuple:
    return (row["node"], second(float(row["start"])), second(float(row["end"])), int(row["transfer"]),
            int(row["waiting"]))


def same_as_loop(engine_jobs: Path, loop_jobs: Path) -> str:
    """``"n/N"``: of the ``N`` evaluated jobs of the loop's CSV, the ``n``
    the engine ran on the same node, starting and ending in the same second
    (:func:`~iosched.locality.policy.second`), with the same transfer
    and wait (s); ``""`` when there is no loop CSV."""
    if not loop_jobs.exists():
        return ""
    with open(loop_jobs) as f:
        loop = {r["id"]: _key(r) for r in csv.DictReader(f)}
    with open(engine_jobs) as f:
        eng = {local_id(r["id"]): _key(r) for r in csv.DictReader(f)}
    return f"{sum(1 for k, v in loop.items() if eng.get(k) == v)}/{len(loop)}"


def engine_table(rows: list, path: Path) -> None:
    """``path.csv`` and ``path.md`` of the rows (:data:`TABLE_COLUMNS`)."""
    fmt = (lambda v: f"{v:.4f}" if isinstance(v, float) else str(v))
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=TABLE_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: fmt(r[k]) for k in TABLE_COLUMNS})
    lines = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in TABLE_COLUMNS) + " |" for r in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


@click.command(name="engine-runs")
@click.option("--models", default=",".join(IO_MODELS))
@click.option("--policies", default=",".join(POLICIES))
@click.option("--workload", default=str(DATA / "2022-09-10_V10000_anonymous.txt"))
@click.option("--work", default="results/campaigns/locality_engine_day", help="run outputs (resumable)")
@click.option("--results", default="results/locality")
@click.option("--bench", default="results/bench")
@click.option("--pfs-bandwidth", default="10e9", help="bytes/s (shared-pfs), comma-separated")
@click.option("--collect", is_flag=True,
              help="run nothing: tables of the runs already in --work, skipping the others")
@click.pass_context
def repro_command(ctx, **options):
    """Whole-day engine runs of the locality policies: both I/O models, the
    table, the agreement with the artifact loop, and the run times."""
    a = SimpleNamespace(**options)
    try:
        models = [m for m in a.models.split(",") if m]
        policies = [p for p in a.policies.split(",") if p]
        for m in models:
            if m not in IO_MODELS:
                raise InputError(f"--models: {m!r} is unknown; expected {', '.join(IO_MODELS)}")
        for p in policies:
            if p not in POLICIES:
                raise InputError(f"--policies: {p!r} is unknown; expected {', '.join(POLICIES)}")
        try:
            bws = [float(b) for b in a.pfs_bandwidth.split(",") if b]
        except ValueError:
            raise InputError(f"--pfs-bandwidth: {a.pfs_bandwidth!r} is not a list of numbers (bytes/s)") from None
        if not bws or not all(0 < b < float("inf") for b in bws):
            raise InputError(f"--pfs-bandwidth: {a.pfs_bandwidth!r} must be positive numbers (bytes/s)")
        setups = [(m, "paper", None) if m == "paper" else (m, f"{m}-{b / 1e9:g}GBps", b)
                  for m in models for b in ([None] if m == "paper" else bws)]
        work, results, bench = Path(a.work), Path(a.results), Path(a.bench)
        for d in (work, results, bench):  # before the runs, not after the whole day
            d.mkdir(parents=True, exist_ok=True)
        workload = work / "uppmax.json"
        if not workload.exists():
            to_batsim(read_artifact(a.workload), workload, 9720)
        runs, rows = [], []
        for m, label, bw in setups:
            platform = work / f"platform_{label}.xml"
            platform.write_text(locality_xml(io_model=m, pfs_bandwidth=bw or 10e9))
            for p in policies:
                stem = work / f"{label}_{p}"
                if a.collect and not Path(f"{stem}_run.json").exists():
                    continue
                print(f"locality engine day: {label} {p}...", file=sys.stderr, flush=True)
                rec = dict(run_one(work, label, p, platform, workload), io_model=label)
                timing = json.loads(Path(f"{stem}_timing.json").read_text())
                rec.update({k: timing[k] for k in ("scheduler_cpu_s", "planning_cpu_s", "passes", "decisions")})
                runs.append(rec)
                row = json.loads(Path(f"{stem}_summary.json").read_text())
                row["io_model"] = label
                shutil.copyfile(f"{stem}_jobs.csv", results / f"engine_jobs_{label}_{p}.csv")
                row["same_as_loop"] = same_as_loop(Path(f"{stem}_jobs.csv"), results / f"jobs_{p}.csv") \
                    if m == "paper" else ""
                rows.append(row)
        engine_table(rows, results / "uppmax_engine")
        write_result({"benchmark": "locality_uppmax_engine_whole_day",
                      "command": command_line(ctx),
                      "runs": runs},
                     bench / "locality_engine_day.json")
    except (InputError, RunError, OSError, KeyError, ValueError) as e:
        raise click.ClickException(str(e)) from None
