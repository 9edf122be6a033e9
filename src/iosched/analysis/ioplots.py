"""Figures and report blocks of runs' I/O records (:mod:`iosched.analysis.io`).

* :func:`plot_io_timeline` -- one run over time: throughput per tier
  (bytes/s, each phase's mean rate), burst-buffer occupancy (bytes held
  on burst-buffer nodes) and a family's bandwidth shares against their
  capacity (list/pack's average bandwidths against B, pfsbw's throughput
  estimates against the limit), each panel only when the record has it;
* :func:`plot_tier_bytes` -- bytes read from and written to each tier, per
  run;
* :func:`plot_input_sources` -- where inputs were read from, per run
  (locality's cache hits and shared loads, dad's local and remote reads);
* :func:`io_blocks` -- the report blocks (:func:`iosched.analysis.report.render_html`)
  of several runs: tables and the figures above. The demo and the campaign
  report use it.

Same style as :mod:`iosched.analysis.plots`: Agg canvas, fixed sizes,
deterministic PNG bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iosched.analysis.io import (NETWORK, TIERS, IORecord, hold_capacity, hold_steps,
                                 hold_summary, input_sources, throughput_steps, tier_bytes)
from iosched.analysis.plots import (LOG_SPAN, RESAMPLE_ABOVE, RESAMPLE_BINS, new_figure, resample_steps,
                                    save_png)
from iosched.analysis.units import bytes_unit, format_bytes, time_unit
from iosched.sched.executor import BB_TIER, DISK_TIER, PFS_TIER
from iosched.sched.iorecord import BANDWIDTH, SOURCES

__all__ = ["plot_io_timeline", "plot_tier_bytes", "plot_input_sources", "io_blocks",
           "TIER_LABELS", "SOURCE_LABELS", "EMPTY_NOTE"]

#: What :func:`io_blocks` says of records without any I/O.
EMPTY_NOTE = ("The runs' I/O records are empty: their jobs have no I/O model (the job field io, "
              "docs/io-job-model.md) that moves bytes, and the scheduler holds no I/O resource.")
#: Readable tier names.
TIER_LABELS = {PFS_TIER: "PFS", BB_TIER: "burst buffers", DISK_TIER: "node-local disks",
               NETWORK: "network between nodes"}
_TIER_COLOURS = {PFS_TIER: "tab:red", BB_TIER: "tab:blue", DISK_TIER: "tab:green",
                 NETWORK: "tab:grey"}
#: Readable input sources.
SOURCE_LABELS = {"pfs": "read from the PFS", "local": "local copy", "remote": "remote copy",
                 "cached": "cached (no read)", "loading": "being loaded by another job"}
#: Bins of the PFS throughput drawn beside the bandwidth shares (averages).
_AVERAGE_BINS = 100
_SOURCE_COLOURS = {"pfs": "tab:red", "local": "tab:green", "remote": "tab:orange",
                   "cached": "tab:blue", "loading": "tab:purple"}


def _draw_steps(ax, t, v, factor_t, factor_v, nbins, lo, hi, **style):
    """A step series on ``ax`` (time / ``factor_t``, value / ``factor_v``),
    as bin means over ``nbins`` bins of [lo, hi] when ``nbins``."""
    if not t.size:
        return
    if nbins:
        edges = np.linspace(lo, hi, nbins + 1)
        ax.stairs(resample_steps(t, v, edges) / factor_v, edges / factor_t, **style)
    else:
        ax.step(t / factor_t, v / factor_v, where="post", **style)


def plot_io_timeline(record: IORecord, path, title: str = "") -> Path:
    """PNG of one run's I/O over time (module documentation).

    :param record: the run's :class:`~iosched.analysis.io.IORecord`.
    :param path: the PNG to write.
    :param title: the run's name in the figure title.
    :returns: the path. A long run (more than
        :data:`~iosched.analysis.plots.RESAMPLE_ABOVE` steps in a curve) is
        drawn as time-weighted bin means over
        :data:`~iosched.analysis.plots.RESAMPLE_BINS` bins (said in the
        title). :raises InputError: an unwritable path.
    """
    tput = {tier: throughput_steps(record.phases, tier) for tier in TIERS}
    tput = {k: v for k, v in tput.items() if v[0].size}
    bb = hold_steps(record.holds, BB_TIER)
    bw = hold_steps(record.holds, BANDWIDTH)
    series = [s for s in (*tput.values(), bb, bw) if s[0].size]
    lo = min((float(s[0][0]) for s in series), default=0.0)
    hi = max((float(s[0][-1]) for s in series), default=1.0)
    tunit, tf = time_unit(hi)
    steps = max((s[0].size for s in series), default=0)
    nbins = RESAMPLE_BINS if steps > RESAMPLE_ABOVE and hi > lo else None
    panels = 1 + bool(bb[0].size) + bool(bw[0].size)
    fig = new_figure(10, 2.6 * panels + 0.8)
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    ax = axes[0]
    rates = np.concatenate([v for _, v in tput.values()]) if tput else np.zeros(0)
    runit, rf = bytes_unit(rates)
    for tier in reversed(list(tput)):        # the PFS on top
        t, v = tput[tier]
        _draw_steps(ax, t, v, tf, rf, nbins, lo, hi, color=_TIER_COLOURS[tier],
                    linewidth=1.2 if tier == PFS_TIER else 0.9, label=TIER_LABELS[tier])
    if tput:
        ax.set_ylabel(f"throughput ({runit}/s)")
        handles, names = ax.get_legend_handles_labels()
        ax.legend(handles[::-1], names[::-1], fontsize="small", loc="upper right")
    else:
        ax.text(0.5, 0.5, "no phase with its own start and end: the bytes move inside static "
                          "jobs at times the scheduler is not told (bytes per tier only)",
                transform=ax.transAxes, ha="center", va="center", fontsize="small", wrap=True)
        ax.set_yticks([])
        ax.set_ylabel("throughput")
    ax.set_title("Throughput per tier (each phase's mean rate, summed)", fontsize="medium")
    i = 1
    if bb[0].size:
        ax = axes[i]
        i += 1
        cap = hold_capacity(record.holds, BB_TIER)
        bunit, bf = bytes_unit(np.concatenate([bb[1], [cap or 0.0]]))
        _draw_steps(ax, bb[0], bb[1], tf, bf, nbins, lo, hi, color="tab:blue", linewidth=1.0,
                    label="bytes held")
        if cap:
            ax.axhline(cap / bf, color="tab:blue", linestyle="--", linewidth=0.8,
                       label="capacity (all burst-buffer nodes)")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"held ({bunit})")
        ax.legend(fontsize="small", loc="upper right")
        ax.set_title("Burst-buffer occupancy (bytes held on burst-buffer nodes)", fontsize="medium")
    if bw[0].size:
        ax = axes[i]
        cap = hold_capacity(record.holds, BANDWIDTH)
        pfs = tput.get(PFS_TIER)
        wunit, wf = bytes_unit(np.concatenate([bw[1], [cap or 0.0],
                                              pfs[1] if pfs is not None else []]))
        if pfs is not None and hi > lo:
            # the shares are averages: compare them with the PFS throughput's bin means
            wide = _AVERAGE_BINS
            width = (hi - lo) / wide
            wu = time_unit(width)
            _draw_steps(ax, pfs[0], pfs[1], tf, wf, wide, lo, hi, color="tab:red", linewidth=0.8,
                        label=f"PFS throughput (means over {width / wu[1]:.3g} {wu[0]})")
        _draw_steps(ax, bw[0], bw[1], tf, wf, nbins, lo, hi, color="tab:purple", linewidth=1.4,
                    label="shares held by running jobs")
        if cap:
            ax.axhline(cap / wf, color="black", linestyle="--", linewidth=0.8,
                       label=f"capacity {cap / wf:.3g} {wunit}/s")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"bandwidth ({wunit}/s)")
        ax.legend(fontsize="small", loc="upper right")
        ax.set_title("I/O bandwidth reserved by the scheduler against its capacity",
                     fontsize="medium")
    axes[-1].set_xlabel(f"time ({tunit})")
    how = ""
    if nbins:
        width = (hi - lo) / nbins
        wu = time_unit(width)
        how = f"; means over {nbins} bins of {width / wu[1]:.3g} {wu[0]}"
    fig.suptitle(f"I/O over time{', ' + title if title else ''}{how}", fontsize="medium")
    return save_png(fig, path, mkdir=True)


def plot_tier_bytes(records: dict, path) -> Path:
    """PNG of the bytes moved per tier (:func:`~iosched.analysis.io.tier_bytes`),
    one bar per run and tier: read from the tier plus written to it (the
    network: bytes between compute nodes, once); a log axis when the bars
    span more than :data:`~iosched.analysis.plots.LOG_SPAN`.

    :param records: run label -> :class:`~iosched.analysis.io.IORecord`, in order.
    :returns: the path. :raises InputError: an unwritable path.
    """
    tables = {label: tier_bytes(r.phases).set_index("tier") for label, r in records.items()}
    tiers = [t for t in TIERS if any(t in tb.index for tb in tables.values())]

    def through(tb, t):
        if t not in tb.index:
            return 0.0
        return float(tb.loc[t, "read"] + (tb.loc[t, "written"] if t != NETWORK else 0.0))

    values = np.array([through(tb, t) for tb in tables.values() for t in tiers])
    pos = values[values > 0]
    log = bool(pos.size) and float(pos.max()) / float(pos.min()) > LOG_SPAN
    unit, f = ("B", 1.0) if log else bytes_unit(values)
    n = max(1, len(tables))
    fig = new_figure(10, min(9.0, 1.6 + 0.32 * max(1, len(tiers)) * n))
    ax = fig.subplots()
    height = 0.8 / n
    for j, (label, tb) in enumerate(tables.items()):
        y = np.arange(len(tiers)) + (j - (n - 1) / 2) * height
        ax.barh(y, [through(tb, t) / f for t in tiers], height=height, color=f"C{j % 10}",
                label=label)
    ax.set_yticks(np.arange(len(tiers)), [TIER_LABELS[t] for t in tiers])
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
        ax.set_xlim(left=float(pos.min()) / 2)
        ax.set_xlabel("bytes (log scale)")
    else:
        ax.set_xlabel(f"bytes ({unit})")
    if tiers:
        ax.legend(fontsize="small", loc="lower right")
    else:
        ax.text(0.5, 0.5, "no I/O recorded", transform=ax.transAxes, ha="center")
    ax.set_title("Bytes moved through each tier (read from it + written to it; the network: "
                 "between compute nodes)", fontsize="medium")
    return save_png(fig, path, mkdir=True)


def plot_input_sources(records: dict, path) -> Path:
    """PNG of where inputs were read from (:func:`~iosched.analysis.io.input_sources`):
    one stacked bar per run, the share of its inputs per source.

    :param records: run label -> :class:`~iosched.analysis.io.IORecord`, in order.
    :returns: the path. :raises InputError: an unwritable path.
    """
    tables = {label: input_sources(r.inputs).set_index("source") for label, r in records.items()}
    fig = new_figure(10, 1.4 + 0.45 * max(1, len(tables)))
    ax = fig.subplots()
    labels = list(tables)
    left = np.zeros(len(labels))
    for src in SOURCES:
        counts = np.array([tb.loc[src, "inputs"] if src in tb.index else 0 for tb in tables.values()],
                          dtype=float)
        total = np.array([max(1, int(tb["inputs"].sum())) for tb in tables.values()], dtype=float)
        share = counts / total
        if counts.any():
            ax.barh(np.arange(len(labels)), share, left=left, color=_SOURCE_COLOURS[src],
                    label=SOURCE_LABELS[src])
            left += share
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the inputs of started jobs")
    ax.legend(fontsize="small", ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.25),
              frameon=False)
    ax.set_title("Where inputs were read from", fontsize="medium")
    return save_png(fig, path, mkdir=True)


_TIERS_NOTE = ("Read from / written to each tier by phases that completed; the network between "
               "nodes: bytes between compute nodes (both columns). Unfinished: phases that "
               "started and did not complete successfully (moved in part). Times: phase (each "
               "phase's start and end are known), or inside jobs (static jobs: only the bytes "
               "are known).")
_HOLDS_NOTE = ("burst_buffer: bytes held on burst-buffer nodes (capacity: all of them); "
               "io_bandwidth: the I/O bandwidth the scheduler reserves for running jobs "
               "(list/pack: each job's average bandwidth against B; pfsbw: each job's estimated "
               "throughput when it started, against the limit). Mean: time-weighted, from the "
               "first hold to the last.")


def _section(title: str, note: str, header: list, rows: list) -> list:
    """A titled table with its note, as report blocks."""
    return [("h3", title), ("p", note), ("table", header, rows)]


def io_blocks(records: dict, figdir, rel: str = "figures", prefix: str = "io") -> list:
    """Report blocks (:func:`iosched.analysis.report.render_markdown`) of the
    I/O records of several runs: what the record is, the bytes per tier
    (table and :func:`plot_tier_bytes`), the holds against their capacity
    (table), the input sources when any (table and
    :func:`plot_input_sources`), and each run's :func:`plot_io_timeline`.

    :param records: run label -> :class:`~iosched.analysis.io.IORecord` (runs
        without a record left out by the caller), in order.
    :param figdir: folder the PNGs are written to.
    :param rel: the folder as the report refers to it.
    :param prefix: file name prefix of the figures (``io_tiers.png``...).
    :returns: the blocks (none for no record; a heading and
        :data:`EMPTY_NOTE` when no record holds any row). :raises
        InputError: an unwritable figure.
    """
    if not records:
        return []
    if not any(len(r.phases) or len(r.holds) or len(r.inputs) for r in records.values()):
        return [("h2", "I/O"), ("p", EMPTY_NOTE)]
    figdir = Path(figdir)
    blocks: list = [("h2", "I/O"),
                    ("p", "From each run's I/O record, written by the scheduler (io_phases.csv, "
                          "io_holds.csv, io_inputs.csv; docs/outputs.md): the bytes each phase "
                          "moved between tiers and, for phases run as their own Batsim jobs, "
                          "when; what jobs held. Throughputs are each phase's mean rate (bytes "
                          "over its duration), summed; the bytes of static jobs move at times "
                          "the scheduler is not told and are counted per tier only.")]
    rows = []
    for label, r in records.items():
        for rec in tier_bytes(r.phases).itertuples(index=False):
            moved = rec.read + (rec.written if rec.tier != NETWORK else 0.0)
            timing = ("phase" if rec.untimed == 0 else "inside jobs (not timed)"
                      if rec.untimed >= moved else "partly timed")
            rows.append([label, TIER_LABELS[rec.tier], format_bytes(rec.read),
                         format_bytes(rec.written), format_bytes(rec.unfinished), timing])
    blocks += _section("Bytes moved per tier", _TIERS_NOTE,
                       ["run", "tier", "read from", "written to", "in unfinished phases", "times"],
                       rows or [["-", "no I/O recorded", "0 B", "0 B", "0 B", "-"]])
    name = f"{prefix}_tiers.png"
    plot_tier_bytes(records, figdir / name)
    blocks.append(("img", f"{rel}/{name}", "Bytes moved per tier and run"))
    hold_rows = []
    for label, r in records.items():
        for h in hold_summary(r.holds).itertuples(index=False):
            per = "/s" if h.unit == "bytes/s" else ""
            cap = None if np.isnan(h.capacity) else h.capacity
            share = "-" if not cap else f"{h.peak / cap:.2f}"
            hold_rows.append([label, h.kind, format_bytes(cap, per=per),
                              format_bytes(h.peak, per=per), format_bytes(h.mean, per=per), share])
    if hold_rows:
        blocks += _section("Held by running jobs", _HOLDS_NOTE,
                           ["run", "kind", "capacity", "peak", "mean", "peak / capacity"], hold_rows)
    src_rows = []
    for label, r in records.items():
        for s in input_sources(r.inputs).itertuples(index=False):
            src_rows.append([label, SOURCE_LABELS[s.source], s.inputs, format_bytes(s.bytes)])
    if src_rows:
        blocks.append(("h3", "Where inputs were read from"))
        blocks.append(("table", ["run", "source", "inputs", "bytes"], src_rows))
        name = f"{prefix}_inputs.png"
        plot_input_sources({k: r for k, r in records.items() if len(r.inputs)}, figdir / name)
        blocks.append(("img", f"{rel}/{name}", "Share of the inputs per source and run"))
    blocks.append(("h3", "I/O over time"))
    for label, r in records.items():
        name = f"{prefix}_timeline_{label}.png"
        plot_io_timeline(r, figdir / name, label)
        blocks.append(("img", f"{rel}/{name}",
                       f"Throughput per tier, burst-buffer occupancy and reserved bandwidth, {label}"))
    return blocks
