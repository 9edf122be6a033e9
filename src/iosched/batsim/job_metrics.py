"""Per-job metrics from a job's submission, start and finish times, each
derived here and nowhere else.

Names and definitions are the glossary's ("Terms" in DESIGN.md; per job j,
times in s): submission s_j, start b_j, completion c_j,

* runtime D_j = c_j - b_j (Batsim's ``execution_time``);
* waiting time W_j = b_j - s_j (Batsim's ``waiting_time``);
* turnaround (flow) F_j = c_j - s_j (Batsim's ``turnaround_time``);
* slowdown F_j / D_j (Batsim's ``stretch`` in ``_jobs.csv`` and the
  ``*_slowdown`` of ``_schedule.csv``); undefined when D_j = 0;
* bounded slowdown max(1, F_j / max(D_j, tau)), tau = :data:`TAU` = 600 s
  unless stated (Feitelson et al., "Theory and practice in parallel job
  scheduling", JSSPP 1997).

The embedded engine's export (:mod:`iosched.engine.export`) writes Batsim's
columns with them, and the analysis (:mod:`iosched.analysis.metrics`,
:mod:`iosched.analysis.jobs`) summarises them, so both agree by
construction.  The module sits in :mod:`iosched.batsim`, below both, so
that the engine never imports :mod:`iosched.analysis`.  Output column names
stay Batsim's (``turnaround_time``...): they are Batsim's file format.

Every function takes Python floats (the engine, one job at a time: plain
float arithmetic, no numpy) or numpy arrays of the same shape (the
analysis, a whole table at once) and returns the same kind.  Family
metrics named after their papers (the locality and listpack stretches)
live in their packages (:func:`iosched.locality.metrics.gonthier_stretch`,
:func:`iosched.listpack.metrics.jeannot_stretch`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TAU", "runtime", "waiting_time", "turnaround", "slowdown", "bounded_slowdown"]

#: Bounded-slowdown threshold tau (s) unless stated (DESIGN.md "Terms").
TAU = 600.0


def runtime(start, finish):
    """Runtime D = c - b (s) of a job that started at ``start`` (b, s) and
    finished at ``finish`` (c, s); floats or numpy arrays."""
    return finish - start


def waiting_time(submission, start):
    """Waiting time W = b - s (s) of a job submitted at ``submission`` (s,
    s) that started at ``start`` (b, s); floats or numpy arrays."""
    return start - submission


def turnaround(submission, finish):
    """Turnaround (flow) F = c - s (s) of a job submitted at ``submission``
    (s, s) that finished at ``finish`` (c, s); floats or numpy arrays."""
    return finish - submission


def slowdown(flow, run, undefined=math.nan):
    """Slowdown F / D of a job of turnaround ``flow`` (F, s) and runtime
    ``run`` (D, s); Batsim's ``stretch``.

    :param undefined: the value where D <= 0 (the ratio is undefined):
        NaN by default; the embedded engine writes ``0.0`` in
        ``_jobs.csv`` and leaves such jobs out of ``_schedule.csv``'s
        slowdowns (``None``).
    :returns: a float (or ``undefined``) for floats, a float array for
        numpy arrays.
    """
    if isinstance(flow, np.ndarray) or isinstance(run, np.ndarray):
        f = np.asarray(flow, dtype=float)
        d = np.asarray(run, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(d > 0, f / np.where(d > 0, d, 1.0), undefined)
    return flow / run if run > 0 else undefined


def bounded_slowdown(flow, run, tau: float = TAU):
    """Bounded slowdown max(1, F / max(D, tau)) of a job of turnaround
    ``flow`` (F, s) and runtime ``run`` (D, s); ``tau`` (s) > 0, so it is
    always defined.  Floats or numpy arrays."""
    if isinstance(flow, np.ndarray) or isinstance(run, np.ndarray):
        return np.maximum(1.0, flow / np.maximum(run, float(tau)))
    return max(1.0, flow / max(run, float(tau)))
