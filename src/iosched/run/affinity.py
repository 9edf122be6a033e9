"""One CPU for the engine and its scheduler.

A Batsim simulation is a strict ping-pong: the engine sends a message and
waits; the scheduler decides and replies; only one side ever computes. Each
message crosses four threads (the sender, its ZeroMQ I/O thread, the
receiver's I/O thread, the receiver), and with SimGrid 3.32's Python
bindings every actor switch is an OS-thread switch too. When these threads
sit on different CPUs, every hand-over is a cross-CPU wake-up, which on a
virtual machine costs an inter-processor interrupt and often a hypervisor
exit. Putting both processes on one CPU loses no parallelism (there is none
to lose) and turns those wake-ups into plain context switches; running them
under ``SCHED_BATCH`` (see :func:`spawning_on`) halves the number of those.

Measured on the project's machine type (2 vCPUs), full KTH-SP2, pybatsim
``easyBackfill``, embedded engine, the two processes started by hand back to
back with and without ``taskset -c 0``: 41.3 s unpinned vs 18.1 s on one CPU
with ``delay`` profiles, 78.2 s vs 25.2 s with ``parallel_homogeneous``
profiles. ``iosched bench --cpu none`` measures the unpinned
setting. Simulated results do not depend on it.

So :func:`iosched.run.simulation.run_simulation` runs both processes on one CPU by
default (``cpu="auto"``). With several simulations on one machine (a
campaign with ``--workers N``, or two terminals), each run claims a different CPU
through a lock file per CPU (``flock``, released when the run ends or its
process dies); when every CPU is taken, the run is not pinned.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Iterator

from iosched.errors import InputError

#: Values of the ``cpu`` setting besides a CPU number.
CPU_POLICIES = ("auto", "none")


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (sorted numbers), or ``[]`` where the
    operating system cannot tell (no ``sched_getaffinity``)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def parse_cpu(value) -> str | int:
    """Check a ``cpu`` setting: ``"auto"``, ``"none"`` or a CPU number (int
    or decimal string) this process may use.

    :raises InputError: anything else, or a CPU outside the allowed set.
    """
    if isinstance(value, str):
        v = value.strip().lower()
        if v in CPU_POLICIES:
            return v
        if not v.isdigit():
            raise InputError(f"cpu: expected auto, none or a CPU number, got {value!r}")
        value = int(v)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"cpu: expected auto, none or a CPU number, got {value!r}")
    allowed = allowed_cpus()
    if allowed and value not in allowed:
        raise InputError(f"cpu: CPU {value} is not available to this process "
                         f"(allowed: {','.join(map(str, allowed))})")
    return value


def lock_dir() -> Path:
    """Directory of the per-CPU lock files: ``$TMPDIR/iosched-cpu-<uid>``
    (private to the user, mode 0700)."""
    d = Path(tempfile.gettempdir()) / f"iosched-cpu-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


@contextlib.contextmanager
def claim_cpu(cpu="auto") -> Iterator[set[int] | None]:
    """Context manager giving the CPU set to run one simulation's two
    processes on, or ``None`` for no pinning.

    ``"none"`` gives ``None``. A CPU number gives ``{n}`` (no lock: the user
    chose). ``"auto"`` claims the first allowed CPU whose lock file no other
    run holds and gives ``{n}``, holding the lock until the block ends; it
    gives ``None`` when this process may use only one CPU (nothing to gain),
    when every allowed CPU is claimed, or when the lock directory cannot be
    used.

    :raises InputError: an invalid *cpu* (see :func:`parse_cpu`).
    """
    cpu = parse_cpu(cpu)
    if cpu == "none":
        yield None
        return
    if isinstance(cpu, int):
        yield {cpu}
        return
    allowed = allowed_cpus()
    if len(allowed) < 2:
        yield None
        return
    try:
        d = lock_dir()
    except OSError:
        yield None
        return
    held = None
    for n in allowed:
        try:
            fd = os.open(d / f"cpu{n}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        held = (n, fd)
        break
    if held is None:
        yield None
        return
    try:
        yield {held[0]}
    finally:
        os.close(held[1])  # releases the flock


@contextlib.contextmanager
def spawning_on(cpus: set[int] | None) -> Iterator[None]:
    """Within the block, processes started by the calling thread run on
    *cpus* under the ``SCHED_BATCH`` policy: they inherit the thread's
    affinity mask and policy, and the thread's own are restored afterwards
    (other threads are not touched). ``None``: no change.

    ``SCHED_BATCH`` (Linux) turns off wake-up preemption: a thread that
    wakes the other side of a hand-over is not preempted before it blocks
    itself, so each hand-over costs two context switches instead of about
    four. Measured with SimGrid 3.32's thread contexts on one CPU: a simcall
    9.4 us instead of 12.6 us, a ``parallel_homogeneous`` job's physics
    89 us instead of 139 us. Where the policy cannot be set, only the
    affinity is; where the affinity cannot be set either, nothing changes
    (the run is not pinned, it does not fail).
    """
    if not cpus:
        yield
        return
    try:
        old_mask = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpus)
    except OSError:  # not permitted here (e.g. a container's cpuset): not pinned
        yield
        return
    old_policy = None
    batch = getattr(os, "SCHED_BATCH", None)
    if batch is not None:
        try:
            old_policy = (os.sched_getscheduler(0), os.sched_getparam(0))
            os.sched_setscheduler(0, batch, os.sched_param(0))
        except OSError:
            old_policy = None
    try:
        yield
    finally:
        if old_policy is not None:
            try:
                os.sched_setscheduler(0, *old_policy)
            except OSError:
                pass
        os.sched_setaffinity(0, old_mask)
