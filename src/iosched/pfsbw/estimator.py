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

__all__ = ["DECAY", "VarietyEstimator", "RecentThroughput"]

#: Decay ``a`` of the exponentially weighted average (``pysimserv3.py``).
DECAY = 0.2


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


class VarietyEstimator:
    """Per-variety estimates of throughput (bytes/s) and runtime (s).

    :param decay: ``a`` in ``(0, 1]`` (default :data:`DECAY`).
    :raises InputError: ``decay`` outside ``(0, 1]``.

    Reusable by any family: feed :meth:`observe` with finished jobs, read
    :meth:`throughput` / :meth:`runtime`.
    """

    def __init__(self, decay: float = DECAY):
        if not (isinstance(decay, (int, float)) and 0 < decay <= 1):
            raise InputError(f"estimator: decay must be in (0, 1], got {decay!r}")
        self.decay = float(decay)
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
        return 0.0 if avg is None else avg.value

    def runtime(self, variety: str) -> Optional[float]:
        """Estimated runtime (s) of a job of ``variety``, None when untrained."""
        avg = self._runtime.get(variety)
        return None if avg is None else avg.value

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
