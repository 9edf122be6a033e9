"""A Markdown and an HTML report of a campaign (``iosched report DIR``,
:func:`iosched.analysis.cli.report_command`).

:func:`build_report` reads a campaign output folder (``campaign.json`` and
the run folders, see :mod:`iosched.campaign`) and writes, in the report
folder (default ``results/reports/<campaign name>/`` under the current
directory):

* ``report.md`` -- summary (runs finished / failed / pending, parameters,
  software versions), the failed runs with their one-line reason, the mean
  metrics per scheduler (one table per workload, durations with units), the
  ratios to the baseline per other scheduler (median [min, max] over workload
  parts and seeds), and the figures;
* ``report.html`` -- the same content with the figures embedded (base64
  ``data:`` URIs), one self-contained file;
* ``runs.parquet`` and ``runs.csv`` -- the tidy runs table of
  :func:`iosched.analysis.campaign.campaign_table`;
* ``figures/*.png`` -- ratio box plots, ECDF and tail of the waiting times,
  and for one workload part (the first one that most schedulers finished) a Gantt
  chart and a utilization / queue-length plot per scheduler, and, when its runs
  have an I/O record (:mod:`iosched.analysis.io`), the I/O figures and tables of
  :func:`iosched.analysis.ioplots.io_blocks` (bytes per tier, holds, input
  sources, I/O over time per scheduler).

Nothing in the report depends on the wall clock or on the machine, so the
same campaign outputs give byte-identical files (same matplotlib and
pyarrow versions).
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from iosched.analysis.campaign import (
    GROUP_COLUMNS,
    IO_NOTE,
    RATIO_METRICS,
    campaign_table,
    job_table,
    load_manifest,
    summary_by_scheduler,
    write_table,
)
from iosched.analysis.format import markdown_table
from iosched.analysis.io import load_io
from iosched.analysis.ioplots import io_blocks
from iosched.analysis.jobs import load_jobs
from iosched.analysis.plots import (
    METRIC_LABELS,
    MIN_BOX_POINTS,
    plot_ecdf,
    plot_gantt,
    plot_ratio_boxes,
    plot_tail,
    plot_utilization,
)
from iosched.analysis.units import time_unit
from iosched.errors import InputError

__all__ = ["build_report", "render_markdown", "render_html"]

_SUMMARY_COLUMNS = ("waiting_time_mean", "waiting_time_max", "turnaround_mean",
                    "bounded_slowdown_mean", "makespan", "utilization")
#: columns holding durations in s (shown in the unit of the column's largest value)
_TIME_COLUMNS = ("waiting_time_mean", "waiting_time_max", "turnaround_mean", "makespan")


def _summary_table(df: pd.DataFrame) -> tuple[list, list]:
    """Header and rows of the mean metrics per scheduler of one workload's runs:
    readable column names, durations in one unit per column."""
    summ = summary_by_scheduler(df, _SUMMARY_COLUMNS)
    header = ["scheduler", "runs", "finished", "failed"]
    cols = []
    for c in _SUMMARY_COLUMNS:
        label = METRIC_LABELS.get(c, c)
        if c in _TIME_COLUMNS:
            unit, factor = time_unit(summ[c].to_numpy(float))
            header.append(f"{label} ({unit})")
            cols.append((c, factor))
        else:
            header.append(label)
            cols.append((c, 1.0))
    rows = [[s, int(summ.at[s, "runs"]), int(summ.at[s, "done"]), int(summ.at[s, "failed"]),
             *(_fmt(float(summ.at[s, c]) / f) for c, f in cols)] for s in summ.index]
    return header, rows


def _workload_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``(title, rows)`` per (platform, workload) of the runs table, sorted."""
    out = []
    for (plat, wl), g in df.groupby(["platform", "workload"], sort=True, dropna=False):
        out.append((f"{wl} on {plat}", g))
    return out


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)) or x is pd.NA:
        return "-"
    if isinstance(x, (float, np.floating)):
        return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"
    return str(x)


def render_markdown(blocks: list) -> str:
    """Markdown text of report blocks.

    *blocks*: list of tuples ``("h1"|"h2"|"h3", text)``, ``("p", text)``,
    ``("table", header list, rows list of lists)``, ``("img", relative path,
    caption)``. Returns the text, ending with a newline.
    """
    out = []
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            out.append("#" * int(kind[1]) + " " + b[1])
        elif kind == "p":
            out.append(b[1])
        elif kind == "table":
            out += markdown_table(b[1], b[2])
        elif kind == "img":
            out.append(f"![{b[2]}]({b[1]})")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def render_html(blocks: list, title: str, base_dir: Path) -> str:
    """Self-contained HTML of report blocks (see :func:`render_markdown`);
    images are read from *base_dir* / path and embedded as base64 PNG (the
    path kept in the ``img`` element's ``data-file`` attribute)."""
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
           f"<title>{e(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
           "padding:2px 8px;text-align:right}th{background:#eee}td:first-child{text-align:left}"
           "img{max-width:100%}code{background:#f4f4f4}</style>",
           "</head>", "<body>"]
    for b in blocks:
        kind = b[0]
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{e(b[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{e(b[1])}</p>")
        elif kind == "table":
            out.append("<table>")
            out.append("<tr>" + "".join(f"<th>{e(str(c))}</th>" for c in b[1]) + "</tr>")
            for r in b[2]:
                out.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
            out.append("</table>")
        elif kind == "img":
            data = base64.b64encode((base_dir / b[1]).read_bytes()).decode("ascii")
            out.append(f"<figure><img src=\"data:image/png;base64,{data}\" alt=\"{e(b[2])}\" "
                       f"data-file=\"{e(b[1])}\">"
                       f"<figcaption>{e(b[2])}</figcaption></figure>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def _versions(campaign_dir: Path, manifest: dict) -> dict:
    for run in manifest["runs"]:
        try:
            data = json.loads((campaign_dir / run["dir"] / "run.json").read_text(encoding="utf-8"))
            return dict(data.get("versions") or {})
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return {}


def _representative(df: pd.DataFrame) -> pd.DataFrame:
    """Finished rows of the workload part (GROUP_COLUMNS order) that the most
    schedulers finished (the first such part)."""
    done = df[df["status"] == "done"]
    best = done.head(0)
    for _, g in done.groupby(list(GROUP_COLUMNS), sort=True, dropna=False):
        if g["scheduler"].nunique() > best["scheduler"].nunique():
            best = g
    return best.drop_duplicates(subset=["scheduler"]).sort_values("scheduler", kind="mergesort")


def build_report(campaign_dir, out_dir=None, top: int = 50) -> dict:
    """Write the report of a campaign (see the module docstring).

    :param campaign_dir: a campaign output folder (holding campaign.json).
    :param out_dir: report folder (default ``results/reports/<name>`` under
        the current directory); created if needed.
    :param top: number of highest waiting times per scheduler in the tail plot.
    :returns: dict with the paths written (``markdown``, ``html``,
        ``parquet``, ``csv``, ``figures``: list).
    :raises InputError: missing or bad campaign folder, unreadable run
        outputs, unwritable report folder.
    """
    cdir = Path(campaign_dir)
    manifest = load_manifest(cdir)
    name = str(manifest.get("name") or cdir.name)
    out = Path(out_dir) if out_dir is not None else Path("results") / "reports" / name
    figdir = out / "figures"
    try:
        figdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{out}: cannot create the report folder: {e.strerror or e}") from None
    for old in figdir.glob("*.png"):
        old.unlink()
    baseline = manifest.get("baseline")
    df = campaign_table(cdir)
    pq, csv = write_table(df, out)
    tau = float(manifest.get("tau_s") or 600.0)
    figures = []
    n = {s: int((df["status"] == s).sum()) for s in ("done", "failed", "pending")}

    blocks: list = [("h1", f"Campaign {name}")]
    blocks.append(("p", f"{len(df)} runs: {n['done']} finished, {n['failed']} failed, "
                        f"{n['pending']} not run (yet). Platforms: "
                        f"{', '.join(manifest.get('platforms', []))}. Workloads: "
                        f"{', '.join(manifest.get('workloads', []))}. Schedulers: "
                        f"{', '.join(manifest.get('schedulers', []))}. Seeds: "
                        f"{', '.join(map(str, manifest.get('seeds', [])))}. Engine: "
                        f"{manifest.get('engine')}. Baseline: {baseline or 'none'}."))
    vers = _versions(cdir, manifest)
    if vers:
        blocks.append(("p", "Software: " + ", ".join(f"{k} {v}" for k, v in sorted(vers.items()))
                       + "."))
    blocks.append(("p", "Tables: runs.csv and runs.parquet (one row per run: parameters, "
                        "status, every run metric and the ratios to the baseline)."))
    failed = df[df["status"] == "failed"]
    if len(failed):
        blocks.append(("h2", "Failed runs"))
        blocks.append(("table", ["run", "reason"],
                       [[r.run_id, r.reason] for r in failed.itertuples(index=False)]))

    blocks.append(("h2", "Metrics per scheduler"))
    blocks.append(("p", "One table per workload (runs of different workloads are never "
                        "averaged together): mean over the finished runs of its parts and "
                        "seeds; durations in the unit given in the column header; bounded "
                        f"slowdown with tau = {tau:g} s."))
    for title, group in _workload_groups(df):
        blocks.append(("h3", title))
        header, rows = _summary_table(group)
        blocks.append(("table", header, rows))
    if baseline and any(c.startswith("ratio_") for c in df.columns):
        blocks.append(("h2", f"Ratios to the baseline ({baseline})"))
        blocks.append(("p", "Each run's metric divided by the baseline's on the same workload "
                            "part (platform, workload, part, seed): median [min, max] over the "
                            "workload parts; below 1 is better for waiting times, slowdowns "
                            "and makespan, above 1 is better for utilization. The baseline's "
                            "own ratios (all 1) are not listed."))
        rows = []
        for s in sorted(set(df["scheduler"]) - {baseline}):
            sub = df[df["scheduler"] == s]
            row = [s]
            for m in RATIO_METRICS:
                v = sub[f"ratio_{m}"].to_numpy(float)
                v = v[np.isfinite(v)]
                row.append(f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]" if v.size else "-")
            rows.append(row)
        blocks.append(("table", ["scheduler", *(METRIC_LABELS.get(m, m) for m in RATIO_METRICS)],
                       rows))
        figures.append(plot_ratio_boxes(df, figdir / "ratios_box.png", baseline))
        blocks.append(("img", "figures/ratios_box.png",
                       f"Ratios to {baseline} per scheduler (one value per workload part and "
                       f"seed; a box plot from {MIN_BOX_POINTS} values on, else the values)"))

    jobs = job_table(cdir, df, tau=tau)
    io_records: dict = {}
    if len(jobs):
        blocks.append(("h2", "Waiting times"))
        figures.append(plot_ecdf(jobs, figdir / "ecdf_waiting_time.png"))
        blocks.append(("img", "figures/ecdf_waiting_time.png",
                       "ECDF of the waiting times (jobs of all finished runs pooled)"))
        figures.append(plot_tail(jobs, figdir / "tail_waiting_time.png", top=top))
        blocks.append(("img", "figures/tail_waiting_time.png",
                       f"The {top} highest waiting times per scheduler"))
        rep = _representative(df)
        if len(rep):
            first = rep.iloc[0]
            part = "" if pd.isna(first["part"]) else f", part {first['part']}"
            blocks.append(("h2", f"Schedules of one workload part: {first['platform']}, "
                                 f"{first['workload']}{part}, seed {first['seed']}"))
            manifest_dirs = {r["id"]: cdir / r["dir"] for r in manifest["runs"]}
            for r in rep.itertuples(index=False):
                jt = load_jobs(manifest_dirs[r.run_id])
                jt.attrs["path"] = f"{r.run_id}/out_jobs.csv"
                g = figdir / f"gantt_{r.scheduler}.png"
                u = figdir / f"utilization_{r.scheduler}.png"
                figures.append(plot_gantt(jt, g))
                figures.append(plot_utilization(jt, int(r.nb_res), u))
                blocks.append(("h3", r.scheduler))
                blocks.append(("img", f"figures/{g.name}", f"Gantt chart, {r.scheduler}"))
                blocks.append(("img", f"figures/{u.name}",
                               f"Busy nodes and queue length over time, {r.scheduler}"))
                record = load_io(manifest_dirs[r.run_id])
                if record is not None:
                    io_records[r.scheduler] = record
        io_part = io_blocks(io_records, figdir)
        if io_part:
            io_part[1:1] = [("p", "The runs of the workload part above.")]
            blocks += io_part
            figures += sorted(figdir.glob("io_*.png"))
    if not io_records:
        blocks.append(("h2", "I/O"))
        blocks.append(("p", IO_NOTE))
    blocks.append(("p", "Figures are drawn with matplotlib. The run folders hold Batsim's "
                        "files: evalys 4.0.7 (the Batsim team's analysis package) reads their "
                        "out_jobs.csv with JobSet.from_csv and draws its Gantt charts, also on "
                        "pandas 3 (docs/outputs.md)."))

    md = out / "report.md"
    ht = out / "report.html"
    try:
        md.write_text(render_markdown(blocks), encoding="utf-8")
        ht.write_text(render_html(blocks, f"Campaign {name}", out), encoding="utf-8")
    except OSError as e:
        raise InputError(f"{out}: cannot write the report: {e.strerror or e}") from None
    return {"markdown": md, "html": ht, "parquet": pq, "csv": csv, "figures": figures}
