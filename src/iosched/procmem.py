"""A process's own peak memory (Linux).

``getrusage``'s ``ru_maxrss`` is not a process's own peak on Linux: at
``exec`` the kernel folds the peak RSS of the image being replaced into
it, so a program started by a large process (a benchmark holding a
workload, a runner with pandas loaded) reports at least its parent's peak
at the time of the fork. The high-water mark of the process's own address
space, ``VmHWM`` in ``/proc/<pid>/status``, starts afresh at ``exec``:
:func:`peak_rss_kb` reads it. :class:`PeakSampler` reads it for the
children of the current process while they run, since a process that has
ended (a zombie) no longer has one.
"""

from __future__ import annotations

import os
import resource
import threading

__all__ = ["peak_rss_kb", "PeakSampler"]


def peak_rss_kb(pid: int | str = "self") -> int | None:
    """Peak resident set size (KB) of process ``pid``'s own address space
    (``VmHWM``), or None when it cannot be read (no such process, a zombie,
    not Linux). Raises nothing.

    For ``"self"`` without ``/proc``, falls back to ``getrusage``'s
    ``ru_maxrss`` (which may include the parent's peak, see the module
    documentation)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    if pid == "self":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return None


class PeakSampler:
    """Samples, every ``interval`` s in a thread, the peak RSS
    (:func:`peak_rss_kb`) of the current process's descendants whose
    command line contains one of the strings of ``roles`` (a dict role ->
    list of substrings; the first role that matches wins); ``peaks`` maps
    each role seen to the largest peak read (KB), ``pids`` each role to the
    processes read. New processes are looked for every ``scan`` s (a scan
    of ``/proc`` costs a few ms; the readings cost microseconds). The last
    reading of a process is taken at most ``interval`` s before it ends:
    growth after it is missed (the figure is a lower bound, exact when the
    peak is reached earlier). Use as a context manager.

    :raises ValueError: ``interval`` or ``scan`` not positive.
    """

    def __init__(self, roles: dict[str, list[str]], interval: float = 0.05, scan: float = 0.5):
        if not (interval > 0 and scan > 0):
            raise ValueError(f"PeakSampler: interval and scan must be positive, got {interval!r}, {scan!r}")
        self.roles = roles
        self.interval = interval
        self.scan_every = max(1, round(scan / interval))
        self.peaks: dict[str, int] = {}
        self.pids: dict[str, set[int]] = {}
        self._known: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-sampler", daemon=True)

    def _role(self, pid: int) -> str | None:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
        for role, needles in self.roles.items():
            if any(n in cmd for n in needles):
                return role
        return None

    def scan(self) -> None:
        """Look for new matching descendants (also called by the thread)."""
        import psutil

        try:
            kids = psutil.Process(os.getpid()).children(recursive=True)
        except psutil.Error:
            return
        for p in kids:
            if p.pid in self._known:
                continue
            role = self._role(p.pid)  # read again at each scan until it matches (exec)
            if role is not None:
                self._known[p.pid] = role
                self.pids.setdefault(role, set()).add(p.pid)

    def sample(self) -> None:
        """Read every known matching process's peak once (also called by the thread)."""
        for role, pids in self.pids.items():
            for pid in pids:
                kb = peak_rss_kb(pid)
                if kb is not None:
                    self.peaks[role] = max(self.peaks.get(role, 0), kb)

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(self.interval):
            if tick % self.scan_every == 0:
                self.scan()
            tick += 1
            self.sample()

    def __enter__(self) -> "PeakSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
