"""Tables and figures of the list vs pack reproduction (Jeannot, Pallez &
Vidal, IJHPCA 2023, Figs. 4-9) from finished campaign folders.

    iosched repro listpack OUT_DIR CAMPAIGN_DIR [CAMPAIGN_DIR ...]

Writes ``OUT_DIR/runs.csv`` (one row per run: family, alpha, volume rule,
scheduler label, I/O model, seed, the :func:`iosched.listpack.metrics.summary`
metrics, phase jobs, wall time), and for the runs under the paper's volume
formula ``OUT_DIR/stretch.md`` (mean over seeds with a 95 % t confidence
half-width when there are several seeds), ``OUT_DIR/pivots.md`` (the same
means as scheduler x (family, alpha) tables), ``OUT_DIR/paired.md`` (each
scheduler minus io-list, and shared minus exclusive, seed by seed on the same
workloads, with 95 % t half-widths), ``OUT_DIR/starvation.md``
(rank correlation of start time with I/O share and size) and the figures
``fig4_5_utilization.png``, ``fig6_max_stretch.png``,
``fig7_mean_stretch.png``, ``fig8_usage.png``, ``fig9_idle_vs_stretch.png``,
``shared_vs_exclusive.png``; for the per-node cap runs also
``io_node.md`` / ``waits.md`` (+ ``.csv``,
:mod:`iosched.experiments.listpack.diagnostics`). Runs with ``volume="time"`` (the bandwidth
constraints bind) get the same tables and figures in ``OUT_DIR/volume_time/``,
runs with ``volume="node"`` (the per-node I/O cap, issue 30) in ``OUT_DIR``
itself when there is no run of the paper's formula, else ``OUT_DIR/cap/``
(Fig. 8 at alpha 0.8 there). ``runs.csv`` has ``peak_demand``
(:func:`peak_demand`: whether the strict constraint binds).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from statistics import NormalDist

import click
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from iosched.errors import InputError  # noqa: E402
from iosched.experiments.listpack.diagnostics import write_diagnostics  # noqa: E402
from iosched.listpack.metrics import binned_usage, job_table, read_phases, read_workload, series, summary  # noqa: E402

__all__ = ["collect", "peak_demand", "write_tables", "figures", "repro_command"]

FAMILIES = ("M-BN", "M-No", "U-BN", "U-No")


def _t95(n: int) -> float:
    # Student t quantile 0.975 for small n (normal beyond the table)
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    return table.get(n, NormalDist().inv_cdf(0.975))


def collect(campaigns) -> tuple:
    """``(runs DataFrame, {run id: (phases, jobs, record)})`` of every
    finished run (``done.json``) of the campaign folders that their
    ``campaign.json`` lists (runs of an earlier version of the campaign
    file, e.g. with more seeds, are left out).

    :raises InputError: a folder without runs.
    """
    rows, data = [], {}
    for camp in campaigns:
        manifest = Path(camp) / "campaign.json"
        listed = ({r["id"] for r in json.loads(manifest.read_text())["runs"]}
                  if manifest.exists() else None)
        runs = sorted(p for p in Path(camp).glob("runs/*/done.json")
                      if listed is None or p.parent.name in listed)
        if not runs:
            raise InputError(f"{camp}: no finished run (runs/*/done.json)")
        for done in runs:
            d = done.parent
            info = json.loads((d / "run.json").read_text())
            args = info["identity"]["workload"]["args"]
            opts = info["identity"]["scheduler"]["options"]
            ph = read_phases(d / "out_jobs.csv")
            jobs, rec = read_workload(info["inputs"]["workload"])
            s = summary(ph, jobs, rec["nodes"], rec["bandwidth"])
            jt = job_table(ph, jobs, rec["bandwidth"])
            # starvation signature (Fig. 8, Lesson 3): rank correlation of the
            # start time with the job's I/O share x and with its size
            s["rho_start_x"] = float(jt["start"].rank().corr(jt["x"].rank()))
            s["rho_start_nodes"] = float(jt["start"].rank().corr(jt["nodes"].rank()))
            # the start-up / steady part of the run (Lesson 1): cumulative
            # utilization at half the makespan
            s["utilization_half"] = float(series(ph, jobs, rec["nodes"], rec["bandwidth"],
                                                 [s["makespan"] / 2])["utilization"].iloc[0])
            s["peak_demand"] = peak_demand(jt, jobs, rec["bandwidth"])
            wall = json.loads(done.read_text()).get("wall_s", json.loads(done.read_text()).get("wall_time_s"))
            rows.append({"run": d.name, "family": args["family"], "alpha": float(args["alpha"]),
                         "volume": args.get("volume", "paper"), "alpha_achieved": rec["alpha"], "scheduler": info["params"]["scheduler"],
                         "policy": info["identity"]["scheduler"]["name"],
                         "io_model": opts.get("io_model", "exclusive"), "seed": info["seed"],
                         "phases": int(len(ph)), "wall_s": wall, **s})
            data[d.name] = (ph, jobs, rec)
    df = pd.DataFrame(rows).sort_values(["volume", "family", "alpha", "scheduler", "seed"]).reset_index(drop=True)
    return df, data


def peak_demand(jt: pd.DataFrame, jobs: dict, B: float) -> float:
    """Largest sum of the running jobs' average bandwidths ``beta_i``
    (:meth:`~iosched.listpack.model.PeriodicJob.bandwidth`) at a job start,
    over ``B`` (dimensionless): at most 1 under io-list's strict constraint;
    near 1 when the constraint binds. ``jt`` is a
    :func:`~iosched.listpack.metrics.job_table`."""
    beta = jt["job"].map(lambda j: jobs[j].bandwidth(B)).to_numpy()
    start, end = jt["start"].to_numpy(), jt["end"].to_numpy()
    eps = 1e-6   # one pack's starts spread over microseconds of message latency
    return max((float(beta[(start <= t + eps) & (end > t + eps)].sum()) for t in start), default=0.0) / B


def _agg(df, col):
    g = df.groupby(["family", "alpha", "scheduler"])[col]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["ci"] = [(_t95(n - 1) * s / math.sqrt(n)) if n > 1 else float("nan")
                 for s, n in zip(out["std"], out["count"])]
    return out


def write_tables(df: pd.DataFrame, out: Path, runs_csv: bool = True) -> None:
    """``runs.csv`` (unless not ``runs_csv``), ``stretch.md``, ``pivots.md``
    and ``starvation.md`` (see module doc)."""
    if runs_csv:
        df.to_csv(out / "runs.csv", index=False, float_format="%.6g")
    write_pivots(df, out)
    write_paired(df, out)
    lines = ["# Stretch, utilization and idle ratio per family, alpha and scheduler",
             "", "mean over seeds (n = seeds; +- 95 % t half-width when n > 1)", ""]
    for fam in FAMILIES:
        sub = df[df["family"] == fam]
        if sub.empty:
            continue
        lines += [f"## {fam}", "",
                  "| alpha | scheduler | n | max stretch | mean stretch | utilization | idle ratio | makespan (h) |",
                  "|---|---|---|---|---|---|---|---|"]
        for (a, sch), g in sub.groupby(["alpha", "scheduler"]):
            def f(c, g=g):
                m = g[c].mean()
                if len(g) > 1:
                    return f"{m:.3f} +- {_t95(len(g) - 1) * g[c].std() / math.sqrt(len(g)):.3f}"
                return f"{m:.3f}"
            lines.append(f"| {a} | {sch} | {len(g)} | {f('max_stretch')} | {f('mean_stretch')} | "
                         f"{f('utilization')} | {f('idle_ratio')} | {g['makespan'].mean() / 3600:.1f} |")
        lines.append("")
    (out / "stretch.md").write_text("\n".join(lines) + "\n")
    st = df.groupby(["family", "scheduler"])[["rho_start_x", "rho_start_nodes"]].mean().reset_index()
    lines = ["# Who starts last? (the starvation signature of Fig. 8 / Lesson 3)", "",
             "Spearman rank correlation, per run, of a job's start time with its I/O share x "
             "(> 0: I/O-intensive jobs start later) and with its size Q (< 0: large jobs first); "
             "mean over the runs of every alpha and seed.", "",
             "| family | scheduler | rho(start, x) | rho(start, Q) |", "|---|---|---|---|"]
    for _, r in st.iterrows():
        lines.append(f"| {r['family']} | {r['scheduler']} | {r['rho_start_x']:.2f} | {r['rho_start_nodes']:.2f} |")
    (out / "starvation.md").write_text("\n".join(lines) + "\n")


def write_pivots(df: pd.DataFrame, out: Path) -> None:
    """``pivots.md``: mean over seeds of the max stretch, mean stretch,
    utilization (at the makespan and at half of it), idle ratio (and
    :func:`peak_demand` when the runs have it); one row per
    scheduler label, one column per (family, alpha)."""
    lines = ["# Means over seeds, scheduler x (family, alpha)", "",
             "(n seeds per cell in stretch.md; exclusive model unless the label ends in -shared)", ""]
    cols = ["mean_stretch", "max_stretch", "utilization", "utilization_half", "idle_ratio"]
    for col in cols + (["peak_demand"] if "peak_demand" in df else []):
        pv = df.pivot_table(index="scheduler", columns=["family", "alpha"], values=col, aggfunc="mean")
        heads = [f"{f} {a}" for f, a in pv.columns]
        lines += [f"## {col.replace('_', ' ')}", "", "| scheduler | " + " | ".join(heads) + " |",
                  "|---|" + "---|" * len(heads)]
        for sch, row in pv.iterrows():
            lines.append(f"| {sch} | " + " | ".join("" if pd.isna(v) else f"{v:.3f}" for v in row) + " |")
        lines.append("")
    (out / "pivots.md").write_text("\n".join(lines) + "\n")


def paired(df: pd.DataFrame, col: str, ref: str, label=lambda sch: True) -> pd.DataFrame:
    """Per (family, alpha, scheduler): mean over seeds of ``col`` minus the
    same seed's ``col`` under the scheduler label ``ref`` (same workload), with
    a 95 % t half-width; ``ref`` is a label or a function of the label."""
    rows = []
    for (fam, a), g in df.groupby(["family", "alpha"]):
        for sch, h in g.groupby("scheduler"):
            r = ref(sch) if callable(ref) else ref
            if sch == r or not label(sch):
                continue
            base = g[g["scheduler"] == r].set_index("seed")[col]
            d = (h.set_index("seed")[col] - base).dropna()
            if d.empty:
                continue
            n = len(d)
            ci = _t95(n - 1) * d.std() / math.sqrt(n) if n > 1 else float("nan")
            rows.append({"family": fam, "alpha": a, "scheduler": sch, "ref": r, "n": n,
                         "diff": d.mean(), "ci": ci})
    return pd.DataFrame(rows)


def write_paired(df: pd.DataFrame, out: Path) -> None:
    """``paired.md``: each exclusive scheduler minus io-list, each shared one
    minus io-list-shared, and each ``-shared`` label minus its exclusive
    scheduler, seed by seed (module doc)."""
    lines = ["# Paired differences (same workload, seed by seed)", "",
             "mean over seeds +- 95 % t half-width; * when the interval excludes 0", ""]
    excl = df[df["io_model"] == "exclusive"]
    shared = df[df["io_model"] == "shared"]
    parts = [("exclusive, minus io-list", excl, "io-list")]
    if not shared.empty:
        both = pd.concat([excl, shared])
        parts.append(("shared, minus io-list-shared", shared, "io-list-shared"))
        parts.append(("shared minus exclusive (same policy)",
                      both, lambda sch: sch[:-len("-shared")] if sch.endswith("-shared") else sch))
    for title, data, ref in parts:
        for col in ("mean_stretch", "max_stretch", "utilization"):
            lab = (lambda sch: sch.endswith("-shared")) if callable(ref) else (lambda sch: True)
            pt = paired(data, col, ref, lab)
            if pt.empty:
                continue
            lines += [f"## {col.replace('_', ' ')}: {title}", "",
                      "| family | alpha | scheduler | n | difference |", "|---|---|---|---|---|"]
            for _, r in pt.iterrows():
                star = " *" if r["n"] > 1 and abs(r["diff"]) > r["ci"] else ""
                ci = "" if math.isnan(r["ci"]) else f" +- {r['ci']:.3f}"
                lines.append(f"| {r['family']} | {r['alpha']} | {r['scheduler']} | {r['n']} | "
                             f"{r['diff']:+.3f}{ci}{star} |")
            lines.append("")
    (out / "paired.md").write_text("\n".join(lines) + "\n")


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)


def _excl(df):
    return df[df["io_model"] == "exclusive"]


def figures(df: pd.DataFrame, data: dict, out: Path, usage_alpha: float = 0.6,
            idle_family: str = "M-BN") -> None:
    """The figures of the module doc (PNG, < 1 MB each); Fig. 9 for
    ``idle_family``; families without runs are left out."""
    ex = _excl(df)
    families = [f for f in FAMILIES if f in set(ex["family"])]
    alphas = sorted(ex["alpha"].unique())
    scheds = sorted(ex["scheduler"].unique())
    colors = {s: plt.cm.tab10(i % 10) for i, s in enumerate(scheds)}
    # Figs 4-5: utilization over time (mean over seeds on a common grid)
    fig, axes = plt.subplots(len(families), len(alphas), figsize=(3.2 * len(alphas), 2.6 * len(families)),
                             squeeze=False, sharey=True)
    for i, fam in enumerate(families):
        for j, a in enumerate(alphas):
            ax = axes[i][j]
            sub = ex[(ex["family"] == fam) & (ex["alpha"] == a)]
            if sub.empty:
                ax.set_visible(False)
                continue
            tmax = sub["makespan"].max()
            grid = np.linspace(tmax / 200, tmax, 200)
            for sch, g in sub.groupby("scheduler"):
                ys = []
                for rid, mk in zip(g["run"], g["makespan"]):
                    ph, jobs, rec = data[rid]
                    y = series(ph, jobs, rec["nodes"], rec["bandwidth"], grid)["utilization"].to_numpy()
                    ys.append(np.where(grid <= mk, y, np.nan))   # each run up to its makespan
                with warnings.catch_warnings():  # all-NaN columns past every makespan
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean = np.nanmean(ys, axis=0)
                ax.plot(grid / 3600, mean, label=sch, color=colors[sch], lw=1)
            ax.set_title(f"{fam} alpha={a}", fontsize=8)
            ax.tick_params(labelsize=7)
            if i == len(families) - 1:
                ax.set_xlabel("time (h)", fontsize=7)
            if j == 0:
                ax.set_ylabel("utilization", fontsize=7)
    _legend(axes[0][0])
    fig.tight_layout()
    fig.savefig(out / "fig4_5_utilization.png", dpi=80)
    plt.close(fig)
    # Figs 6-7: stretch against alpha
    for col, name in (("max_stretch", "fig6_max_stretch.png"), ("mean_stretch", "fig7_mean_stretch.png")):
        fig, axes = plt.subplots(1, len(families), figsize=(3.5 * len(families), 3.2), squeeze=False)
        agg = _agg(ex, col)
        for i, fam in enumerate(families):
            ax = axes[0][i]
            for sch, g in agg[agg["family"] == fam].groupby("scheduler"):
                ax.errorbar(g["alpha"], g["mean"], yerr=g["ci"].fillna(0), label=sch, color=colors[sch],
                            marker="o", ms=3, lw=1, capsize=2)
                pts = ex[(ex["family"] == fam) & (ex["scheduler"] == sch)]
                ax.scatter(pts["alpha"], pts[col], color=colors[sch], s=4, alpha=0.5)
            ax.set_title(fam, fontsize=9)
            ax.set_xlabel("I/O load alpha", fontsize=8)
            ax.set_ylabel(col.replace("_", " "), fontsize=8)
        _legend(axes[0][0])
        fig.tight_layout()
        fig.savefig(out / name, dpi=80)
        plt.close(fig)
    # Fig 8: resource usage over time (bin averages), M-BN and M-No at usage_alpha
    fig, axes = plt.subplots(2, 3, figsize=(12, 6), squeeze=False)
    for i, fam in enumerate(("M-BN", "M-No")):
        sub = ex[(ex["family"] == fam) & (ex["alpha"] == usage_alpha)]
        if sub.empty:
            continue
        edges = np.linspace(0, sub["makespan"].max(), 61)
        for sch, g in sub.groupby("scheduler"):
            ser = [binned_usage(*data[r][:2], data[r][2]["nodes"], data[r][2]["bandwidth"], edges)
                   for r in g["run"]]
            for j, c in enumerate(("running", "nodes", "bandwidth")):
                axes[i][j].plot(ser[0]["t"] / 3600, np.mean([s[c] for s in ser], axis=0), label=sch,
                                color=colors[sch], lw=0.8)
        for j, c in enumerate(("running applications", "used nodes / P", "used bandwidth / B")):
            axes[i][j].set_title(f"{fam} alpha={usage_alpha}: {c}", fontsize=8)
            axes[i][j].set_xlabel("time (h)", fontsize=7)
    _legend(axes[0][0])
    fig.tight_layout()
    fig.savefig(out / "fig8_usage.png", dpi=80)
    plt.close(fig)
    # Fig 9: mean stretch against idle ratio (M-BN)
    fig, ax = plt.subplots(figsize=(5, 4))
    sub = ex[ex["family"] == idle_family]
    for sch, g in sub.groupby("scheduler"):
        ax.scatter(g["idle_ratio"], g["mean_stretch"], label=sch, color=colors[sch], s=12)
        gg = g.groupby("alpha")[["idle_ratio", "mean_stretch"]].mean().sort_values("idle_ratio")
        ax.plot(gg["idle_ratio"], gg["mean_stretch"], color=colors[sch], lw=0.8)
    ax.set_xlabel("idle ratio")
    ax.set_ylabel("mean stretch")
    ax.set_title(f"{idle_family} (points: runs; lines: mean per alpha)", fontsize=9)
    _legend(ax)
    fig.tight_layout()
    fig.savefig(out / "fig9_idle_vs_stretch.png", dpi=80)
    plt.close(fig)
    # shared vs exclusive
    if (df["io_model"] == "exclusive").all():
        return
    pairs = [(p, f"{p}-shared") for p in ("io-list", "io-pack-random", "io-pack-max", "io-pack-char")]
    fig, axes = plt.subplots(1, len(families), figsize=(3.5 * len(families), 3.2), squeeze=False)
    for i, fam in enumerate(families):
        ax = axes[0][i]
        for a, b in pairs:
            for sch, ls in ((a, "-"), (b, "--")):
                g = df[(df["family"] == fam) & (df["scheduler"] == sch)].groupby("alpha")["mean_stretch"].mean()
                if len(g):
                    ax.plot(g.index, g.values, ls, marker="o", ms=3, label=sch, color=colors.get(a))
        ax.set_title(fam, fontsize=9)
        ax.set_xlabel("I/O load alpha", fontsize=8)
        ax.set_ylabel("mean stretch", fontsize=8)
    _legend(axes[0][0])
    fig.tight_layout()
    fig.savefig(out / "shared_vs_exclusive.png", dpi=80)
    plt.close(fig)


@click.command(name="listpack")
@click.argument("out_dir")
@click.argument("campaign_dir", nargs=-1, required=True)
def repro_command(out_dir, campaign_dir):
    """Tables and figures of the list vs pack reproduction (Jeannot, Pallez &
    Vidal, IJHPCA 2023) from the finished campaign folders CAMPAIGN_DIR...,
    written to OUT_DIR."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        df, data = collect(list(campaign_dir))
    except (InputError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    df.to_csv(out / "runs.csv", index=False, float_format="%.6g")
    paper, vtime, node = (df[df["volume"] == v] for v in ("paper", "time", "node"))
    if not paper.empty:
        write_tables(paper, out, runs_csv=False)
        figures(paper, data, out)
    if not vtime.empty:
        (out / "volume_time").mkdir(exist_ok=True)
        write_tables(vtime, out / "volume_time", runs_csv=False)
        figures(vtime, data, out / "volume_time", idle_family="M-No")
    if not node.empty:   # the per-node cap: OUT_DIR itself when alone, else OUT_DIR/cap
        where = out if paper.empty else out / "cap"
        where.mkdir(exist_ok=True)
        write_tables(node, where, runs_csv=False)
        figures(node, data, where, usage_alpha=0.8)
        write_diagnostics(node, data, where)
    print(f"{len(df)} runs -> {out}")
