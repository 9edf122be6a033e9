"""A run's I/O record as tables and time series.

The record is what the scheduler wrote into the run's folder
(:mod:`iosched.sched.iorecord`, ``docs/outputs.md``): the flows of every
phase (``io_phases.csv``), what jobs held (``io_holds.csv``) and where
inputs were read from (``io_inputs.csv``); times in s, sizes in bytes,
rates in bytes/s. This module reads it (:func:`load_io`) and derives:

* :func:`tier_bytes` -- bytes moved per storage tier (read from it,
  written to it), the network between compute nodes apart;
* :func:`throughput_steps` -- a tier's throughput over time (bytes/s), a
  step function: each phase with its own start and end (timing ``phase``)
  adds its mean rate ``bytes / (end - start)`` over ``[start, end)``. It is
  the mean over each phase, not SimGrid's instantaneous rate (which varies
  inside a phase with contention); flows of timing ``job`` (a static job's
  own profile, whose I/O times the scheduler is not told) are not drawn;
* :func:`hold_steps` -- the amount held over time of a hold kind
  (burst-buffer bytes, a family's bandwidth shares);
* :func:`hold_summary` -- peak and mean of each hold kind against its capacity;
* :func:`input_sources` -- inputs per source (PFS, local, remote, cached,
  being loaded);
* :func:`run_io_metrics` -- the run's I/O metrics of ``metrics.json``
  (bytes per tier, PFS throughput and utilization, burst-buffer
  utilization: the leaderboard's ``io`` hook).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd

from iosched.analysis.plots import step_changes
from iosched.errors import InputError
from iosched.sched.executor import BB_TIER, COMPUTE_TIER, DISK_TIER, PFS_TIER
from iosched.sched.iorecord import (BANDWIDTH, HOLD_COLUMNS, HOLDS_FILE, INPUT_COLUMNS,
                                    INPUTS_FILE, PHASE_COLUMNS, PHASES_FILE, SOURCES, TIMING_PHASE)

__all__ = ["IORecord", "NETWORK", "TIERS", "load_io", "has_io", "tier_bytes", "throughput_steps",
           "hold_steps", "hold_capacity", "hold_summary", "input_sources", "step_series",
           "run_io_metrics", "HOOK_TIERS"]

#: The network between compute nodes, in the tables beside the storage tiers.
NETWORK = "network"
#: The tiers of :func:`tier_bytes` and :func:`throughput_steps`, in order.
TIERS = (PFS_TIER, BB_TIER, DISK_TIER, NETWORK)
_OK = "COMPLETED_SUCCESSFULLY"


class IORecord(NamedTuple):
    """A run's I/O record: three DataFrames with the columns of
    :data:`~iosched.sched.iorecord.PHASE_COLUMNS`,
    :data:`~iosched.sched.iorecord.HOLD_COLUMNS` and
    :data:`~iosched.sched.iorecord.INPUT_COLUMNS` (times in s, ``bytes`` and
    ``amount`` as floats; an empty field is NaN)."""

    phases: pd.DataFrame
    holds: pd.DataFrame
    inputs: pd.DataFrame


_NUMERIC = {"bytes", "ready", "start", "end", "amount", "capacity", "time"}


def _read(path: Path, columns: tuple) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the I/O record ({exc})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{path}: not an I/O record: column {missing[0]!r} is missing")
    for c in columns:
        if c in _NUMERIC:
            num = pd.to_numeric(df[c].replace("", np.nan), errors="coerce")
            bad = num.isna() & (df[c] != "")
            if bad.any():
                raise InputError(f"{path}: column {c}: {df[c][bad].iloc[0]!r} is not a number")
            df[c] = num.astype(float)
    return df[list(columns)]


def has_io(run_dir) -> bool:
    """Whether the run folder holds an I/O record (its ``io_phases.csv``)."""
    return (Path(run_dir) / PHASES_FILE).is_file()


def load_io(run_dir) -> Optional[IORecord]:
    """The I/O record of a run folder, or None when it has none (a run of
    a scheduler outside the core, or run with ``io_record`` off).

    :raises InputError: a record file unreadable, a column missing or not
        numeric (one line naming the file).
    """
    d = Path(run_dir)
    if not has_io(d):
        return None
    return IORecord(_read(d / PHASES_FILE, PHASE_COLUMNS), _read(d / HOLDS_FILE, HOLD_COLUMNS),
                    _read(d / INPUTS_FILE, INPUT_COLUMNS))


def _tier_mask(phases: pd.DataFrame, tier: str, side: str = "any") -> pd.Series:
    """Rows of ``phases`` moving bytes of ``tier`` (:data:`TIERS`): out of
    it (``side="src"``), into it (``"dst"``) or either (``"any"``); the
    network: flows between compute nodes."""
    if tier == NETWORK:
        return (phases["src"] == COMPUTE_TIER) & (phases["dst"] == COMPUTE_TIER)
    src, dst = phases["src"] == tier, phases["dst"] == tier
    return src if side == "src" else dst if side == "dst" else src | dst


def tier_bytes(phases: pd.DataFrame) -> pd.DataFrame:
    """Bytes moved per tier, one row per tier of :data:`TIERS` that moved
    any, in that order.

    Columns: ``tier``; ``read`` (bytes out of the tier), ``written``
    (bytes into it) -- both of phases that completed successfully (or
    static jobs that did), whose bytes all moved; for the network, both are
    the bytes between compute nodes; ``unfinished`` (bytes of phases that
    started and did not complete successfully: moved in part, how much is
    not known); ``untimed`` (the part of ``read + written`` moved at times
    not known, timing ``job``).
    """
    done = phases["state"] == _OK
    timed = phases["timing"] == TIMING_PHASE
    rows = []
    for tier in TIERS:
        out, into = _tier_mask(phases, tier, "src"), _tier_mask(phases, tier, "dst")
        b = phases["bytes"]
        rec = {"tier": tier, "read": float(b[out & done].sum()), "written": float(b[into & done].sum()),
               "unfinished": float(b[(out | into) & ~done].sum())}
        rec["untimed"] = float(b[(out | into) & done & ~timed].sum())
        if tier == NETWORK:
            rec["written"] = rec["read"]
        if rec["read"] or rec["written"] or rec["unfinished"]:
            rows.append(rec)
    return pd.DataFrame(rows, columns=["tier", "read", "written", "unfinished", "untimed"])


def step_series(starts, ends, amounts) -> tuple[np.ndarray, np.ndarray]:
    """The sum over intervals ``[starts[i], ends[i])`` (s) of ``amounts[i]``
    as a step function: ``(t, v)``, equal-length arrays, ``v[i]`` from
    ``t[i]`` to ``t[i+1]`` (0 after the last interval); ties merged, sums
    within 1e-9 of the largest amount of 0 set to 0 (float round-off)."""
    s, e, a = (np.asarray(x, dtype=float) for x in (starts, ends, amounts))
    t, v = step_changes(np.concatenate([s, e]), np.concatenate([a, -a]))
    if v.size:
        v[np.abs(v) < 1e-9 * max(1.0, float(np.abs(a).max()))] = 0.0
    return t, v


def throughput_steps(phases: pd.DataFrame, tier: str) -> tuple[np.ndarray, np.ndarray]:
    """Throughput of ``tier`` (:data:`TIERS`) over time in bytes/s, from
    the phases with their own times (timing ``phase``, ended, ``end >
    start``): each adds ``bytes / (end - start)`` on ``[start, end)``
    (module documentation: a mean per phase). Bytes into and out of a tier
    count once each. Returns :func:`step_series`'s ``(t, v)``."""
    m = _tier_mask(phases, tier) & (phases["timing"] == TIMING_PHASE) & phases["end"].notna()
    p = phases[m]
    p = p[p["end"] > p["start"]]
    rate = p["bytes"] / (p["end"] - p["start"])
    return step_series(p["start"], p["end"], rate)


def hold_steps(holds: pd.DataFrame, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The amount of hold ``kind`` (e.g. ``burst_buffer``: bytes over every
    burst-buffer node) held over time: :func:`step_series` of the holds'
    ``[start, end)`` (a hold not ended by the end of the simulation is left
    out)."""
    h = holds[(holds["kind"] == kind) & holds["end"].notna()]
    return step_series(h["start"], h["end"], h["amount"])


def hold_capacity(holds: pd.DataFrame, kind: str) -> Optional[float]:
    """The capacity of hold ``kind`` (the whole tier's: every burst-buffer
    node's bytes, B, the limit), or None when the family gives none."""
    h = holds.loc[(holds["kind"] == kind) & holds["capacity"].notna(), "capacity"]
    return None if h.empty else float(h.max())


def input_sources(inputs: pd.DataFrame) -> pd.DataFrame:
    """Inputs read per source: one row per source of
    :data:`~iosched.sched.iorecord.SOURCES` that occurs, in that order,
    with ``inputs`` (count) and ``bytes`` (their sizes: read for ``pfs``,
    ``local`` and ``remote``; not read for ``cached`` and ``loading``)."""
    rows = []
    for src in SOURCES:
        sel = inputs[inputs["source"] == src]
        if len(sel):
            rows.append({"source": src, "inputs": int(len(sel)), "bytes": float(sel["bytes"].sum())})
    return pd.DataFrame(rows, columns=["source", "inputs", "bytes"])


def hold_summary(holds: pd.DataFrame) -> pd.DataFrame:
    """One row per hold kind that occurs (sorted): ``kind``, ``unit``,
    ``capacity`` (:func:`hold_capacity`, NaN when not given), ``peak`` (the
    largest amount held at once) and ``mean`` (the time-weighted mean
    amount held from the first hold's start to the last hold's end)."""
    rows = []
    for kind in sorted(set(holds["kind"])):
        t, v = hold_steps(holds, kind)
        span = float(t[-1] - t[0]) if t.size > 1 else 0.0
        mean = _mean_over(t, v, span) if span > 0 else 0.0
        cap = hold_capacity(holds, kind)
        unit = holds.loc[holds["kind"] == kind, "unit"].iloc[0]
        rows.append({"kind": kind, "unit": unit, "capacity": np.nan if cap is None else cap,
                     "peak": float(v.max()) if v.size else 0.0, "mean": mean})
    return pd.DataFrame(rows, columns=["kind", "unit", "capacity", "peak", "mean"])


#: The tiers of the leaderboard's ``io.bytes`` hook (``docs/leaderboard.md``):
#: hook name -> tier of :data:`TIERS`.
HOOK_TIERS = {"pfs": PFS_TIER, "bb": BB_TIER, "local": DISK_TIER, "network": NETWORK}


def _mean_over(t: np.ndarray, v: np.ndarray, span: float) -> float:
    """Integral of a step series divided by ``span`` (s)."""
    return float((v[:-1] * np.diff(t)).sum() / span) if t.size > 1 else 0.0


def run_io_metrics(record: IORecord, makespan: Optional[float]) -> dict:
    """A run's I/O metrics for its ``metrics.json`` (key ``io``: the
    leaderboard's per-run hook, ``docs/leaderboard.md``).

    :param record: the run's record.
    :param makespan: the run's makespan (s), the span of the time averages.
    :returns: ``{"bytes": {"pfs", "bb", "local", "network"}`` (bytes moved
        to or from the tier by completed phases; the network: between
        compute nodes, once), ``"pfs_throughput"`` (bytes/s: the PFS's bytes
        over the makespan, timed or not), ``"pfs_utilization"``
        (``pfs_throughput`` over the I/O bandwidth's capacity when the
        family gives one: list/pack's B, pfsbw's limit; else None),
        ``"bb_utilization"`` (time-averaged bytes held on burst-buffer nodes
        over their capacity; None without burst buffers)}``; averages None
        without a positive makespan.
    """
    tb = tier_bytes(record.phases).set_index("tier")

    def moved(tier):
        if tier not in tb.index:
            return 0.0
        return float(tb.at[tier, "read"] + (tb.at[tier, "written"] if tier != NETWORK else 0.0))

    out = {"bytes": {k: moved(t) for k, t in HOOK_TIERS.items()}, "pfs_throughput": None,
           "pfs_utilization": None, "bb_utilization": None}
    if not makespan or makespan <= 0 or not np.isfinite(makespan):
        return out
    out["pfs_throughput"] = out["bytes"]["pfs"] / makespan
    bandwidth = hold_capacity(record.holds, BANDWIDTH)
    if bandwidth:
        out["pfs_utilization"] = out["pfs_throughput"] / bandwidth
    cap = hold_capacity(record.holds, BB_TIER)
    if cap:
        out["bb_utilization"] = _mean_over(*hold_steps(record.holds, BB_TIER), makespan) / cap
    return out
