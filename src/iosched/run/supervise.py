"""Supervision of the processes of a run: start, watch, clean up.

Used by both entry points, :func:`iosched.run.simulation.run_simulation` and
:func:`iosched.run.robin.run_robin`:

* Each process is started in its own session (``setsid``), so that it and
  all its descendants form one process group and one session that the runner
  can find and kill without touching anything else (:class:`Child`).
* The runner never reaps a process leader before its session is cleaned
  (``waitid(..., WNOWAIT)`` peeks at exit statuses), so the session id cannot
  be reused by an unrelated process while the runner still uses it.
* On Linux the runner marks itself as a *child subreaper* while simulations
  run (:func:`subreaper`), so descendants orphaned by a dying scheduler or
  engine are re-parented to the runner, which kills and reaps them (this
  also keeps zombies away in containers whose PID 1 does not reap). The
  attribute is cleared when the last concurrent run ends. A descendant that
  calls ``setsid`` itself is only found if it was seen in a tree snapshot
  (taken every 0.2 s).
* Whatever kills the runner, even SIGKILL, its sessions die with it: the
  orphan guard (:mod:`iosched.run.guard`, :func:`guard_sessions`), a small
  process in a session of its own, holds the read end of a pipe from the
  runner, is told each session the runner starts and cleans up, and kills
  the sessions still listed when the pipe closes. It is started before the
  first child, and each child carries its token in ``IOSCHED_GUARD``, so a
  runner killed before it registered a session still takes that child along.
* Cleanup (:func:`cleanup`) = SIGTERM to every process of both sessions and
  recorded trees, up to :data:`KILL_GRACE` s for them to exit, then SIGKILL
  to whatever is left (sessions re-scanned, so late forks are caught), then
  reap. It runs after success too (robin does the same), so no daemon
  outlives a run.
* Signals: :func:`signals_raise` turns SIGTERM / SIGHUP (and SIGINT where
  asked) into a :class:`Signalled` exception in the main thread, so that the
  ``finally`` blocks above clean up before a command exits (``iosched run``:
  one line, status 128+signal; ``iosched campaign``: see
  :mod:`iosched.campaign.execute`, which also uses :func:`kill_descendants`).

Timeouts (all in seconds, :func:`watch`) follow robin: *simulation* bounds
the whole run; when the first process ends successfully the other one has
*success* s to end, when it ends unsuccessfully the other one has *failure*
s; a process still running when its time is up is killed and the run fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterable

import psutil

from iosched.errors import InputError, one_line
from iosched.run.affinity import spawning_on
from iosched.run.result import RunError

__all__ = [
    "KILL_GRACE",
    "POLL",
    "TERMINATION_SIGNALS",
    "INTERRUPT_SIGNALS",
    "Child",
    "Signalled",
    "check_seconds",
    "cleanup",
    "fmt_s",
    "guard_sessions",
    "kill_descendants",
    "run_error",
    "signals_raise",
    "subreaper",
    "watch",
]

#: Time between SIGTERM and SIGKILL when cleaning up (s).
KILL_GRACE = 2.0
POLL = 0.02  # s between two status checks
_TREE_EVERY = 0.2  # s between two snapshots of the process trees
_MAX_REASON = 300  # characters of a log line quoted in an error message
#: Signals that ask a command to stop (SIGHUP where the platform has it).
TERMINATION_SIGNALS = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None))
                            if s is not None)
#: Signals that stop a campaign: the termination signals and SIGINT (Ctrl-C).
INTERRUPT_SIGNALS = (*TERMINATION_SIGNALS, signal.SIGINT)


# --------------------------------------------------------------------------
# small helpers


def fmt_s(seconds: float) -> str:
    """Format a duration in s for messages: 60 -> '60', 0.5 -> '0.5'."""
    return f"{seconds:g}"


def _backtrace_line(line: str) -> bool:
    """A line of the backtrace SimGrid prints after a failed assertion
    (``xbt_assert``/``xbt_die`` in the real Batsim: ``Backtrace (displayed in
    actor X):`` then ``->  N# function in library`` lines): never the reason;
    the ``[root/CRITICAL]`` line above it is."""
    return line.startswith("->") or line.startswith("Backtrace (displayed in ")


def _last_line(*paths: Path | None, skip_xtrace: bool = False) -> str:
    """Last non-empty line of the first file of *paths* that has one ('' if none).

    With *skip_xtrace*, lines written by ``bash -x`` (``+ command``) are skipped.
    SimGrid's backtrace lines are always skipped (:func:`_backtrace_line`), so
    an engine that aborted on an assertion is reported by its assertion's
    message.
    """
    for path in paths:
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 65536))
                tail = f.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        for line in reversed(tail.splitlines()):
            line = one_line(line)
            if skip_xtrace and line.startswith("+") and line.lstrip("+").startswith(" "):
                continue
            if _backtrace_line(line):
                continue
            if line:
                if len(line) > _MAX_REASON:
                    line = line[: _MAX_REASON - 3] + "..."
                return line
    return ""


def check_seconds(value, what: str, *, positive: bool = False) -> float:
    """Validate a duration in s; raise InputError naming *what* if invalid."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{what}: expected a number of seconds, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise InputError(f"{what}: expected a {kind} number of seconds, got {value:g}")
    return value


# --------------------------------------------------------------------------
# subreaper (Linux): orphaned descendants come back to us, we reap them

_reaper_lock = threading.Lock()
_reaper_users = 0
_PR_SET_CHILD_SUBREAPER = 36


def _set_subreaper(flag: bool) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, int(flag), 0, 0, 0)
    except Exception:  # pragma: no cover - best effort only
        pass


@contextlib.contextmanager
def subreaper():
    """Within the block (and while any other block is open), this process is a
    child subreaper (Linux only)."""
    global _reaper_users
    with _reaper_lock:
        if _reaper_users == 0:
            _set_subreaper(True)
        _reaper_users += 1
    try:
        yield
    finally:
        with _reaper_lock:
            _reaper_users -= 1
            if _reaper_users == 0:
                _set_subreaper(False)


# --------------------------------------------------------------------------
# the orphan guard (iosched.run.guard): our sessions die with us

_GUARD_SCRIPT = str(Path(__file__).with_name("guard.py"))
_guard_lock = threading.Lock()
_guard: tuple[int, subprocess.Popen, object, str] | None = None  # (owner pid, guard, pipe, token)


def _guard_pipe():
    """The write end of the pipe to this process's guard (started on first use,
    restarted if it died or if this process is a fork of its owner)."""
    global _guard
    if _guard is not None and _guard[0] == os.getpid() and _guard[1].poll() is None:
        return _guard[2]
    token = f"{os.getpid()}.{os.urandom(8).hex()}"
    proc = subprocess.Popen([sys.executable, "-I", "-S", _GUARD_SCRIPT, token], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)
    _guard = (os.getpid(), proc, proc.stdin, token)
    return proc.stdin


def guard_token() -> str | None:
    """The token of this process's orphan guard, started now if need be, or None
    if it cannot be started.

    A child started with ``IOSCHED_GUARD=<token>`` in its environment is killed
    by the guard when this process dies, even if it dies before the child's
    session was registered with :func:`guard_sessions`.
    """
    global _guard
    with _guard_lock:
        try:
            _guard_pipe()
        except OSError:
            _guard = None
            return None
        return _guard[3]


def guard_sessions(add: Iterable[int] = (), remove: Iterable[int] = ()) -> None:
    """Tell the orphan guard (:mod:`iosched.run.guard`) the session ids to kill
    if this process dies (*add*), and those cleaned up (*remove*).

    Best effort: if the guard cannot be started or reached, the runner's own
    cleanup still applies (only a SIGKILLed runner would leave orphans).
    """
    global _guard
    lines = [f"+{s}\n" for s in add] + [f"-{s}\n" for s in remove]
    if not lines:
        return
    data = "".join(lines).encode()
    with _guard_lock:
        for _ in range(2):  # a dead guard is restarted once
            try:
                pipe = _guard_pipe()
                pipe.write(data)
                pipe.flush()
                return
            except OSError:
                _guard = None


# --------------------------------------------------------------------------
# one supervised process


class Child:
    """A process started in its own session, with its tree recorded."""

    def __init__(self, name: str, argv: list[str], out: Path, err: Path | None = None,
                 env: dict | None = None, cwd: str | None = None, xtrace: bool = False,
                 cpus: set[int] | None = None):
        self.name = name
        self.cpus = cpus
        self.xtrace = xtrace
        self.argv = argv
        self.out = out
        self.err = err
        self.env = env
        self.cwd = cwd
        self.popen: subprocess.Popen | None = None
        self.code: int | None = None
        self.seen: dict[int, psutil.Process] = {}
        #: the process's CPU times once reaped by :func:`cleanup` (``os.wait4``):
        #: ``{"user_s", "sys_s"}``, or None. (No peak RSS: on Linux a child's
        #: ``ru_maxrss`` includes its parent's at exec, see :mod:`iosched.procmem`.)
        self.rusage: dict | None = None

    @property
    def started(self) -> bool:
        return self.popen is not None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def start(self) -> None:
        """Start the process; raise RunError if it cannot be started."""
        out = err = None
        env = self.env
        token = guard_token()  # before the process exists: no window without a guard
        if token is not None:
            env = dict(os.environ if env is None else env, IOSCHED_GUARD=token)
        try:
            out = open(self.out, "wb")
            err = open(self.err, "wb") if self.err is not None else subprocess.STDOUT
            with spawning_on(self.cpus):
                self.popen = subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True, close_fds=True, env=env, cwd=self.cwd,
                )
        except OSError as e:
            raise RunError(f"cannot start {self.name} ({self.argv[0]}): "
                           f"{e.strerror or e}") from None
        finally:
            for f in (out, err):
                if f is not None and f is not subprocess.STDOUT:
                    f.close()
        guard_sessions(add=[self.pid])
        try:
            self.seen[self.pid] = psutil.Process(self.pid)
        except psutil.Error:
            pass

    def status(self) -> int | None:
        """Exit code (negative signal number) if the process ended, else None.

        Does not reap the process (the session id stays reserved).
        """
        if self.code is not None or self.popen is None:
            return self.code
        code = None
        if hasattr(os, "waitid") and self.popen.returncode is None:
            try:
                r = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                r = None
                code = self.popen.poll()
            else:
                if r is not None and r.si_pid == self.pid:
                    code = r.si_status if r.si_code == os.CLD_EXITED else -r.si_status
        else:
            code = self.popen.poll()
        if code is not None:
            self.code = code
        return self.code

    def reap_rusage(self) -> None:
        """Reap the process if it has ended, keeping its exit status in the
        ``Popen`` and its own CPU times in :attr:`rusage` (``os.wait4``: user
        and system time in s of the process and of the descendants it waited
        for; figures no other call gives once the process is reaped). Does
        nothing for a process still running or already reaped."""
        if self.popen is None or self.popen.returncode is not None:
            return
        try:
            pid, status, ru = os.wait4(self.pid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid != self.pid:
            return
        self.popen.returncode = os.waitstatus_to_exitcode(status)
        self.rusage = {"user_s": ru.ru_utime, "sys_s": ru.ru_stime}

    def record_tree(self) -> None:
        """Remember every current descendant (for cleanup and reporting)."""
        root = self.seen.get(self.pid) if self.popen is not None else None
        if root is None:
            return
        try:
            for p in root.children(recursive=True):
                self.seen.setdefault(p.pid, p)
        except psutil.Error:
            pass

    def pids(self) -> list[int]:
        return sorted(self.seen)

    def last_line(self) -> str:
        paths = (self.err, self.out) if self.err else (self.out,)
        return _last_line(*paths, skip_xtrace=self.xtrace)

    def exit_reason(self) -> str:
        """One-line reason for a non-zero exit."""
        code = self.code
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = str(-code)
            head = f"{self.name} was killed by signal {-code} ({sig})"
        else:
            head = f"{self.name} exited with code {code}"
        line = self.last_line()
        return f"{head}: {line}" if line else f"{head} (no output, see {self.out})"


def _is_alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except (psutil.Error, OSError):
            pass


def _wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if _is_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(POLL)
        alive = [p for p in alive if _is_alive(p)]
    return alive


def cleanup(children: list[Child], grace: float = KILL_GRACE) -> None:
    """Terminate, kill and reap every process of the children's sessions and trees."""
    started = [c for c in children if c.started]
    if not started:
        return
    me = os.getpid()
    sids = {c.pid for c in started}
    leaders = {c.pid for c in started}
    victims: dict[int, psutil.Process] = {}

    def collect() -> list[psutil.Process]:
        # recorded trees, current trees, and every process of the sessions
        for c in started:
            c.record_tree()
            for pid, p in c.seen.items():
                if pid != me:
                    victims.setdefault(pid, p)
        for p in psutil.process_iter():
            if p.pid == me or p.pid in victims:
                continue
            try:
                if os.getsid(p.pid) in sids:
                    victims[p.pid] = p
            except OSError:
                pass
        return [p for p in victims.values() if _is_alive(p)]

    _signal_all(collect(), signal.SIGTERM)
    _wait_dead(list(victims.values()), grace)
    for _ in range(3):  # SIGKILL whatever is left, including late forks
        alive = collect()
        if not alive:
            break
        _signal_all(alive, signal.SIGKILL)
        _wait_dead(alive, grace)
    # the sessions are empty: the guard forgets them before their ids can be reused
    guard_sessions(remove=sids)
    # reap the leaders (Popen keeps their exit status)
    for c in started:
        c.reap_rusage()
        try:
            c.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            continue
        if c.code is None:
            c.code = c.popen.returncode
    # reap orphans re-parented to us (subreaper), and only those of our sessions
    try:
        kids = psutil.Process(me).children()
    except psutil.Error:  # pragma: no cover
        kids = []
    for k in kids:
        if k.pid in leaders:
            continue
        ours = k.pid in victims and victims[k.pid].is_running()
        if not ours:
            try:
                ours = os.getsid(k.pid) in sids
            except OSError:
                ours = False
        if not ours:
            continue
        deadline = time.monotonic() + grace
        while True:
            try:
                pid, _ = os.waitpid(k.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid or time.monotonic() >= deadline:
                break
            time.sleep(POLL)


def watch(children: list[Child], deadline: float, timeout: float,
           success_timeout: float, failure_timeout: float) -> str | None:
    """Wait for every child; return None on success or the one-line failure reason.

    Robin's rules: *deadline* (monotonic s) bounds everything; once the first
    child ends, the others have *success_timeout* s (if it exited 0) or
    *failure_timeout* s (otherwise) to end.
    """
    reasons: dict[str, str] = {}
    first: Child | None = None
    grace_end: float | None = None
    next_tree = 0.0
    done: set[str] = set()
    while True:
        now = time.monotonic()
        for c in children:
            if c.name in done or c.status() is None:
                continue
            done.add(c.name)
            if c.code != 0:
                reasons[c.name] = c.exit_reason()
            if first is None:
                first = c
                grace_end = now + (success_timeout if c.code == 0 else failure_timeout)
        # The engine's reason names the event at fault (a protocol error, a bad
        # input): prefer it to the scheduler's, which is often a consequence.
        reason = reasons.get("engine", reasons.get("batcmd"))
        if reason is None and reasons:
            reason = next(iter(reasons.values()))
        pending = [c for c in children if c.name not in done]
        if not pending:
            return reason
        if now >= deadline:
            return reason or f"simulation timed out after {fmt_s(timeout)} s"
        if grace_end is not None and now >= grace_end:
            if reason is not None:
                return reason
            names = ", ".join(c.name for c in pending)
            return (f"{names} did not exit within {fmt_s(success_timeout)} s "
                    f"(success timeout) after {first.name} ended successfully")
        if now >= next_tree:
            for c in pending:
                c.record_tree()
            next_tree = now + _TREE_EVERY
        time.sleep(POLL)


def run_error(reason: str, children: list[Child], output_dir: Path | None) -> RunError:
    """The :class:`RunError` of a failed run: *reason* and the children's
    return codes, pids and logs."""
    return RunError(
        reason,
        returncodes={c.name: c.code for c in children},
        pids={c.name: c.pids() for c in children if c.started},
        logs={c.name: c.out for c in children},
        output_dir=output_dir,
    )


def run_children(children: list[Child], deadline: float, timeout: float, success_timeout: float,
                 failure_timeout: float, output_dir: Path | None) -> None:
    """Start *children* in order, :func:`watch` them and :func:`cleanup`
    whatever is left (times in s, *deadline* on ``time.monotonic()``).

    :raises RunError: (:func:`run_error`) a child failed, or a timeout.
    """
    reason = None
    try:
        for c in children:
            c.start()
        reason = watch(children, deadline, timeout, success_timeout, failure_timeout)
    except RunError as e:
        reason = str(e)
    finally:
        cleanup(children)
    if reason is not None:
        raise run_error(reason, children, output_dir)


# --------------------------------------------------------------------------
# signals


class Signalled(BaseException):
    """Raised by the handler of :func:`signals_raise`; ``signum``: the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_raise(signals=TERMINATION_SIGNALS):
    """Within the block, turn *signals* into :class:`Signalled` in the main
    thread, so that runs clean up their processes; previous handlers are
    restored afterwards. Outside the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Signalled(signum)

    old = {}
    for sig in signals:
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # pragma: no cover
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            try:
                signal.signal(sig, h)
            except (ValueError, OSError):  # pragma: no cover
                pass


def kill_descendants(grace: float = KILL_GRACE) -> None:
    """SIGTERM then SIGKILL every descendant process of this process."""
    try:
        me = psutil.Process()
        procs = me.children(recursive=True)
    except psutil.Error:
        return
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)
