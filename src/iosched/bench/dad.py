"""``python -m iosched.bench.dad``: speed of the data-aware dispatchers.

A benchmark, not a test (it asserts nothing; its figures depend on the
machine): the 512-node x 16-slot NUSA platform
(:func:`iosched.dad.platform.nusa_xml`) with the trace-driven workload of
:func:`iosched.dad.workload.trace_driven` (the first ``--jobs`` KTH-SP2 jobs,
default 5000, arrivals compressed to load 0.9, seed 0), for each policy
(``torque-fifo``, ``dad``, ``dad-ds``; ``--policy`` to pick one):

* the wall time (s) of the whole simulation (embedded engine + scheduler);
* the scheduler's time per dispatch decision (the ``stats`` option records
  the wall-clock time of every call of Algorithm 1 / the Torque choice):
  count, mean, median, p99 and max (us), and the decisions per kind (local,
  remote, delayed, no-free-node).

Written to ``results/bench/dad_512.json`` with a machine calibration
(:func:`iosched.bench.common.calibrate`).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import click

from iosched.bench.common import calibrate, write_result
from iosched.clicommon import OneLineErrorCommand
from iosched.dad.platform import nusa_xml
from iosched.dad.reproduce import simulate_jobs
from iosched.dad.workload import trace_driven, write_workload
from iosched.sched.registry import REPO_ROOT
from iosched.workloads.default_swf import find_default_swf


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def measure(policy: str, platform: Path, workload: Path, tmp: Path) -> dict:
    """One run: wall time and per-decision statistics (see module doc)."""
    stats = tmp / f"{policy}_stats.json"
    t0 = time.perf_counter()
    df = simulate_jobs(platform, workload, policy, {"stats": str(stats)}, tmp / policy)
    wall = time.perf_counter() - t0
    st = json.loads(stats.read_text())
    sec = [d["seconds"] * 1e6 for d in st["decisions"]]
    kinds: dict = {}
    for d in st["decisions"]:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    return {"wall_s": round(wall, 3), "passes": st["passes"], "decisions": len(sec),
            "decision_us": {"mean": round(statistics.fmean(sec), 2) if sec else None,
                            "median": round(statistics.median(sec), 2) if sec else None,
                            "p99": round(_pct(sec, 0.99), 2) if sec else None,
                            "max": round(max(sec), 2) if sec else None},
            "kinds": kinds, "makespan_s": round(float(df.finish_time.max()), 3),
            "completed": int((df.final_state == "COMPLETED_SUCCESSFULLY").sum())}


@click.command(cls=OneLineErrorCommand)
@click.option("--jobs", type=int, default=5000, show_default=True)
@click.option("--nodes", type=int, default=512, show_default=True)
@click.option("--policy", type=click.Choice(["torque-fifo", "dad", "dad-ds", "all"]), default="all",
              show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="result file (default results/bench/dad_<nodes>.json)")
def main(jobs, nodes, policy, out):
    """Time the data-aware dispatchers on a large NUSA machine."""
    swf = find_default_swf()
    res = {"calibration": calibrate(), "nodes": nodes, "slots": 16, "jobs": jobs, "swf": swf.name,
           "load": 0.9, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="iosched-bench-dad-") as t:
        tmp = Path(t)
        plat, wl = tmp / "p.xml", tmp / "w.json"
        plat.write_text(nusa_xml(nodes, 16))
        write_workload(trace_driven(swf, nodes, 16, first=jobs, seed=0, load=0.9), wl)
        for p in (("torque-fifo", "dad", "dad-ds") if policy == "all" else (policy,)):
            res["runs"][p] = measure(p, plat, wl, tmp)
    path = Path(out) if out else REPO_ROOT / "results" / "bench" / f"dad_{nodes}.json"
    write_result(res, path)


if __name__ == "__main__":
    main()
