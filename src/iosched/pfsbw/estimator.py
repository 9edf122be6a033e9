"""Online estimates of job file-system throughput and runtime, learnt only
from what a scheduler sees of finished jobs.

Source: Goponenko et al., PMBS 2024, Section III ("weighted averages of
historical resource usage of similar jobs, using exponentially decaying
weights"); the analytical service ``algo74/py-sim-serv`` (``pysimserv3.py``)
keeps, per job *variety* (same command line, or a user-given job type)::

    count <- 1 + (1 - a) * count
    sum   <- x + (1 - a) * sum
    estimate = sum / count            (a = DECAY = 0.2)

where ``x`` is the finished job's measured value. Here ``x`` is the job's
average file-system throughput, ``bytes written / runtime`` (bytes/s), the
bytes being known from the job's workload fields and the runtime being the
time between the scheduler's start decision and JOB_COMPLETED -- exactly
what a scheduler on the real Batsim 4.2.1 sees. Nothing is read from the
engine. An untrained variety has throughput 0 (the paper's untrained runs:
"the scheduler assumed zero Lustre throughput for all jobs").

:class:`RecentThroughput` stands for the monitoring system's "current Lustre
throughput" ``R_now`` (Algorithm 2, line 2). Batsim gives a scheduler no
link counters, so it is derived from the same observations: the bytes of the
jobs finished in the last ``window`` seconds, spread evenly over each job's
run, averaged over the window. It lags behind the real value (like the
analytical service's ``PROCESSING_DELAY``) and misses running jobs.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Mapping, Optional

from iosched.errors import InputError

__all__ = ["DECAY", "ARTIFACT_TAIL", "ARTIFACT_RUNTIME_UNIT", "ARTIFACT_RATE_UNIT", "VarietyEstimator",
           "RecentThroughput"]

#: Decay ``a`` of the exponentially weighted average (``pysimserv3.py``).
DECAY = 0.2
#: ``pysimserv3.py`` ``alt_analyze_job``: a job's measurement window ends 1 s
#: after its end ("we take one second after the end"), so the observed
#: runtime is the runtime + 1 s and the throughput bytes / (runtime + 1 s).
ARTIFACT_TAIL = 1.0
#: ``format_value`` with ``FACTORS["timelimit"] = 1/60``: the runtime
#: estimate is sent to Slurm in whole minutes, rounded up (s).
ARTIFACT_RUNTIME_UNIT = 60.0
#: ``format_value`` with ``FACTORS["lustre"] = 10000 / 14000000``: the
#: throughput estimate is sent in whole units of 1,400 bytes/s, rounded up.
ARTIFACT_RATE_UNIT = 1400.0


class _Average:
    """Exponentially decaying average: ``count``, ``total``."""

    __slots__ = ("count", "total")

    def __init__(self):
        self.count = 0.0
        self.total = 0.0

    def add(self, x: float, a: float) -> None:
        self.count = 1.0 + (1.0 - a) * self.count
        self.total = x + (1.0 - a) * self.total

    @property
    def value(self) -> float:
        return self.total / self.count


def _round_up(x: float, unit: Optional[float]) -> float:
    """``x`` rounded up to a multiple of ``unit`` (None: ``x``)."""
    return x if unit is None else math.ceil(x / unit) * unit


class VarietyEstimator:
    """Per-variety estimates of throughput (bytes/s) and runtime (s).

    :param decay: ``a`` in ``(0, 1]`` (default :data:`DECAY`).
    :param tail: seconds (>= 0) added to every observed runtime, also in
        the throughput's divisor (default 0; the artifact's
        :data:`ARTIFACT_TAIL`).
    :param runtime_unit: the runtime estimate is rounded up to a multiple
        of this (s); None (default): not rounded (the artifact:
        :data:`ARTIFACT_RUNTIME_UNIT`).
    :param rate_unit: the same for the throughput estimate (bytes/s; the
        artifact: :data:`ARTIFACT_RATE_UNIT`).
    :raises InputError: ``decay`` outside ``(0, 1]``, a negative ``tail``, a
        non-positive unit.

    Reusable by any family: feed :meth:`observe` with finished jobs, read
    :meth:`throughput` / :meth:`runtime`.
    """

    def __init__(self, decay: float = DECAY, tail: float = 0.0, runtime_unit: Optional[float] = None,
                 rate_unit: Optional[float] = None):
        if not (isinstance(decay, (int, float)) and 0 < decay <= 1):
            raise InputError(f"estimator: decay must be in (0, 1], got {decay!r}")
        if not (isinstance(tail, (int, float)) and math.isfinite(tail) and tail >= 0):
            raise InputError(f"estimator: tail must be a finite number >= 0 s, got {tail!r}")
        for name, unit in (("runtime_unit", runtime_unit), ("rate_unit", rate_unit)):
            if unit is not None and not (isinstance(unit, (int, float)) and math.isfinite(unit) and unit > 0):
                raise InputError(f"estimator: {name} must be a finite number > 0, got {unit!r}")
        self.decay = float(decay)
        self.tail = float(tail)
        self.runtime_unit = runtime_unit
        self.rate_unit = rate_unit
        self._rate: dict = {}
        self._runtime: dict = {}
        self.observations = 0

    def observe(self, variety: str, nbytes: float, runtime: float) -> None:
        """Learn from one finished job of ``variety`` that wrote ``nbytes``
        (bytes) in ``runtime`` (s); jobs with a non-positive or non-finite
        runtime are ignored (no measurable throughput).

        :raises InputError: negative or non-finite ``nbytes``.
        """
        if not (math.isfinite(nbytes) and nbytes >= 0):
            raise InputError(f"estimator: bytes must be finite and >= 0, got {nbytes!r}")
        if not (math.isfinite(runtime) and runtime > 0):
            return
        a = self.decay
        runtime += self.tail
        self._rate.setdefault(variety, _Average()).add(nbytes / runtime, a)
        self._runtime.setdefault(variety, _Average()).add(runtime, a)
        self.observations += 1

    def trained(self, variety: str) -> bool:
        """Whether ``variety`` has at least one observation."""
        return variety in self._rate

    def throughput(self, variety: str) -> float:
        """Estimated average throughput (bytes/s) of a job of ``variety``; 0
        when untrained."""
        avg = self._rate.get(variety)
        return 0.0 if avg is None else _round_up(avg.value, self.rate_unit)

    def runtime(self, variety: str) -> Optional[float]:
        """Estimated runtime (s) of a job of ``variety``, None when untrained."""
        avg = self._runtime.get(variety)
        return None if avg is None else _round_up(avg.value, self.runtime_unit)

    def pretrain(self, samples: Mapping[str, Mapping[str, float]]) -> None:
        """Observe, once per variety, a job run alone: ``samples`` maps a
        variety to ``{"bytes": bytes, "runtime": s}`` (the output of
        ``iosched workload pfsbw pretrain``).

        :raises InputError: a sample without numeric ``bytes``/``runtime``, or
            with a runtime that is not a positive finite number (a run that
            teaches nothing: the estimator would stay untrained without a
            word).
        """
        for variety in sorted(samples):
            s = samples[variety]
            try:
                nbytes, runtime = float(s["bytes"]), float(s["runtime"])
            except (KeyError, TypeError, ValueError):
                raise InputError(f"pretrain: variety {variety!r} needs numeric 'bytes' and 'runtime'") from None
            if not (math.isfinite(runtime) and runtime > 0):
                raise InputError(f"pretrain: variety {variety!r}: runtime={runtime!r} is not a positive "
                                 f"finite number of s")
            self.observe(str(variety), nbytes, runtime)


class RecentThroughput:
    """``R_now`` (bytes/s) from finished jobs: the bytes of the jobs that
    finished in ``(now - window, now]``, each spread evenly over its run,
    that fall in the window, divided by ``window``.

    :param window: seconds (> 0).
    :raises InputError: a non-positive window.
    """

    def __init__(self, window: float = 60.0):
        if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
            raise InputError(f"measured throughput: window must be > 0 s, got {window!r}")
        self.window = float(window)
        self._done: deque = deque()   # (end, start, bytes), ends non-decreasing

    def add(self, start: float, end: float, nbytes: float) -> None:
        """A job ran on ``[start, end]`` (s) and wrote ``nbytes`` (bytes)."""
        if end > start and nbytes > 0:
            self._done.append((end, start, nbytes))

    def rate(self, now: float) -> float:
        """The measured throughput at ``now`` (bytes/s)."""
        lo = now - self.window
        while self._done and self._done[0][0] <= lo:
            self._done.popleft()
        total = 0.0
        for end, start, nbytes in self._done:
            overlap = min(end, now) - max(start, lo)
            if overlap > 0:
                total += nbytes * overlap / (end - start)
        return total / self.window
