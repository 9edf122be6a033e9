"""Durations and byte counts for people: automatic time units (s, min, h,
d) and decimal byte units (B ... PB) for printed tables and figure axes.

Data stay in seconds everywhere (CSV, JSON); only what is shown is scaled.
A unit is chosen from the largest magnitude to show (:func:`time_unit`), so
that numbers stay short: a makespan of 933,535 s prints as ``10.8 d``, a
mean wait of 5,412 s as ``1.50 h``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["UNITS", "BYTE_UNITS", "time_unit", "bytes_unit", "format_bytes", "format_duration", "scale",
           "log_time_ticks"]

#: (name, seconds per unit), smallest first.
UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))

# a unit is used from this many of it on: 2 min -> min, 2 h -> h, 2 d -> d
_SWITCH = 2.0


def time_unit(seconds) -> tuple[str, float]:
    """The unit to show durations up to ``seconds`` (a number or an array: its
    largest finite magnitude is used).

    :returns: ``(name, factor)``: show ``x / factor`` followed by ``name``
        (``("s", 1.0)`` below 2 min, ``("min", 60.0)`` below 2 h,
        ``("h", 3600.0)`` below 2 d, else ``("d", 86400.0)``; ``("s", 1.0)``
        when nothing is finite).
    """
    a = np.abs(np.asarray(seconds, dtype=float).ravel())
    a = a[np.isfinite(a)]
    top = float(a.max()) if a.size else 0.0
    name, factor = UNITS[0]
    for n, f in UNITS[1:]:
        if top >= _SWITCH * f:
            name, factor = n, f
    return name, factor


#: decimal byte units, in increasing order (name, bytes)
BYTE_UNITS = (("B", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("PB", 1e15))


def bytes_unit(nbytes) -> tuple[str, float]:
    """The decimal unit to show byte counts up to ``nbytes`` (a number or an
    array: its largest finite magnitude is used).

    :returns: ``(name, factor)``: show ``x / factor`` followed by ``name``,
        the largest unit of :data:`BYTE_UNITS` not above the magnitude
        (``("B", 1.0)`` when nothing is finite or it is below 1 kB).
    """
    a = np.abs(np.asarray(nbytes, dtype=float).ravel())
    a = a[np.isfinite(a)]
    top = float(a.max()) if a.size else 0.0
    name, factor = BYTE_UNITS[0]
    for n, f in BYTE_UNITS[1:]:
        if top >= f:
            name, factor = n, f
    return name, factor


def format_bytes(x, digits: int = 3, per: str = "") -> str:
    """One size (bytes) or rate (``per="/s"``) with its own unit of
    :data:`BYTE_UNITS` (:func:`bytes_unit`) and ``digits`` significant
    digits (``"224 GB"``, ``"1.70 PB"``, ``"21.5 GB/s"``); ``"-"`` for None
    or a non-finite value."""
    if x is None or not math.isfinite(float(x)):
        return "-"
    name, factor = bytes_unit(x)
    v = float(x) / factor
    if v == 0:
        return f"0 {name}{per}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{decimals}f} {name}{per}"


def scale(seconds, unit: tuple[str, float]):
    """``seconds`` (number or array) expressed in ``unit`` (a :func:`time_unit` result)."""
    return np.asarray(seconds, dtype=float) / unit[1] if np.ndim(seconds) else float(seconds) / unit[1]


def format_duration(seconds, digits: int = 3) -> str:
    """One duration with its own unit and ``digits`` significant digits
    (``"10.8 d"``, ``"1.50 h"``, ``"42.0 s"``); ``"-"`` for None or a
    non-finite value."""
    if seconds is None:
        return "-"
    x = float(seconds)
    if not math.isfinite(x):
        return "-"
    name, factor = time_unit(x)
    v = x / factor
    if v == 0:
        return f"0 {name}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{decimals}f} {name}"


#: tick positions (s) and labels of :func:`log_time_ticks`
_LOG_TICKS = ((1.0, "1 s"), (10.0, "10 s"), (60.0, "1 min"), (600.0, "10 min"), (3600.0, "1 h"),
              (36000.0, "10 h"), (86400.0, "1 d"), (604800.0, "1 w"), (2592000.0, "30 d"),
              (31536000.0, "1 y"))


def log_time_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Readable ticks for a log axis of durations in seconds spanning
    ``[lo, hi]`` (1 s, 10 s, 1 min, 10 min, 1 h, 10 h, 1 d, 1 w, 30 d, 1 y).

    :returns: ``(positions in s, labels)`` of the ticks inside the span.
    """
    pos = [(t, lab) for t, lab in _LOG_TICKS if lo <= t <= hi]
    return [t for t, _ in pos], [lab for _, lab in pos]
