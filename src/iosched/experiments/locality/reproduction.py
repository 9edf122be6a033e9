"""Reproduce the locality paper's comparison on one day (artifact loop, ``paper`` I/O model).

``iosched repro locality loop --workload W --cluster C --out DIR
[--policies fcfs,lea,...]`` runs :func:`iosched.experiments.locality.replay.replay`
for each policy and writes ``DIR/uppmax_paper.{csv,md}`` (one row a policy,
:data:`iosched.locality.metrics.COLUMNS`), ``DIR/jobs_<policy>.csv`` and
``DIR/<name>_timing.json`` (wall time, passes, decisions per policy).
Rows are written as policies finish; with ``--merge`` they replace or add
their policies' rows in an existing table instead (:func:`merge_rows`).
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import click

from iosched.errors import InputError
from iosched.experiments.locality.figures import UsageTrace
from iosched.experiments.locality.replay import replay
from iosched.experiments.locality.workload import read_artifact, read_cluster
from iosched.locality.cluster import Cluster
from iosched.locality.metrics import summarize, write_jobs, write_summary
from iosched.locality.planner import POLICIES, Planner
from iosched.paths import shared_data

#: the Uppmax day and cluster files of the artifact (in the shared data folder)
DATA = shared_data("uppmax")


def run_policy(workload, cluster_file, policy, trace=None, **opts) -> tuple:
    """One policy on a day: ``(summary row, result dict of replay, seconds)``
    (``trace``: see :func:`~iosched.experiments.locality.replay.replay`)."""
    nodes = read_cluster(cluster_file)
    m = nodes[0]["cores"]
    jobs = read_artifact(workload, m)
    c = Cluster(len(nodes), m, nodes[0]["bandwidth"], nodes[0]["memory"],
                cache_rule=opts.pop("cache_rule", "artifact"))
    p = Planner(c, policy, **opts)
    t0 = time.perf_counter()
    res = replay(jobs, p, trace=trace)
    sec = time.perf_counter() - t0
    return summarize(res["jobs"], policy, float(nodes[0]["bandwidth"])), res, sec


def merge_rows(path, rows: list) -> list:
    """Rows of the summary table at ``path`` (without suffix; CSV read back
    as strings) with ``rows`` replacing or adding their policies, in
    :data:`~iosched.locality.planner.POLICIES` order; writes the CSV and
    Markdown tables and returns the merged rows."""
    path = Path(path)
    old = {}
    if path.with_suffix(".csv").exists():
        with open(path.with_suffix(".csv"), newline="") as f:
            old = {r["policy"]: r for r in csv.DictReader(f)}
    old.update({r["policy"]: r for r in rows})
    merged = sorted(old.values(), key=lambda r: POLICIES.index(r["policy"]) if r["policy"] in POLICIES else 99)
    write_summary(merged, path)
    return merged


@click.command(name="loop")
@click.option("--workload", default=str(DATA / "2022-09-10_V10000_anonymous.txt"))
@click.option("--cluster", default=str(DATA / "cluster_450_128_32_256_4_1024.txt"))
@click.option("--policies", default=",".join(POLICIES))
@click.option("--out", default="results/locality")
@click.option("--name", default="uppmax_paper")
@click.option("--usage", default="", help="policies whose cluster usage is traced (Fig. 3)")
@click.option("--merge", is_flag=True, help="merge the rows into an existing table")
def repro_command(workload, cluster, policies, out, name, usage, merge):
    """Reproduce the locality paper's comparison on one day (artifact loop, paper I/O model)."""
    try:
        pols = [p.strip() for p in policies.split(",") if p.strip()]
        for p in pols:
            if p not in POLICIES:
                raise InputError(f"--policies: {p!r} is unknown; expected some of {', '.join(POLICIES)}")
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        rows, timing = [], {}
        traced = {p.strip() for p in usage.split(",") if p.strip()}
        for p in pols:
            tr = UsageTrace() if p in traced else None
            row, res, sec = run_policy(workload, cluster, p, trace=tr)
            if tr is not None:
                tr.write(out / f"usage_{p}.csv")
                ev = sorted(j.subtime for j in res["jobs"] if j.role == 1)
                (out / "evaluated_window.json").write_text(json.dumps([ev[0], ev[-1]]))
            rows.append(row)
            write_jobs(res["jobs"], out / f"jobs_{p}.csv")
            timing[p] = {"wall_s": round(sec, 1), "passes": res["passes"], "decisions": res["decisions"],
                         "planning_s": round(res["seconds"], 1)}
            if merge:
                merge_rows(out / name, [row])
            else:
                write_summary(rows, out / name)
            tpath = out / f"{name}_timing.json"
            if merge and tpath.exists():
                timing = {**json.loads(tpath.read_text()), p: timing[p]}
            tpath.write_text(json.dumps(timing, indent=1, sort_keys=True))
            print(p, {k: row[k] for k in ("mean_stretch", "reuses")}, timing[p], flush=True)
    except InputError as e:
        raise click.ClickException(str(e)) from None
