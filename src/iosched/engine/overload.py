"""A link whose capacity drops under overload (embedded-engine extension,
``--link-overload``, served with ``--embedded-extensions`` only).

The model is SimGrid's ``NONLINEAR`` sharing policy
(``s4u::Link::set_sharing_policy(NONLINEAR, cb)``, SimGrid >= 3.30): the
link's capacity is ``cb(bound, n)``, a function of ``n``, the number of
actions (here: parallel tasks) that use the link, and max-min sharing then
splits that capacity between them. SimGrid 3.32 evaluates the callback in
its ``maxmin`` and ``bmf`` solvers only (``src/kernel/lmm/maxmin.cpp``,
``bmf.cpp``); the ``ptask_L07`` host model that Batsim 4.2.1 uses (and so
the embedded engine) solves with ``fairbottleneck`` (the default of
``host/solver``), which ignores it, refuses ``maxmin``, and ``bmf`` finds no
allocation for the pfsbw platform ("Unable to find a BMF allocation").
So the engine applies the same definition itself: whenever a parallel task
that crosses the link starts or ends, it sets the link's bandwidth to
``curve(n)`` (``Link.set_bandwidth``, which the ``fairbottleneck`` solver
honours from that instant). Outside the engine's own tasks nothing crosses
a link (messages between actors are charged analytically), so ``n`` is
exactly SimGrid's concurrency of the link.

Specification (one string, :func:`parse_overload`)::

    LINK:BW@N[,BW@N...][:COUNT]

* ``LINK``: the link's id in the platform XML (for a SimGrid ``<cluster>``
  link, its generated name);
* ``BW@N``: the capacity ``BW`` (bytes/s: a number, or a number with one of
  :data:`UNITS` optionally followed by ``ps`` or ``/s``, e.g. ``20GiB``,
  ``15GiBps``, ``1.5e10``) when ``N`` (an integer >= 1, strictly
  increasing) transfers use the link; linear in between, constant below the
  first and beyond the last point. The curve replaces the link's bandwidth
  of the XML while the option is given.
* ``COUNT``: what ``n`` counts: ``tasks`` (default: the parallel tasks, i.e.
  running jobs, crossing the link: SimGrid's concurrency) or ``flows`` (the
  task's (source, destination) pairs with bytes whose route crosses the
  link: the writing threads of a ``parallel_homogeneous_pfs`` job).

Example: ``pfs_link:20GiB@5,15GiB@10`` (docs/pfsbw.md: 20 GiB/s for up to 5
concurrent writers, 1 GiB/s less per writer beyond, 15 GiB/s from 10 on).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass

from iosched.errors import InputError

__all__ = ["OPTION", "UNITS", "COUNTS", "OverloadCurve", "parse_overload", "parse_bandwidth",
           "LinkOverload"]

#: The engine option that gives the curve.
OPTION = "--link-overload"
#: Byte units of a bandwidth (per second), SimGrid's spelling.
UNITS = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
         "KiB": 2.0 ** 10, "MiB": 2.0 ** 20, "GiB": 2.0 ** 30, "TiB": 2.0 ** 40, "PiB": 2.0 ** 50}
#: What the curve's ``n`` may count.
COUNTS = ("tasks", "flows")

_BW = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(" + "|".join(UNITS) + r")?(?:ps|/s)?")
#: Largest capacity accepted (bytes/s): far above any file system, far
#: below float overflow in SimGrid's sums.
MAX_BW = 1e18


def parse_bandwidth(text: str, where: str) -> float:
    """A bandwidth in bytes/s from ``"20GiB"``, ``"15GiBps"``, ``"1.5e10"``.

    :raises InputError: one line ``WHERE: ...`` when it is not a number > 0
        and <= 1e18 bytes/s with an optional unit of :data:`UNITS`.
    """
    m = _BW.fullmatch(text.strip())
    if m is None:
        raise InputError(f"{where}: bandwidth {text!r} is not a number with an optional unit "
                         f"({', '.join(UNITS)}, optionally followed by ps or /s)")
    value = float(m.group(1)) * UNITS[m.group(2) or "B"]
    if not (math.isfinite(value) and 0 < value <= MAX_BW):
        raise InputError(f"{where}: bandwidth {text!r} must be > 0 and <= 1e18 bytes/s")
    return value


@dataclass(frozen=True)
class OverloadCurve:
    """Capacity of one link against its concurrent transfers.

    :param link: the link's name in the platform.
    :param points: ``((n, bytes/s), ...)``, ``n`` strictly increasing
        integers >= 1, capacities > 0.
    :param count: ``"tasks"`` or ``"flows"`` (see the module documentation).
    """

    link: str
    points: tuple
    count: str = "tasks"

    def capacity(self, n: int) -> float:
        """The link's capacity (bytes/s) with ``n`` >= 0 transfers on it:
        piecewise linear through :attr:`points`, constant outside them."""
        xs = [p[0] for p in self.points]
        if n <= xs[0]:
            return self.points[0][1]
        if n >= xs[-1]:
            return self.points[-1][1]
        k = bisect.bisect_right(xs, n)
        (x0, y0), (x1, y1) = self.points[k - 1], self.points[k]
        return y0 + (y1 - y0) * (n - x0) / (x1 - x0)


def parse_overload(spec: str) -> OverloadCurve:
    """Read a ``--link-overload`` specification (module documentation).

    :raises InputError: one line naming the option and what is wrong (no
        link, no point, a point not ``BW@N``, ``N`` not an integer >= 1 or
        not increasing, a bad bandwidth, an unknown count).
    """
    where = f"{OPTION} {spec!r}"
    parts = spec.strip().split(":")
    count = "tasks"
    if len(parts) >= 3 and parts[-1] in COUNTS:
        count = parts.pop()
    elif len(parts) >= 3 and not re.search(r"@", parts[-1]):
        raise InputError(f"{where}: unknown count {parts[-1]!r}; expected one of {', '.join(COUNTS)}")
    if len(parts) < 2 or not parts[-1].strip():
        raise InputError(f"{where}: expected LINK:BW@N[,BW@N...][:tasks|flows]")
    link = ":".join(parts[:-1]).strip()
    if not link:
        raise InputError(f"{where}: no link name before ':'")
    points = []
    for item in parts[-1].split(","):
        bw, at, n = item.strip().partition("@")
        if not at:
            raise InputError(f"{where}: point {item.strip()!r} is not BW@N (e.g. 20GiB@5)")
        if not re.fullmatch(r"\d+", n.strip()) or int(n) < 1:
            raise InputError(f"{where}: point {item.strip()!r}: N must be an integer >= 1")
        if points and int(n) <= points[-1][0]:
            raise InputError(f"{where}: point {item.strip()!r}: N must increase from point to point")
        points.append((int(n), parse_bandwidth(bw, where)))
    return OverloadCurve(link, tuple(points), count)


class LinkOverload:
    """The running state of one overloaded link in a simulation: the
    transfers on it and its current bandwidth.

    :param curve: the :class:`OverloadCurve`.
    :param link: the SimGrid link (``simgrid.Link``), whose bandwidth is set.
    :param route_links: ``(source host, destination host) -> set of link
        names`` on the route (the engine passes SimGrid's ``route_to``).
    """

    def __init__(self, curve: OverloadCurve, link, route_links):
        self.curve = curve
        self.link = link
        self._route_links = route_links
        self._crosses: dict = {}
        self.n = 0
        link.set_bandwidth(curve.capacity(0))

    def weight(self, hosts, com) -> int:
        """What one parallel task adds to ``n``: with ``count = tasks``, 1 if
        any of its (source, destination) pairs with bytes (``com``, row-major
        ``len(hosts)`` x ``len(hosts)``) routes through the link, else 0; with
        ``flows``, the number of such pairs."""
        m = len(hosts)
        flows = 0
        for k, b in enumerate(com):
            if b > 0:
                pair = (hosts[k // m], hosts[k % m])
                hit = self._crosses.get(pair)
                if hit is None:
                    hit = self._crosses[pair] = self.curve.link in self._route_links(*pair)
                if hit:
                    flows += 1
                    if self.curve.count == "tasks":
                        return 1
        return flows

    def add(self, w: int) -> None:
        """``w`` transfers start (``w < 0``: end) now: set the bandwidth."""
        if w:
            self.n += w
            self.link.set_bandwidth(self.curve.capacity(self.n))
