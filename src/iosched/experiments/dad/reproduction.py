"""Reproduction of Li & Tatebe (IEEE Systems Journal 2017), Section V, and
its scale-out (``iosched repro dad --out results/dad``).

Runs on the embedded engine, on the paper's machine (4 nodes x 16 slots, 1
Gbit/s Ethernet, :func:`iosched.experiments.platforms.nusa_xml`):

* thput-gfpio and readgf (:func:`iosched.experiments.dad.workload.file_benchmark`: 20
  files of 1 GB, 5 per node, one task per file): per-task read throughput
  (bytes / execution time, MB/s) and the makespan, with Gantt charts (Fig. 6);
* the BLAST-like benchmark (:func:`iosched.experiments.dad.workload.blast_like`):
  total time under ``torque-fifo`` and ``dad`` over beta x delay (Figs. 7-9),
  plus ``dad-ds``, and its sensitivity to the Blastn file-set size;
* the scale-out: 64 and 512 nodes, KTH-SP2 arrivals compressed to a target
  load (:func:`iosched.experiments.dad.workload.trace_driven`).

Outputs (CSV, Markdown, PNG) go to the ``--out`` folder; ``table.md`` puts
every measured figure beside the paper's.  Every run's workload is checked
against its platform first (:func:`iosched.experiments.dad.workload.check_workload`).
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path

import click
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from iosched.analysis.jobs import load_jobs  # noqa: E402
from iosched.analysis.metrics import job_metrics  # noqa: E402
from iosched.api import PER_JOB  # noqa: E402
from iosched.batsim.jobs import local_id  # noqa: E402
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line  # noqa: E402
from iosched.experiments.common import calibrate  # noqa: E402
from iosched.experiments.dad.workload import (GB, MB, blast_like, check_workload, file_benchmark,  # noqa: E402
                                              trace_driven, write_workload)
from iosched.experiments.platforms import node_name, nusa_xml  # noqa: E402
from iosched.run.simulation import run_simulation  # noqa: E402
from iosched.sched.iojob import read_io  # noqa: E402

__all__ = ["PAPER", "run", "file_benchmarks", "local_sharing", "blast", "scale", "decision_stats",
           "delay_outcomes", "main", "repro_command"]

#: The paper's figures (Section V and VI).
PAPER = {"thput_torque_MBps": 780.11, "thput_dad_MBps": 2803.61, "thput_ratio": 3.59,
         "readgf_torque_s": 56.38, "readgf_dad_s": 5.63,
         "blast_torque_s": 266.9, "blast_dad_s": 178.0, "blast_reduction": 0.33}

SCHEDS = ("torque-fifo", "dad", "dad-ds")


def simulate_jobs(platform, workload, scheduler, options, out: Path, ready_timeout: float = 300.0):
    """:func:`iosched.api.simulate` with a longer scheduler start-up allowance
    (a loaded 2-core machine and a 40 MB platform): the jobs table with
    :data:`iosched.api.PER_JOB` (tau = 600 s)."""
    run_simulation(platform, workload, scheduler, out, options=options, ready_timeout=ready_timeout)
    jobs = load_jobs(out / "out_jobs.csv")
    per_job = job_metrics(jobs, 600.0)[list(PER_JOB)]
    return jobs.drop(columns=[c for c in PER_JOB if c in jobs.columns]).join(per_job)


def run(tmp: Path, platform: Path, workload: dict, scheduler: str, options=None, nodes=None) -> pd.DataFrame:
    """One simulation; returns its jobs with the dispatch facts.

    :param tmp: scratch folder (one sub-folder per run).
    :param platform: the platform XML.
    :param workload: the workload dict (checked, written to ``tmp``).
    :param scheduler: ``torque-fifo``, ``dad`` or ``dad-ds``.
    :param options: scheduler options (beta, delay...).
    :param nodes: the platform's node names (for the check).
    :returns: the jobs table of :func:`iosched.api.simulate` plus ``node``,
        ``local`` (bool: every file read from the task's own node) and
        ``remote_bytes``; ``df.attrs["decisions"]`` (list of dicts).
    :raises InputError: a workload that does not fit the platform.
    """
    check_workload(workload, nodes or [], "workload")
    key = f"{scheduler}-" + "-".join(f"{k}{v}" for k, v in sorted((options or {}).items()))
    d = tmp / key.replace("/", "_")
    d.mkdir(parents=True, exist_ok=True)
    wl = d / "w.json"
    write_workload(workload, wl)
    stats = d / "stats.json"
    df = simulate_jobs(platform, wl, scheduler, {**(options or {}), "stats": str(stats)}, d / "out")
    st = json.loads(stats.read_text())
    sizes = {j["id"]: {f.file: f.bytes for f in read_io(j, f"job {j['id']}").inputs} for j in workload["jobs"]}
    where = {}
    for _t, jid, node, sources in st["started"]:
        local = local_id(jid)
        rb = sum(sizes[local][f] for f, src in sources.items() if src != node)
        where[local] = (node, rb == 0, rb)
    df["node"] = [where.get(j, (None, False, math.nan))[0] for j in df.job_id]
    df["local"] = [where.get(j, (None, False, math.nan))[1] for j in df.job_id]
    df["remote_bytes"] = [where.get(j, (None, False, math.nan))[2] for j in df.job_id]
    df.attrs["decisions"] = st["decisions"]
    df.attrs["passes"] = st["passes"]
    return df


#: Effective network bandwidth per interface (bytes/s) that the paper's Torque
#: figures imply: readgf, 3 GB into each node in 56.38 s -> 53.2 MB/s;
#: thput-gfpio, 12 remote tasks at 3 per interface averaging 15.95 MB/s
#: (from 780.11 MB/s = (3 x 2803.61 + 5 x 1400 + 12 x r) / 20) -> 47.8 MB/s.
CALIBRATED_NIC_BW = 50e6


def _platform(tmp: Path, nodes: int, slots: int, nic_bw=None) -> tuple:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / f"nusa{nodes}x{slots}{'' if nic_bw is None else f'_nic{nic_bw:g}'}.xml"
    if not p.exists():
        p.write_text(nusa_xml(nodes, slots) if nic_bw is None else nusa_xml(nodes, slots, nic_bw=nic_bw))
    return p, [node_name(k, nodes) for k in range(nodes)]


def _gantt(ax, df, title, base=None):
    d = df.sort_values("job_id").reset_index(drop=True)
    for i, r in d.iterrows():
        ax.plot([r.starting_time, r.finish_time], [i, i], lw=3 if base is None else 2,
                color=("tab:blue" if r.local else "tab:red") if base is None else "0.75",
                solid_capstyle="butt")
    if base is not None:
        b = base.sort_values("job_id").reset_index(drop=True)
        for i, r in b.iterrows():
            ax.plot([r.starting_time, r.finish_time], [i + 0.25, i + 0.25], lw=2, color="k",
                    solid_capstyle="butt")
    ax.set_yticks(range(len(d)))
    ax.set_yticklabels(d.job_id, fontsize=6)
    ax.set_xlabel("time (s)")
    ax.set_title(title, fontsize=9)


def file_benchmarks(tmp: Path, out: Path) -> dict:
    """thput-gfpio and readgf on 4 nodes x 16 slots (Section V-A/B)."""
    plat, nodes = _platform(tmp, 4, 16)
    res, rows = {}, []
    for name in ("thput-gfpio", "readgf"):
        w = file_benchmark(20, GB, 4, name.replace("-", ""))
        for s in SCHEDS:
            df = run(tmp / name, plat, w, s, nodes=nodes)
            thr = GB / df.execution_time / MB
            res[(name, s)] = df
            for (_, r), t in zip(df.iterrows(), thr):
                rows.append({"benchmark": name, "scheduler": s, "job": r.job_id, "node": r.node,
                             "local": r.local, "start_s": r.starting_time, "end_s": r.finish_time,
                             "throughput_MBps": round(t, 3)})
    pd.DataFrame(rows).to_csv(out / "file_benchmarks.csv", index=False)
    # the same with the network bandwidth the paper's Torque figures imply
    cplat, _ = _platform(tmp / "calibrated", 4, 16, CALIBRATED_NIC_BW)
    for name in ("thput-gfpio", "readgf"):
        w = file_benchmark(20, GB, 4, name.replace("-", ""))
        for s in ("torque-fifo", "dad"):
            res[("calibrated", name, s)] = run(tmp / "calibrated" / name, cplat, w, s, nodes=nodes)
    # Fig. 5: per-task throughput
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, s in zip(axes, ("torque-fifo", "dad")):
        df = res[("thput-gfpio", s)].sort_values("job_id")
        thr = GB / df.execution_time / MB
        ax.bar(range(len(df)), thr, color=["tab:blue" if x else "tab:red" for x in df.local])
        ax.set_title(f"thput-gfpio, {s}: mean {thr.mean():.1f} MB/s", fontsize=9)
        ax.set_xlabel("task")
    axes[0].set_ylabel("read throughput (MB/s)")
    fig.tight_layout()
    fig.savefig(out / "fig5_thput.png", dpi=110)
    plt.close(fig)
    # Fig. 6: readgf Gantt charts
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, s in zip(axes, ("torque-fifo", "dad")):
        df = res[("readgf", s)]
        _gantt(ax, df, f"readgf, {s}: makespan {df.finish_time.max():.2f} s (blue local, red remote)")
    fig.tight_layout()
    fig.savefig(out / "fig6_readgf_gantt.png", dpi=110)
    plt.close(fig)
    return {k: v for k, v in res.items()}


def local_sharing(tmp: Path, out: Path) -> list:
    """thput-gfpio with a SHARED local link (a device shared by a node's
    readers) instead of FATPIPE, at 2803.61 MB/s and 5 x that: mean per-task
    throughput, and that of the local tasks (``local_sharing.csv``)."""
    rows = []
    nodes = [node_name(k, 4) for k in range(4)]
    for bw in (2803.61 * MB, 5 * 2803.61 * MB):
        d = tmp / f"shared{bw:g}"
        d.mkdir(parents=True, exist_ok=True)
        plat = d / "p.xml"
        plat.write_text(nusa_xml(4, 16, local_bw=bw, local_sharing="SHARED"))
        for s in ("torque-fifo", "dad"):
            df = run(d, plat, file_benchmark(20, GB, 4, "thputgfpio"), s, nodes=nodes)
            thr = GB / df.execution_time / MB
            rows.append({"local_link": "SHARED", "local_bw_MBps": round(bw / MB, 2), "scheduler": s,
                         "mean_MBps": round(thr.mean(), 2), "local_tasks": int(df.local.sum()),
                         "local_task_mean_MBps": round(thr[df.local].mean(), 2),
                         "remote_task_mean_MBps": round(thr[~df.local].mean(), 2) if (~df.local).any() else None})
    pd.DataFrame(rows).to_csv(out / "local_sharing.csv", index=False)
    return rows


BETAS, DELAYS = (0.0, 0.8, 1.0), (0, 2, 4)


def blast(tmp: Path, out: Path) -> dict:
    """BLAST-like on 4 nodes x 16 slots: Torque, the beta x delay sweep,
    DS alone, and the Blastn set-size sensitivity (Section V-C)."""
    plat, nodes = _platform(tmp, 4, 16)
    w = blast_like(set_bytes_n=8 * GB)
    res, rows = {}, []

    def record(label, s, opts, df):
        res[label] = df
        rows.append({"scheduler": s, "beta": opts.get("beta", ""), "delay": opts.get("delay", ""),
                     "total_time_s": round(df.finish_time.max(), 3),
                     "local_tasks": int(df.local.sum()), "tasks": len(df),
                     "remote_GB": round(df.remote_bytes.sum() / GB, 3),
                     "delayed_decisions": sum(d["kind"] == "delayed" for d in df.attrs["decisions"])})

    record("torque", "torque-fifo", {}, run(tmp / "blast", plat, w, "torque-fifo", nodes=nodes))
    for b in BETAS:
        for dl in DELAYS:
            opts = {"beta": b, "delay": dl}
            record((b, dl), "dad", opts, run(tmp / "blast", plat, w, "dad", opts, nodes=nodes))
    record("ds", "dad-ds", {"delay": 2}, run(tmp / "blast", plat, w, "dad-ds", {"delay": 2}, nodes=nodes))
    pd.DataFrame(rows).to_csv(out / "blast_sweep.csv", index=False)
    # sensitivity to the Blastn file set (our assumption)
    sens = []
    for gb in (2, 4, 8, 12):
        ws = blast_like(set_bytes_n=gb * GB)
        t = run(tmp / f"sens{gb}", plat, ws, "torque-fifo", nodes=nodes).finish_time.max()
        d = run(tmp / f"sens{gb}", plat, ws, "dad", nodes=nodes).finish_time.max()
        sens.append({"blastn_set_GB": gb, "torque_s": round(t, 3), "dad_s": round(d, 3),
                     "reduction": round(1 - d / t, 4)})
    pd.DataFrame(sens).to_csv(out / "blast_sensitivity.csv", index=False)
    # Fig. 7: total times
    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels = ["torque"] + [f"b{b:g} d{dl}" for b in BETAS for dl in DELAYS] + ["ds d2"]
    vals = [r["total_time_s"] for r in rows]
    ax.bar(range(len(vals)), vals, color=["0.5"] + ["k" if (b, dl) == (0.8, 2) else "0.8"
                                                    for b in BETAS for dl in DELAYS] + ["tab:orange"])
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, rotation=60, fontsize=7)
    ax.set_ylabel("total time (s)")
    ax.set_title("BLAST-like: Torque FIFO, DAD (beta, delay), DS alone", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "fig7_blast.png", dpi=110)
    plt.close(fig)
    # Fig. 8: Gantt, Torque vs best case
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    _gantt(axes[0], res["torque"], f"torque-fifo: {res['torque'].finish_time.max():.1f} s")
    _gantt(axes[1], res[(0.8, 2)], f"dad beta 0.8 delay 2: {res[(0.8, 2)].finish_time.max():.1f} s")
    fig.tight_layout()
    fig.savefig(out / "fig8_blast_gantt.png", dpi=110)
    plt.close(fig)
    # Fig. 9: overlapped Gantt charts against the best case (black)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for ax, (b, dl) in zip(axes.flat, ((0.0, 2), (1.0, 2), (0.8, 0), (0.8, 4))):
        _gantt(ax, res[(b, dl)], f"beta {b:g} delay {dl} (grey) vs beta 0.8 delay 2 (black): "
               f"{res[(b, dl)].finish_time.max():.1f} s", base=res[(0.8, 2)])
    fig.tight_layout()
    fig.savefig(out / "fig9_blast_overlap.png", dpi=110)
    plt.close(fig)
    return res


def decision_stats(decisions: list) -> dict:
    """Wall-clock time per dispatch decision (from the ``stats`` file):
    ``decisions`` (count), ``decision_us`` (mean, median, p99, max in us)
    and ``kinds`` (count per decision kind)."""
    us = sorted(d["seconds"] * 1e6 for d in decisions)
    kinds: dict = {}
    for d in decisions:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    pick = (lambda q: round(us[min(len(us) - 1, int(q * len(us)))], 2)) if us else (lambda q: None)
    return {"decisions": len(us),
            "decision_us": {"mean": round(sum(us) / len(us), 2) if us else None,
                            "median": pick(0.5), "p99": pick(0.99), "max": round(us[-1], 2) if us else None},
            "kinds": dict(sorted(kinds.items()))}


def scale(tmp: Path, out: Path, swf: Path, sizes=((64, 2000), (512, 4000)), load: float = 0.9,
          bench: Path | None = None) -> list:
    """Torque vs DAD vs DS on 64 and 512 nodes x 16 slots with KTH-SP2 arrivals.

    Rows go to ``out/scale.csv``; with ``bench`` (a JSON path), the largest
    machine's runs are also written there as a benchmark record: wall time
    (s) of each simulation and the scheduler's time per decision
    (:func:`decision_stats`), with a machine calibration.
    """
    rows, records = [], {}
    for nodes_n, first in sizes:
        plat, nodes = _platform(tmp, nodes_n, 16)
        w = trace_driven(swf, nodes_n, 16, first=first, seed=0, load=load)
        total_bytes = sum(f.bytes for j in w["jobs"] for f in read_io(j, f"job {j['id']}").inputs)
        for s in SCHEDS:
            t0 = time.perf_counter()
            df = run(tmp / f"scale{nodes_n}", plat, w, s, nodes=nodes)
            wall = time.perf_counter() - t0
            if nodes_n == max(n for n, _ in sizes):
                records[s] = {"wall_s": round(wall, 3), "passes": df.attrs["passes"],
                              **decision_stats(df.attrs["decisions"]),
                              "makespan_s": round(float(df.finish_time.max()), 3),
                              "completed": int((df.final_state == "COMPLETED_SUCCESSFULLY").sum())}
            ok = df[df.final_state == "COMPLETED_SUCCESSFULLY"]
            dec = [d for d in df.attrs["decisions"]]
            rows.append({"nodes": nodes_n, "tasks": len(df), "scheduler": s,
                         "completed": len(ok),
                         "makespan_s": round(float(df.finish_time.max()), 3),
                         "mean_wait_s": round(float(ok.waiting_time.mean()), 3),
                         "mean_turnaround_s": round(float(ok.turnaround.mean()), 3),
                         "local_tasks": int(ok.local.sum()),
                         "remote_TB": round(ok.remote_bytes.sum() / 1e12, 4),
                         "local_bytes_fraction": round(1 - ok.remote_bytes.sum() / total_bytes, 4),
                         **delay_outcomes(dec),
                         "decisions": len(dec),
                         "mean_decision_us": round(1e6 * sum(d["seconds"] for d in dec) / max(1, len(dec)), 2)})
            _merge_scale(out / "scale.csv", rows)
    if bench is not None and records:
        n, first = max(sizes)
        res = {"calibration": calibrate(), "nodes": n, "slots": 16, "jobs": first, "swf": Path(swf).name,
               "load": load, "seed": 0, "runs": records}
        Path(bench).write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    return rows


def delay_outcomes(decisions: list) -> dict:
    """What delay scheduling achieved, from a run's decisions (the ``stats``
    file): ``delayed_tasks`` (tasks delayed at least once), how many of them
    then started ``delayed_then_local``, and the mean and max time (s) from
    a task's first delay to its start."""
    first, final = {}, {}
    for d in decisions:
        if d["kind"] == "delayed":
            first.setdefault(d["job"], d["time"])
        elif d["kind"] in ("local", "remote"):
            final[d["job"]] = (d["kind"], d["time"])
    spans = [final[j][1] - t for j, t in first.items() if j in final]
    return {"delayed_tasks": len(first),
            "delayed_then_local": sum(1 for j in first if final.get(j, ("",))[0] == "local"),
            "mean_delay_s": round(sum(spans) / len(spans), 3) if spans else 0.0,
            "max_delay_s": round(max(spans), 3) if spans else 0.0}


def _merge_scale(path: Path, rows: list) -> None:
    """Write ``rows`` into ``scale.csv``, keeping the rows of other machine sizes."""
    new = pd.DataFrame(rows)
    if path.exists():
        old = pd.read_csv(path)
        new = pd.concat([old[~old.nodes.isin(new.nodes)], new]).sort_values(["nodes"], kind="stable")
    new.to_csv(path, index=False)


def _fmt(x, nd=2):
    return f"{x:.{nd}f}"


def write_table(out: Path, fb: dict, bl: dict) -> None:
    """``table.md`` / ``table.csv``: the paper's figures beside ours."""
    thr = {s: (GB / fb[("thput-gfpio", s)].execution_time / MB).mean() for s in ("torque-fifo", "dad")}
    mk = {s: fb[("readgf", s)].finish_time.max() for s in ("torque-fifo", "dad")}
    bt, bd = bl["torque"].finish_time.max(), bl[(0.8, 2)].finish_time.max()
    rows = [
        ("thput-gfpio mean per-task read throughput, Torque (MB/s)", PAPER["thput_torque_MBps"], thr["torque-fifo"]),
        ("thput-gfpio mean per-task read throughput, DAD (MB/s)", PAPER["thput_dad_MBps"], thr["dad"]),
        ("thput-gfpio throughput ratio DAD / Torque", PAPER["thput_ratio"], thr["dad"] / thr["torque-fifo"]),
        ("readgf makespan, Torque (s)", PAPER["readgf_torque_s"], mk["torque-fifo"]),
        ("readgf makespan, DAD (s)", PAPER["readgf_dad_s"], mk["dad"]),
        ("BLAST total time, Torque (s)", PAPER["blast_torque_s"], bt),
        ("BLAST total time, DAD beta 0.8 delay 2 (s)", PAPER["blast_dad_s"], bd),
        ("BLAST time reduction", PAPER["blast_reduction"], 1 - bd / bt),
    ]
    cthr = {s: (GB / fb[("calibrated", "thput-gfpio", s)].execution_time / MB).mean() for s in ("torque-fifo", "dad")}
    cmk = {s: fb[("calibrated", "readgf", s)].finish_time.max() for s in ("torque-fifo", "dad")}
    cal = [cthr["torque-fifo"], cthr["dad"], cthr["dad"] / cthr["torque-fifo"], cmk["torque-fifo"], cmk["dad"]]
    cal += [math.nan] * (len(rows) - len(cal))
    rows = [(a, b, c, d) for (a, b, c), d in zip(rows, cal)]
    pd.DataFrame(rows, columns=["figure", "paper", "ours", "ours_nic_50MBps"]).to_csv(out / "table.csv", index=False)
    lines = ["| figure | paper | ours (1 Gbit/s NIC, 125 MB/s) | ours (NIC 50 MB/s, calibrated) |",
             "|---|---:|---:|---:|"]
    lines += [f"| {a} | {_fmt(b)} | {_fmt(c)} | {'-' if math.isnan(d) else _fmt(d)} |" for a, b, c, d in rows]
    (out / "table.md").write_text("\n".join(lines) + "\n")


def main(out, swf=None, scale_sizes=((64, 2000), (512, 4000)), keep=None, bench=None) -> None:
    """Run everything into ``out`` (Path); the scale-out only if ``swf`` is
    given (``bench``: see :func:`scale`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="iosched-dad-", dir=keep) as t:
        tmp = Path(t)
        fb = file_benchmarks(tmp, out)
        local_sharing(tmp, out)
        bl = blast(tmp, out)
        write_table(out, fb, bl)
        if swf is not None:
            scale(tmp, out, Path(swf), scale_sizes, bench=bench)


# --------------------------------------------------------------------------
# command line


@click.command(name="dad", cls=OneLineErrorCommand)
@click.option("--out", type=click.Path(file_okay=False), default="results/dad", show_default=True)
@click.option("--swf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="SWF trace for the 64/512-node scale-out")
@input_errors_one_line
def repro_command(out, swf):
    """Run the reproduction (Section V) and, with --swf, the scale-out."""
    main(out, swf)
