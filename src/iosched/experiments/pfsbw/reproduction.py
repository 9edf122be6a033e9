"""Reproduction of Goponenko et al. (PMBS 2024), Figs. 3-6: makespans and
throughput / node-allocation timelines of the default Slurm backfill, the
I/O-aware and the workload-adaptive schedulers on Workloads 1 and 2.

``iosched repro pfsbw results/pfsbw`` (about 10 minutes on
one core) writes to the output folder:

* ``curve.csv`` / ``curve.png`` -- total throughput against 1..15
  concurrent write x8 jobs on the platform (the paper's Fig. 4);
* ``pretrain_<workload>.json`` -- each job type run alone (pre-training);
* ``makespans.csv`` / ``makespans.md`` -- one row per (workload, scheduler
  configuration): makespan (s), change against the default scheduler (%),
  and the paper's figure where it gives one;
* ``<workload>.png`` -- per configuration, the file-system throughput (sum
  over running write jobs of bytes / runtime: each job's *average*
  throughput, as a monitor averaging over the job would see it) and the
  nodes busy with write and sleep jobs over time (Figs. 3 and 5).

Workloads: ``w1``/``w2`` with the paper's 600 s sleep jobs, and ``w1-s60``
/ ``w2-s60`` with 60 s sleep jobs (see ``docs/pfsbw.md`` for why). With
``--repeats N --noise x``, Workload 2 is also run ``N`` times with seeded
transfer-efficiency noise (seeds 1..N) with the configurations of the
paper's Fig. 6, and the medians are reported. With ``--overload SPEC``
(e.g. :data:`iosched.experiments.pfsbw.workload.OVERLOAD`), every run
(curve and pre-training included) is on a file system whose capacity drops
under overload (embedded engine only, ``--link-overload``); without it, on
the linear platform of the earlier results.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from iosched.analysis.plots import new_figure, save_png
from iosched.api import simulate
from iosched.errors import InputError
from iosched.experiments.pfsbw import workload as pw
from iosched.paths import PLATFORMS_DIR, scratch
from iosched.schedulers.pfsbw import ESTIMATES
from iosched.workloads.writer import write_workload
from iosched.sched.iojob import read_io

__all__ = ["CONFIGS", "PAPER", "run_all", "timeline"]

GIB = pw.GIB

#: label -> (registered scheduler name, options without pretrain, pre-trained?)
CONFIGS = {
    "default": ("slurm-backfill", {}, False),
    "io-aware 20 pre": ("io-aware", {"limit": 20 * GIB}, True),
    "io-aware 15 pre": ("io-aware", {"limit": 15 * GIB}, True),
    "adaptive 20 pre": ("adaptive", {"limit": 20 * GIB}, True),
    "adaptive 15 pre": ("adaptive", {"limit": 15 * GIB}, True),
    "adaptive 20 untrained": ("adaptive", {"limit": 20 * GIB}, False),
    "adaptive 15 untrained": ("adaptive", {"limit": 15 * GIB}, False),
    "io-aware 20 untrained": ("io-aware", {"limit": 20 * GIB}, False),
    "adaptive-naive 20 pre": ("adaptive-naive", {"limit": 20 * GIB}, True),
}

#: The paper's makespan changes against the default (%), (workload, label) -> text.
PAPER = {
    ("w1", "io-aware 20 pre"): "-10 %", ("w1", "io-aware 15 pre"): "-20 %",
    ("w1", "adaptive 20 pre"): "-26 %",
    ("w1", "adaptive 20 untrained"): "-25 % (5.5 % better than io-aware 15)",
    ("w2", "io-aware 20 pre"): "-4 % (median)", ("w2", "io-aware 15 pre"): "-7 % (median)",
    ("w2", "adaptive 20 pre"): "-12 % (median; 5 % better than the best io-aware)",
    ("w2", "adaptive 15 pre"): "3 % better than io-aware 15 (median)",
}

#: The figures' panels: the configurations of the paper's Figs. 3 and 5.
FIGURE = {"w1": ("default", "io-aware 20 pre", "io-aware 15 pre", "adaptive 20 pre",
                 "adaptive 20 untrained"),
          "w2": ("default", "io-aware 20 pre", "io-aware 15 pre", "adaptive 20 pre",
                 "adaptive 15 pre")}

WORKLOADS = {"w1": (pw.workload1, pw.SLEEP), "w2": (pw.workload2, pw.SLEEP),
             "w1-s60": (pw.workload1, 60.0), "w2-s60": (pw.workload2, 60.0)}


def timeline(jobs: pd.DataFrame, profiles_bytes: dict) -> dict:
    """Step functions of a run: ``{"t": times, "throughput": bytes/s,
    "write": nodes, "sleep": nodes}`` (numpy arrays; value on ``[t_i,
    t_i+1)``). ``profiles_bytes`` maps a job id to its bytes written."""
    ev = []
    for row in jobs.itertuples():
        b = profiles_bytes[str(row.job_id)]
        start, end = float(row.starting_time), float(row.finish_time)
        rate = b / (end - start) if end > start else 0.0
        kind = 1.0 if b > 0 else 0.0
        ev.append((start, rate, kind, 1.0 - kind))
        ev.append((end, -rate, -kind, kind - 1.0))
    ev.sort(key=lambda e: e[0])
    a = np.array(ev)
    t, idx = np.unique(a[:, 0], return_index=True)
    sums = np.cumsum(a[:, 1:], axis=0)
    last = np.r_[idx[1:] - 1, len(a) - 1]
    vals = sums[last]
    return {"t": t, "throughput": np.maximum(vals[:, 0], 0.0), "write": np.rint(vals[:, 1]),
            "sleep": np.rint(vals[:, 2])}


def _plot(name: str, runs: dict, out: Path) -> Path:
    labels = [lab for lab in FIGURE[name.split("-")[0]] if lab in runs]
    fig = new_figure(11, 2.6 * len(labels))
    axes = fig.subplots(2 * len(labels), 1, sharex=True,
                        gridspec_kw={"height_ratios": [1.2, 1] * len(labels)})
    for k, lab in enumerate(labels):
        tl = runs[lab]
        ax1, ax2 = axes[2 * k], axes[2 * k + 1]
        ax1.step(tl["t"], tl["throughput"] / GIB, where="post", lw=0.7, color="tab:blue")
        ax1.set_ylabel("GiB/s")
        ax1.set_ylim(0, 22)
        ax1.set_title(f"{name}: {lab}", fontsize=9, loc="left")
        ax2.stackplot(np.repeat(tl["t"], 2)[1:], np.repeat(tl["write"], 2)[:-1],
                      np.repeat(tl["sleep"], 2)[:-1], labels=["write", "sleep"],
                      colors=["tab:orange", "tab:gray"], step=None)
        ax2.set_ylim(0, 15.5)
        ax2.set_ylabel("nodes")
        if k == 0:
            ax2.legend(loc="upper right", fontsize=7, ncols=2)
    axes[-1].set_xlabel("time (s)")
    return save_png(fig, out / f"{name}.png")


def _curve(platform: Path, out: Path, tmp: Path, engine_args=()) -> None:
    rows = pw.measure_curve(platform, tmp, engine_args=engine_args)
    df = pd.DataFrame(rows, columns=["concurrent_jobs", "total_bytes_per_s", "job_runtime_s"])
    df["total_GiB_per_s"] = df["total_bytes_per_s"] / GIB
    df[["concurrent_jobs", "total_GiB_per_s", "job_runtime_s"]].to_csv(out / "curve.csv", index=False,
                                                                      float_format="%.4f")
    fig = new_figure(5, 3.2)
    ax = fig.subplots()
    ax.plot([0] + list(df["concurrent_jobs"]), [0] + list(df["total_GiB_per_s"]), "o-")
    ax.set_xlabel("concurrent write x8 jobs")
    ax.set_ylabel("total throughput (GiB/s)")
    ax.set_ylim(0, 22)
    ax.grid(alpha=0.3)
    save_png(fig, out / "curve.png")


def run_all(out: Path, platform: Path, tmp: Path, names=tuple(WORKLOADS), configs=tuple(CONFIGS),
            repeats: int = 0, noise: float = 0.0, log=print, engine_args=(),
            estimates: str = "exact") -> pd.DataFrame:
    """Run every configuration on every workload (engine arguments
    ``engine_args``, e.g. :func:`iosched.experiments.pfsbw.workload.overload_args`;
    the io-aware and adaptive schedulers' option ``estimates``); write the
    outputs listed in the module documentation and return the makespan
    table."""
    out.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        make, sleep = WORKLOADS[name]
        cases = [(0, 0.0)] + ([(seed, noise) for seed in range(1, repeats + 1)]
                              if name.startswith("w2") and repeats else [])
        runs = {}
        for seed, nz in cases:
            wl = make(sleep=sleep, noise=nz, seed=seed)
            wpath = tmp / f"{name}_{seed}.json"
            write_workload(wl, wpath)
            nbytes = {j["id"]: read_io(j, f"job {j['id']}").writes.bytes for j in wl["jobs"]}
            pre_path = out / f"pretrain_{name}.json"
            if seed == 0:
                pre = pw.pretrain_samples(platform, wl, tmp / "pre", engine_args)
                pre_path.write_text(json.dumps(pre, indent=1, sort_keys=True) + "\n")
            for label in configs:
                if seed and label not in FIGURE["w2"]:
                    continue     # the noisy repetitions: the paper's Fig. 6 configurations only
                sched, opts, pretrained = CONFIGS[label]
                opts = dict(opts)
                if pretrained and sched != "slurm-backfill":
                    opts["pretrain"] = str(pre_path)
                if estimates != "exact" and sched != "slurm-backfill":
                    opts["estimates"] = estimates
                t0 = time.perf_counter()
                jobs = simulate(platform, wpath, sched, opts, engine_args=engine_args)
                wall = time.perf_counter() - t0
                ok = int((jobs["final_state"] == "COMPLETED_SUCCESSFULLY").sum())
                mk = float(jobs["finish_time"].max())
                rows.append({"workload": name, "seed": seed, "noise": nz, "config": label,
                             "makespan_s": mk, "completed": ok, "jobs": len(jobs), "wall_s": wall})
                log(f"{name} seed={seed} {label}: makespan {mk:.1f} s ({ok}/{len(jobs)} ok, {wall:.1f} s)")
                if seed == 0:
                    runs[label] = timeline(jobs, nbytes)
        _plot(name, runs, out)
    df = pd.DataFrame(rows)
    df.to_csv(out / "runs.csv", index=False, float_format="%.3f")
    table = _table(df)
    table.to_csv(out / "makespans.csv", index=False, float_format="%.1f")
    (out / "makespans.md").write_text(_markdown(table))
    return table


def _table(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name, g in df.groupby("workload", sort=False):
        det = g[g["seed"] == 0].set_index("config")["makespan_s"]
        noisy = g[g["seed"] > 0]
        med = noisy.groupby("config")["makespan_s"].median() if len(noisy) else None
        for label in det.index:
            r = {"workload": name, "config": label, "makespan_s": det[label],
                 "vs_default_pct": 100 * (det[label] / det["default"] - 1)}
            if med is not None and label in med:
                r["median_noisy_s"] = med[label]
                r["median_vs_default_pct"] = 100 * (med[label] / med["default"] - 1)
            r["paper"] = PAPER.get((name, label), "")
            rows.append(r)
    return pd.DataFrame(rows)


def _markdown(t: pd.DataFrame) -> str:
    cols = list(t.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in t.itertuples(index=False):
        cells = []
        for c, v in zip(cols, r):
            cells.append(f"{v:.1f}" if isinstance(v, float) and not np.isnan(v) else
                         ("" if isinstance(v, float) else str(v)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@click.command(name="pfsbw")
@click.argument("out", type=click.Path(file_okay=False), default="results/pfsbw")
@click.option("-p", "--platform", "platform", default=str(PLATFORMS_DIR / "pfsbw15.xml"), show_default=True,
              type=click.Path(exists=True, dir_okay=False))
@click.option("--tmp", default=str(scratch("pfsbw-reproduce")), show_default=True)
@click.option("--workloads", default=",".join(WORKLOADS), show_default=True)
@click.option("--repeats", type=int, default=0, show_default=True,
              help="noisy repetitions of Workload 2 (medians)")
@click.option("--noise", type=float, default=0.2, show_default=True)
@click.option("--no-curve", is_flag=True)
@click.option("--overload", default="", metavar="SPEC",
              help="a file system whose capacity drops under overload (embedded engine only): "
                   f"{', '.join(pw.OVERLOADS)} or LINK:BW@N,...; default: linear sharing")
@click.option("--estimates", type=click.Choice(sorted(ESTIMATES)), default="exact", show_default=True,
              help="the io-aware and adaptive schedulers' estimates: exact (the paper's text) or artifact "
                   "(rounded as py-sim-serv reports them)")
def repro_command(out, platform, tmp, workloads, repeats, noise, no_curve, overload, estimates):
    """Run the reproduction and write its tables and figures to OUT."""
    try:
        engine_args = pw.overload_args(overload)
    except InputError as exc:
        raise click.ClickException(f"--overload: {exc}") from None
    out, tmp = Path(out), Path(tmp)
    out.mkdir(parents=True, exist_ok=True)
    names = [w for w in workloads.split(",") if w]
    bad = [w for w in names if w not in WORKLOADS]
    if bad:
        raise click.ClickException(f"--workloads: unknown {bad}; expected {', '.join(WORKLOADS)}")
    if not no_curve:
        _curve(Path(platform), out, tmp / "curve", engine_args)
    table = run_all(out, Path(platform), tmp, names, repeats=repeats, noise=noise,
                    engine_args=engine_args, estimates=estimates)
    click.echo(_markdown(table))
