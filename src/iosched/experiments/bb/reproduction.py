"""Reproduction of Kopanski & Rzadca, "Plan-based Job Scheduling for
Supercomputers with Shared Burst Buffers", Euro-Par 2021 (LNCS 12820,
DOI 10.1007/978-3-030-85665-6_8; arXiv 2109.00082v2): the table, the
figures and the paper's claims next to ours, from a finished run of the
campaign ``examples/bb_reproduction.yaml``.

``iosched repro bb CAMPAIGN_DIR
[--output results/bb_reproduction]`` reads the campaign folder
(``campaign.json`` and the run folders, see :mod:`iosched.campaign`) through
:func:`iosched.analysis.campaign.campaign_table` (one row per run; its
``waiting_time_mean`` and ``bounded_slowdown_mean`` are the run's
``metrics.json`` values: mean over the workload's jobs of the waiting time
in s and of the bounded slowdown max(1, F / max(D, tau)), tau = the
campaign's ``tau``, 600 s as in the paper) and writes in the output folder:

* ``table.csv`` and ``table.md`` -- one row per policy (:data:`POLICIES`,
  the paper's eight): over the three-week parts (workload ``kth3w``, 16
  parts in the paper), the median, mean, min and max of the policy's mean
  waiting time divided by sjf-bb's on the same part, the same for the mean
  bounded slowdown, and the number of parts used (parts where both the
  policy's and sjf-bb's runs finished); on the first 1000 jobs (workload
  ``kth1000``): the mean waiting time (s), the mean bounded slowdown and
  both ratios to sjf-bb. ``table.md`` also lists every run that is not used
  (failed with its reason, not run yet, or absent from the campaign);
* ``fig12_waiting.png`` and ``fig12_bsld.png`` -- the paper's Fig. 12:
  box plots over the parts of those normalised values per policy (log y
  axis, a line at 1 = sjf-bb);
* ``tail.png`` -- the :data:`TAIL_TOP` (3000) highest waiting times per
  policy, jobs of all parts pooled (per-job values of
  :func:`iosched.analysis.campaign.job_table`), in decreasing order against their rank;
* ``claims.md`` -- the paper's claims and ours side by side, with a verdict
  computed from the numbers (:func:`claims`, criteria in :data:`CRITERIA`).

Figures are drawn with :mod:`iosched.analysis.plots` (Agg canvas, fixed size and
dpi, no software/date metadata), so the same campaign gives the same bytes.

Exit status: 0 every expected run finished; 1 the outputs were written but
some runs failed or are missing (each listed on stdout as ``FAILED``,
``PENDING`` or ``MISSING``); 2 one-line error, nothing written (no such
folder, no manifest, no run of sjf-bb or of the two workloads, no finished
run).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click
import numpy as np
import pandas as pd

from iosched.analysis import plots
from iosched.analysis.campaign import (
    GROUP_COLUMNS,
    campaign_table,
    job_table,
    load_manifest,
    ratios,
)
from iosched.analysis.cli import CommandError
from iosched.analysis.format import markdown_table
from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError, one_line

__all__ = [
    "POLICIES",
    "BASELINE",
    "BB_AWARE",
    "FIRST_WORKLOAD",
    "PARTS_WORKLOAD",
    "PAPER_NB_PARTS",
    "TAIL_TOP",
    "TABLE_COLUMNS",
    "CRITERIA",
    "Reproduction",
    "analyse",
    "policy_table",
    "part_values",
    "unused_runs",
    "undefined_ratios",
    "tail_values",
    "claims",
    "plot_fig12",
    "plot_tail",
    "render_table_md",
    "render_claims_md",
    "build",
    "reproduction_command",
]

#: The paper's eight policies (campaign scheduler labels), in the paper's order.
POLICIES = ("fcfs", "fcfs-easy", "filler", "fcfs-bb", "sjf-bb", "plan-1", "plan-2", "plan-3",
            "sjf-bb-head")
#: The reference policy of the ratios: burst-buffer-aware SJF-EASY-backfilling.
BASELINE = "sjf-bb"
#: The burst-buffer-aware policies (reservations on nodes and burst buffers).
BB_AWARE = ("fcfs-bb", "sjf-bb", "plan-1", "plan-2", "plan-3")
#: Workload label of the first 1000 KTH-SP2 jobs in the campaign.
FIRST_WORKLOAD = "kth1000"
#: Workload label of the three-week parts in the campaign.
PARTS_WORKLOAD = "kth3w"
#: Number of three-week parts in the paper.
PAPER_NB_PARTS = 16
#: Highest waiting times per policy in ``tail.png``.
TAIL_TOP = 3000

_STATS = ("median", "mean", "min", "max")
#: Columns of ``table.csv`` (after ``policy``): ratios are value / sjf-bb's
#: value on the same workload part; ``first_*`` are on the first 1000 jobs;
#: times in s.
TABLE_COLUMNS = (("nb_parts",)
                 + tuple(f"waiting_ratio_{s}" for s in _STATS)
                 + tuple(f"bsld_ratio_{s}" for s in _STATS)
                 + ("first_waiting_time_mean_s", "first_bounded_slowdown_mean",
                    "first_waiting_ratio", "first_bsld_ratio"))

#: Verdict criteria of :func:`claims`, by claim id.
#: ``a*``: "about two orders of magnitude" = the factor rounds to 10^2 on a
#: log10 scale (10^1.5 <= factor < 10^2.5); ``b1``: "more than 20%" =
#: improvement > 0.20; ``b2``: "by 27%" = improvement >= 0.265 (at least 27%
#: once rounded to a whole percent).
CRITERIA = {
    "a": ("10^1.5 <= factor < 10^2.5 (about two orders of magnitude)",
          lambda x: 10 ** 1.5 <= x < 10 ** 2.5),
    "b1": ("improvement > 20%", lambda x: x > 0.20),
    "b2": ("improvement >= 26.5% (27% rounded)", lambda x: x >= 0.265),
    "c": ("improvement > 0 (sjf-bb better)", lambda x: x > 0),
}

#: Verdict of claim (a) outside the whole log, where the paper does not make it.
WHOLE_LOG_ONLY = "not judged (claimed on the whole log)"

_METRICS = {"waiting": ("waiting_time_mean", "mean waiting time"),
            "bsld": ("bounded_slowdown_mean", "mean bounded slowdown")}
_COLORS = {p: c for p, c in zip(POLICIES, ("#1f77b4", "#d62728", "#8c564b", "#ff7f0e", "#2ca02c",
                                           "#9467bd", "#17becf", "#e377c2", "#7f7f7f"))}


@dataclass
class Reproduction:
    """The numbers of one campaign (see :func:`analyse`).

    ``runs``: the campaign table (:func:`iosched.analysis.campaign.campaign_table`
    with ratios to sjf-bb); ``parts``: :func:`part_values`; ``table``:
    :func:`policy_table`; ``unused``: :func:`unused_runs`; ``claims``:
    :func:`claims`; ``part_numbers``: the parts of the parts workload in the
    campaign; ``tau``: bounded-slowdown threshold (s); ``name``: campaign name.
    """

    name: str
    tau: float
    runs: pd.DataFrame
    parts: pd.DataFrame
    table: pd.DataFrame
    unused: list
    claims: list
    part_numbers: list = field(default_factory=list)
    first_workload: str = FIRST_WORKLOAD
    parts_workload: str = PARTS_WORKLOAD
    whole_workload: str | None = None
    by_seeds: bool = False
    whole: pd.DataFrame | None = None
    seeds: pd.DataFrame | None = None


def _finite(values) -> np.ndarray:
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    return v[np.isfinite(v)]


def part_values(runs: pd.DataFrame, parts_workload: str = PARTS_WORKLOAD) -> pd.DataFrame:
    """Per finished run of the parts workload: the policy, the part and its
    normalised values.

    :param runs: a campaign table with the ratio columns to sjf-bb.
    :returns: DataFrame with ``policy``, ``platform``, ``part``, ``seed``,
        ``engine``, ``run_id``, ``waiting_time_mean`` (s),
        ``bounded_slowdown_mean``, ``waiting_ratio`` and ``bsld_ratio``
        (value / sjf-bb's value on the same part, NaN when sjf-bb's run did
        not finish or its value is 0), ``baseline_done`` (sjf-bb's run on the
        same part finished), sorted by policy (paper order), part.
    """
    sub = runs[(runs["workload"] == parts_workload) & (runs["status"] == "done")
               & runs["scheduler"].isin(POLICIES)]
    keys = [c for c in GROUP_COLUMNS if c != "workload"]
    base = {tuple(r) for r in sub.loc[sub["scheduler"] == BASELINE, keys]
            .astype(object).itertuples(index=False)}
    out = pd.DataFrame({
        "policy": sub["scheduler"].astype(str),
        "platform": sub["platform"], "part": sub["part"], "seed": sub["seed"],
        "engine": sub["engine"], "run_id": sub["run_id"],
        "waiting_time_mean": sub["waiting_time_mean"].astype(float),
        "bounded_slowdown_mean": sub["bounded_slowdown_mean"].astype(float),
        "waiting_ratio": sub["ratio_waiting_time_mean"].astype(float),
        "bsld_ratio": sub["ratio_bounded_slowdown_mean"].astype(float),
        "baseline_done": [tuple(r) in base
                          for r in sub[keys].astype(object).itertuples(index=False)],
    })
    order = {p: i for i, p in enumerate(POLICIES)}
    out = out.assign(_o=out["policy"].map(order))
    out = out.sort_values(["_o", "part", "seed", "platform", "engine", "run_id"], kind="mergesort")
    return out.drop(columns="_o").reset_index(drop=True)


def policy_table(runs: pd.DataFrame, parts: pd.DataFrame,
                 first_workload: str = FIRST_WORKLOAD) -> pd.DataFrame:
    """The reproduction table: one row per policy of :data:`POLICIES`.

    :param runs: the campaign table with ratios to sjf-bb.
    :param parts: :func:`part_values` of *runs*.
    :returns: DataFrame with ``policy`` then :data:`TABLE_COLUMNS`:
        ``nb_parts`` (parts where the policy's and sjf-bb's runs finished),
        ``waiting_ratio_{median,mean,min,max}`` and ``bsld_ratio_*`` over
        those parts (a part where sjf-bb's value is 0 has no ratio and is
        left out, see :func:`undefined_ratios`; NaN without any), and on the first
        1000 jobs ``first_waiting_time_mean_s`` (s),
        ``first_bounded_slowdown_mean``, ``first_waiting_ratio`` and
        ``first_bsld_ratio`` (NaN when the run did not finish; the mean over
        seeds if the campaign has several).
    """
    first = runs[(runs["workload"] == first_workload) & (runs["status"] == "done")]
    rows = []
    for p in POLICIES:
        row = {"policy": p}
        pp = parts[parts["policy"] == p]
        row["nb_parts"] = int(pp["baseline_done"].sum())
        for key, col in (("waiting", "waiting_ratio"), ("bsld", "bsld_ratio")):
            v = _finite(pp[col])
            for s in _STATS:
                row[f"{key}_ratio_{s}"] = float(getattr(np, s)(v)) if v.size else math.nan
        f = first[first["scheduler"] == p]
        for col, src in (("first_waiting_time_mean_s", "waiting_time_mean"),
                         ("first_bounded_slowdown_mean", "bounded_slowdown_mean"),
                         ("first_waiting_ratio", "ratio_waiting_time_mean"),
                         ("first_bsld_ratio", "ratio_bounded_slowdown_mean")):
            v = _finite(f[src]) if src in f.columns else np.array([])
            row[col] = float(v.mean()) if v.size else math.nan
        rows.append(row)
    df = pd.DataFrame(rows, columns=["policy", *TABLE_COLUMNS])
    df["nb_parts"] = df["nb_parts"].astype("int64")
    return df


def undefined_ratios(parts: pd.DataFrame) -> list:
    """Parts where the policy's and sjf-bb's runs finished but a ratio is
    undefined (sjf-bb's mean is 0 or missing): list of (policy, part,
    metric) tuples, ``metric`` ``"waiting"`` or ``"bsld"``."""
    out = []
    for r in parts[parts["baseline_done"]].itertuples(index=False):
        for key, col in (("waiting", "waiting_ratio"), ("bsld", "bsld_ratio")):
            if not math.isfinite(float(getattr(r, col))):
                out.append((r.policy, None if pd.isna(r.part) else int(r.part), key))
    return out


def unused_runs(runs: pd.DataFrame, part_numbers, first_workload: str = FIRST_WORKLOAD,
                parts_workload: str = PARTS_WORKLOAD) -> list:
    """Every expected run that did not finish: :data:`POLICIES` x (the first
    1000 jobs, each part of *part_numbers*).

    :returns: list of dicts ``policy``, ``workload``, ``part`` (int or
        None), ``status`` (``failed``, ``pending`` = in the campaign but not
        run or killed mid-way, ``missing`` = no such run in the campaign),
        ``run_id`` ("" when missing) and ``reason``; in policy, workload,
        part order.
    """
    out = []
    expected = [(first_workload, None)] + [(parts_workload, int(k)) for k in part_numbers]
    for p in POLICIES:
        for wl, part in expected:
            sel = (runs["scheduler"] == p) & (runs["workload"] == wl)
            sel &= runs["part"].isna() if part is None else (runs["part"] == part).fillna(False)
            rows = runs[sel]
            if not len(rows):
                out.append({"policy": p, "workload": wl, "part": part, "status": "missing",
                            "run_id": "", "reason": "no such run in the campaign"})
            for r in rows[rows["status"] != "done"].itertuples(index=False):
                out.append({"policy": p, "workload": wl, "part": part, "status": r.status,
                            "run_id": r.run_id,
                            "reason": r.reason if r.status == "failed" else "not run (yet)"})
    return out


def _factor(parts: pd.DataFrame, metric: str, num: str, den: str) -> tuple[float, int]:
    """Median over parts of num's value / den's value on the same part."""
    keys = [c for c in GROUP_COLUMNS if c != "workload"]
    v = _finite(ratios(parts[parts["policy"] == num], parts[parts["policy"] == den], keys,
                       [metric])[metric])
    return (float(np.median(v)) if v.size else math.nan), int(v.size)


def _verdict(kind: str, value: float) -> str:
    if not math.isfinite(value):
        return "no data"
    return "holds" if CRITERIA[kind][1](value) else "does not hold"


def claims(table: pd.DataFrame, parts: pd.DataFrame) -> list:
    """The paper's claims checked on our numbers.

    (a) fcfs-easy (EASY backfilling that ignores burst buffers in its
    reservations) has a mean waiting time and a mean bounded slowdown about
    two orders of magnitude higher than the burst-buffer-aware policies
    (the paper's evaluation on KTH-SP2, as summarised in the project's
    issue #3):
    measured as the median over parts of fcfs-easy's value / sjf-bb's
    (= fcfs-easy's median ratio in *table*) and / plan-2's, and on the first
    1000 jobs.

    (b) plan-2 improves the mean waiting time by more than 20% and the mean
    bounded slowdown by 27% over sjf-bb (the paper's abstract): measured as
    1 - plan-2's median ratio over parts, and 1 - its ratio on the first
    1000 jobs.

    :param table: :func:`policy_table`.
    :param parts: :func:`part_values`.
    :returns: list of dicts ``id`` (a1, a2, a3, a4, b1, b2), ``claim``,
        ``paper``, ``measure``, ``criterion``, ``parts_value`` and
        ``first_value`` (floats, NaN without data), ``nb_parts`` (parts
        used), ``parts_verdict`` and ``first_verdict`` (``holds``, ``does not
        hold`` or ``no data``), ``unit`` (``factor`` or ``improvement``).
    """
    t = table.set_index("policy")
    out = []
    claim_a = ("fcfs-easy has about two orders of magnitude higher {m} than the "
               "burst-buffer-aware policies (fcfs-bb, sjf-bb, plan-k)")
    i = 0
    for key, (metric, label) in _METRICS.items():
        for ref in (BASELINE, "plan-2"):
            i += 1
            pv, n = _factor(parts, metric, "fcfs-easy", ref)
            if ref == BASELINE:
                fv = float(t.at["fcfs-easy", f"first_{'waiting' if key == 'waiting' else 'bsld'}_ratio"])
            else:
                col = "first_waiting_time_mean_s" if key == "waiting" else "first_bounded_slowdown_mean"
                num, den = float(t.at["fcfs-easy", col]), float(t.at["plan-2", col])
                fv = num / den if math.isfinite(num) and math.isfinite(den) and den != 0 else math.nan
            # the paper makes claim (a) on the whole log (Section 4.2, Fig. 6):
            # the parts and the first 1000 jobs are shown, not judged
            out.append({"id": f"a{i}", "claim": claim_a.format(m=label), "paper": "about 100x",
                        "measure": f"fcfs-easy / {ref}, {label}", "criterion": CRITERIA["a"][0],
                        "unit": "factor", "parts_value": pv, "nb_parts": n,
                        "parts_verdict": WHOLE_LOG_ONLY, "first_value": fv,
                        "first_verdict": WHOLE_LOG_ONLY})
    for cid, key, paper in (("b1", "waiting", "more than 20%"), ("b2", "bsld", "27%")):
        label = _METRICS[key][1]
        v = _finite(parts.loc[parts["policy"] == "plan-2", f"{key}_ratio"])
        pv = 1.0 - float(np.median(v)) if v.size else math.nan
        fv = 1.0 - float(t.at["plan-2", f"first_{key}_ratio"])
        out.append({"id": cid, "claim": f"plan-2 improves the {label} over sjf-bb by {paper}",
                    "paper": paper, "measure": f"1 - plan-2 / sjf-bb, {label}",
                    "criterion": CRITERIA[cid][0], "unit": "improvement", "parts_value": pv,
                    "nb_parts": int(v.size),
                    "parts_verdict": _verdict(cid, pv), "first_value": fv,
                    "first_verdict": _verdict(cid, fv)})
    return out


def combined_table(campaign_dirs) -> tuple:
    """The campaign tables of one or several campaign folders, concatenated,
    with the ratios to sjf-bb recomputed over all of them (so a campaign of
    plan-2 alone is compared with the sjf-bb runs of another campaign on the
    same platform, workload, part, seed and engine).

    :param campaign_dirs: a folder or a list of folders.
    :returns: ``(runs, manifests)``; ``runs`` has a column ``campaign_dir``.
    :raises InputError: as :func:`iosched.analysis.campaign.load_manifest`.
    """
    dirs = [campaign_dirs] if isinstance(campaign_dirs, (str, Path)) else list(campaign_dirs)
    tables, manifests = [], []
    for d in dirs:
        d = Path(d)
        manifests.append(load_manifest(d))
        t = campaign_table(d, baseline="")   # ratios: over all the folders, below
        tables.append(t.assign(campaign_dir=str(d)))
    runs = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    keys = list(GROUP_COLUMNS)
    metrics = ["waiting_time_mean", "bounded_slowdown_mean"]
    ref = runs[(runs["scheduler"] == BASELINE) & (runs["status"] == "done")]
    r = ratios(runs, ref, keys, metrics)
    for m in metrics:
        runs[f"ratio_{m}"] = r[m]
    return runs, manifests


def analyse(campaign_dirs, first_workload: str = FIRST_WORKLOAD,
            parts_workload: str | None = PARTS_WORKLOAD,
            whole_workload: str | None = None) -> Reproduction:
    """Read reproduction campaigns and compute the table and the claims.

    :param campaign_dirs: a campaign output folder (``campaign.json``) or a
        list of them (:func:`combined_table`).
    :param parts_workload: the three-week parts' label, or None: then the
        box plots and the "parts" statistics are over the seeds of the first
        1000 jobs (one point per seed).
    :param whole_workload: label of the whole log (optional; claim (a) is
        also checked on it).
    :raises InputError: missing folder or manifest (see
        :func:`iosched.analysis.campaign.load_manifest`), one of the
        workloads absent or the parts workload without parts, no finished run.
    """
    dirs = [campaign_dirs] if isinstance(campaign_dirs, (str, Path)) else list(campaign_dirs)
    runs, manifests = combined_table(dirs)
    d = Path(dirs[0])
    workloads = sorted(set(runs["workload"]))
    for wl in (first_workload, parts_workload, whole_workload):
        if wl is not None and wl not in workloads:
            raise InputError(f"{d}: not a complete reproduction campaign: no run of workload "
                             f"{wl!r} (workloads: {', '.join(workloads) or 'none'})")
    box_workload = parts_workload or first_workload
    if parts_workload is not None:
        part_numbers = sorted({int(k) for k in runs.loc[runs["workload"] == parts_workload, "part"]
                               if not pd.isna(k)})
        if not part_numbers:
            raise InputError(f"{d}: workload {parts_workload!r} has no parts "
                             "(expected {python: ..., args: {parts: 16, ...}})")
    else:
        part_numbers = []
    ours = runs[runs["scheduler"].isin(POLICIES)
                & runs["workload"].isin([w for w in (first_workload, parts_workload, whole_workload)
                                         if w])]
    if not (ours["status"] == "done").any():
        raise InputError(f"{d}: no finished run of the reproduction yet "
                         f"({len(ours)} runs: run 'iosched campaign' first)")
    parts = part_values(runs, box_workload)
    table = policy_table(runs, parts, first_workload)
    present = [p for p in POLICIES if (runs["scheduler"] == p).any()]
    rep = Reproduction(name=" + ".join(str(m.get("name") or Path(x).name)
                                       for m, x in zip(manifests, dirs)),
                       tau=float(manifests[0].get("tau_s") or 600.0), runs=runs, parts=parts,
                       table=table[table["policy"].isin(present)].reset_index(drop=True),
                       unused=[u for u in unused_runs(runs, part_numbers, first_workload,
                                                      parts_workload or first_workload)
                               if u["policy"] in present],
                       claims=claims(table, parts), part_numbers=part_numbers,
                       first_workload=first_workload, parts_workload=box_workload)
    rep.whole_workload = whole_workload
    rep.by_seeds = parts_workload is None
    rep.whole = whole_table(runs, whole_workload) if whole_workload else None
    rep.seeds = seed_table(runs, first_workload)
    if rep.whole is not None:
        _whole_claims(rep)
    return rep


def seed_table(runs: pd.DataFrame, workload: str) -> pd.DataFrame:
    """Per policy and seed on ``workload``: mean waiting time (s), mean
    bounded slowdown and their ratios to sjf-bb (same seed).

    :returns: DataFrame ``policy``, ``seed``, ``waiting_time_mean``,
        ``bounded_slowdown_mean``, ``waiting_ratio``, ``bsld_ratio`` (finished
        runs only, policy order then seed).
    """
    sub = runs[(runs["workload"] == workload) & (runs["status"] == "done")
               & runs["scheduler"].isin(POLICIES)]
    out = pd.DataFrame({"policy": sub["scheduler"].astype(str), "seed": sub["seed"],
                        "waiting_time_mean": sub["waiting_time_mean"].astype(float),
                        "bounded_slowdown_mean": sub["bounded_slowdown_mean"].astype(float),
                        "waiting_ratio": sub["ratio_waiting_time_mean"].astype(float),
                        "bsld_ratio": sub["ratio_bounded_slowdown_mean"].astype(float)})
    order = {p: i for i, p in enumerate(POLICIES)}
    out = out.assign(_o=out["policy"].map(order)).sort_values(["_o", "seed"], kind="mergesort")
    return out.drop(columns="_o").reset_index(drop=True)


def whole_table(runs: pd.DataFrame, workload: str) -> pd.DataFrame:
    """:func:`seed_table` of the whole log, plus the maximum waiting time (s)."""
    t = seed_table(runs, workload)
    sub = runs[(runs["workload"] == workload) & (runs["status"] == "done")]
    mx = {(str(r.scheduler), r.seed): float(r.waiting_time_max)
          for r in sub.itertuples(index=False)} if "waiting_time_max" in sub.columns else {}
    t["waiting_time_max"] = [mx.get((p, s), math.nan) for p, s in zip(t["policy"], t["seed"])]
    return t


def _whole_claims(rep: Reproduction) -> None:
    """Add the whole-log value and verdict to claims (a) (fcfs-easy / sjf-bb
    and / plan-2 when plan-2 ran on the whole log) and (b) (1 - plan-2 /
    sjf-bb: the paper's abstract does not say whether its 20 % / 27 % are
    the whole log's (Fig. 6) or the parts' (Fig. 12), so (b) is judged on
    both), and claim (c)."""
    w = rep.whole.groupby("policy")[["waiting_time_mean", "bounded_slowdown_mean"]].median()
    for c in rep.claims:
        c["whole_value"], c["whole_verdict"] = math.nan, "no data"
        if c["unit"] != "factor":
            col = "waiting_time_mean" if c["id"] == "b1" else "bounded_slowdown_mean"
            if "plan-2" in w.index and "sjf-bb" in w.index and w.at["sjf-bb", col] > 0:
                c["whole_value"] = 1.0 - float(w.at["plan-2", col] / w.at["sjf-bb", col])
                c["whole_verdict"] = _verdict(c["id"], c["whole_value"])
            continue
        ref = BASELINE if BASELINE in c["measure"] else "plan-2"
        col = "waiting_time_mean" if "waiting" in c["measure"] else "bounded_slowdown_mean"
        if "fcfs-easy" in w.index and ref in w.index and w.at[ref, col] > 0:
            c["whole_value"] = float(w.at["fcfs-easy", col] / w.at[ref, col])
            c["whole_verdict"] = _verdict("a", c["whole_value"])
    # Section 4.2: "on the whole workload, [sjf-bb's] mean waiting time is
    # smaller by 4.5% than fcfs-bb"
    v = math.nan
    if "sjf-bb" in w.index and "fcfs-bb" in w.index and w.at["fcfs-bb", "waiting_time_mean"] > 0:
        v = 1.0 - float(w.at["sjf-bb", "waiting_time_mean"] / w.at["fcfs-bb", "waiting_time_mean"])
    rep.claims.append({"id": "c", "claim": "on the whole log, sjf-bb's mean waiting time is "
                                           "smaller than fcfs-bb's by 4.5%",
                       "paper": "4.5%", "measure": "1 - sjf-bb / fcfs-bb, mean waiting time",
                       "criterion": CRITERIA["c"][0], "unit": "improvement",
                       "parts_value": math.nan, "nb_parts": 0, "parts_verdict": "not measured",
                       "first_value": math.nan, "first_verdict": "not measured",
                       "whole_value": v, "whole_verdict": _verdict("c", v)})


# --------------------------------------------------------------------------
# figures


def plot_fig12(parts: pd.DataFrame, path, metric: str = "waiting") -> Path:
    """The paper's Fig. 12: box plots over the parts of a policy's mean
    waiting time (``metric="waiting"``) or mean bounded slowdown
    (``"bsld"``) divided by sjf-bb's on the same part, one box per policy in
    :data:`POLICIES` order (each part also drawn as a point), log y axis, a
    dashed line at 1.

    :param parts: :func:`part_values`.
    :returns: the PNG path. :raises InputError: unknown metric, unwritable path.
    """
    if metric not in _METRICS:
        raise InputError(f"fig12: metric must be one of {', '.join(_METRICS)}, got {metric!r}")
    col = f"{metric}_ratio"
    label = _METRICS[metric][1]
    fig = plots.new_figure(8, 4.5)
    ax = fig.subplots()
    data = [_finite(parts.loc[parts["policy"] == p, col]) for p in POLICIES]
    pos = list(range(1, len(POLICIES) + 1))
    nonempty = [(x, v) for x, v in zip(pos, data) if v.size]
    if nonempty:
        bp = ax.boxplot([v for _, v in nonempty], positions=[x for x, _ in nonempty], widths=0.6,
                        showfliers=False, patch_artist=True,
                        medianprops={"color": "black", "linewidth": 1.2})
        for box, (x, _) in zip(bp["boxes"], nonempty):
            box.set_facecolor(_COLORS[POLICIES[x - 1]])
            box.set_alpha(0.45)
        for x, v in nonempty:
            ax.plot(np.full(v.size, float(x)), v, linestyle="none", marker="o", markersize=3,
                    color=_COLORS[POLICIES[x - 1]], markeredgecolor="black", markeredgewidth=0.4)
    ax.set_xticks(pos, [f"{p}\n(n={v.size})" for p, v in zip(POLICIES, data)], fontsize="small")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=0.8)
    allv = np.concatenate(data) if data else np.array([])
    plots.log_yscale(ax, allv, 0.01)
    ax.set_ylabel(f"{label} / {BASELINE}'s (same part)")
    ax.set_title(f"{label.capitalize()} normalised to {BASELINE}, one point per three-week part",
                 fontsize="medium")
    return plots.save_png(fig, path, mkdir=True)


def tail_values(jobs: pd.DataFrame, top: int = TAIL_TOP) -> dict:
    """The *top* highest waiting times (s) per policy, decreasing.

    :param jobs: :func:`iosched.analysis.campaign.job_table` rows (all parts pooled).
    :returns: {policy: numpy array} for the policies of :data:`POLICIES`
        that have jobs, in that order.
    """
    return plots.tail_values(jobs, "waiting_time", top, schedulers=POLICIES)


def plot_tail(jobs: pd.DataFrame, path, top: int = TAIL_TOP) -> Path:
    """The *top* highest waiting times over all parts per policy: waiting
    time (s) against rank, one line per policy (log y axis when all are > 0).

    :param jobs: :func:`iosched.analysis.campaign.job_table` rows of the parts' runs.
    :returns: the PNG path. :raises InputError: unwritable path.
    """
    tails = tail_values(jobs, top)
    runs = jobs.groupby("scheduler")["run_id"].nunique() if len(jobs) else pd.Series(dtype=int)
    styles = {p: {"linewidth": 1.2, "color": _COLORS[p],
                  "label": f"{p} ({int(runs.get(p, 0))} parts)"} for p in tails}
    fig, ax = plots.tail_figure(tails, (8, 4.5), styles, symlog_linthresh=1.0)
    ax.set_ylabel("waiting time (s)")
    ax.set_title(f"The {top} highest waiting times per policy, all three-week parts pooled",
                 fontsize="medium")
    return plots.save_png(fig, path, mkdir=True)


# --------------------------------------------------------------------------
# text outputs


def _f(x, kind: str = "ratio") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if kind == "int":
        return str(int(x))
    if kind == "s":
        return f"{x:.0f}"
    if kind == "pct":
        return f"{100 * x:.1f}%"
    if kind == "factor":
        return f"{x:.1f}x" if abs(x) >= 10 else f"{x:.2f}x"
    return f"{x:.3f}" if abs(x) < 100 else f"{x:.1f}"


def _unused_lines(rep: Reproduction) -> list:
    if not rep.unused:
        return ["Every expected run finished."]
    rows = [[u["policy"], u["workload"], "-" if u["part"] is None else str(u["part"]),
             u["status"], u["run_id"] or "-", one_line(u["reason"])] for u in rep.unused]
    return ([f"{len(rep.unused)} expected runs are not used (not finished):", ""]
            + markdown_table(["policy", "workload", "part", "status", "run", "reason"], rows))


def _parts_note(rep: Reproduction) -> str:
    n = len(rep.part_numbers)
    note = f"{n} parts in the campaign (parts {', '.join(map(str, rep.part_numbers))})"
    if n != PAPER_NB_PARTS:
        note += f"; the paper has {PAPER_NB_PARTS}"
    return note


def render_table_md(rep: Reproduction) -> str:
    """``table.md``: the reproduction table and the runs not used.

    :param rep: a :class:`Reproduction` (its ``table``: one row per policy;
        ratios are dimensionless, waiting times in s, bounded slowdown with
        tau = 600 s).
    :returns: Markdown text (deterministic for the same campaign).
    """
    t = rep.table
    lines = [f"# Reproduction of Kopanski & Rzadca (Euro-Par 2021): campaign {rep.name}", "",
             f"Ratios: a policy's value divided by {BASELINE}'s on the same workload part. "
             f"Waiting times in s; bounded slowdown max(1, F / max(D, tau)), tau = {rep.tau:g} s "
             f"(the paper: 600 s). "
             + (f"Box statistics are over the seeds of the first 1000 jobs (workload "
                f"`{rep.first_workload}`), one point per seed; `parts` = seeds where the "
                f"policy's and {BASELINE}'s runs finished. " if rep.by_seeds else
                f"Three-week parts: workload `{rep.parts_workload}`, {_parts_note(rep)}; "
                f"`parts` = parts where the policy's and {BASELINE}'s runs finished. ")
             + f"First 1000 jobs: workload `{rep.first_workload}`.", "",
             ("## First 1000 jobs: ratios to sjf-bb (median / mean / min / max over seeds)"
              if rep.by_seeds else
              "## Three-week parts: ratios to sjf-bb (median / mean / min / max over parts)"), ""]
    rows = [[r.policy, _f(r.nb_parts, "int"),
             *(_f(getattr(r, f"waiting_ratio_{s}")) for s in _STATS),
             *(_f(getattr(r, f"bsld_ratio_{s}")) for s in _STATS)] for r in t.itertuples()]
    lines += markdown_table(["policy", "parts", *(f"waiting {s}" for s in _STATS),
                        *(f"bsld {s}" for s in _STATS)], rows)
    undef = undefined_ratios(rep.parts)
    if undef:
        lines += ["", f"Undefined ratios ({BASELINE}'s value is 0 on that part; left out of the "
                      "statistics): " + ", ".join(f"{p} part {k} {m}" for p, k, m in undef) + "."]
    lines += ["", "## First 1000 jobs (mean over seeds)", ""]
    rows = [[r.policy, _f(r.first_waiting_time_mean_s, "s"), _f(r.first_bounded_slowdown_mean),
             _f(r.first_waiting_ratio), _f(r.first_bsld_ratio)] for r in t.itertuples()]
    lines += markdown_table(["policy", "mean waiting time (s)", "mean bounded slowdown",
                        f"waiting / {BASELINE}", f"bsld / {BASELINE}"], rows)
    if rep.seeds is not None and rep.seeds["seed"].nunique() > 1:
        lines += ["", "## First 1000 jobs: every seed", ""]
        rows = [[r.policy, str(r.seed), _f(r.waiting_time_mean, "s"), _f(r.bounded_slowdown_mean),
                 _f(r.waiting_ratio), _f(r.bsld_ratio)] for r in rep.seeds.itertuples()]
        lines += markdown_table(["policy", "seed", "mean waiting time (s)", "mean bounded slowdown",
                                 f"waiting / {BASELINE}", f"bsld / {BASELINE}"], rows)
    if rep.whole is not None:
        lines += ["", f"## Whole log (workload `{rep.whole_workload}`)", ""]
        rows = [[r.policy, str(r.seed), _f(r.waiting_time_mean, "s"), _f(r.waiting_time_max, "s"),
                 _f(r.bounded_slowdown_mean), _f(r.waiting_ratio), _f(r.bsld_ratio)]
                for r in rep.whole.itertuples()]
        lines += markdown_table(["policy", "seed", "mean waiting time (s)", "max waiting time (s)",
                                 "mean bounded slowdown", f"waiting / {BASELINE}",
                                 f"bsld / {BASELINE}"], rows)
    lines += ["", "## Runs not used", ""] + _unused_lines(rep)
    lines += ["", "Figures: fig12_waiting.png, fig12_bsld.png (box plots over the parts, the "
                  f"paper's Fig. 12), tail.png (the {TAIL_TOP} highest waiting times per policy, "
                  "all parts pooled). Same numbers: table.csv."]
    return "\n".join(lines) + "\n"


def render_claims_md(rep: Reproduction) -> str:
    """``claims.md``: the paper's claims (Kopanski & Rzadca, Euro-Par 2021,
    abstract and evaluation), our measures and computed verdicts.

    :param rep: a :class:`Reproduction` (its ``claims``: one row per claim).
    :returns: Markdown text (deterministic for the same campaign).
    """
    lines = [f"# Claims of Kopanski & Rzadca (Euro-Par 2021) against campaign {rep.name}", "",
             "Source: J. Kopanski, K. Rzadca, \"Plan-based Job Scheduling for Supercomputers "
             "with Shared Burst Buffers\", Euro-Par 2021 (arXiv 2109.00082v2). (a) is from the "
             "paper's evaluation on KTH-SP2 (as summarised in the project's issue #3); (b) is "
             "from its abstract (\"improves the "
             "mean waiting time by over 20% and mean bounded slowdown by 27% compared to the "
             "burst-buffer-aware SJF-EASY-backfilling\"). We check each on the three-week parts "
             f"(median over parts of the per-part ratio; {_parts_note(rep)}) and on the first "
             "1000 jobs" + (" and on the whole log" if rep.whole is not None else "")
             + ". Verdicts are computed from the numbers with the stated criterion.", ""]
    rows = []
    for c in rep.claims:
        kind = "factor" if c["unit"] == "factor" else "pct"
        row = [c["id"], c["claim"], c["paper"], c["measure"],
               f"{_f(c['parts_value'], kind)} (n={c['nb_parts']})", c["parts_verdict"],
               _f(c["first_value"], kind), c["first_verdict"]]
        if rep.whole is not None:
            row += [_f(c.get("whole_value", math.nan), kind), c.get("whole_verdict", "no data")]
        rows.append(row + [c["criterion"]])
    where = "seeds (median)" if rep.by_seeds else "parts (median)"
    head = ["", "claim", "paper", "measure", f"ours: {where}", "verdict",
            "ours: first 1000 jobs (mean over seeds)", "verdict (first 1000)"]
    if rep.whole is not None:
        head += ["ours: whole log", "verdict (whole log)"]
    lines += markdown_table(head + ["criterion"], rows)
    lines += ["", "## Runs not used", ""] + _unused_lines(rep)
    return "\n".join(lines) + "\n"


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot write ({e.strerror or e})") from None


def build(campaign_dir, out_dir="results/bb_reproduction", first_workload: str = FIRST_WORKLOAD,
          parts_workload: str | None = PARTS_WORKLOAD, top: int = TAIL_TOP,
          whole_workload: str | None = None) -> dict:
    """Write the reproduction's table, figures and claims (module docstring).

    :param campaign_dir: the campaign output folder, or a list of them.
    :param out_dir: output folder (created if needed).
    :param parts_workload: None: box plots over the seeds of the first 1000 jobs.
    :param whole_workload: the whole log's label (optional).
    :param top: highest waiting times per policy in ``tail.png``.
    :returns: dict ``paths`` ({name: Path}) and ``reproduction``
        (:class:`Reproduction`).
    :raises InputError: see :func:`analyse`; unreadable jobs CSV of a
        finished run; unwritable output folder.
    """
    rep = analyse(campaign_dir, first_workload, parts_workload, whole_workload)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{out}: cannot create the output folder: {e.strerror or e}") from None
    paths = {"table.csv": out / "table.csv", "table.md": out / "table.md",
             "claims.md": out / "claims.md"}
    try:
        rep.table.to_csv(paths["table.csv"], index=False, lineterminator="\n")
    except OSError as e:
        raise InputError(f"{paths['table.csv']}: cannot write ({e.strerror or e})") from None
    _write_text(paths["table.md"], render_table_md(rep))
    _write_text(paths["claims.md"], render_claims_md(rep))
    for metric in _METRICS:
        paths[f"fig12_{metric}.png"] = plot_fig12(rep.parts, out / f"fig12_{metric}.png", metric)
    tail_wl = whole_workload or rep.parts_workload
    done = rep.runs[(rep.runs["workload"] == tail_wl) & (rep.runs["status"] == "done")
                    & rep.runs["scheduler"].isin(POLICIES)]
    jobs = pd.concat([job_table(d, g.drop(columns="campaign_dir"), tau=rep.tau)
                      for d, g in done.groupby("campaign_dir", sort=True)], ignore_index=True) \
        if len(done) else job_table(Path(rep.runs["campaign_dir"].iloc[0]), done.drop(
            columns="campaign_dir"), tau=rep.tau)
    paths["tail.png"] = plot_tail(jobs, out / "tail.png", top=top)
    return {"paths": paths, "reproduction": rep}


# --------------------------------------------------------------------------
# command line


@click.command("bb", cls=OneLineErrorCommand)
@click.argument("campaign_dir", metavar="CAMPAIGN_DIR...", nargs=-1, required=True,
                type=click.Path(file_okay=False))
@click.option("--output", "-o", default="results/bb_reproduction", show_default=True,
              type=click.Path(file_okay=False), help="Output folder.")
@click.option("--first-workload", default=FIRST_WORKLOAD, show_default=True,
              help="Workload label of the first 1000 jobs.")
@click.option("--parts-workload", default=PARTS_WORKLOAD, show_default=True,
              help="Workload label of the three-week parts ('none': box plots over the seeds "
                   "of the first 1000 jobs).")
@click.option("--whole-workload", default=None,
              help="Workload label of the whole log (claim (a) is also checked on it).")
@click.option("--top", default=TAIL_TOP, show_default=True, type=click.IntRange(min=1),
              help="Highest waiting times per policy in tail.png.")
def reproduction_command(campaign_dir, output, first_workload, parts_workload, top,
                         whole_workload):
    """Table, figures and claims of the Kopanski & Rzadca (Euro-Par 2021)
    reproduction from the campaigns in CAMPAIGN_DIR... (examples/bb_reproduction*.yaml;
    several folders are analysed together, ratios to the sjf-bb runs of any of them).

    Exit status: 0 all expected runs finished, 1 written but some runs
    failed or are missing (listed), 2 error.
    """
    try:
        res = build(list(campaign_dir), output, first_workload,
                    None if parts_workload == "none" else parts_workload, top, whole_workload)
    except InputError as e:
        raise CommandError(one_line(e)) from None
    rep = res["reproduction"]
    click.echo(f"bb reproduction: {', '.join(str(p) for p in res['paths'].values())}")
    for c in rep.claims:
        click.echo(f"claim {c['id']} ({c['measure']}): parts {c['parts_verdict']}, "
                   f"first 1000 {c['first_verdict']}")
    for u in rep.unused:
        part = "" if u["part"] is None else f" part {u['part']}"
        head = {"failed": "FAILED", "pending": "PENDING", "missing": "MISSING"}[u["status"]]
        ident = u["run_id"] or f"{u['policy']} {u['workload']}{part}"
        click.echo(f"{head} {ident}: {one_line(u['reason'])}")
    if rep.unused:
        click.echo(f"bb reproduction: incomplete campaign: {len(rep.unused)} expected runs not "
                   "finished (listed above and in table.md)")
        sys.exit(1)
