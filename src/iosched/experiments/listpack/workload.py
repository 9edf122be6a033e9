"""Seeded workload generators of Jeannot, Pallez & Vidal (IJHPCA 2023),
section "Workload Generation": static batches (every job released at 0).

Job protocols (``Q_i`` nodes, compute phase ``w_i``):

* **Mira** (``M``): ``Q`` from a discrete exponential of parameter
  ``lambda = 1.35e-4`` on ``[512, 49152]`` (inverse CDF of the truncated
  exponential, floored), rounded *up* to a multiple of the 512-node block
  (one Batsim resource; Mira's smallest partition); job compute duration
  ``D`` normal with median 1 h under 4096 nodes, 2 h from 4096 to 16384,
  0.5 h above, standard deviation 10 % of the median, truncated to ``D > 0``;
  ``w_i = D / n_i`` (the duration is the job's, the phases share it).
* **Uniform** (``U``): ``w_i`` uniform in ``[10, 100]`` minutes (a phase, as
  the paper says); ``Q_i = 2^j`` with ``j`` uniform in ``0..11``.

Periods ``n_i`` uniform in ``{10, ..., 100}``. I/O proportion ``X_i`` drawn
by inverse CDF from uniforms ``U_i``:

* **No** (normal): ``X ~ N(mu, sd)`` truncated to ``[0, 1]``;
* **BN** (bi-normal): ``X ~ N(0.1, sd)`` or ``N(0.9, sd)`` truncated to
  ``[0, 1]`` (low / high I/O), job i high iff ``C_i < p``.

Volumes by the paper's formula ``v_i = X_i w_i Q_i / P`` in units of ``B``
(bytes: ``v_i = X_i w_i B Q_i / P``; option ``volume="time"`` uses ``v_i =
X_i w_i B`` instead, see ``docs/listpack.md``). The I/O load is equation
(2) (:func:`iosched.listpack.model.io_load`).

Reaching the target alpha (our reading of "mixed to reach the target" and
of the paper's filtering of pathological draws): on each draw the location
parameter is solved -- BN: the number ``k`` of high jobs (those with the
``k`` smallest ``C_i``) minimising ``|alpha - target|``; No: ``mu`` by
bisection on ``[-1, 2]`` (alpha is increasing in ``mu``; the paper sets
``mu = alpha``, which the solution approaches under the paper's volume
rule). A draw whose best alpha is farther than ``tol`` from the target is
discarded and the next draw (seed ``[seed, attempt]``) is tried, up to
``max_tries``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from statistics import NormalDist

import click
import numpy as np

from iosched.checks import argument
from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError, one_line
from iosched.experiments.platforms import listpack_xml
from iosched.sched.iojob import IOJob, Periodic, to_json
from iosched.listpack.model import DEFAULT_BANDWIDTH, MIRA_BLOCK, Machine, PeriodicJob, io_load, listpack_machine
from iosched.workloads.writer import write_workload as _write

__all__ = ["FAMILIES", "LAMBDA", "Q_MIN", "Q_MAX", "BN_MEANS", "GeneratedWorkload",
           "mira_nodes", "mira_median", "truncated_normal", "truncated_mean", "generate", "to_batsim",
           "campaign_workload", "write_workload", "workload_command"]

#: Workload families: (job protocol, I/O protocol).
FAMILIES = {"M-BN": ("mira", "bn"), "M-No": ("mira", "no"), "U-BN": ("uniform", "bn"),
            "U-No": ("uniform", "no")}
#: Parameter of Mira's discrete exponential of job sizes.
LAMBDA = 1.35e-4
#: Range of Mira job sizes (nodes).
Q_MIN, Q_MAX = 512, 49152
#: Means of BN's two normals (before truncation to [0, 1]).
BN_MEANS = (0.1, 0.9)
VOLUME_RULES = ("paper", "time", "node")


@dataclass
class GeneratedWorkload:
    """A generated static batch: ``family``, ``target`` (alpha asked),
    ``alpha`` (equation 2, achieved), ``machine``
    (:class:`~iosched.listpack.model.Machine`), ``jobs`` (list of
    :class:`~iosched.listpack.model.PeriodicJob`), ``meta`` (seed, tries,
    solved ``mu`` or ``p``...)."""

    family: str
    target: float
    alpha: float
    machine: Machine
    jobs: list
    meta: dict = field(default_factory=dict)


def mira_nodes(u: np.ndarray, lam: float = LAMBDA, lo: int = Q_MIN, hi: int = Q_MAX) -> np.ndarray:
    """Discrete exponential of parameter ``lam`` on ``{lo, ..., hi}`` by
    inverse CDF of uniforms ``u`` in [0, 1) (int array, nodes)."""
    span = hi - lo + 1
    q = lo + np.floor(-np.log1p(-u * (1.0 - math.exp(-lam * span))) / lam)
    return np.minimum(q, hi).astype(np.int64)


def mira_median(q: np.ndarray) -> np.ndarray:
    """Median compute duration (s) of Mira jobs of ``q`` nodes: 1 h below
    4096 nodes, 2 h from 4096 to 16384, 0.5 h above."""
    q = np.asarray(q)
    return np.where(q < 4096, 3600.0, np.where(q <= 16384, 7200.0, 1800.0))


_STD = NormalDist()
_SQRT2 = math.sqrt(2.0)


def _tn_ppf(u: float, mu: float, sd: float, lo: float, hi: float) -> float:
    a, b = (lo - mu) / sd, (hi - mu) / sd
    if a > 0:  # work with upper tails: no cancellation far above the mean
        qa, qb = 0.5 * math.erfc(a / _SQRT2), 0.5 * math.erfc(b / _SQRT2)
        q = qa - u * (qa - qb)
        z = -_STD.inv_cdf(min(max(q, 1e-300), 1 - 1e-16))
    else:
        pa, pb = 0.5 * math.erfc(-a / _SQRT2), 0.5 * math.erfc(-b / _SQRT2)
        p = pa + u * (pb - pa)
        z = _STD.inv_cdf(min(max(p, 1e-300), 1 - 1e-16))
    return mu + sd * min(max(z, a), b)


def truncated_normal(u, mu, sd: float, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """Inverse CDF of ``N(mu, sd)`` truncated to ``[lo, hi]`` at the
    uniforms ``u`` (array); ``mu`` a number or an array like ``u``."""
    u = np.asarray(u, dtype=float)
    mus = np.broadcast_to(np.asarray(mu, dtype=float), u.shape)
    return np.array([_tn_ppf(float(x), float(m), float(sd), lo, hi) for x, m in zip(u.ravel(), mus.ravel())]).reshape(u.shape)


def truncated_mean(mu: float, sd: float, lo: float = 0.0, hi: float = 1.0) -> float:
    """Mean of ``N(mu, sd)`` truncated to ``[lo, hi]`` (closed form)."""
    a, b = (lo - mu) / sd, (hi - mu) / sd
    return mu + sd * (_STD.pdf(a) - _STD.pdf(b)) / (_STD.cdf(b) - _STD.cdf(a))


def _check(family, alpha, n_jobs, tol, max_tries, bn_sd, no_sd, volume, cap):
    if family not in FAMILIES:
        raise InputError(f"family={family!r} is unknown; expected one of {', '.join(FAMILIES)}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise InputError(f"alpha={alpha!r} must be a number in (0, 1)")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise InputError(f"n_jobs={n_jobs!r} must be an integer >= 1")
    if not (isinstance(tol, (int, float)) and 0 < tol < 1):
        raise InputError(f"tol={tol!r} must be a number in (0, 1)")
    if isinstance(max_tries, bool) or not isinstance(max_tries, int) or max_tries < 1:
        raise InputError(f"max_tries={max_tries!r} must be an integer >= 1")
    for name, sd in (("bn_sd", bn_sd), ("no_sd", no_sd)):
        if not (isinstance(sd, (int, float)) and 0 < sd < 10):
            raise InputError(f"{name}={sd!r} must be a number in (0, 10)")
    if volume not in VOLUME_RULES:
        raise InputError(f"volume={volume!r} is unknown; expected one of {', '.join(VOLUME_RULES)}")
    if not isinstance(cap, bool):
        raise InputError(f"cap={cap!r} must be true or false")
    if volume == "node" and not cap:
        raise InputError("volume='node' (v = X w Q b) needs the per-node cap (cap=true)")


def _show(x) -> str:
    """``repr`` of a value, cut to 40 characters (a huge int stays one short line)."""
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _io_over_B(x, Q, w, P, volume, ratio):
    """``v / B`` (s): ``x w Q / P`` (paper), ``x w`` (time) or ``x w Q b / B``
    (node; ``ratio = b / B``, 1/node)."""
    if volume == "paper":
        return x * w * (Q / P)
    if volume == "time":
        return x * w
    return x * w * Q * ratio


def _alpha(x, Q, n, w, P, volume, ratio=None):
    # equation (2) in units of B (B cancels out): the I/O node's time v / B over
    # the processor time at each job's own rate min(Q b, B) / B (B without a cap)
    io = _io_over_B(x, Q, w, P, volume, ratio)
    alone = io if ratio is None else io / np.minimum(Q * ratio, 1.0)
    return float(np.sum(n * io) / np.sum(Q / P * n * (w + alone)))


def generate(family: str, alpha: float, seed: int = 0, n_jobs: int = 100, *,
             tol: float = 0.01, max_tries: int = 200, bandwidth: float = DEFAULT_BANDWIDTH,
             bn_sd: float = 0.1, no_sd: float = 0.1, volume: str = "paper",
             cap: bool = False) -> GeneratedWorkload:
    """Draw a workload of ``family`` (``M-BN``, ``M-No``, ``U-BN``, ``U-No``)
    whose I/O load (equation 2) is within ``tol`` of ``alpha`` (module doc).

    :param alpha: target I/O load, in (0, 1).
    :param seed: int seed (numpy ``default_rng([seed, attempt])``).
    :param n_jobs: jobs in the batch (the paper does not give it).
    :param bandwidth: B (bytes/s).
    :param bn_sd: standard deviation of BN's normals (0.1: the issue's; the
        paper's truncated means 0.289 / 0.711 need sqrt(0.1)).
    :param no_sd: standard deviation of No's normal.
    :param volume: ``"paper"`` (``v = X w B Q / P``), ``"time"`` (``v = X w
        B``) or ``"node"`` (``v = X w Q b``: the paper's formula in units of
        ``P b``; needs ``cap``).
    :param cap: the per-node I/O cap (issue 30): each node reaches the I/O
        node at ``b`` (Mira: :data:`~iosched.listpack.model.MIRA_NODE_BANDWIDTH`;
        Uniform: ``CAP_RATIO B / P``, the same ``P b / B``), a job's
        ``io.throughput_cap`` is ``Q_i b``; False: the earlier model (a job
        alone gets B).
    :returns: a :class:`GeneratedWorkload`.
    :raises InputError: a bad parameter (one line naming it; ``seed`` below
        2^64, ``bandwidth`` > 0 and at most :data:`iosched.checks.MAX_AMOUNT`),
        or no draw reaches the target in ``max_tries`` attempts.
    """
    _check(family, alpha, n_jobs, tol, max_tries, bn_sd, no_sd, volume, cap)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
        raise InputError(f"seed={_show(seed)} must be an integer >= 0 and < 2^64")
    argument(bandwidth, "bandwidth", minimum=0, exclusive_minimum=True, where="listpack workload")
    jobs_kind, io_kind = FAMILIES[family]
    machine = listpack_machine(jobs_kind, float(bandwidth), cap)
    P = machine.nodes
    ratio = None if not cap else machine.node_bandwidth / machine.bandwidth
    best = None
    for attempt in range(max_tries):
        rng = np.random.default_rng([seed, attempt])
        n = rng.integers(10, 101, size=n_jobs).astype(float)
        if jobs_kind == "mira":
            raw = mira_nodes(rng.random(n_jobs))
            Q = (np.ceil(raw / MIRA_BLOCK) * MIRA_BLOCK).astype(float)
            med = mira_median(Q)
            D = med + 0.1 * med * _std_trunc_pos(rng.random(n_jobs), 10.0)
            w = D / n
        else:
            Q = (2.0 ** rng.integers(0, 12, size=n_jobs))
            w = rng.uniform(600.0, 6000.0, size=n_jobs)
        ux = rng.random(n_jobs)
        if io_kind == "bn":
            uc = rng.random(n_jobs)
            lo = truncated_normal(ux, BN_MEANS[0], bn_sd)
            hi = truncated_normal(ux, BN_MEANS[1], bn_sd)
            order = np.argsort(uc, kind="stable")
            best_k, best_a = 0, None
            for k in range(n_jobs + 1):
                x = lo.copy()
                x[order[:k]] = hi[order[:k]]
                a = _alpha(x, Q, n, w, P, volume, ratio)
                if best_a is None or abs(a - alpha) < abs(best_a - alpha):
                    best_k, best_a = k, a
            x = lo.copy()
            x[order[:best_k]] = hi[order[:best_k]]
            loc = {"p": best_k / n_jobs, "high_jobs": best_k}
        else:
            a_lo, a_hi = -1.0, 2.0
            for _ in range(60):
                mid = 0.5 * (a_lo + a_hi)
                if _alpha(truncated_normal(ux, mid, no_sd), Q, n, w, P, volume, ratio) < alpha:
                    a_lo = mid
                else:
                    a_hi = mid
            mu = 0.5 * (a_lo + a_hi)
            x = truncated_normal(ux, mu, no_sd)
            loc = {"mu": mu}
        a = _alpha(x, Q, n, w, P, volume, ratio)
        if abs(a - alpha) <= tol:
            best = (attempt, Q, n, w, x, loc)
            break
    if best is None:
        raise InputError(f"{family} alpha={alpha}: no draw reached the target within tol={tol} "
                         f"in max_tries={max_tries} attempts")
    attempt, Q, n, w, x, loc = best
    B = machine.bandwidth
    jobs = []
    for i in range(n_jobs):
        v = float(_io_over_B(x[i], Q[i], w[i], P, volume, ratio)) * B
        jobs.append(PeriodicJob(int(Q[i]), int(n[i]), float(w[i]), v, float(x[i]),
                                machine.cap(int(Q[i]))))
    achieved = io_load(jobs, P, B)
    meta = {"seed": seed, "tries": attempt + 1, "n_jobs": n_jobs, "tol": tol, "bn_sd": bn_sd,
            "no_sd": no_sd, "volume": volume, **loc}
    if cap:
        meta["node_bandwidth"] = machine.node_bandwidth
    if jobs_kind == "uniform":
        ex = float(np.mean(x))
        meta["q_bar_formula"] = P * ex / (alpha * (1 + ex))
    return GeneratedWorkload(family, float(alpha), achieved, machine, jobs, meta)


def _std_trunc_pos(u, cut: float) -> np.ndarray:
    """Standard normal truncated to ``(-cut, +inf)`` at ``u`` (Mira's
    durations ``m + 0.1 m Z`` are positive iff ``Z > -10``)."""
    return truncated_normal(u, 0.0, 1.0, -cut, math.inf)


def to_batsim(wl: GeneratedWorkload) -> dict:
    """The Batsim workload of a generated batch.

    Every job is released at 0, asks ``Q_i / block`` resources, has no
    walltime and carries its I/O model ``io`` (:mod:`iosched.sched.iojob`:
    ``nodes`` = Q_i, ``periodic`` = n_i periods of w_i s then v_i bytes to
    the PFS; before issue 26 the fields ``nodes``, ``periods``, ``w``,
    ``v``) and the extra field ``x``; its profile ``j<i>`` is a
    ``delay`` of ``T_i(B)`` (the job alone; the listpack scheduler never
    executes it, it runs the phases as dynamic jobs). Top-level ``listpack``
    holds the machine and the generator's record.
    """
    m = wl.machine
    jobs, profiles = [], {}
    for i, j in enumerate(wl.jobs):
        io = IOJob(nodes=j.nodes, periodic=Periodic(j.periods, j.w, j.v), throughput_cap=j.cap)
        jobs.append({"id": str(i), "subtime": 0, "res": j.nodes // m.block, "profile": f"j{i}",
                     "io": to_json(io), "x": j.x})
        profiles[f"j{i}"] = {"type": "delay", "delay": j.time(m.bandwidth)}
    return {"nb_res": m.resources, "jobs": jobs, "profiles": profiles,
            "listpack": {"family": wl.family, "target_alpha": wl.target, "alpha": wl.alpha,
                         "nodes": m.nodes, "block": m.block, "bandwidth": m.bandwidth,
                         **wl.meta}}


def campaign_workload(seed: int = 0, family: str = "M-BN", alpha: float = 0.6,
                      n_jobs: int = 100, **kwargs) -> dict:
    """Campaign hook (``python: iosched.experiments.listpack.workload:campaign_workload``):
    :func:`generate` then :func:`to_batsim`.

    :raises InputError: as :func:`generate`.
    """
    return to_batsim(generate(family, alpha, seed, n_jobs, **kwargs))


def write_workload(path, wl: GeneratedWorkload) -> Path:
    """Write :func:`to_batsim` of ``wl`` to ``path`` with the one workload
    writer (:func:`iosched.workloads.writer.write_workload`); returns the Path.

    :raises InputError: the file cannot be written.
    """
    try:
        return _write(to_batsim(wl), path)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------
# command line


@click.command(name="listpack", cls=OneLineErrorCommand, error_prefix="iosched workload listpack")
@click.argument("family")
@click.argument("alpha", type=float)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--n-jobs", default=30, show_default=True, type=int)
@click.option("--volume", default="paper", show_default=True,
              help="paper (v = X w B Q / P), time (v = X w B) or node (v = X w Q b, needs --cap)")
@click.option("--cap/--no-cap", default=False, show_default=True,
              help="per-node I/O cap b: a job on Q nodes transfers at most at min(Q b, B)")
@click.option("--platform", "platform_out", default=None, type=click.Path(dir_okay=False),
              help="also write the family's platform XML there")
def workload_command(family, alpha, out, seed, n_jobs, volume, cap, platform_out):
    """Generate a workload of FAMILY (M-BN, M-No, U-BN, U-No) at I/O load ALPHA."""
    try:
        wl = generate(family, alpha, seed, n_jobs, volume=volume, cap=cap)
        write_workload(out, wl)
        if platform_out:
            try:
                with open(platform_out, "w") as f:
                    f.write(listpack_xml(wl.machine.resources, wl.machine.link_bandwidth))
            except OSError as exc:
                raise InputError(f"{platform_out}: cannot write: {exc.strerror or exc}") from None
    except InputError as exc:
        click.echo(f"iosched workload listpack: {one_line(exc)}", err=True)
        raise click.exceptions.Exit(2) from None
    click.echo(f"wrote {out}: {family} alpha={wl.alpha:.4f} ({len(wl.jobs)} jobs, "
               f"{wl.machine.resources} resources of {wl.machine.block} nodes)")
